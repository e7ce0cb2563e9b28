"""Unreachable robots.txt (SPEC B3, B4): deferred requests, backoff, max wait, "disallow" mode.

Small delays (ROBOTSTXT_RETRY_DELAY and friends in tenths of a second) keep
these real crawls to a second or two each.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

import pytest_twisted
from scrapy import Request
from scrapy.exceptions import IgnoreRequest

from middleware_support import (
    ChainSpider,
    our_middleware,
    requires_parking,
    robots_settings,
    robots_stats,
    spider_with_signals,
    then,
)
from servers import Reply, Site, run_crawl

MODULE = "scrapy_googlerobots"


@requires_parking
@pytest_twisted.ensureDeferred
async def test_503_twice_then_200_deferred_requests_crawled_healthy_origin_unhindered(
    make_site: Callable[..., Site],
) -> None:
    flaky, healthy = make_site(), make_site()
    flaky.script(
        "/robots.txt",
        Reply(503),
        Reply(503),
        Reply(200, b"User-agent: *\nDisallow: /blocked\n"),
    )
    flaky_urls = [flaky.url(f"/page/{n}") for n in range(20)]
    healthy_urls = [healthy.url(f"/page/{n}") for n in range(30)]
    start = [*flaky_urls, flaky.url("/blocked"), flaky.url("/page/0"), *healthy_urls]
    settings = robots_settings(
        RETRY_ENABLED=False,
        ROBOTSTXT_RETRY_DELAY=0.4,
        ROBOTSTXT_RETRY_MAX_DELAY=5,
        # Two download slots only: had the 22 waiting requests taken any,
        # the healthy origin would have stalled.
        CONCURRENT_REQUESTS=2,
    )
    result = await run_crawl(settings, start, timeout=30)

    # Every deferred request was crawled in the end (one duplicate filtered,
    # as without robots.txt, and never parked), the disallowed one dropped once,
    # nothing else failed.
    assert sorted(result.downloaded) == sorted(flaky_urls + healthy_urls)
    assert result.dropped == [flaky.url("/page/0")]
    assert [url for url, _ in result.failures] == [flaky.url("/blocked")]
    assert flaky.hits("/robots.txt") == 3
    # The healthy origin was done before the flaky one's robots.txt recovered.
    order = [url for url, _ in result.responses]
    recovered = result.responses.index((flaky.url("/robots.txt"), 200))
    assert max(order.index(url) for url in healthy_urls) < recovered
    assert min(order.index(url) for url in flaky_urls) > recovered

    stats = robots_stats(result)
    assert stats["robotstxt/request_count"] == 4  # 3 for the flaky origin, 1 healthy
    assert stats["robotstxt/outcome/unreachable"] == 2
    # 20 pages and /blocked; the duplicate of /page/0 was not parked.
    assert stats["robotstxt/unreachable/deferred"] == 21
    assert stats["robotstxt/unreachable/released"] == 21
    assert "robotstxt/unreachable/dropped" not in stats
    assert stats["robotstxt/forbidden"] == 1
    warnings = result.messages(logging.WARNING, logger=MODULE)
    assert any("unreachable (HTTP 503, attempt 1)" in message for message in warnings)
    infos = result.messages(logging.INFO, logger=MODULE)
    assert any("reachable again" in message and "21 waiting" in message for message in infos)


@requires_parking
@pytest_twisted.ensureDeferred
async def test_slow_first_fetch_does_not_stall_other_origins(
    make_site: Callable[..., Site],
) -> None:
    slow, healthy = make_site(), make_site()
    slow.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /no\n", delay=1.0))
    slow_urls = [slow.url(f"/page/{n}") for n in range(20)]
    healthy_urls = [healthy.url(f"/page/{n}") for n in range(20)]
    # The slow origin's requests come first; two download slots in all.
    settings = robots_settings(CONCURRENT_REQUESTS=2)
    result = await run_crawl(settings, [*slow_urls, *healthy_urls], timeout=30)
    assert sorted(result.downloaded) == sorted(slow_urls + healthy_urls)
    order = [url for url, _ in result.responses]
    answered = order.index(slow.url("/robots.txt"))
    assert max(order.index(url) for url in healthy_urls) < answered
    stats = robots_stats(result)
    assert stats["robotstxt/request_count"] == 2  # each origin waited for its own
    # Every slow-origin request was parked, and at least the first healthy one;
    # how many more healthy ones arrive before their robots.txt answers depends
    # on how fast the Scrapy version feeds start requests (2.11 lazily).
    assert 21 <= stats["robotstxt/parked"] <= 40


@pytest_twisted.ensureDeferred
async def test_max_wait_drops_with_one_errback_each(site: Site) -> None:
    site.script("/robots.txt", Reply(503))
    urls = [site.url(f"/page/{n}") for n in range(5)]
    settings = robots_settings(
        RETRY_ENABLED=False,
        ROBOTSTXT_RETRY_DELAY=0.2,
        ROBOTSTXT_RETRY_MAX_DELAY=0.2,
        ROBOTSTXT_UNREACHABLE_MAX_WAIT=0.7,
    )
    result = await run_crawl(settings, urls, timeout=30)
    assert result.downloaded == []
    assert all(site.hits(f"/page/{n}") == 0 for n in range(5))
    for url in urls:
        [failure] = result.failed(url)
        assert failure.check(IgnoreRequest)
        assert "robots.txt unreachable" in str(failure.value)
        assert "gave up after waiting" in str(failure.value)
    assert site.hits("/robots.txt") >= 3  # backoff retries while they waited
    stats = robots_stats(result)
    assert stats["robotstxt/unreachable/deferred"] == 5
    assert stats["robotstxt/unreachable/dropped"] == 5
    assert "robotstxt/unreachable/released" not in stats
    dropped = [m for m in result.messages(logging.INFO, logger=MODULE) if m.startswith("Dropped")]
    assert len(dropped) == 5


@pytest_twisted.ensureDeferred
async def test_backoff_doubles_up_to_the_maximum(site: Site) -> None:
    from twisted.internet import reactor

    site.script("/robots.txt", Reply(503))
    seen: list[float] = []

    def on_response(response: Any, **_: Any) -> None:
        if response.url.endswith("/robots.txt"):
            seen.append(reactor.seconds())  # type: ignore[attr-defined]

    settings = robots_settings(
        RETRY_ENABLED=False,
        ROBOTSTXT_RETRY_DELAY=0.1,
        ROBOTSTXT_RETRY_MAX_DELAY=0.4,
        ROBOTSTXT_UNREACHABLE_MAX_WAIT=2.2,
    )
    spider = spider_with_signals(response_received=on_response)
    result = await run_crawl(settings, [site.url("/page")], spider_cls=spider, timeout=30)
    assert result.failed(site.url("/page"))
    gaps = [later - earlier for earlier, later in itertools.pairwise(seen)]
    # 0.1, 0.2, 0.4, 0.4, 0.4 (timers are never early; allow them to be late,
    # though not as late as the next doubling, 0.8, would be).
    expected = [0.1, 0.2, 0.4, 0.4, 0.4]
    assert len(gaps) >= len(expected)
    for gap, want in zip(gaps, expected, strict=False):
        assert want - 0.01 <= gap < want + 0.35


@pytest_twisted.ensureDeferred
async def test_disallow_mode_drops_at_once_and_refetches_when_due(
    make_site: Callable[..., Site],
) -> None:
    flaky, slow = make_site(), make_site()
    flaky.script("/robots.txt", Reply(503), Reply(200, b"User-agent: *\nDisallow: /no\n"))
    # A page of another site that answers after the retry delay, linking back.
    slow.script("/later", Reply(200, b"later", delay=0.5))

    start = [
        Request(flaky.url("/first")),
        Request(
            slow.url("/later"),
            meta=then(lambda _: [Request(flaky.url("/ok")), Request(flaky.url("/no"))]),
        ),
    ]
    settings = robots_settings(
        RETRY_ENABLED=False, ROBOTSTXT_UNREACHABLE="disallow", ROBOTSTXT_RETRY_DELAY=0.2
    )
    result = await run_crawl(settings, start, spider_cls=ChainSpider, timeout=30)
    # /first is dropped at once; after the retry delay the next request
    # waits for a new fetch, which succeeds.
    [first] = result.failed(flaky.url("/first"))
    assert "ROBOTSTXT_UNREACHABLE = 'disallow'" in str(first.value)
    assert sorted(result.downloaded) == sorted([slow.url("/later"), flaky.url("/ok")])
    assert result.failed(flaky.url("/no"))[0].value.args == ("Forbidden by robots.txt",)
    assert flaky.hits("/robots.txt") == 2
    stats = robots_stats(result)
    assert stats["robotstxt/unreachable/dropped"] == 1
    assert "robotstxt/unreachable/deferred" not in stats


@pytest_twisted.ensureDeferred
async def test_unreachable_longer_than_allow_after_without_copy_allows_all(site: Site) -> None:
    site.script("/robots.txt", Reply(500))
    settings = robots_settings(
        RETRY_ENABLED=False,
        ROBOTSTXT_RETRY_DELAY=0.2,
        ROBOTSTXT_RETRY_MAX_DELAY=0.2,
        ROBOTSTXT_UNREACHABLE_ALLOW_AFTER=0.3,
    )
    result = await run_crawl(settings, [site.url("/a"), site.url("/b")], timeout=30)
    assert sorted(result.downloaded) == [site.url("/a"), site.url("/b")]
    assert result.failures == []
    stats = robots_stats(result)
    assert stats["robotstxt/unreachable/allow_after"] >= 1
    assert stats["robotstxt/unreachable/released"] == 2
    assert any(
        "ROBOTSTXT_UNREACHABLE_ALLOW_AFTER" in message
        for message in result.messages(logging.WARNING, logger=MODULE)
    )


@requires_parking
@pytest_twisted.ensureDeferred
async def test_spider_closing_drops_parked_requests_with_their_errback(site: Site) -> None:
    # Issue 10: a stop is a stop. Waiting requests are not left behind silently:
    # without JOBDIR each gets its errback once, at the start of the close.
    site.script("/robots.txt", Reply(503))
    settings = robots_settings(
        RETRY_ENABLED=False, ROBOTSTXT_RETRY_DELAY=10, CLOSESPIDER_TIMEOUT=0.5
    )
    urls = [site.url("/a"), site.url("/b")]
    result = await run_crawl(settings, urls, timeout=30)
    assert result.stats["finish_reason"] == "closespider_timeout"
    assert our_middleware(result.crawler).parked_requests() == []
    assert sorted(url for url, _ in result.failures) == urls
    for url in urls:
        [failure] = result.failed(url)
        assert failure.check(IgnoreRequest)
        assert "the spider is closing" in str(failure.value)
    assert robots_stats(result)["robotstxt/unreachable/dropped"] == 2
    assert "robotstxt/parked/at_close" not in result.stats
    assert site.hits("/robots.txt") == 1
    assert any(
        "dropped 2 requests that were waiting for robots.txt" in message
        for message in result.messages(logging.INFO, logger=MODULE)
    )


@requires_parking
@pytest_twisted.ensureDeferred
async def test_park_api_holds_a_restored_request_until_robots_txt_answers(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /no\n", delay=0.2))

    def on_opened(spider: Any, **_: Any) -> None:
        middleware = our_middleware(spider.crawler)
        for path in ("/yes", "/no"):
            middleware.park(Request(site.url(path), callback=spider.parse, errback=spider.on_error))
        assert [r.url for r in middleware.parked_requests()] == [site.url("/yes"), site.url("/no")]

    spider = spider_with_signals(spider_opened=on_opened)
    result = await run_crawl(robots_settings(), [], spider_cls=spider, timeout=30)
    assert result.downloaded == [site.url("/yes")]
    assert result.failed(site.url("/no"))[0].value.args == ("Forbidden by robots.txt",)
    assert site.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_without_request_scheduled_drops_requests_wait_in_the_downloader(
    make_site: Callable[..., Site], monkeypatch: Any
) -> None:
    # Scrapy < 2.11.2 cannot drop a request from request_scheduled: then every
    # request waits inline (as Scrapy's own middleware does), still one fetch
    # per origin and every request judged, the backoff included.
    import scrapy_googlerobots.waiting.parking as middleware_module

    monkeypatch.setattr(middleware_module, "REQUEST_SCHEDULED_CAN_DROP", False)
    site = make_site()
    site.script("/robots.txt", Reply(503), Reply(200, b"User-agent: *\nDisallow: /no/\n"))
    urls = [site.url(f"/{kind}/{n}") for n in range(10) for kind in ("yes", "no")]
    settings = robots_settings(
        RETRY_ENABLED=False, ROBOTSTXT_RETRY_DELAY=0.2, CONCURRENT_REQUESTS=32
    )
    result = await run_crawl(settings, urls, timeout=30)
    assert sorted(result.downloaded) == sorted(url for url in urls if "/yes/" in url)
    assert len(result.failures) == 10
    assert site.hits("/robots.txt") == 2
    stats = robots_stats(result)
    assert stats["robotstxt/inline_waits"] == 20
    assert "robotstxt/parked" not in stats


@pytest_twisted.ensureDeferred
async def test_max_wait_drops_only_the_expired_request_the_later_one_is_crawled(
    make_site: Callable[..., Site],
) -> None:
    # /a waits from the start and gives up; /b starts waiting later, so it is
    # still waiting when robots.txt recovers (right after /a's errback): /a's
    # errback runs once, /b is crawled and its errback never runs.
    flaky, slow = make_site(), make_site()
    flaky.script("/robots.txt", Reply(503))
    slow.script("/later", Reply(200, b"later", delay=1.0))
    errbacks: list[str] = []

    def on_error(failure: Any) -> None:
        errbacks.append(failure.request.url)
        flaky.script("/robots.txt", Reply(200, b"User-agent: *\nAllow: /\n"))

    start = [
        Request(flaky.url("/a"), errback=on_error),
        Request(
            slow.url("/later"),
            meta=then(lambda _: [Request(flaky.url("/b"), errback=on_error)]),
        ),
    ]
    settings = robots_settings(
        RETRY_ENABLED=False,
        ROBOTSTXT_RETRY_DELAY=0.1,
        ROBOTSTXT_RETRY_MAX_DELAY=0.1,
        ROBOTSTXT_UNREACHABLE_MAX_WAIT=1.5,
    )
    result = await run_crawl(settings, start, spider_cls=ChainSpider, timeout=30)
    assert errbacks == [flaky.url("/a")]
    assert sorted(result.downloaded) == sorted([slow.url("/later"), flaky.url("/b")])
    assert flaky.hits("/a") == 0
    assert result.failures == []
    stats = robots_stats(result)
    assert stats["robotstxt/unreachable/deferred"] == 2
    assert stats["robotstxt/unreachable/dropped"] == 1
    assert stats["robotstxt/unreachable/released"] == 1


@requires_parking
@pytest_twisted.ensureDeferred
async def test_policy_file_fetch_is_one_download_per_attempt_and_no_error(
    make_site: Callable[..., Site],
) -> None:
    # Scrapy's RetryMiddleware on, as in a default project: it would download
    # each attempt up to 3 times and end with "Gave up retrying" at ERROR.
    site = make_site()
    site.script("/robots.txt", Reply(503), Reply(429), Reply(200, b"User-agent: *\nAllow: /\n"))
    urls = [site.url(f"/page/{n}") for n in range(3)]
    settings = robots_settings(
        RETRY_ENABLED=True, ROBOTSTXT_RETRY_DELAY=0.2, ROBOTSTXT_RETRY_MAX_DELAY=0.4
    )
    result = await run_crawl(settings, urls, timeout=30)
    assert sorted(result.downloaded) == sorted(urls)
    # Two failed attempts and the good one: three downloads, not 3 + 3 + 1.
    assert site.hits("/robots.txt") == 3
    assert result.messages(logging.ERROR) == []
    assert "retry/count" not in result.stats


@requires_parking
@pytest_twisted.ensureDeferred
async def test_robots_retry_after_sets_the_next_attempt_no_earlier(site: Site) -> None:
    # The backoff would try again after 0.1 s; the site asked for 2 s.
    site.script(
        "/robots.txt", Reply(503, headers={"Retry-After": "2"}), Reply(200, b"User-agent: *\n")
    )
    settings = robots_settings(ROBOTSTXT_RETRY_DELAY=0.1, ROBOTSTXT_RETRY_MAX_DELAY=0.2)
    result = await run_crawl(settings, [site.url("/page")], timeout=30)
    assert result.downloaded == [site.url("/page")]
    first, second = site.requests("/robots.txt")
    assert second.at - first.at >= 2.0 - 0.05


class BrokenForRobots:
    """A downloader middleware with a bug that only robots.txt requests meet."""

    def process_request(self, request: Request, spider: object = None) -> None:
        if request.url.endswith("/robots.txt"):
            1 / 0  # noqa: B018 - the bug under test


@pytest_twisted.ensureDeferred
async def test_the_crawls_own_exception_fails_waiting_requests_at_once(site: Site) -> None:
    urls = [site.url(f"/page/{n}") for n in range(3)]
    settings = robots_settings(extra={BrokenForRobots: 590})
    result = await run_crawl(settings, urls, timeout=30)
    # Not "unreachable": nobody waits 30 minutes; each errback gets the exception.
    assert result.downloaded == []
    for url in urls:
        [failure] = result.failed(url)
        assert failure.check(ZeroDivisionError)
    errors = result.messages(logging.ERROR, logger=MODULE)
    component = f"{__name__}.BrokenForRobots.process_request"
    assert [e for e in errors if component in e and "ZeroDivisionError" in e]
    assert sum(component in e for e in errors) == 1
    assert "robotstxt/unreachable/deferred" not in robots_stats(result)


@requires_parking
@pytest_twisted.ensureDeferred
async def test_a_crawl_left_with_waiting_requests_only_says_so_once(site: Site) -> None:
    site.script("/robots.txt", Reply(503))
    urls = [site.url(f"/page/{n}") for n in range(3)]
    settings = robots_settings(
        RETRY_ENABLED=False,
        ROBOTSTXT_RETRY_DELAY=0.5,
        ROBOTSTXT_RETRY_MAX_DELAY=0.5,
        ROBOTSTXT_UNREACHABLE_MAX_WAIT=6,
    )
    result = await run_crawl(settings, urls, timeout=30)
    lines = [
        m
        for m in result.messages(logging.INFO, logger=MODULE)
        if m.startswith("Only waiting requests remain")
    ]
    origin = site.url("").rstrip("/")
    assert len(lines) == 1
    assert f"3 request(s) for 1 origin(s): {origin} (3, robots.txt, until " in lines[0]
    assert "ROBOTSTXT_UNREACHABLE_MAX_WAIT shortens it" in lines[0]
