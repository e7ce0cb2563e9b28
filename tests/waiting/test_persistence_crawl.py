"""Robots knowledge that outlives a process: real crawls with JOBDIR and with a shared Redis.

- Pause/resume with ``JOBDIR``: no second robots.txt fetch within the TTL, one
  refresh after it, waiting requests kept across the pause.
- Redis shared by separate crawler processes (this file run as a script is
  the worker): one robots.txt fetch per origin in total; a killed lease holder
  is replaced after its lease expires.
- Redis killed mid-crawl: the crawl finishes on the local layer, logged once.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.defer import deferred_from_coro

from scrapy_googlerobots import GoogleRobotsTxtMiddleware
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore
from scrapy_googlerobots.waiting.parked_records import deserialize_request, serialize_request

from processes import ScriptProcess
from redis_server import RedisServer, redis_server, require_redis
from servers import RecordingSpider, Reply, Site, run_crawl

__all__ = ["redis_server"]  # the fixture, imported for the tests below

ROBOTS = b"User-agent: *\nDisallow: /private\n"
DAY = 86_400.0
HERE = Path(__file__).resolve()
CLUSTER = HERE.parents[2] / "example_project" / "cluster"


class ClockedMiddleware(GoogleRobotsTxtMiddleware):
    """The middleware on a clock moved by ``TEST_CLOCK_SHIFT`` seconds."""

    def __init__(self, crawler: Crawler) -> None:
        shift = crawler.settings.getfloat("TEST_CLOCK_SHIFT", 0.0)
        super().__init__(crawler, clock=lambda: time.time() + shift)


def settings(**extra: Any) -> dict[str, Any]:
    return {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            "test_persistence_crawl.ClockedMiddleware": 100,
        },
        "RETRY_TIMES": 0,
        "DOWNLOAD_TIMEOUT": 5,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
        **extra,
    }


class PausingSpider(RecordingSpider):
    """Pauses the crawl (stops it, as Ctrl-C does) after ``pause_after`` pages,
    or, with ``pause_when_parked``, once that many requests wait for robots.txt."""

    pause_after = 0
    pause_when_parked = 0
    seen = 0
    pausing = False

    def pause(self) -> None:
        if self.pausing:
            return
        self.pausing = True
        stop_async = getattr(self.crawler, "stop_async", None)
        if stop_async is not None:
            deferred_from_coro(stop_async())
        else:
            self.crawler.stop()

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.on_idle, signal=signals.spider_idle)
        return spider

    def parse(self, response: Response, **kwargs: Any) -> Any:
        self.seen += 1
        if self.pause_after and self.seen >= self.pause_after:
            self.pause()
        return None

    def on_idle(self) -> None:
        deferred = self.crawler.stats.get_value("robotstxt/unreachable/deferred", 0)
        if self.pause_when_parked and deferred >= self.pause_when_parked:
            self.pause()


def pages(site: Site, count: int, start: int = 0) -> list[str]:
    return [site.url(f"/p{i}") for i in range(start, start + count)]


# -- JOBDIR ------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_pause_resume_reuses_robots_within_ttl_and_refreshes_after(
    site: Site, tmp_path: Path
) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS))
    # Pages take a moment: before Scrapy 2.13 local downloads can outrun the
    # spider callbacks, so the pause after 3 pages would come after all 8.
    for i in range(8):
        site.script(f"/p{i}", Reply(200, b"page", delay=0.2))
    jobdir = str(tmp_path / "job")
    start = [*pages(site, 8), site.url("/private/x")]
    common = settings(JOBDIR=jobdir, CONCURRENT_REQUESTS=1)

    first = await run_crawl(common, start, PausingSpider, pause_after=3)
    assert first.stats["finish_reason"] == "shutdown"
    assert 3 <= len(first.downloaded) < 8, "paused with pages left in the JOBDIR queue"
    resumed = await run_crawl(common, start, PausingSpider)
    assert sorted(first.downloaded + resumed.downloaded) == sorted(pages(site, 8)), (
        "every page once across the pause"
    )
    assert site.hits("/robots.txt") == 1, "fresh record from JOBDIR/robotstxt.sqlite used"
    assert site.hits("/private/x") == 0
    assert "robotstxt/request_count" not in resumed.stats

    # Two days later (past ROBOTSTXT_CACHE_TTL): one refresh, then the new pages.
    later = await run_crawl(
        {**common, "TEST_CLOCK_SHIFT": 2 * DAY},
        [*pages(site, 4, start=8), site.url("/private/y")],
        PausingSpider,
    )
    assert site.hits("/robots.txt") == 2
    assert sorted(later.downloaded) == sorted(pages(site, 4, start=8))
    assert site.hits("/private/y") == 0


@pytest_twisted.ensureDeferred
async def test_requests_waiting_for_robots_survive_the_pause(site: Site, tmp_path: Path) -> None:
    site.script("/robots.txt", Reply(503), Reply(200, b"User-agent: *\nDisallow: /b\n"))
    common = settings(JOBDIR=str(tmp_path / "job"))
    start = [site.url("/a"), site.url("/b"), site.url("/c")]

    first = await run_crawl(common, start, PausingSpider, pause_when_parked=3)
    assert first.stats["finish_reason"] == "shutdown"
    assert first.downloaded == []
    # Kept in JOBDIR/robotstxt.sqlite since they were parked; left there at the stop.
    assert first.stats["robotstxt/parked/recorded"] == 3
    assert first.stats["robotstxt/parked/handed_over"] == 3
    assert first.stats["robotstxt/parked/handed_over/store"] == 3
    assert _parked_rows(tmp_path / "job" / "robotstxt.sqlite") == 3
    kept = SqlitePolicyStore(tmp_path / "job" / "robotstxt.sqlite").get(
        f"http://127.0.0.1:{site.port}"
    )
    assert kept is not None and kept.outcome is FetchOutcome.UNREACHABLE
    assert kept.unreachable_since is not None and kept.failures == 1, "the outage survives"

    # Resumed past the backoff (ROBOTSTXT_RETRY_DELAY, 30 s): robots.txt is back.
    resumed = await run_crawl({**common, "TEST_CLOCK_SHIFT": 60}, start, PausingSpider)
    assert resumed.stats["robotstxt/parked/adopted"] == 3
    assert sorted(resumed.downloaded) == [site.url("/a"), site.url("/c")]
    assert site.hits("/b") == 0
    assert site.hits("/a") == site.hits("/c") == 1, "adopted and restarted copies deduplicated"
    assert site.hits("/robots.txt") == 2
    assert _parked_rows(tmp_path / "job" / "robotstxt.sqlite") == 0, "nothing left waiting"


@pytest_twisted.ensureDeferred
async def test_a_pause_with_a_memory_store_puts_waiting_requests_back_in_the_jobdir_queue(
    site: Site, tmp_path: Path
) -> None:
    site.script("/robots.txt", Reply(503), Reply(200, b"User-agent: *\nDisallow: /b\n"))
    # No store to keep them in: the JOBDIR scheduler's disk queue keeps them.
    common = settings(JOBDIR=str(tmp_path / "job"), ROBOTSTXT_CACHE_STORE="memory")
    start = [site.url("/a"), site.url("/b"), site.url("/c")]

    first = await run_crawl(common, start, PausingSpider, pause_when_parked=3)
    assert first.stats["finish_reason"] == "shutdown"
    assert first.downloaded == [] and first.failures == []
    assert first.stats["robotstxt/parked/handed_over/scheduler"] == 3
    assert "robotstxt/parked/recorded" not in first.stats

    resumed = await run_crawl(common, start, PausingSpider)
    assert sorted(resumed.downloaded) == [site.url("/a"), site.url("/c")]
    assert site.hits("/a") == site.hits("/c") == 1, "re-queued and restarted copies deduplicated"
    assert site.hits("/b") == 0


def _parked_rows(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM robotstxt_parked").fetchone()[0])


class JournalSpider(Spider):
    name = "journal"

    def parse(self, response: Response) -> None:
        return None


def test_serialized_request_round_trip_keeps_only_the_first_park_time() -> None:
    spider = JournalSpider()
    request = Request(
        "http://a.example/x",
        callback=spider.parse,
        priority=3,
        dont_filter=True,
        meta={"_robotstxt_waiting_since": 5.0, "_robotstxt_handed_back": True, "depth": 2},
    )
    restored = deserialize_request(serialize_request(request, spider), spider)
    # The wait goes on from the first park (max-wait counts from it); the rest
    # of our bookkeeping belonged to the process that parked it.
    assert (restored.url, restored.callback, restored.priority, restored.meta) == (
        request.url,
        spider.parse,
        3,
        {"_robotstxt_waiting_since": 5.0, "depth": 2},
    )
    assert restored.dont_filter, "kept: it passed the duplicate filter already"

    # A process whose own filter starts empty clears the dont_filter we set
    # (handing it back), never the spider's own.
    ours = request.replace(meta={"_robotstxt_own_dont_filter": True})
    assert not deserialize_request(
        serialize_request(ours, spider), spider, fresh_filter=True
    ).dont_filter
    assert deserialize_request(
        serialize_request(request, spider), spider, fresh_filter=True
    ).dont_filter


def test_a_request_that_cannot_be_serialized_says_so() -> None:
    spider = JournalSpider()
    with pytest.raises(ValueError, match="lambda"):
        serialize_request(Request("http://a.example/2", callback=lambda response: None), spider)


# -- Redis, one process --------------------------------------------------------


class KillingSpider(RecordingSpider):
    """Kills ``redis`` (a RedisServer) after ``kill_after`` pages."""

    kill_after = 0
    seen = 0
    redis: RedisServer | None = None

    def parse(self, response: Response, **kwargs: Any) -> Any:
        self.seen += 1
        if self.seen == self.kill_after and self.redis is not None:
            self.redis.kill()
        return None


@pytest_twisted.ensureDeferred
async def test_redis_killed_mid_crawl(
    redis_server: RedisServer, make_site: Callable[..., Site]
) -> None:
    sites = [make_site() for _ in range(4)]
    start: list[str] = []
    for site in sites:
        site.script("/robots.txt", Reply(200, ROBOTS))
        # Pages take a moment, so pages are left when the kill comes (see above).
        for i in range(5):
            site.script(f"/p{i}", Reply(200, b"page", delay=0.1))
        start += [*pages(site, 5), site.url("/private/x")]
    result = await run_crawl(
        # Local TTL 0: every request asks Redis, so the outage is met at once.
        settings(
            ROBOTSTXT_CACHE_STORE=redis_server.url,
            ROBOTSTXT_LOCAL_CACHE_TTL=0,
            CONCURRENT_REQUESTS=2,
        ),
        start,
        KillingSpider,
        kill_after=6,
        redis=redis_server,
    )
    print(
        f"figure: Redis SIGKILLed mid-crawl: {len(start)} requests, "
        f"{len(result.downloaded)} crawled, {result.stats.get('robotstxt/forbidden')} forbidden, "
        f"{result.stats.get('robotstxt/unreachable/dropped', 0)} dropped, "
        f"{result.stats.get('robotstxt/parked/at_close', 0)} left parked"
    )
    assert sorted(result.downloaded) == sorted(u for u in start if "/private" not in u)
    assert [site.hits("/robots.txt") for site in sites] == [1, 1, 1, 1]
    store_log = result.messages(logging.INFO, logger="scrapy_googlerobots.stores.layered")
    assert len(store_log) == 1 and "using the local cache only" in store_log[0]
    assert result.stats["robotstxt/store/errors"] >= 1
    assert result.stats["robotstxt/store/outages"] == 1
    assert result.stats["finish_reason"] == "finished"


# -- Redis, several processes --------------------------------------------------


def worker_config(redis: RedisServer, urls: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "urls": urls,
        "settings": {
            "ROBOTSTXT_OBEY": True,
            "DOWNLOADER_MIDDLEWARES": {
                "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
                "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
            },
            "ROBOTSTXT_CACHE_STORE": redis.url,
            "RETRY_TIMES": 0,
            "DOWNLOAD_TIMEOUT": 5,
            "CONCURRENT_REQUESTS": 32,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
            "TELNETCONSOLE_ENABLED": False,
            "LOG_LEVEL": "INFO",
            **extra,
        },
    }


@pytest.fixture
def fifty_sites(make_site: Callable[..., Site]) -> list[Site]:
    sites = [make_site() for _ in range(50)]
    for site in sites:
        site.script("/robots.txt", Reply(200, ROBOTS))
    return sites


@pytest_twisted.ensureDeferred
async def test_two_processes_share_one_fetch_per_origin(
    redis_server: RedisServer, fifty_sites: list[Site]
) -> None:
    urls = [u for site in fifty_sites for u in (site.url("/a"), site.url("/private/x"))]
    workers = [ScriptProcess(HERE, worker_config(redis_server, urls)) for _ in range(2)]
    reports = [await w.ended.addTimeout(90, _reactor()) for w in workers]
    for report in reports:
        assert report["exit"] == 0, report["stderr"]
        assert sorted(report["downloaded"]) == sorted(u for u in urls if "/private" not in u)
        assert report["stats"]["robotstxt/forbidden"] == 50
    assert [site.hits("/robots.txt") for site in fifty_sites] == [1] * 50
    assert sum(site.hits("/private/x") for site in fifty_sites) == 0
    fetches = [r["stats"].get("robotstxt/request_count", 0) for r in reports]
    assert sum(fetches) == 50, f"fetches per worker: {fetches}"


@pytest_twisted.ensureDeferred
async def test_dead_lease_holder_is_replaced_after_lease_expiry(
    redis_server: RedisServer, site: Site
) -> None:
    # The first robots.txt request hangs: its worker holds the lease when killed.
    site.script("/robots.txt", Reply.hang(), Reply(200, ROBOTS))
    urls = [site.url("/a"), site.url("/private/x")]
    # The lease is ROBOTSTXT_FETCH_LEASE_TTL (15 s), renewed only while its holder lives.
    config = worker_config(redis_server, urls, DOWNLOAD_TIMEOUT=1)
    holder = ScriptProcess(HERE, config)
    await site.wait_for_hits("/robots.txt", 1, timeout=60)
    holder.kill()
    await holder.ended.addTimeout(30, _reactor())
    killed_at = time.monotonic()
    successor = await ScriptProcess(HERE, config).ended.addTimeout(90, _reactor())
    assert successor["exit"] == 0, successor["stderr"]
    assert site.hits("/robots.txt") == 2
    assert successor["downloaded"] == [site.url("/a")]
    # It waited for the lease (and not for ever: the 90 s timeout above).
    assert successor["stats"]["robotstxt/fetch_lease/waits"] >= 1
    print(
        "figure: worker SIGKILLed holding a lease; the other's crawl ended "
        f"{time.monotonic() - killed_at:.1f} s later"
    )


@pytest_twisted.ensureDeferred
async def test_cluster_shares_the_backoff_of_an_unreachable_origin(
    redis_server: RedisServer, site: Site
) -> None:
    # Two failures, then rules. Each worker on its own would fetch at start and
    # again at each of its own retries (4 fetches or more, two at once at the
    # start); sharing the record and its retry time, the cluster makes one
    # fetch per backoff step, and both workers obey the rules once found.
    site.script("/robots.txt", Reply(503), Reply(503), Reply(200, ROBOTS))
    urls = [site.url("/a"), site.url("/private/x")]
    config = worker_config(redis_server, urls, ROBOTSTXT_RETRY_DELAY=2, ROBOTSTXT_RETRY_MAX_DELAY=2)
    workers = [ScriptProcess(HERE, config) for _ in range(2)]
    reports = [await w.ended.addTimeout(90, _reactor()) for w in workers]
    for report in reports:
        assert report["exit"] == 0, report["stderr"]
        assert report["downloaded"] == [site.url("/a")]
        assert report["stats"]["robotstxt/forbidden"] == 1
    assert site.hits("/robots.txt") == 3
    fetches = [r["stats"].get("robotstxt/request_count", 0) for r in reports]
    assert sum(fetches) == 3, f"fetches per worker: {fetches}"
    arrivals = [record.at for record in site.requests("/robots.txt")]
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    # Spacing comes from the shared retry time: it can only grow on a slow
    # machine, never shrink, so half the delay is a safe lower bound.
    assert min(gaps) >= 1.0, f"robots.txt fetched {gaps} s apart"
    assert site.hits("/private/x") == 0


def test_scrapy_redis_cluster_example() -> None:
    """example_project/cluster: two scrapy-redis workers, unmodified scheduler and dupefilter."""
    require_redis()
    pytest.importorskip("scrapy_redis", reason="scrapy-redis is not installed")
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["MAX_IDLE_TIME_BEFORE_CLOSE"] = "2"
    done = subprocess.run(
        [sys.executable, str(CLUSTER / "run_cluster.py"), "--json", "--origins", "4"],
        cwd=CLUSTER,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["robots_fetches"] == summary["origins"] == 4, "one fetch per origin in all"
    assert summary["each_page_once"] and summary["disallowed_requested"] == 0
    assert sum(summary["per_worker"].values()) == summary["pages"]


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


# -- the worker ------------------------------------------------------------------


class AnnouncingStats(MemoryStatsCollector):
    """Stats that print each new value of a ``robotstxt/parked/`` stat as an event line
    (``{"event": "stat", "url": "<name>=<value>"}``: ``ScriptProcess.when`` waits on it)."""

    def inc_value(self, key: str, *args: Any, **kwargs: Any) -> None:
        super().inc_value(key, *args, **kwargs)
        if key.startswith("robotstxt/parked/"):
            event = {"event": "stat", "url": f"{key}={self.get_value(key)}"}
            print(json.dumps(event), flush=True)


def _worker(config: dict[str, Any]) -> dict[str, Any]:
    from scrapy.crawler import CrawlerProcess

    settings = {**config["settings"], "STATS_CLASS": f"{__name__}.AnnouncingStats"}
    process = CrawlerProcess(settings, install_root_handler=True)
    crawler = process.create_crawler(RecordingSpider)
    report: dict[str, Any] = {"downloaded": []}

    def on_response(response: Response, request: Request, spider: Any) -> None:
        if request.callback is not NO_CALLBACK:
            report["downloaded"].append(response.url)

    crawler.signals.connect(on_response, signal=signals.response_received, weak=False)
    process.crawl(crawler, start_urls=config["urls"])
    process.start()
    assert crawler.stats is not None
    report["stats"] = {
        key: value
        for key, value in crawler.stats.get_stats().items()
        if key.startswith("robotstxt/")
    }
    return report


if __name__ == "__main__":
    print(json.dumps(_worker(json.loads(sys.argv[1]))))
