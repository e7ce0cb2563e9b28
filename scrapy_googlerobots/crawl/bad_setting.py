"""A crawl whose ``ROBOTSTXT_*`` settings cannot work: one ERROR line, nothing crawled.

Scrapy prints an exception raised while it builds the middlewares as a long
traceback (asyncio's or Twisted's) ahead of the one line that matters. The
downloader middleware gives that line itself instead, then stands this object
in its place: every request is refused, none reaches a site unchecked, and
the spider is closed with the finish reason ``robotstxt_bad_setting``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, NoReturn

from scrapy.exceptions import IgnoreRequest

from scrapy_googlerobots.runtime.scrapy_compat import close_spider
from scrapy_googlerobots.runtime.timers import Timer

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

__all__ = ["BAD_SETTING_REASON", "RefuseEverything"]

logger = logging.getLogger(__name__)

BAD_SETTING_REASON = "robotstxt_bad_setting"
"""The finish reason of a crawl stopped by a setting that cannot work."""


class RefuseEverything:
    """The downloader middleware of a crawl whose settings cannot work (``problem``)."""

    def __init__(self, crawler: Crawler, problem: str) -> None:
        self.crawler = crawler
        self.problem = problem
        self._closing = False
        logger.error(
            "%(problem)s. Not crawling: every request is refused and the spider closed "
            "(finish reason %(reason)s)",
            {"problem": problem, "reason": BAD_SETTING_REASON},
        )

    def process_request(self, request: Request, spider: Spider | None = None) -> NoReturn:
        """Refuse ``request``; the first one also closes the spider (the engine runs by then)."""
        if not self._closing:
            self._closing = True
            # Not from inside the downloader's middleware chain: on the next turn.
            Timer(0.0, self._close)
        raise IgnoreRequest(f"Not crawled: {self.problem}")

    def _close(self) -> None:
        close_spider(self.crawler.engine, self.crawler.spider, BAD_SETTING_REASON)
