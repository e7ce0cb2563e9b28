"""``scrapy crawl demo``: crawl an offline demo web and report what robots.txt decided.

When the crawl starts, the spider opens a small web of several origins on
127.0.0.1 (free ports, in this process); when it ends, it prints the report
and closes them. ``scrapy crawl demo -a start_url=https://example.org/``
crawls a real site instead (same-origin links, ``-a max_pages=N``, default 20).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotSupported
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.python.failure import Failure

from demo_project.demoweb import DemoWeb
from demo_project.report import Exchange, PageOutcome, render, robots_exchange
from scrapy_googlerobots import GoogleRobotsTxtMiddleware, forbidden_by


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class DemoSpider(scrapy.Spider):
    name = "demo"

    def __init__(self, start_url: str | None = None, max_pages: str = "20", **kwargs: Any):
        super().__init__(**kwargs)
        self.start_url = start_url
        self.max_pages = int(max_pages)
        self.web: DemoWeb | None = None
        self.exchanges: list[Exchange] = []
        # origin URL -> (title, pages in request order)
        self.origins: dict[str, tuple[str, list[PageOutcome]]] = {}
        self.pages: dict[str, PageOutcome] = {}
        self._robots: GoogleRobotsTxtMiddleware | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DemoSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.on_robots_exchange, signal=robots_exchange)
        crawler.signals.connect(spider.on_spider_closed, signal=signals.spider_closed)
        return spider

    @property
    def robots(self) -> GoogleRobotsTxtMiddleware:
        """The crawl's robots.txt middleware, which explains its decisions."""
        if self._robots is None:
            if hasattr(self.crawler, "get_downloader_middleware"):  # Scrapy >= 2.12
                found = self.crawler.get_downloader_middleware(GoogleRobotsTxtMiddleware)
            else:
                assert self.crawler.engine is not None
                middlewares = self.crawler.engine.downloader.middleware.middlewares
                found = next(
                    (m for m in middlewares if isinstance(m, GoogleRobotsTxtMiddleware)), None
                )
            if found is None:
                raise RuntimeError("GoogleRobotsTxtMiddleware is not enabled (see settings.py)")
            self._robots = found
        return self._robots

    # -- requests ---------------------------------------------------------------

    def _request(self, url: str, title: str) -> scrapy.Request | None:
        if url in self.pages or (self.start_url and len(self.pages) >= self.max_pages):
            return None
        page = self.pages[url] = PageOutcome(url)
        self.origins.setdefault(_origin(url), (title, []))[1].append(page)
        return scrapy.Request(url, callback=self.parse, errback=self.on_error)

    def _first_requests(self) -> Iterator[scrapy.Request]:
        if self.start_url:
            request = self._request(self.start_url, _origin(self.start_url))
            if request is not None:
                yield request
            return
        # Scrapy's RetryMiddleware retries the first robots.txt fetch before the
        # middleware sees the 503, so the flaky origin fails that many times.
        settings = self.crawler.settings
        failures = 1 + (settings.getint("RETRY_TIMES") if settings.getbool("RETRY_ENABLED") else 0)
        self.web = DemoWeb(failures=failures)
        for origin in self.web.start():
            for path in origin.paths:
                request = self._request(origin.url + path, origin.title)
                if request is not None:
                    yield request

    async def start(self) -> AsyncIterator[scrapy.Request]:  # Scrapy >= 2.13
        for request in self._first_requests():
            yield request

    def start_requests(self) -> Iterator[scrapy.Request]:  # Scrapy < 2.13
        yield from self._first_requests()

    # -- outcomes ---------------------------------------------------------------

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        page = self.pages[response.request.url]
        page.outcome, page.at = "crawled", time.monotonic()
        page.decision = self.robots.explain(response.request)
        if not self.start_url:
            return
        try:
            links = response.css("a::attr(href)").getall()
        except NotSupported:
            return
        origin = _origin(response.url)
        for href in links:
            url = response.urljoin(href).split("#", 1)[0]
            if _origin(url) == origin:
                request = self._request(url, origin)
                if request is not None:
                    yield request

    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        page = self.pages[request.url]
        decision = forbidden_by(failure)
        if decision is not None:
            page.outcome, page.decision = "blocked", decision
        elif failure.check(IgnoreRequest):
            page.outcome, page.detail = "dropped", str(failure.value)
        elif failure.check(HttpError):
            page.outcome, page.at = "crawled", time.monotonic()
            page.decision = self.robots.explain(request)
            page.detail = f"(page answered HTTP {failure.value.response.status})"
        else:
            page.outcome, page.detail = "failed", failure.getErrorMessage()

    def on_robots_exchange(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)

    async def on_spider_closed(self, spider: scrapy.Spider, reason: str = "") -> None:
        # A ROBOTSTXT_* setting that cannot work: nothing was crawled, an ERROR line says why.
        if reason != "robotstxt_bad_setting":
            settings = self.crawler.settings
            user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
            origins = [(title, origin, pages) for origin, (title, pages) in self.origins.items()]
            stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
            summary = self.robots.summary
            print(render(user_agent, origins, self.exchanges, summary, stats), flush=True)
        if self.web is not None:
            await maybe_deferred_to_future(self.web.stop())
