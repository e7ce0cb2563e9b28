"""The ``googlerobots`` command: ``check`` URLs against a robots.txt, ``lint`` a robots.txt
or a ``tdmrep.json``, ``tdmrep``: URLs against a ``tdmrep.json`` (TDMRep),
``check-headers``: a saved response's page-level directives (``page_check.py``).

Standard library only (besides this package), so it runs wherever the package
is installed. ROBOTS is a file path, ``-`` for stdin, or an http(s) URL that is
fetched the way Google fetches robots.txt (SPEC B3, B6).

Exit status: 0 all allowed / no lint errors; 1 some URL disallowed / lint
errors; 2 usage or I/O error (one line on stderr, never a traceback).

``check --usage CATEGORY`` gives, for each URL robots.txt allows, the AI
usage preference for CATEGORY (``Content-Usage`` / ``Content-Signal``) with
its deciding line: DISALLOWED for a "no" (exit 1), ALLOWED for a "yes" or
when no rule says (unknown is not "no").

``check`` notes the robots.txt's ``Sitemap:`` URLs on stderr (one
``googlerobots: note: Sitemap: URL`` line each), beside the verdicts on stdout.

A robots.txt URL that answers 429 or 5xx, or cannot be fetched at all, is
"unreachable": ``check`` reports every URL DISALLOWED (Google treats the
whole site as disallowed until robots.txt can be fetched) and exits 1;
``lint`` has nothing to lint and exits 2.

``lint`` reads a source whose name ends with ``tdmrep.json`` (a path or a URL),
or any source with ``--kind tdmrep``, as a TDMRep file: not an array, missing
keys, bad values, rules that never match or never decide. ``tdmrep FILE URL...``
prints each URL's TDMRep verdict by FILE (the first matching rule): RESERVED
(exit 1), NOT-RESERVED, or UNSET (no rule, or no usable file: a missing,
unreachable or invalid tdmrep.json means the origin does not use the protocol).
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, NoReturn

from scrapy_googlerobots import __version__
from scrapy_googlerobots.commands.lint import Diagnostic, lint
from scrapy_googlerobots.commands.page_check import CheckError, run_check_headers
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome, outcome_for_status
from scrapy_googlerobots.policy.useragent import crawler_token
from scrapy_googlerobots.robotstxt import (
    GOOGLE_MAX_SIZE,
    USAGE_CATEGORIES,
    USAGE_DIRECTIVES,
    LineKind,
    RobotsTxt,
    parse,
    scan_lines,
    usage_category,
)
from scrapy_googlerobots.tdmrep import TdmDiagnostic, parse_tdmrep_json

__all__ = ["main", "rule_texts", "unreachable_reason", "usage_verdict"]

PROG = "googlerobots"
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
MAX_REDIRECTS = 5
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


class UsageError(Exception):
    """A problem reported as one line on stderr with exit status 2."""


@dataclass(frozen=True, slots=True)
class Source:
    """What was read for ROBOTS: the bytes Google would parse, or None for "no robots.txt"."""

    name: str
    body: bytes | None
    # The content reached the read limit (with ``probe``: went on past it).
    truncated: bool = False
    # Why there is no body (e.g. "HTTP 404"), shown next to each verdict.
    reason: str = ""
    # 429, 5xx or a network error: Google disallows the whole site.
    unreachable: bool = False


# -- reading ROBOTS -----------------------------------------------------------


def read_source(
    spec: str, *, limit: int, timeout: float, user_agent: str, probe: bool = False
) -> Source:
    """Read ROBOTS (a path, ``-`` or an http(s) URL): at most ``limit`` bytes are kept.

    No more than ``limit`` bytes are read, or one more with ``probe``, which
    tells whether the content goes on past the limit.
    """
    read_size = limit + probe
    if spec == "-":
        return _read_stream("<stdin>", sys.stdin.buffer, limit, read_size)
    if _URL.match(spec):
        return _fetch(
            spec, limit=limit, read_size=read_size, timeout=timeout, user_agent=user_agent
        )
    try:
        with open(spec, "rb") as stream:
            return _read_stream(spec, stream, limit, read_size)
    except OSError as exc:
        raise UsageError(f"cannot read {spec!r}: {exc.strerror or exc}") from None


def _read_stream(name: str, stream: IO[bytes], limit: int, read_size: int) -> Source:
    # Never read an endless input to its end.
    data = stream.read(read_size)
    return Source(name, data[:limit], truncated=len(data) >= read_size)


class _LimitedRedirects(urllib.request.HTTPRedirectHandler):
    # Google follows at least five hops (SPEC B3); a sixth, or a URL seen
    # before (a loop), ends the chain with an HTTPError carrying the 3xx code.
    max_redirections = MAX_REDIRECTS
    max_repeats = 1


def unreachable_reason(why: str) -> str:
    """The reason given for every URL of a site whose robots.txt is unreachable (SPEC B3)."""
    return f"robots.txt unreachable: {why}; Google treats the whole site as disallowed"


def _fetch(url: str, *, limit: int, read_size: int, timeout: float, user_agent: str) -> Source:
    """GET ``url`` and apply Google's reading of the status (SPEC B3)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise UsageError(f"{url}: only http and https robots.txt URLs can be fetched")
    opener = urllib.request.build_opener(_LimitedRedirects)
    try:
        request = urllib.request.Request(url, headers={"User-Agent": user_agent})
        with opener.open(request, timeout=timeout) as response:
            # An endless body costs no more than read_size bytes (SPEC B6).
            data = response.read(read_size)
            final_url = response.geturl()
    except urllib.error.HTTPError as exc:
        exc.close()
        # Every status but 2xx, read through the crawl's one table.
        code = exc.code
        if outcome_for_status(code) is FetchOutcome.UNREACHABLE:
            return Source(url, None, reason=f"HTTP {code}", unreachable=True)
        if 300 <= code < 400:
            # Too many hops, a loop, or a redirect without a usable target.
            return Source(url, None, reason=f"redirects not followed (HTTP {code}), as for 404")
        return Source(url, None, reason=f"HTTP {code}: no robots.txt")
    except (ValueError, http.client.InvalidURL) as exc:
        # A malformed URL: bad port, bad IPv6 literal, control characters.
        raise UsageError(f"{url}: invalid URL: {exc}") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return Source(url, None, reason=f"{type(exc).__name__}: {reason}", unreachable=True)
    name = url if final_url == url else f"{url} -> {final_url}"
    return Source(name, data[:limit], truncated=len(data) >= read_size)


# -- check --------------------------------------------------------------------


def rule_texts(body: bytes, *, usage: bool = False) -> dict[int, str]:
    """Allow/disallow lines by number, as written (for "line N: <text>"); with
    ``usage``, the ``Content-Usage`` / ``Content-Signal`` lines too."""
    return {
        line.number: line.raw.decode("utf-8", "replace").strip(" \t\r\n\v\f")
        for line in scan_lines(body)
        if line.kind in (LineKind.ALLOW, LineKind.DISALLOW)
        or (usage and line.kind is LineKind.OTHER and line.key.lower() in USAGE_DIRECTIVES)
    }


def usage_verdict(
    rules: RobotsTxt, texts: dict[int, str], url: str, token: str, category: str
) -> tuple[bool, str]:
    """Whether ``url`` may be used for ``category`` (an IETF name) and why.

    ``url`` is canonical; ``texts`` is ``rule_texts(body, usage=True)``. A URL
    robots.txt disallows is not fetched at all: (False, its disallow line).
    Unknown (no usage rule matches) is not "no": (True, "... unknown ...").
    """
    verdict = rules.explain(url, token)
    if not verdict.allowed:
        why = f"line {verdict.line}: {texts.get(verdict.line, verdict.rule or '')}"
        return False, f"{why} (not fetched, so no usage preference)"
    rule = rules.usage(url, token).get(category)
    if rule is None:
        return True, f"{category} unknown: no usage rule matches"
    value = "y" if rule.allowed else "n"
    return rule.allowed, f"{category}={value}: line {rule.line}: {texts.get(rule.line, '')}"


def run_check(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``googlerobots check``: one line per URL, exit 1 if any is disallowed."""
    token = crawler_token(args.user_agent)
    if not token:
        raise UsageError(
            f"user agent {args.user_agent!r} has no product token "
            "(it must start with a letter, '_' or '-')"
        )
    if token != args.user_agent:
        print(
            f"{PROG}: note: matching as {token!r}, the product token of {args.user_agent!r}",
            file=err,
        )
    source = read_source(
        args.robots, limit=GOOGLE_MAX_SIZE, timeout=args.timeout, user_agent=args.user_agent
    )
    if source.unreachable:
        why = unreachable_reason(source.reason)
        print(f"{PROG}: note: {source.name}: {why}", file=err)
        for url in args.urls:
            print(f"DISALLOWED  {url}  {why}", file=out)
        return EXIT_FINDINGS
    if source.body is None:
        print(f"{PROG}: note: {source.name}: {source.reason}; Google allows every URL", file=err)
        for url in args.urls:
            print(f"ALLOWED     {url}  ({source.reason})", file=out)
        return EXIT_OK
    if source.truncated:
        print(
            f"{PROG}: note: {source.name}: only the first {GOOGLE_MAX_SIZE:,} bytes "
            "are read and used, as by Google",
            file=err,
        )
    rules = parse(source.body, max_size=GOOGLE_MAX_SIZE)
    texts = rule_texts(source.body)
    if not texts:
        print(
            f"{PROG}: note: {source.name}: no allow or disallow rule found; "
            "Google allows every URL",
            file=err,
        )
    delay = rules.delay(token)
    if delay is not None:
        print(
            f"{PROG}: note: crawl delay for {token!r}: {delay:g} s "
            "(Crawl-delay / Request-rate; Google ignores both; "
            "ROBOTSTXT_CRAWL_DELAY = True applies it)",
            file=err,
        )
    for sitemap in rules.sitemaps:
        print(f"{PROG}: note: Sitemap: {sitemap}", file=err)
    if args.usage is not None:
        texts = rule_texts(source.body, usage=True)
        return _check_usage(args, rules, texts, token, out, err)
    status = EXIT_OK
    for url in args.urls:
        verdict = rules.explain(canonicalize_url(url), token)
        if verdict.line:
            why = f"line {verdict.line}: {texts.get(verdict.line, verdict.rule or '')}"
        else:
            why = "no matching rule"
        print(f"{'ALLOWED' if verdict.allowed else 'DISALLOWED':<11} {url}  {why}", file=out)
        if not verdict.allowed:
            status = EXIT_FINDINGS
    return status


def _usage_category_arg(name: str) -> str:
    category = usage_category(name)
    if category is None:
        known = ", ".join([*USAGE_CATEGORIES, "ai-train", "ai-input"])
        raise argparse.ArgumentTypeError(f"unknown usage category {name!r} (one of: {known})")
    return category


def _check_usage(
    args: argparse.Namespace,
    rules: RobotsTxt,
    texts: dict[int, str],
    token: str,
    out: IO[str],
    err: IO[str],
) -> int:
    """``check --usage``: the usage verdict of each URL, exit 1 if any is a "no"."""
    category: str = args.usage
    if not rules.has_usage:
        print(
            f"{PROG}: note: no Content-Usage or Content-Signal rule found; "
            f"the {category} preference of every URL is unknown",
            file=err,
        )
    status = EXIT_OK
    for url in args.urls:
        allowed, why = usage_verdict(rules, texts, canonicalize_url(url), token, category)
        print(f"{'ALLOWED' if allowed else 'DISALLOWED':<11} {url}  {why}", file=out)
        if not allowed:
            status = EXIT_FINDINGS
    return status


# -- lint ---------------------------------------------------------------------


def _is_tdmrep(args: argparse.Namespace) -> bool:
    """Whether ``lint`` reads a tdmrep.json: ``--kind``, else the source's name."""
    if args.kind != "auto":
        return bool(args.kind == "tdmrep")
    name: str = args.robots.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    return name.lower().endswith("tdmrep.json")


def run_lint(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``googlerobots lint``: one diagnostic per problem line; exit 1 if any is an error."""
    if _is_tdmrep(args):
        return _lint_tdmrep(args, out)
    source = read_source(
        args.robots,
        limit=GOOGLE_MAX_SIZE,
        timeout=args.timeout,
        user_agent=args.user_agent,
        probe=True,
    )
    if source.unreachable:
        raise UsageError(
            f"{source.name}: robots.txt unreachable ({source.reason}), nothing to lint; "
            "Google treats the whole site as disallowed until it can be fetched"
        )
    diagnostics: list[Diagnostic] = []
    if source.body is not None:
        diagnostics = lint(source.body, truncated=source.truncated)
    errors = sum(d.severity == "error" for d in diagnostics)
    return _report_lint(
        args,
        out,
        source,
        {"robots_txt": source.body is not None},
        "Google allows every URL",
        [(f"{source.name}:{d.line}", d) for d in diagnostics],
        errors,
        len(diagnostics) - errors,
    )


def _report_lint(
    args: argparse.Namespace,
    out: IO[str],
    source: Source,
    kind: dict[str, object],
    when_absent: str,
    found: Sequence[tuple[str, Diagnostic | TdmDiagnostic]],
    errors: int,
    warnings: int,
) -> int:
    """Print a lint's findings (``found``: where, diagnostic) as text or JSON; the exit status.

    ``kind``: the JSON keys that say what was linted; ``when_absent``: what a
    missing file means, after its reason.
    """
    if args.format == "json":
        document = {
            "source": source.name,
            **kind,
            "reason": source.reason or None,
            "errors": errors,
            "warnings": warnings,
            "diagnostics": [d.as_dict() for _, d in found],
        }
        json.dump(document, out, indent=2)
        out.write("\n")
    else:
        if source.body is None:
            print(f"{source.name}: {source.reason}; {when_absent}", file=out)
        for where, d in found:
            print(f"{where}: {d.severity}: {d.message} [{d.code}]", file=out)
        print(
            f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}",
            file=out,
        )
    return EXIT_FINDINGS if errors else EXIT_OK


def _read_tdmrep(args: argparse.Namespace, spec: str) -> Source:
    return read_source(
        spec, limit=GOOGLE_MAX_SIZE, timeout=args.timeout, user_agent=args.user_agent
    )


def _lint_tdmrep(args: argparse.Namespace, out: IO[str]) -> int:
    """``lint`` of a tdmrep.json: the TDMRep core's diagnostics; exit 1 if any is an error."""
    source = _read_tdmrep(args, args.robots)
    source = dataclasses.replace(source, reason=source.reason.removesuffix(": no robots.txt"))
    if source.unreachable:
        raise UsageError(
            f"{source.name}: tdmrep.json unreachable ({source.reason}), nothing to lint; "
            "a crawl reads it as no tdmrep.json (TDM reservation unset)"
        )
    diagnostics: tuple[TdmDiagnostic, ...] = ()
    if source.body is not None:
        diagnostics = parse_tdmrep_json(
            source.body, url=source.name, max_size=GOOGLE_MAX_SIZE
        ).diagnostics
    errors = sum(d.severity == "error" for d in diagnostics)
    return _report_lint(
        args,
        out,
        source,
        {"kind": "tdmrep.json", "tdmrep_json": source.body is not None},
        "no tdmrep.json (TDM reservation unset)",
        [(f"{source.name}:{d.line}" if d.line else source.name, d) for d in diagnostics],
        errors,
        sum(d.severity == "warning" for d in diagnostics),
    )


# -- tdmrep -------------------------------------------------------------------


def run_tdmrep(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``googlerobots tdmrep``: each URL's TDMRep verdict by FILE; exit 1 if any is reserved."""
    source = _read_tdmrep(args, args.file)
    if source.body is None:
        # read_source words a 4xx for robots.txt.
        source = dataclasses.replace(source, reason=source.reason.removesuffix(": no robots.txt"))
        why = "unreachable" if source.unreachable else "no tdmrep.json"
        print(
            f"{PROG}: note: {source.name}: {source.reason} ({why}): the origin does not use "
            "TDMRep; every URL is unset",
            file=err,
        )
        for url in args.urls:
            print(f"{'UNSET':<12} {url}  ({source.reason})", file=out)
        return EXIT_OK
    parsed = parse_tdmrep_json(source.body, url=source.name, max_size=GOOGLE_MAX_SIZE)
    for d in parsed.diagnostics:
        if d.severity == "error":
            where = f"{source.name}:{d.line}" if d.line else source.name
            print(f"{PROG}: note: {where}: {d.message} [{d.code}]", file=err)
    status = EXIT_OK
    for url in args.urls:
        verdict = parsed.explain(url)
        if verdict.reserved:
            word = "RESERVED"
            status = EXIT_FINDINGS
        elif verdict.reserved is False:
            word = "NOT-RESERVED"
        else:
            word = "UNSET"
        print(f"{word:<12} {url}  {verdict.explanation}", file=out)
    return status


# -- argument parsing ---------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, like every other error of this command.
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``googlerobots`` argument parser."""
    parser = _Parser(
        prog=PROG,
        description="Test URLs against a robots.txt and lint it, the way Google reads it.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="{check,lint,tdmrep,check-headers}",
        parser_class=_Parser,
    )
    robots_help = "robots.txt file, '-' for stdin, or an http(s) URL to fetch"
    timeout_help = "seconds to wait for a robots.txt URL (default: 30)"

    check = commands.add_parser(
        "check",
        help="say whether each URL is allowed for USER_AGENT",
        description="Exit status: 0 all allowed, 1 any disallowed, 2 error. "
        "Arguments in the order of Google's own robots tool.",
    )
    check.add_argument("robots", metavar="ROBOTS", help=robots_help)
    check.add_argument(
        "user_agent",
        metavar="USER_AGENT",
        help="product token (FooBot) or full User-Agent value (FooBot/1.2 (+http://x))",
    )
    check.add_argument("urls", metavar="URL", nargs="+", help="absolute URL to test")
    check.add_argument("--timeout", type=float, default=30.0, help=timeout_help)
    check.add_argument(
        "--usage",
        metavar="CATEGORY",
        type=_usage_category_arg,
        help="give the AI usage preference for CATEGORY instead (train-ai, ai-use, search; "
        "or ai-train, ai-input): DISALLOWED for a 'no', with its deciding line",
    )
    check.set_defaults(run=run_check)

    lint_cmd = commands.add_parser(
        "lint",
        help="report lines Google ignores or reads differently than they seem",
        description="Exit status: 0 no errors (warnings allowed), 1 errors, 2 I/O error.",
    )
    lint_cmd.add_argument("robots", metavar="ROBOTS", help=robots_help)
    lint_cmd.add_argument("--format", choices=("text", "json"), default="text")
    lint_cmd.add_argument("--timeout", type=float, default=30.0, help=timeout_help)
    lint_cmd.add_argument(
        "--user-agent",
        default=f"{PROG}/{__version__}",
        help="User-Agent header for fetching a robots.txt URL",
    )
    lint_cmd.add_argument(
        "--kind",
        choices=("auto", "robots", "tdmrep"),
        default="auto",
        help="what ROBOTS is: a robots.txt, or a TDMRep tdmrep.json (auto: tdmrep when "
        "its name ends with tdmrep.json, else robots)",
    )
    lint_cmd.set_defaults(run=run_lint)

    headers_cmd = commands.add_parser(
        "check-headers",
        help="give a saved response's page-level robots directives for USER_AGENT",
        description="FILE: a saved HTTP response (curl -i), or its headers (curl -D) with "
        "--body. Prints the X-Robots-Tag and robots meta directives in effect for "
        "USER_AGENT, what a crawl does with them, and what was ignored or malformed. "
        "Exit status: 0 nothing changes a crawl, 1 a directive does, 2 error.",
    )
    headers_cmd.add_argument("file", metavar="FILE", help="saved response or headers file")
    headers_cmd.add_argument(
        "user_agent",
        metavar="USER_AGENT",
        help="product token (FooBot) or full User-Agent value (FooBot/1.2 (+http://x))",
    )
    headers_cmd.add_argument("--body", metavar="BODY", help="the body, when FILE has headers only")
    headers_cmd.set_defaults(run=_run_check_headers)
    tdmrep = commands.add_parser(
        "tdmrep",
        help="give each URL's TDMRep verdict by a tdmrep.json",
        description="Exit status: 0 nothing reserved, 1 any URL reserved, 2 error. "
        "Only the file step: the tdm-reservation header and meta tag come with each page.",
    )
    tdmrep.add_argument(
        "file", metavar="FILE", help="tdmrep.json file, '-' for stdin, or an http(s) URL to fetch"
    )
    tdmrep.add_argument("urls", metavar="URL", nargs="+", help="URL (or path) to test")
    tdmrep.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a URL")
    tdmrep.add_argument(
        "--user-agent",
        default=f"{PROG}/{__version__}",
        help="User-Agent header for fetching a tdmrep.json URL",
    )
    tdmrep.set_defaults(run=run_tdmrep)
    return parser


def _run_check_headers(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    try:
        return run_check_headers(args, out, err)
    except CheckError as exc:
        raise UsageError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``googlerobots`` and ``python -m scrapy_googlerobots``."""
    args = build_parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        # A URL or robots.txt line the terminal cannot encode must not crash the output.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        status: int = args.run(args, sys.stdout, sys.stderr)
        sys.stdout.flush()
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into a command that stopped reading (| head): point
        # stdout at /dev/null so the interpreter's final flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return status
