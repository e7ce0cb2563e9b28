"""The fetched robots.txt standing for the spider's own request of it (one fetch per origin).

A spider may ask for an origin's robots.txt itself (``SitemapSpider`` with
``sitemap_urls = [".../robots.txt"]``, or any callback). The middleware has
fetched that file already; when its copy is exactly what the spider's download
would get, the middleware answers the request with it instead of fetching the
file a second time. This module decides both halves and builds the response:

- :func:`kept_headers`: at fetch time, whether the copy can stand for a download
  (a 2xx response, not redirected, body whole and decoded as Scrapy decodes
  it), and the header block to keep with it;
- :func:`request_fits`: whether a spider's request asks for what the fetch
  downloaded (``GET``, no body, no headers, cookies, proxy or cookie jar of its own);
- :func:`copy_response`: the response, of the class Scrapy would have built
  (:mod:`scrapy.responsetypes`), with the downloaded url, status, headers and
  body, ``request=`` the spider's request and the flag :data:`SERVED_FLAG`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.http import Headers
from scrapy.responsetypes import responsetypes

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.stores.compact import HEADERS_MAX

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["SERVED_FLAG", "copy_response", "kept_headers", "parse_headers", "request_fits"]

SERVED_FLAG = "robotstxt-cached"
"""In ``response.flags`` of a robots.txt response the middleware served from its copy."""

# Headers a spider's request may carry and still be answered from the copy:
# RefererMiddleware (a spider middleware) adds Referer to every request a
# callback yields; it does not select another robots.txt.
_NEUTRAL_HEADERS = frozenset({b"Referer"})
# Meta keys that download the same URL differently than the middleware's fetch.
_OWN_DOWNLOAD_META = ("proxy", "cookiejar")


def kept_headers(
    outcome: FetchOutcome, response: Response | None, *, url: str, whole: bool
) -> bytes | None:
    """The header block to keep with a fetch's record, if its copy can stand for a download.

    ``url``: the robots.txt URL the fetch started from; ``whole``: the body
    kept is the whole body, decoded as Scrapy decodes it (not cut at the size
    limit, not in an encoding read as empty).
    """
    if outcome is not FetchOutcome.RULES or response is None or not whole:
        return None
    if response.url != url or b"Content-Encoding" in response.headers:
        # Redirected (the spider would get the redirect), or a body still
        # encoded (HttpCompressionMiddleware off: the spider would get it raw).
        return None
    block = b"".join(
        name + b": " + value + b"\r\n"
        for name, values in response.headers.items()
        for value in values
    )
    return block if len(block) <= HEADERS_MAX else None


def parse_headers(block: bytes) -> Headers:
    """The :class:`~scrapy.http.Headers` of a header block :func:`kept_headers` made."""
    headers = Headers()
    for line in block.split(b"\r\n"):
        if line:
            name, _, value = line.partition(b": ")
            headers.appendlist(name, value)
    return headers


def request_fits(request: Request) -> bool:
    """Whether ``request`` asks for what the middleware's fetch downloaded.

    ``GET``, no body, no headers but ``Referer`` (checked where the middleware
    sits, before the header middlewares add the same headers to both), no
    cookies of its own, no ``proxy`` or ``cookiejar`` meta.
    """
    if request.method != "GET" or request.body or request.cookies:
        return False
    meta = request.meta
    if any(key in meta for key in _OWN_DOWNLOAD_META):
        return False
    return all(name in _NEUTRAL_HEADERS for name in request.headers)


def copy_response(record: PolicyRecord, request: Request) -> Response:
    """``record``'s robots.txt as the response to ``request`` (its URL is the robots.txt URL)."""
    assert record.headers is not None and record.status is not None
    headers = parse_headers(record.headers)
    body = record.body or b""
    url = request.url
    cls = responsetypes.from_args(headers=headers, url=url, body=body)
    return cls(
        url=url,
        status=record.status,
        headers=headers,
        body=body,
        flags=[SERVED_FLAG],
        request=request,
    )
