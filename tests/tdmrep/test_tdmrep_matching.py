"""``location`` matching: one case per rule.

Ids: ``Google_…`` for Google's robots.txt path matching (which the spec
points to), ``Encoding_…`` for the spec's percent-encoding rules,
``Choice_…`` for what the ``_pattern`` docstring decides.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest

from scrapy_googlerobots.tdmrep import parse_tdmrep_json


class Case(NamedTuple):
    location: str
    url: str
    matches: bool


CASES = {
    "Google_PrefixMatch": Case("/fish", "https://a.com/fish/salmon.html", True),
    "Google_AnchoredAtStart": Case("/fish", "https://a.com/a/fish", False),
    "Google_CaseSensitive": Case("/fish", "https://a.com/Fish.asp", False),
    "Google_QueryIsPartOfThePath": Case("/page?id=1", "https://a.com/page?id=10", True),
    "Google_FragmentIgnored": Case("/page$", "https://a.com/page#top", True),
    "Google_StarAnyRun": Case("/*.php", "https://a.com/dir/index.php?x", True),
    "Google_StarAtStart": Case("*.pdf", "https://a.com/doc.pdf", True),
    "Google_DollarEndsPath": Case("/*.php$", "https://a.com/index.php?x", False),
    "Google_DollarOnlyAtEnd": Case("/a$b", "https://a.com/a$b", True),
    "Google_StarDollar": Case("/*$", "https://a.com/anything", True),
    "Google_SlashMatchesAll": Case("/", "https://a.com", True),
    "Google_PathOnlyInput": Case("/fish", "/fish?x", True),
    "Encoding_PatternPercent24IsLiteralDollar": Case("/foo-%24", "https://a.com/foo-$", True),
    "Encoding_PatternPercent2AIsLiteralStar": Case("/a-%2A.html", "https://a.com/a-*.html", True),
    "Encoding_PatternPercent2ANotWildcard": Case("/a-%2A.html", "https://a.com/a-b.html", False),
    "Encoding_UnreservedDecodedInUrl": Case("/~me/", "https://a.com/%7Eme/", True),
    "Encoding_UnreservedDecodedInPattern": Case("/%41bc", "https://a.com/Abc", True),
    "Encoding_ReservedNotDecoded": Case("/a%2Fb", "https://a.com/a/b", False),
    "Encoding_PercentNotDecoded": Case("/100%25", "https://a.com/100%", False),
    "Choice_NonAsciiPatternMatchesEncodedUrl": Case("/café", "https://a.com/caf%C3%A9", True),
    "Choice_NonAsciiUrlMatchesEncodedPattern": Case("/caf%c3%a9", "https://a.com/café", True),
    "Choice_HexCaseIgnored": Case("/%3b", "https://a.com/%3B", True),
    "Choice_SpaceComparedEncoded": Case("/a b", "https://a.com/a%20b", True),
    "Choice_EmptyLocationNeverMatches": Case("", "https://a.com/", False),
    "Choice_UrlAsLocationNeverMatches": Case("https://a.com/", "https://a.com/", False),
    "Choice_LeadingSpaceNeverMatches": Case(" /a", "https://a.com/a", False),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_matching(case: Case) -> None:
    body = json.dumps([{"location": case.location, "tdm-reservation": 1}]).encode()
    tdm = parse_tdmrep_json(body)
    assert (tdm.match(case.url) is not None) is case.matches
    assert tdm.rules[0].matches(case.url) is case.matches
    assert (tdm.match(case.url.encode()) is not None) is case.matches


def test_first_rule_in_file_order_wins_over_longer() -> None:
    tdm = parse_tdmrep_json(
        b'[{"location": "/*.jpg", "tdm-reservation": 0},'
        b' {"location": "/private/", "tdm-reservation": 1}]'
    )
    rule = tdm.match("https://a.com/private/me.jpg")
    assert rule is not None and rule.index == 1
    rule = tdm.match("https://a.com/private/me.png")
    assert rule is not None and rule.index == 2


def test_rules_that_never_match_are_skipped() -> None:
    tdm = parse_tdmrep_json(
        b'[{"tdm-reservation": 1}, {"location": "x", "tdm-reservation": 1},'
        b' {"location": "/", "tdm-reservation": 0}]'
    )
    rule = tdm.match("/x")
    assert rule is not None and rule.index == 3
