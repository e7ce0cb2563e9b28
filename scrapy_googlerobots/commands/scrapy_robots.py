"""``scrapy robots URL [URL ...]``: URLs checked against robots.txt with the project's settings.

Registered through the ``scrapy.commands`` entry point. Each URL's origin
robots.txt is fetched through a real crawler and engine: inside a project, its
``USER_AGENT``, ``ROBOTSTXT_USER_AGENT``, proxies, default headers, downloader
middlewares and add-ons apply (elsewhere Scrapy's defaults and ``-s``), and
:class:`RobotsFetcher` applies Google's status, redirect and size rules. Per
URL it prints the verdict, the deciding line, the product token, and the crawl
delay the project's settings would apply for the chosen group; per robots.txt,
its ``Sitemap:`` URLs
(``ROBOTSTXT_CRAWL_DELAY``, capped at ``ROBOTSTXT_CRAWL_DELAY_MAX``, as
:func:`~scrapy_googlerobots.pacing.crawl_delay.applied_delay` decides).

With ``--usage CATEGORY`` (or the project's ``ROBOTSTXT_USAGE``) a URL whose
robots.txt says "no" for a declared AI use is DISALLOWED too, with the deciding
``Content-Usage`` / ``Content-Signal`` line, as the crawl would not fetch it.
When a declared use is one TDMRep covers (``train-ai``, ``ai-use``), each
origin's ``/.well-known/tdmrep.json`` is fetched too (same engine, same rules)
and every URL gets its TDMRep verdict beside robots.txt's; a URL the file
reserves is DISALLOWED. (The ``tdm-reservation`` header and meta tag come with
the page itself, which the check does not download.)

With ``--page`` each URL robots.txt allows is fetched too (through the same
engine and settings, only then), and its page-level robots directives for the
crawl's product token are printed: those in effect with their sources, what a
crawl does with them, what was ignored or malformed. Without it no page is
fetched.

Exit status: 0 every URL allowed; 1 any disallowed (an unreachable robots.txt
disallows its whole origin, as for Google); 2 usage error, or the check could
not run (invalid settings, the crawl did not start or was interrupted).

How the crawl is driven, on every Scrapy from 2.11: a spider without start
requests; the fetches start on ``engine_started``, ``spider_idle`` keeps the
spider open until they are done, and then the spider is closed at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy import Request, Spider, signals
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import DontCloseSpider, UsageError
from scrapy.http import HtmlResponse
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.project import inside_project
from twisted.internet.defer import DeferredList
from twisted.python.failure import Failure

from scrapy_googlerobots.commands.googlerobots import rule_texts, unreachable_reason, usage_verdict
from scrapy_googlerobots.commands.page_check import directive_lines
from scrapy_googlerobots.fetching.fetcher import FetchResult, RobotsFetcher
from scrapy_googlerobots.pacing.crawl_delay import applied_delay
from scrapy_googlerobots.pagedirectives import PageDirectives, from_headers_and_body
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import Origin, origin_of
from scrapy_googlerobots.policy.page_rules import crawl_effects
from scrapy_googlerobots.policy.tdm import TDMREP_JSON, tdm_applies
from scrapy_googlerobots.policy.usage import declared_use
from scrapy_googlerobots.policy.useragent import crawler_token
from scrapy_googlerobots.reporting.explain import UsagePreference
from scrapy_googlerobots.robotstxt import USAGE_CATEGORIES, RobotsTxt, parse
from scrapy_googlerobots.runtime.config import RobotsConfig
from scrapy_googlerobots.runtime.scrapy_compat import close_spider, engine_download
from scrapy_googlerobots.tdmrep import TdmVerdict, parse_tdmrep_json, resolve

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["Command", "OriginCheck", "UrlVerdict"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OriginCheck:
    """What one origin's robots.txt fetch means for the URLs of that origin."""

    robots_url: str
    outcome: FetchOutcome
    reason: str
    """``HTTP 200``, ``more than 5 redirects``, ``ConnectionRefusedError: …``."""
    redirects: tuple[str, ...]
    rules: RobotsTxt | None
    """The parsed rules (outcome RULES only)."""
    texts: dict[int, str]
    """Allow/disallow and Content-Usage/Content-Signal lines by number, as written."""
    crawl_delay: float | None
    """The delay the group chosen for the product token asks (the larger of
    Crawl-delay and Request-rate's seconds per request), if any."""
    applied_delay: float | None = None
    """The delay a crawl with these settings applies: None when pacing is off
    (``ROBOTSTXT_CRAWL_DELAY``) or nothing is asked; capped at the maximum."""
    pacing: bool = False
    """``ROBOTSTXT_CRAWL_DELAY``: whether the crawl paces by robots.txt at all."""

    @classmethod
    def of(
        cls, result: FetchResult, origin: Origin, token: str, config: RobotsConfig
    ) -> OriginCheck:
        """Read one :class:`RobotsFetcher` result for ``token``, with ``config``'s pacing."""
        rules, texts, delay = None, {}, None
        if result.outcome is FetchOutcome.RULES:
            rules, texts = parse(result.body), rule_texts(result.body, usage=True)
            delay = rules.delay(token)
        applied = applied_delay(delay, config.crawl_delay_max) if config.crawl_delay else None
        return cls(
            origin.robots_url,
            result.outcome,
            result.reason,
            tuple(result.redirects),
            rules,
            texts,
            delay,
            applied,
            config.crawl_delay,
        )

    def verdict(self, url: str, token: str, usage: tuple[str, ...] = ()) -> UrlVerdict:
        """The answer for ``url`` (of this origin) and ``token``; ``usage``: the declared
        AI uses (a "no" for one of them disallows, as the crawl would not fetch the URL)."""
        preferences: dict[str, UsagePreference | None] = dict.fromkeys(usage)
        if self.rules is None:
            if self.outcome is FetchOutcome.UNREACHABLE:
                why = unreachable_reason(self.reason)
                return UrlVerdict(url, False, None, None, why, self, preferences)
            why = f"no robots.txt ({self.reason})"
            return UrlVerdict(url, True, None, None, why, self, preferences)
        canonical = canonicalize_url(url)
        verdict = self.rules.explain(canonical, token)
        line, rule, why = None, None, "no matching rule"
        if verdict.line:
            line, rule = verdict.line, self.texts.get(verdict.line, verdict.rule or "")
            why = f"line {line}: {rule}"
        if verdict.allowed and self.rules.has_usage:
            found = self.rules.usage(canonical, token)
            for category in USAGE_CATEGORIES:
                if category in found:
                    preferences[category] = UsagePreference.of_rule(
                        found[category], self.robots_url
                    )
        for category in usage:
            refused = preferences[category]
            if refused is not None and not refused.allowed:
                # The wording of ``googlerobots check --usage``.
                _, why = usage_verdict(self.rules, self.texts, canonical, token, category)
                rule = self.texts.get(refused.line, refused.rule)
                return UrlVerdict(url, False, refused.line, rule, why, self, preferences)
        return UrlVerdict(url, verdict.allowed, line, rule, why, self, preferences)

    @property
    def sitemaps(self) -> list[str]:
        """The ``Sitemap:`` URLs of the robots.txt, as written, in file order."""
        return [] if self.rules is None else list(self.rules.sitemaps)

    def describe(self) -> str:
        """One line: where robots.txt was read, what it means, the crawl delay."""
        hops = "".join(f" -> {url}" for url in self.redirects)
        if self.outcome is FetchOutcome.UNREACHABLE:
            return f"{self.robots_url}{hops}: {self.reason}, unreachable: every URL disallowed"
        if self.rules is None:
            return f"{self.robots_url}{hops}: {self.reason}, no rules: every URL allowed"
        delay = self.delay_text()
        return f"{self.robots_url}{hops}: {self.reason}, rules apply; crawl delay: {delay}"

    def delay_text(self) -> str:
        """The crawl delay a crawl with the project's settings applies, and why."""
        asked, applied = self.crawl_delay, self.applied_delay
        if not asked or asked <= 0:
            return "none"
        if not self.pacing:
            return f"none applied (robots.txt asks {asked:g} s; ROBOTSTXT_CRAWL_DELAY is off)"
        if applied is None:
            return f"none applied (robots.txt asks {asked:g} s; ROBOTSTXT_CRAWL_DELAY_MAX = 0)"
        if applied < asked:
            return f"{applied:g} s (capped from {asked:g} s by ROBOTSTXT_CRAWL_DELAY_MAX)"
        return f"{applied:g} s"


@dataclass(frozen=True)
class UrlVerdict:
    """One URL's answer: allowed or not, and why."""

    url: str
    allowed: bool
    line: int | None
    rule: str | None
    """The deciding line as written (``Disallow: /private/``)."""
    reason: str
    robots: OriginCheck
    usage: dict[str, UsagePreference | None] = field(default_factory=dict)
    """The declared AI uses and robots.txt's preferences for the URL, by category: the
    deciding rule, or None when robots.txt states none for a declared category."""
    tdm: TdmVerdict | None = None
    """The TDMRep verdict of the origin's ``tdmrep.json`` (a declared use TDMRep covers
    only); None when not asked."""
    tdm_file: FetchResult | None = None
    """How the ``tdmrep.json`` fetch went (None when not asked)."""

    @property
    def usage_text(self) -> str:
        """``train-ai=y (line 5), search: no preference``; empty without usage to show."""
        return ", ".join(
            f"{category}: no preference" if p is None else f"{category}={p.value} (line {p.line})"
            for category, p in self.usage.items()
        )


@dataclass(frozen=True)
class PageCheck:
    """One page fetched for ``--page``: where it ended up and its directives."""

    url: str
    """The URL asked about."""
    final_url: str
    status: int | None
    """The HTTP status; None when the download failed (see ``error``)."""
    directives: PageDirectives | None
    error: str = ""

    def lines(self, token: str) -> list[str]:
        """The text block under the URL's verdict."""
        if self.directives is None:
            return [f"page: not fetched: {self.error}"]
        via = f" (via redirect to {self.final_url})" if self.final_url != self.url else ""
        head = f"page: HTTP {self.status}{via}; directives for {token}:"
        return [head] + [f"  {line}" for line in directive_lines(self.directives, _now())]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class _RobotsCheck:
    """Fetches the origins' robots.txt through one crawler, then has the spider closed.

    With ``pages`` (``--page``), then each of those URLs that robots.txt allows
    (``allowed`` decides, from the fetch results and the settings).
    """

    def __init__(
        self,
        origins: list[Origin],
        pages: list[str] | None = None,
        allowed: Any = None,
        usage: tuple[str, ...] | None = None,
    ) -> None:
        self.origins = origins
        self.pages = pages or []
        self._allowed = allowed
        self.page_checks: dict[str, PageCheck] = {}
        self.results: list[FetchResult] | None = None
        # Declared use: --usage, else ROBOTSTXT_USAGE (read with the other settings).
        self.usage = usage
        self.tdm_results: dict[Origin, FetchResult] = {}
        self.config: RobotsConfig | None = None
        self.error: str | None = None
        self._crawler: Crawler | None = None
        self._done = False

    def attach(self, crawler: Crawler) -> None:
        self._crawler = crawler
        crawler.signals.connect(self._on_engine_started, signal=signals.engine_started)
        crawler.signals.connect(self._on_spider_idle, signal=signals.spider_idle)

    def _on_engine_started(self) -> None:
        # Not returned: the engine goes on starting while the fetches run.
        deferred_from_coro(self._run())

    def _on_spider_idle(self) -> None:
        if not self._done:
            raise DontCloseSpider

    async def _run(self) -> None:
        crawler = self._crawler
        assert crawler is not None and crawler.engine is not None
        try:
            # Read now: add-ons and command-line settings have been applied.
            self.config = RobotsConfig.from_settings(crawler.settings)
            fetcher = RobotsFetcher(crawler, self.config)
            fetches = [deferred_from_coro(fetcher.fetch(origin)) for origin in self.origins]
            answers = await maybe_deferred_to_future(DeferredList(fetches, consumeErrors=True))
            for _, value in answers:
                if isinstance(value, Failure):  # a bug: fetch() reports download errors
                    value.raiseException()
            self.results = [value for _, value in answers]
            if self.pages:
                await self._fetch_pages(crawler, self.config, self.results)
            usage = self.config.usage if self.usage is None else self.usage
            if tdm_applies(usage):
                await self._fetch_tdmrep(crawler)
        except ValueError as exc:  # a ROBOTSTXT_* setting that cannot work
            self.error = str(exc)
        except Exception as exc:
            logger.exception("scrapy robots: the check failed")
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._done = True
            # At once: waiting for the next idle check could take a heartbeat (5 s).
            close_spider(crawler.engine, crawler.spider, "finished")

    async def _fetch_pages(
        self, crawler: Crawler, config: RobotsConfig, results: list[FetchResult]
    ) -> None:
        """Download each page robots.txt allows (``--page``) and read its directives."""
        token = crawler_token(config.user_agent or config.default_user_agent)
        engine = crawler.engine
        wanted = [url for url in dict.fromkeys(self.pages) if self._allowed(url, results, config)]
        for url in self.pages:
            if url not in wanted:
                self.page_checks[url] = PageCheck(
                    url, url, None, None, "robots.txt disallows it (a crawl would not fetch it)"
                )
        # Judged above: the project's robots.txt middleware need not ask again.
        requests = [
            Request(url, callback=NO_CALLBACK, meta={"dont_obey_robotstxt": True}) for url in wanted
        ]
        downloads = [deferred_from_coro(_await(engine_download(engine, r))) for r in requests]
        answers = await maybe_deferred_to_future(DeferredList(downloads, consumeErrors=True))
        for url, (ok, value) in zip(wanted, answers, strict=True):
            if not ok:
                error = value.value if isinstance(value, Failure) else value
                self.page_checks[url] = PageCheck(
                    url, url, None, None, f"{type(error).__name__}: {error}"
                )
                continue
            html = isinstance(value, HtmlResponse)
            directives = from_headers_and_body(
                value.headers.getlist(b"X-Robots-Tag"),
                value.body if html else None,
                token,
                content_type_is_html=html,
            )
            self.page_checks[url] = PageCheck(url, value.url, value.status, directives)

    async def _fetch_tdmrep(self, crawler: Crawler) -> None:
        """Each http(s) origin's tdmrep.json, as the crawl would fetch it."""
        assert self.config is not None
        fetcher = RobotsFetcher(crawler, self.config, TDMREP_JSON)
        origins = [o for o in self.origins if TDMREP_JSON.url_for(o) is not None]
        fetches = [deferred_from_coro(fetcher.fetch(origin)) for origin in origins]
        answers = await maybe_deferred_to_future(DeferredList(fetches, consumeErrors=True))
        for origin, (_, value) in zip(origins, answers, strict=True):
            if isinstance(value, Failure):
                value.raiseException()
            self.tdm_results[origin] = value


async def _await(awaitable: Any) -> Any:
    return await awaitable


def tdm_verdict(url: str, origin: Origin, result: FetchResult) -> TdmVerdict:
    """The verdict of ``origin``'s tdmrep.json fetch ``result`` for ``url`` (file step only)."""
    if result.outcome is not FetchOutcome.RULES:
        return resolve(None)
    parsed = parse_tdmrep_json(result.body, url=TDMREP_JSON.url_for(origin) or "")
    return parsed.explain(url) if parsed.valid else resolve(None)


def _tdm_text(verdict: UrlVerdict) -> str:
    """``; TDMRep: TDM rights reserved: rule 1 of ...`` (or unset, with why)."""
    tdm, result = verdict.tdm, verdict.tdm_file
    if tdm is None or result is None:
        return ""
    if tdm.reserved is None and tdm.file_rule is None:
        if result.outcome is not FetchOutcome.RULES:
            return f"; TDMRep: unset (no tdmrep.json: {result.reason})"
        if not parse_tdmrep_json(result.body).valid:
            return "; TDMRep: unset (tdmrep.json is not a JSON array)"
        return "; TDMRep: unset (no tdmrep.json rule matches)"
    return f"; TDMRep: {tdm.describe()}"


class _RobotsSpider(Spider):
    """No requests of its own: the check's robots.txt downloads go through its engine."""

    name = "robots"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> _RobotsSpider:
        check: _RobotsCheck = kwargs.pop("check")
        spider: _RobotsSpider = super().from_crawler(crawler, *args, **kwargs)
        check.attach(crawler)
        return spider


def _targets(args: list[str]) -> list[tuple[str, Origin]]:
    """Each URL with its origin; UsageError (exit 2) for one without robots.txt."""
    if not args:
        raise UsageError("give at least one URL", print_help=False)
    targets = []
    for url in args:
        try:
            origin = origin_of(url)
        except ValueError as exc:
            raise UsageError(f"{url!r}: {exc}", print_help=False) from None
        if origin is None:
            raise UsageError(
                f"{url!r}: only http, https and ftp URLs have a robots.txt", print_help=False
            )
        targets.append((url, origin))
    return targets


class Command(ScrapyCommand):
    """``scrapy robots``: whether URLs may be crawled, with the project's settings."""

    # Like ``scrapy fetch``: inside a project its settings apply, elsewhere Scrapy's defaults.
    requires_project = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING", "LOGSTATS_INTERVAL": 0}

    def syntax(self) -> str:
        return "[options] <url> [<url> ...]"

    def short_desc(self) -> str:
        return "Check URLs against their robots.txt, fetched with the project's settings"

    def long_desc(self) -> str:
        return (
            "Fetch the robots.txt of each URL's origin through Scrapy with the project's "
            "settings (user agent, ROBOTSTXT_USER_AGENT, proxies, headers, downloader "
            "middlewares), read it the way Google does and print, per URL, ALLOWED or "
            "DISALLOWED with the deciding line, the product token and the crawl delay "
            "the settings apply (ROBOTSTXT_CRAWL_DELAY, ROBOTSTXT_CRAWL_DELAY_MAX), and "
            "each robots.txt's Sitemap: URLs. "
            "With --usage CATEGORY (or ROBOTSTXT_USAGE), a URL whose robots.txt says no to "
            "that AI use is DISALLOWED, with its Content-Usage / Content-Signal line. "
            "With --page, each allowed URL is fetched too and its page-level robots "
            "directives (X-Robots-Tag, robots meta tags) for the crawl's agent are printed. "
            "Exit status: 0 all allowed, 1 any disallowed, 2 usage error or no check."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--json", action="store_true", help="print one JSON document (for scripts)"
        )
        parser.add_argument(
            "--usage",
            metavar="CATEGORY",
            action="append",
            help=(
                "an AI use the crawl collects content for (train-ai, ai-use, search, or "
                "ai-train, ai-input); a URL whose robots.txt says no to it is DISALLOWED. "
                "Repeat or separate with commas; replaces ROBOTSTXT_USAGE"
            ),
        )

        parser.add_argument(
            "--page",
            action="store_true",
            help=(
                "fetch each URL robots.txt allows and print its page-level robots "
                "directives (X-Robots-Tag, robots meta) for the crawl's agent; without it "
                "no page is fetched"
            ),
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        # A check must never resume, or write to, the persisted state of a crawl.
        self.settings.set("JOBDIR", None, priority="cmdline")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        targets = _targets(args)
        assert self.settings is not None
        try:
            # Early, for a clear message: a bad setting also stops the middleware.
            RobotsConfig.from_settings(self.settings)
            usage = None if opts.usage is None else declared_use(",".join(opts.usage), "--usage")
        except ValueError as exc:
            raise UsageError(str(exc), print_help=False) from None
        origins = list(dict.fromkeys(origin for _, origin in targets))
        pages = [url for url, _ in targets] if opts.page else None
        origin_of_url = dict(targets)

        def allowed(url: str, results: list[FetchResult], config: RobotsConfig) -> bool:
            """What the verdict below says, inside the crawl (the pages are fetched there)."""
            by_origin = dict(zip(origins, results, strict=True))
            origin = origin_of_url[url]
            token = crawler_token(config.user_agent or config.default_user_agent)
            declared = config.usage if usage is None else usage
            robots = OriginCheck.of(by_origin[origin], origin, token, config)
            return robots.verdict(url, token, declared).allowed

        check = _RobotsCheck(origins, pages, allowed, usage)
        process = self.crawler_process
        assert process is not None
        process.crawl(process.create_crawler(_RobotsSpider), check=check)
        process.start()
        config, results = check.config, check.results
        if check.error is not None or config is None or results is None:
            why = check.error or "the crawl did not start or was stopped (see the log)"
            print(f"scrapy robots: error: {why}", file=sys.stderr)
            self.exitcode = 2
            return
        setting = "ROBOTSTXT_USER_AGENT" if config.user_agent else "USER_AGENT"
        agent = config.user_agent or config.default_user_agent
        token = crawler_token(agent)
        if token in ("", "Mozilla"):
            print(
                f"scrapy robots: note: {setting} {agent!r} names no crawler (product token "
                f"{token!r}); set ROBOTSTXT_USER_AGENT to your crawler's name",
                file=sys.stderr,
            )
        if not config.obey and inside_project():
            print(
                "scrapy robots: note: ROBOTSTXT_OBEY is off: this project's crawls "
                "do not check robots.txt",
                file=sys.stderr,
            )
        declared = (usage, "--usage") if usage is not None else (config.usage, "ROBOTSTXT_USAGE")
        robots = {
            o: OriginCheck.of(r, o, token, config) for o, r in zip(origins, results, strict=True)
        }
        verdicts = [robots[origin].verdict(url, token, declared[0]) for url, origin in targets]
        page_checks = check.page_checks if opts.page else None
        if check.tdm_results:
            verdicts = [
                _with_tdm(v, o, check.tdm_results)
                for v, (_, o) in zip(verdicts, targets, strict=True)
            ]
        if opts.json:
            document = _document(agent, setting, token, verdicts, declared[0])
            if page_checks is not None:
                _add_pages(document, page_checks)
            output = json.dumps(document, indent=2) + "\n"
        else:
            output = _text(agent, setting, token, verdicts, declared, page_checks)
        _write(output)
        self.exitcode = 0 if all(v.allowed for v in verdicts) else 1


def _with_tdm(
    verdict: UrlVerdict, origin: Origin, results: dict[Origin, FetchResult]
) -> UrlVerdict:
    """``verdict`` with its TDMRep verdict; DISALLOWED when the file reserves the URL."""
    result = results.get(origin)
    if result is None or not verdict.allowed:
        return verdict  # robots.txt refuses first: TDMRep is not asked (as in a crawl)
    tdm = tdm_verdict(verdict.url, origin, result)
    allowed = verdict.allowed and not tdm.reserved
    return dataclasses.replace(verdict, allowed=allowed, tdm=tdm, tdm_file=result)


def _write(output: str) -> None:
    """Write to stdout; a URL it cannot encode is escaped, a closed pipe (``| head``) is quiet."""
    try:
        sys.stdout.buffer.write(output.encode(sys.stdout.encoding, "backslashreplace"))
        sys.stdout.flush()
    except BrokenPipeError:
        # Keep the interpreter's final flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _text(
    agent: str,
    setting: str,
    token: str,
    verdicts: list[UrlVerdict],
    declared: tuple[tuple[str, ...], str] = ((), ""),
    pages: dict[str, PageCheck] | None = None,
) -> str:
    """One line per origin's robots.txt, its URLs under it (in argument order); with
    ``pages`` (``--page``), each URL's page directives under it."""
    lines = [f"product token: {token} (from {setting} = {agent!r})"]
    if declared[0]:
        lines.append(f"declared AI use: {', '.join(declared[0])} (from {declared[1]})")
    by_robots: dict[str, list[UrlVerdict]] = {}
    for verdict in verdicts:
        by_robots.setdefault(verdict.robots.robots_url, []).append(verdict)
    for group in by_robots.values():
        lines.append(group[0].robots.describe())
        for verdict in group:
            word = "ALLOWED" if verdict.allowed else "DISALLOWED"
            # Refused by TDMRep only: robots.txt allowed it, so its preferences apply too.
            robots_allowed = verdict.allowed or (verdict.tdm is not None and verdict.tdm.reserved)
            usage = f"; usage: {verdict.usage_text}" if robots_allowed and verdict.usage else ""
            usage += _tdm_text(verdict)
            lines.append(f"  {word:<11} {verdict.url}  {verdict.reason}{usage}")
            page = pages.get(verdict.url) if pages is not None else None
            if page is not None:
                lines += [f"      {line}" for line in page.lines(token)]
        lines.extend(f"  Sitemap: {url}" for url in group[0].robots.sitemaps)
    return "\n".join(lines) + "\n"


def _add_pages(document: dict[str, Any], pages: dict[str, PageCheck]) -> None:
    """``--json --page``: each URL entry gets ``page`` (None when not fetched)."""
    now = _now()
    for entry in document["urls"]:
        page = pages.get(entry["url"])
        if page is None or page.directives is None:
            entry["page"] = {"fetched": False, "reason": page.error if page else ""}
            continue
        directives = page.directives
        entry["page"] = {
            "fetched": True,
            "url": page.final_url,
            "status": page.status,
            "directives": [{"directive": d, "source": s} for d, s in directives.explain()],
            "noindex": directives.is_noindex(now),
            "nofollow": directives.nofollow,
            "effects": crawl_effects(directives, now),
            "ignored": [str(r) for r in directives.ignored],
            "malformed": [str(r) for r in directives.malformed],
        }


def _document(
    agent: str,
    setting: str,
    token: str,
    verdicts: list[UrlVerdict],
    declared: tuple[str, ...] = (),
) -> dict[str, object]:
    """The ``--json`` document: the agent, then one entry per URL in argument order."""
    return {
        "user_agent": agent,
        "user_agent_setting": setting,
        "token": token,
        "declared_use": list(declared),
        "all_allowed": all(v.allowed for v in verdicts),
        "urls": [
            {
                "url": v.url,
                "allowed": v.allowed,
                "line": v.line,
                "rule": v.rule,
                "reason": v.reason,
                "token": token,
                "usage": {
                    category: None
                    if p is None
                    else {
                        "allowed": p.allowed,
                        "line": p.line,
                        "rule": v.robots.texts.get(p.line, p.rule),
                    }
                    for category, p in v.usage.items()
                },
                "tdmrep": None
                if v.tdm is None or v.tdm_file is None
                else {
                    "reserved": v.tdm.reserved,
                    "policy": v.tdm.policy,
                    "source": None if v.tdm.source is None else v.tdm.source.step,
                    "explanation": v.tdm.explanation,
                    "file": {
                        "outcome": v.tdm_file.outcome.value,
                        "reason": v.tdm_file.reason,
                        "redirects": list(v.tdm_file.redirects),
                    },
                },
                "crawl_delay": v.robots.crawl_delay,
                "crawl_delay_applied": v.robots.applied_delay,
                "robots_txt": {
                    "url": v.robots.robots_url,
                    "redirects": list(v.robots.redirects),
                    "outcome": v.robots.outcome.value,
                    "reason": v.robots.reason,
                    "sitemaps": v.robots.sitemaps,
                },
            }
            for v in verdicts
        ],
    }
