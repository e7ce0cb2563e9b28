"""Response headers kept in records (issue 28): compact form, SQLite, Redis, old data still read."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import FetchTimings, PolicyRecord, record_after_fetch
from scrapy_googlerobots.stores.compact import HEADERS_MAX, pack, unpack
from scrapy_googlerobots.stores.memory import MemoryPolicyStore
from scrapy_googlerobots.stores.memory_cost import hot_cost
from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

from redis_server import RedisServer, redis_server
from store_support import RECORDS, Clock

__all__ = ["redis_server"]  # the fixture, imported for the tests below

WITH_HEADERS = RECORDS["rules_with_headers"]
NGINX = (
    b"Server: nginx\r\nDate: Fri, 27 Nov 2026 05:12:12 GMT\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 1234\r\nLast-Modified: Tue, 01 Oct 2024 10:11:12 GMT\r\n"
    b'Connection: keep-alive\r\nEtag: "66fbcb70-4d2"\r\nAccept-Ranges: bytes\r\n'
)
# pack() of RECORDS["rules"]-like record by the version before headers were kept.
OLD_PACKED = bytes.fromhex(
    "c1010300000000000024400000000000003440c80000000b2d4e2dd24d4c4fcd2bb152d0e2"
    "72c92c4eccc9c92fb752d0afe00200"
)
TIMINGS = FetchTimings(86_400.0, 60.0, 604_800.0, 30.0, 600.0, 512_000)


def test_records_keep_headers_with_rules_only() -> None:
    def fetched(outcome: FetchOutcome) -> PolicyRecord:
        return record_after_fetch(
            "https://a:443",
            outcome,
            status=200 if outcome is FetchOutcome.RULES else 404,
            body=b"Disallow: /x\n",
            cache_control=None,
            previous=None,
            now=5.0,
            timings=TIMINGS,
            headers=NGINX,
        )

    assert fetched(FetchOutcome.RULES).headers == NGINX
    assert fetched(FetchOutcome.ALLOW_ALL).headers is None


def test_compact_form_round_trips_headers_and_costs_little() -> None:
    assert unpack(WITH_HEADERS.origin, pack(WITH_HEADERS)) == WITH_HEADERS
    record = dataclasses.replace(WITH_HEADERS, headers=NGINX)
    without = dataclasses.replace(record, headers=None)
    assert unpack(record.origin, pack(record)) == record
    extra = len(pack(record)) - len(pack(without))
    print(f"figure: a {len(NGINX)}-byte nginx header block adds {extra} bytes packed")
    assert extra < 120
    empty = dataclasses.replace(record, body=b"", headers=b"")
    assert unpack(empty.origin, pack(empty)) == empty


def test_compact_form_of_the_previous_version_is_still_read() -> None:
    old = unpack("https://a:443", OLD_PACKED)
    assert old == PolicyRecord(
        "https://a:443",
        FetchOutcome.RULES,
        body=b"User-agent: *\nDisallow: /x\n",
        status=200,
        fetched_at=10.0,
        expires_at=20.0,
    )
    assert old.headers is None


def test_compact_form_refuses_headers_longer_than_its_data() -> None:
    packed = bytearray(pack(WITH_HEADERS))
    size_at = 3 + 16 + 4  # head, status
    packed[size_at : size_at + 4] = (10**6).to_bytes(4, "little")
    with pytest.raises(ValueError, match="headers"):
        unpack(WITH_HEADERS.origin, bytes(packed))


def test_oversized_headers_are_not_kept() -> None:
    record = dataclasses.replace(WITH_HEADERS, headers=b"X: " + b"y" * HEADERS_MAX + b"\r\n")
    assert unpack(record.origin, pack(record)).headers is None


def test_memory_store_counts_headers_in_its_budget() -> None:
    store = MemoryPolicyStore(hot_size=1)
    store.put(WITH_HEADERS)
    assert hot_cost(WITH_HEADERS) > hot_cost(dataclasses.replace(WITH_HEADERS, headers=None))
    store.put(RECORDS["rules"])  # WITH_HEADERS goes quiet, then wakes up
    woken = store.get(WITH_HEADERS.origin)
    assert woken == WITH_HEADERS and woken is not WITH_HEADERS


def test_sqlite_migrates_a_file_without_the_headers_column(tmp_path: Path) -> None:
    db = tmp_path / "before-headers.sqlite"
    # The table exactly as the previous version created it, with a row.
    with sqlite3.connect(db) as conn:
        conn.execute(
            """CREATE TABLE robotstxt_policy (
            origin TEXT PRIMARY KEY, outcome TEXT NOT NULL, body_blob BLOB, status INTEGER,
            fetched_at REAL NOT NULL, expires_at REAL NOT NULL, unreachable_since REAL,
            failures INTEGER NOT NULL, retry_at REAL, keep_until REAL NOT NULL,
            body_codec INTEGER NOT NULL DEFAULT 0)"""
        )
        conn.execute(
            "INSERT INTO robotstxt_policy VALUES "
            "('https://old:443', 'rules', ?, 200, 5.0, 9e9, NULL, 0, NULL, 9e9, 0)",
            (b"Disallow: /old\n",),
        )
    store = SqlitePolicyStore(db, clock=Clock(0.0))
    old = store.get("https://old:443")
    assert old is not None and old.body == b"Disallow: /old\n" and old.headers is None
    store.put(WITH_HEADERS)
    assert store.get(WITH_HEADERS.origin) == WITH_HEADERS
    store.close()
    reopened = SqlitePolicyStore(db, clock=Clock(0.0))
    assert reopened.get(WITH_HEADERS.origin) == WITH_HEADERS
    # A version that does not know the column rewrites the row: the headers it
    # left behind belong to another fetch and are not used.
    reopened._conn.execute(
        "UPDATE robotstxt_policy SET fetched_at = 4000.0, body_blob = NULL WHERE origin = ?",
        (WITH_HEADERS.origin,),
    )
    assert reopened.get(WITH_HEADERS.origin).headers is None  # type: ignore[union-attr]
    reopened.close()


def test_redis_keeps_headers_and_reads_records_written_before(
    redis_server: RedisServer,
) -> None:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    store = RedisPolicyStore.from_url(redis_server.url, clock=Clock(0.0))
    store.put(WITH_HEADERS)
    assert store.get(WITH_HEADERS.origin) == WITH_HEADERS
    store.client.set(store.prefix + "https://a:443", OLD_PACKED)
    old = store.get("https://a:443")
    assert old is not None and old.headers is None and old.body == b"User-agent: *\nDisallow: /x\n"
    store.close()
