"""Every example of the TDMRep final report (W3C CG, 2024-05-10), one test each.

Ids name the section, numbered as the published report numbers them:
5.1 ``#sec-tdm-reservation``, 5.2 ``#sec-tdm-policy``, 6.1 ``#sec-tdm-file``,
6.1.1 ``#sec-tdm-file-regexp``, 6.1.2 ``#sec-tdm-file-example``,
6.2 ``#sec-tdm-header``, 6.3 ``#sec-tdm-html-meta``,
6.7 ``#sec-processing-priority``.
"""

from __future__ import annotations

import pytest

from scrapy_googlerobots.tdmrep import (
    from_headers,
    from_meta,
    parse_tdmrep_json,
    resolve,
)

POLICY = "https://provider.com/policies/policy.json"

# 6.1.2, first example: opt-out for every file of the server.
EXAMPLE_1 = b"""
          [
            {
            "location": "/",
            "tdm-reservation": 1
            }
          ]
"""

# 6.1.2, second example: three groups of files.
EXAMPLE_2 = b"""
          [
            {
            "location": "/directory-a/",
            "tdm-reservation": 1
            },
            {
            "location": "/directory-b/html/",
            "tdm-reservation": 1,
            "tdm-policy":"https://provider.com/policies/policy.json"
            },
            {
            "location": "/directory-b/images/*.jpg",
            "tdm-reservation": 0
            }
          ]
"""


def test_Spec_6_1_2_example_1_every_file_reserved_without_policy() -> None:
    tdm = parse_tdmrep_json(EXAMPLE_1)
    assert tdm.valid and tdm.diagnostics == ()
    for url in ("https://provider.com/", "https://provider.com/any/file.pdf?x=1"):
        verdict = tdm.explain(url)
        assert (verdict.reserved, verdict.policy) == (True, None)
        assert verdict.source is not None and verdict.source.describe() == (
            'rule 1 of /.well-known/tdmrep.json (location "/")'
        )


@pytest.mark.parametrize(
    ("url", "reserved", "policy", "rule"),
    [
        pytest.param("https://provider.com/directory-a/report.pdf", True, None, 1, id="pdf"),
        pytest.param("https://provider.com/directory-b/html/page.html", True, POLICY, 2, id="html"),
        pytest.param("https://provider.com/directory-b/images/cat.jpg", False, None, 3, id="jpg"),
        pytest.param(
            "https://provider.com/directory-b/images/a/b.jpg", False, None, 3, id="jpg_deep"
        ),
        pytest.param("https://provider.com/directory-b/images/cat.png", None, None, 0, id="png"),
        pytest.param("https://provider.com/directory-b/other.html", None, None, 0, id="elsewhere"),
        pytest.param("https://provider.com/directory-a", None, None, 0, id="no_slash"),
    ],
)
def test_Spec_6_1_2_example_2_three_groups(
    url: str, reserved: bool | None, policy: str | None, rule: int
) -> None:
    tdm = parse_tdmrep_json(EXAMPLE_2)
    assert tdm.diagnostics == ()
    matched = tdm.match(url)
    assert (matched.index if matched else 0) == rule
    verdict = tdm.explain(url)
    assert (verdict.reserved, verdict.policy) == (reserved, policy)


@pytest.mark.parametrize(
    ("location", "path", "matches"),
    [
        pytest.param("/this/path/exactly$", "/this/path/exactly", True, id="dollar_exact"),
        pytest.param("/this/path/exactly$", "/this/path/exactly/", False, id="dollar_longer"),
        pytest.param("/this/path/exactly$", "/this/path/exactly?q", False, id="dollar_query"),
        pytest.param("/this/*/then", "/this/a/then", True, id="star_one"),
        pytest.param("/this/*/then", "/this/a/b/then/more", True, id="star_many"),
        pytest.param("/this/*/then", "/this//then", True, id="star_zero"),
        pytest.param("/this/*/then", "/this/then", False, id="star_needs_both_slashes"),
        pytest.param("/path/foo-%24", "https://provider.com/path/foo-$", True, id="percent_24"),
        pytest.param(
            "/path/foo-%24", "https://provider.com/path/foo-", False, id="percent_24_not_end"
        ),
    ],
)
def test_Spec_6_1_1_special_characters(location: str, path: str, matches: bool) -> None:
    # The table writes the key as "tdm-policy:"; the patterns are locations.
    body = f'[{{"location": "{location}", "tdm-reservation": 1}}]'.encode()
    assert (parse_tdmrep_json(body).match(path) is not None) is matches


def test_Spec_6_1_first_match_is_the_most_specific() -> None:
    # "The most specific match is the first in sequence" -- not the longest.
    tdm = parse_tdmrep_json(
        b'[{"location": "/a/", "tdm-reservation": 0}, {"location": "/a/b/", "tdm-reservation": 1}]'
    )
    rule = tdm.match("/a/b/c")
    assert rule is not None and (rule.index, rule.reservation) == (1, 0)


def test_Spec_6_1_no_match_is_unset() -> None:
    verdict = parse_tdmrep_json(EXAMPLE_2).explain("https://provider.com/elsewhere")
    assert (verdict.reserved, verdict.source) == (None, None)


def test_Spec_6_1_matching_is_case_sensitive() -> None:
    tdm = parse_tdmrep_json(b'[{"location": "/Directory-A/", "tdm-reservation": 1}]')
    assert tdm.match("/directory-a/x") is None
    assert tdm.match("/Directory-A/x") is not None


@pytest.mark.parametrize(
    ("location", "path", "matches"),
    [
        pytest.param("/%7Euser/", "/~user/x", True, id="pattern_unreserved_decoded"),
        pytest.param("/~user/", "/%7euser/x", True, id="uri_unreserved_decoded"),
        pytest.param("/a%2Fb", "/a/b", False, id="reserved_slash_kept"),
        pytest.param("/a%3Fb", "/a?b", False, id="reserved_question_kept"),
        pytest.param("/caf%C3%A9", "/caf%c3%a9", True, id="outside_ascii_kept_encoded"),
    ],
)
def test_Spec_6_1_percent_encoding(location: str, path: str, matches: bool) -> None:
    # "If a percent-encoded US-ASCII character is encountered in the URI, it
    # MUST be unencoded prior to comparison, unless it is a reserved character
    # [...] or the character is outside the unreserved character range."
    body = f'[{{"location": "{location}", "tdm-reservation": 1}}]'.encode()
    assert (parse_tdmrep_json(body).match(path) is not None) is matches


def test_Spec_6_1_prefix_match() -> None:
    # "The match evaluates positively if and only if the end of the path from
    # the rule is reached before a difference in octets is encountered."
    tdm = parse_tdmrep_json(b'[{"location": "/fish", "tdm-reservation": 1}]')
    assert tdm.match("/fish.html") is not None
    assert tdm.match("/fishheads/yummy?x") is not None
    assert tdm.match("/Fish") is None
    assert tdm.match("/fis") is None


def test_Spec_6_2_example_1_header_reserved_without_policy() -> None:
    headers = {
        "Date": "Wed, 14 Jul 2021 12:07:48 GMT",
        "Content-type": "image/jpg",
        "tdm-reservation": "1",
    }
    verdict = resolve(None, from_headers(headers))
    assert (verdict.reserved, verdict.policy) == (True, None)
    assert verdict.describe() == 'TDM rights reserved: header "tdm-reservation: 1"'


def test_Spec_6_2_example_2_header_reserved_with_policy() -> None:
    headers = [
        ("Date", "Wed, 14 Jul 2021 12:07:48 GMT"),
        ("Content-type", "text/html"),
        ("tdm-reservation", "1"),
        ("tdm-policy", POLICY),
    ]
    verdict = resolve(None, from_headers(headers))
    assert (verdict.reserved, verdict.policy) == (True, POLICY)
    assert verdict.policy_source is not None and verdict.policy_source.step == "header"


def test_Spec_6_3_example_1_html_meta() -> None:
    # <meta charset> has no name: a head scanner yields only the named tags.
    pairs = [("tdm-reservation", "1"), ("tdm-policy", POLICY)]
    verdict = resolve(None, meta=from_meta(pairs))
    assert (verdict.reserved, verdict.policy) == (True, POLICY)
    assert verdict.describe() == (
        'TDM rights reserved: meta tag <meta name="tdm-reservation" content="1">, policy ' + POLICY
    )


@pytest.mark.parametrize(
    ("value", "reserved"),
    [
        pytest.param("1", True, id="one_reserved"),
        pytest.param("0", False, id="zero_not_reserved"),
        pytest.param("2", None, id="other_unset"),
        pytest.param("yes", None, id="word_unset"),
    ],
)
def test_Spec_5_1_values(value: str, reserved: bool | None) -> None:
    # "Other values are considered protocol errors. In such a case the TDM
    # Agents MUST consider that `tdm-reservation` is unset."
    assert resolve(None, from_headers({"tdm-reservation": value})).reserved is reserved
    assert resolve(None, meta=from_meta([("tdm-reservation", value)])).reserved is reserved


def test_Spec_5_2_note_policy_beside_zero_not_processed() -> None:
    signal = from_headers({"tdm-reservation": "0", "tdm-policy": POLICY})
    assert [d.code for d in signal.diagnostics] == ["policy-ignored"]
    verdict = resolve(None, signal)
    assert (verdict.reserved, verdict.policy) == (False, None)
    tdm = parse_tdmrep_json(
        b'[{"location": "/", "tdm-reservation": 0, "tdm-policy": "' + POLICY.encode() + b'"}]'
    )
    assert [d.code for d in tdm.diagnostics] == ["policy-ignored"]
    assert tdm.explain("/x").policy is None


def test_Spec_6_7_header_supersedes_file() -> None:
    rule = parse_tdmrep_json(EXAMPLE_1).match("/page")
    verdict = resolve(rule, from_headers({"tdm-reservation": "0"}))
    assert verdict.reserved is False and verdict.source is not None
    assert verdict.source.step == "header"


def test_Spec_6_7_meta_supersedes_previous() -> None:
    rule = parse_tdmrep_json(EXAMPLE_1).match("/page")
    verdict = resolve(
        rule, from_headers({"tdm-reservation": "1"}), from_meta([("tdm-reservation", "0")])
    )
    assert verdict.reserved is False and verdict.source is not None
    assert verdict.source.step == "meta"


def test_Spec_6_7_absence_does_not_reset() -> None:
    rule = parse_tdmrep_json(EXAMPLE_2).match("/directory-b/html/page.html")
    verdict = resolve(rule, from_headers({"content-type": "text/html"}), from_meta([]))
    assert (verdict.reserved, verdict.policy) == (True, POLICY)
    assert verdict.source is not None and verdict.source.step == "file"
