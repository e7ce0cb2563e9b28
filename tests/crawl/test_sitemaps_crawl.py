"""One robots.txt fetch per origin for the crawl and the spider, and sitemaps offered (issue 28).

Real crawls of ``SitemapSpider`` against local sites (robots.txt -> sitemap
index -> sitemaps -> pages), counting what each site's server saw; the
``robots_parsed`` signal on every supported Scrapy; the documented broad-crawl
example (docs/usage/sitemaps.rst) run as it is written; two workers sharing a
Redis store.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy import Request, signals
from scrapy.http import Response, TextResponse
from scrapy.http.request import NO_CALLBACK
from scrapy.spiders import SitemapSpider
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer

from scrapy_googlerobots import GoogleRobotParser
from scrapy_googlerobots import signals as robots_signals
from scrapy_googlerobots.fetching.robots_copy import SERVED_FLAG

from docs_text import DOCS, code_blocks
from middleware_support import (
    STOCK,
    ChainSpider,
    MovableClock,
    clocked,
    our_middleware,
    robots_settings,
    robots_stats,
    spider_with_signals,
    then,
)
from redis_server import RedisServer, redis_server
from servers import CrawlResult, RecordingSpider, Reply, Site, run_crawl

__all__ = ["redis_server"]  # the fixture, imported for the tests below

MODULE = "scrapy_googlerobots"
XML = {"Content-Type": "application/xml"}
ROBOTS_HEADERS = {"Content-Type": "text/plain; charset=utf-8", "X-Robots-Test": "kept"}
DAY = 86_400
SERVED_LINE = re.compile(r"Served <GET (\S+)> from the robots\.txt of \S+ fetched \d+ s ago")


def _urlset(*urls: str) -> bytes:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    ).encode()


def _index(*urls: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}'
        "</sitemapindex>"
    ).encode()


def _robots(site: Site, filler: bytes = b"") -> bytes:
    return (
        b"User-agent: *\nDisallow: /private/\n"
        + f"Sitemap: {site.url('/sitemap_index.xml')}\n".encode()
        + filler
    )


def _sitemap_site(site: Site, robots: Reply | None = None, *more: Reply) -> Site:
    """robots.txt -> sitemap index -> two sitemaps -> pages (one of them disallowed)."""
    site.script("/robots.txt", robots or Reply(200, _robots(site), ROBOTS_HEADERS), *more)
    site.script(
        "/sitemap_index.xml",
        Reply(200, _index(site.url("/sitemap1.xml"), site.url("/sitemap2.xml")), XML),
    )
    site.script("/sitemap1.xml", Reply(200, _urlset(site.url("/p1"), site.url("/private/x")), XML))
    site.script("/sitemap2.xml", Reply(200, _urlset(site.url("/p2")), XML))
    return site


def _pages(site: Site) -> list[str]:
    return [site.url("/p1"), site.url("/p2")]


class RecordingSitemapSpider(SitemapSpider):
    """SitemapSpider noting the robots.txt responses its own code parses, the pages, the
    ``robots_parsed`` signals (ours: one object on every Scrapy) and the middleware's
    ``sitemaps()`` answers."""

    name = "sitemaps"
    crawl_result: CrawlResult

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.events = []
        spider.robots_responses = []
        spider.sitemaps_known = {}
        spider.parsed = []
        crawler.signals.connect(spider.on_parsed, signal=robots_signals.robots_parsed)
        return spider

    def on_parsed(self, robotparser: Any, request: Request | None, **kwargs: Any) -> None:
        self.parsed.append((robotparser, request, kwargs))
        self.events.append(("parsed", request.url if request is not None else None))

    def _parse_sitemap(self, response: Response) -> Any:
        if response.url.endswith("/robots.txt"):
            self.robots_responses.append(response)
            self.events.append(("robots.txt", response.url))
        return super()._parse_sitemap(response)

    def parse(self, response: Response, **kwargs: Any) -> Any:
        try:
            middleware = our_middleware(self.crawler)
        except ValueError:  # the stock middleware's crawl
            return None
        self.sitemaps_known[response.url] = middleware.sitemaps(response.url)
        return None


def _robots_urls(*sites: Site) -> list[str]:
    return [site.url("/robots.txt") for site in sites]


async def _crawl(
    sitemap_urls: list[str], *, middleware: object = None, **settings: Any
) -> tuple[CrawlResult, Any]:
    spiders: list[Any] = []

    def keep(spider: Any) -> None:
        spiders.append(spider)

    options = (
        robots_settings(**settings)
        if middleware is None
        else robots_settings(middleware, **settings)
    )
    result = await _run(options, sitemap_urls, keep)
    return result, spiders[0]


def _run(options: dict[str, Any], sitemap_urls: list[str], keep: Any) -> Any:
    class Kept(RecordingSitemapSpider):
        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
            spider = super().from_crawler(crawler, *args, **kwargs)
            keep(spider)
            return spider

    return run_crawl(options, [], Kept, sitemap_urls=sitemap_urls, timeout=60)


def _visible(response: Response) -> tuple[Any, ...]:
    """What a callback sees of a robots.txt response, less the Date the server stamps."""
    headers = {key: value for key, value in response.headers.items() if key.lower() != b"date"}
    return (type(response), response.url, response.status, headers, response.body)


@pytest_twisted.ensureDeferred
async def test_sitemap_spider_gets_robots_txt_from_the_one_fetch(make_site: Any) -> None:
    first, second = _sitemap_site(make_site()), _sitemap_site(make_site())
    # Over ROBOTSTXT_MAX_SIZE (500 KiB): the middleware kept only the first
    # 512,000 bytes, which cannot stand for the spider's download.
    filler = b"# filler line of a very long robots.txt\n" * 16_000
    large = make_site()
    _sitemap_site(large, Reply(200, _robots(large, filler), ROBOTS_HEADERS))
    sites = (first, second, large)
    result, spider = await _crawl(_robots_urls(*sites))

    # One /robots.txt request per origin, for the middleware and the spider together;
    # the large one twice (its copy was cut at the size limit).
    hits = {site.url("/"): site.hits("/robots.txt") for site in sites}
    print(f"figure: /robots.txt requests per origin with ours: {list(hits.values())}")
    assert list(hits.values()) == [1, 1, 2]
    # Everything the sitemaps list was crawled, robots.txt applied to it (the engine
    # received the three robots.txt responses, two of them served from the copy).
    assert sorted(result.downloaded) == sorted(
        _robots_urls(*sites)
        + [url for site in sites for url in _pages(site)]
        + [site.url(p) for site in sites for p in ("/sitemap_index.xml", "/sitemap1.xml")]
        + [site.url("/sitemap2.xml") for site in sites]
    )
    assert all(site.hits("/private/x") == 0 for site in sites)
    stats = robots_stats(result)
    assert stats["robotstxt/request_count"] == 3
    assert stats["robotstxt/forbidden"] == 3
    assert stats["robotstxt/spider_request/served"] == 2
    assert stats["robotstxt/spider_request/downloaded/copy"] == 1
    assert stats["robotstxt/truncated"] == 1

    # The spider's callback got a response it cannot tell from a download.
    by_url = {response.url: response for response in spider.robots_responses}
    assert sorted(by_url) == sorted(_robots_urls(*sites))
    for site in (first, second):
        response = by_url[site.url("/robots.txt")]
        assert isinstance(response, TextResponse)
        assert (response.status, response.body) == (200, _robots(site))
        assert response.headers[b"X-Robots-Test"] == b"kept"
        assert response.headers[b"Content-Type"] == b"text/plain; charset=utf-8"
        assert response.headers.get(b"Date")
        assert response.request is not None and response.request.url == site.url("/robots.txt")
        assert response.request.callback == spider._parse_sitemap
        assert SERVED_FLAG in response.flags
    whole = by_url[large.url("/robots.txt")]
    assert whole.body == _robots(large, filler) and len(whole.body) > 512_000
    assert SERVED_FLAG not in whole.flags
    served = [SERVED_LINE.search(m) for m in result.messages(logging.DEBUG, logger=MODULE)]
    assert sorted(m[1] for m in served if m) == sorted(_robots_urls(first, second))

    # robots_parsed: once per origin, before the spider's robots.txt response,
    # with a GoogleRobotParser (its sitemaps property) and the triggering request.
    assert len(spider.parsed) == 3
    for robotparser, request, extra in spider.parsed:
        assert isinstance(robotparser, GoogleRobotParser)
        assert request is not None and request.url.endswith("/robots.txt")
        origin = request.url[: -len("/robots.txt")]
        assert robotparser.sitemaps == [origin + "/sitemap_index.xml"]
        assert set(extra) <= {"signal", "sender"}
    for url in _robots_urls(*sites):
        assert spider.events.index(("parsed", url)) < spider.events.index(("robots.txt", url))
    if hasattr(signals, "robots_parsed"):  # Scrapy 2.18+: the very same signal
        assert robots_signals.robots_parsed is signals.robots_parsed

    # The middleware's own answer, from what the crawl knows.
    for site in sites:
        assert spider.sitemaps_known[site.url("/p1")] == [site.url("/sitemap_index.xml")]
    middleware_sitemaps = our_middleware(result.crawler).sitemaps
    assert middleware_sitemaps("data:text/plain,x") is None
    assert middleware_sitemaps("http://127.0.0.1:9/never-seen") is None


@pytest_twisted.ensureDeferred
async def test_stock_middleware_fetches_robots_txt_twice(make_site: Any) -> None:
    # The closing note's comparison, and what the spider saw with each middleware.
    sites = [_sitemap_site(make_site()), _sitemap_site(make_site())]
    stock, stock_spider = await _crawl(_robots_urls(*sites), middleware=STOCK)
    stock_hits = [site.hits("/robots.txt") for site in sites]
    print(f"figure: /robots.txt requests per origin with the stock middleware: {stock_hits}")
    assert stock_hits == [2, 2]
    ours, our_spider = await _crawl(_robots_urls(*sites))
    assert [site.hits("/robots.txt") for site in sites] == [3, 3]  # one more each: ours
    assert sorted(stock.downloaded) != [] and all(
        url in ours.downloaded for url in stock.downloaded if not url.endswith("/robots.txt")
    )
    seen_stock = sorted(_visible(r) for r in stock_spider.robots_responses)
    seen_ours = sorted(_visible(r) for r in our_spider.robots_responses)
    assert seen_stock == seen_ours


@pytest_twisted.ensureDeferred
async def test_robots_txt_unreachable_then_back_serves_the_waiting_spider_request(
    site: Site,
) -> None:
    _sitemap_site(site, Reply(503), Reply(200, _robots(site), ROBOTS_HEADERS))
    result, spider = await _crawl(
        _robots_urls(site),
        RETRY_ENABLED=False,
        ROBOTSTXT_RETRY_DELAY=0.2,
        ROBOTSTXT_RETRY_MAX_DELAY=0.2,
    )
    assert site.hits("/robots.txt") == 2  # the 503, then the good fetch; none for the spider
    [response] = spider.robots_responses
    assert (response.status, response.body) == (200, _robots(site))
    assert SERVED_FLAG in response.flags
    assert sorted(u for u in result.downloaded if "/p" in u) == _pages(site)
    stats = robots_stats(result)
    assert stats["robotstxt/spider_request/served"] == 1
    assert stats["robotstxt/unreachable/deferred"] >= 1
    # robots_parsed follows the fetch that yielded a policy only (not the 503).
    assert [request.url for _, request, _ in spider.parsed] == [site.url("/robots.txt")]


@pytest_twisted.ensureDeferred
async def test_requests_that_ask_for_more_are_downloaded(site: Site) -> None:
    _sitemap_site(site)

    class Asking(RecordingSitemapSpider):
        def parse(self, response: Response, **kwargs: Any) -> Any:
            if response.url == site.url("/p1"):
                robots = site.url("/robots.txt")
                yield Request(robots, callback=self.got, dont_filter=True)
                yield Request(robots, callback=self.got, dont_filter=True, method="HEAD")
                yield Request(
                    robots, callback=self.got, dont_filter=True, headers={"Accept-Language": "fr"}
                )
                yield Request(
                    robots,
                    callback=self.got,
                    dont_filter=True,
                    meta={"dont_obey_robotstxt": True},
                )

        def got(self, response: Response) -> None:
            self.robots_responses.append(response)

    kept: list[Any] = []

    class Kept(Asking):
        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
            spider = super().from_crawler(crawler, *args, **kwargs)
            kept.append(spider)
            return spider

    result = await run_crawl(robots_settings(), [], Kept, sitemap_urls=_robots_urls(site))
    spider = kept[0]
    # Served: SitemapSpider's request, and a callback's plain GET (it carries a
    # Referer); downloaded: HEAD, another header, dont_obey_robotstxt.
    assert site.hits("/robots.txt") == 4
    served = [r for r in spider.robots_responses if SERVED_FLAG in r.flags]
    assert len(served) == 2
    assert [r.request.headers.get(b"Referer") for r in served if r.request] == [
        None,
        site.url("/p1").encode(),
    ]
    stats = robots_stats(result)
    assert stats["robotstxt/spider_request/served"] == 2
    assert stats["robotstxt/spider_request/downloaded/request"] == 2


EXAMPLE = (DOCS / "usage" / "sitemaps.rst").read_text(encoding="utf-8")


@pytest_twisted.ensureDeferred
async def test_documented_broad_crawl_example_schedules_every_origins_sitemaps(
    make_site: Any, tmp_path: Path
) -> None:
    [code] = [block for block in code_blocks(EXAMPLE, "python") if "class BroadSpider" in block]
    # A module file of its own: Scrapy reads callbacks' source (inspect).
    path = tmp_path / "broad_example.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("broad_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    sites = [_sitemap_site(make_site()), _sitemap_site(make_site())]
    homes = [site.url("/") for site in sites]
    result = await run_crawl(robots_settings(), homes, namespace["BroadSpider"])
    for line in result.messages(logging.INFO, logger="broad"):
        print("example output:", line)
    assert [site.hits("/robots.txt") for site in sites] == [1, 1]
    assert [site.hits("/sitemap_index.xml") for site in sites] == [1, 1]
    pages = [url for site in sites for url in _pages(site)]
    assert sorted(u for u in result.downloaded if u in pages) == sorted(pages)
    assert all(site.hits("/private/x") == 0 for site in sites)
    scheduled = [m for m in result.messages(logging.INFO, logger="broad") if "sitemap" in m]
    assert len(scheduled) == 2


@pytest_twisted.ensureDeferred
async def test_two_workers_sharing_redis_fetch_each_robots_txt_once(
    redis_server: RedisServer, make_site: Any
) -> None:
    sites = [_sitemap_site(make_site()), _sitemap_site(make_site())]
    settings = {"ROBOTSTXT_CACHE_STORE": redis_server.url}
    # run_crawl lowers the root logger's level for its crawl and puts back what
    # it found; two at once would leave the lowered level behind.
    root = logging.getLogger()
    level = root.level
    try:
        both = await defer.gatherResults(
            [defer.ensureDeferred(_crawl(_robots_urls(*sites), **settings)) for _ in range(2)]
        )
    finally:
        root.setLevel(level)
    hits = [site.hits("/robots.txt") for site in sites]
    print(f"figure: two workers, shared Redis: /robots.txt requests per origin: {hits}")
    assert hits == [1, 1]
    stats = [robots_stats(result) for result, _ in both]
    assert sum(s.get("robotstxt/request_count", 0) for s in stats) == 2
    assert [s["robotstxt/spider_request/served"] for s in stats] == [2, 2]
    # The signal fires on the worker that fetched, once per origin across the cluster.
    parsed = sorted(request.url for _, spider in both for _, request, _ in spider.parsed)
    assert parsed == sorted(_robots_urls(*sites))
    for _, spider in both:
        assert all(SERVED_FLAG in r.flags for r in spider.robots_responses)
        assert len(spider.robots_responses) == 2


@pytest_twisted.ensureDeferred
async def test_past_its_lifetime_the_copy_is_refreshed_first_or_not_served(
    make_site: Any,
) -> None:
    # Both copies are past their lifetime when the spider asks for robots.txt:
    # the request waits for the refresh it triggers, and is served from the new
    # copy; when that refresh fails (503), the old copy keeps applying but
    # cannot stand for the download, and the spider downloads robots.txt itself.
    fresh, failing = make_site(), make_site()
    robots = b"User-agent: *\nDisallow: /x\n"
    fresh.script("/robots.txt", Reply(200, robots))
    failing.script("/robots.txt", Reply(200, robots), Reply(503))
    clock = MovableClock()
    seen: list[Response] = []

    def later(site: Site) -> dict[str, Any]:
        def action(_: Any) -> list[Request]:
            clock.advance(DAY + 1)
            return [Request(site.url("/robots.txt"), dont_filter=True)]

        return then(action)

    def on_response(response: Response, request: Request, **_: Any) -> None:
        if response.url.endswith("/robots.txt") and not request.meta.get("dont_obey_robotstxt"):
            seen.append(response)  # the spider's own, not the middleware's fetches

    spider = spider_with_signals(ChainSpider, response_received=on_response)
    start = [Request(site.url("/first"), meta=later(site)) for site in (fresh, failing)]
    settings = robots_settings(middleware=clocked(clock), RETRY_ENABLED=False)
    result = await run_crawl(settings, start, spider_cls=spider)
    assert (fresh.hits("/robots.txt"), failing.hits("/robots.txt")) == (2, 3)
    assert sorted((r.url, r.status, SERVED_FLAG in r.flags) for r in seen) == sorted(
        [(fresh.url("/robots.txt"), 200, True), (failing.url("/robots.txt"), 503, False)]
    )
    stats = robots_stats(result)
    assert stats["robotstxt/spider_request/served"] == 1
    assert stats["robotstxt/spider_request/downloaded/expired"] == 1


class _DirectRobots(RecordingSpider):
    """Its first page downloads another origin's robots.txt with ``engine.download``
    (no scheduler: the request waits inline for the fetch, then is answered)."""

    name = "direct-robots"
    direct: str
    robots_responses: list[Response]

    async def parse(self, response: Response, **kwargs: Any) -> Any:
        engine = self.crawler.engine
        request = Request(self.direct, callback=NO_CALLBACK)
        if hasattr(engine, "download_async"):
            got = await engine.download_async(request)
        else:  # Scrapy < 2.14
            got = await maybe_deferred_to_future(engine.download(request))
        self.robots_responses.append(got)


@pytest_twisted.ensureDeferred
async def test_robots_txt_downloaded_inline_is_answered_after_its_wait(make_site: Any) -> None:
    first, other = make_site(), make_site()
    other.script("/robots.txt", Reply(200, _robots(other), ROBOTS_HEADERS, delay=0.2))
    kept: list[Any] = []

    class Kept(_DirectRobots):
        direct = other.url("/robots.txt")

        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
            spider = super().from_crawler(crawler, *args, **kwargs)
            spider.robots_responses = []
            kept.append(spider)
            return spider

    result = await run_crawl(robots_settings(), [first.url("/start")], Kept)
    [got] = kept[0].robots_responses
    assert (got.url, got.status, got.body) == (other.url("/robots.txt"), 200, _robots(other))
    assert SERVED_FLAG in got.flags
    assert other.hits("/robots.txt") == 1
    stats = robots_stats(result)
    assert stats["robotstxt/spider_request/served"] == 1
    assert stats["robotstxt/inline_waits"] == 1
