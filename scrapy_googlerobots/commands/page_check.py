"""``googlerobots check-headers``: a saved response's page-level robots directives.

Standard library only (besides this package), like the rest of ``googlerobots``.
FILE is a saved HTTP response as ``curl -i`` (or ``curl -D``) writes it: an
optional status line (``HTTP/1.1 200 OK``), header lines (``Name: value``,
continuation lines folded), then, after a blank line, the body if any. With
several header blocks (``curl -iL`` through redirects) the last one counts.
``--body`` names a body file instead (what ``curl -D headers.txt -o page.html``
saves). The body is read as HTML when ``Content-Type`` says so (``text/html``,
XHTML), or when there is none and the body starts like an HTML document.

Exit status: 0 no directive changes a crawl; 1 one does (nofollow, an
effective noindex, an AI opt-out), or, with ``--usage CATEGORY``, the response
says "no" to that use (its ``Content-Usage`` header, or an AI opt-out for
``train-ai``), as a crawl declaring it would refuse it; 2 usage or I/O error.

:func:`directive_lines` renders directives the same way for ``scrapy robots --page``.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO

from scrapy_googlerobots.htmlmeta import DEFAULT_LIMIT
from scrapy_googlerobots.pagedirectives import PageDirectives, from_headers_and_body
from scrapy_googlerobots.policy.page_rules import crawl_effects, page_usage_refusal
from scrapy_googlerobots.policy.useragent import crawler_token
from scrapy_googlerobots.robotstxt import parse_usage_header

__all__ = ["SavedResponse", "directive_lines", "read_saved_response", "run_check_headers"]

EXIT_OK = 0
EXIT_FINDINGS = 1
# Saved files larger than this are cut: only the head of a page is read anyway.
_READ_LIMIT = 16 * 1024 * 1024
_STATUS = re.compile(rb"HTTP/\d(?:\.\d)?\s+\d{3}\b[^\r\n]*")
_HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*(.*)")
_HTML_TYPES = ("text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml")


class CheckError(Exception):
    """A problem reported as one line on stderr with exit status 2."""


@dataclass(frozen=True, slots=True)
class SavedResponse:
    """What ``check-headers`` read: the status line, the headers, the body."""

    status: str
    """The status line (``HTTP/1.1 200 OK``), ``""`` when the file has none."""
    headers: tuple[tuple[str, bytes], ...]
    """(lowercased name, value) of each header line, in order."""
    body: bytes | None

    def values(self, name: str) -> list[bytes]:
        """The values of header ``name`` (case-insensitive), one per header line."""
        wanted = name.lower()
        return [value for key, value in self.headers if key == wanted]

    @property
    def html(self) -> bool:
        """Whether the body is read as HTML (its Content-Type, else a look at it)."""
        types = self.values("content-type")
        if types:
            kind = types[-1].split(b";", 1)[0].strip().decode("latin-1").lower()
            return kind in _HTML_TYPES
        start = (self.body or b"")[:1024].lstrip().lower()
        return start.startswith((b"<!doctype html", b"<html", b"<head", b"<meta"))


def _parse_headers(block: bytes) -> tuple[str, tuple[tuple[str, bytes], ...]]:
    status = ""
    headers: list[tuple[str, bytes]] = []
    for number, line in enumerate(block.split(b"\n"), start=1):
        line = line.rstrip(b"\r")
        if not line:
            continue
        if number == 1 and _STATUS.fullmatch(line):
            status = line.decode("latin-1")
            continue
        if line[:1] in (b" ", b"\t") and headers:
            name, value = headers[-1]  # an obsolete folded continuation line
            headers[-1] = (name, value + b" " + line.strip())
            continue
        match = _HEADER.fullmatch(line)
        if match is None:
            raise CheckError(f"line {number} is not a header line (Name: value): {line[:60]!r}")
        headers.append((match[1].decode("ascii").lower(), match[2].strip()))
    return status, tuple(headers)


def read_saved_response(data: bytes, body: bytes | None = None) -> SavedResponse:
    """Read a saved response (see the module doc); ``body`` replaces the file's own."""
    rest = data
    while True:
        # The header block ends at the first blank line (CRLF or LF line ends).
        match = re.search(rb"\r?\n\r?\n", rest)
        block, after = (
            (rest, b"") if match is None else (rest[: match.start()], rest[match.end() :])
        )
        status, headers = _parse_headers(block)
        # curl -iL: a status line next starts another response's block (a redirect's target).
        if _STATUS.fullmatch(after.split(b"\n", 1)[0].rstrip(b"\r")):
            rest = after
            continue
        return SavedResponse(status, headers, body if body is not None else (after or None))


def directive_lines(directives: PageDirectives, now: datetime, indent: str = "  ") -> list[str]:
    """The directives in effect with their sources, what a crawl does, and what was
    ignored or malformed; one item per line, for the commands' text output."""
    lines: list[str] = []
    rows = directives.explain()
    if rows:
        width = max(len(name) for name, _ in rows)
        lines.append("in effect:")
        lines += [f"{indent}{name:<{width}}  {source}" for name, source in rows]
    else:
        lines.append("in effect: none")
    effects = crawl_effects(directives, now)
    lines.append("in a crawl:" if effects else "in a crawl: nothing changes")
    lines += [f"{indent}{effect}" for effect in effects]
    if directives.ignored:
        lines.append("ignored (for other crawlers):")
        lines += [f"{indent}{rejected}" for rejected in directives.ignored]
    if directives.malformed:
        lines.append("malformed (not read):")
        lines += [f"{indent}{rejected}" for rejected in directives.malformed]
    return lines


_CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9._:-]+)""", re.IGNORECASE)
# <meta charset=X> or http-equiv's "...; charset=X", in the first bytes (a browser's prescan).
_META_CHARSET = re.compile(
    rb"""<meta\s[^>]*?charset\s*=\s*["']?([A-Za-z0-9._:-]+)""", re.IGNORECASE
)


def _encoding(content_types: list[bytes], body: bytes) -> str | None:
    """The body's declared encoding: the Content-Type charset, else the page's own."""
    for value in content_types:
        found = _CHARSET.search(value)
        if found:
            return found[1].decode("ascii")
    found = _META_CHARSET.search(body, 0, 4096)
    return found[1].decode("ascii") if found else None


def _read(path: str, err_name: str) -> bytes:
    try:
        with open(path, "rb") as stream:
            return stream.read(_READ_LIMIT)
    except OSError as exc:
        raise CheckError(f"cannot read {err_name} {path!r}: {exc.strerror or exc}") from None


def run_check_headers(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``googlerobots check-headers FILE USER_AGENT``: exit 1 if a directive changes a crawl."""
    token = crawler_token(args.user_agent)
    if not token:
        raise CheckError(
            f"user agent {args.user_agent!r} has no product token "
            "(it must start with a letter, '_' or '-')"
        )
    body = _read(args.body, "body file") if args.body else None
    saved = read_saved_response(_read(args.file, "file"), body)
    html = saved.html
    directives = from_headers_and_body(
        saved.values("x-robots-tag"),
        saved.body,
        token,
        content_type_is_html=html,
        limit=DEFAULT_LIMIT,
        # The body's encoding as Scrapy finds it: the header's charset, else the
        # page's own <meta charset> (a byte order mark wins in the reader).
        encoding=lambda: _encoding(saved.values("content-type"), saved.body or b""),
    )
    now = datetime.now(timezone.utc)
    size = len(saved.body) if saved.body is not None else 0
    what = f"{size} bytes of body{', HTML: head meta tags read' if html else ''}"
    print(f"product token: {token} (from {args.user_agent!r})", file=out)
    print(f"{args.file}: {saved.status or 'no status line'}; {what}", file=out)
    for line in directive_lines(directives, now):
        print(line, file=out)
    declared = tuple(getattr(args, "usage", None) or ())
    if declared:
        # As a crawl declaring these uses judges the response (its usage gate).
        values = saved.values("content-usage")
        header = parse_usage_header(b", ".join(values)) if values else {}
        refused = page_usage_refusal(declared, header, directives)
        if refused is not None:
            category, written = refused
            print(
                f"usage: DISALLOWED for {category}: {written} (a crawl declaring "
                f"{category} refuses this response)",
                file=out,
            )
            return EXIT_FINDINGS
        print(f"usage: ALLOWED for {', '.join(declared)}: the response says no 'no'", file=out)
    return EXIT_FINDINGS if crawl_effects(directives, now) else EXIT_OK
