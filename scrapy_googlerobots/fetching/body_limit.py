"""A robots.txt body as it arrives: the size cap, bounded gzip/deflate inflation (SPEC B6).

:class:`BodyLimit` rides in a robots.txt request's meta; the fetcher's
``headers_received`` / ``bytes_received`` handlers feed it and stop the download
once ``ROBOTSTXT_MAX_SIZE`` bytes of robots.txt have arrived, inflated as they
come, so a compressed body is never inflated past the limit.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from scrapy.exceptions import StopDownload

if TYPE_CHECKING:
    from scrapy.http import Headers, Response

__all__ = ["BodyLimit", "decode_body"]

_GZIP = frozenset({b"gzip", b"x-gzip"})
_DEFLATE = frozenset({b"deflate"})


class BodyLimit:
    """Counts one robots.txt download as it arrives and says when to stop it.

    Shared by the retries of one request (RetryMiddleware copies meta), so
    :meth:`start` resets it at each response's headers.
    """

    __slots__ = (
        "decoded",
        "inflater",
        "listening",
        "max_size",
        "raw",
        "started",
        "truncated",
        "unsupported",
    )

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self.started = False
        self.raw = 0
        self.inflater: _Inflater | None = None
        self.decoded = bytearray()
        self.truncated = False
        self.unsupported: str | None = None
        # Set by the fetcher while its bytes_received handler counts this download.
        self.listening = False

    def start(self, headers: Headers) -> StopDownload | None:
        self.started = True
        self.raw = 0
        self.decoded = bytearray()
        self.truncated = False
        self.unsupported = None
        encodings = _content_encodings(headers)
        self.inflater = None
        if not encodings:
            return None
        if len(encodings) == 1 and encodings[0] in _GZIP | _DEFLATE:
            self.inflater = _Inflater(gzip=encodings[0] in _GZIP)
            return None
        self.unsupported = b", ".join(encodings).decode("latin-1")
        return StopDownload(fail=True)

    def needs_feeding(self, headers: Headers) -> bool:
        """Whether the body must be counted as it arrives (after :meth:`start`).

        Not when it comes unencoded with a ``Content-Length`` within the
        limit: then the whole of it is what will arrive, and it is kept as is.
        """
        if self.inflater is not None:
            return True
        length = headers.get(b"Content-Length")
        try:
            return length is None or int(length) > self.max_size
        except ValueError:
            return True

    def feed(self, data: bytes) -> StopDownload | None:
        self.raw += len(data)
        inflater = self.inflater
        if inflater is None:
            # Stop on the first byte past the limit: a body of exactly
            # max_size bytes is complete, anything more is truncated.
            if self.raw > self.max_size:
                self.truncated = True
                return StopDownload(fail=False)
            return None
        # One byte more than there is room for tells "there is more".
        self.decoded += inflater.feed(data, self.max_size - len(self.decoded) + 1)
        if inflater.corrupt:
            # Corrupt from here on: keep what inflated cleanly.
            return StopDownload(fail=True)
        if len(self.decoded) > self.max_size:
            del self.decoded[self.max_size :]
            self.truncated = True
            return StopDownload(fail=True)
        if self.raw > 2 * self.max_size + 65_536:
            # Compressed data that inflates to (almost) nothing: not robots.txt.
            self.truncated = True
            return StopDownload(fail=True)
        return None

    def body(self) -> bytes:
        if self.unsupported is not None:
            return b""
        return bytes(self.decoded)


def _content_encodings(headers: Headers) -> list[bytes]:
    values = headers.getlist(b"Content-Encoding") if headers else []
    encodings = [
        part.strip().lower() for value in values for part in value.split(b",") if part.strip()
    ]
    return [encoding for encoding in encodings if encoding != b"identity"]


def decode_body(response: Response, max_size: int, limit: BodyLimit) -> bytes:
    """The body of a response that did not stream through the handlers, inflated if needed."""
    encodings = _content_encodings(response.headers)
    body = response.body
    if not encodings:
        return body[: max_size + 1]
    if len(encodings) == 1 and encodings[0] in _GZIP | _DEFLATE:
        limit.start(response.headers)
        limit.feed(body)
        return limit.body()
    limit.unsupported = b", ".join(encodings).decode("latin-1")
    return b""


class _Inflater:
    """Incremental gzip (all members) or deflate (zlib or raw) inflation with an output bound."""

    __slots__ = ("_decompressor", "_first", "_gzip", "corrupt", "finished")

    def __init__(self, *, gzip: bool) -> None:
        self._gzip = gzip
        self._decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS if gzip else zlib.MAX_WBITS)
        self._first = True
        self.finished = False
        self.corrupt = False

    def feed(self, data: bytes, limit: int) -> bytes:
        """Inflate ``data``; return at most ``limit`` bytes (sets ``corrupt`` on bad data)."""
        out = bytearray()
        pending = data
        while pending and len(out) < limit and not self.finished:
            try:
                piece = self._decompressor.decompress(pending, limit - len(out))
            except zlib.error:
                if self._first and not self._gzip:
                    # "deflate" sent as a raw stream, as some servers do.
                    self._decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._first = False
                    continue
                self.corrupt = self.finished = True
                break
            self._first = False
            out += piece
            if self._decompressor.eof:
                rest = self._decompressor.unused_data
                if self._gzip and rest.strip(b"\x00"):
                    # Another gzip member follows (gzip readers inflate them all).
                    self._decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    pending = rest
                else:
                    self.finished = True
            else:
                pending = self._decompressor.unconsumed_tail
        return bytes(out)
