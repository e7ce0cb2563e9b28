"""One case per rule of Google's robots meta / X-Robots-Tag reading, every spec example included.

Each row: X-Robots-Tag values, (meta name, content) pairs, our product token,
and the directives then in effect (only those that differ from the default).
"""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from scrapy_googlerobots.pagedirectives import EMPTY, PageDirectives, parse_page_directives

_FIELDS = [
    f.name for f in fields(PageDirectives) if f.name not in ("sources", "ignored", "malformed")
]


def effective(directives: PageDirectives) -> dict[str, Any]:
    return {
        n: getattr(directives, n) for n in _FIELDS if getattr(directives, n) != getattr(EMPTY, n)
    }


PST = timezone(timedelta(hours=-8))
UTC = timezone.utc
JUNE_25_2010_PST = datetime(2010, 6, 25, 15, 0, tzinfo=PST)

NOINDEX = {"noindex": True}
NOFOLLOW = {"nofollow": True}
NONE = {"noindex": True, "nofollow": True}

# (headers, meta, agent, expected)
GOOGLE_SPEC = [
    pytest.param(
        [], [("robots", "noindex")], "googlebot", NOINDEX, id="Google_spec_robots_meta_noindex"
    ),
    pytest.param(
        [],
        [("googlebot", "noindex")],
        "googlebot",
        NOINDEX,
        id="Google_spec_googlebot_meta_noindex",
    ),
    pytest.param(
        [],
        [("googlebot-news", "noindex")],
        "googlebot",
        {},
        id="Google_spec_googlebot_news_meta_not_for_googlebot",
    ),
    pytest.param(
        [],
        [("googlebot-news", "nosnippet")],
        "googlebot-news",
        {"nosnippet": True},
        id="Google_spec_googlebot_news_meta_for_news",
    ),
    pytest.param(
        [],
        [("googlebot", "notranslate"), ("googlebot-news", "nosnippet")],
        "googlebot",
        {"notranslate": True},
        id="Google_spec_multiple_crawlers_separately",
    ),
    pytest.param(
        [],
        [("AdsBot-Google", "noindex")],
        "adsbot-google",
        NOINDEX,
        id="Google_spec_adsbot_by_name",
    ),
    pytest.param(["noindex"], [], "googlebot", NOINDEX, id="Google_spec_header_noindex"),
    pytest.param(
        ["noimageindex", "unavailable_after: 25 Jun 2010 15:00:00 PST"],
        [],
        "googlebot",
        {"noimageindex": True, "unavailable_after": JUNE_25_2010_PST},
        id="Google_spec_two_headers_combine",
    ),
    pytest.param(
        ["noimageindex, unavailable_after: 25 Jun 2010 15:00:00 PST"],
        [],
        "googlebot",
        {"noimageindex": True, "unavailable_after": JUNE_25_2010_PST},
        id="Google_spec_comma_list_in_one_header",
    ),
    pytest.param(
        ["googlebot: nofollow", "otherbot: noindex, nofollow"],
        [],
        "googlebot",
        NOFOLLOW,
        id="Google_spec_agent_prefix_scopes_for_googlebot",
    ),
    pytest.param(
        ["googlebot: nofollow", "otherbot: noindex, nofollow"],
        [],
        "otherbot",
        NONE,
        id="Google_spec_agent_prefix_scopes_for_otherbot",
    ),
    pytest.param(
        ["googlebot: nofollow", "otherbot: noindex, nofollow"],
        [],
        "mybot",
        {},
        id="Google_spec_agent_prefix_scopes_for_third_bot",
    ),
    pytest.param(
        ["googlebot: noindex", "googlebot: indexifembedded"],
        [],
        "googlebot",
        {"noindex": True, "indexifembedded": True},
        id="Google_spec_indexifembedded_headers",
    ),
    pytest.param(
        ["googlebot: noindex, indexifembedded"],
        [],
        "googlebot",
        {"noindex": True, "indexifembedded": True},
        id="Google_spec_indexifembedded_one_header",
    ),
    pytest.param(
        [],
        [("googlebot", "noindex"), ("googlebot", "indexifembedded")],
        "googlebot",
        {"noindex": True, "indexifembedded": True},
        id="Google_spec_indexifembedded_meta",
    ),
    pytest.param([], [("robots", "all")], "googlebot", {}, id="Google_spec_all_is_no_restriction"),
    pytest.param([], [("robots", "nofollow")], "googlebot", NOFOLLOW, id="Google_spec_nofollow"),
    pytest.param([], [("robots", "none")], "googlebot", NONE, id="Google_none_is_noindex_nofollow"),
    pytest.param(
        [], [("robots", "nosnippet")], "googlebot", {"nosnippet": True}, id="Google_spec_nosnippet"
    ),
    pytest.param(
        [], [("robots", "noarchive")], "googlebot", {"noarchive": True}, id="Google_spec_noarchive"
    ),
    pytest.param(
        [],
        [("robots", "notranslate")],
        "googlebot",
        {"notranslate": True},
        id="Google_spec_notranslate",
    ),
    pytest.param(
        [],
        [("robots", "noimageindex")],
        "googlebot",
        {"noimageindex": True},
        id="Google_spec_noimageindex",
    ),
    pytest.param(
        [],
        [("robots", "max-snippet:0")],
        "googlebot",
        {"max_snippet": 0, "nosnippet": True},
        id="Google_max_snippet_0_is_nosnippet",
    ),
    pytest.param(
        [],
        [("robots", "max-snippet:-1")],
        "googlebot",
        {"max_snippet": -1},
        id="Google_max_snippet_minus_1_no_limit",
    ),
    pytest.param(
        [],
        [("robots", "max-snippet:20")],
        "googlebot",
        {"max_snippet": 20},
        id="Google_spec_max_snippet_20",
    ),
    pytest.param(
        [],
        [("robots", "max-image-preview:none")],
        "googlebot",
        {"max_image_preview": "none"},
        id="Google_spec_max_image_preview_none",
    ),
    pytest.param(
        [],
        [("robots", "max-image-preview:standard")],
        "googlebot",
        {"max_image_preview": "standard"},
        id="Google_spec_max_image_preview_standard",
    ),
    pytest.param(
        [],
        [("robots", "max-image-preview:large")],
        "googlebot",
        {"max_image_preview": "large"},
        id="Google_spec_max_image_preview_large",
    ),
    pytest.param(
        [],
        [("robots", "max-video-preview:0")],
        "googlebot",
        {"max_video_preview": 0},
        id="Google_spec_max_video_preview_0_static_image",
    ),
    pytest.param(
        [],
        [("robots", "max-video-preview:-1")],
        "googlebot",
        {"max_video_preview": -1},
        id="Google_spec_max_video_preview_no_limit",
    ),
    pytest.param(
        [],
        [("robots", "max-video-preview:15")],
        "googlebot",
        {"max_video_preview": 15},
        id="Google_spec_max_video_preview_seconds",
    ),
    pytest.param(
        [],
        [("robots", "unavailable_after: 2020-09-21")],
        "googlebot",
        {"unavailable_after": datetime(2020, 9, 21, tzinfo=UTC)},
        id="Google_unavailable_after_iso8601",
    ),
    pytest.param(
        [],
        [("robots", "noindex, nofollow")],
        "googlebot",
        NONE,
        id="Google_spec_comma_separated_meta",
    ),
    pytest.param(
        [],
        [("robots", "max-snippet:20, max-image-preview:large")],
        "googlebot",
        {"max_snippet": 20, "max_image_preview": "large"},
        id="Google_spec_combined_values",
    ),
    pytest.param(
        [],
        [("robots", "nofollow"), ("googlebot", "noindex")],
        "googlebot",
        NONE,
        id="Google_spec_robots_and_googlebot_sum",
    ),
    pytest.param(
        [],
        [("robots", "max-snippet:-1, max-image-preview:large, max-video-preview:-1")],
        "googlebot",
        {"max_snippet": -1, "max_image_preview": "large", "max_video_preview": -1},
        id="Google_spec_allow_maximum_previews",
    ),
    pytest.param(
        [],
        [("robots", "max-snippet:50"), ("robots", "nosnippet")],
        "googlebot",
        {"max_snippet": 50, "nosnippet": True},
        id="Google_spec_conflict_nosnippet_wins",
    ),
]

RULES = [
    pytest.param(
        ["NOINDEX"],
        [("ROBOTS", "NoFollow")],
        "GoogleBot",
        NONE,
        id="Google_case_insensitive_names_and_values",
    ),
    pytest.param(
        ["GOOGLEBOT: noindex"], [], "googlebot", NOINDEX, id="Google_case_insensitive_agent_prefix"
    ),
    pytest.param(
        [], [("MyBot", "noindex")], "mybot", NOINDEX, id="Google_case_insensitive_meta_name"
    ),
    pytest.param(
        ["noindex", "nofollow"], [], "googlebot", NONE, id="Google_multiple_headers_combine"
    ),
    pytest.param(
        ["noindex"],
        [("robots", "nofollow")],
        "googlebot",
        NONE,
        id="Google_header_and_meta_combine",
    ),
    pytest.param(
        ["all"], [("robots", "noindex")], "googlebot", NOINDEX, id="Google_all_does_not_override"
    ),
    pytest.param(["index, follow"], [], "googlebot", {}, id="Google_index_follow_are_defaults"),
    pytest.param(
        [],
        [("robots", "max-snippet:10"), ("robots", "max-snippet:50")],
        "googlebot",
        {"max_snippet": 10},
        id="Google_most_restrictive_wins_snippet",
    ),
    pytest.param(
        ["max-snippet:50"],
        [("robots", "max-snippet:-1")],
        "googlebot",
        {"max_snippet": 50},
        id="Google_most_restrictive_wins_over_no_limit",
    ),
    pytest.param(
        ["max-snippet:-1", "max-snippet:0"],
        [],
        "googlebot",
        {"max_snippet": 0, "nosnippet": True},
        id="Google_most_restrictive_wins_zero",
    ),
    pytest.param(
        ["max-image-preview:large, max-image-preview:standard"],
        [("robots", "max-image-preview:none")],
        "googlebot",
        {"max_image_preview": "none"},
        id="Google_most_restrictive_wins_image_preview",
    ),
    pytest.param(
        ["max-video-preview:-1", "max-video-preview:30", "max-video-preview:10"],
        [],
        "googlebot",
        {"max_video_preview": 10},
        id="Google_most_restrictive_wins_video_preview",
    ),
    pytest.param(
        ["unavailable_after: 2030-01-01", "unavailable_after: 2020-01-01"],
        [],
        "googlebot",
        {"unavailable_after": datetime(2020, 1, 1, tzinfo=UTC)},
        id="Google_most_restrictive_wins_earliest_date",
    ),
    pytest.param(
        ["max-snippet: 10", "MAX-IMAGE-PREVIEW : LARGE"],
        [],
        "googlebot",
        {"max_snippet": 10, "max_image_preview": "large"},
        id="Google_spaces_around_value_colon",
    ),
    pytest.param(
        ["googlebot: max-snippet: 10, otherbot: max-snippet: 5"],
        [],
        "googlebot",
        {"max_snippet": 10},
        id="Google_agent_prefix_vs_value_directive",
    ),
    pytest.param(
        ["noarchive, googlebot: nofollow, noindex"],
        [],
        "googlebot",
        {"noarchive": True, "nofollow": True, "noindex": True},
        id="Google_agent_prefix_scopes_rest_of_value",
    ),
    pytest.param(
        ["noarchive, otherbot: nofollow, noindex"],
        [],
        "googlebot",
        {"noarchive": True},
        id="Google_agent_prefix_scopes_rest_for_other",
    ),
    pytest.param(
        ["otherbot: noindex", "nofollow"],
        [],
        "googlebot",
        NOFOLLOW,
        id="Google_agent_prefix_ends_with_header",
    ),
    pytest.param(
        ["googlebot: unavailable_after: 25 Jun 2010 15:00:00 PST"],
        [],
        "googlebot",
        {"unavailable_after": JUNE_25_2010_PST},
        id="Google_agent_prefix_with_unavailable_after",
    ),
    pytest.param(
        ["unavailable_after: Friday, 25-Jun-10 15:00:00 PST"],
        [],
        "googlebot",
        {"unavailable_after": JUNE_25_2010_PST},
        id="Google_unavailable_after_rfc850",
    ),
    pytest.param(
        ["unavailable_after: Friday, 25-Jun-10 15:00:00 PST, noindex"],
        [],
        "googlebot",
        {"unavailable_after": JUNE_25_2010_PST, "noindex": True},
        id="Google_unavailable_after_rfc850_then_directive",
    ),
    pytest.param(
        ["unavailable_after: Fri, 25 Jun 2010 23:00:00 GMT"],
        [],
        "googlebot",
        {"unavailable_after": datetime(2010, 6, 25, 23, tzinfo=UTC)},
        id="Google_unavailable_after_rfc1123",
    ),
    pytest.param(
        [],
        [("robots", "unavailable_after: June 25, 2010, nofollow")],
        "googlebot",
        {"unavailable_after": datetime(2010, 6, 25, tzinfo=UTC), "nofollow": True},
        id="Google_unavailable_after_us_date_with_comma",
    ),
    pytest.param(
        ["noai, noimageai, noml"],
        [],
        "mybot",
        {"noai": True, "noimageai": True, "noml": True},
        id="Usage_noai_noimageai_noml",
    ),
    pytest.param([b"noindex", b"mybot: nofollow"], [], "mybot", NONE, id="Header_values_as_bytes"),
    pytest.param(["noindex,,, ,nofollow,"], [], "googlebot", NONE, id="Empty_items_skipped"),
    pytest.param(
        [], [("robots", "noindex nofollow")], "googlebot", NONE, id="Lenient_space_separated_flags"
    ),
    pytest.param(
        [],
        [("robots", "noindex;nofollow")],
        "googlebot",
        NONE,
        id="Lenient_semicolon_separated_flags",
    ),
    pytest.param(
        [], [("description", "noindex")], "googlebot", {}, id="Other_meta_names_do_not_apply"
    ),
    pytest.param([], [], "googlebot", {}, id="Nothing_is_empty"),
]


@pytest.mark.parametrize(("headers", "meta", "agent", "expected"), GOOGLE_SPEC + RULES)
def test_rule(
    headers: list[str | bytes], meta: list[tuple[str, str]], agent: str, expected: dict[str, Any]
) -> None:
    assert effective(parse_page_directives(headers, meta, agent)) == expected


# (headers, meta, agent, the directive as written that is rejected, reason fragment)
MALFORMED = [
    pytest.param(
        ["max-snippet:ten"],
        [],
        "max-snippet:ten",
        "integer",
        id="Malformed_max_snippet_not_integer",
    ),
    pytest.param(
        ["max-snippet:-5"],
        [],
        "max-snippet:-5",
        "integer",
        id="Malformed_max_snippet_below_minus_1",
    ),
    pytest.param(["max-snippet:"], [], "max-snippet:", "integer", id="Malformed_max_snippet_empty"),
    pytest.param(
        ["max-snippet:1" + "0" * 40],
        [],
        "max-snippet:1" + "0" * 40,
        "integer",
        id="Malformed_max_snippet_huge",
    ),
    pytest.param(
        ["max-snippet"],
        [],
        "max-snippet",
        "needs a value",
        id="Malformed_max_snippet_without_value",
    ),
    pytest.param(
        ["max-video-preview:1.5"],
        [],
        "max-video-preview:1.5",
        "integer",
        id="Malformed_max_video_preview_fraction",
    ),
    pytest.param(
        ["max-image-preview:huge"],
        [],
        "max-image-preview:huge",
        "none, standard or large",
        id="Malformed_max_image_preview_value",
    ),
    pytest.param(
        ["unavailable_after: someday"],
        [],
        "unavailable_after: someday",
        "unreadable date",
        id="Malformed_unavailable_after_date_ignored",
    ),
    pytest.param(
        ["unavailable_after: 25 Jun 2010 15:00:00 CEST"],
        [],
        "unavailable_after: 25 Jun 2010 15:00:00 CEST",
        "unreadable date",
        id="Malformed_unavailable_after_unknown_zone",
    ),
    pytest.param(
        ["noindex: yes"], [], "noindex: yes", "takes no value", id="Malformed_flag_with_value"
    ),
    pytest.param(
        [],
        [("robots", "noindexx")],
        "noindexx",
        "not a known directive",
        id="Malformed_unknown_directive",
    ),
    pytest.param(
        [],
        [("robots", "googlebot: noindex")],
        "googlebot: noindex",
        "not a known directive",
        id="Malformed_agent_prefix_in_meta",
    ),
    pytest.param(
        [],
        [("robots", "noodp")],
        "noodp",
        "not a directive Google reads",
        id="Malformed_retired_directive",
    ),
    pytest.param(
        [],
        [("robots", "noindex/")],
        "noindex/",
        "not a known directive",
        id="Malformed_trailing_slash",
    ),
]


@pytest.mark.parametrize(("headers", "meta", "directive", "reason"), MALFORMED)
def test_malformed_is_reported_not_raised(
    headers: list[str], meta: list[tuple[str, str]], directive: str, reason: str
) -> None:
    result = parse_page_directives(headers, meta, "googlebot")
    assert effective(result) == {}
    assert [(r.source.directive, reason in r.reason) for r in result.malformed] == [
        (directive, True)
    ]
    assert result.ignored == ()


def test_malformed_does_not_hide_valid_neighbours() -> None:
    result = parse_page_directives(["max-snippet:x, noindex, max-snippet:7"], [], "googlebot")
    assert effective(result) == {"noindex": True, "max_snippet": 7}
    assert len(result.malformed) == 1


def test_ignored_keeps_other_agents_directives() -> None:
    result = parse_page_directives(
        ["otherbot: noindex, nofollow"], [("googlebot", "noarchive")], "mybot"
    )
    assert effective(result) == {}
    assert result.notes() == [
        "X-Robots-Tag: otherbot: noindex ignored for mybot",
        "X-Robots-Tag: otherbot: nofollow ignored for mybot",
        '<meta name="googlebot" content="noarchive"> ignored for mybot',
    ]
    assert [r.source.agent for r in result.ignored] == ["otherbot", "otherbot", "googlebot"]


def test_agent_scoped_for_us_is_not_ignored() -> None:
    result = parse_page_directives(["MyBot: noindex"], [], "mybot")
    assert result.noindex and result.ignored == ()
    source = result.source("noindex")
    assert source is not None and source.agent == "mybot"
