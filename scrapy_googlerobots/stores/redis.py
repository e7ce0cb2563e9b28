"""A policy store in Redis, shared by every worker of a cluster (redis-py, optional extra).

One key per origin, ``<prefix><origin key>`` (e.g. ``robotstxt:https://example.com:443``),
holding the record in its compact form (:mod:`~scrapy_googlerobots.stores.compact`:
a few header bytes and the body deflated, ~1 KB for the average robots.txt).
Records written by earlier versions (a JSON header, a newline, the raw body)
are still read. The key lives as long as the record can still matter
(:func:`~scrapy_googlerobots.stores.layered.relevant_until`), so Redis forgets
dead origins by itself.

Leases are ``<prefix>lease:<origin key>`` set with ``SET NX PX``-like semantics
by one Lua script that also lets the holder renew its own lease, and released
by a script that deletes the key only if it still holds our token — a holder
whose lease expired and was taken over can never delete its successor's.

Parked requests (:class:`~scrapy_googlerobots.stores.base.ParkedStore`), per
scope (the spider's name): ``<prefix>parked:<scope>:requests:<owner>`` is a
hash of one owner's records (request id -> serialized request),
``<prefix>parked:<scope>:owner:<owner>`` the owner's lease (a key with a
TTL, renewed while it lives), ``<prefix>parked:<scope>:owners`` the set of
owners with records. Adoption is one Lua script (Redis runs scripts one at a
time): it moves the records of every owner whose lease key is gone into the
adopter's hash, so two adopters can never both take a record. The scripts
build key names at run time: one Redis server, not Redis Cluster.

Origins' send slots and pauses
(:class:`~scrapy_googlerobots.stores.base.PaceStore`): ``<prefix>pace:<origin>``
(next allowed send, pause-until, its reason) and the sorted set
``<prefix>pauses``, each call one Lua script timed by Redis's own clock. A new
pause is also published on the channel ``<prefix>pauses@<db>``, to which every
worker subscribes (:mod:`~scrapy_googlerobots.stores.pause_feed`).

Every call is bounded by ``timeout`` (connect and socket timeouts, no retries):
a dead or hung Redis costs one bounded call, and the layered store in front
takes it out of the path.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.stores.compact import pack, unpack
from scrapy_googlerobots.stores.layered import relevant_until
from scrapy_googlerobots.stores.pause_feed import FeedHandlers, PauseFeed

__all__ = ["RedisPolicyStore", "decode_record", "encode_record", "redact_url"]

# KEYS[1] lease key; ARGV[1] holder token, ARGV[2] ttl in ms.
_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""
# KEYS[1] owners set, KEYS[2] our hash, KEYS[3] our lease; ARGV[1] our token,
# ARGV[2] lease ms, ARGV[3] lease key prefix, ARGV[4] hash key prefix.
_ADOPT = """
redis.call('SET', KEYS[3], '1', 'PX', ARGV[2])
local taken = {}
for _, owner in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    if owner ~= ARGV[1] and redis.call('EXISTS', ARGV[3] .. owner) == 0 then
        local entries = redis.call('HGETALL', ARGV[4] .. owner)
        for i = 1, #entries, 2 do
            redis.call('HSET', KEYS[2], entries[i], entries[i + 1])
            taken[#taken + 1] = entries[i]
            taken[#taken + 1] = entries[i + 1]
        end
        redis.call('DEL', ARGV[4] .. owner)
        redis.call('SREM', KEYS[1], owner)
    end
end
if #taken > 0 then
    redis.call('SADD', KEYS[1], ARGV[1])
end
return taken
"""
# KEYS[1] owners set, KEYS[2] our hash, KEYS[3] our lease; ARGV[1] our token.
_RELEASE_PARKED = """
redis.call('DEL', KEYS[3])
if redis.call('HLEN', KEYS[2]) == 0 then
    redis.call('SREM', KEYS[1], ARGV[1])
end
return 0
"""
# A record written at the very end of its useful life still gets this long,
# so a worker that just wrote it can read it back.
_MIN_KEY_TTL = 60.0
# Pace (PaceStore): ``<prefix>pace:<origin>`` is a hash (``next``: the next
# allowed send, ``pause``: pause-until, ``reason``), in ms of Redis's own clock
# (TIME), so workers' clocks never matter; ``<prefix>pauses`` a sorted set of
# paused origins by pause-until. Each call is one script, one round trip.
_NOW = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
# KEYS[1] pace hash; ARGV[1] gap ms. Returns the ms to wait.
_RESERVE = (
    _NOW
    + """
local v = redis.call('HMGET', KEYS[1], 'next', 'pause')
local slot = math.max(now, tonumber(v[1]) or 0, tonumber(v[2]) or 0)
local after = slot + tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'next', after)
redis.call('PEXPIRE', KEYS[1], math.max(after, tonumber(v[2]) or 0) - now + 60000)
return slot - now
"""
)
# KEYS[1] pace hash, KEYS[2] pauses set; ARGV[1] origin, ARGV[2] pause ms,
# ARGV[3] reason, ARGV[4] the pause channel. Returns the ms the pause lasts.
# A new or longer pause is published (stores.pause_feed.pause_message) in the
# same script: every subscribed worker hears of it as it is recorded.
_PAUSE = (
    _NOW
    + """
local wanted = now + tonumber(ARGV[2])
local current = tonumber(redis.call('HGET', KEYS[1], 'pause')) or 0
if wanted > current then
    redis.call('HSET', KEYS[1], 'pause', wanted, 'reason', ARGV[3])
    redis.call('ZADD', KEYS[2], wanted, ARGV[1])
    redis.call('PUBLISH', ARGV[4], ARGV[2] .. ' ' .. ARGV[1] .. ' ' .. ARGV[3])
    current = wanted
end
local next_at = tonumber(redis.call('HGET', KEYS[1], 'next')) or 0
redis.call('PEXPIRE', KEYS[1], math.max(current, next_at) - now + 60000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
return current - now
"""
)
# KEYS[1] pauses set; ARGV[1] pace hash prefix. Returns origin, ms left, reason, ...
_PAUSES = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local out = {}
local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #entries, 2 do
    out[#out + 1] = entries[i]
    out[#out + 1] = tonumber(entries[i + 1]) - now
    out[#out + 1] = redis.call('HGET', ARGV[1] .. entries[i], 'reason') or ''
end
return out
"""
)
# The earlier format's version (JSON header, raw body): read, no longer written.
_JSON_FORMAT = 1


def encode_record(record: PolicyRecord) -> bytes:
    """Serialise ``record`` (without its origin and parsed rules) to bytes: its compact form."""
    return pack(record)


def decode_record(origin: str, data: bytes) -> PolicyRecord | None:
    """The record encoded in ``data`` (either format), or None if it is not one we can read."""
    if data[:1] != b"{":
        try:
            return unpack(origin, data)
        except ValueError:
            return None
    return _decode_json_record(origin, data)


def _decode_json_record(origin: str, data: bytes) -> PolicyRecord | None:
    """A record of the earlier format: JSON header, newline, raw body."""
    head, sep, body = data.partition(b"\n")
    try:
        header: dict[str, Any] = json.loads(head)
        if not sep or header.get("v") != _JSON_FORMAT:
            return None
        return PolicyRecord(
            origin=origin,
            outcome=FetchOutcome(header["outcome"]),
            body=body if header["has_body"] else None,
            status=header["status"],
            fetched_at=float(header["fetched_at"]),
            expires_at=float(header["expires_at"]),
            unreachable_since=header["unreachable_since"],
            failures=int(header["failures"]),
            retry_at=header["retry_at"],
        )
    except (ValueError, KeyError, TypeError):
        return None


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


class RedisPolicyStore:
    """A :class:`~scrapy_googlerobots.stores.base.PolicyStore` in Redis.

    ``client`` is a ``redis.Redis``; :meth:`from_url` builds one with the
    timeouts this store relies on.
    """

    shared_by_hosts = True
    """Workers on many hosts share it: pacing through it is cluster-wide."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "robotstxt:",
        allow_after: float = 2_592_000.0,
        clock: Callable[[], float] = time.time,
        description: str = "redis",
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.allow_after = allow_after
        self.description = description
        self._clock = clock
        self._holder = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex}".encode()
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._adopt = client.register_script(_ADOPT)
        self._release_parked = client.register_script(_RELEASE_PARKED)
        self._reserve = client.register_script(_RESERVE)
        self._pause = client.register_script(_PAUSE)
        self._pauses = client.register_script(_PAUSES)

    @classmethod
    def from_url(cls, url: str, *, timeout: float = 1.0, **kwargs: Any) -> RedisPolicyStore:
        """A store on the Redis at ``url`` (``redis://``, ``rediss://`` or ``unix://``)."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        client = redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # redis-py retries failed calls by default; each retry would add
            # another ``timeout`` to a call the crawl is waiting on.
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            health_check_interval=0,
        )
        kwargs.setdefault("description", redact_url(url))
        return cls(client, **kwargs)

    def _key(self, origin: str) -> str:
        return self.prefix + origin

    def _lease_key(self, origin: str) -> str:
        return f"{self.prefix}lease:{origin}"

    def get(self, origin: str) -> PolicyRecord | None:
        data = self.client.get(self._key(origin))
        return None if data is None else decode_record(origin, data)

    def put(self, record: PolicyRecord) -> None:
        ttl = max(relevant_until(record, self.allow_after) - self._clock(), _MIN_KEY_TTL)
        self.client.set(self._key(record.origin), encode_record(record), px=math.ceil(ttl * 1000))

    def acquire_fetch_lease(self, origin: str, ttl: float) -> bool:
        ms = max(1, math.ceil(ttl * 1000))
        return bool(self._acquire(keys=[self._lease_key(origin)], args=[self._holder, ms]))

    def release_fetch_lease(self, origin: str) -> None:
        self._release(keys=[self._lease_key(origin)], args=[self._holder])

    # -- PaceStore ----------------------------------------------------------

    def reserve_send(self, origin: str, gap: float) -> float:
        key = f"{self.prefix}pace:{origin}"
        return int(self._reserve(keys=[key], args=[max(0, math.ceil(gap * 1000))])) / 1000.0

    def pause_origin(self, origin: str, seconds: float, reason: str) -> float:
        keys = [f"{self.prefix}pace:{origin}", f"{self.prefix}pauses"]
        ms = max(0, math.ceil(seconds * 1000))
        args = [origin, ms, reason, self.pause_channel]
        return int(self._pause(keys=keys, args=args)) / 1000.0

    @property
    def pause_channel(self) -> str:
        """Where new pauses are published: ``<prefix>pauses@<db>`` (pub/sub channels are
        server-wide, so the database number keeps crawls on other databases apart)."""
        db = self.client.connection_pool.connection_kwargs.get("db", 0)
        return f"{self.prefix}pauses@{db}"

    def pause_feed(self, handlers: FeedHandlers) -> PauseFeed:
        """A :class:`~scrapy_googlerobots.stores.pause_feed.PauseFeed` of the pauses other
        workers set (not started), on its own connection with this store's timeouts."""
        timeout = self.client.connection_pool.connection_kwargs.get("socket_timeout") or 1.0
        return PauseFeed(self.client.pubsub, self.pause_channel, handlers, timeout=float(timeout))

    def paused_origins(self) -> dict[str, tuple[float, str]]:
        flat = self._pauses(keys=[f"{self.prefix}pauses"], args=[f"{self.prefix}pace:"])
        return {
            flat[i].decode(): (int(flat[i + 1]) / 1000.0, bytes(flat[i + 2]).decode())
            for i in range(0, len(flat), 3)
        }

    # -- ParkedStore -------------------------------------------------------

    def _parked_keys(self, scope: str) -> tuple[str, str, str]:
        """(owners set, our records hash, our lease key) of ``scope``."""
        base = f"{self.prefix}parked:{scope}:"
        token = self._holder.decode()
        return f"{base}owners", f"{base}requests:{token}", f"{base}owner:{token}"

    def keep_parked(self, scope: str, rid: str, data: bytes, ttl: float) -> None:
        owners, records, lease = self._parked_keys(scope)
        pipe = self.client.pipeline(transaction=True)
        pipe.set(lease, b"1", px=max(1, math.ceil(ttl * 1000)))
        pipe.hset(records, rid, data)
        pipe.sadd(owners, self._holder)
        pipe.execute()

    def forget_parked(self, scope: str, rids: Sequence[str]) -> list[str]:
        if not rids:
            return []
        _, records, _ = self._parked_keys(scope)
        pipe = self.client.pipeline(transaction=False)
        for rid in rids:
            pipe.hdel(records, rid)
        return [rid for rid, removed in zip(rids, pipe.execute(), strict=True) if removed]

    def renew_parked_lease(self, scope: str, ttl: float) -> None:
        _, _, lease = self._parked_keys(scope)
        self.client.set(lease, b"1", px=max(1, math.ceil(ttl * 1000)))

    def release_parked_lease(self, scope: str) -> None:
        self._release_parked(keys=list(self._parked_keys(scope)), args=[self._holder])

    def adopt_parked(self, scope: str, ttl: float) -> list[tuple[str, bytes]]:
        keys = self._parked_keys(scope)
        base = f"{self.prefix}parked:{scope}:"
        flat = self._adopt(
            keys=list(keys),
            args=[self._holder, max(1, math.ceil(ttl * 1000)), f"{base}owner:", f"{base}requests:"],
        )
        return [(flat[i].decode(), bytes(flat[i + 1])) for i in range(0, len(flat), 2)]

    def close(self) -> None:
        self.client.close()
