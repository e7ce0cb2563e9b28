"""Policy-file fetches as WARC records (ISO 28500, WARC/1.1, gzip per record), through warcio.

One :class:`Exchange` (one HTTP request for a robots.txt or a ``tdmrep.json``,
a redirect hop included) becomes a ``request`` record and, as the spec allows:

- a ``response`` record holding the status line, the headers and the body as
  the crawl read them (at most ``ROBOTSTXT_MAX_SIZE`` bytes; a cut body is
  marked ``WARC-Truncated: length``), with warcio's block and payload digests;
- or, when no response came (a network error, a request another middleware
  ignored), a ``metadata`` record naming the failure.

Privacy: ``Cookie`` and ``Set-Cookie`` headers are not recorded. A body the
crawl inflated (``gzip``/``deflate``) is recorded inflated, with its
``Content-Encoding`` and ``Content-Length`` headers renamed
``X-Archive-Orig-*`` (as web archives do) so that WARC readers do not inflate
it again.

The response record that became a stored copy of the policy file gets the ID
:func:`policy_record_id` computes from the origin's store key and the copy's
fetch time, so any worker holding that copy (a shared store, a resumed crawl)
names the same record in its decision records.
"""

from __future__ import annotations

import base64
import hashlib
import io
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy_googlerobots.evidence.files import AppendFile

__all__ = [
    "Exchange",
    "WarcLog",
    "WarcRef",
    "payload_digest",
    "policy_record_id",
    "warc_date",
    "warcio_missing",
]

_NAMESPACE = uuid.UUID("6f0c3e4e-4b51-5bd4-9d34-7c2a8f1e0b11")
_PRIVATE = frozenset({b"cookie", b"set-cookie", b"cookie2", b"set-cookie2", b"authorization"})
_RENAMED = (b"content-encoding", b"content-length", b"transfer-encoding")
_POLICY_FILE = "WARC-Policy-File"
"""Our WARC header naming the kind of file: ``robots.txt`` or ``tdmrep.json``."""


def warcio_missing() -> str | None:
    """Why evidence cannot be written here (warcio not installed), or None."""
    try:
        import warcio  # noqa: F401
    except ImportError:
        return (
            "ROBOTSTXT_EVIDENCE needs warcio to write WARC files: "
            "pip install 'scrapy-googlerobots[evidence]' (or pip install 'warcio>=1.7')"
        )
    return None


def policy_record_id(store_key: str, fetched_at: float) -> str:
    """The WARC-Record-ID of the response that became ``store_key``'s copy at ``fetched_at``."""
    name = f"{store_key}@{round(fetched_at * 1000)}"
    return f"<urn:uuid:{uuid.uuid5(_NAMESPACE, name)}>"


def payload_digest(body: bytes) -> str:
    """``sha1:BASE32``, the form of warcio's ``WARC-Payload-Digest``."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def warc_date(at: float) -> str:
    """``2026-11-28T10:15:02.123456Z`` (WARC/1.1 dates carry microseconds)."""
    seconds = int(at // 1)
    micros = round((at - seconds) * 1e6)
    if micros == 1_000_000:
        seconds, micros = seconds + 1, 0
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{micros:06d}Z"


@dataclass(frozen=True, slots=True)
class Exchange:
    """One HTTP exchange of a policy-file fetch, as the crawl saw it (no Scrapy types)."""

    file: str
    """``robots.txt`` or ``tdmrep.json``."""
    url: str
    at: float
    """When the answer (or the failure) came, seconds since the epoch."""
    request_headers: Sequence[tuple[bytes, bytes]] = ()
    method: str = "GET"
    status: int | None = None
    """None: no response (see ``error``)."""
    response_headers: Sequence[tuple[bytes, bytes]] = ()
    body: bytes = b""
    """The body as the crawl read it (inflated if it came compressed)."""
    inflated: bool = False
    truncated: bool = False
    """The body was cut at ``ROBOTSTXT_MAX_SIZE``."""
    protocol: str = "HTTP/1.1"
    error: str = ""
    """Why there is no response: ``DNSLookupError: ...``, ``request ignored (...)``."""
    record_id: str | None = None
    """The response record's ID (:func:`policy_record_id` for a stored copy); None: a new one."""


@dataclass(frozen=True, slots=True)
class WarcRef:
    """Where one exchange went: its response (or metadata) record's ID and payload digest."""

    record_id: str
    digest: str | None


def _headers(pairs: Sequence[tuple[bytes, bytes]], rename: bool) -> list[tuple[str, str]]:
    kept = []
    for name, value in pairs:
        low = name.lower()
        if low in _PRIVATE:
            continue
        text = name.decode("latin-1")
        if rename and low in _RENAMED:
            text = "X-Archive-Orig-" + text
        kept.append((text, value.decode("latin-1")))
    return kept


def _request_line(exchange: Exchange) -> str:
    parts = urlsplit(exchange.url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return f"{exchange.method} {target} {exchange.protocol}"


class WarcLog:
    """Appends exchanges to ``<directory>/policies-<run>.warc.gz`` (made on the first one)."""

    def __init__(
        self, directory: Path, run: str, *, software: str, settings: dict[str, Any]
    ) -> None:
        from warcio.warcwriter import WARCWriter

        self._writer_class = WARCWriter
        self.file = AppendFile(directory, f"policies-{run}.warc.gz")
        self._software = software
        self._settings = settings

    def _buffer(self) -> tuple[io.BytesIO, Any]:
        out = io.BytesIO()
        return out, self._writer_class(out, gzip=True, warc_version="1.1")

    def _warcinfo(self) -> bytes:
        out, writer = self._buffer()
        info = {"software": self._software, "format": "WARC File Format 1.1"}
        info.update({key: str(value) for key, value in self._settings.items()})
        writer.write_record(writer.create_warcinfo_record(self.file.path.name, info))
        return out.getvalue()

    def write(self, exchange: Exchange) -> WarcRef:
        """Write ``exchange`` as its records (one ``write``); where its answer went."""
        from warcio.statusandheaders import StatusAndHeaders

        out, writer = self._buffer()
        date = warc_date(exchange.at)
        record_id = exchange.record_id or f"<urn:uuid:{uuid.uuid4()}>"
        common = {"WARC-Date": date, _POLICY_FILE: exchange.file}
        request_http = StatusAndHeaders(
            _request_line(exchange),
            _headers(exchange.request_headers, False),
            is_http_request=True,
        )
        request = writer.create_warc_record(
            exchange.url,
            "request",
            http_headers=request_http,
            warc_headers_dict={**common, "WARC-Concurrent-To": record_id},
        )
        digest: str | None
        if exchange.status is None:
            fields = f"fetch-error: {exchange.error}\r\n".encode()
            answer = writer.create_warc_record(
                exchange.url,
                "metadata",
                payload=io.BytesIO(fields),
                length=len(fields),
                warc_content_type="application/warc-fields",
                warc_headers_dict={**common, "WARC-Record-ID": record_id},
            )
            digest = None
        else:
            try:
                phrase = HTTPStatus(exchange.status).phrase
            except ValueError:
                phrase = ""
            altered = exchange.inflated or exchange.truncated
            response_http = StatusAndHeaders(
                f"{exchange.status} {phrase}".rstrip(),
                _headers(exchange.response_headers, altered),
                protocol=exchange.protocol,
            )
            headers = {**common, "WARC-Record-ID": record_id}
            if exchange.truncated:
                headers["WARC-Truncated"] = "length"
            answer = writer.create_warc_record(
                exchange.url,
                "response",
                payload=io.BytesIO(exchange.body),
                length=len(exchange.body),
                http_headers=response_http,
                warc_headers_dict=headers,
            )
            digest = answer.rec_headers.get_header("WARC-Payload-Digest")
        writer.write_record(answer)
        writer.write_record(request)
        data = out.getvalue()
        if not self.file.opened:
            data = self._warcinfo() + data
        self.file.write(data)
        return WarcRef(record_id, digest)
