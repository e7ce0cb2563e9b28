"""One process, no Redis: follows links from ``-a start_url=...``, for the JOBDIR chaos check.

``scrapy crawl links -a start_url=http://... -s JOBDIR=job`` starts a crawl;
``scrapy crawl links -s JOBDIR=job`` (no ``start_url``) only resumes it: the
requests it crawls then come from what ``JOBDIR`` kept, and nothing else
(a restarted start URL would find its links again and hide what was lost).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from scrapy import Request, Spider
from scrapy.http import Response


class LinksSpider(Spider):
    """The stock scheduler and duplicate filter; the robots.txt store in ``JOBDIR``."""

    name = "links"
    custom_settings = {  # noqa: RUF012 - Scrapy's own attribute, read once per crawl
        "SCHEDULER": "scrapy.core.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
        # Empty: the middleware's default, JOBDIR/robotstxt.sqlite.
        "ROBOTSTXT_CACHE_STORE": "",
    }

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url

    async def start(self) -> Any:  # Scrapy >= 2.13
        for request in self.start_requests():
            yield request

    def start_requests(self) -> Iterable[Request]:  # Scrapy < 2.13
        if self.start_url:
            yield Request(self.start_url, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield {"url": response.url, "worker": os.environ.get("WORKER_NAME", str(os.getpid()))}
        yield from response.follow_all(css="a", callback=self.parse)
