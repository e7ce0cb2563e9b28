"""Real crawls and the local cache's memory budget (issue 21): quiet origins come back
without a re-fetch and with the same verdicts; past the budget, eviction is counted and told.

Every origin is a port of 127.0.0.1. The crawl meets every origin once, then,
when idle, comes back to each with a page its robots.txt forbids (judged by
the copy kept for it). ``tests/stores/test_memory_budget.py`` checks the same at 12,000
origins against the store, where a crawl would take minutes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
import pytest_twisted
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.robotstxt import parse
from scrapy_googlerobots.stores.memory_cost import hot_cost

from middleware_support import robots_settings, robots_stats
from servers import RecordingSpider, Reply, Site, run_crawl

ORIGINS = 300


def robots_body(index: int, usage: bytes = b"") -> bytes:
    """About 4 KB, like an average robots.txt; forbids /private-<index>; ``usage``
    lines (Content-Usage) go into its group."""
    lines = [b"User-agent: *", b"Disallow: /private-%d" % index]
    lines += [b"Disallow: /section-%d/item-%d/" % (n, index) for n in range(150)]
    return b"\n".join(lines) + b"\n" + usage


class TwoPassSpider(RecordingSpider):
    """Requests its start URLs; once idle, each origin's /private-<n>."""

    name = "two-pass"
    origins: list[str]
    # The second pass: f"{origin}/{path}-<n>" with this meta.
    second_path = "private"
    second_meta: ClassVar[dict[str, Any]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Spider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.came_back = False
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        return spider

    def idle(self) -> None:
        if self.came_back:
            return
        self.came_back = True
        engine = self.crawler.engine
        assert engine is not None
        for index, origin in enumerate(self.origins):
            url = f"{origin}/{self.second_path}-{index}"
            meta = dict(self.second_meta)
            engine.crawl(Request(url, meta=meta, callback=self.parse, errback=self.on_error))
        raise DontCloseSpider


@pytest.fixture
def origins(make_site: Callable[..., Site]) -> Iterator[list[Site]]:
    sites = []
    for index in range(ORIGINS):
        site = make_site()
        site.script("/robots.txt", Reply(200, robots_body(index)))
        sites.append(site)
    yield sites


async def two_passes(
    sites: list[Site], second_path: str = "private", second_meta: Any = None, **settings: Any
) -> Any:
    TwoPassSpider.origins = [site.url("") for site in sites]
    TwoPassSpider.second_path = second_path
    TwoPassSpider.second_meta = second_meta or {}
    return await run_crawl(
        robots_settings(CONCURRENT_REQUESTS=64, CONCURRENT_REQUESTS_PER_DOMAIN=64, **settings),
        [site.url("/first") for site in sites],
        spider_cls=TwoPassSpider,
        timeout=240.0,
    )


def all_hot_bytes(sites: list[Site]) -> int:
    """What the local cache would hold with every origin parsed (its own estimate)."""
    total = 0
    for index, site in enumerate(sites):
        body = robots_body(index)
        key = f"http://127.0.0.1:{site.port}"
        total += hot_cost(PolicyRecord(key, FetchOutcome.RULES, body=body, rules=parse(body)))
    return total


@pytest_twisted.ensureDeferred
async def test_quiet_origins_are_not_fetched_again_and_judge_the_same(
    origins: list[Site],
) -> None:
    # A budget that would hold every origin parsed, of which the hot set may
    # use an eighth: most origins go quiet (compact), none is forgotten.
    budget = all_hot_bytes(origins)
    result = await two_passes(origins, ROBOTSTXT_CACHE_MEMORY=budget)
    stats = robots_stats(result)
    assert [site.hits("/robots.txt") for site in origins] == [1] * ORIGINS
    assert "robotstxt/cache/evicted" not in stats
    assert sorted(result.downloaded) == sorted(site.url("/first") for site in origins)
    assert all(site.hits(f"/private-{i}") == 0 for i, site in enumerate(origins))
    assert stats["robotstxt/forbidden"] == ORIGINS
    assert not [m for m in result.messages(logging.INFO) if "cache is full" in m]


@pytest_twisted.ensureDeferred
async def test_past_the_budget_eviction_is_counted_and_told_once(origins: list[Site]) -> None:
    origins = origins[:40]  # ~1 KB each when quiet: ~20 fit in 20 KB
    result = await two_passes(origins, ROBOTSTXT_CACHE_MEMORY=20_000)
    stats = robots_stats(result)
    fetches = sum(site.hits("/robots.txt") for site in origins)
    assert stats["robotstxt/cache/evicted"] >= fetches - len(origins) > 0
    assert all(site.hits(f"/private-{i}") == 0 for i, site in enumerate(origins))
    told = [m for m in result.messages(logging.INFO) if "cache is full" in m]
    assert len(told) == 1 and "ROBOTSTXT_CACHE_MEMORY" in told[0], told


@pytest_twisted.ensureDeferred
async def test_quiet_origins_keep_their_usage_preferences(origins: list[Site]) -> None:
    # Usage rules (issue 20) live only in the parsed rules: an origin gone
    # quiet and parsed again from its compact body still refuses a declared use.
    origins = origins[:60]
    usage = b"Content-Usage: train-ai=n, search=y\n"
    for index, site in enumerate(origins):
        site.script("/robots.txt", Reply(200, robots_body(index, usage)))
    budget = all_hot_bytes(origins)
    result = await two_passes(
        origins, "page", {"robotstxt_usage": ["train-ai"]}, ROBOTSTXT_CACHE_MEMORY=budget
    )
    stats = robots_stats(result)
    assert [site.hits("/robots.txt") for site in origins] == [1] * len(origins)
    assert "robotstxt/cache/evicted" not in stats
    assert sorted(result.downloaded) == sorted(site.url("/first") for site in origins)
    assert all(site.hits(f"/page-{i}") == 0 for i, site in enumerate(origins))
    assert stats["robotstxt/usage/forbidden/train-ai"] == len(origins)
    assert "robotstxt/forbidden" not in stats
