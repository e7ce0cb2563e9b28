"""No Scrapy deprecation on the way in: our components built by Scrapy's own managers.

setup.cfg turns every ``ScrapyDeprecationWarning`` into an error for the whole
suite; this test says so itself, so that it holds whatever filters a run adds,
and it builds each component the way a crawl does (Scrapy's middleware
managers check the signatures of the hooks they find, and warn then).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from scrapy import Spider
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.utils.test import get_crawler

from scrapy_googlerobots import GoogleRobotsTxtMiddleware, PageDirectivesMiddleware

AGENT = "TestBot/1.0 (+http://test.example/bot)"
OURS = "scrapy_googlerobots.GoogleRobotsTxtMiddleware"
STOCK = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
PAGES = "scrapy_googlerobots.PageDirectivesMiddleware"

CONFIGURATIONS: dict[str, dict[str, Any]] = {
    # The add-on: our downloader middleware in the stock one's place, and the spider one.
    "addon": {"ADDONS": {"scrapy_googlerobots.Addon": 0}},
    # By hand, as docs/setup.rst shows.
    "by_hand": {
        "DOWNLOADER_MIDDLEWARES": {OURS: 100, STOCK: None},
        "SPIDER_MIDDLEWARES": {PAGES: 950},
    },
    # The stock middleware with our parser (ROBOTSTXT_PARSER).
    "stock_with_our_parser": {"ROBOTSTXT_PARSER": "scrapy_googlerobots.GoogleRobotParser"},
}


@pytest.mark.parametrize("name", CONFIGURATIONS)
def test_the_managers_build_our_components_without_a_deprecation(name: str) -> None:
    settings = {"ROBOTSTXT_OBEY": True, "USER_AGENT": AGENT, **CONFIGURATIONS[name]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScrapyDeprecationWarning)
        crawler = get_crawler(Spider, settings_dict=settings)
        downloader = DownloaderMiddlewareManager.from_crawler(crawler)
        spider = SpiderMiddlewareManager.from_crawler(crawler)
    built = {type(mw) for mw in [*downloader.middlewares, *spider.middlewares]}
    if name == "stock_with_our_parser":
        assert RobotsTxtMiddleware in built and GoogleRobotsTxtMiddleware not in built
    else:
        assert {GoogleRobotsTxtMiddleware, PageDirectivesMiddleware} <= built
        assert RobotsTxtMiddleware not in built
