"""The compact form of a policy record: a few header bytes and the body deflated.

What a quiet origin keeps in the memory store (about the body's compressed
size: a median robots.txt deflates to ~200 bytes, against ~10 KB parsed and
queried), and what the Redis store writes. The rules are not kept: they are
parsed again from the body, which gives the same rules (parsing is a pure
function of the body and the size limit).

Layout (little-endian)::

    tag (1 byte, _TAG) | outcome (1) | flags (1) | fetched_at (f64) | expires_at (f64)
    [status (i32)] [unreachable_since (f64)] [retry_at (f64)] [failures (u32)]
    [headers length (u32)]
    body, raw deflate (wbits -15), when the record has one

The optional fields are present when their flag is set. A record with
response headers (flag ``_HAS_HEADERS``) deflates its header block and its
body as one stream, headers first, with a preset dictionary of common header
and robots.txt text (:data:`_ZDICT`): a typical header block then costs ~100
bytes. Records without the flag (all those written before headers were kept)
are read as before.
"""

from __future__ import annotations

import struct
import zlib

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["HEADERS_MAX", "MAX_BODY", "deflate", "inflate", "pack", "unpack"]

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
_HAS_HEADERS = 32
# The preset dictionary of records with headers. Never change it: stored
# records (Redis) are read with it; a new dictionary needs a new flag. The
# most common strings come last (deflate reaches them with the shortest distances).
_ZDICT = (
    b"Sitemap: https://www.sitemap.xml\nCrawl-delay: 10\nUser-agent: Googlebot\n"
    b"Disallow: /wp-admin/\nAllow: /wp-admin/admin-ajax.php\nDisallow: /search\n"
    b"User-agent: *\nDisallow: /\nAllow: /\n"
    b"X-Cache: Hit from cloudfront\r\nVia: 1.1 varnish\r\nX-Served-By: cache-\r\n"
    b"Cf-Cache-Status: HIT\r\nCf-Ray: \r\nAge: 0\r\nX-Frame-Options: SAMEORIGIN\r\n"
    b"Strict-Transport-Security: max-age=31536000; includeSubDomains\r\n"
    b"X-Content-Type-Options: nosniff\r\nAccess-Control-Allow-Origin: *\r\n"
    b"Vary: Accept-Encoding\r\nAccept-Ranges: bytes\r\nConnection: keep-alive\r\n"
    b'Cache-Control: max-age=86400, public\r\nExpires: \r\nEtag: "\r\n'
    b"Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\nServer: nginx\r\nServer: Apache\r\n"
    b"Content-Length: \r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Date: Tue, Wed, Thu, Fri, Sat, Sun, Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec 2026 GMT"
    b"\r\n"
)
HEADERS_MAX = 16 * 1024
"""The largest header block a record keeps (a larger one is not kept: the copy then
cannot stand for a download of robots.txt, which is downloaded instead)."""
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


def _deflate_with_dictionary(data: bytes) -> bytes:
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15, zdict=_ZDICT)
    return packer.compress(data) + packer.flush()


def _inflate_with_dictionary(data: bytes) -> bytes:
    unpacker = zlib.decompressobj(-15, zdict=_ZDICT)
    try:
        body = unpacker.decompress(data, MAX_BODY + HEADERS_MAX)
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
    headers = record.headers
    if headers is not None and len(headers) <= HEADERS_MAX:
        flags |= _HAS_HEADERS
        tail.append(_COUNT.pack(len(headers)))
        if record.body is not None:
            flags |= _HAS_BODY
        tail.append(_deflate_with_dictionary(headers + (record.body or b"")))
    elif record.body is not None:
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
        header_size = None
        if flags & _HAS_HEADERS:
            (header_size,) = _COUNT.unpack_from(data, offset)
            offset += _COUNT.size
    except struct.error as exc:
        raise ValueError(f"not a packed record: {exc}") from None
    if tag != _TAG or code not in _BY_CODE:
        raise ValueError("not a packed record")
    headers: bytes | None = None
    if header_size is not None:
        both = _inflate_with_dictionary(data[offset:])
        if header_size > len(both) or header_size > HEADERS_MAX:
            raise ValueError("packed record's headers are longer than its data")
        headers = both[:header_size]
        body: bytes | None = both[header_size:] if flags & _HAS_BODY else None
    elif flags & _HAS_BODY:
        body = inflate(data[offset:])
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
        headers=headers,
    )
