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
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.stores.compact import pack, unpack
from scrapy_googlerobots.stores.layered import relevant_until

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
# A record written at the very end of its useful life still gets this long,
# so a worker that just wrote it can read it back.
_MIN_KEY_TTL = 60.0
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

    def close(self) -> None:
        self.client.close()
