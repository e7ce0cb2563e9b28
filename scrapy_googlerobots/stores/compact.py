"""The compact form of a policy record: a few header bytes and the body deflated.

What a quiet origin keeps in the memory store (about the body's compressed
size: a median robots.txt deflates to ~200 bytes, against ~10 KB parsed and
queried), and what the Redis store writes. The rules are not kept: they are
parsed again from the body, which gives the same rules (parsing is a pure
function of the body and the size limit).

Layout (little-endian)::

    tag (1 byte, _TAG) | outcome (1) | flags (1) | fetched_at (f64) | expires_at (f64)
    [status (i32)] [unreachable_since (f64)] [retry_at (f64)] [failures (u32)]
    body, raw deflate (wbits -15), when the record has one

The optional fields are present when their flag is set.
"""

from __future__ import annotations

import struct
import zlib

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["MAX_BODY", "deflate", "inflate", "pack", "unpack"]

# First byte of every packed record; not "{" (the first byte of the Redis
# store's earlier JSON format), so both can be told apart.
_TAG = 0xC1
_OUTCOMES = {FetchOutcome.RULES: 1, FetchOutcome.ALLOW_ALL: 2, FetchOutcome.UNREACHABLE: 3}
_BY_CODE = {code: outcome for outcome, code in _OUTCOMES.items()}
_HEAD = struct.Struct("<BBBdd")
_STATUS = struct.Struct("<i")
_TIME = struct.Struct("<d")
_COUNT = struct.Struct("<I")
_HAS_BODY, _HAS_STATUS, _HAS_SINCE, _HAS_RETRY, _HAS_FAILURES = 1, 2, 4, 8, 16
# zlib's default level: over the corpus level 9 saves 2% of the bytes for
# 2.5x the time, and a body is compressed each time its origin goes quiet.
_LEVEL = 6

MAX_BODY = 64 * 1024 * 1024
"""The most bytes a stored body may inflate to: a bound against a hostile store entry."""


def deflate(body: bytes) -> bytes:
    """``body`` compressed (raw deflate); empty stays empty."""
    if not body:
        return b""
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15)
    return packer.compress(body) + packer.flush()


def inflate(data: bytes) -> bytes:
    """The body :func:`deflate` compressed; ValueError if ``data`` is not one."""
    if not data:
        return b""
    unpacker = zlib.decompressobj(-15)
    try:
        body = unpacker.decompress(data, MAX_BODY)
    except zlib.error as exc:
        raise ValueError(f"not a deflated body: {exc}") from None
    if unpacker.unconsumed_tail or not unpacker.eof:
        raise ValueError("deflated body truncated or larger than MAX_BODY")
    return body


def pack(record: PolicyRecord) -> bytes:
    """``record`` (without its origin and parsed rules) in the compact form."""
    flags = 0
    tail: list[bytes] = []
    if record.status is not None:
        flags |= _HAS_STATUS
        tail.append(_STATUS.pack(record.status))
    if record.unreachable_since is not None:
        flags |= _HAS_SINCE
        tail.append(_TIME.pack(record.unreachable_since))
    if record.retry_at is not None:
        flags |= _HAS_RETRY
        tail.append(_TIME.pack(record.retry_at))
    if record.failures:
        flags |= _HAS_FAILURES
        tail.append(_COUNT.pack(record.failures))
    if record.body is not None:
        flags |= _HAS_BODY
        tail.append(deflate(record.body))
    head = _HEAD.pack(_TAG, _OUTCOMES[record.outcome], flags, record.fetched_at, record.expires_at)
    return head + b"".join(tail)


def unpack(origin: str, data: bytes) -> PolicyRecord:
    """The record :func:`pack` wrote (rules not parsed); ValueError if ``data`` is not one."""
    try:
        tag, code, flags, fetched_at, expires_at = _HEAD.unpack_from(data)
        offset = _HEAD.size
        status = since = retry_at = None
        failures = 0
        if flags & _HAS_STATUS:
            (status,) = _STATUS.unpack_from(data, offset)
            offset += _STATUS.size
        if flags & _HAS_SINCE:
            (since,) = _TIME.unpack_from(data, offset)
            offset += _TIME.size
        if flags & _HAS_RETRY:
            (retry_at,) = _TIME.unpack_from(data, offset)
            offset += _TIME.size
        if flags & _HAS_FAILURES:
            (failures,) = _COUNT.unpack_from(data, offset)
            offset += _COUNT.size
    except struct.error as exc:
        raise ValueError(f"not a packed record: {exc}") from None
    if tag != _TAG or code not in _BY_CODE:
        raise ValueError("not a packed record")
    if flags & _HAS_BODY:
        body: bytes | None = inflate(data[offset:])
    elif offset != len(data):
        raise ValueError("packed record has trailing bytes")
    else:
        body = None
    return PolicyRecord(
        origin=origin,
        outcome=_BY_CODE[code],
        body=body,
        status=status,
        fetched_at=fetched_at,
        expires_at=expires_at,
        unreachable_since=since,
        failures=failures,
        retry_at=retry_at,
    )
