"""Google-compatible robots.txt parsing and matching, standard library only.

Follows google/robotstxt (``robots.cc``) byte for byte: ``parse`` a body once,
then ask :meth:`RobotsTxt.allowed` / :meth:`RobotsTxt.explain` many times
(and :meth:`RobotsTxt.usage` for the AI usage preferences, whose lines
``scrapy_googlerobots.usagerules`` reads; their names are re-exported here).
Core: imports the standard library and the other core packages only, so it
can be lifted out as a library of its own.
"""

from __future__ import annotations

from scrapy_googlerobots.usagerules import (
    USAGE_CATEGORIES,
    USAGE_DIRECTIVES,
    USAGE_VOCABULARIES,
    UsageLine,
    UsageRule,
    parse_usage_header,
    parse_usage_line,
    usage_category,
)

from ._lines import MAX_LINE_LENGTH, LineKind, RobotsLine, scan_lines
from ._robots import GOOGLE_MAX_SIZE, RequestRate, RobotsTxt, Verdict, parse, product_token

__all__ = [
    "GOOGLE_MAX_SIZE",
    "MAX_LINE_LENGTH",
    "USAGE_CATEGORIES",
    "USAGE_DIRECTIVES",
    "USAGE_VOCABULARIES",
    "LineKind",
    "RequestRate",
    "RobotsLine",
    "RobotsTxt",
    "UsageLine",
    "UsageRule",
    "Verdict",
    "parse",
    "parse_usage_header",
    "parse_usage_line",
    "product_token",
    "scan_lines",
    "usage_category",
]
