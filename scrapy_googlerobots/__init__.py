"""Obey robots.txt in Scrapy exactly the way Googlebot does.

The Scrapy-facing names are imported lazily so that the stdlib-only core,
:mod:`scrapy_googlerobots.robotstxt`, can be used without importing Scrapy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Addon",
    "GoogleRobotParser",
    "GoogleRobotsTxtMiddleware",
    "RobotsDecision",
    "__version__",
    "forbidden_by",
]

_LAZY = {
    "GoogleRobotsTxtMiddleware": "scrapy_googlerobots.integration.middleware",
    "GoogleRobotParser": "scrapy_googlerobots.integration.parser",
    "Addon": "scrapy_googlerobots.integration.addon",
    "RobotsDecision": "scrapy_googlerobots.integration.explain",
    "forbidden_by": "scrapy_googlerobots.integration.explain",
}

if TYPE_CHECKING:
    from scrapy_googlerobots.integration.addon import Addon
    from scrapy_googlerobots.integration.explain import RobotsDecision, forbidden_by
    from scrapy_googlerobots.integration.middleware import GoogleRobotsTxtMiddleware
    from scrapy_googlerobots.integration.parser import GoogleRobotParser


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_googlerobots' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
