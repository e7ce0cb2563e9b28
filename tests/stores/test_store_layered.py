"""The local layer in front of shared stores: hot path, re-reads, degradation and recovery."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import signal
import time
from collections import Counter
from typing import Any

import pytest

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.robotstxt import parse
from scrapy_googlerobots.stores.base import PolicyStore
from scrapy_googlerobots.stores.layered import LayeredPolicyStore
from scrapy_googlerobots.stores.memory import MemoryPolicyStore

from redis_server import RedisServer, redis_server
from store_support import Clock, Stats

__all__ = ["redis_server"]  # the fixture, imported for the tests below

ORIGIN = "https://example.com:443"
FRESH = PolicyRecord(
    ORIGIN,
    FetchOutcome.RULES,
    b"User-agent: *\nDisallow: /x\n",
    200,
    fetched_at=1_000.0,
    expires_at=90_000.0,
)


class SharedStore(MemoryPolicyStore):
    """An in-process stand-in for a shared store that can be made to fail or lag."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.failing = False
        self.lag = 0.0
        self.lease_free = True

    def _enter(self, name: str) -> None:
        self.calls[name] += 1
        if self.failing:
            raise ConnectionError("store down")
        if self.lag:
            time.sleep(self.lag)  # simulates a slow server, waits for nothing

    def get(self, origin: str) -> PolicyRecord | None:
        self._enter("get")
        return super().get(origin)

    def put(self, record: PolicyRecord) -> None:
        self._enter("put")
        super().put(record)

    def acquire_fetch_lease(self, origin: str, ttl: float) -> bool:
        self._enter("acquire")
        return self.lease_free


class Setup:
    def __init__(self, **kwargs: Any) -> None:
        self.shared = SharedStore()
        self.clock = Clock(2_000.0)
        self.monotonic = Clock(0.0)
        self.stats = Stats()
        kwargs.setdefault("local_ttl", 60.0)
        self.store = LayeredPolicyStore(
            self.shared,
            description="test-store",
            stats=self.stats,
            clock=self.clock,
            monotonic=self.monotonic,
            **kwargs,
        )


def test_implements_the_protocol() -> None:
    assert isinstance(Setup().store, PolicyStore)


def test_hot_path_reads_memory_until_local_ttl() -> None:
    s = Setup()
    s.shared.put(FRESH)
    assert s.store.get(ORIGIN) == FRESH
    reads = s.shared.calls["get"]
    for _ in range(100):
        assert s.store.get(ORIGIN) == FRESH
    assert s.shared.calls["get"] == reads, "warm local layer: no shared-store round trip"
    s.monotonic.now += 59.9
    s.store.get(ORIGIN)
    assert s.shared.calls["get"] == reads
    s.monotonic.now += 0.1
    s.store.get(ORIGIN)
    assert s.shared.calls["get"] == reads + 1, "re-read after ROBOTSTXT_LOCAL_CACHE_TTL"


def test_put_writes_through_and_counts_as_fresh() -> None:
    s = Setup()
    s.store.put(FRESH)
    assert s.shared.get(ORIGIN) == FRESH
    reads = s.shared.calls["get"]
    assert s.store.get(ORIGIN) == FRESH
    assert s.shared.calls["get"] == reads


def test_another_workers_write_is_seen_after_local_ttl() -> None:
    s = Setup()
    s.store.put(FRESH)
    newer = PolicyRecord(ORIGIN, FetchOutcome.ALLOW_ALL, None, 404, 3_000.0, 95_000.0)
    s.shared.put(newer)
    assert s.store.get(ORIGIN) == FRESH
    s.monotonic.now += 60
    assert s.store.get(ORIGIN) == newer


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(FRESH, id="expired_copy"),
        pytest.param(
            PolicyRecord(
                ORIGIN,
                FetchOutcome.UNREACHABLE,
                None,
                503,
                unreachable_since=1_000.0,
                failures=2,
                retry_at=2_030.0,
            ),
            id="unreachable_retry_time_came",
        ),
    ],
)
def test_a_record_due_for_a_fetch_is_reread_every_time(record: PolicyRecord) -> None:
    s = Setup()
    s.store.put(record)
    s.clock.now = max(record.expires_at, record.retry_at or 0)
    reads = s.shared.calls["get"]
    s.store.get(ORIGIN)
    s.store.get(ORIGIN)
    # Another worker may hold the lease and be writing the new copy now.
    assert s.shared.calls["get"] == reads + 2


def test_parsed_rules_survive_a_reread_of_the_same_body() -> None:
    s = Setup()
    rules = parse(FRESH.body or b"")
    s.store.put(PolicyRecord(**{**_fields(FRESH), "rules": rules}))
    s.monotonic.now += 60
    assert s.store.get(ORIGIN).rules is rules  # type: ignore[union-attr]
    changed = PolicyRecord(**{**_fields(FRESH), "body": b"User-agent: *\nDisallow: /y\n"})
    s.shared.put(changed)
    s.monotonic.now += 60
    assert s.store.get(ORIGIN).rules is None  # type: ignore[union-attr]


def _fields(record: PolicyRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__slots__}  # type: ignore[attr-defined]


def test_outage_degrades_once_then_recovers(caplog: pytest.LogCaptureFixture) -> None:
    s = Setup()
    s.store.put(FRESH)
    s.shared.failing = True
    s.monotonic.now += 60  # local copy due for a re-read
    with caplog.at_level(logging.DEBUG, logger="scrapy_googlerobots.stores.layered"):
        assert s.store.get(ORIGIN) == FRESH, "the local copy answers during the outage"
        other = PolicyRecord(
            "http://other.example:80", FetchOutcome.ALLOW_ALL, None, 404, 2_000.0, 9_000.0
        )
        for _ in range(50):
            s.store.get(ORIGIN)
            s.store.put(other)
            assert s.store.acquire_fetch_lease("http://new.example:80", 30)
        assert s.shared.calls["get"] == 1, "no calls while the store is out, until the probe"
        assert s.store.degraded
        s.shared.failing = False
        s.monotonic.now += 1  # first probe pause
        assert s.store.get(ORIGIN) == FRESH
        assert not s.store.degraded
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(warnings) == 1 and "test-store" in warnings[0].getMessage()
    assert len(infos) == 1 and "is back" in infos[0].getMessage()
    assert s.stats["robotstxt/store/errors"] == 1
    assert s.stats["robotstxt/store/outages"] == 1
    assert s.shared.get(other.origin) == other, "records written during the outage pushed"


def test_a_record_written_during_an_outage_is_served_at_once() -> None:
    s = Setup()
    s.store.put(FRESH)
    s.shared.failing = True
    newer = PolicyRecord(ORIGIN, FetchOutcome.ALLOW_ALL, None, 404, 3_000.0, 95_000.0)
    s.store.put(newer)
    assert s.store.get(ORIGIN) == newer


def test_records_written_during_an_outage_do_not_overwrite_newer_ones() -> None:
    s = Setup()
    s.shared.failing = True
    mine = PolicyRecord(ORIGIN, FetchOutcome.UNREACHABLE, None, 503, unreachable_since=1.0)
    s.store.put(mine)
    s.shared.failing = False
    s.shared.put(FRESH)  # another worker, meanwhile
    s.monotonic.now += 1
    s.store.get("http://probe.example:80")
    assert s.shared.get(ORIGIN) == FRESH


def test_a_copy_fetched_during_an_outage_replaces_an_older_shared_one() -> None:
    s = Setup()
    s.store.put(FRESH)
    s.shared.failing = True
    refetched = dataclasses.replace(
        FRESH, body=b"User-agent: *\nDisallow: /y\n", fetched_at=3_000.0
    )
    s.store.put(refetched)
    s.shared.failing = False
    s.monotonic.now += 1
    s.store.get("http://probe.example:80")
    assert s.shared.get(ORIGIN) == refetched


def test_probe_pause_grows_while_the_store_stays_down() -> None:
    s = Setup()
    s.shared.failing = True
    probes = []
    for _ in range(400):
        s.monotonic.now += 0.5
        before = s.shared.calls["get"]
        s.store.get(ORIGIN)
        if s.shared.calls["get"] > before:
            probes.append(s.monotonic.now)
    gaps = [b - a for a, b in itertools.pairwise(probes)]
    assert gaps[:6] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert set(gaps[6:]) == {30.0}
    assert s.stats["robotstxt/store/outages"] == 1


def test_slow_store_counts_as_an_outage(caplog: pytest.LogCaptureFixture) -> None:
    s = Setup(timeout=0.05)
    s.shared.put(FRESH)
    s.shared.lag = 0.06
    with caplog.at_level(logging.WARNING):
        assert s.store.get(ORIGIN) == FRESH, "a late answer is still used"
    assert s.store.degraded
    assert s.stats["robotstxt/store/errors"] == 1
    assert "took" in caplog.records[0].getMessage()


def test_leases_come_from_the_shared_store_unless_it_is_down() -> None:
    s = Setup()
    s.shared.lease_free = False
    assert not s.store.acquire_fetch_lease(ORIGIN, 30)
    s.shared.failing = True
    assert s.store.acquire_fetch_lease(ORIGIN, 30), "no coordination possible: fetch yourself"


# -- against a real redis-server --------------------------------------------


def _redis_layer(
    server: RedisServer, stats: Stats, monotonic: Clock, timeout: float = 0.5
) -> LayeredPolicyStore:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    shared = RedisPolicyStore.from_url(server.url, timeout=timeout)
    return LayeredPolicyStore(
        shared,
        description=server.url,
        stats=stats,
        timeout=timeout,
        monotonic=monotonic,
        local_ttl=60.0,
    )


def test_redis_killed_and_restarted(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    stats, monotonic = Stats(), Clock(0.0)
    # A store timeout far longer than the bound below: one wait on the dead store
    # would fail the test however busy the machine, and no load makes 60 calls
    # that do not wait take 10 s.
    store = _redis_layer(redis_server, stats, monotonic, timeout=30.0)
    store.put(FRESH)
    redis_server.kill()
    monotonic.now += 60
    written = PolicyRecord("http://during.example:80", FetchOutcome.ALLOW_ALL, None, 404, 1.0, 2e9)
    with caplog.at_level(logging.INFO, logger="scrapy_googlerobots.stores.layered"):
        started = time.monotonic()
        for _ in range(20):
            assert store.get(ORIGIN) == FRESH
            store.put(written)
            assert store.acquire_fetch_lease(ORIGIN, 30)
        assert time.monotonic() - started < 10, "a dead store never blocks the crawl"
        redis_server.restart()
        monotonic.now += 1
        assert store.get(ORIGIN) == FRESH
    # Only the store's own lines: a client library may log too (redis-py at DEBUG when
    # an earlier test left the root logger there).
    levels = [r.levelno for r in caplog.records if r.name == "scrapy_googlerobots.stores.layered"]
    assert levels == [logging.WARNING, logging.INFO]
    assert stats["robotstxt/store/errors"] >= 1
    assert stats["robotstxt/store/outages"] == 1
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    fresh_redis = RedisPolicyStore.from_url(redis_server.url)
    assert fresh_redis.get(written.origin) == written, "outage writes pushed on recovery"


def test_hung_redis_costs_one_timeout(redis_server: RedisServer) -> None:
    stats, monotonic = Stats(), Clock(0.0)
    # 1 s: the bounds below stay a second (for a busy machine) from one wait too
    # few or too many, and 100 calls that do not wait take milliseconds.
    store = _redis_layer(redis_server, stats, monotonic, timeout=1.0)
    store.put(FRESH)
    monotonic.now += 60
    assert redis_server.process is not None
    os.kill(redis_server.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert store.get(ORIGIN) == FRESH
        first = time.monotonic() - started
        started = time.monotonic()
        for _ in range(100):
            assert store.get(ORIGIN) == FRESH
        rest = time.monotonic() - started
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    assert 0.9 < first < 2, "one ROBOTSTXT_CACHE_STORE_TIMEOUT (1 s here), not two"
    assert rest < 0.5, "no further waits while the store is out"
    assert stats["robotstxt/store/errors"] == 1
