"""Send slots and pauses (PaceStore): one contract for memory, SQLite and a real Redis.

Two handles on one store stand for two workers. Slots are checked as the
waits each reservation returns, so no test sleeps for a slot to come.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scrapy_googlerobots.stores.base import PaceStore
from scrapy_googlerobots.stores.layered import PACE_LOCAL_STAT, LayeredPolicyStore
from scrapy_googlerobots.stores.memory import MemoryPolicyStore
from scrapy_googlerobots.stores.pace import LocalPace
from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

from redis_server import RedisServer, redis_server
from store_support import Stats, at_once

__all__ = ["redis_server"]

ORIGIN = "http://paced.example:80"
# Calls between two reservations take a little time; slots are compared within this.
SLACK = 0.05

Pair = tuple[PaceStore, PaceStore]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def two_workers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Pair]]:
    """A factory of two handles on one store of each kind."""
    if request.param == "memory":
        store = MemoryPolicyStore()  # one process: both "workers" are the same store
        yield lambda: (store, store)
    elif request.param == "sqlite":
        path = tmp_path / "pace.sqlite"
        yield lambda: (SqlitePolicyStore(path), SqlitePolicyStore(path))
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        from scrapy_googlerobots.stores.redis import RedisPolicyStore

        yield lambda: (
            RedisPolicyStore.from_url(server.url),
            RedisPolicyStore.from_url(server.url),
        )


def test_every_store_is_a_pace_store(two_workers: Callable[[], Pair]) -> None:
    a, b = two_workers()
    assert isinstance(a, PaceStore) and isinstance(b, PaceStore)


def test_slots_are_gap_apart_whichever_worker_reserves(two_workers: Callable[[], Pair]) -> None:
    a, b = two_workers()
    assert a.reserve_send(ORIGIN, 2.0) == pytest.approx(0.0, abs=SLACK)
    assert b.reserve_send(ORIGIN, 2.0) == pytest.approx(2.0, abs=SLACK)
    assert a.reserve_send(ORIGIN, 2.0) == pytest.approx(4.0, abs=SLACK)
    # Another origin has its own slots.
    assert b.reserve_send("http://other.example:80", 2.0) == pytest.approx(0.0, abs=SLACK)


def test_a_pause_holds_every_worker_and_a_longer_one_is_kept(
    two_workers: Callable[[], Pair],
) -> None:
    a, b = two_workers()
    reason = "Retry-After: 6 from <429 http://paced.example/p/3>"
    assert a.pause_origin(ORIGIN, 6.0, reason) == pytest.approx(6.0, abs=SLACK)
    # A shorter pause asked later does not shorten it.
    assert b.pause_origin(ORIGIN, 1.0, "shorter") == pytest.approx(6.0, abs=SLACK)
    assert b.reserve_send(ORIGIN, 0.0) == pytest.approx(6.0, abs=SLACK)
    # A paced origin's next slot comes after the pause, then gap after that.
    assert a.reserve_send(ORIGIN, 2.0) == pytest.approx(6.0, abs=SLACK)
    assert b.reserve_send(ORIGIN, 2.0) == pytest.approx(8.0, abs=SLACK)
    [(origin, (left, said))] = b.paused_origins().items()
    assert origin == ORIGIN and said == reason and left == pytest.approx(6.0, abs=SLACK)


def test_a_pause_that_ended_is_not_listed(two_workers: Callable[[], Pair]) -> None:
    a, b = two_workers()
    a.pause_origin(ORIGIN, 0.0, "over at once")
    assert b.paused_origins() == {}
    assert b.reserve_send(ORIGIN, 0.0) == pytest.approx(0.0, abs=SLACK)


def test_reservations_at_once_never_share_a_slot(
    two_workers: Callable[[], Pair], request: pytest.FixtureRequest
) -> None:
    """Four threads, each with its own handle, reserving at the same moments."""
    if "memory" in request.node.callspec.id:
        pytest.skip("the memory store has one user: the reactor's thread")
    workers = 4
    gap, each = 0.1, 10
    slots: list[float] = []
    lock = threading.Lock()

    def reserve() -> None:
        store, _ = two_workers()  # connections of its own, opened in its thread, together
        for _ in range(each):
            # The slot as an absolute time on this machine's clock.
            slot = time.monotonic() + store.reserve_send(ORIGIN, gap)
            with lock:
                slots.append(slot)

    at_once(workers, reserve)
    assert len(slots) == workers * each
    slots.sort()
    gaps = [later - earlier for earlier, later in itertools.pairwise(slots)]
    assert min(gaps) >= gap - SLACK
    # Nothing reserved more than it had to: the last slot is (n - 1) gaps after the first.
    assert slots[-1] - slots[0] == pytest.approx(gap * (len(slots) - 1), abs=0.5)


def test_local_pace_forgets_past_origins() -> None:
    now = [0.0]
    pace = LocalPace(lambda: now[0])
    for n in range(2048):
        pace.reserve_send(f"http://o{n}.example:80", 1.0)
        now[0] += 0.01
    # Reservations more than a gap ago are gone; the last second's are kept.
    assert 0 < len(pace._origins) <= 1100


def test_redis_keys_expire_and_use_redis_clock(redis_server: RedisServer) -> None:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    # A worker whose clock is a day off paces just the same: Redis keeps the time.
    skewed = RedisPolicyStore.from_url(redis_server.url, clock=lambda: time.time() + 86_400)
    right = RedisPolicyStore.from_url(redis_server.url)
    assert skewed.reserve_send(ORIGIN, 3.0) == pytest.approx(0.0, abs=SLACK)
    assert right.reserve_send(ORIGIN, 3.0) == pytest.approx(3.0, abs=SLACK)
    right.pause_origin(ORIGIN, 10.0, "Retry-After: 10")
    client = redis_server.client()
    pttl = client.pttl(f"robotstxt:pace:{ORIGIN}")  # type: ignore[attr-defined]
    assert 60_000 < pttl <= 71_000  # the pause, and a minute for stragglers
    assert client.zscore("robotstxt:pauses", ORIGIN) is not None  # type: ignore[attr-defined]


def test_redis_outage_paces_per_worker_with_one_warning(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    stats = Stats()
    # A store timeout far longer than the bound below: one wait on the dead store
    # fails the test however busy the machine.
    store = LayeredPolicyStore(
        RedisPolicyStore.from_url(redis_server.url, timeout=30.0),
        description="redis",
        timeout=30.0,
        stats=stats,
    )
    assert store.shares_pace
    store.reserve_send(ORIGIN, 1.0)
    redis_server.kill()
    with caplog.at_level(logging.WARNING, logger="scrapy_googlerobots.stores.layered"):
        started = time.monotonic()
        waits = [store.reserve_send(ORIGIN, 1.0) for _ in range(5)]
        store.pause_origin("http://paused.example:80", 5.0, "Retry-After: 5")
        elapsed = time.monotonic() - started
    assert elapsed < 10, "a dead store never stalls pacing"
    assert not store.shares_pace
    # Paced by this worker alone: slots still a second apart, from its own clock.
    assert [round(w) for w in waits] == [0, 1, 2, 3, 4]
    assert "http://paused.example:80" in store.paused_origins()
    ours = [r for r in caplog.records if r.name == "scrapy_googlerobots.stores.layered"]
    pace_lines = [r for r in ours if "paces origins" in r.getMessage()]
    assert len(pace_lines) == 1 and pace_lines[0].levelno == logging.WARNING
    assert stats[PACE_LOCAL_STAT] == 6
