"""A stop hands waiting requests over; a killed worker's are adopted: real crawls, real Redis.

Requests wait for a robots.txt that answers 503 first. A worker stopped
(``CLOSESPIDER_TIMEOUT``, or SIGINT for the process scenarios) leaves them in
the shared store or puts them back into a scheduler that keeps its queue; a
later worker (same spider) adopts and crawls them once robots.txt answers.
Pass: every allowed page crawled exactly once over all workers, no
disallowed page fetched, no errback for a handed-over request. The
multi-worker chaos scenario is ``example_project/cluster/run_cluster.py --chaos``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, signals
from scrapy.crawler import Crawler

# The clocked middleware (TEST_CLOCK_SHIFT: past a backoff) and its crawl settings.
from test_persistence_crawl import settings

from middleware_support import spider_with_signals
from processes import ScriptProcess
from redis_server import RedisServer, redis_server
from servers import RecordingSpider, Reply, Site, run_crawl

__all__ = ["redis_server"]  # the fixture, imported for the tests below

# Its __main__ part is a plain worker process (CrawlerProcess, RecordingSpider).
WORKER_SCRIPT = Path(__file__).resolve().with_name("test_persistence_crawl.py")
ROBOTS = b"User-agent: *\nDisallow: /private\n"
PAGES = ["/a", "/b", "/c", "/private/x"]


def scrapy_redis_settings(redis: RedisServer, **extra: Any) -> dict[str, Any]:
    pytest.importorskip("scrapy_redis", reason="scrapy-redis is not installed")
    return settings(
        SCHEDULER="scrapy_redis.scheduler.Scheduler",
        DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter",
        SCHEDULER_PERSIST=True,
        REDIS_URL=redis.url,
        **extra,
    )


def urls(site: Site) -> list[str]:
    return [site.url(path) for path in PAGES]


def allowed(site: Site) -> list[str]:
    return sorted(u for u in urls(site) if "/private" not in u)


def assert_each_allowed_page_once(site: Site) -> None:
    for path in PAGES:
        expected = 0 if path.startswith("/private") else 1
        assert site.hits(path) == expected, f"{path} fetched {site.hits(path)} times"


# -- a stop -------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_a_stop_leaves_waiting_requests_in_redis_for_the_next_worker(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply(503), Reply(200, ROBOTS))
    common = settings(ROBOTSTXT_CACHE_STORE=redis_server.url)
    stopped = await run_crawl({**common, "CLOSESPIDER_TIMEOUT": 2}, urls(site))
    assert stopped.stats["finish_reason"] == "closespider_timeout"
    assert stopped.downloaded == [] and stopped.failures == [], "nothing crawled, nothing dropped"
    assert stopped.stats["robotstxt/parked/recorded"] == 4
    assert stopped.stats["robotstxt/parked/handed_over/store"] == 4
    assert "robotstxt/unreachable/dropped" not in stopped.stats
    [line] = [m for m in stopped.messages() if "handed over" in m]
    assert "4 left in redis://" in line

    # The next worker of the same spider (past the backoff) adopts them at its start.
    later = await run_crawl({**common, "TEST_CLOCK_SHIFT": 60}, [])
    assert later.stats["robotstxt/parked/adopted"] == 4
    assert sorted(later.downloaded) == allowed(site)
    assert later.stats["robotstxt/forbidden"] == 1
    assert_each_allowed_page_once(site)
    assert _parked_keys(redis_server) == [], "no record left once they are crawled"


@pytest_twisted.ensureDeferred
async def test_scrapy_redis_stop_hands_over_through_the_store_and_the_dupefilter_agrees(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply(503), Reply(200, ROBOTS))
    common = scrapy_redis_settings(redis_server, ROBOTSTXT_CACHE_STORE=redis_server.url)
    stopped = await run_crawl({**common, "CLOSESPIDER_TIMEOUT": 2}, urls(site))
    assert stopped.downloaded == [] and stopped.failures == []
    # Popped from the shared queue, handed back by the downloader, parked: in the store only.
    assert stopped.stats["robotstxt/parked/handed_over/store"] == 4
    client: Any = redis_server.client()
    assert client.llen("recording:requests") == 0 and client.zcard("recording:requests") == 0
    # The first request passed the shared filter, came back from the downloader
    # (dont_filter from then on) and was parked; the others were parked at
    # request_scheduled, before the filter, which meets them on release.
    assert client.scard("recording:dupefilter") == 1

    # The start list again (a restart yields it): for each URL one copy goes
    # through (the adopted one, or the restart's), the filter drops the other.
    later = await run_crawl({**common, "TEST_CLOCK_SHIFT": 60}, urls(site))
    assert later.stats["robotstxt/parked/adopted"] == 4
    assert sorted(later.downloaded) == allowed(site)
    assert sorted(later.dropped) == sorted(urls(site)), "one duplicate per URL, dropped"
    assert_each_allowed_page_once(site)


@pytest_twisted.ensureDeferred
async def test_scrapy_redis_persist_without_a_shared_store_requeues_at_a_stop(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply(503), Reply(200, ROBOTS))
    common = scrapy_redis_settings(redis_server)  # robots.txt cache in memory
    stopped = await run_crawl({**common, "CLOSESPIDER_TIMEOUT": 2}, urls(site))
    assert stopped.downloaded == [] and stopped.failures == []
    assert stopped.stats["robotstxt/parked/handed_over/scheduler"] == 4
    assert "robotstxt/parked/recorded" not in stopped.stats
    client: Any = redis_server.client()
    assert client.zcard("recording:requests") == 4, "back in the shared queue"

    later = await run_crawl(common, [])
    assert sorted(later.downloaded) == allowed(site)
    assert_each_allowed_page_once(site)


@pytest_twisted.ensureDeferred
async def test_without_anywhere_to_keep_them_a_stop_drops_with_the_errback(site: Site) -> None:
    site.script("/robots.txt", Reply(503))
    at_spider_closed: list[int] = []

    def on_closed(spider: Any) -> None:
        # The spider's handler runs before the middleware's (connected first).
        at_spider_closed.append(len(spider._result.failures))

    stopped = await run_crawl(
        settings(CLOSESPIDER_TIMEOUT=2), urls(site), spider_with_signals(spider_closed=on_closed)
    )
    assert sorted(url for url, _ in stopped.failures) == sorted(urls(site))
    assert stopped.stats["robotstxt/unreachable/dropped"] == 4
    assert "robotstxt/parked/handed_over" not in stopped.stats
    assert at_spider_closed == [4], "dropped before the scheduler closed, not at spider_closed"


class LambdaSpider(RecordingSpider):
    """One request whose callback is not a spider method: it cannot be serialized."""

    def start_requests(self) -> Any:
        yield from super().start_requests()
        yield Request(
            self._lambda_url,
            callback=lambda response: None,
            errback=self.on_error,
        )


@pytest_twisted.ensureDeferred
async def test_an_unserializable_request_is_counted_kept_local_and_dropped_at_a_stop(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply(503))
    lambda_url = site.url("/lambda")
    stopped = await run_crawl(
        settings(ROBOTSTXT_CACHE_STORE=redis_server.url, CLOSESPIDER_TIMEOUT=2),
        [site.url("/a")],
        type("Spider", (LambdaSpider,), {"_lambda_url": lambda_url}),
    )
    assert stopped.stats["robotstxt/parked/unserializable"] == 1
    assert stopped.stats["robotstxt/parked/recorded"] == 1
    assert stopped.stats["robotstxt/parked/handed_over/store"] == 1
    assert [url for url, _ in stopped.failures] == [lambda_url], "nowhere to keep it"
    assert any("cannot be kept in the robots.txt store" in m for m in stopped.messages())


# -- a kill (a separate process) ------------------------------------------------------


async def _kill_while_waiting(
    site: Site, worker_settings: dict[str, Any], *, interrupt: bool = False
) -> float:
    """Run a worker process until its requests wait for robots.txt, SIGKILL it (or
    SIGINT: ``interrupt``); the time it ended."""
    doomed = ScriptProcess(
        WORKER_SCRIPT,
        {
            "urls": urls(site),
            "settings": {**worker_settings, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO"},
        },
    )
    # All four waiting requests are in the store (the worker says so as it counts them).
    await doomed.when("stat", "robotstxt/parked/recorded=4").addTimeout(60, _reactor())
    if interrupt:
        doomed.interrupt()
        report = await doomed.ended.addTimeout(30, _reactor())
        assert report["exit"] == 0, report["stderr"]
        assert report["stats"]["robotstxt/parked/handed_over/store"] == 4
        assert report["downloaded"] == []
    else:
        doomed.kill()
        report = await doomed.ended.addTimeout(30, _reactor())
        assert report["exit"] != 0, "killed, not ended"
        assert report.get("downloaded") is None, "it never got to report"
    return time.monotonic()


@pytest_twisted.ensureDeferred
async def test_a_sigint_hands_over_to_the_next_worker_at_once(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply(503), Reply(200, ROBOTS))
    # A lease far longer than the test: only a hand-over lets the next worker adopt.
    shared = settings(ROBOTSTXT_CACHE_STORE=redis_server.url, ROBOTSTXT_PARKED_LEASE_TTL=600)
    stopped_at = await _kill_while_waiting(site, shared, interrupt=True)
    survivor = await run_crawl({**shared, "TEST_CLOCK_SHIFT": 60}, [])
    took = time.monotonic() - stopped_at
    print(f"figure: SIGINT hand-over; the next worker's crawl ended {took:.1f} s on")
    assert survivor.stats["robotstxt/parked/adopted"] == 4
    assert sorted(survivor.downloaded) == allowed(site)
    assert_each_allowed_page_once(site)


@pytest.mark.parametrize("store", ["redis", "sqlite"])
@pytest_twisted.ensureDeferred
async def test_a_killed_workers_waiting_requests_are_adopted(
    store: str, redis_server: RedisServer, site: Site, tmp_path: Path
) -> None:
    site.script("/robots.txt", Reply(503), Reply(200, ROBOTS))
    lease = 2.0
    location = redis_server.url if store == "redis" else str(tmp_path / "shared.sqlite")
    shared = settings(ROBOTSTXT_CACHE_STORE=location, ROBOTSTXT_PARKED_LEASE_TTL=lease)
    killed_at = await _kill_while_waiting(site, shared)

    survivor = await run_crawl(
        {**shared, "TEST_CLOCK_SHIFT": 60},
        [],
        # Stays open until the dead worker's lease lapses and it adopts.
        spider_cls=_IdleUntilAdopted,
    )
    waited = time.monotonic() - killed_at
    print(
        f"figure: {store}: a SIGKILLed worker's 4 waiting requests adopted; "
        f"the crawl ended {waited:.1f} s after the kill"
    )
    assert survivor.stats["robotstxt/parked/adopted"] == 4
    assert sorted(survivor.downloaded) == allowed(site)
    assert_each_allowed_page_once(site)


@pytest_twisted.ensureDeferred
async def test_a_jobdir_crawl_sigkilled_and_restarted_keeps_its_waiting_requests(
    site: Site, tmp_path: Path
) -> None:
    site.script("/robots.txt", Reply(503), Reply(200, ROBOTS))
    jobdir = settings(JOBDIR=str(tmp_path / "job"))
    await _kill_while_waiting(site, jobdir)
    # The same command again: the dead run's records in JOBDIR/robotstxt.sqlite
    # are adopted at once (its process is gone), and its start list comes again.
    restarted = await run_crawl({**jobdir, "TEST_CLOCK_SHIFT": 60}, urls(site))
    assert restarted.stats["robotstxt/parked/adopted"] == 4
    assert sorted(set(restarted.downloaded)) == allowed(site), "none lost"
    assert site.hits("/private/x") == 0
    # The first request passed the scheduler (and Scrapy's duplicate filter)
    # before it was handed back and parked with dont_filter. Scrapy's JOBDIR
    # filter buffers its file, so a SIGKILL loses that fingerprint and the
    # restart's copy of that one URL passes too: at most one page twice. (With
    # a shared filter, scrapy-redis, the fingerprint survives and the
    # dont_filter copy is the only one crawled; see the scrapy-redis test.)
    duplicates = len(restarted.downloaded) - len(allowed(site))
    print(f"figure: JOBDIR SIGKILL + restart: 4 waiting requests adopted, {duplicates} page twice")
    assert duplicates <= 1


@pytest_twisted.ensureDeferred
async def test_a_stop_releases_the_fetch_lease_of_a_fetch_in_flight(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply.hang())
    client: Any = redis_server.client()
    seen: dict[str, Any] = {}

    def look(spider: Any) -> None:
        # Past the stop (1 s), while the robots.txt download still hangs (3 s).
        _reactor().callLater(2.0, lambda: seen.setdefault("leases", client.keys("*lease:*")))

    stopped = await run_crawl(
        settings(ROBOTSTXT_CACHE_STORE=redis_server.url, CLOSESPIDER_TIMEOUT=1, DOWNLOAD_TIMEOUT=3),
        urls(site),
        spider_with_signals(spider_opened=look),
    )
    assert stopped.stats["robotstxt/fetch_lease/released_at_close"] == 1
    assert seen["leases"] == [], "another worker may fetch at once, not after the lease TTL"


class _IdleUntilAdopted(RecordingSpider):
    """Keeps the crawl open (idle) until something was adopted, 20 s at most."""

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.opened_at = time.monotonic()
        crawler.signals.connect(spider.on_idle, signal=signals.spider_idle)
        return spider

    def on_idle(self) -> None:
        from scrapy.exceptions import DontCloseSpider

        adopted = self.crawler.stats.get_value("robotstxt/parked/adopted", 0)
        if not adopted and time.monotonic() - self.opened_at < 20:
            raise DontCloseSpider


def _parked_keys(redis: RedisServer, kind: str = "") -> list[bytes]:
    client: Any = redis.client()
    keys = client.keys("robotstxt:parked:*")
    if kind:
        return [k for k in keys if f":{kind}:".encode() in k]
    # What is left of the records (an empty owners set is removed by Redis).
    return [k for k in keys if b":owner:" not in k]


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


@pytest_twisted.ensureDeferred
async def test_a_worker_about_to_close_adopts_what_another_just_handed_over(
    redis_server: RedisServer, site: Site
) -> None:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore
    from scrapy_googlerobots.waiting.parked_records import serialize_request

    site.script("/robots.txt", Reply(200, ROBOTS))
    site.script("/a", Reply(200, b"page", delay=0.5))
    handed = [site.url("/b"), site.url("/c")]

    def hand_over(spider: Any) -> None:
        # Another worker stops while this one crawls /a: its two requests are
        # left in the store, released. This worker's next beat is 5 s away.
        def stop_the_other() -> None:
            other = RedisPolicyStore.from_url(redis_server.url)
            for index, url in enumerate(handed):
                data = serialize_request(Request(url, callback=spider.parse), spider)
                other.keep_parked(spider.name, f"other-{index}", data, 15.0)
            other.release_parked_lease(spider.name)

        _reactor().callLater(0.2, stop_the_other)

    result = await run_crawl(
        settings(ROBOTSTXT_CACHE_STORE=redis_server.url),
        [site.url("/a")],
        spider_with_signals(spider_opened=hand_over),
    )
    assert result.stats["robotstxt/parked/adopted"] == 2, "adopted at idle, before closing"
    assert sorted(result.downloaded) == [site.url("/a"), *handed]
