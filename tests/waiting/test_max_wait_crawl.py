"""``ROBOTSTXT_UNREACHABLE_MAX_WAIT`` counts from the first park, across hand-overs: real crawls.

A request of a dead origin (its robots.txt answers 503 for ever) is parked;
its worker stops or is killed, and another crawl takes it up: adopted from
the shared store (SQLite in ``JOBDIR``, Redis), or taken back from a
``JOBDIR`` scheduler's disk queue. It must be dropped at its first park plus
the maximum wait, not that long after its last adoption (issue 27: under
churn faster than the limit, the restart at each adoption carried it for
ever).

The clocks compared are the wall clock (:func:`time.time`) of the process
that scheduled the request first (the spider's ``request_scheduled``
handler, just before the middleware parks it there) and of the one whose
errback saw the drop.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest

# The clocked middleware's crawl settings (no clock shift here: real time).
from test_persistence_crawl import settings
from twisted.internet import defer
from twisted.python.failure import Failure

from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore
from scrapy_googlerobots.waiting.origin_state import WAITING_SINCE_META
from scrapy_googlerobots.waiting.parked_records import deserialize_request, serialize_request

from processes import ScriptProcess
from redis_server import redis_server
from servers import RecordingSpider, Reply, Site, run_crawl

LIMIT = 3.0
"""ROBOTSTXT_UNREACHABLE_MAX_WAIT of these crawls."""
LATE = 1.0
"""How late after its deadline a drop may come (timers, the engine, a worker's start)."""
HERE = Path(__file__).resolve()

__all__ = ["redis_server"]  # the fixture, for the redis-store case


class TimingSpider(RecordingSpider):
    """Records, by the wall clock, each request's scheduling and errback.

    ``announce``: also print each event as a JSON line (a worker process).
    """

    announce = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.events = []
        crawler.signals.connect(spider.on_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(spider.on_opened, signal=signals.spider_opened)
        return spider

    def on_opened(self, spider: Any) -> None:
        # Before the middleware's own spider_opened handler, which adopts.
        self.opened_at = time.time()

    def on_scheduled(self, request: Request, spider: Any) -> None:
        self._event("scheduled", request.url)

    def on_error(self, failure: Failure) -> None:
        self._event("dropped", failure.request.url, str(failure.value))  # type: ignore[attr-defined]
        super().on_error(failure)

    def _event(self, kind: str, url: str, message: str = "") -> None:
        event = {"event": kind, "url": url, "at": time.time(), "message": message}
        self.events.append(event)
        if self.announce:
            print(json.dumps(event), flush=True)


def waits(events: Iterable[dict[str, Any]]) -> dict[str, tuple[float, str]]:
    """Per URL: seconds from its first scheduling to its (one) drop, and the drop's message."""
    first: dict[str, float] = {}
    dropped: dict[str, list[tuple[float, str]]] = {}
    for event in sorted(events, key=lambda event: float(event["at"])):
        if event["event"] == "scheduled":
            first.setdefault(event["url"], event["at"])
        else:
            dropped.setdefault(event["url"], []).append((event["at"], event["message"]))
    assert sorted(dropped) == sorted(first), f"dropped {sorted(dropped)} of {sorted(first)}"
    result = {}
    for url, drops in dropped.items():
        [(at, message)] = drops  # one errback each
        result[url] = (at - first[url], message)
    return result


# -- a hand-over inside one test process -----------------------------------------------


@pytest.mark.parametrize("route", ["jobdir-store", "jobdir-scheduler", "redis-store"])
@pytest_twisted.ensureDeferred
async def test_a_handed_over_request_is_dropped_at_first_park_plus_max_wait(
    route: str, site: Site, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    site.script("/robots.txt", Reply(503))
    extra: dict[str, Any] = {"ROBOTSTXT_UNREACHABLE_MAX_WAIT": LIMIT}
    if route == "redis-store":
        extra["ROBOTSTXT_CACHE_STORE"] = request.getfixturevalue("redis_server").url
    else:
        # The restart of a JOBDIR crawl: its store (JOBDIR/robotstxt.sqlite),
        # or, with none, its scheduler's disk queue.
        extra["JOBDIR"] = str(tmp_path / "job")
        if route == "jobdir-scheduler":
            extra["ROBOTSTXT_CACHE_STORE"] = "memory"
    common = settings(**extra)
    url = site.url("/a")

    stopped = await run_crawl({**common, "CLOSESPIDER_TIMEOUT": 1.5}, [url], TimingSpider)
    assert stopped.stats["finish_reason"] == "closespider_timeout"
    assert stopped.failures == []
    where = "scheduler" if route == "jobdir-scheduler" else "store"
    assert stopped.stats[f"robotstxt/parked/handed_over/{where}"] == 1

    later = await run_crawl(common, [], TimingSpider)
    if where == "store":
        assert later.stats["robotstxt/parked/adopted"] == 1
    assert later.stats["robotstxt/unreachable/dropped"] == 1
    events = stopped.crawler.spider.events + later.crawler.spider.events  # type: ignore[union-attr]
    [(waited, message)] = waits(events).values()
    print(f"figure: {route}: dropped {waited:.2f} s after its first park (limit {LIMIT:g} s)")
    assert LIMIT <= waited < LIMIT + LATE, "the deadline is the first park's"
    assert "gave up after waiting 3 s since it was first parked" in message
    assert "(ROBOTSTXT_UNREACHABLE_MAX_WAIT = 3 s)" in message
    assert site.hits("/a") == 0


@pytest.mark.parametrize("wait", ["parked", "inline"])
@pytest_twisted.ensureDeferred
async def test_a_first_park_in_this_workers_future_counts_as_now(
    wait: str, site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another worker's clock: one far behind (long past deadline), one an hour ahead.

    ``inline``: a Scrapy that cannot park (< 2.11.2) makes adopted requests
    wait in the downloader; the first park's deadline holds there too.
    """
    if wait == "inline":
        import scrapy_googlerobots.crawl.middleware as middleware_module

        monkeypatch.setattr(middleware_module, "REQUEST_SCHEDULED_CAN_DROP", False)
    site.script("/robots.txt", Reply(503))
    path = tmp_path / "shared.sqlite"
    spider = TimingSpider()
    past, future = site.url("/past"), site.url("/future")
    other = SqlitePolicyStore(path)
    parked = [(past, time.time() - 3_600), (future, time.time() + 3_600)]
    for rid, (url, since) in enumerate(parked):
        kept = Request(url, callback=spider.parse, errback=spider.on_error)
        kept.meta[WAITING_SINCE_META] = since
        other.keep_parked(TimingSpider.name, f"other-{rid}", serialize_request(kept, spider), 15.0)
    other.release_parked_lease(TimingSpider.name)  # it stopped: adoptable at once
    other.close()

    result = await run_crawl(
        settings(ROBOTSTXT_CACHE_STORE=str(path), ROBOTSTXT_UNREACHABLE_MAX_WAIT=1.0),
        [],
        TimingSpider,
    )
    assert result.stats["robotstxt/parked/adopted"] == 2
    assert result.stats["robotstxt/inline_waits" if wait == "inline" else "robotstxt/parked"] == 2
    assert result.stats["robotstxt/parked/clock_ahead"] == 1
    [ahead] = [m for m in result.messages() if "in this worker's future" in m]
    assert re.search(
        r"/future> was first parked (359\d\.\d|3600\.0) s in this worker's future", ahead
    )
    spider: Any = result.crawler.spider
    drops = {
        event["url"]: (event["at"] - spider.opened_at, event["message"])
        for event in spider.events
        if event["event"] == "dropped"
    }
    assert drops[past][0] < 0.5, "past its deadline when adopted: dropped at once"
    assert re.search(r"gave up after waiting 360[0-2] s since it was first parked", drops[past][1])
    # Waits the maximum from its adoption: never longer, whatever the other clock says.
    assert 1.0 <= drops[future][0] < 1.0 + LATE
    assert "gave up after waiting 1 s since it was first parked" in drops[future][1]
    assert [failure.check(IgnoreRequest) for _, failure in result.failures] == [
        IgnoreRequest,
        IgnoreRequest,
    ]


@pytest_twisted.ensureDeferred
async def test_a_first_park_rebased_on_this_workers_clock_is_written_back(
    site: Site, tmp_path: Path
) -> None:
    """Else the next adopter reads the far-future time again, and the wait restarts there."""
    site.script("/robots.txt", Reply(503))
    spider = TimingSpider()
    other = SqlitePolicyStore(tmp_path / "shared.sqlite")
    kept = Request(site.url("/future"), callback=spider.parse, errback=spider.on_error)
    kept.meta[WAITING_SINCE_META] = time.time() + 3_600
    other.keep_parked(TimingSpider.name, "other-0", serialize_request(kept, spider), 15.0)
    other.release_parked_lease(TimingSpider.name)

    stopped = await run_crawl(
        settings(ROBOTSTXT_CACHE_STORE=str(tmp_path / "shared.sqlite"), CLOSESPIDER_TIMEOUT=0.5),
        [],
        TimingSpider,
    )
    assert stopped.stats["robotstxt/parked/adopted"] == 1
    assert stopped.stats["robotstxt/parked/handed_over/store"] == 1
    [(_, data)] = other.adopt_parked(TimingSpider.name, 15.0)
    other.close()
    opened = stopped.crawler.spider.opened_at  # type: ignore[union-attr]
    since = deserialize_request(data, spider).meta[WAITING_SINCE_META]
    assert opened <= since < opened + 1.0, "the adoption's time, as the adopter counted it"


# -- churn: workers stopped and killed faster than the limit ----------------------------


class Worker(ScriptProcess):
    """This file run as a worker process; ``scheduled(url)`` fires once it schedules ``url``."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.events: list[dict[str, Any]] = []
        self._read = 0
        self._waiting: dict[str, defer.Deferred[None]] = {}
        super().__init__(HERE, config)

    def outReceived(self, data: bytes) -> None:
        super().outReceived(data)
        end = self.out.rfind(b"\n") + 1
        for line in self.out[self._read : end].decode().splitlines():
            event = json.loads(line)
            if "event" not in event:
                continue  # the final report
            self.events.append(event)
            waiter = self._waiting.pop(event["url"], None)
            if event["event"] == "scheduled" and waiter is not None:
                waiter.callback(None)
        self._read = end

    def scheduled(self, url: str, timeout: float = 30.0) -> defer.Deferred[None]:
        waiter: defer.Deferred[None] = defer.Deferred()
        if any(e["event"] == "scheduled" and e["url"] == url for e in self.events):
            waiter.callback(None)
        else:
            self._waiting[url] = waiter
            waiter.addTimeout(timeout, _reactor())
        return waiter


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


@pytest_twisted.ensureDeferred
async def test_churn_faster_than_the_limit_drops_at_first_park_plus_max_wait(
    site: Site, tmp_path: Path
) -> None:
    """Three worker processes, each started once the previous one waits, each (but the
    last) stopped or killed then: every worker lives less than the limit."""
    site.script("/robots.txt", Reply(503))
    shared = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
        },
        # SQLite: a killed worker's records are adoptable at once (its process is gone).
        "ROBOTSTXT_CACHE_STORE": str(tmp_path / "shared.sqlite"),
        "ROBOTSTXT_UNREACHABLE_MAX_WAIT": LIMIT,
        "ROBOTSTXT_PARKED_LEASE_TTL": 1.5,  # a beat, and an adoption, every 0.5 s
        "RETRY_TIMES": 0,
        "DOWNLOAD_TIMEOUT": 5,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
    }
    workers: list[Worker] = []

    async def start(n: int) -> Worker:
        worker = Worker({"urls": [site.url(f"/w{n}")], "settings": shared})
        workers.append(worker)
        await worker.scheduled(site.url(f"/w{n}"))
        return worker

    first = await start(1)
    second = await start(2)
    first.interrupt()  # a stop: its request is handed over, the second adopts it
    stopped = await first.ended.addTimeout(30, _reactor())
    assert stopped["exit"] == 0, stopped["stderr"]
    third = await start(3)
    second.kill()  # a kill: the third adopts what the second held
    await second.ended.addTimeout(30, _reactor())
    last = await third.ended.addTimeout(30, _reactor())
    assert last["exit"] == 0, last["stderr"]

    per_url = waits(event for worker in workers for event in worker.events)
    figures = ", ".join(f"{url.rsplit('/', 1)[1]} {w:.2f} s" for url, (w, _) in per_url.items())
    print(f"figure: churn (a stop, a kill): dropped after its first park: {figures}")
    for url, (waited, message) in per_url.items():
        assert LIMIT <= waited < LIMIT + LATE, f"{url} dropped {waited:.2f} s after its first park"
        assert "since it was first parked" in message
    assert site.hits("/w1") == site.hits("/w2") == site.hits("/w3") == 0


# -- the worker ---------------------------------------------------------------------


def _worker(config: dict[str, Any]) -> dict[str, Any]:
    from scrapy.crawler import CrawlerProcess

    process = CrawlerProcess(config["settings"], install_root_handler=True)
    crawler = process.create_crawler(TimingSpider)
    process.crawl(crawler, start_urls=config["urls"], announce=True)
    process.start()
    assert crawler.stats is not None
    return {
        "stats": {
            key: value
            for key, value in crawler.stats.get_stats().items()
            if key.startswith("robotstxt/")
        }
    }


if __name__ == "__main__":
    print(json.dumps(_worker(json.loads(sys.argv[1]))))
