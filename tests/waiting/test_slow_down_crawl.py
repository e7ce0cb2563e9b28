"""A site's "slow down" in real crawls (one process, memory store): a 429/503 with
Retry-After pauses the origin (its requests held, none lost, no RetryMiddleware give-up),
a pause beyond the cap drops them with an errback naming it, the setting turns it off."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable

import pytest
import pytest_twisted
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.http import Response
from twisted.internet.defer import Deferred

from scrapy_googlerobots.waiting import slow_down

from middleware_support import (
    our_middleware,
    requires_parking,
    robots_settings,
    robots_stats,
    spider_with_signals,
)
from redis_server import RedisServer, feed_threads, redis_server
from servers import Reply, Site, run_crawl

__all__ = ["redis_server"]  # the fixture, imported for the tests below

ROBOTS = Reply(200, b"User-agent: *\nAllow: /\n")


@requires_parking
@pytest_twisted.ensureDeferred
async def test_retry_after_pauses_the_origin_and_loses_nothing(
    make_site: Callable[..., Site],
) -> None:
    busy, calm = make_site(), make_site()
    busy.script("/robots.txt", ROBOTS)
    busy.script("/p/0", Reply(429, headers={"Retry-After": "1"}), Reply(200, b"ok"))
    urls = [busy.url(f"/p/{n}") for n in range(3)]
    calm_urls = [calm.url(f"/c/{n}") for n in range(3)]
    # One request at a time: the 429 comes back before the next page goes out.
    settings = robots_settings(CONCURRENT_REQUESTS=1, LOG_LEVEL="DEBUG")
    explained: dict[str, str | None] = {}

    def explain(response: Response, spider: Spider, **_: object) -> None:
        decision = our_middleware(spider.crawler).explain(Request(response.url))
        explained[response.url] = decision.slow_down if decision is not None else "none"

    spider = spider_with_signals(response_received=explain)
    result = await run_crawl(settings, [*urls, *calm_urls], spider, timeout=30)

    assert sorted(result.downloaded) == sorted(urls + calm_urls)
    assert [status for url, status in result.responses if url in urls].count(200) == 3
    # Measured at the server: after the 429 nothing reached the origin for 1 s.
    pages = [r for r in busy.requests() if r.path.startswith("/p/")]
    first, *after = pages
    assert first.path == "/p/0"
    assert after and min(r.at for r in after) - first.at >= 1.0 - 0.05
    # After the pause it resumes slowly: 2 s between its requests.
    gaps = [b.at - a.at for a, b in itertools.pairwise(after)]
    assert all(gap >= 2.0 - 0.05 for gap in gaps)
    # The calm origin was not held by the busy one's pause.
    calm_pages = calm.requests()
    assert max(r.at for r in calm_pages) < first.at + 1.0
    assert result.messages(logging.ERROR) == []
    stats = robots_stats(result)
    assert stats["robotstxt/slow_down/paused/429"] == 1
    assert stats["robotstxt/slow_down/held"] >= 1
    assert stats["robotstxt/slow_down/released"] == stats["robotstxt/slow_down/held"]
    debug = result.messages(logging.DEBUG, logger="scrapy_googlerobots")
    assert any(
        "its origin is paused (Retry-After: 1 from <429 " + busy.url("/p/0") + ">)" in m
        for m in debug
    )
    info = result.messages(logging.INFO, logger="scrapy_googlerobots")
    origin = busy.url("").rstrip("/")
    assert any(m.startswith(f"Sites that asked to slow down: {origin}") for m in info)
    # explain() said what the origin asked, while the crawl ran.
    assert explained[busy.url("/p/1")] == "slowed down: 2 s between requests"
    assert explained[calm.url("/c/1")] is None


@requires_parking
@pytest_twisted.ensureDeferred
async def test_a_pause_beyond_the_cap_drops_with_an_errback_naming_it(
    make_site: Callable[..., Site],
) -> None:
    site = make_site()
    site.script("/robots.txt", ROBOTS)
    site.script("/p/0", Reply(503, headers={"Retry-After": "7200"}))
    urls = [site.url(f"/p/{n}") for n in range(3)]
    settings = robots_settings(CONCURRENT_REQUESTS=1, ROBOTSTXT_SLOW_DOWN_MAX_PAUSE=60)
    result = await run_crawl(settings, urls, timeout=30)
    # Nothing more reached the site after its 503: it asked for two hours.
    assert [r.path for r in site.requests() if r.path.startswith("/p/")] == ["/p/0"]
    for url in urls:
        [failure] = result.failed(url)
        assert failure.check(IgnoreRequest)
        assert "ROBOTSTXT_SLOW_DOWN_MAX_PAUSE" in str(failure.value)
        assert "Retry-After: 7200" in str(failure.value)
    warnings = result.messages(logging.WARNING, logger="scrapy_googlerobots")
    assert any("longer than ROBOTSTXT_SLOW_DOWN_MAX_PAUSE" in m for m in warnings)
    assert robots_stats(result)["robotstxt/slow_down/dropped"] == 3


@pytest.mark.parametrize("status", [429, 503])
@pytest_twisted.ensureDeferred
async def test_turned_off_the_answer_is_retry_middlewares(site: Site, status: int) -> None:
    site.script("/robots.txt", ROBOTS)
    site.script("/p", Reply(status, headers={"Retry-After": "1"}))
    settings = robots_settings(ROBOTSTXT_SLOW_DOWN=False, RETRY_TIMES=1)
    result = await run_crawl(settings, [site.url("/p")], timeout=30)
    assert site.hits("/p") == 2  # sent, re-sent at once by RetryMiddleware
    assert not any(k.startswith("robotstxt/slow_down/") for k in robots_stats(result))


@requires_parking
@pytest_twisted.ensureDeferred
async def test_requests_held_for_a_pause_are_handed_over_and_the_next_worker_keeps_it(
    redis_server: RedisServer, make_site: Callable[..., Site]
) -> None:
    site = make_site()
    site.script("/robots.txt", ROBOTS)
    site.script("/p/0", Reply(429, headers={"Retry-After": "5"}), Reply(200, b"ok"))
    urls = [site.url(f"/p/{n}") for n in range(3)]
    common = robots_settings(CONCURRENT_REQUESTS=1, ROBOTSTXT_CACHE_STORE=redis_server.url)
    stopped = await run_crawl({**common, "CLOSESPIDER_TIMEOUT": 2}, urls, timeout=30)
    assert stopped.downloaded == [] and stopped.failures == []
    assert stopped.stats["robotstxt/slow_down/held"] == 3
    assert stopped.stats["robotstxt/parked/handed_over/store"] == 3
    [first] = [r for r in site.requests() if r.path.startswith("/p/")]

    # The next worker adopts them, reads the pause from the store, and holds them.
    later = await run_crawl(common, [], timeout=30)
    assert later.stats["robotstxt/parked/adopted"] == 3
    assert later.stats["robotstxt/slow_down/paused/from_store"] == 1
    assert sorted(later.downloaded) == sorted(urls)
    after = [r for r in site.requests() if r.path.startswith("/p/")][1:]
    assert len(after) == 3 and min(r.at for r in after) - first.at >= 5.0 - 0.05
    assert later.messages(logging.ERROR) == []


@requires_parking
@pytest_twisted.ensureDeferred
async def test_a_pause_stops_another_workers_next_request_at_once(
    redis_server: RedisServer, make_site: Callable[..., Site], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the push can tell the second worker in time: its safety-net read of the
    # store's pauses is put beyond the test.
    monkeypatch.setattr(slow_down, "POLL_WITH_FEED", 60.0)
    site = make_site()
    site.script("/robots.txt", ROBOTS)
    site.script("/a/0", Reply(429, headers={"Retry-After": "3"}), Reply(200, b"ok"))
    common = robots_settings(CONCURRENT_REQUESTS=1, ROBOTSTXT_CACHE_STORE=redis_server.url)
    later_url = site.url("/b/0")
    second_open: Deferred[Crawler] = Deferred()
    second_done: list[bool] = []

    def opened(spider: Spider, **_: object) -> None:
        second_open.callback(spider.crawler)

    def idle(**_: object) -> None:
        if not second_done:
            raise DontCloseSpider  # until its request, sent from the outside, is answered

    def answered(response: Response, **_: object) -> None:
        if response.url == later_url:
            second_done.append(True)

    second = run_crawl(
        common,
        [],
        spider_with_signals(spider_opened=opened, spider_idle=idle, response_received=answered),
        timeout=30,
    )
    crawler_b = await second_open  # subscribed to the pause feed (at spider_opened)

    def on_429(response: Response, **_: object) -> None:
        if response.status == 429:
            # The first worker records and publishes its pause right after this receiver;
            # the second worker's request goes to its engine a moment later.
            from twisted.internet import reactor

            reactor.callLater(0.1, crawl_later)

    def crawl_later() -> None:
        crawler_b.engine.crawl(Request(later_url, dont_filter=True))

    first = await run_crawl(
        common,
        [site.url("/a/0")],
        spider_with_signals(response_downloaded=on_429),
        timeout=30,
    )
    later = await second
    the_429, *_ = site.requests("/a/0")  # scripted: the first answer is the 429
    [sent_later] = site.requests("/b/0")
    # Measured at the server: the second worker's request waited out the pause.
    assert sent_later.at - the_429.at >= 3.0 - 0.05
    assert later.stats["robotstxt/slow_down/paused/pushed"] == 1
    assert later.stats["robotstxt/slow_down/held"] == 1
    assert later.stats["robotstxt/slow_down/released"] == 1
    assert sorted(later.downloaded) == [later_url]
    assert first.stats["robotstxt/slow_down/paused/429"] == 1
    assert [status for url, status in first.responses if url.endswith("/a/0")][-1] == 200
    assert first.messages(logging.WARNING) == later.messages(logging.WARNING) == []
    # Each worker's feed thread ended with its crawl.
    assert feed_threads() == []
