"""What the page directives tell the user: the ``robotstxt/page/`` stats and log lines.

One :class:`PageReporter` per :class:`~scrapy_googlerobots.PageDirectivesMiddleware`.
Counts go to the stats as they happen (only pages with directives, and what is
dropped or kept because of them, are counted: a page without any costs nothing
here), so the end-of-crawl summary, rendered at ``spider_closed``, reads them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.reporting.file_reports import stat_counter
from scrapy_googlerobots.reporting.reporter import debug_shown

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_googlerobots.pagedirectives import PageDirectives
    from scrapy_googlerobots.reporting.explain import PageRefusal

__all__ = ["PageReporter", "logger"]

logger = logging.getLogger(__name__)


class PageReporter:
    """Stats and log lines of one crawl's page-level robots directives."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        # Bound once: Scrapy's stats collector wraps attribute access.
        self._inc_value = stat_counter(crawler.stats)
        self._warned_unmarked = False

    @property
    def _extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider}

    def response(self, response: Response, directives: PageDirectives, token: str) -> None:
        """A response with directives: in effect for ``token``, for other crawlers, or malformed."""
        inc = self._inc_value
        if directives.sources:
            inc("robotstxt/page/responses")
            for name, _ in directives.sources:
                inc(f"robotstxt/page/directive/{name}")
        if directives.ignored:
            inc("robotstxt/page/ignored", len(directives.ignored))
        if directives.malformed:
            inc("robotstxt/page/malformed", len(directives.malformed))
        if not debug_shown():
            return
        effective = ", ".join(f"{name} ({source})" for name, source in directives.explain())
        notes = "; ".join(str(rejected) for rejected in directives.ignored)
        malformed = "; ".join(str(rejected) for rejected in directives.malformed)
        logger.debug(
            "Page directives of %(response)s for %(token)s: %(effective)s%(ignored)s%(malformed)s",
            {
                "response": response,
                "token": token,
                "effective": effective or "none in effect",
                "ignored": f"; ignored: {notes}" if notes else "",
                "malformed": f"; malformed: {malformed}" if malformed else "",
            },
            extra=self._extra,
        )

    def request_dropped(
        self, request: Request, response: Response, refusal: PageRefusal, key: str
    ) -> None:
        """A request yielded from a ``nofollow`` page (``key``: ``nofollow`` or ``none``)."""
        self._inc_value(f"robotstxt/page/requests_dropped/{key}")
        if debug_shown():
            logger.debug(
                "Not following %(request)s from %(response)s: %(source)s",
                {"request": request, "response": response, "source": refusal.source},
                extra=self._extra,
            )

    def link_dropped(self, request: Request, response: Response, refusal: PageRefusal) -> None:
        """A request for a link target the page links only with ``rel="nofollow"`` (or ugc, …)."""
        rel = refusal.directive.removeprefix("rel=")
        self._inc_value(f"robotstxt/page/links_dropped/{rel}")
        if debug_shown():
            logger.debug(
                "Not following %(request)s: %(response)s links to it only with %(source)s",
                {"request": request, "response": response, "source": refusal.source},
                extra=self._extra,
            )

    def item(self, response: Response, refusal: PageRefusal, key: str, *, dropped: bool) -> None:
        """An item of a ``noindex`` page (``key``: ``noindex``, ``none``, ``unavailable_after``)."""
        if dropped:
            self._inc_value(f"robotstxt/page/items_dropped/{key}")
        else:
            self._inc_value(f"robotstxt/page/items_kept/{key}")
        if debug_shown():
            logger.debug(
                "%(what)s an item of %(response)s, a noindex page (%(source)s)",
                {
                    "what": "Dropped" if dropped else "Kept",
                    "response": response,
                    "source": refusal.source,
                },
                extra=self._extra,
            )

    def unmarked(self, item: Any, field: str, problem: Exception) -> None:
        """An item of a noindex page that cannot take ``ROBOTSTXT_PAGE_NOINDEX_FIELD``."""
        self._inc_value("robotstxt/page/items_unmarked")
        if self._warned_unmarked:
            return
        self._warned_unmarked = True  # once per crawl: one item type, many items
        logger.warning(
            "Items of noindex pages are kept but cannot be marked: a %(type)s has no field "
            "%(field)r (ROBOTSTXT_PAGE_NOINDEX_FIELD; %(problem)s); declare the field or "
            "count them in the robotstxt/page/items_unmarked stat",
            {"type": type(item).__name__, "field": field, "problem": problem},
            extra=self._extra,
        )
