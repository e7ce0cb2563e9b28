"""Follows links within each start origin; every page becomes an item naming its worker."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider


class PagesSpider(RedisSpider):
    """Start URLs come from the Redis list ``pages:start_urls``, shared by the workers."""

    name = "pages"

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield {"url": response.url, "worker": os.environ.get("WORKER_NAME", str(os.getpid()))}
        yield from response.follow_all(css="a", callback=self.parse)
