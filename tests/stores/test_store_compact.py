"""The compact record form (issue 21): round trips, bad input, and what SQLite and Redis keep.

Shared stores write bodies deflated and still read records of the earlier
formats (SQLite rows with a raw body, Redis values with a JSON header).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.stores.compact import MAX_BODY, deflate, inflate, pack, unpack
from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

from redis_server import RedisServer, redis_server
from store_support import RECORDS, Clock, write_first_layout

__all__ = ["redis_server"]

# Repetitive like a real robots.txt, so deflate has something to find.
BIG_BODY = b"User-agent: *\n" + b"".join(b"Disallow: /dir%d/\n" % i for i in range(2_000))


@pytest.mark.parametrize("record", RECORDS.values(), ids=RECORDS.keys())
def test_pack_round_trip(record: PolicyRecord) -> None:
    assert unpack(record.origin, pack(record)) == record


def test_pack_keeps_every_field_exactly() -> None:
    record = PolicyRecord(
        origin="https://a.example:443",
        outcome=FetchOutcome.RULES,
        body=BIG_BODY,
        status=-7,
        fetched_at=1_764_000_000.123456789,
        expires_at=1e300,
        unreachable_since=0.1 + 0.2,
        failures=2**32 - 1,
        retry_at=-0.0,
    )
    back = unpack(record.origin, pack(record))
    assert back == record
    assert [getattr(back, f.name) for f in dataclasses.fields(back)] == [
        getattr(record, f.name) for f in dataclasses.fields(record)
    ]


def test_packed_body_is_compressed() -> None:
    record = PolicyRecord("https://a:443", FetchOutcome.RULES, body=BIG_BODY, status=200)
    assert len(pack(record)) < len(BIG_BODY) // 5


@pytest.mark.parametrize(
    "data",
    [b"", b"\xc1", b"{}", b"\xc1\x09\x00" + bytes(16), b"\xc1\x01\x01" + bytes(16) + b"zz"],
    ids=["empty", "short", "json", "unknown_outcome", "bad_deflate"],
)
def test_unpack_rejects_what_it_did_not_write(data: bytes) -> None:
    with pytest.raises(ValueError):
        unpack("http://a:80", data)


def test_unpack_rejects_trailing_bytes() -> None:
    data = pack(RECORDS["allow_all_404"]) + b"x"
    with pytest.raises(ValueError, match="trailing"):
        unpack("http://a:80", data)


def test_inflate_bounds_what_it_expands() -> None:
    bomb = deflate(b"\0" * (MAX_BODY + 1))
    with pytest.raises(ValueError, match="MAX_BODY"):
        inflate(bomb)
    assert inflate(deflate(b"abc" * 1000)) == b"abc" * 1000
    with pytest.raises(ValueError, match="truncated"):
        inflate(deflate(BIG_BODY)[:-5])


# -- SQLite -------------------------------------------------------------------


def test_sqlite_stores_the_body_deflated(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    store = SqlitePolicyStore(db, clock=Clock(0.0))
    record = PolicyRecord("https://a:443", FetchOutcome.RULES, body=BIG_BODY, expires_at=9e9)
    store.put(record)
    assert store.get(record.origin) == record
    store.close()
    with sqlite3.connect(db) as conn:
        (stored,) = conn.execute("SELECT length(body_blob) FROM robotstxt_policy").fetchone()
    assert stored < len(BIG_BODY) // 5


def test_sqlite_reads_a_file_written_before_compression(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    write_first_layout(db, "https://old:443", BIG_BODY)
    store = SqlitePolicyStore(db, clock=Clock(0.0))
    old = store.get("https://old:443")
    assert old is not None and old.body == BIG_BODY and old.outcome is FetchOutcome.RULES
    new = PolicyRecord("https://new:443", FetchOutcome.RULES, body=b"Disallow: /", expires_at=9e9)
    store.put(new)
    assert store.get("https://new:443") == new
    assert store.get("https://old:443") == old
    store.close()
    # An earlier version reading the file now fails (and falls back to memory)
    # rather than taking a deflated body for robots.txt text.
    with sqlite3.connect(db) as conn, pytest.raises(sqlite3.OperationalError, match="body"):
        conn.execute("SELECT outcome, body FROM robotstxt_policy")


def test_sqlite_unreadable_body_is_unknown(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    store = SqlitePolicyStore(db, clock=Clock(0.0))
    store.put(PolicyRecord("https://a:443", FetchOutcome.RULES, body=b"x", expires_at=9e9))
    store._conn.execute("UPDATE robotstxt_policy SET body_blob = x'00ff00'")
    assert store.get("https://a:443") is None


# -- Redis --------------------------------------------------------------------


def test_redis_stores_the_compact_form(redis_server: RedisServer) -> None:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    store = RedisPolicyStore.from_url(redis_server.url, clock=Clock(0.0))
    record = PolicyRecord("https://a:443", FetchOutcome.RULES, body=BIG_BODY, expires_at=9e9)
    store.put(record)
    raw = redis_server.client().get("robotstxt:https://a:443")  # type: ignore[attr-defined]
    assert len(raw) < len(BIG_BODY) // 5
    assert store.get(record.origin) == record


def test_redis_reads_the_earlier_json_format(redis_server: RedisServer) -> None:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    header = {
        "v": 1,
        "outcome": "rules",
        "status": 200,
        "fetched_at": 5.0,
        "expires_at": 9e9,
        "unreachable_since": None,
        "failures": 0,
        "retry_at": None,
        "has_body": True,
    }
    value = json.dumps(header).encode() + b"\n" + BIG_BODY
    redis_server.client().set("robotstxt:https://old:443", value)  # type: ignore[attr-defined]
    store = RedisPolicyStore.from_url(redis_server.url, clock=Clock(0.0))
    assert store.get("https://old:443") == PolicyRecord(
        "https://old:443",
        FetchOutcome.RULES,
        body=BIG_BODY,
        status=200,
        fetched_at=5.0,
        expires_at=9e9,
    )
