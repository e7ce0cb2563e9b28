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
from scrapy.exceptions import DontCloseSpider, IgnoreRequest

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
LATE = 0.75
"""How late after its deadline a drop may come in one process (timers, the engine)."""
LATE_CHURN = 1.0
"""The same across worker processes (a beat of the adopter's lease, 0.5 s, on top)."""
HERE = Path(__file__).resolve()

__all__ = ["redis_server"]  # the fixture, for the redis-store case


class TimingSpider(RecordingSpider):
    """Records, by the wall clock, each request's scheduling and errback.

    ``announce``: also print each event as a JSON line (a worker process).
    """

    announce = False
    keep_open = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.events = []
        crawler.signals.connect(spider.on_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(spider.on_opened, signal=signals.spider_opened)
        crawler.signals.connect(spider.on_idle, signal=signals.spider_idle)
        return spider

    def on_opened(self, spider: Any) -> None:
        # Before the middleware's own spider_opened handler, which adopts.
        self.opened_at = time.time()
        self._event("opened", "")

    def on_idle(self, spider: Any) -> None:
        # ``keep_open``: a spare worker stays until it has adopted something (30 s at most).
        adopted = self.crawler.stats.get_value("robotstxt/parked/adopted", 0)
        if self.keep_open and not adopted and time.time() - self.opened_at < 30:
            raise DontCloseSpider

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
        elif event["event"] == "dropped":
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

    stopped = await run_crawl({**common, "CLOSESPIDER_TIMEOUT": 1.0}, [url], TimingSpider)
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
        import scrapy_googlerobots.waiting.parking as middleware_module

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
        settings(ROBOTSTXT_CACHE_STORE=str(path), ROBOTSTXT_UNREACHABLE_MAX_WAIT=2.0),
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
    # (A second below the other's deadline: "at once" on a busy machine too.)
    assert drops[past][0] < 1.0, "past its deadline when adopted: dropped at once"
    assert re.search(r"gave up after waiting 360[0-2] s since it was first parked", drops[past][1])
    # Waits the maximum from its adoption: never longer, whatever the other clock says.
    assert 2.0 <= drops[future][0] < 2.0 + LATE
    assert "gave up after waiting 2 s since it was first parked" in drops[future][1]
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
    """This file run as a worker process; ``when(kind, url)`` fires at its first such event.

    Its spider's events (``opened``, ``scheduled``, ``dropped``) come as JSON
    lines on stdout, and ``adopted`` when the middleware logs an adoption.
    """

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(HERE, config)

    def errReceived(self, data: bytes) -> None:
        super().errReceived(data)
        if b"Adopted " in data and not self._has("adopted", ""):
            self._seen({"event": "adopted", "url": "", "at": time.time(), "message": ""})

    def when(self, kind: str, url: str = "") -> defer.Deferred[Worker]:
        return super().when(kind, url)

    def stop(self, kill: bool = False) -> None:
        """SIGKILL (``kill``) or SIGINT, unless it has ended already."""
        if not self.ended.called:
            (self.kill if kill else self.interrupt)()


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


def _first(waiters: list[defer.Deferred[Worker]], timeout: float = 30.0) -> Any:
    """The worker of whichever of ``waiters`` fires first."""
    either: defer.Deferred[Any] = defer.DeferredList(
        waiters, fireOnOneCallback=True, fireOnOneErrback=True, consumeErrors=True
    )
    return either.addTimeout(timeout, _reactor()).addCallback(lambda result: result[0])


async def _sleep(seconds: float) -> None:
    from twisted.internet import task

    await task.deferLater(_reactor(), seconds, lambda: None)


@pytest_twisted.ensureDeferred
async def test_churn_faster_than_the_limit_drops_at_first_park_plus_max_wait(
    site: Site, tmp_path: Path
) -> None:
    """A worker stopped 0.5 s after parking a request, the worker that adopts it killed
    0.5 s after the adoption, a third adopting it then: three holders within a 3 s limit.

    The two adopters are started (and idle, kept open) before the first parks,
    so the churn does not wait on a process start.
    """
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
    url = site.url("/w1")
    spares = [Worker({"urls": [], "settings": shared, "keep_open": True}) for _ in range(2)]
    workers = [*spares]
    try:
        for spare in spares:
            await spare.when("opened").addTimeout(30, _reactor())
        first = Worker({"urls": [url], "settings": shared})
        workers.append(first)
        await first.when("scheduled", url).addTimeout(30, _reactor())
        await _sleep(0.5)
        first.stop()  # SIGINT: the request is handed over, a spare adopts it
        stopped = await first.ended.addTimeout(30, _reactor())
        assert stopped["exit"] == 0, stopped["stderr"]
        assert stopped["stats"]["robotstxt/parked/handed_over/store"] == 1
        holder = await _first([spare.when("adopted") for spare in spares])
        await _sleep(0.5)
        holder.stop(kill=True)  # SIGKILL: the other spare adopts it
        await _first([worker.when("dropped", url) for worker in workers])
    finally:
        for worker in workers:
            worker.stop()
        for worker in workers:
            await worker.ended.addTimeout(30, _reactor())

    [(waited, message)] = waits(event for worker in workers for event in worker.events).values()
    adopters = [spare for spare in spares if spare.when("adopted").called]
    print(
        f"figure: churn (a stop, a kill, {len(adopters)} adoptions): dropped {waited:.2f} s "
        f"after its first park (limit {LIMIT:g} s)"
    )
    assert LIMIT <= waited < LIMIT + LATE_CHURN, "the deadline is the first park's"
    assert "since it was first parked" in message
    assert site.hits("/w1") == 0


# -- the worker ---------------------------------------------------------------------


def _worker(config: dict[str, Any]) -> dict[str, Any]:
    from scrapy.crawler import CrawlerProcess

    process = CrawlerProcess(config["settings"], install_root_handler=True)
    crawler = process.create_crawler(TimingSpider)
    process.crawl(
        crawler, start_urls=config["urls"], announce=True, keep_open=config.get("keep_open")
    )
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
