"""Requests waiting for a cluster-wide send slot, in real crawls sharing a real ``redis-server``.

With a shared Redis store and ``ROBOTSTXT_CRAWL_DELAY``, a request whose send
slot is more than ``INLINE_WAIT`` s away is held outside the scheduler and the
downloader, recorded in the store like a request waiting for robots.txt:

- the downloader stays free for other origins (more paced requests than
  ``CONCURRENT_REQUESTS`` do not hold up an unpaced origin);
- a worker SIGKILLed while holding them loses none: another adopts and sends
  them, still paced;
- SIGINT hands them over to the next worker at once.

Counted at the server: every page once, and the gap between any two page
requests of the paced origin, whichever worker sent them, at least the delay.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest_twisted
from scrapy import Request
from scrapy.http import Response

# The worker process's settings (its clocked middleware) and the idle-until-adopted spider.
from test_handover_crawl import WORKER_SCRIPT, _IdleUntilAdopted, _reactor
from test_persistence_crawl import settings
from twisted.internet import defer

from scrapy_googlerobots import GoogleRobotsTxtMiddleware

from middleware_support import ChainSpider, requires_parking, robots_settings, then
from processes import ScriptProcess
from redis_server import RedisServer, redis_server
from servers import CrawlResult, Reply, Site, run_crawl

__all__ = ["redis_server"]  # the fixture, imported for the tests below

DELAY = 2.0
# The server's clock reads arrivals, not sends: a little less than the delay is allowed.
TOLERANCE = 0.05
PAGES = [f"/p/{n}" for n in range(4)]


def paced(site: Site, delay: float = DELAY) -> None:
    site.script("/robots.txt", Reply(200, f"User-agent: *\nCrawl-delay: {delay:g}\n".encode()))


def page_arrivals(site: Site) -> list[float]:
    return sorted(r.at for r in site.requests() if r.path.startswith("/p/"))


def assert_paced(site: Site, delay: float = DELAY) -> None:
    gaps = [b - a for a, b in itertools.pairwise(page_arrivals(site))]
    assert gaps and min(gaps) >= delay - TOLERANCE, gaps


def assert_each_page_once(site: Site) -> None:
    for path in PAGES:
        assert site.hits(path) == 1, f"{path} reached the site {site.hits(path)} times"


def _paced_cluster(site: Site, redis: RedisServer, *, lease: float) -> dict[str, Any]:
    """``site`` paced by ``DELAY``; the workers' settings (``lease``: parked lease TTL)."""
    paced(site)
    return settings(
        ROBOTSTXT_CACHE_STORE=redis.url,
        ROBOTSTXT_CRAWL_DELAY=True,
        ROBOTSTXT_PARKED_LEASE_TTL=lease,
    )


async def _hold_then_end(site: Site, shared: dict[str, Any], *, interrupt: bool) -> dict[str, Any]:
    """A worker process crawls the pages until all but the first wait for their slots in
    the store; then SIGKILL (or SIGINT: ``interrupt``). Its report."""
    worker = ScriptProcess(
        WORKER_SCRIPT,
        {
            "urls": [site.url(path) for path in PAGES],
            "settings": {**shared, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO"},
        },
    )
    # The first page goes at once; the three others hold slots 2.1, 4.2 and 6.3 s
    # on, recorded in Redis (the first is released 0.5 s before its slot, 1.6 s on).
    held = len(PAGES) - 1
    await worker.when("stat", f"robotstxt/parked/recorded={held}").addTimeout(60, _reactor())
    await _first_page(site)
    if interrupt:
        worker.interrupt()
    else:
        worker.kill()
    report = await worker.ended.addTimeout(30, _reactor())
    assert sum(site.hits(path) for path in PAGES) == 1, "one page sent, the others held"
    return report


async def _first_page(site: Site) -> None:
    """Fires once any page reached ``site`` (the one the worker sent at once)."""
    waiters = [site.wait_for_hits(path, 1, timeout=30) for path in PAGES]
    await defer.DeferredList(waiters, fireOnOneCallback=True, consumeErrors=True)
    for waiter in waiters:
        waiter.cancel()


@requires_parking
@pytest_twisted.ensureDeferred
async def test_a_killed_worker_loses_no_request_it_held_for_a_slot(
    redis_server: RedisServer, site: Site
) -> None:
    shared = _paced_cluster(site, redis_server, lease=2)
    report = await _hold_then_end(site, shared, interrupt=False)
    assert report["exit"] != 0 and report.get("downloaded") is None, "killed, not ended"

    killed_at = time.monotonic()
    survivor = await run_crawl(shared, [], spider_cls=_IdleUntilAdopted, timeout=60)
    took = time.monotonic() - killed_at
    print(f"figure: SIGKILL: 3 held requests adopted, all sent {took:.1f} s on")
    assert survivor.stats["robotstxt/parked/adopted"] == len(PAGES) - 1
    # Adopted, each reserves a fresh slot (the dead worker's have passed or are unknown).
    assert survivor.stats["robotstxt/pace/parked"] >= 1
    assert len(survivor.downloaded) == len(PAGES) - 1
    assert_each_page_once(site)
    assert_paced(site)
    assert survivor.messages(logging.ERROR) == []


@requires_parking
@pytest_twisted.ensureDeferred
async def test_a_sigint_hands_requests_held_for_slots_to_the_next_worker(
    redis_server: RedisServer, site: Site
) -> None:
    # A lease far longer than the test: only the hand-over lets the next worker adopt.
    shared = _paced_cluster(site, redis_server, lease=600)
    report = await _hold_then_end(site, shared, interrupt=True)
    assert report["exit"] == 0, report["stderr"]
    stats = report["stats"]
    assert stats["robotstxt/parked/handed_over/store"] == len(PAGES) - 1
    assert stats["robotstxt/pace/parked"] == len(PAGES) - 1
    assert "robotstxt/pace/released" not in stats, "none went to the engine"

    later = await run_crawl(shared, [], spider_cls=_IdleUntilAdopted, timeout=60)
    assert later.stats["robotstxt/parked/adopted"] == len(PAGES) - 1
    assert sorted([*report["downloaded"], *later.downloaded]) == [site.url(p) for p in PAGES]
    assert_each_page_once(site)
    assert_paced(site)


async def _two_origins(
    redis: RedisServer,
    slow: Site,
    calm: Site,
    more: Callable[[Response], list[Request]],
    *,
    concurrent: int,
) -> CrawlResult:
    """Crawl ``calm``'s home page, then ``slow``'s /p/0 (paced by 1 s), then ``more``."""
    paced(slow, 1.0)
    calm.script("/robots.txt", Reply(200, b"User-agent: *\nAllow: /\n"))

    def calm_robots(_: Response) -> list[Request]:
        return [Request(slow.url("/p/0"), meta=then(more))]

    settings = robots_settings(
        ROBOTSTXT_CACHE_STORE=redis.url,
        ROBOTSTXT_CRAWL_DELAY=True,
        CONCURRENT_REQUESTS=concurrent,
    )
    # The calm origin's robots.txt is known before its pages come: they never wait for it.
    start = [Request(calm.url("/"), meta=then(calm_robots))]
    return await run_crawl(settings, start, spider_cls=ChainSpider, timeout=60)


@requires_parking
@pytest_twisted.ensureDeferred
async def test_an_unpaced_origin_is_not_held_up_by_requests_waiting_for_slots(
    redis_server: RedisServer, make_site: Callable[..., Site]
) -> None:
    slow, calm = make_site(), make_site()
    calm_urls = [calm.url(f"/c/{n}") for n in range(4)]
    slow_urls = [slow.url(f"/p/{n}") for n in range(1, 8)]

    def more(_: Response) -> list[Request]:
        # Seven paced pages (their slots 1.1 s apart), then the calm origin's pages: the
        # scheduler gives the paced ones to the downloader first.
        return [Request(url) for url in slow_urls] + [
            Request(url, priority=-1) for url in calm_urls
        ]

    result = await _two_origins(redis_server, slow, calm, more, concurrent=2)
    assert len(result.downloaded) == 2 + len(slow_urls) + len(calm_urls)
    first = min(page_arrivals(slow))
    calm_pages = [r.at for r in calm.requests() if r.path.startswith("/c/")]
    waited = max(calm_pages) - first
    print(f"figure: 4 unpaced pages behind 7 paced ones (2 concurrent): all sent {waited:.2f} s on")
    # Waiting in the downloader, two paced requests would fill CONCURRENT_REQUESTS
    # for 1.1 s and 2.2 s; held outside it, they leave it to the calm origin.
    assert waited < 1.0
    assert_paced(slow, 1.0)
    stats = result.stats
    assert stats["robotstxt/pace/parked"] >= len(slow_urls) - 1
    assert stats["robotstxt/pace/released"] == stats["robotstxt/pace/parked"]
    assert result.messages(logging.ERROR) == []


@requires_parking
@pytest_twisted.ensureDeferred
async def test_a_request_back_after_its_slot_takes_a_fresh_one(
    redis_server: RedisServer, make_site: Callable[..., Site]
) -> None:
    slow, calm = make_site(), make_site()
    calm.script("/c/slow", Reply(200, b"ok", delay=1.5))

    def more(_: Response) -> list[Request]:
        # Two paced pages hold the slots 1.1 and 2.2 s on; the calm origin's slow page
        # then fills the one download slot until 1.5 s on: the first released paced page
        # (0.6 s on) reaches the downloader 0.4 s after its slot.
        paced_pages = [Request(slow.url(path)) for path in ("/p/1", "/p/2")]
        return [*paced_pages, Request(calm.url("/c/slow"), priority=-1)]

    result = await _two_origins(redis_server, slow, calm, more, concurrent=1)
    assert len(result.downloaded) == 5
    # Sent when it came back, it would have reached the site 0.7 s before the next slot.
    assert_paced(slow, 1.0)
    assert result.stats["robotstxt/pace/missed"] >= 1


class _CannotPark(GoogleRobotsTxtMiddleware):
    """As on Scrapy < 2.11.2, whose engine cannot drop a request at ``request_scheduled``."""

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        self._parking.can_park = False


@pytest_twisted.ensureDeferred
async def test_without_parking_requests_wait_for_their_slots_inline(
    redis_server: RedisServer, site: Site
) -> None:
    paced(site, 1.0)
    settings = robots_settings(
        _CannotPark, ROBOTSTXT_CACHE_STORE=redis_server.url, ROBOTSTXT_CRAWL_DELAY=True
    )
    result = await run_crawl(settings, [site.url(f"/p/{n}") for n in range(3)], timeout=60)
    assert len(result.downloaded) == 3
    assert_paced(site, 1.0)
    assert result.stats["robotstxt/pace/held"] == 2
    assert "robotstxt/pace/parked" not in result.stats
