"""Shared by the store tests: sample records, a stats and a clock double, the lease
contract, and workers started at the same moment."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.stores.base import PolicyStore

RECORDS = {
    "rules": PolicyRecord(
        origin="https://example.com:443",
        outcome=FetchOutcome.RULES,
        body=b"User-agent: *\nDisallow: /private\n",
        status=200,
        fetched_at=1_000.0,
        expires_at=87_400.0,
    ),
    "allow_all_404": PolicyRecord(
        origin="http://example.com:80",
        outcome=FetchOutcome.ALLOW_ALL,
        status=404,
        fetched_at=1_000.5,
        expires_at=2_000.25,
    ),
    "unreachable_never_good": PolicyRecord(
        origin="http://down.example:8080",
        outcome=FetchOutcome.UNREACHABLE,
        status=503,
        unreachable_since=500.0,
        failures=3,
        retry_at=740.0,
    ),
    "stale_good_copy_during_outage": PolicyRecord(
        origin="ftp://files.example:21",
        outcome=FetchOutcome.RULES,
        body=b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /\xff\x00\r\n",
        status=200,
        fetched_at=10.0,
        expires_at=20.0,
        unreachable_since=25.0,
        failures=1,
        retry_at=55.0,
    ),
    "empty_body": PolicyRecord(
        origin="http://[::1]:8000",
        outcome=FetchOutcome.RULES,
        body=b"",
        status=200,
        fetched_at=1.0,
        expires_at=2.0,
    ),
    "rules_with_headers": PolicyRecord(
        origin="https://served.example:443",
        outcome=FetchOutcome.RULES,
        body=b"User-agent: *\nDisallow: /x\nSitemap: https://served.example/s.xml\n",
        status=200,
        fetched_at=3_000.0,
        expires_at=89_400.0,
        headers=b"Content-Type: text/plain\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n",
    ),
}


class Stats(Counter[str]):
    """The slice of Scrapy's stats collector the stores use."""

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self[key] += count


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def check_lease_exclusive_until_released(a: PolicyStore, b: PolicyStore) -> None:
    """The lease contract, for two handles (two processes) on one shared store."""
    origin = "http://example.com:80"
    assert a.acquire_fetch_lease(origin, 30)
    assert not b.acquire_fetch_lease(origin, 30)
    assert a.acquire_fetch_lease(origin, 30), "the holder may renew its own lease"
    b.release_fetch_lease(origin)  # not the holder: no effect
    assert not b.acquire_fetch_lease(origin, 30)
    a.release_fetch_lease(origin)
    assert b.acquire_fetch_lease(origin, 30)
    assert a.acquire_fetch_lease("http://other.example:80", 30), "leases are per origin"


def at_once(workers: int, work: Callable[[], None], *, timeout: float = 60.0) -> None:
    """Run ``work`` in ``workers`` threads released together; re-raise the first failure.

    The threads are daemons and every wait is bounded, so a worker that fails
    or hangs fails the test instead of keeping the test process alive.
    """
    start = threading.Barrier(workers, timeout=timeout)
    failures: list[BaseException] = []
    lock = threading.Lock()

    def run() -> None:
        try:
            start.wait()
            work()
        except BaseException as exc:  # reported below, in the test's own thread
            with lock:
                failures.append(exc)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    stuck = sum(thread.is_alive() for thread in threads)
    assert not stuck, f"{stuck} of {workers} workers still running after {timeout} s"
    if failures:
        # A broken barrier only echoes another worker's failure: raise that one.
        real = [exc for exc in failures if not isinstance(exc, threading.BrokenBarrierError)]
        raise (real or failures)[0]


def write_first_layout(db: Path, origin: str, body: bytes) -> None:
    """A SQLite file with the table and one row exactly as the first version wrote them
    (a ``body`` column, no codec, no kept headers)."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            """CREATE TABLE robotstxt_policy (
            origin TEXT PRIMARY KEY, outcome TEXT NOT NULL, body BLOB, status INTEGER,
            fetched_at REAL NOT NULL, expires_at REAL NOT NULL, unreachable_since REAL,
            failures INTEGER NOT NULL, retry_at REAL, keep_until REAL NOT NULL)"""
        )
        conn.execute(
            "INSERT INTO robotstxt_policy "
            "VALUES (?, 'rules', ?, 200, 5.0, 9e9, NULL, 0, NULL, 9e9)",
            (origin, body),
        )
