"""RobotsConfig.from_settings: defaults, accepted values, and start-up errors that name the fix."""

from __future__ import annotations

import re
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_googlerobots.runtime.config import DEFAULTS, RobotsConfig


def _config(**values: Any) -> RobotsConfig:
    return RobotsConfig.from_settings(Settings(values))


def test_defaults_are_the_issue_defaults() -> None:
    config = _config()
    assert config.obey is False  # Scrapy's own default for ROBOTSTXT_OBEY
    assert config.user_agent is None
    assert config.default_user_agent.startswith("Scrapy/")
    assert (config.max_redirects, config.max_size) == (5, 512_000)
    assert (config.cache_ttl, config.cache_min_ttl, config.cache_max_ttl) == (86_400, 60, 604_800)
    # Issue 21: a memory budget instead of a count (no count cap unless set).
    assert (config.cache_size, config.cache_memory) == (None, 1536 * 2**20)
    assert config.unreachable == "defer"
    assert config.unreachable_allow_after == 2_592_000
    assert config.unreachable_max_wait == 1_800
    assert (config.retry_delay, config.retry_max_delay) == (30, 600)
    assert config.fetch_lease_ttl == 15  # issue 10: short, renewed while the fetch runs
    assert config.parked_lease_ttl == 15  # issue 19: a dead worker's waiting requests adopted
    assert (config.crawl_delay, config.crawl_delay_max) == (False, 60)  # issue 12: opt-in pacing
    assert config.usage == ()  # issue 20: preferences reported, nothing enforced


def test_every_default_is_listed() -> None:
    # docs/reference/settings.rst is checked against DEFAULTS (tests/test_docs_reference.py).
    assert set(DEFAULTS) == {
        "ROBOTSTXT_USER_AGENT",
        "ROBOTSTXT_MAX_REDIRECTS",
        "ROBOTSTXT_MAX_SIZE",
        "ROBOTSTXT_CACHE_TTL",
        "ROBOTSTXT_CACHE_MIN_TTL",
        "ROBOTSTXT_CACHE_MAX_TTL",
        "ROBOTSTXT_CACHE_SIZE",
        "ROBOTSTXT_CACHE_MEMORY",
        "ROBOTSTXT_FETCH_LEASE_TTL",
        "ROBOTSTXT_PARKED_LEASE_TTL",
        "ROBOTSTXT_SUMMARY",
        "ROBOTSTXT_CRAWL_DELAY",
        "ROBOTSTXT_CRAWL_DELAY_MAX",
        "ROBOTSTXT_SLOW_DOWN",
        "ROBOTSTXT_SLOW_DOWN_MAX_PAUSE",
        "ROBOTSTXT_UNREACHABLE",
        "ROBOTSTXT_UNREACHABLE_ALLOW_AFTER",
        "ROBOTSTXT_UNREACHABLE_MAX_WAIT",
        "ROBOTSTXT_RETRY_DELAY",
        "ROBOTSTXT_RETRY_MAX_DELAY",
        "ROBOTSTXT_USAGE",
        "ROBOTSTXT_PAGE_DIRECTIVES",
        "ROBOTSTXT_PAGE_NOFOLLOW",
        "ROBOTSTXT_PAGE_NOINDEX_ITEMS",
        "ROBOTSTXT_PAGE_NOINDEX_FIELD",
        "ROBOTSTXT_PAGE_REL_NOFOLLOW",
        "ROBOTSTXT_EVIDENCE",
    }


@pytest.mark.parametrize(
    ("settings", "attribute", "expected"),
    [
        pytest.param({"ROBOTSTXT_OBEY": "True"}, "obey", True, id="obey_from_string"),
        pytest.param({"ROBOTSTXT_OBEY": 1}, "obey", True, id="obey_from_int"),
        pytest.param(
            {"ROBOTSTXT_USER_AGENT": "  FooBot/1.0 "},
            "user_agent",
            "FooBot/1.0",
            id="agent_stripped",
        ),
        pytest.param(
            {"ROBOTSTXT_USER_AGENT": "   "}, "user_agent", None, id="blank_agent_is_unset"
        ),
        pytest.param({"ROBOTSTXT_USER_AGENT": ""}, "user_agent", None, id="empty_agent_is_unset"),
        pytest.param({"USER_AGENT": "X/1"}, "default_user_agent", "X/1", id="user_agent_kept"),
        pytest.param({"ROBOTSTXT_MAX_REDIRECTS": 0}, "max_redirects", 0, id="no_redirects_allowed"),
        pytest.param({"ROBOTSTXT_MAX_REDIRECTS": "7"}, "max_redirects", 7, id="int_from_string"),
        pytest.param({"ROBOTSTXT_MAX_SIZE": 1}, "max_size", 1, id="tiny_max_size"),
        pytest.param({"ROBOTSTXT_MAX_SIZE": 1024.0}, "max_size", 1024, id="integral_float_size"),
        pytest.param({"ROBOTSTXT_CACHE_TTL": "120"}, "cache_ttl", 120.0, id="ttl_from_string"),
        pytest.param(
            {"ROBOTSTXT_CACHE_TTL": 60, "ROBOTSTXT_CACHE_MIN_TTL": 60},
            "cache_ttl",
            60.0,
            id="ttl_equal_to_min",
        ),
        pytest.param({"ROBOTSTXT_CACHE_MIN_TTL": 0}, "cache_min_ttl", 0.0, id="zero_min_ttl"),
        pytest.param({"ROBOTSTXT_UNREACHABLE": "disallow"}, "unreachable", "disallow", id="mode"),
        pytest.param(
            {"ROBOTSTXT_UNREACHABLE": " Defer "}, "unreachable", "defer", id="mode_normalized"
        ),
        pytest.param(
            {"ROBOTSTXT_UNREACHABLE_ALLOW_AFTER": 0},
            "unreachable_allow_after",
            0.0,
            id="allow_after_zero",
        ),
        pytest.param(
            {"ROBOTSTXT_RETRY_DELAY": 0.2, "ROBOTSTXT_RETRY_MAX_DELAY": 0.2},
            "retry_delay",
            0.2,
            id="delay_equal_to_max",
        ),
        pytest.param({"ROBOTSTXT_CACHE_SIZE": 1}, "cache_size", 1, id="cache_of_one"),
        pytest.param({"ROBOTSTXT_CACHE_MEMORY": "1000"}, "cache_memory", 1000, id="memory_str"),
        pytest.param({"ROBOTSTXT_CACHE_MEMORY": 0}, "cache_memory", None, id="memory_no_cap"),
    ],
)
def test_accepted_values(settings: dict[str, Any], attribute: str, expected: object) -> None:
    assert getattr(_config(**settings), attribute) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param([], (), id="empty"),
        pytest.param(None, (), id="none"),
        pytest.param(["train-ai"], ("train-ai",), id="ietf"),
        pytest.param(["ai-train", "ai-input"], ("train-ai", "ai-use"), id="content_signals"),
        pytest.param(("search", "train-ai"), ("search", "train-ai"), id="tuple_order_kept"),
        pytest.param(["train-ai", "ai-train", "train-ai"], ("train-ai",), id="once_each"),
        pytest.param("train-ai, search", ("train-ai", "search"), id="command_line_string"),
        pytest.param(" AI-Train ", ("train-ai",), id="case_and_spaces"),
        pytest.param("", (), id="empty_string"),
    ],
)
def test_usage_setting_values(value: object, expected: tuple[str, ...]) -> None:
    assert _config(ROBOTSTXT_USAGE=value).usage == expected


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param(
            {"ROBOTSTXT_CACHE_MIN_TTL": 700_000},
            "ROBOTSTXT_CACHE_MIN_TTL (700000) is above ROBOTSTXT_CACHE_MAX_TTL (604800)",
            id="min_ttl_above_max_ttl",
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_TTL": 30},
            "ROBOTSTXT_CACHE_TTL (30) must lie between ROBOTSTXT_CACHE_MIN_TTL (60)",
            id="ttl_below_min",
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_TTL": 10**7},
            "ROBOTSTXT_CACHE_TTL (1e+07) must lie between",
            id="ttl_above_max",
        ),
        pytest.param(
            {"ROBOTSTXT_RETRY_DELAY": 900},
            "ROBOTSTXT_RETRY_DELAY (900) is above ROBOTSTXT_RETRY_MAX_DELAY (600)",
            id="retry_delay_above_max",
        ),
        pytest.param(
            {"ROBOTSTXT_UNREACHABLE": "allow"},
            "ROBOTSTXT_UNREACHABLE must be 'defer' (wait for robots.txt) or 'disallow'",
            id="unknown_mode",
        ),
        pytest.param({"ROBOTSTXT_UNREACHABLE": 1}, "ROBOTSTXT_UNREACHABLE must be", id="mode_type"),
        pytest.param(
            {"ROBOTSTXT_MAX_REDIRECTS": -1},
            "ROBOTSTXT_MAX_REDIRECTS must be at least 0, got -1",
            id="negative_redirects",
        ),
        pytest.param(
            {"ROBOTSTXT_MAX_REDIRECTS": "five"},
            "ROBOTSTXT_MAX_REDIRECTS must be a whole number, got 'five'",
            id="redirects_not_a_number",
        ),
        pytest.param(
            {"ROBOTSTXT_MAX_REDIRECTS": 2.5},
            "ROBOTSTXT_MAX_REDIRECTS must be a whole number, got 2.5",
            id="redirects_fractional",
        ),
        pytest.param(
            {"ROBOTSTXT_MAX_SIZE": 0}, "ROBOTSTXT_MAX_SIZE must be at least 1", id="zero_size"
        ),
        pytest.param(
            {"ROBOTSTXT_MAX_SIZE": True},
            "ROBOTSTXT_MAX_SIZE must be a whole number, got True",
            id="size_bool",
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_SIZE": 0}, "ROBOTSTXT_CACHE_SIZE must be at least 1", id="empty_cache"
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_MEMORY": -1},
            "ROBOTSTXT_CACHE_MEMORY must be at least 0",
            id="negative_memory",
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_MEMORY": "512 MB"},
            "ROBOTSTXT_CACHE_MEMORY must be a whole number, got '512 MB'",
            id="memory_with_unit",
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_TTL": "a day"},
            "ROBOTSTXT_CACHE_TTL must be a number of seconds, got 'a day'",
            id="ttl_not_a_number",
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_MAX_TTL": float("inf")},
            "ROBOTSTXT_CACHE_MAX_TTL must be a finite number of seconds",
            id="infinite_ttl",
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_MIN_TTL": float("nan")},
            "ROBOTSTXT_CACHE_MIN_TTL must be a finite number of seconds",
            id="nan_ttl",
        ),
        pytest.param(
            {"ROBOTSTXT_CACHE_MIN_TTL": -1},
            "ROBOTSTXT_CACHE_MIN_TTL must be 0 or more seconds, got -1",
            id="negative_min_ttl",
        ),
        pytest.param(
            {"ROBOTSTXT_UNREACHABLE_ALLOW_AFTER": -5},
            "ROBOTSTXT_UNREACHABLE_ALLOW_AFTER must be 0 or more seconds",
            id="negative_allow_after",
        ),
        pytest.param(
            {"ROBOTSTXT_UNREACHABLE_MAX_WAIT": 0},
            "ROBOTSTXT_UNREACHABLE_MAX_WAIT must be more than 0 seconds",
            id="zero_max_wait",
        ),
        pytest.param(
            {"ROBOTSTXT_RETRY_DELAY": 0},
            "ROBOTSTXT_RETRY_DELAY must be more than 0 seconds",
            id="zero_retry_delay",
        ),
        pytest.param(
            {"ROBOTSTXT_RETRY_MAX_DELAY": -1},
            "ROBOTSTXT_RETRY_MAX_DELAY must be more than 0 seconds",
            id="negative_retry_max",
        ),
        pytest.param(
            {"ROBOTSTXT_USER_AGENT": 42},
            "ROBOTSTXT_USER_AGENT must be a string naming your crawler, got 42",
            id="agent_not_a_string",
        ),
        pytest.param(
            {"ROBOTSTXT_USAGE": ["train-ai", "train-llm"]},
            "ROBOTSTXT_USAGE: unknown usage category 'train-llm'; use train-ai, ai-use, search "
            "(IETF AI Preferences) or ai-train, ai-input, search (Content Signals)",
            id="usage_unknown_category",
        ),
        pytest.param(
            {"ROBOTSTXT_USAGE": 5},
            "ROBOTSTXT_USAGE must be a list of usage categories (e.g. ['train-ai']), got 5",
            id="usage_not_a_list",
        ),
        pytest.param(
            {"ROBOTSTXT_USAGE": ["train-ai", None]},
            "ROBOTSTXT_USAGE: a usage category is a string, got None",
            id="usage_not_a_string",
        ),
        pytest.param(
            {"ROBOTSTXT_EVIDENCE": True},
            "ROBOTSTXT_EVIDENCE must be the path of a directory for the crawl's evidence, got True",
            id="evidence_not_a_path",
        ),
    ],
)
def test_invalid_values_fail_naming_the_setting(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        _config(**settings)
    assert message in str(info.value)


def test_config_is_frozen() -> None:
    config = _config()
    with pytest.raises(AttributeError):
        config.max_size = 1  # type: ignore[misc]


def test_page_directive_defaults() -> None:
    # Issue 26: directives read and nofollow obeyed; items of noindex pages kept, not
    # changed; rel link hints are hints (not obeyed) unless asked.
    config = _config()
    assert (config.page_directives, config.page_nofollow) == (True, True)
    assert (config.page_noindex_items, config.page_noindex_field) == ("keep", None)
    assert config.page_rel_nofollow == ()


@pytest.mark.parametrize(
    ("settings", "attribute", "expected"),
    [
        pytest.param({"ROBOTSTXT_PAGE_DIRECTIVES": "False"}, "page_directives", False, id="off"),
        pytest.param({"ROBOTSTXT_PAGE_NOFOLLOW": 0}, "page_nofollow", False, id="nofollow_off"),
        pytest.param(
            {"ROBOTSTXT_PAGE_NOINDEX_ITEMS": " Drop "}, "page_noindex_items", "drop", id="drop"
        ),
        pytest.param(
            {"ROBOTSTXT_PAGE_NOINDEX_FIELD": " noindex "},
            "page_noindex_field",
            "noindex",
            id="field_stripped",
        ),
        pytest.param(
            {"ROBOTSTXT_PAGE_REL_NOFOLLOW": ["UGC", "nofollow", "ugc", " "]},
            "page_rel_nofollow",
            ("ugc", "nofollow"),
            id="rel_once_each",
        ),
        pytest.param(
            {"ROBOTSTXT_PAGE_REL_NOFOLLOW": "nofollow,sponsored"},
            "page_rel_nofollow",
            ("nofollow", "sponsored"),
            id="rel_command_line_string",
        ),
        pytest.param({"ROBOTSTXT_PAGE_REL_NOFOLLOW": None}, "page_rel_nofollow", (), id="rel_none"),
    ],
)
def test_page_directive_values(settings: dict[str, Any], attribute: str, expected: object) -> None:
    assert getattr(_config(**settings), attribute) == expected


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param(
            {"ROBOTSTXT_PAGE_NOINDEX_ITEMS": "mark"},
            "ROBOTSTXT_PAGE_NOINDEX_ITEMS must be 'keep' (items of noindex pages are kept and "
            "counted) or 'drop', got 'mark'",
            id="unknown_items_mode",
        ),
        pytest.param(
            {"ROBOTSTXT_PAGE_NOINDEX_FIELD": " "},
            "ROBOTSTXT_PAGE_NOINDEX_FIELD must be an item field name",
            id="blank_field",
        ),
        pytest.param(
            {"ROBOTSTXT_PAGE_NOINDEX_FIELD": 3},
            "ROBOTSTXT_PAGE_NOINDEX_FIELD must be an item field name",
            id="field_type",
        ),
        pytest.param(
            {"ROBOTSTXT_PAGE_REL_NOFOLLOW": ["noopener"]},
            "ROBOTSTXT_PAGE_REL_NOFOLLOW: unknown rel value 'noopener'; use nofollow, ugc, "
            "sponsored",
            id="unknown_rel",
        ),
        pytest.param(
            {"ROBOTSTXT_PAGE_REL_NOFOLLOW": True},
            "ROBOTSTXT_PAGE_REL_NOFOLLOW must be a list of link rel values",
            id="rel_type",
        ),
    ],
)
def test_page_directive_errors(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        _config(**settings)
