"""One test (or more) per rule of SPEC part A and per row of its part C.

Ids name the rule: ``ID_…`` for behaviour RFC 9309 prescribes, ``GoogleOnly_…``
for what Google's parser adds or does differently.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import pytest

from scrapy_googlerobots.robotstxt import (
    GOOGLE_MAX_SIZE,
    MAX_LINE_LENGTH,
    RequestRate,
    parse,
    product_token,
)
from scrapy_googlerobots.robotstxt._match import path_params_query, pattern_matches

HOST = "http://example.com"


class Case(NamedTuple):
    body: bytes | str
    agent: str | list[str]
    url: str
    allowed: bool
    line: int


def check(case: Case) -> None:
    url = case.url if "://" in case.url or not case.url.startswith("/") else HOST + case.url
    verdict = parse(case.body).explain(url, case.agent)
    assert (verdict.allowed, verdict.line) == (case.allowed, case.line)
    assert parse(case.body).allowed(url, case.agent) is case.allowed


def cases(table: dict[str, Case]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("case", list(table.values()), ids=list(table))


# --- A1. Bytes and lines ------------------------------------------------------

A1 = {
    "ID_Bytes_StrIsEncodedAsUtf8": Case("user-agent: *\ndisallow: /é", "bot", "/%C3%A9", False, 2),
    "ID_Bytes_InvalidUtf8Kept": Case(b"user-agent: *\ndisallow: /\xff", "bot", "/%FF", False, 2),
    "ID_Whitespace_NbspIsNotWhitespace": Case(
        b"user-agent: *\ndisallow:\xc2\xa0/x", "bot", "/x", True, 0
    ),
    "ID_Whitespace_VerticalTabIsWhitespace": Case(
        b"user-agent: *\ndisallow:\x0b/x\x0c", "bot", "/x", False, 2
    ),
    "ID_Whitespace_FileSeparatorIsNotWhitespace": Case(
        b"user-agent: *\ndisallow: /x\x1c", "bot", "/x", True, 0
    ),
    "GoogleOnly_NulEndsLineContent": Case(
        b"user-agent: *\ndisallow: /x\0y", "bot", "/xz", False, 2
    ),
    "GoogleOnly_NulHidesComment": Case(b"user-agent: *\0# x\ndisallow: /x", "bot", "/x", False, 2),
    "ID_LineEnd_LF": Case(b"user-agent: *\n\ndisallow: /x", "bot", "/x", False, 3),
    "ID_LineEnd_CRLF": Case(b"user-agent: *\r\n\r\ndisallow: /x", "bot", "/x", False, 3),
    "ID_LineEnd_CR": Case(b"user-agent: *\r\rdisallow: /x", "bot", "/x", False, 3),
    "ID_LineEnd_Mixed": Case(b"user-agent: *\r\n\n\r\rdisallow: /x", "bot", "/x", False, 5),
    "ID_LineEnd_LFCRIsTwoBreaks": Case(b"user-agent: *\n\rdisallow: /x", "bot", "/x", False, 3),
    "ID_LineEnd_LastLineNeedsNoTerminator": Case(
        b"user-agent: *\ndisallow: /x", "bot", "/x", False, 2
    ),
    "GoogleOnly_Bom_FullSkipped": Case(
        b"\xef\xbb\xbfuser-agent: *\ndisallow: /", "bot", "/", False, 2
    ),
    "GoogleOnly_Bom_TwoBytePrefixSkipped": Case(
        b"\xef\xbbuser-agent: *\ndisallow: /", "b", "/", False, 2
    ),
    "GoogleOnly_Bom_OneBytePrefixSkipped": Case(
        b"\xefuser-agent: *\ndisallow: /", "b", "/", False, 2
    ),
    "GoogleOnly_Bom_BrokenPrefixKeepsRest": Case(
        b"\xef\x11\xbfuser-agent: *\ndisallow: /", "bot", "/", True, 0
    ),
    "GoogleOnly_Bom_OnlyAtStart": Case(
        b"user-agent: *\n\xef\xbb\xbfdisallow: /", "bot", "/", True, 0
    ),
    "GoogleOnly_LongLine_CutKeepsRule": Case(
        b"user-agent: *\ndisallow: /" + b"a" * 20000, "bot", "/" + "a" * 16652, False, 2
    ),
    "GoogleOnly_LongLine_CutAtMaxLength": Case(
        b"user-agent: *\ndisallow: /" + b"a" * (MAX_LINE_LENGTH - 11) + b"$",
        "bot",
        "/" + "a" * (MAX_LINE_LENGTH - 11),
        False,
        2,
    ),
    "GoogleOnly_LongLine_LastByteKept": Case(
        b"user-agent: *\ndisallow: /" + b"a" * (MAX_LINE_LENGTH - 12) + b"$",
        "bot",
        "/" + "a" * (MAX_LINE_LENGTH - 12) + "b",
        True,
        0,
    ),
    "GoogleOnly_LongLine_LeadingWhitespaceCounts": Case(
        b"user-agent: *\n" + b" " * 10 + b"disallow: /" + b"a" * (MAX_LINE_LENGTH - 21) + b"$",
        "bot",
        "/" + "a" * (MAX_LINE_LENGTH - 21),
        False,
        2,
    ),
    "GoogleOnly_LongLine_BomNotCounted": Case(
        b"\xef\xbb\xbfdisallow: /" + b"a" * (MAX_LINE_LENGTH - 11) + b"$\nuser-agent: *",
        "bot",
        "/",
        True,
        0,
    ),
    "GoogleOnly_LongLine_SplitUtf8Escaped": Case(
        b"user-agent: *\ndisallow: /" + b"a" * (MAX_LINE_LENGTH - 12) + "é".encode(),
        "bot",
        "/" + "a" * (MAX_LINE_LENGTH - 12) + "%C3",
        False,
        2,
    ),
}


@cases(A1)
def test_a1_bytes_and_lines(case: Case) -> None:
    check(case)


def test_a1_max_line_length_is_reference_buffer_minus_terminator() -> None:
    assert MAX_LINE_LENGTH == 2083 * 8 - 1 == 16663


# --- A2. One line ---------------------------------------------------------------

A2 = {
    "ID_Comment_Ignored": Case("user-agent: * # all\ndisallow: /x # no x", "b", "/x", False, 2),
    "ID_Comment_HashInPatternStartsComment": Case(
        "user-agent: *\ndisallow: /a#b", "b", "/a", False, 2
    ),
    "ID_Strip_BothSides": Case(" \tuser-agent : *\t\n  disallow\t:  /x  ", "b", "/x", False, 2),
    "ID_Colon_FirstColonSplits": Case("user-agent: *\ndisallow: /a:b", "b", "/a:b", False, 2),
    "ID_Colon_FirstColonSplitsOnlyThatPart": Case(
        "user-agent: *\ndisallow: /a:b", "b", "/a:", True, 0
    ),
    "GoogleOnly_MissingColon_TwoWords": Case("user-agent *\ndisallow /x", "b", "/x", False, 2),
    "GoogleOnly_MissingColon_TabSeparates": Case(
        "user-agent\t*\ndisallow\t/x", "b", "/x", False, 2
    ),
    "GoogleOnly_MissingColon_ThreeWordsIgnored": Case(
        "user-agent: *\ndisallow /x y", "b", "/x", True, 0
    ),
    "GoogleOnly_MissingColon_VerticalTabDoesNotSeparate": Case(
        "user-agent: *\ndisallow\x0b/x", "b", "/x", True, 0
    ),
    "GoogleOnly_MissingColon_KeyWithSpaceBeforeColon": Case(
        "user-agent: *\ndisallow /a:/b", "b", "/b", False, 2
    ),
    "GoogleOnly_MissingColon_KeyWithSpaceBeforeColonNotA": Case(
        "user-agent: *\ndisallow /a:/b", "b", "/a", True, 0
    ),
    "ID_EmptyKey_Ignored": Case("user-agent: *\n: /x\ndisallow: /y", "b", "/x", True, 0),
    "ID_EmptyValue_Kept": Case("user-agent: *\ndisallow:", "b", "/x", True, 2),
    "ID_Key_CaseInsensitive": Case("USER-AGENT: *\nDISALLOW: /x", "b", "/x", False, 2),
    "GoogleOnly_Key_PrefixUserAgents": Case("user-agents: *\ndisallow: /x", "b", "/x", False, 2),
    "GoogleOnly_Key_PrefixDisallowed": Case("user-agent: *\ndisallowed: /x", "b", "/x", False, 2),
    "GoogleOnly_Key_PrefixAllowance": Case(
        "user-agent: *\ndisallow: /\nallowance: /x", "b", "/x", True, 3
    ),
    "GoogleOnly_Typo_useragent": Case("useragent: *\ndisallow: /x", "b", "/x", False, 2),
    "GoogleOnly_Typo_user_agent_space": Case("user agent: *\ndisallow: /x", "b", "/x", False, 2),
    "GoogleOnly_Typo_dissallow": Case("user-agent: *\ndissallow: /x", "b", "/x", False, 2),
    "GoogleOnly_Typo_dissalow": Case("user-agent: *\ndissalow: /x", "b", "/x", False, 2),
    "GoogleOnly_Typo_disalow": Case("user-agent: *\ndisalow: /x", "b", "/x", False, 2),
    "GoogleOnly_Typo_diasllow": Case("user-agent: *\ndiasllow: /x", "b", "/x", False, 2),
    "GoogleOnly_Typo_disallaw": Case("user-agent: *\ndisallaw: /x", "b", "/x", False, 2),
    "GoogleOnly_Typo_OthersNotAccepted": Case("user-agent: *\ndisalw: /x", "b", "/x", True, 0),
    "ID_Key_UnknownIsOther": Case("user-agent: *\nnoindex: /x", "b", "/x", True, 0),
}


@cases(A2)
def test_a2_one_line(case: Case) -> None:
    check(case)


def test_a2_sitemap_without_colon_splits_at_first_colon() -> None:
    # "sitemap http://x/s.xml": the first colon splits, key "sitemap http".
    assert parse("sitemap http://x/s.xml").sitemaps == ["//x/s.xml"]
    assert parse("site-map: http://x/s.xml").sitemaps == ["http://x/s.xml"]


# --- A3. Groups -------------------------------------------------------------------

A3 = {
    "ID_Group_ConsecutiveUserAgentsShareRules": Case(
        "user-agent: a\nuser-agent: b\ndisallow: /x", "a", "/x", False, 3
    ),
    "ID_Group_RuleClosesRun": Case(
        "user-agent: a\ndisallow: /x\nuser-agent: b\ndisallow: /y", "a", "/y", True, 0
    ),
    "ID_Group_SecondGroupOwnRules": Case(
        "user-agent: a\ndisallow: /x\nuser-agent: b\ndisallow: /y", "b", "/y", False, 4
    ),
    "GoogleOnly_Group_SitemapDoesNotClose": Case(
        "user-agent: a\nsitemap: http://x/s\nuser-agent: b\ndisallow: /", "a", "/p", False, 4
    ),
    "GoogleOnly_Group_OtherRecordDoesNotClose": Case(
        "user-agent: a\ncrawl-delay: 5\nuser-agent: b\ndisallow: /", "a", "/p", False, 4
    ),
    "GoogleOnly_Group_GarbageDoesNotClose": Case(
        "user-agent: a\nfoo bar baz\nuser-agent: b\ndisallow: /", "a", "/p", False, 4
    ),
    "ID_Group_RulesBeforeUserAgentIgnored": Case(
        "disallow: /\nuser-agent: *\nallow: /x", "b", "/p", True, 0
    ),
    "ID_Group_RulesAfterOtherRecordsStillInGroup": Case(
        "user-agent: *\nhost: x\ndisallow: /p", "b", "/p", False, 3
    ),
    "ID_Group_SameAgentTwiceMerged": Case(
        "user-agent: a\ndisallow: /x\nuser-agent: b\ndisallow: /\nuser-agent: a\ndisallow: /y",
        "a",
        "/y",
        False,
        6,
    ),
}


@cases(A3)
def test_a3_groups(case: Case) -> None:
    check(case)


def test_a3_sitemaps_valid_anywhere() -> None:
    body = (
        "sitemap: http://a/1\nuser-agent: *\nsitemap: http://a/2\ndisallow: /\nsitemap: http://a/3"
    )
    assert parse(body).sitemaps == ["http://a/1", "http://a/2", "http://a/3"]


# --- A4. Which group applies --------------------------------------------------------

GROUPS = "user-agent: googlebot-news\ndisallow: /1\nuser-agent: *\ndisallow: /2\n" + (
    "user-agent: googlebot\ndisallow: /3\n"
)

A4 = {
    "ID_Agent_CaseInsensitive": Case("user-agent: FooBot\ndisallow: /", "foobot", "/", False, 2),
    "ID_Agent_ProductTokenOfLineValue": Case(
        "user-agent: FooBot/1.2\ndisallow: /", "foobot", "/", False, 2
    ),
    "ID_Agent_WildcardSuffixIgnored": Case(
        "user-agent: FooBot*\ndisallow: /", "foobot", "/", False, 2
    ),
    "ID_Agent_FirstWordOnly": Case("user-agent: foobot news\ndisallow: /", "foobot", "/", False, 2),
    "ID_Agent_FirstWordOnlyNotSecond": Case(
        "user-agent: Foo Bar\ndisallow: /", "bar", "/", True, 0
    ),
    "ID_Agent_NoSubstringMatch": Case(
        "user-agent: hedwig\ndisallow: /", "hedwig-images", "/", True, 0
    ),
    "ID_Agent_CallerUserAgentReduced": Case(
        "user-agent: foobot\ndisallow: /", "FooBot/2.1 (+http://x)", "/", False, 2
    ),
    "ID_Global_Star": Case("user-agent: *\ndisallow: /", "foobot", "/", False, 2),
    "GoogleOnly_Global_StarSpaceText": Case(
        "user-agent: * foo\ndisallow: /", "foobot", "/", False, 2
    ),
    "GoogleOnly_Global_StarTabText": Case(
        "user-agent: *\tfoo\ndisallow: /", "foobot", "/", False, 2
    ),
    "GoogleOnly_Global_StarVerticalTabText": Case(
        "user-agent: *\x0bfoo\ndisallow: /", "foobot", "/", False, 2
    ),
    "GoogleOnly_Global_StarTextMatchesNobody": Case(
        "user-agent: *foo\ndisallow: /", "foobot", "/", True, 0
    ),
    "ID_Specific_ShadowsGlobalWithoutMatchingRule": Case(
        "user-agent: *\ndisallow: /\nuser-agent: foobot\ndisallow: /x", "foobot", "/y", True, 0
    ),
    "ID_Specific_ShadowsGlobalWithoutRules": Case(
        "user-agent: *\ndisallow: /\nuser-agent: foobot", "foobot", "/y", True, 0
    ),
    "ID_Specific_ShadowsGlobalWithEmptyRule": Case(
        "user-agent: *\ndisallow: /\nuser-agent: foobot\ndisallow:", "foobot", "/y", True, 4
    ),
    "ID_Specific_GroupsMerged": Case(
        "user-agent: foobot\ndisallow: /a\nuser-agent: x\nuser-agent: FOOBOT\nallow: /a/b",
        "foobot",
        "/a/b",
        True,
        5,
    ),
    "ID_Global_GroupsMerged": Case(
        "user-agent: *\ndisallow: /a\nuser-agent: x\ndisallow: /\nuser-agent: *\nallow: /a/b",
        "foobot",
        "/a/b",
        True,
        6,
    ),
    "ID_NoGroup_Allowed": Case("user-agent: x\ndisallow: /", "foobot", "/", True, 0),
    "ID_GroupNamingBothStarAndAgent_IsSpecific": Case(
        "user-agent: *\nuser-agent: foobot\ndisallow: /x\nuser-agent: *\ndisallow: /",
        "foobot",
        "/y",
        True,
        0,
    ),
    "ID_Tokens_SeveralMerged": Case(
        "user-agent: googlebot-news\ndisallow: /n\nuser-agent: googlebot\ndisallow: /g",
        ["googlebot-news", "googlebot"],
        "/g",
        False,
        4,
    ),
    "ID_SpecC_GroupSelection_News": Case(GROUPS, "Googlebot-News", "/1", False, 2),
    "ID_SpecC_GroupSelection_NewsNotOthers": Case(GROUPS, "Googlebot-News", "/3", True, 0),
    "ID_SpecC_GroupSelection_Googlebot": Case(GROUPS, "Googlebot", "/3", False, 6),
    "ID_SpecC_GroupSelection_ImageAlsoGooglebot": Case(
        GROUPS, ["Googlebot-Image", "googlebot"], "/3", False, 6
    ),
    "ID_SpecC_GroupSelection_ImageAlone": Case(GROUPS, "Googlebot-Image", "/2", False, 4),
    "ID_SpecC_GroupSelection_Otherbot": Case(GROUPS, "Otherbot", "/2", False, 4),
}


@cases(A4)
def test_a4_group_selection(case: Case) -> None:
    check(case)


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("FooBot/2.1 (+http://x)", "FooBot"),
        ("foo_bar-baz", "foo_bar-baz"),
        ("Googlebot-News", "Googlebot-News"),
        ("bot123", "bot"),
        ("*", ""),
        ("", ""),
        ("ツbot", ""),
    ],
    ids=lambda v: repr(v),
)
def test_a4_product_token(value: str, token: str) -> None:
    assert product_token(value) == token


# --- A5. Rules and patterns ---------------------------------------------------------

A5 = {
    "ID_Empty_NeverDisallows": Case("user-agent: *\ndisallow:", "b", "/x", True, 2),
    "ID_Empty_LosesToLongerAllow": Case("user-agent: *\ndisallow:\nallow: /x", "b", "/x", True, 3),
    "ID_Empty_FirstOfEqualEmpties": Case("user-agent: *\nallow:\ndisallow:", "b", "/x", True, 2),
    "ID_Empty_DisallowAfterAllowNotReported": Case(
        "user-agent: *\ndisallow:\nallow:", "b", "/x", True, 3
    ),
    "GoogleOnly_Escape_NonAsciiEscaped": Case(
        "user-agent: *\ndisallow: /ツ", "b", "/%E3%83%84", False, 2
    ),
    "GoogleOnly_Escape_RawUrlDoesNotMatch": Case(
        "user-agent: *\ndisallow: /ツ", "b", "/ツ", True, 0
    ),
    "GoogleOnly_Escape_HexUppercased": Case(
        "user-agent: *\ndisallow: /%e3%83%84", "b", "/%E3%83%84", False, 2
    ),
    "GoogleOnly_Escape_LowercaseUrlDoesNotMatch": Case(
        "user-agent: *\ndisallow: /%E3", "b", "/%e3", True, 0
    ),
    "GoogleOnly_Escape_NoDecoding": Case(
        "user-agent: *\ndisallow: /%62%61%7A", "b", "/baz", True, 0
    ),
    "GoogleOnly_Escape_IncompleteEscapeKept": Case(
        "user-agent: *\ndisallow: /%a", "b", "/%a", False, 2
    ),
    "GoogleOnly_Escape_PriorityCountsEscapedBytes": Case(
        "user-agent: *\nallow: /é\ndisallow: /%C3%A9", "b", "/%C3%A9", True, 2
    ),
    "ID_Wildcard_AnySequence": Case("user-agent: *\ndisallow: /a*c", "b", "/abbbc", False, 2),
    "ID_Wildcard_Empty": Case("user-agent: *\ndisallow: /a*c", "b", "/ac", False, 2),
    "ID_Wildcard_Repeated": Case("user-agent: *\ndisallow: /**a**", "b", "/xa", False, 2),
    "ID_Dollar_EndOnlyAtEnd": Case("user-agent: *\ndisallow: /a$", "b", "/a", False, 2),
    "ID_Dollar_EndRejectsLonger": Case("user-agent: *\ndisallow: /a$", "b", "/ab", True, 0),
    "ID_Dollar_LiteralInMiddle": Case("user-agent: *\ndisallow: /a$b", "b", "/a$b", False, 2),
    "ID_Dollar_WildcardThenEnd": Case(
        "user-agent: *\ndisallow: /*.php$", "b", "/x/y.php", False, 2
    ),
    "ID_Dollar_LastPieceMustEndPath": Case(
        "user-agent: *\ndisallow: /*ab*ab$", "b", "/abab", False, 2
    ),
    "ID_Dollar_LastPieceAfterEarlierPieces": Case(
        "user-agent: *\ndisallow: /*ab*ab$", "b", "/ab", True, 0
    ),
    "ID_Dollar_AloneMatchesNothing": Case("user-agent: *\ndisallow: $", "b", "/", True, 0),
    "ID_Anchor_Prefix": Case("user-agent: *\ndisallow: /fish", "b", "/fishheads/x", False, 2),
    "ID_Anchor_NotSubstring": Case("user-agent: *\ndisallow: /fish", "b", "/catfish", True, 0),
    "ID_Case_Sensitive": Case("user-agent: *\ndisallow: /fish", "b", "/Fish.asp", True, 0),
    "ID_NoLeadingSlash_MatchesNothing": Case(
        "user-agent: *\ndisallow: fish/", "b", "/fish/", True, 0
    ),
    "ID_NoLeadingSlash_StarStillMatches": Case(
        "user-agent: *\ndisallow: *fish", "b", "/fish", False, 2
    ),
    "ID_Priority_WildcardsCount": Case(
        "user-agent: *\nallow: /ab\ndisallow: /*b", "b", "/ab", True, 2
    ),
    "ID_Priority_LongerDisallowWins": Case(
        "user-agent: *\nallow: /a\ndisallow: /a*", "b", "/ab", False, 3
    ),
    "ID_Priority_TieAllowWins": Case("user-agent: *\ndisallow: /a\nallow: /a", "b", "/a", True, 3),
    "ID_Priority_FirstLineOfEqualDisallows": Case(
        "user-agent: *\ndisallow: /a*\ndisallow: /*b\ndisallow: /ab", "b", "/ab", False, 2
    ),
    "ID_Priority_FirstLineOfEqualAllows": Case(
        "user-agent: *\nallow: /*b\nallow: /a*\ndisallow: /", "b", "/ab", True, 2
    ),
    "ID_Priority_AcrossMergedGroups": Case(
        "user-agent: *\ndisallow: /ab\nuser-agent: x\nallow: /\nuser-agent: *\ndisallow: /a*",
        "b",
        "/ab",
        False,
        2,
    ),
    "GoogleOnly_Index_AllowsDirectory": Case(
        "user-agent: *\nallow: /a/index.html\ndisallow: /", "b", "/a/", True, 2
    ),
    "GoogleOnly_Index_NotDeeper": Case(
        "user-agent: *\nallow: /a/index.html\ndisallow: /", "b", "/a/b", False, 3
    ),
    "GoogleOnly_Index_HtmSuffixes": Case(
        "user-agent: *\nallow: /a/index.html5\ndisallow: /a/", "b", "/a/", True, 2
    ),
    "GoogleOnly_Index_PriorityIsDirectoryPattern": Case(
        "user-agent: *\nallow: /a/index.html\ndisallow: /a/", "b", "/a/", True, 2
    ),
    "GoogleOnly_Index_LongerDisallowBeatsDirectoryPattern": Case(
        "user-agent: *\nallow: /a/index.html\ndisallow: /a/$", "b", "/a/", True, 2
    ),
    "GoogleOnly_Index_LosesToLongerDisallow": Case(
        "user-agent: *\nallow: /a/index.html\ndisallow: /a/*$", "b", "/a/", False, 3
    ),
    "GoogleOnly_Index_OnlyForAllow": Case(
        "user-agent: *\ndisallow: /a/index.html", "b", "/a/", True, 0
    ),
    "GoogleOnly_Index_CaseSensitive": Case(
        "user-agent: *\nallow: /a/INDEX.html\ndisallow: /", "b", "/a/", False, 3
    ),
    "GoogleOnly_Index_WithWildcards": Case(
        "user-agent: *\nallow: /*/index.htm\ndisallow: /", "b", "/x/y/", True, 2
    ),
}


@cases(A5)
def test_a5_rules_and_patterns(case: Case) -> None:
    check(case)


def test_a5_rule_is_value_as_written() -> None:
    robots = parse("user-agent: *\ndisallow: /%e3 ツ*\nallow: /a/index.html\ndisallow:")
    assert parse("user-agent: *\ndisallow: /ツ").explain(HOST + "/%E3%83%84", "b").rule == "/ツ"
    assert robots.explain(HOST + "/a/", "b").rule == "/a/index.html"
    assert robots.explain(HOST + "/x", "b").rule == ""
    assert parse("user-agent: *\ndisallow: /x").explain(HOST + "/y", "b").rule is None


def test_a5_worst_case_pattern_stays_linear_in_reference_semantics() -> None:
    assert not pattern_matches(b"/" + b"a" * 2000, b"/*a*a*a*a*a*a*a*a*a*a*a*b")
    assert pattern_matches(b"/" + b"a" * 2000 + b"b", b"/*a*a*a*a*a*a*a*a*a*a*a*b$")


# --- A6. The URL side --------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("http://example.com/a/b?c=d#e", "/a/b?c=d"),
        ("http://example.com", "/"),
        ("http://example.com?x", "/?x"),
        ("http://example.com;p", "/;p"),
        ("http://example.com#x/y", "/"),
        ("http://example.com/a#b?c", "/a"),
        ("https://u:p@example.com:8080/a;b?c", "/a;b?c"),
        ("example.com/a", "/a"),
        ("//a/b/c", "/b/c"),
        ("/a/b", "/a/b"),
        ("a", "/"),
        ("", "/"),
        ("http://a/b/c://d", "/b/c://d"),
        ("a/b://c/d", "/b://c/d"),
        ("http://a/x\0y", "/x"),
        ("http://a/ツ", "/ツ"),
    ],
    ids=lambda v: repr(v),
)
def test_a6_path_params_query(url: str, path: str) -> None:
    assert path_params_query(url.encode()) == path.encode()


A6 = {
    "ID_Url_QueryMatched": Case("user-agent: *\ndisallow: /?id=", "b", "http://a.b?id=3", False, 2),
    "ID_Url_FragmentDropped": Case("user-agent: *\ndisallow: /a$", "b", "http://a.b/a#x", False, 2),
    "ID_Url_ParamsMatched": Case(
        "user-agent: *\ndisallow: /a;s=1", "b", "http://a.b/a;s=1", False, 2
    ),
    "GoogleOnly_Url_NulEndsPath": Case(
        "user-agent: *\ndisallow: /a$", "b", "http://a.b/a\0x", False, 2
    ),
    "ID_Url_NonAsciiMatchedAsWritten": Case(
        "user-agent: *\ndisallow: /*$", "b", "http://a.b/ツ", False, 2
    ),
    "ID_Url_NonAsciiSpannedByWildcard": Case(
        "user-agent: *\ndisallow: /a*b$", "b", "http://a.b/aツb", False, 2
    ),
}


@cases(A6)
def test_a6_url_side(case: Case) -> None:
    check(case)


# --- A7. Sitemaps and other records ---------------------------------------------------


def test_a7_sitemaps_in_order_verbatim_duplicates_kept_empty_skipped() -> None:
    body = "Sitemap: http://a/s.xml\nsitemap:\nSITEMAP: http://a/ü.xml # c\nsitemap: http://a/s.xml"
    assert parse(body).sitemaps == ["http://a/s.xml", "http://a/ü.xml", "http://a/s.xml"]


def test_a7_sitemaps_returned_as_a_copy() -> None:
    robots = parse("sitemap: http://a/s.xml")
    robots.sitemaps.append("http://evil/")
    assert robots.sitemaps == ["http://a/s.xml"]


@pytest.mark.parametrize(
    ("body", "agent", "delay"),
    [
        ("user-agent: *\ncrawl-delay: 5", "b", 5.0),
        ("user-agent: *\nCrawl-Delay: 0.5", "b", 0.5),
        ("user-agent: *\ncrawl-delay: .25", "b", 0.25),
        ("user-agent: *\ndisallow: /x\ncrawl-delay: 5\nuser-agent: b\ncrawl-delay: 2", "b", 2.0),
        ("user-agent: *\ndisallow: /x\ncrawl-delay: 5\nuser-agent: b\ncrawl-delay: 2", "c", 5.0),
        ("user-agent: *\ndisallow: /x\ncrawl-delay: 5\nuser-agent: b\ndisallow: /", "b", None),
        # crawl-delay does not close the run of user-agent lines: * and b share it.
        ("user-agent: *\ncrawl-delay: 5\nuser-agent: b\ndisallow: /", "b", 5.0),
        ("user-agent: a\ncrawl-delay: 3\nuser-agent: b\ndisallow: /", "b", 3.0),
        ("user-agent: *\ncrawl-delay: abc\ncrawl-delay: 4", "b", 4.0),
        ("user-agent: *\ncrawl-delay: -1", "b", None),
        ("user-agent: *\ncrawl-delay: nan", "b", None),
        ("user-agent: *\ncrawl-delay: inf", "b", None),
        ("user-agent: *\ncrawl-delays: 7", "b", None),
        ("crawl-delay: 5\nuser-agent: *\ndisallow: /", "b", None),
        ("user-agent: *\ndisallow: /\ncrawl-delay: 9", "b", 9.0),
    ],
    ids=lambda v: repr(v),
)
def test_a7_crawl_delay_of_applicable_groups(body: str, agent: str, delay: float | None) -> None:
    assert parse(body).crawl_delay(agent) == delay


# The example: only a rule line ends a group, so "*" and FooBot share
# one group holding two delays; the largest applies (the polite reading).
SHARED_GROUP = "User-agent: *\nCrawl-delay: 10\nUser-agent: FooBot\nCrawl-delay: 1\nDisallow: /x\n"


def test_a7_one_group_several_delays_the_largest_applies() -> None:
    robots = parse(SHARED_GROUP)
    assert robots.crawl_delay("FooBot") == 10.0
    assert robots.crawl_delay("OtherBot") == 10.0
    assert not robots.allowed(HOST + "/x", "FooBot")


@pytest.mark.parametrize(
    ("value", "rate"),
    [
        ("1/5", RequestRate(1, 5.0)),
        ("1/5s", RequestRate(1, 5.0)),
        ("2/1m", RequestRate(2, 60.0)),
        ("3 / 1h", RequestRate(3, 3600.0)),
        ("1/1d", RequestRate(1, 86400.0)),
        ("1/10S 0900-1730", RequestRate(1, 10.0)),
        ("10/0.5", RequestRate(10, 0.5)),
        ("0/5", None),
        ("1/0", None),
        ("abc", None),
        ("1/5x", None),
        ("-1/5", None),
    ],
)
def test_a7_request_rate_values(value: str, rate: RequestRate | None) -> None:
    robots = parse(f"user-agent: *\nrequest-rate: {value}\ndisallow: /x")
    assert robots.request_rate("b") == rate
    assert robots.delay("b") == (None if rate is None else rate.seconds / rate.requests)


def test_a7_delay_is_the_larger_of_crawl_delay_and_request_rate() -> None:
    body = "user-agent: a\ncrawl-delay: 2\nrequest-rate: 1/5s\nuser-agent: b\ncrawl-delay: 3\n"
    body += "request-rate: 2/1s\ndisallow: /\nuser-agent: c\nrequest-rate: 1/4\n"
    body += "Request-Rate: 1/8\ndisallow: /"
    robots = parse(body)
    assert robots.delay("a") == 5.0  # a and b share one group: crawl-delay 3, rate 1/5s
    assert robots.crawl_delay("a") == 3.0
    assert robots.request_rate("c") == RequestRate(1, 8.0)
    assert robots.delay("c") == 8.0
    assert robots.delay("zz") is None


def test_a7_pacing_directives_stay_out_of_the_verdict() -> None:
    rules = "user-agent: *\ndisallow: /x\nuser-agent: b\ndisallow: /y\n"
    plain = parse(rules)
    paced = parse(rules + "request-rate: 1/5\ncrawl-delay: 9\n")
    for url in ("/x", "/y", "/z"):
        for agent in ("a", "b"):
            assert paced.explain(HOST + url, agent) == plain.explain(HOST + url, agent)


def test_a7_other_records_do_not_affect_matching() -> None:
    robots = parse("user-agent: *\ncrawl-delay: 5\nhost: x\nclean-param: a\ndisallow: /x")
    assert robots.explain(HOST + "/x", "b")[:2] == (False, 5)


# --- A8. Size ------------------------------------------------------------------------


def test_a8_google_max_size_is_500_kib() -> None:
    assert GOOGLE_MAX_SIZE == 500 * 1024 == 512_000


@pytest.mark.parametrize(
    ("max_size", "allowed"),
    [
        (None, False),
        (GOOGLE_MAX_SIZE, True),
        (GOOGLE_MAX_SIZE + 11, True),  # "disallow:" with an empty value
        (GOOGLE_MAX_SIZE + 12, False),  # "disallow: /"
        (0, True),
        (-1, True),
    ],
)
def test_a8_max_size_ignores_the_rest(max_size: int | None, allowed: bool) -> None:
    body = b"user-agent: *\n" + b"#" * (GOOGLE_MAX_SIZE - 14) + b"\ndisallow: /x\n"
    assert parse(body, max_size=max_size).allowed(HOST + "/x", "b") is allowed


# --- C. Worked examples ----------------------------------------------------------------


def group(*rules: str) -> str:
    return "user-agent: *\n" + "\n".join(rules)


C = {
    "SpecC_LongerAllowWins": Case(group("allow: /p", "disallow: /"), "b", "/page", True, 2),
    "SpecC_TieAllows": Case(
        group("allow: /folder", "disallow: /folder"), "b", "/folder/page", True, 2
    ),
    "SpecC_LongerWildcardDisallowWins": Case(
        group("allow: /page", "disallow: /*.htm"), "b", "/page.htm", False, 3
    ),
    "SpecC_DollarTieAllows": Case(group("allow: /$", "disallow: /"), "b", "/", True, 2),
    "SpecC_DollarDoesNotMatchLonger": Case(
        group("allow: /$", "disallow: /"), "b", "/page.htm", False, 3
    ),
    "SpecC_WildcardLengths": Case(
        group("allow: /exam*", "disallow: /examp*"), "b", "/example.htm", False, 3
    ),
    "SpecC_EqualWildcardsTie": Case(
        group("allow: /examp*", "disallow: /examp*"), "b", "/example.htm", True, 2
    ),
    "SpecC_StarAddsAByte": Case(
        group("allow: /example", "disallow: /example*"), "b", "/example.htm", False, 3
    ),
    "SpecC_TwelveEqualsTwelve": Case(
        group("allow: /example.htm", "disallow: /********htm"), "b", "/example.htm", True, 2
    ),
    "SpecC_DirectoryWithoutSlash": Case(group("disallow: /x", "allow: /x/"), "b", "/x", False, 2),
    "SpecC_DirectoryWithSlash": Case(group("disallow: /x", "allow: /x/"), "b", "/x/", True, 3),
    "SpecC_CaseMatters": Case(group("disallow: /fish"), "b", "/Fish.asp", True, 0),
    "SpecC_AnchoredAtStart": Case(group("disallow: /fish"), "b", "/catfish", True, 0),
    "SpecC_QueryIsNotPath": Case(group("disallow: /fish"), "b", "/?id=fish", True, 0),
    "SpecC_PhpEnd": Case(group("disallow: /", "allow: /*.php$"), "b", "/a.php", True, 3),
    "SpecC_PhpQuery": Case(group("disallow: /", "allow: /*.php$"), "b", "/a.php?x", False, 2),
    "SpecC_Php5": Case(group("disallow: /", "allow: /*.php$"), "b", "/a.php5", False, 2),
    "SpecC_EndAnchoredDisallow": Case(
        group("disallow: /foo/bar$", "allow: /foo/bar/qux"), "b", "/foo/bar", False, 2
    ),
    "SpecC_EndAnchoredDisallowNotSlash": Case(
        group("disallow: /foo/bar$", "allow: /foo/bar/qux"), "b", "/foo/bar/", True, 0
    ),
    "SpecC_IndexRuleDirectory": Case(
        group("allow: /a/index.html", "disallow: /"), "b", "/a/", True, 2
    ),
    "SpecC_IndexRuleIndexHtm": Case(
        group("allow: /a/index.html", "disallow: /"), "b", "/a/index.htm", False, 3
    ),
}


@cases(C)
def test_c_worked_examples(case: Case) -> None:
    check(case)


# --- Sharing: parse once, ask from anywhere ------------------------------------------


def test_one_parsed_file_answers_many_threads_alike() -> None:
    body = (
        "user-agent: *\ndisallow: /private/\nallow: /private/ok\ndisallow: /*.pdf$\n"
        "user-agent: foobot\ndisallow: /\nallow: /*?public=\n"
        + "".join(f"user-agent: bot{chr(97 + i)}\ndisallow: /{i}/\n" for i in range(26))
    )
    agents = ["foobot", "FooBot/1.0", "other", ["foobot", "x"]] + [
        f"bot{chr(97 + i)}" for i in range(26)
    ]
    agents += [f"crawler{chr(97 + i)}" for i in range(26)] * 2  # more agents than the caches hold
    paths = ["/", "/private/x", "/private/ok", "/a.pdf", "/x?public=1", "/3/x", "/25/"]
    queries = [
        (f"http{'s' * (i % 2)}://host{i % 3}.example{path}", agent)
        for i, path in enumerate(paths)
        for agent in agents
    ]
    expected = [parse(body).explain(url, agent) for url, agent in queries]
    shared = parse(body)
    with ThreadPoolExecutor(max_workers=8) as pool:
        verdicts = list(pool.map(lambda query: shared.explain(*query), queries * 20))
        allowed = list(pool.map(lambda query: shared.allowed(*query), queries * 20))
    assert verdicts == expected * 20
    assert allowed == [verdict.allowed for verdict in expected] * 20


def test_repr_is_short() -> None:
    robots = parse("user-agent: *\ndisallow: /x\nallow: /y\nsitemap: http://a/s.xml")
    assert repr(robots) == "<RobotsTxt groups=1 rules=2 sitemaps=1>"


@pytest.mark.parametrize(
    ("body", "agent", "name"),
    [
        ("user-agent: *\ndisallow: /x", "FooBot/1.0", "*"),
        ("user-agent: FooBot\ndisallow: /x", "FooBot/1.0", "foobot"),
        ("user-agent: *\ncrawl-delay: 1\nuser-agent: FooBot\ndisallow: /x", "foobot", "foobot"),
        ("user-agent: *\ncrawl-delay: 1\nuser-agent: FooBot\ndisallow: /x", "Other", "*"),
        ("user-agent: BarBot\ndisallow: /x", "FooBot", ""),
        ("", "FooBot", ""),
    ],
)
def test_group_name_says_which_groups_apply(body: str, agent: str, name: str) -> None:
    assert parse(body).group_name(agent) == name
