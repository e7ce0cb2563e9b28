"""Scrapy's requests and responses turned into what evidence records hold (plain values).

:func:`exchange_of` makes a WARC :class:`~.warc.Exchange` of one policy-file
download; :func:`page_of` the ``page`` of a decision record: the status, the
headers that state preferences (:data:`~.records.PAGE_HEADERS`, nothing else:
no cookies) and, for HTML, the ``<meta>`` tags of its head that do (``robots``,
the product token's, ``tdm-reservation``, ``tdm-policy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse

from scrapy_googlerobots.evidence.records import PAGE_HEADERS
from scrapy_googlerobots.evidence.warc import Exchange
from scrapy_googlerobots.htmlmeta import DEFAULT_LIMIT, head_meta, may_name
from scrapy_googlerobots.tdmrep import META_NAMES

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Headers, Response

__all__ = ["exchange_of", "page_of"]


def _pairs(headers: Headers) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, values in headers.items() for value in values]


def exchange_of(
    file: str,
    request: Request | None,
    response: Response | None,
    *,
    at: float,
    body: bytes | None = None,
    inflated: bool = False,
    truncated: bool = False,
    error: str = "",
    record_id: str | None = None,
) -> Exchange:
    """The exchange of ``request`` (its headers as sent) and ``response`` (None: ``error``).

    ``body``: the body as the crawl read it, when not ``response.body`` (inflated, cut).
    """
    sent = getattr(response, "request", None) or request
    headers = _pairs(sent.headers) if sent is not None else []
    method = sent.method if sent is not None else "GET"
    if response is None:
        assert request is not None, "a failed exchange names its request"
        return Exchange(file, request.url, at, headers, method, error=error or "no response")
    protocol = getattr(response, "protocol", None) or "HTTP/1.1"
    return Exchange(
        file,
        response.url,
        at,
        headers,
        method,
        status=response.status,
        response_headers=_pairs(response.headers),
        body=response.body if body is None else body,
        inflated=inflated,
        truncated=truncated,
        protocol=protocol,
        record_id=record_id,
    )


def page_of(response: Response, token: str) -> dict[str, Any]:
    """The ``page`` of a decision record on ``response`` (see the module doc)."""
    headers: dict[str, list[str]] = {}
    for name in PAGE_HEADERS:
        values = response.headers.getlist(name)
        if values:
            headers[name.decode().lower()] = [value.decode("latin-1") for value in values]
    page: dict[str, Any] = {"status": response.status, "headers": headers}
    if isinstance(response, HtmlResponse):
        page["html"] = True
        # The head as the crawl reads it (an HTML5 parser's, in the response's encoding).
        names = ("robots", token.strip().lower(), *sorted(META_NAMES))
        body = response.body
        if may_name(body, names, DEFAULT_LIMIT):
            meta = head_meta(body, names, DEFAULT_LIMIT, encoding=lambda: response.encoding)
            if meta:
                page["meta"] = [[name, content] for name, content in meta]
    return page
