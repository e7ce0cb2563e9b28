"""One robots.txt fetch through Scrapy's engine: redirects, size limit, decoding (SPEC B2, B3, B6).

:class:`RobotsFetcher` downloads ``<origin>/robots.txt`` with
``crawler.engine.download_async`` (``download`` before Scrapy 2.14), so the
request passes every downloader middleware (proxy, headers, retry, cache).
What it adds:

- Redirects are followed here (``dont_redirect``), whatever
  ``REDIRECT_MAX_TIMES`` says or whether the redirect middleware is enabled:
  up to ``ROBOTSTXT_MAX_REDIRECTS`` hops, across origins; one more hop or a
  loop is "as 404". Redirect hops are not counted as fetches.
- Size: the ``bytes_received`` signal stops the download
  (:class:`~scrapy.exceptions.StopDownload`) once ``ROBOTSTXT_MAX_SIZE`` bytes
  of robots.txt have arrived. A gzip or deflate body is inflated here, as it
  arrives, never past the limit; when that limit (or a corrupt stream) stops
  the download, it stops with ``fail=True``, so the truncated stream never
  reaches ``HttpCompressionMiddleware`` and nothing inflates it further: a
  gzip bomb costs no more than a plain file. A complete compressed body is
  known (from the same count) to inflate to less than the limit.
- The request asks for ``Accept-Encoding: gzip, deflate`` (what is inflated
  here with a hard bound); a body in another encoding is stopped at its
  headers and read as empty, with a warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http.request import NO_CALLBACK
from w3lib.url import safe_url_string

from scrapy_googlerobots.fetching.body_limit import BodyLimit, decode_body
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome, is_redirect, outcome_for_status
from scrapy_googlerobots.policy.origin import ROBOTS_TXT, origin_of
from scrapy_googlerobots.runtime.scrapy_compat import engine_download

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response

    from scrapy_googlerobots.policy.origin import FileKind, Origin
    from scrapy_googlerobots.runtime.config import RobotsConfig

__all__ = ["LIMIT_META", "ORIGIN_META", "FetchResult", "RobotsFetcher"]

logger = logging.getLogger(__name__)

LIMIT_META = "_robotstxt_limit"
"""Meta key of a robots.txt request: its :class:`BodyLimit` (internal)."""
ORIGIN_META = "robotstxt_origin"
"""Meta key of a robots.txt request: the origin (``scheme://host:port``) it is fetched for."""

#: Download priority of robots.txt requests, as Scrapy's stock middleware
#: (the middleware passes its own ``DOWNLOAD_PRIORITY``, which a subclass may change).
DOWNLOAD_PRIORITY = 1000

_ACCEPT_ENCODING = b"gzip, deflate"


@dataclass
class FetchResult:
    """What one robots.txt fetch (redirects included) found out."""

    outcome: FetchOutcome
    reason: str
    """Why, for logs: ``"HTTP 200"``, ``"5 redirects"``, ``"DNSLookupError: …"``."""
    body: bytes = b""
    """RULES: the decoded body, at most ``ROBOTSTXT_MAX_SIZE`` bytes."""
    response: Response | None = None
    """The final response, if any (its status and headers; the body may be raw)."""
    exception: BaseException | None = None
    ignored: bool = False
    """An ``IgnoreRequest`` from another middleware decided the outcome."""
    truncated: bool = False
    """The body was cut at ``ROBOTSTXT_MAX_SIZE`` (and the download stopped there)."""
    redirects: list[str] = field(default_factory=list)
    """URLs redirected to, in order."""
    hops: list[Response] = field(default_factory=list)
    """The redirect responses, in order (for the crawl's evidence)."""
    request: Request | None = None
    """The last request sent (for the evidence of a fetch that got no response)."""
    whole: bool = False
    """RULES: ``body`` is the whole response body, decoded as Scrapy decodes it (not
    cut at ``ROBOTSTXT_MAX_SIZE``, not in an encoding read as empty)."""

    @property
    def status(self) -> int | None:
        return None if self.response is None else self.response.status


class RobotsFetcher:
    """Fetches one kind of policy file (robots.txt unless ``kind`` says otherwise) for
    the middleware, one call of :meth:`fetch` per fetch.

    ``priority``: the download priority of its requests (the middleware's
    ``DOWNLOAD_PRIORITY``, as with the stock middleware).
    """

    def __init__(
        self,
        crawler: Crawler,
        config: RobotsConfig,
        kind: FileKind = ROBOTS_TXT,
        *,
        priority: int = DOWNLOAD_PRIORITY,
    ) -> None:
        self.crawler = crawler
        self.config = config
        self.kind = kind
        self._priority = priority
        self._stats = crawler.stats
        # robots.txt downloads in flight, and those whose body is counted as it
        # arrives: headers_received is connected only while there is one of
        # the first, bytes_received while there is one of the second (a
        # robots.txt with a Content-Length within the limit needs no counting),
        # so page downloads pay for neither most of the time.
        self._in_flight = 0
        self._feeding = 0

    def url_of(self, origin: Origin) -> str:
        """The URL of the file fetched for ``origin``."""
        url = self.kind.url_for(origin)
        if url is None:
            raise ValueError(f"{origin.key} has no {self.kind.name}")
        return url

    def _inc(self, stat: str) -> None:
        """Count one fetch event, named as robots.txt's (``robotstxt/redirect/hops``): under
        the file's own prefix for another file (:meth:`FileKind.stat`)."""
        self._stats.inc_value(self.kind.stat(stat))

    def start(self, origin: Origin) -> Download:
        """Start downloading ``origin``'s robots.txt now; :meth:`fetch` takes it from there."""
        return self._start(self.url_of(origin), origin)

    async def fetch(self, origin: Origin, started: Download | None = None) -> FetchResult:
        """Fetch ``origin``'s robots.txt, following redirects; never raises for download errors.

        ``started``: its first download, begun by :meth:`start`.
        """
        url = self.url_of(origin)
        seen = {url}
        redirects: list[str] = []
        hops: list[Response] = []
        while True:
            download, started = started or self._start(url, origin), None
            result = await self._finish(download)
            result.request = download.request
            response = result.response
            if response is None or not is_redirect(response.status):
                result.redirects, result.hops = redirects, hops
                return result
            location = response.headers.get(b"Location")
            if not location:
                result.redirects, result.hops = redirects, hops
                return result  # a redirect status without a target: outcome "as 404"
            target = urljoin(response.url, safe_url_string(location.decode("latin-1")))
            problem = self._unfollowable(target, seen, len(redirects))
            if problem is not None:
                return FetchResult(
                    FetchOutcome.ALLOW_ALL,
                    problem,
                    response=response,
                    redirects=redirects,
                    hops=hops,
                    request=download.request,
                )
            self._inc("robotstxt/redirect/hops")
            seen.add(target)
            redirects.append(target)
            hops.append(response)
            url = target

    def _unfollowable(self, target: str, seen: set[str], hops: int) -> str | None:
        """Why the redirect to ``target`` is not followed (outcome "as 404"), or None."""
        if hops >= self.config.max_redirects:
            self._inc("robotstxt/redirect/too_many")
            return f"more than {self.config.max_redirects} redirects"
        if target in seen:
            self._inc("robotstxt/redirect/loop")
            return f"redirect loop back to {target}"
        try:
            followable = origin_of(target) is not None
        except ValueError:
            followable = False
        return None if followable else f"redirect to an unusable URL {target}"

    # -- one download ----------------------------------------------------

    def _request(self, url: str, origin: Origin) -> Request:
        meta: dict[str, Any] = {
            "dont_obey_robotstxt": True,
            # Retried by the plugin's own backoff only: one download per attempt,
            # no "Gave up retrying" ERROR for a handled unreachable origin.
            "dont_retry": True,
            # Followed here (SPEC B3), whatever the redirect middleware does.
            "dont_redirect": True,
            "handle_httpstatus_all": True,
            # The download is stopped at ROBOTSTXT_MAX_SIZE by the
            # bytes_received handler; DOWNLOAD_MAXSIZE must not fail a large
            # robots.txt (announced in Content-Length) before that.
            "download_maxsize": 0,
            "download_warnsize": 0,
            LIMIT_META: BodyLimit(self.config.max_size),
            ORIGIN_META: origin.key,
        }
        return Request(
            url,
            callback=NO_CALLBACK,
            priority=self._priority,
            meta=meta,
            headers={b"Accept-Encoding": _ACCEPT_ENCODING},
        )

    def _start(self, url: str, origin: Origin) -> Download:
        request = self._request(url, origin)
        self._listen()
        try:
            return Download(url, request, engine_download(self.crawler.engine, request))
        except BaseException:
            self._unlisten()
            raise

    async def _finish(self, download: Download) -> FetchResult:
        url, limit = download.url, download.request.meta[LIMIT_META]
        try:
            response = await download.response
        except StopDownload as stop:
            # Raised with fail=True by our own handlers: the body was stopped
            # before HttpCompressionMiddleware could inflate it.
            if stop.response is None:  # pragma: no cover - Scrapy always attaches it
                return self._failed(url, stop)
            return self._from_response(stop.response, limit.body(), limit)
        except IgnoreRequest as exc:
            # Scrapy's meaning: a middleware chose not to fetch robots.txt.
            self._inc("robotstxt/request_ignored")
            return FetchResult(
                FetchOutcome.ALLOW_ALL,
                f"request ignored ({exc or type(exc).__name__})",
                exception=exc,
                ignored=True,
            )
        except Exception as exc:  # every download failure means "unreachable"
            return self._failed(url, exc)
        finally:
            self._unlisten()
            if limit.listening:
                limit.listening = False
                self._feeding -= 1
                if not self._feeding:
                    self.crawler.signals.disconnect(self._on_bytes, signal=signals.bytes_received)
        if limit.started and limit.inflater is not None:
            body = limit.body()
        else:
            # Cached responses never streamed through our handlers; a body
            # still encoded (HttpCompressionMiddleware off) is inflated here.
            body = decode_body(response, self.config.max_size, limit)
        return self._from_response(response, body, limit)

    def _from_response(self, response: Response, body: bytes, limit: BodyLimit) -> FetchResult:
        self._inc("robotstxt/response_count")
        self._inc(f"robotstxt/response_status_count/{response.status}")
        outcome = outcome_for_status(response.status)
        truncated = limit.truncated
        if outcome is FetchOutcome.RULES:
            if limit.unsupported is not None:
                self._inc("robotstxt/unsupported_encoding")
                logger.warning(
                    "%(file)s %(url)s came in an encoding it was not asked for (%(encoding)s); "
                    "read as empty",
                    {"file": self.kind.name, "url": response.url, "encoding": limit.unsupported},
                    extra={"spider": self.crawler.spider},
                )
            if len(body) > self.config.max_size:
                body, truncated = body[: self.config.max_size], True
            if truncated:
                self._inc("robotstxt/truncated")
                logger.info(
                    "%(file)s %(url)s is larger than ROBOTSTXT_MAX_SIZE (%(max)d bytes); "
                    "only its first %(max)d bytes are used",
                    {"file": self.kind.name, "url": response.url, "max": self.config.max_size},
                    extra={"spider": self.crawler.spider},
                )
        else:
            body = b""
        whole = outcome is FetchOutcome.RULES and not truncated and limit.unsupported is None
        return FetchResult(
            outcome,
            f"HTTP {response.status}",
            body=body,
            response=response,
            truncated=truncated,
            whole=whole,
        )

    def _failed(self, url: str, exc: BaseException) -> FetchResult:
        self._inc(f"robotstxt/exception_count/{type(exc)}")
        return FetchResult(
            FetchOutcome.UNREACHABLE, f"{type(exc).__name__}: {exc}".rstrip(": "), exception=exc
        )

    # -- signal handlers (connected while a robots.txt download runs) ------

    def _listen(self) -> None:
        if not self._in_flight:
            self.crawler.signals.connect(self._on_headers, signal=signals.headers_received)
        self._in_flight += 1

    def _unlisten(self) -> None:
        self._in_flight -= 1
        if not self._in_flight:
            self.crawler.signals.disconnect(self._on_headers, signal=signals.headers_received)

    def _on_headers(self, headers: Headers, request: Request, **_: Any) -> None:
        limit = request.meta.get(LIMIT_META)
        if limit is None:
            return
        stop = limit.start(headers)
        if stop is not None:
            raise stop
        if not limit.listening and limit.needs_feeding(headers):
            limit.listening = True
            if not self._feeding:
                self.crawler.signals.connect(self._on_bytes, signal=signals.bytes_received)
            self._feeding += 1

    def _on_bytes(self, data: bytes, request: Request, **_: Any) -> None:
        limit = request.meta.get(LIMIT_META)
        if limit is not None:
            stop = limit.feed(data)
            if stop is not None:
                raise stop


@dataclass
class Download:
    """A robots.txt download handed to the engine: its URL, request, and the response to await."""

    url: str
    request: Request
    response: Awaitable[Response]
