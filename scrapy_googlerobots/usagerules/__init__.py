"""Core: AI usage preferences, ``Content-Usage`` and ``Content-Signal`` (stdlib only).

An RFC 9651 structured-field Dictionary parser (``_sf``) and the two usage
vocabularies read from robots.txt lines and the ``Content-Usage`` header
(``_usage``). Imports the standard library only; the robots.txt core imports it.
"""

from __future__ import annotations

from ._usage import (
    CONTENT_SIGNAL,
    CONTENT_USAGE,
    USAGE_CATEGORIES,
    USAGE_DIRECTIVES,
    USAGE_VOCABULARIES,
    UsageLine,
    UsageRule,
    parse_usage_header,
    parse_usage_line,
    usage_category,
)

__all__ = [
    "CONTENT_SIGNAL",
    "CONTENT_USAGE",
    "USAGE_CATEGORIES",
    "USAGE_DIRECTIVES",
    "USAGE_VOCABULARIES",
    "UsageLine",
    "UsageRule",
    "parse_usage_header",
    "parse_usage_line",
    "usage_category",
]
