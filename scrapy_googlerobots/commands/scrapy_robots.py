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
fetched. With a declared use too, a page that says "no" to it (its
``Content-Usage`` header, or ``noai`` / ``noimageai`` / ``noml`` for
``train-ai``) is DISALLOWED, naming the header or tag, as the crawl's usage
gate refuses it.

Exit status: 0 every URL allowed; 1 any disallowed (an unreachable robots.txt
disallows its whole origin: at once with ``ROBOTSTXT_UNREACHABLE = "disallow"``,
as for Google; by default, ``"defer"``, a crawl's requests wait while it is
fetched again, which the line says); 2 usage error, or the check could not run
(invalid settings, the crawl did not start or was interrupted).

How the crawl is driven, on every Scrapy from 2.11: a spider without start
requests; the fetches start on ``engine_started``, ``spider_idle`` keeps the
spider open until they are done, and then the spider is closed at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
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

from scrapy_googlerobots.commands.robots_verdicts import (
    OriginCheck,
    PageCheck,
    UrlVerdict,
    add_pages,
    json_document,
    text_report,
    with_page,
    with_tdm,
    write,
)
from scrapy_googlerobots.fetching.fetcher import FetchResult, RobotsFetcher
from scrapy_googlerobots.pagedirectives import from_headers_and_body
from scrapy_googlerobots.policy.origin import Origin, origin_of
from scrapy_googlerobots.policy.page_rules import page_usage_refusal
from scrapy_googlerobots.policy.tdm import TDMREP_JSON, tdm_applies
from scrapy_googlerobots.policy.usage import declared_use
from scrapy_googlerobots.policy.useragent import crawler_token
from scrapy_googlerobots.robotstxt import (
    parse_usage_header,
)
from scrapy_googlerobots.runtime.config import RobotsConfig
from scrapy_googlerobots.runtime.scrapy_compat import close_spider, engine_download

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["Command", "OriginCheck", "UrlVerdict"]

logger = logging.getLogger(__name__)


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
        declared = config.usage if self.usage is None else self.usage
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
                encoding=value.encoding if html else None,
            )
            usage_values = value.headers.getlist(b"Content-Usage")
            header = parse_usage_header(b", ".join(usage_values)) if usage_values else {}
            refused = page_usage_refusal(declared, header, directives)
            self.page_checks[url] = PageCheck(
                url, value.url, value.status, directives, refused=refused
            )

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
                with_tdm(v, o, check.tdm_results)
                for v, (_, o) in zip(verdicts, targets, strict=True)
            ]
        if page_checks:  # after the download, as in a crawl: robots.txt, TDMRep, the page
            verdicts = [with_page(v, page_checks.get(v.url)) for v in verdicts]
        if opts.json:
            document = json_document(agent, setting, token, verdicts, declared[0])
            if page_checks is not None:
                add_pages(document, page_checks)
            output = json.dumps(document, indent=2) + "\n"
        else:
            output = text_report(agent, setting, token, verdicts, declared, page_checks)
        write(output)
        self.exitcode = 0 if all(v.allowed for v in verdicts) else 1
