"""``deciding_line`` is ``explain`` in one integer: the same rule, the sign for the verdict."""

from __future__ import annotations

import pytest

from scrapy_googlerobots.robotstxt import parse

BODY = b"""\
User-agent: *
Disallow: /private/
Allow: /private/open
Disallow: /*.pdf$
Allow: /a/index.html

User-agent: mybot
Disallow:
"""

URLS = [
    "http://example.com/",
    "http://example.com/private/x",
    "http://example.com/private/open/y",
    "http://example.com/file.pdf",
    "http://example.com/file.pdf?x",
    "http://example.com/a/",
    "http://other.example/private/x",
    "http://example.com/K%C3%A4ytt%C3%A4j%C3%A4",
]


@pytest.mark.parametrize("agent", ["anybot", "mybot", "*"])
@pytest.mark.parametrize("url", URLS)
def test_deciding_line_matches_explain(url: str, agent: str) -> None:
    rules = parse(BODY)
    verdict = rules.explain(url, agent)
    line = rules.deciding_line(url, agent)
    assert (line >= 0) is verdict.allowed is rules.allowed(url, agent)
    assert abs(line) == verdict.line
