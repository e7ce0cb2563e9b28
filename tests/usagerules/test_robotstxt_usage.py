"""AI usage preferences in robots.txt (issue 20): one case per rule.

Ids name the rule: ``Usage_…`` for what draft-ietf-aipref-attach/-vocab
say, ``Signal_…`` for Content Signals (contentsignals.org), ``Choice_…`` for
what the drafts leave open and ``_usage``'s docstring decides, ``Vocab65_…``
for the malformed-value rules of vocab -08 section 6.5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pytest
from growth import assert_linear
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.robotstxt import (
    USAGE_CATEGORIES,
    UsageRule,
    parse,
    parse_usage_header,
    parse_usage_line,
    usage_category,
)
from scrapy_googlerobots.robotstxt._lines import escape_pattern
from scrapy_googlerobots.robotstxt._match import pattern_matches

from corpus import CORPUS_FILES, MISSING

HOST = "http://example.com"


class Case(NamedTuple):
    body: str
    agent: str | list[str]
    path: str
    expected: dict[str, tuple[bool, int]]
    """category -> (allowed, deciding line); absent = unknown."""


def usage_of(case: Case) -> dict[str, tuple[bool, int]]:
    found = parse(case.body).usage(HOST + case.path, case.agent)
    return {category: (rule.allowed, rule.line) for category, rule in found.items()}


def cases(table: dict[str, Case]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("case", list(table.values()), ids=list(table))


N, Y = False, True
UA = "user-agent: *\n"

MATCHING = {
    "Usage_Pathless_AppliesEverywhere": Case(
        UA + "content-usage: train-ai=n", "bot", "/a/b?c", {"train-ai": (N, 2)}
    ),
    "Usage_SeveralCategoriesOneLine": Case(
        UA + "Content-Usage: train-ai=n, ai-use=y, search=y",
        "bot",
        "/",
        {"train-ai": (N, 2), "ai-use": (Y, 2), "search": (Y, 2)},
    ),
    "Usage_PathPrefix_Matches": Case(
        UA + "content-usage: /ai-ok/ train-ai=y", "bot", "/ai-ok/page", {"train-ai": (Y, 2)}
    ),
    "Usage_PathPrefix_OtherPathUnknown": Case(
        UA + "content-usage: /ai-ok/ train-ai=y", "bot", "/other", {}
    ),
    "Usage_LongestPathWins": Case(
        UA + "content-usage: train-ai=n\ncontent-usage: /ai-ok/ train-ai=y",
        "bot",
        "/ai-ok/x",
        {"train-ai": (Y, 3)},
    ),
    "Usage_LongestPathWins_OrderIrrelevant": Case(
        UA + "content-usage: /ai-ok/ train-ai=y\ncontent-usage: train-ai=n",
        "bot",
        "/elsewhere",
        {"train-ai": (N, 3)},
    ),
    "Usage_PerCategoryLongest": Case(
        UA + "content-usage: train-ai=n, search=y\ncontent-usage: /a train-ai=y",
        "bot",
        "/a",
        {"train-ai": (Y, 3), "search": (Y, 2)},
    ),
    "Usage_Wildcard": Case(
        UA + "content-usage: /*.pdf train-ai=n", "bot", "/docs/x.pdf?v=1", {"train-ai": (N, 2)}
    ),
    "Usage_Wildcard_NoMatch": Case(
        UA + "content-usage: /*.pdf train-ai=n", "bot", "/docs/x.html", {}
    ),
    "Usage_DollarEndsPath": Case(
        UA + "content-usage: /*.pdf$ train-ai=n", "bot", "/x.pdf", {"train-ai": (N, 2)}
    ),
    "Usage_DollarEndsPath_LongerPathMisses": Case(
        UA + "content-usage: /*.pdf$ train-ai=n", "bot", "/x.pdf?v=1", {}
    ),
    "Usage_StarPath": Case(UA + "content-usage: * train-ai=n", "bot", "/x", {"train-ai": (N, 2)}),
    "Usage_PercentEscapesNormalised": Case(
        UA + "content-usage: /%c3%a9 train-ai=n", "bot", "/%C3%A9t%C3%A9", {"train-ai": (N, 2)}
    ),
    "Usage_NonAsciiPathEscaped": Case(
        UA + "content-usage: /é train-ai=n", "bot", "/%C3%A9", {"train-ai": (N, 2)}
    ),
    "Usage_LengthInBytesOfNormalisedPattern": Case(
        # "/é" is "/%C3%A9" (7 bytes) and outranks "/abcde" (6 bytes)
        UA + "content-usage: /é train-ai=n\ncontent-usage: /%C3%A9abc train-ai=y\n"
        "content-usage: /%C3%A9a train-ai=y",
        "bot",
        "/%C3%A9x",
        {"train-ai": (N, 2)},
    ),
    "Usage_TieDisagreeNoWins": Case(
        UA + "content-usage: /a train-ai=y\ncontent-usage: /a train-ai=n",
        "bot",
        "/a",
        {"train-ai": (N, 3)},
    ),
    "Usage_TieDisagreeNoWins_NoFirst": Case(
        UA + "content-usage: /a train-ai=n\ncontent-usage: /a train-ai=y",
        "bot",
        "/a",
        {"train-ai": (N, 2)},
    ),
    "Usage_TieDifferentPatternsSameLength": Case(
        UA + "content-usage: /a* train-ai=y\ncontent-usage: /ab train-ai=n",
        "bot",
        "/ab",
        {"train-ai": (N, 3)},
    ),
    "Choice_TieAgreeEarliestLine": Case(
        UA + "content-usage: /a train-ai=y\ncontent-usage: /a train-ai=y",
        "bot",
        "/a",
        {"train-ai": (Y, 2)},
    ),
    "Choice_PathlessTiesWithSlash": Case(
        UA + "content-usage: / train-ai=y\ncontent-usage: train-ai=n",
        "bot",
        "/x",
        {"train-ai": (N, 3)},
    ),
    "Choice_LongerThanSlashBeatsPathless": Case(
        UA + "content-usage: train-ai=n\ncontent-usage: /x train-ai=y",
        "bot",
        "/x",
        {"train-ai": (Y, 3)},
    ),
    "Choice_IndexHtmQuirkNotApplied": Case(
        UA + "content-usage: /a/index.html train-ai=n", "bot", "/a/", {}
    ),
    "Choice_PathWithoutSlashMatchesNothing": Case(
        UA + "content-usage: images/ train-ai=n", "bot", "/images/", {}
    ),
    "Usage_TabSeparatesPath": Case(
        UA + "content-usage: /a\ttrain-ai=n", "bot", "/a", {"train-ai": (N, 2)}
    ),
    "Usage_QueryIsPartOfPath": Case(
        UA + "content-usage: /s?q= train-ai=n", "bot", "/s?q=1", {"train-ai": (N, 2)}
    ),
    "Usage_FragmentIgnored": Case(
        UA + "content-usage: /a$ train-ai=n", "bot", "/a#frag", {"train-ai": (N, 2)}
    ),
    "Usage_CommentAfterValue": Case(
        UA + "content-usage: train-ai=n # no training", "bot", "/", {"train-ai": (N, 2)}
    ),
}

SIGNAL = {
    "Signal_Cloudflare": Case(
        UA + "Content-Signal: search=yes, ai-input=yes, ai-train=no",
        "bot",
        "/",
        {"search": (Y, 2), "ai-use": (Y, 2), "train-ai": (N, 2)},
    ),
    "Signal_AbsentNeitherGrantsNorRefuses": Case(
        UA + "Content-Signal: search=yes", "bot", "/", {"search": (Y, 2)}
    ),
    "Signal_LeadingPath": Case(
        UA + "Content-Signal: /blog/ ai-train=no", "bot", "/blog/1", {"train-ai": (N, 2)}
    ),
    "Signal_LeadingPath_OtherPathUnknown": Case(
        UA + "Content-Signal: /blog/ ai-train=no", "bot", "/shop", {}
    ),
    "Signal_KeyCaseInsensitive": Case(
        UA + "CONTENT-SIGNAL: ai-train=no", "bot", "/", {"train-ai": (N, 2)}
    ),
    "Signal_YNIsUnknown": Case(UA + "Content-Signal: ai-train=n", "bot", "/", {}),
    "Signal_IetfKeyIsUnknown": Case(UA + "Content-Signal: train-ai=no", "bot", "/", {}),
    "Signal_AndUsage_LongestAcrossSyntaxes": Case(
        UA + "Content-Signal: ai-train=no\nContent-Usage: /open/ train-ai=y",
        "bot",
        "/open/x",
        {"train-ai": (Y, 3)},
    ),
    "Signal_AndUsage_TieNoWins": Case(
        UA + "Content-Usage: train-ai=y\nContent-Signal: ai-train=no",
        "bot",
        "/x",
        {"train-ai": (N, 3)},
    ),
}

MALFORMED = {
    "Vocab65_NotADictionary_AllUnknown": Case(
        UA + "content-usage: train-ai=n, search=y,", "bot", "/", {}
    ),
    "Vocab65_NotADictionary_OtherLinesStillCount": Case(
        UA + "content-usage: search=y\ncontent-usage: train-ai=n;", "bot", "/", {"search": (Y, 2)}
    ),
    "Vocab65_NotADictionary_MissingComma": Case(
        UA + "content-usage: train-ai=n search=y", "bot", "/", {}
    ),
    "Vocab65_NotADictionary_NonAscii": Case(
        UA + 'content-usage: train-ai=n, x="é"', "bot", "/", {}
    ),
    "Vocab65_UnknownKeyIgnored": Case(
        UA + "content-usage: foo=n, train-ai=n", "bot", "/", {"train-ai": (N, 2)}
    ),
    "Vocab65_UppercaseKeyInvalidDictionary": Case(
        UA + "content-usage: Train-AI=n, search=y", "bot", "/", {}
    ),
    "Vocab65_ValueNotYN_Unknown": Case(
        UA + "content-usage: train-ai=no, search=y", "bot", "/", {"search": (Y, 2)}
    ),
    "Vocab65_ValueString_Unknown": Case(UA + 'content-usage: train-ai="n"', "bot", "/", {}),
    "Vocab65_ValueUppercaseToken_Unknown": Case(UA + "content-usage: train-ai=N", "bot", "/", {}),
    "Vocab65_ValueInnerList_Unknown": Case(UA + "content-usage: train-ai=(n)", "bot", "/", {}),
    "Vocab65_BareKeyIsBooleanTrue_Unknown": Case(UA + "content-usage: train-ai", "bot", "/", {}),
    "Vocab65_RepeatedKeyLastWins": Case(
        UA + "content-usage: train-ai=n, train-ai=y", "bot", "/", {"train-ai": (Y, 2)}
    ),
    "Vocab65_RepeatedKeyLastWins_EvenIfUnknownValue": Case(
        UA + "content-usage: train-ai=n, train-ai=x", "bot", "/", {}
    ),
    "Choice_ParametersIgnored": Case(
        UA + 'content-usage: train-ai=n;why="policy"', "bot", "/", {"train-ai": (N, 2)}
    ),
    "Choice_EmptyValue": Case(UA + "content-usage:", "bot", "/", {}),
}

NAMED_AND_GLOBAL = (
    "user-agent: foobot\nallow: /\ncontent-usage: train-ai=y\n\n"
    "user-agent: *\ncontent-usage: train-ai=n"
)

GROUPS = {
    "Group_NamedGroupChosen": Case(
        NAMED_AND_GLOBAL,
        "FooBot/1.0",
        "/",
        {"train-ai": (Y, 3)},
    ),
    "Group_GlobalForOthers": Case(
        NAMED_AND_GLOBAL,
        "otherbot",
        "/",
        {"train-ai": (N, 6)},
    ),
    "Group_NamedGroupWithoutUsageShadowsGlobal": Case(
        "user-agent: foobot\nallow: /\n\nuser-agent: *\ncontent-usage: train-ai=n",
        "foobot",
        "/",
        {},
    ),
    "Group_NamedGroupsMerged": Case(
        "user-agent: foobot\nallow: /\ncontent-usage: train-ai=n\n\nuser-agent: *\nallow: /\n\n"
        "user-agent: foobot\ncontent-usage: /x train-ai=y",
        "foobot",
        "/x",
        {"train-ai": (Y, 9)},
    ),
    "GoogleOnly_UsageLinesBetweenAgentsShareTheGroup": Case(
        "user-agent: foobot\ncontent-usage: train-ai=y\n\nuser-agent: *\ncontent-usage: train-ai=n",
        "foobot",
        "/",
        {"train-ai": (N, 5)},
    ),
    "Group_UsageLineDoesNotEndAgentRun": Case(
        # Google: only allow/disallow ends a run of user-agent lines, so
        # foobot and * share one group here.
        "user-agent: foobot\ncontent-usage: train-ai=n\nuser-agent: *\ndisallow: /private",
        "otherbot",
        "/",
        {"train-ai": (N, 2)},
    ),
    "Group_UsageAfterRulesStaysInGroup": Case(
        "user-agent: foobot\ndisallow: /p\ncontent-usage: train-ai=n\n\nuser-agent: *\nallow: /",
        "foobot",
        "/",
        {"train-ai": (N, 3)},
    ),
    "Group_UsageBeforeAnyAgentIgnored": Case(
        "content-usage: train-ai=n\nuser-agent: *\nallow: /", "bot", "/", {}
    ),
    "Group_NoGroupForAgent": Case(
        "user-agent: foobot\ncontent-usage: train-ai=n", "otherbot", "/", {}
    ),
    "Group_SeveralAgents": Case(
        "user-agent: foobot\nallow: /\ncontent-usage: train-ai=y\n\nuser-agent: barbot\nallow: /\n"
        "content-usage: search=n",
        ["foobot", "barbot"],
        "/",
        {"train-ai": (Y, 3), "search": (N, 7)},
    ),
    "Disallowed_NoPreference": Case(
        UA + "disallow: /private\ncontent-usage: train-ai=y", "bot", "/private/x", {}
    ),
    "Disallowed_AllowedPathKeepsPreference": Case(
        UA + "disallow: /private\ncontent-usage: train-ai=y", "bot", "/public", {"train-ai": (Y, 3)}
    ),
}


@cases(MATCHING)
def test_matching(case: Case) -> None:
    assert usage_of(case) == case.expected


@cases(SIGNAL)
def test_content_signal(case: Case) -> None:
    assert usage_of(case) == case.expected


@cases(MALFORMED)
def test_malformed_values(case: Case) -> None:
    assert usage_of(case) == case.expected


@cases(GROUPS)
def test_group_choice_and_disallowed(case: Case) -> None:
    assert usage_of(case) == case.expected


def test_rule_fields() -> None:
    robots = parse(UA + "content-usage: train-ai=n\ncontent-signal: /blog/ ai-train=yes")
    assert robots.usage(HOST + "/blog/1", "bot") == {
        "train-ai": UsageRule("train-ai", True, 3, "Content-Signal", "/blog/")
    }
    assert robots.usage(HOST + "/", "bot") == {
        "train-ai": UsageRule("train-ai", False, 2, "Content-Usage", "")
    }


def test_usage_does_not_change_allow_disallow() -> None:
    body = "user-agent: foobot\ncontent-usage: train-ai=n\nuser-agent: *\ndisallow: /p\n"
    with_usage = parse(body)
    without = parse(body.replace("content-usage", "x-unknown"))
    for path in ("/", "/p", "/px"):
        for agent in ("foobot", "otherbot"):
            assert with_usage.explain(HOST + path, agent) == without.explain(HOST + path, agent)


@pytest.mark.parametrize(
    ("body", "has_usage"),
    [
        pytest.param("user-agent: *\ndisallow: /", False, id="NoUsageLines"),
        pytest.param("user-agent: *\ncontent-usage: train-ai=n", True, id="UsageLine"),
        pytest.param("user-agent: *\ncontent-signal: ai-train=no", True, id="SignalLine"),
        pytest.param("content-usage: train-ai=n\nuser-agent: *", False, id="OutsideGroup"),
        pytest.param("user-agent: *\ncontent-usage: train-ai=no", False, id="NoValueGiven"),
        pytest.param("user-agent: *\ncontent-usage: train-ai=n,", False, id="Malformed"),
    ],
)
def test_has_usage(body: str, has_usage: bool) -> None:
    robots = parse(body)
    assert robots.has_usage is has_usage
    if not has_usage:
        assert robots.usage(HOST + "/", "bot") == {}


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("train-ai", "train-ai"),
        ("ai-use", "ai-use"),
        ("search", "search"),
        ("ai-train", "train-ai"),
        ("ai-input", "ai-use"),
        ("Train-AI", None),
        ("ai", None),
        ("", None),
        ("yes", None),
    ],
)
def test_usage_category(name: str, category: str | None) -> None:
    assert usage_category(name) == category
    assert category is None or category in USAGE_CATEGORIES


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(b"train-ai=n, search=y", {"train-ai": N, "search": Y}, id="Both"),
        pytest.param("train-ai=n", {"train-ai": N}, id="Str"),
        pytest.param(
            b"train-ai=n,search=y,ai-use=n",
            {"train-ai": N, "search": Y, "ai-use": N},
            id="NoSpaces",
        ),
        pytest.param(b"  train-ai=n  ", {"train-ai": N}, id="SurroundingSpaces"),
        pytest.param(b"train-ai=n, train-ai=y", {"train-ai": Y}, id="RepeatedKeyLastWins"),
        pytest.param(b"train-ai=n, foo=y", {"train-ai": N}, id="UnknownKeyIgnored"),
        pytest.param(b"train-ai=no, search=y", {"search": Y}, id="ValueNotYN"),
        pytest.param(b"train-ai=n, Search=y", {}, id="UppercaseKeyMalformed"),
        pytest.param(b"train-ai=n,", {}, id="TrailingComma"),
        pytest.param(b"", {}, id="Empty"),
        pytest.param(b"ai-train=no", {}, id="SignalVocabularyIsNotIetf"),
        pytest.param(b"train-ai=n, x=\xff", {}, id="NonAscii"),
    ],
)
def test_parse_usage_header(value: bytes | str, expected: dict[str, bool]) -> None:
    assert parse_usage_header(value) == expected


@pytest.mark.parametrize(
    ("value", "path", "preferences"),
    [
        (b"train-ai=n", b"", b"train-ai=n"),
        (b"train-ai=n, search=y", b"", b"train-ai=n, search=y"),
        (b"/a/ train-ai=n, search=y", b"/a/", b"train-ai=n, search=y"),
        (b"/a/\t  train-ai=n", b"/a/", b"train-ai=n"),
        (b"* train-ai=n", b"*", b"train-ai=n"),
        (b"*=n", b"", b"*=n"),
        (b"images/ train-ai=n", b"images/", b"train-ai=n"),
        (b"train-ai=n search=y", b"", b"train-ai=n search=y"),
        (b"/only-a-path", b"", b"/only-a-path"),
    ],
)
def test_parse_usage_line_path(value: bytes, path: bytes, preferences: bytes) -> None:
    parsed = parse_usage_line("Content-Usage", value)
    assert (parsed.path, parsed.preferences) == (path, preferences)


def test_hostile_many_usage_rules_stay_linear() -> None:
    # Thousands of wildcard rules in one group: the parse, the compile on the first
    # lookup and 50 lookups grow linearly with the number of rules (each lookup
    # tests the group's rules once, as Google's matcher does, not once per category).
    def work(count: int) -> Callable[[], None]:
        body = UA + "".join(f"content-usage: /*x{i}*y train-ai=n\n" for i in range(count))

        def run() -> None:
            robots = parse(body)
            assert robots.has_usage
            for n in range(50):
                assert robots.usage(f"{HOST}/a/x{n}/b/y", "bot")["train-ai"].line == n + 2

        return run

    assert_linear(work, 5_000)


@pytest.mark.skipif(not CORPUS_FILES, reason=MISSING)
def test_files_without_usage_rules_are_plain_robotstxt() -> None:
    bodies = [path.read_bytes() for path in CORPUS_FILES]
    parsed = [parse(body) for body in bodies]
    # No file of the corpus has usage rules: each is a plain RobotsTxt, so the
    # feature adds not one byte to what it retains (the subclass with the
    # usage slots is built only for files that have some).
    assert all(type(robots).__name__ == "RobotsTxt" for robots in parsed)
    assert not any(robots.has_usage for robots in parsed)


# --- against a naive reading of the rule, on generated files ------------------

_PATHS = st.sampled_from(
    ["", "/", "/a", "/a/", "/ab", "/a*", "/*b", "/a$", "/*.pdf$", "*", "/%c3%a9", "/é", "/a/b", "b"]
)
_PREFERENCES = st.sampled_from(
    ["train-ai=n", "train-ai=y", "train-ai=y, search=n", "search=y", "ai-use=n, train-ai=n"]
)
_SIGNALS = st.sampled_from(["ai-train=no", "ai-train=yes", "search=yes, ai-input=no"])


@st.composite
def _usage_bodies(draw: st.DrawFn) -> str:
    lines = ["user-agent: *"]
    for _ in range(draw(st.integers(1, 8))):
        path = draw(_PATHS)
        if draw(st.booleans()):
            value = f"content-usage: {path} {draw(_PREFERENCES)}"
        else:
            value = f"content-signal: {path} {draw(_SIGNALS)}"
        lines.append(value.replace(":  ", ": "))
    return "\n".join(lines)


def naive_usage(body: str, path: bytes) -> dict[str, tuple[bool, int]]:
    """Every rule tested one by one: longest normalised pattern, "no" on a tie,
    then the earliest line (the single group "*" of the generated files)."""
    best: dict[str, tuple[int, bool, int]] = {}  # category -> (length, allowed, line)
    for number, text in enumerate(body.split("\n"), 1):
        key, _, value = text.partition(": ")
        if key not in ("content-usage", "content-signal"):
            continue
        parsed = parse_usage_line(key.title(), value.encode())
        pattern = escape_pattern(parsed.path or b"/")
        if not pattern_matches(path, pattern):
            continue
        for category, allowed in parsed.values.items():
            length = len(pattern)
            old = best.get(category)
            if old is None or (length, not allowed) > (old[0], not old[1]):
                best[category] = (length, allowed, number)
    return {category: (allowed, line) for category, (_, allowed, line) in best.items()}


@settings(max_examples=300, deadline=None)
@given(
    body=_usage_bodies(),
    path=st.sampled_from(["/", "/a", "/a/", "/ab", "/abc", "/a/b", "/x.pdf", "/%C3%A9", "/b"]),
)
def test_usage_matches_naive_reading(body: str, path: str) -> None:
    found = parse(body).usage(HOST + path, "bot")
    got = {category: (rule.allowed, rule.line) for category, rule in found.items()}
    assert got == naive_usage(body, path.encode())
