"""The robots.txt cache (SPEC B4, B5): lifetime, max-age, refresh, stale copies, LRU.

Time is a moved clock.

The middleware reads time from an injected clock (``clocked(clock)``); the
spider moves it between requests (``then(...)`` actions run in callbacks).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, signals

from middleware_support import (
    ChainSpider,
    MovableClock,
    clocked,
    requires_parking,
    robots_settings,
    robots_stats,
    spider_with_signals,
    then,
)
from servers import Reply, Site, run_crawl

MODULE = "scrapy_googlerobots"
DAY = 86_400


def _after(clock: MovableClock, seconds: float, *urls: str) -> dict[str, Any]:
    """Meta: once this response arrives, move the clock by ``seconds`` and request ``urls``."""

    def action(_: Any) -> list[Request]:
        clock.advance(seconds)
        return [Request(url) for url in urls]

    return then(action)


async def _crawl(clock: MovableClock, start: list[Request], **settings: Any) -> Any:
    return await run_crawl(
        robots_settings(middleware=clocked(clock), **settings), start, spider_cls=ChainSpider
    )


@pytest.mark.parametrize(
    ("headers", "advance", "refreshed"),
    [
        pytest.param({}, DAY - 1, False, id="B5_default_24h_still_fresh"),
        pytest.param({}, DAY + 1, True, id="B5_default_24h_expired"),
        pytest.param({"Cache-Control": "max-age=3600"}, 3599, False, id="B5_max_age_fresh"),
        pytest.param({"Cache-Control": "max-age=3600"}, 3601, True, id="B5_max_age_shortens"),
        pytest.param(
            {"Cache-Control": "public, max-age=172800"}, DAY + 1, False, id="B5_max_age_lengthens"
        ),
        pytest.param({"Cache-Control": "max-age=5"}, 59, False, id="clamped_to_min_ttl"),
        pytest.param({"Cache-Control": "max-age=5"}, 61, True, id="min_ttl_then_expired"),
        pytest.param(
            {"Cache-Control": "max-age=999999999"}, 604_801, True, id="clamped_to_max_ttl"
        ),
        pytest.param({"Cache-Control": "no-store"}, 61, True, id="no_store_means_min_ttl"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_lifetime(
    site: Site, headers: dict[str, str], advance: float, refreshed: bool
) -> None:
    clock = MovableClock()
    site.script(
        "/robots.txt",
        Reply(200, b"User-agent: *\nDisallow: /old\n", headers=headers),
        Reply(200, b"User-agent: *\nDisallow: /new\n"),
    )
    start = [
        Request(site.url("/first"), meta=_after(clock, advance, site.url("/new"), site.url("/old")))
    ]
    result = await _crawl(clock, start)
    # Two requests after expiry: still one refresh.
    assert site.hits("/robots.txt") == (2 if refreshed else 1)
    blocked = "/new" if refreshed else "/old"
    assert sorted(result.downloaded) == sorted(
        site.url(path) for path in ("/first", "/new", "/old") if path != blocked
    )
    assert robots_stats(result)["robotstxt/request_count"] == (2 if refreshed else 1)


@pytest_twisted.ensureDeferred
async def test_ttl_settings(site: Site) -> None:
    clock = MovableClock()
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"))
    start = [Request(site.url("/first"), meta=_after(clock, 11, site.url("/second")))]
    result = await _crawl(clock, start, ROBOTSTXT_CACHE_TTL=10, ROBOTSTXT_CACHE_MIN_TTL=1)
    assert site.hits("/robots.txt") == 2
    assert sorted(result.downloaded) == [site.url("/first"), site.url("/second")]


@pytest_twisted.ensureDeferred
async def test_failed_refresh_keeps_the_good_copy(site: Site) -> None:
    clock = MovableClock()
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"), Reply(503))
    later = [site.url("/x"), site.url("/y")]
    start = [Request(site.url("/first"), meta=_after(clock, DAY + 1, *later))]
    result = await _crawl(clock, start, RETRY_ENABLED=False)
    assert sorted(result.downloaded) == [site.url("/first"), site.url("/y")]
    assert result.failed(site.url("/x"))[0].value.args == ("Forbidden by robots.txt",)
    assert site.hits("/robots.txt") == 2
    stats = robots_stats(result)
    assert stats["robotstxt/unreachable/stale_kept"] == 1
    assert "robotstxt/unreachable/deferred" not in stats
    warnings = result.messages(logging.WARNING, logger=MODULE)
    assert any("could not be refreshed (HTTP 503); keeping the copy" in m for m in warnings)


@pytest.mark.skipif(not hasattr(signals, "robots_parsed"), reason="Scrapy without robots_parsed")
@pytest_twisted.ensureDeferred
async def test_failed_refresh_sends_no_robots_parsed(site: Site) -> None:
    # robots_parsed follows a fetch that yields a policy; a refresh that finds
    # the site unreachable yields none, even though the old copy stays in use.
    clock = MovableClock()
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"), Reply(503))
    parsed: list[str] = []

    def on_parsed(robotparser: Any, request: Request, **_: Any) -> None:
        parsed.append(request.url)

    spider = spider_with_signals(ChainSpider, robots_parsed=on_parsed)
    start = [Request(site.url("/first"), meta=_after(clock, DAY + 1, site.url("/y")))]
    settings = robots_settings(middleware=clocked(clock), RETRY_ENABLED=False)
    result = await run_crawl(settings, start, spider_cls=spider)
    assert sorted(result.downloaded) == [site.url("/first"), site.url("/y")]
    assert site.hits("/robots.txt") == 2
    assert robots_stats(result)["robotstxt/unreachable/stale_kept"] == 1
    assert parsed == [site.url("/first")]


@pytest_twisted.ensureDeferred
async def test_good_copy_kept_however_long_the_outage(site: Site) -> None:
    # SPEC B4: past 30 days unreachable, the last cached copy is still used.
    clock = MovableClock()
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"), Reply(503))

    def forty_days_later(_: Any) -> list[Request]:
        clock.advance(40 * DAY)
        return [Request(site.url("/x")), Request(site.url("/y"))]

    def next_day(_: Any) -> list[Request]:
        clock.advance(DAY + 1)  # the refresh fails: the copy is kept
        return [Request(site.url("/second"), meta=then(forty_days_later))]

    start = [Request(site.url("/first"), meta=then(next_day))]
    result = await _crawl(clock, start, RETRY_ENABLED=False)
    assert sorted(result.downloaded) == sorted(
        [site.url("/first"), site.url("/second"), site.url("/y")]
    )
    assert result.failed(site.url("/x"))[0].value.args == ("Forbidden by robots.txt",)
    assert "robotstxt/unreachable/allow_after" not in robots_stats(result)
    assert site.hits("/robots.txt") == 3  # first fetch, failed refresh, failed retry


@pytest_twisted.ensureDeferred
async def test_least_recently_used_origin_is_evicted(make_site: Any) -> None:
    clock = MovableClock()
    first, second = make_site(), make_site()

    def to_second(_: Any) -> list[Request]:
        return [Request(second.url("/page"), meta=then(lambda _: [Request(first.url("/again"))]))]

    start = [Request(first.url("/page"), meta=then(to_second))]
    result = await _crawl(clock, start, ROBOTSTXT_CACHE_SIZE=1)
    assert len(result.downloaded) == 3
    assert first.hits("/robots.txt") == 2  # forgotten when the second origin came in
    assert second.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_cache_is_shared_by_user_agents(site: Site) -> None:
    site.script(
        "/robots.txt",
        Reply(200, b"User-agent: foobot\nDisallow: /x\n\nUser-agent: *\nDisallow: /y\n"),
    )
    requests = [
        Request(site.url("/x"), headers={"User-Agent": "FooBot/1"}),
        Request(site.url("/y"), headers={"User-Agent": "FooBot/1"}),
        Request(site.url("/x?other"), headers={"User-Agent": "OtherBot/1"}),
        Request(site.url("/y?other"), headers={"User-Agent": "OtherBot/1"}),
    ]
    result = await run_crawl(robots_settings(), requests)
    assert sorted(result.downloaded) == sorted([site.url("/y"), site.url("/x?other")])
    assert site.hits("/robots.txt") == 1


@requires_parking
@pytest_twisted.ensureDeferred
async def test_expired_while_in_the_scheduler_waits_outside_the_downloader(site: Site) -> None:
    clock = MovableClock()
    site.script(
        "/robots.txt",
        Reply(200, b"User-agent: *\nDisallow: /old\n"),
        Reply(200, b"User-agent: *\nDisallow: /new\n"),
    )
    seen: list[str] = []

    class AgeOnTheWay:
        """Sits before ours: the cache expires between scheduler and downloader."""

        def process_request(self, request: Request, spider: Any = None) -> None:
            seen.append(request.url)
            if request.url.endswith("/late") and seen.count(request.url) == 1:
                clock.advance(DAY + 1)

    settings = robots_settings(middleware=clocked(clock), extra={AgeOnTheWay: 50})
    start = [Request(site.url("/first"), meta=then(lambda _: [Request(site.url("/late"))]))]
    result = await run_crawl(settings, start, spider_cls=ChainSpider)
    assert sorted(result.downloaded) == [site.url("/first"), site.url("/late")]
    assert site.hits("/robots.txt") == 2
    assert seen.count(site.url("/late")) == 2  # handed back once, then judged
    assert result.dropped == []  # it passed the duplicate filter only once
    stats = robots_stats(result)
    assert stats["robotstxt/parked"] == 2
    assert "robotstxt/inline_waits" not in stats


@pytest_twisted.ensureDeferred
async def test_zero_ttl_still_judges_every_waiting_request_once(site: Site) -> None:
    # max-age=0 with no minimum: the copy is stale at once, yet each waiting
    # request is judged by the fetch it waited for (no fetch loop).
    site.script(
        "/robots.txt",
        Reply(200, b"User-agent: *\nDisallow: /no\n", headers={"Cache-Control": "max-age=0"}),
    )
    urls = [site.url(f"/yes/{n}") for n in range(10)] + [site.url("/no")]
    settings = robots_settings(ROBOTSTXT_CACHE_MIN_TTL=0)
    result = await run_crawl(settings, urls, timeout=30)
    assert sorted(result.downloaded) == sorted(urls[:-1])
    assert result.failed(site.url("/no"))[0].value.args == ("Forbidden by robots.txt",)
    # Requests arriving after a fetch need a new one (TTL 0), but every fetch
    # serves at least the requests that waited for it: no fetch loop.
    assert 1 <= site.hits("/robots.txt") <= len(urls)


@pytest_twisted.ensureDeferred
async def test_fetch_lease_held_by_another_process(site: Site, tmp_path: Any) -> None:
    # Another crawler process (its own store object on the same SQLite file)
    # is fetching this origin: we wait for its record instead of fetching too.
    from twisted.internet import reactor

    from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

    path = tmp_path / "robots.sqlite"
    other = SqlitePolicyStore(path)
    key = f"http://127.0.0.1:{site.port}"
    assert other.acquire_fetch_lease(key, 30.0)

    def other_process_done() -> None:
        now = time.time()
        body = b"User-agent: *\nDisallow: /theirs\n"
        other.put(
            PolicyRecord(
                key,
                FetchOutcome.RULES,
                body=body,
                status=200,
                fetched_at=now,
                expires_at=now + 3600,
            )
        )
        other.release_fetch_lease(key)

    reactor.callLater(0.3, other_process_done)  # type: ignore[attr-defined]
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /ours\n"))
    settings = robots_settings(ROBOTSTXT_CACHE_STORE=str(path))
    try:
        result = await run_crawl(settings, [site.url("/theirs"), site.url("/ours")], timeout=30)
    finally:
        other.close()
    assert site.hits("/robots.txt") == 0
    assert result.downloaded == [site.url("/ours")]
    stats = robots_stats(result)
    assert stats["robotstxt/fetch_lease/waits"] == 1
    assert "robotstxt/request_count" not in stats
