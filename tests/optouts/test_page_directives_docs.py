"""The Python examples of docs/usage/page-directives.rst, run as they are written.

Each block is executed as it stands and its classes put in a real crawl of a
local site (a ``noindex`` page and a plain one), under setup.cfg's
``error::ScrapyDeprecationWarning``: a signature a supported Scrapy deprecates
fails here. The settings blocks are the crawl's settings.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest_twisted
from scrapy import Spider, signals

from docs_text import DOCS, code_blocks
from servers import Reply, Site, run_crawl

PAGE = (DOCS / "usage" / "page-directives.rst").read_text(encoding="utf-8")
BLOCKS = code_blocks(PAGE, "python")
AGENT = "TestBot/1.0 (+http://test.example/bot)"


def _run(marker: str) -> dict[str, Any]:
    """The names the page's one block containing ``marker`` defines, run as written."""
    [code] = [block for block in BLOCKS if marker in block]
    names: dict[str, Any] = {}
    exec(compile(code, f"page-directives.rst: {marker}", "exec"), names)
    return names


def _site(site: Site) -> list[str]:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nAllow: /\n"))
    site.script("/noindex", Reply(200, b"<html></html>", {"X-Robots-Tag": "noindex"}))
    site.script("/plain", Reply(200, b"<html></html>"))
    return [site.url("/noindex"), site.url("/plain")]


class _DocsSpider(Spider):
    """The page's ``parse`` example, then one item per page; items scraped are kept."""

    name = "docs"
    docs_parse = staticmethod(_run("def parse(self, response)")["parse"])

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.scraped = []
        crawler.signals.connect(
            lambda item, **_: spider.scraped.append(item), signal=signals.item_scraped, weak=False
        )
        return spider

    def parse(self, response: Any) -> Any:
        self.docs_parse(self, response)
        yield {"url": response.url}


def _settings(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"USER_AGENT": AGENT, "DOWNLOAD_TIMEOUT": 5, **extra}
    for names in blocks:
        settings.update({k: v for k, v in names.items() if k.isupper()})
    return settings


@pytest_twisted.ensureDeferred
async def test_the_parse_example_and_the_noindex_pipeline_in_a_crawl(site: Site) -> None:
    urls = _site(site)
    pipeline = _run("class NoindexPipeline")
    settings = _settings(
        _run('ADDONS = {"scrapy_googlerobots.Addon": 0}'),
        pipeline,
        ITEM_PIPELINES={pipeline["NoindexPipeline"]: 300},
    )
    result = await run_crawl(settings, urls, _DocsSpider)
    scraped = sorted(result.crawler.spider.scraped, key=lambda item: item["url"])
    assert scraped == [
        {"url": urls[0], "robots_noindex": "X-Robots-Tag: noindex"},
        {"url": urls[1]},
    ], "the pipeline passed every item on, marked as the page says"
    assert "noindex (X-Robots-Tag: noindex)" in result.messages(logging.DEBUG, logger="docs")


@pytest_twisted.ensureDeferred
async def test_the_dropped_items_extension_in_a_crawl(site: Site) -> None:
    urls = _site(site)
    extension = _run("class DroppedItems")["DroppedItems"]
    settings = _settings(
        _run('SPIDER_MIDDLEWARES = {"scrapy_googlerobots.PageDirectivesMiddleware": 950}'),
        ROBOTSTXT_OBEY=True,
        ROBOTSTXT_PAGE_NOINDEX_ITEMS="drop",
        EXTENSIONS={extension: 500},
    )
    result = await run_crawl(settings, urls, _DocsSpider)
    assert [item["url"] for item in result.crawler.spider.scraped] == [urls[1]]
    assert result.messages(logging.INFO, logger="docs") == [
        f"dropped: X-Robots-Tag: noindex of {urls[0]}"
    ]
