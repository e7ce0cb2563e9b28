"""Per-request log lines: built only when a handler keeps DEBUG, and the summary
names the forbidding rule either way.

Scrapy leaves the root logger at NOTSET and applies ``LOG_LEVEL`` in its
handlers, so ``isEnabledFor(DEBUG)`` is true at every ``LOG_LEVEL``; a DEBUG
call per forbidden request would build a record each time for nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from scrapy import Request
from scrapy.utils.test import get_crawler

from scrapy_googlerobots.crawl.stock_parser import GoogleRobotParser
from scrapy_googlerobots.policy.origin import OriginRef, origin_of
from scrapy_googlerobots.reporting.explain import (
    RobotsDecision,
    UsagePreference,
    explain_rules,
    forbidden_by,
)
from scrapy_googlerobots.reporting.reporter import Reporter, debug_shown
from scrapy_googlerobots.robotstxt import parse
from scrapy_googlerobots.runtime.config import RobotsConfig

# The documented name users filter on (docs/reference/logs.rst).
OURS = logging.getLogger("scrapy_googlerobots.reporting.reporter")


class _Counting(logging.Handler):
    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def root_handlers(*handlers: logging.Handler) -> Iterator[None]:
    """The root logger as Scrapy sets it up (level NOTSET, levels on the handlers),
    with only ``handlers`` (pytest's own capture handlers set aside)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers[:] = list(handlers)
    root.setLevel(logging.NOTSET)
    try:
        yield
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_debug_shown_follows_the_handlers_not_the_logger_level() -> None:
    with root_handlers(_Counting(logging.WARNING)):
        assert OURS.isEnabledFor(logging.DEBUG)  # what made the old guard useless
        assert not debug_shown()
    with root_handlers(_Counting(logging.WARNING), _Counting(logging.DEBUG)):
        assert debug_shown()
    with root_handlers():
        assert not debug_shown()  # logging.lastResort shows WARNING and up only
    with root_handlers(_Counting(logging.DEBUG)):
        OURS.setLevel(logging.INFO)
        try:
            assert not debug_shown()
        finally:
            OURS.setLevel(logging.NOTSET)


def test_forbidden_names_the_rule_without_a_debug_line() -> None:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    config = RobotsConfig.from_settings(crawler.settings)
    reporter = Reporter(crawler, config, None, GoogleRobotParser.from_robotstxt)  # type: ignore[arg-type]
    rules = parse(b"user-agent: *\nallow: /\n\nuser-agent: bot\ndisallow: /private/\n")
    origin = origin_of("https://example.com/")
    assert origin is not None
    url = "https://example.com/private/x"
    line = -rules.deciding_line(url, "bot")
    assert line == 5
    built: list[logging.LogRecord] = []

    def count(record: logging.LogRecord) -> bool:
        built.append(record)
        return True

    OURS.addFilter(count)  # sees every record made, before any handler
    try:
        with root_handlers(_Counting(logging.WARNING)):
            for _ in range(3):
                error = reporter.forbidden(Request(url), rules, url, "bot", OriginRef(origin), line)
        assert built == []
        with root_handlers(_Counting(logging.DEBUG)):
            reporter.forbidden(Request(url), rules, url, "bot", OriginRef(origin), line)
        assert [r.getMessage() for r in built] == [
            f"Forbidden by robots.txt: <GET {url}> (https://example.com/robots.txt line 5: "
            '"Disallow: /private/", group "bot")'
        ]
    finally:
        OURS.removeFilter(count)
    [(rule, count)] = reporter.summary.top_rules()
    assert (rule.robots_url, rule.line, rule.rule, count) == (
        "https://example.com/robots.txt",
        5,
        "/private/",
        4,
    )
    assert crawler.stats.get_value("robotstxt/forbidden") == 4
    # The exception still explains itself on demand.
    decision = forbidden_by(error)
    assert decision is not None
    assert (decision.line, decision.rule, decision.group) == (5, "/private/", "bot")


def test_rule_at_gives_the_rule_written_on_a_line() -> None:
    rules = parse(b"user-agent: a\ndisallow: /x\n\nuser-agent: b\nallow: /caf\xc3\xa9\n# note\n")
    assert rules.rule_at(2) == "/x"
    assert rules.rule_at(5) == "/caf\u00e9"
    assert rules.rule_at(1) is None  # a user-agent line
    assert rules.rule_at(6) is None
    assert rules.rule_at(99) is None


def test_usage_forbidden_builds_its_line_only_for_debug_and_counts_apart() -> None:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "ROBOTSTXT_USAGE": ["ai-train"]})
    config = RobotsConfig.from_settings(crawler.settings)
    reporter = Reporter(crawler, config, None, GoogleRobotParser.from_robotstxt)  # type: ignore[arg-type]
    rules = parse(b"user-agent: *\nallow: /\ncontent-signal: /x ai-train=no\n")
    url, robots_url = "https://example.com/x/1", "https://example.com/robots.txt"
    found = rules.usage(url, "bot")
    refused = UsagePreference.of_rule(found["train-ai"], robots_url)
    explained: list[str] = []

    def explain() -> RobotsDecision:
        explained.append(url)
        return explain_rules(rules, url, "bot", robots_url)

    built: list[logging.LogRecord] = []

    def count(record: logging.LogRecord) -> bool:
        built.append(record)
        return True

    OURS.addFilter(count)
    try:
        with root_handlers(_Counting(logging.WARNING)):
            for _ in range(3):
                error = reporter.usage_forbidden(
                    Request(url), refused, explain, "https://example.com"
                )
        assert built == [] and explained == []  # nothing worked out per request
        header = UsagePreference.of_header("train-ai", False, url)
        with root_handlers(_Counting(logging.DEBUG)):
            reporter.usage_forbidden(Request(url), header, explain, "")
        assert [r.getMessage() for r in built] == [
            f"Forbidden by usage preference: <GET {url}> "
            f"(Content-Usage header of {url}: train-ai=n)"
        ]
    finally:
        OURS.removeFilter(count)
    assert str(error) == f"Forbidden by usage preference: train-ai=n ({robots_url} line 3)"
    decision = forbidden_by(error)
    assert decision is not None and decision.usage_refused == refused
    assert str(decision) == f'{robots_url} line 3: "Content-Signal: /x ai-train=no", group "*"'
    assert crawler.stats.get_value("robotstxt/usage/forbidden/train-ai") == 3
    assert crawler.stats.get_value("robotstxt/usage/header_forbidden/train-ai") == 1
    assert crawler.stats.get_value("robotstxt/forbidden") is None
    [(rule, n)] = reporter.summary.top_usage_rules()
    assert (rule.robots_url, rule.line, rule.rule, n) == (
        robots_url,
        3,
        "Content-Signal: /x ai-train=no",
        3,
    )
