"""Shared by the store tests: sample records, a stats and a clock double, the lease contract."""

from __future__ import annotations

from collections import Counter

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
