"""What the middleware adds to Scrapy's per-request path, in real crawls.

- ``request_scheduled`` is listened to only while some origin's robots.txt is
  pending: a request of an origin with a known answer meets no handler of ours
  before the downloader.
- A request passes the scheduler once, except one that reached the downloader
  while nothing was pending and found no robots.txt for its origin: it is
  handed back once (``robotstxt/handed_back``) and parked.
- With the downloader full during an origin's first fetch, requests scheduled
  meanwhile wait in the scheduler, in its order and at their priority, as with
  the stock middleware (Scrapy's own TestRequestSendOrder).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest_twisted
from scrapy import Request
from scrapy.http import Response
from twisted.internet.defer import Deferred

from scrapy_googlerobots import GoogleRobotsTxtMiddleware

from middleware_support import ChainSpider, requires_parking, robots_settings, robots_stats, then
from servers import RecordingSpider, Reply, Site, run_crawl

pytestmark = requires_parking

ROBOTS = b"User-agent: *\nDisallow: /blocked/\n"


def _counting(seen: list[str]) -> type[GoogleRobotsTxtMiddleware]:
    """Our middleware, noting every request its ``request_scheduled`` handler sees."""

    class Counting(GoogleRobotsTxtMiddleware):
        def _on_request_scheduled(self, request: Request, **kwargs: Any) -> None:
            seen.append(request.url)
            super()._on_request_scheduled(request, **kwargs)

    return Counting


@pytest_twisted.ensureDeferred
async def test_no_handler_runs_for_requests_of_a_known_origin(site: Site) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS))
    seen: list[str] = []
    pages = [site.url(f"/page/{n}") for n in range(20)]
    blocked = [site.url(f"/blocked/{n}") for n in range(5)]

    def follow(_: Response) -> list[Request]:
        return [Request(url) for url in pages + blocked]

    first = site.url("/first")
    result = await run_crawl(
        robots_settings(_counting(seen)), [Request(first, meta=then(follow))], ChainSpider
    )
    assert sorted(result.downloaded) == sorted([first, *pages])
    assert len(result.failures) == len(blocked)
    # /first: handed back by process_request, parked, then released (handler
    # still listening for the release). Its 25 followers: no handler at all.
    assert seen == [first, first]
    stats = robots_stats(result)
    assert stats["robotstxt/handed_back"] == 1
    assert stats["robotstxt/parked"] == 1
    assert stats["robotstxt/forbidden"] == len(blocked)
    # /first twice (its first pass and its release), every follower once.
    assert result.stats["scheduler/enqueued"] == 2 + len(pages) + len(blocked)


@pytest_twisted.ensureDeferred
async def test_requests_arriving_while_a_fetch_runs_pass_the_scheduler_once(
    make_site: Callable[..., Site],
) -> None:
    slow, other = make_site(), make_site()
    slow.script("/robots.txt", Reply(200, ROBOTS, delay=1.0))
    other.script("/robots.txt", Reply(200, ROBOTS))
    other.script("/wait", Reply(200, b"ok", delay=0.3))
    later = [slow.url(f"/later/{n}") for n in range(30)]

    def follow(_: Response) -> list[Request]:
        return [Request(url) for url in later]

    # other's /wait answers while slow's robots.txt is still pending: the 30
    # requests it yields are parked as they are scheduled.
    start = [Request(slow.url("/first")), Request(other.url("/wait"), meta=then(follow))]
    seen: list[str] = []
    result = await run_crawl(robots_settings(_counting(seen)), start, ChainSpider)
    assert sorted(result.downloaded) == sorted([slow.url("/first"), other.url("/wait"), *later])
    stats = robots_stats(result)
    assert stats["robotstxt/request_count"] == 2
    # Only the start requests can have found nothing pending.
    handed_back = stats["robotstxt/handed_back"]
    assert 1 <= handed_back <= 2
    assert all(url in seen for url in later)
    # Every request was parked once: at its first scheduling, or after being handed back.
    assert stats["robotstxt/parked"] == len(later) + 2
    # Each start request: its first pass, plus one after its release if it
    # was handed back; each of the 30 once, after its release.
    assert result.stats["scheduler/enqueued"] == 2 + handed_back + len(later)


class ScheduledDuringTheFetch(RecordingSpider):
    """Schedules ``later`` through the engine once ``fetching`` fires (robots.txt on its way)."""

    def __init__(self, *, fetching: Deferred[None], later: Sequence[Request], **kw: Any) -> None:
        super().__init__(**kw)
        self._fetching = fetching
        self._later = list(later)

    def start_requests(self) -> Any:
        engine = self.crawler.engine
        self._fetching.addCallback(lambda _: [engine.crawl(r) for r in self._later])
        return super().start_requests()


@pytest_twisted.ensureDeferred
async def test_with_the_downloader_full_requests_keep_the_schedulers_order(site: Site) -> None:
    # One request at a time: while the first request's robots.txt is on its
    # way, the engine takes nothing from the scheduler, as with the stock
    # middleware; requests scheduled meanwhile wait there, not parked.
    site.script("/robots.txt", Reply(200, ROBOTS, delay=0.5))
    later = [
        Request(site.url("/low"), priority=0),
        Request(site.url("/high"), priority=5),
        Request(site.url("/mid"), priority=1),
    ]
    result = await run_crawl(
        robots_settings(CONCURRENT_REQUESTS=1),
        [site.url("/first")],
        ScheduledDuringTheFetch,
        fetching=site.wait_for_hits("/robots.txt", 1),
        later=later,
    )
    sent = [r.path for r in site.requests() if r.path != "/robots.txt"]
    # The handed-back request first, then by priority.
    assert sent == ["/first", "/high", "/mid", "/low"]
    stats = robots_stats(result)
    assert stats["robotstxt/handed_back"] == 1
    assert stats["robotstxt/parked"] == 1  # /first only
    # /first twice (its first pass and its release), the three once.
    assert result.stats["scheduler/enqueued"] == 2 + len(later)
