"""Parked-request records in the shared stores (SQLite, a real redis-server): keep, forget, adopt.

Each handle on a store is one process (its own owner token and lease); the
contract is the same for both stores, so each test runs on both.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scrapy_googlerobots.stores.base import ParkedStore
from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

from redis_server import RedisServer, require_redis
from store_support import Clock

SCOPE = "pages"
TTL = 30.0

# A handle factory: another process's view of the same store.
Handles = Callable[[], Any]


class _RedisHandles:
    def __init__(self, server: RedisServer) -> None:
        self.server = server

    def __call__(self) -> Any:
        from scrapy_googlerobots.stores.redis import RedisPolicyStore

        return RedisPolicyStore.from_url(self.server.url, timeout=2.0)

    def lapse(self, owner: Any) -> None:
        """``owner``'s lease runs out (it was killed: nobody renews it)."""
        owner.renew_parked_lease(SCOPE, 0.05)
        time.sleep(0.1)


class _SqliteHandles:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = Clock(1_000.0)

    def __call__(self) -> Any:
        return SqlitePolicyStore(self.path, timeout=5.0, clock=self.clock)

    def lapse(self, owner: Any) -> None:
        self.clock.now += TTL + 1
        # The others renew theirs when they adopt; only ``owner`` stays behind.


@pytest.fixture(params=["sqlite", "redis"])
def handles(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        yield _SqliteHandles(tmp_path / "robots.sqlite")
        return
    server = RedisServer(require_redis(), tmp_path)
    server.start()
    try:
        yield _RedisHandles(server)
    finally:
        server.kill()


def test_both_stores_implement_the_protocol(handles: Any) -> None:
    assert isinstance(handles(), ParkedStore)


def test_a_released_request_leaves_nothing_to_adopt(handles: Any) -> None:
    worker, other = handles(), handles()
    worker.keep_parked(SCOPE, "r1", b"one", TTL)
    worker.keep_parked(SCOPE, "r2", b"two", TTL)
    assert worker.forget_parked(SCOPE, ["r1"]) == ["r1"]
    worker.release_parked_lease(SCOPE)
    assert other.adopt_parked(SCOPE, TTL) == [("r2", b"two")]
    assert worker.forget_parked(SCOPE, ["r1", "r2"]) == [], "nothing of it is ours any more"


def test_a_live_owners_records_are_not_adopted(handles: Any) -> None:
    worker, other = handles(), handles()
    worker.keep_parked(SCOPE, "r1", b"one", TTL)
    assert other.adopt_parked(SCOPE, TTL) == []
    assert worker.forget_parked(SCOPE, ["r1"]) == ["r1"]


def test_a_lapsed_lease_is_adopted_by_exactly_one_of_two_adopters(handles: Any) -> None:
    dead, first, second = handles(), handles(), handles()
    payloads = {f"r{i}": bytes([i]) * 10 for i in range(50)}
    for rid, data in payloads.items():
        dead.keep_parked(SCOPE, rid, data, TTL)
    handles.lapse(dead)
    taken = [first.adopt_parked(SCOPE, TTL), second.adopt_parked(SCOPE, TTL)]
    assert sorted(len(batch) for batch in taken) == [0, 50]
    assert dict(taken[0] or taken[1]) == payloads
    adopter = first if taken[0] else second
    assert sorted(adopter.forget_parked(SCOPE, list(payloads))) == sorted(payloads)
    assert dead.forget_parked(SCOPE, ["r0"]) == [], "the dead owner's copy is gone"


def test_an_adopter_renews_its_own_lease(handles: Any) -> None:
    dead, adopter, third = handles(), handles(), handles()
    dead.keep_parked(SCOPE, "r1", b"one", TTL)
    handles.lapse(dead)
    assert adopter.adopt_parked(SCOPE, TTL) == [("r1", b"one")]
    assert third.adopt_parked(SCOPE, TTL) == [], "the adopter is alive: its records stay"


def test_scopes_are_apart(handles: Any) -> None:
    worker, other = handles(), handles()
    worker.keep_parked("spider-a", "r1", b"one", TTL)
    worker.release_parked_lease("spider-a")
    assert other.adopt_parked("spider-b", TTL) == []
    assert other.adopt_parked("spider-a", TTL) == [("r1", b"one")]


# -- several processes -------------------------------------------------------------

_ADOPTERS = 4
_RECORDS = 200


def _adopt_in_a_process(kind: str, where: str, start_at: float) -> list[str]:
    if kind == "sqlite":
        store: Any = SqlitePolicyStore(Path(where), timeout=10.0)
    else:
        from scrapy_googlerobots.stores.redis import RedisPolicyStore

        store = RedisPolicyStore.from_url(where, timeout=5.0)
    while time.time() < start_at:  # all at once
        time.sleep(0.001)
    taken: list[str] = []
    for _ in range(5):
        taken += [rid for rid, _data in store.adopt_parked(SCOPE, TTL)]
    return taken


def _keep_and_exit(path: str) -> None:
    store = SqlitePolicyStore(Path(path))
    for i in range(_RECORDS):
        store.keep_parked(SCOPE, f"r{i}", b"x" * 100, 3_600.0)
    os._exit(0)  # no release: as if killed


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_processes_racing_to_adopt_share_the_records_without_overlap(
    kind: str, tmp_path: Path
) -> None:
    server = None
    if kind == "sqlite":
        where = str(tmp_path / "robots.sqlite")
        dead: Any = SqlitePolicyStore(Path(where))
    else:
        server = RedisServer(require_redis(), tmp_path)
        server.start()
        where = server.url
        from scrapy_googlerobots.stores.redis import RedisPolicyStore

        dead = RedisPolicyStore.from_url(where)
    try:
        for i in range(_RECORDS):
            dead.keep_parked(SCOPE, f"r{i}", b"x" * 100, TTL)
        dead.release_parked_lease(SCOPE)
        start_at = time.time() + 1.5
        with multiprocessing.get_context("spawn").Pool(_ADOPTERS) as pool:
            batches = pool.starmap(
                _adopt_in_a_process, [(kind, where, start_at)] * _ADOPTERS, chunksize=1
            )
    finally:
        if server is not None:
            server.kill()
    adopted = [rid for batch in batches for rid in batch]
    assert sorted(adopted) == sorted(f"r{i}" for i in range(_RECORDS)), "each exactly once"


def test_sqlite_a_dead_processs_records_are_adopted_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "robots.sqlite")
    child = multiprocessing.get_context("spawn").Process(target=_keep_and_exit, args=(path,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    # Its lease runs for an hour, but its process is gone (a JOBDIR crawl SIGKILLed).
    taken = SqlitePolicyStore(Path(path)).adopt_parked(SCOPE, TTL)
    assert len(taken) == _RECORDS
