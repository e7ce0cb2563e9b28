"""Obey robots.txt in Scrapy exactly the way Googlebot does.

The Scrapy-facing names are imported lazily so that the stdlib-only core,
:mod:`scrapy_googlerobots.robotstxt`, can be used without importing Scrapy.
The package's signals (``robots_parsed``) are in ``scrapy_googlerobots.signals``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Addon",
    "GoogleRobotParser",
    "GoogleRobotsTxtMiddleware",
    "PageDirectivesMiddleware",
    "PageRefusal",
    "RobotsDecision",
    "__version__",
    "forbidden_by",
]

_LAZY = {
    "GoogleRobotsTxtMiddleware": "scrapy_googlerobots.crawl.middleware",
    "GoogleRobotParser": "scrapy_googlerobots.crawl.stock_parser",
    "Addon": "scrapy_googlerobots.crawl.addon",
    "PageDirectivesMiddleware": "scrapy_googlerobots.optouts.page_directives",
    "PageRefusal": "scrapy_googlerobots.reporting.explain",
    "RobotsDecision": "scrapy_googlerobots.reporting.explain",
    "forbidden_by": "scrapy_googlerobots.reporting.explain",
}

if TYPE_CHECKING:
    from scrapy_googlerobots.crawl.addon import Addon
    from scrapy_googlerobots.crawl.middleware import GoogleRobotsTxtMiddleware
    from scrapy_googlerobots.crawl.stock_parser import GoogleRobotParser
    from scrapy_googlerobots.optouts.page_directives import PageDirectivesMiddleware
    from scrapy_googlerobots.reporting.explain import PageRefusal, RobotsDecision, forbidden_by


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_googlerobots' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
