"""Answering the spider's own request of an origin's robots.txt with the copy fetched.

:class:`RobotsServer` decides, for a request robots.txt allows whose URL ends
with ``/robots.txt``, whether the copy the crawl fetched can stand for its
download (:mod:`~.robots_copy` builds the response): one fetch per origin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from scrapy_googlerobots.fetching.robots_copy import copy_response, request_fits
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["ROBOTS_PATH", "RobotsServer", "ServeReports"]

ROBOTS_PATH = "/robots.txt"
"""A request whose URL ends so may be for its origin's robots.txt."""


class ServeReports(Protocol):
    """What the server tells the user (the reporting unit implements it)."""

    def robots_served(self, request: Request, origin: str, age: float) -> None: ...

    def robots_not_served(self, reason: str) -> None: ...


class RobotsServer:
    """Answers the spider's requests of robots.txt from the crawl's copies.

    ``download_maxsize``: what the spider's own download may weigh
    (``DOWNLOAD_MAXSIZE``; 0: no limit).
    """

    __slots__ = ("_clock", "_download_maxsize", "_reports")

    def __init__(
        self, reports: ServeReports, clock: Callable[[], float], download_maxsize: int
    ) -> None:
        self._reports = reports
        self._clock = clock
        self._download_maxsize = download_maxsize

    def answer(
        self, request: Request, ref: OriginRef, record: PolicyRecord | None
    ) -> Response | None:
        """The copy of ``ref``'s robots.txt if ``request`` (allowed) asks for it and it can
        stand for the download; None (download it) otherwise."""
        if not request.url.endswith(ROBOTS_PATH):
            return None
        return self.serve(request, ref, record)

    def serve(
        self, request: Request, ref: OriginRef, record: PolicyRecord | None
    ) -> Response | None:
        """``request`` (its URL ends with /robots.txt, allowed) answered from ``record``, or None.

        Answered only when it is the origin's robots.txt URL itself, asked for
        as the middleware's fetch asked for it (``robots_copy.request_fits``),
        and the copy is fresh (within its lifetime) and kept whole with its
        headers (a 2xx, not redirected, not cut at ``ROBOTSTXT_MAX_SIZE``).
        """
        if request.url != ref.origin.robots_url:
            return None  # some other path ending with /robots.txt
        reports = self._reports
        if not request_fits(request):
            reports.robots_not_served("request")
            return None
        now = self._clock()
        if (
            record is None
            or record.headers is None
            or record.status is None
            or record.outcome is not FetchOutcome.RULES
        ):
            reports.robots_not_served("copy")
            return None
        if now >= record.expires_at:
            reports.robots_not_served("expired")
            return None
        limit = request.meta.get("download_maxsize", self._download_maxsize)
        if limit and len(record.body or b"") > limit:
            reports.robots_not_served("copy")  # the download would be cancelled
            return None
        response = copy_response(record, request)
        reports.robots_served(request, ref.key, now - record.fetched_at)
        return response
