"""The Redis policy store against a real redis-server: records, key lifetimes, leases."""

from __future__ import annotations

import time
from typing import Any

import pytest

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.stores.base import PolicyStore

from redis_server import RedisServer, redis_server
from store_support import RECORDS, Clock, check_lease_exclusive_until_released

redis = pytest.importorskip("redis", reason="the redis package (the [redis] extra) is missing")

from scrapy_googlerobots.stores.redis import (  # noqa: E402 - after the skip
    RedisPolicyStore,
    decode_record,
    encode_record,
    redact_url,
)

__all__ = ["redis_server"]  # the fixture, imported for the tests below

DAY = 86_400.0


def make_store(server: RedisServer, **kwargs: Any) -> RedisPolicyStore:
    kwargs.setdefault("clock", Clock(0.0))
    return RedisPolicyStore.from_url(server.url, timeout=1.0, **kwargs)


def test_implements_the_protocol(redis_server: RedisServer) -> None:
    assert isinstance(make_store(redis_server), PolicyStore)


@pytest.mark.parametrize("record", RECORDS.values(), ids=RECORDS.keys())
def test_round_trip(redis_server: RedisServer, record: PolicyRecord) -> None:
    writer, reader = make_store(redis_server), make_store(redis_server)
    writer.put(record)
    assert reader.get(record.origin) == record


@pytest.mark.parametrize("record", RECORDS.values(), ids=RECORDS.keys())
def test_codec_round_trip(record: PolicyRecord) -> None:
    assert decode_record(record.origin, encode_record(record)) == record


@pytest.mark.parametrize(
    "data",
    [b"", b"garbage", b'{"v":99}\n', b'{"v":1,"outcome":"nope"}\n', b"\xff\xfe\n"],
    ids=["empty", "no_header", "future_format", "bad_fields", "not_utf8"],
)
def test_unreadable_value_is_unknown(redis_server: RedisServer, data: bytes) -> None:
    redis_server.client().set("robotstxt:http://x:80", data)  # type: ignore[attr-defined]
    assert make_store(redis_server).get("http://x:80") is None


def test_keys_live_under_the_prefix(redis_server: RedisServer) -> None:
    record = RECORDS["rules"]
    make_store(redis_server, prefix="projA:robots:").put(record)
    client = redis_server.client()
    assert client.keys("*") == [f"projA:robots:{record.origin}".encode()]  # type: ignore[attr-defined]
    assert make_store(redis_server, prefix="projB:").get(record.origin) is None
    assert make_store(redis_server, prefix="projA:robots:").get(record.origin) == record


@pytest.mark.parametrize(
    ("record", "allow_after", "expected_ttl"),
    [
        pytest.param(
            PolicyRecord("http://a:80", FetchOutcome.RULES, b"", 200, 0.0, 5 * DAY),
            DAY,
            5 * DAY,
            id="fresh_copy_lives_until_it_expires",
        ),
        pytest.param(
            PolicyRecord("http://a:80", FetchOutcome.RULES, b"", 200, 0.0, DAY),
            30 * DAY,
            30 * DAY,
            id="last_good_copy_lives_allow_after_past_its_fetch",
        ),
        pytest.param(
            PolicyRecord(
                "http://a:80",
                FetchOutcome.UNREACHABLE,
                None,
                503,
                unreachable_since=2 * DAY,
                failures=4,
                retry_at=2 * DAY + 600,
            ),
            30 * DAY,
            32 * DAY,
            id="unreachable_since_lives_allow_after_past_the_outage_start",
        ),
        pytest.param(
            PolicyRecord("http://a:80", FetchOutcome.ALLOW_ALL, None, 404, 0.0, 10.0),
            0.0,
            60.0,
            id="a_record_just_written_lives_at_least_a_minute",
        ),
    ],
)
def test_key_ttl_is_how_long_the_record_can_matter(
    redis_server: RedisServer, record: PolicyRecord, allow_after: float, expected_ttl: float
) -> None:
    make_store(redis_server, allow_after=allow_after).put(record)
    pttl = redis_server.client().pttl(f"robotstxt:{record.origin}")  # type: ignore[attr-defined]
    # The clock says 0: the TTL is the record's relevance, give or take the call.
    assert expected_ttl * 1000 - 5_000 <= pttl <= expected_ttl * 1000


def test_lease_is_exclusive_until_released(redis_server: RedisServer) -> None:
    check_lease_exclusive_until_released(make_store(redis_server), make_store(redis_server))
    pttl = redis_server.client().pttl("robotstxt:lease:http://example.com:80")  # type: ignore[attr-defined]
    assert 25_000 < pttl <= 30_000


def test_expired_lease_goes_to_the_next_worker(redis_server: RedisServer) -> None:
    holder, waiter = make_store(redis_server), make_store(redis_server)
    origin = "http://example.com:80"
    assert holder.acquire_fetch_lease(origin, 0.2)
    assert not waiter.acquire_fetch_lease(origin, 30)
    deadline = time.monotonic() + 5
    while not waiter.acquire_fetch_lease(origin, 30):
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.02)
    holder.release_fetch_lease(origin)  # a lost lease: its late release frees nothing
    assert not holder.acquire_fetch_lease(origin, 30)


def test_operations_on_a_dead_server_fail_fast(redis_server: RedisServer) -> None:
    # A refused connection fails at once: not after the timeout (30 s here, far
    # above the bound, so a wait fails however busy the machine), nor retried.
    store = RedisPolicyStore.from_url(redis_server.url, timeout=30.0, clock=Clock(0.0))
    redis_server.kill()
    started = time.monotonic()
    with pytest.raises(redis.exceptions.ConnectionError):
        store.get("http://a:80")
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://:s3cret@host:6379/1", "redis://:***@host:6379/1"),
        ("rediss://user:s3cret@host/2", "rediss://user:***@host/2"),
    ],
    ids=["no_password", "password_only", "user_and_password"],
)
def test_logged_urls_hide_the_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown
