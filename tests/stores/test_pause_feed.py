"""The pause feed (Redis pub/sub) against a real redis-server: a pause one worker sets is
pushed to the others as it is set; an outage is one WARNING, counted, never a stall; the
feed subscribes again after it, and its thread ends at stop.

Events the feed's thread delivers go to a queue the test thread drains (the reactor's
``callFromThread`` in a crawl), each wait bounded by a timeout.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from scrapy_googlerobots.stores.layered import LayeredPolicyStore
from scrapy_googlerobots.stores.pause_feed import (
    FeedHandlers,
    PauseFeed,
    pause_message,
    read_pause_message,
)

from redis_server import RedisServer, feed_threads, redis_server
from store_support import Stats

__all__ = ["redis_server"]

ORIGIN = "http://busy.example:80"
REASON = "Retry-After: 6 from <429 http://busy.example/p/3>"
WAIT = 10.0  # seconds any one expected event may take, at most


class Listener:
    """The callbacks of one feed, run on the test thread in the order delivered."""

    def __init__(self) -> None:
        self._events: queue.Queue[Callable[[], None]] = queue.Queue()
        self.seen: list[tuple[Any, ...]] = []

    def deliver(self, function: Callable[[], None]) -> None:
        self._events.put(function)

    def on_pause(self, origin: str, seconds: float, reason: str) -> None:
        self.seen.append(("pause", origin, seconds, reason))

    def on_lost(self, exc: BaseException) -> None:
        self.seen.append(("lost", type(exc).__name__))

    def on_back(self) -> None:
        self.seen.append(("back",))

    def handlers(self) -> FeedHandlers:
        return FeedHandlers(self.deliver, self.on_pause, self.on_lost, self.on_back)

    def next(self) -> tuple[Any, ...]:
        """Run the next delivered callback: what it saw."""
        self._events.get(timeout=WAIT)()
        return self.seen[-1]

    def nothing_pending(self) -> bool:
        return self._events.empty()


def layered(server: RedisServer, stats: Stats | None = None, db: int = 0) -> LayeredPolicyStore:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    url = server.url.rsplit("/", 1)[0] + f"/{db}"
    return LayeredPolicyStore(
        RedisPolicyStore.from_url(url, timeout=0.5),
        description="redis",
        timeout=0.5,
        stats=stats,
    )


def feed_of(store: LayeredPolicyStore, listener: Listener) -> PauseFeed:
    feed = store.pause_feed(listener.handlers())
    assert feed is not None
    return feed


@pytest.fixture
def feeds() -> Iterator[list[PauseFeed]]:
    """Feeds started by a test: stopped at its end, their threads gone."""
    started: list[PauseFeed] = []
    yield started
    for feed in started:
        feed.stop()
        assert not feed.running


def test_a_pause_is_pushed_to_another_worker_as_it_is_set(
    redis_server: RedisServer, feeds: list[PauseFeed]
) -> None:
    first, second = layered(redis_server), layered(redis_server)
    listener = Listener()
    feed = feed_of(second, listener)
    feeds.append(feed)
    assert feed.start()
    assert first.pause_origin(ORIGIN, 6.0, REASON) == pytest.approx(6.0, abs=0.1)
    kind, origin, seconds, reason = listener.next()
    assert (kind, origin, reason) == ("pause", ORIGIN, REASON)
    assert seconds == pytest.approx(6.0, abs=0.1)
    # A shorter pause changes nothing and is not news; a longer one is.
    first.pause_origin(ORIGIN, 2.0, "shorter")
    first.pause_origin(ORIGIN, 9.0, "longer")
    assert listener.next()[-1] == "longer"
    assert listener.nothing_pending()


def test_the_feed_stops_its_thread_at_once(redis_server: RedisServer) -> None:
    listener = Listener()
    feed = feed_of(layered(redis_server), listener)
    assert feed.start() and feed.running
    started = time.monotonic()
    feed.stop()
    assert not feed.running
    assert time.monotonic() - started < 1.0
    assert feed_threads() == []


def test_crawls_on_other_databases_do_not_hear_each_others_pauses(
    redis_server: RedisServer, feeds: list[PauseFeed]
) -> None:
    other, same = Listener(), Listener()
    for store, listener in ((layered(redis_server, db=1), other), (layered(redis_server), same)):
        feeds.append(feed_of(store, listener))
        assert feeds[-1].start()
    layered(redis_server).pause_origin(ORIGIN, 6.0, REASON)
    assert same.next()[:2] == ("pause", ORIGIN)
    layered(redis_server, db=1).pause_origin("http://db1.example:80", 6.0, REASON)
    # The database-1 feed hears its own database's pause first: database 0's never came.
    assert other.next()[:2] == ("pause", "http://db1.example:80")


def test_an_outage_is_one_warning_then_the_feed_is_back(
    redis_server: RedisServer, feeds: list[PauseFeed], caplog: pytest.LogCaptureFixture
) -> None:
    stats = Stats()
    store = layered(redis_server, stats)
    listener = Listener()
    feed = feed_of(store, listener)
    feeds.append(feed)
    assert feed.start()
    with caplog.at_level(logging.WARNING, logger="scrapy_googlerobots"):
        redis_server.kill()
        assert listener.next() == ("lost", "ConnectionError")
        # The store's own calls fail too: the same outage, not another WARNING.
        store.pause_origin(ORIGIN, 6.0, REASON)
        store.paused_origins()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    failed = [m for m in warnings if "failed (pause feed: ConnectionError" in m]
    assert len(failed) == 1, warnings
    assert stats["robotstxt/store/outages"] == 1
    assert stats["robotstxt/store/errors"] >= 1
    redis_server.restart()
    assert listener.next() == ("back",)
    # Subscribed again: a pause set now is pushed.
    layered(redis_server).pause_origin(ORIGIN, 4.0, REASON)
    assert listener.next()[:2] == ("pause", ORIGIN)


def test_a_feed_started_while_redis_is_down_subscribes_once_it_is_up(
    redis_server: RedisServer, feeds: list[PauseFeed]
) -> None:
    store = layered(redis_server)
    redis_server.kill()
    listener = Listener()
    feed = feed_of(store, listener)
    feeds.append(feed)
    started = time.monotonic()
    assert not feed.start()
    assert time.monotonic() - started < 2.0, "never a stall"
    assert listener.seen == [("lost", "ConnectionError")]
    redis_server.restart()
    assert listener.next() == ("back",)


def test_stores_without_a_feed_have_none(tmp_path: Any) -> None:
    from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

    store = LayeredPolicyStore(SqlitePolicyStore(tmp_path / "s.db"), description="sqlite")
    listener = Listener()
    assert store.pause_feed(listener.handlers()) is None


@pytest.mark.parametrize(
    "data",
    [b"", b"6000", b"6000 " + ORIGIN.encode(), b"soon http://a.example:80 x", b"-5 a b", b"1 "],
)
def test_a_message_that_is_not_a_pause_is_not_read_as_one(data: bytes) -> None:
    assert read_pause_message(data) is None


def test_the_published_message_reads_back() -> None:
    data = pause_message(ORIGIN, 6000, REASON).encode()
    assert read_pause_message(data) == (ORIGIN, 6.0, REASON)
