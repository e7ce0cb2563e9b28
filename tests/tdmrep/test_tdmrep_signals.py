"""Header fields and meta tags: one case per rule.

Ids: ``Value_…`` for what the spec says of values, ``Choice_…`` for what the
``_signals`` docstrings decide.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from scrapy_googlerobots.tdmrep import (
    HEADER_NAMES,
    META_NAMES,
    HeaderValue,
    from_header_values,
    from_headers,
    from_meta,
)

POLICY = "https://provider.com/policies/policy.json"


class Header(NamedTuple):
    reservation: HeaderValue | None
    policy: HeaderValue | None
    expected: tuple[int | None, str | None]
    codes: list[str]


HEADERS = {
    "Value_One": Header("1", None, (1, None), []),
    "Value_Zero": Header("0", None, (0, None), []),
    "Value_OneWithPolicy": Header("1", POLICY, (1, POLICY), []),
    "Value_PolicyBesideZeroNotProcessed": Header("0", POLICY, (0, None), ["policy-ignored"]),
    "Value_OtherIsUnset": Header("true", None, (None, None), ["bad-reservation"]),
    "Value_LeadingZeroIsUnset": Header("01", None, (None, None), ["bad-reservation"]),
    "Value_EmptyIsUnset": Header("", None, (None, None), ["bad-reservation"]),
    "Choice_OwsStripped": Header(" 1\t", None, (1, None), []),
    "Choice_BytesAccepted": Header(b"1", POLICY.encode(), (1, POLICY), []),
    "Choice_RepeatedAgreeing": Header(["1", "1"], None, (1, None), []),
    "Choice_CommaListAgreeing": Header("1, 1", None, (1, None), []),
    "Choice_RepeatedConflictingIsUnset": Header(
        ["1", "0"], None, (None, None), ["conflicting-values"]
    ),
    "Choice_PolicyOnly": Header(None, POLICY, (None, POLICY), []),
    "Choice_PolicyRelativeIgnored": Header("1", "/p.json", (1, None), ["bad-policy"]),
    "Choice_PolicyConflictingIgnored": Header(
        "1", [POLICY, POLICY + "2"], (1, None), ["conflicting-values"]
    ),
    "Choice_PolicyWithCommaKept": Header(
        "1", "https://a.com/p?x=1,2", (1, "https://a.com/p?x=1,2"), []
    ),
}


@pytest.mark.parametrize("case", list(HEADERS.values()), ids=list(HEADERS))
def test_header_values(case: Header) -> None:
    signal = from_header_values(case.reservation, case.policy)
    assert (signal.reservation, signal.policy) == case.expected
    assert [d.code for d in signal.diagnostics] == case.codes
    assert signal.step == "header"


def test_from_headers_names_case_insensitive_mapping_and_pairs() -> None:
    scrapy_like = {b"TDM-Reservation": [b"1"], b"Tdm-Policy": [POLICY.encode()]}
    for headers in (scrapy_like, [("tdm-reservation", "1"), ("TDM-POLICY", POLICY)]):
        signal = from_headers(headers)
        assert (signal.reservation, signal.policy) == (1, POLICY)
        assert signal.reservation_source is not None
        assert signal.reservation_source.describe() == 'header "tdm-reservation: 1"'


def test_from_headers_absent() -> None:
    signal = from_headers({"content-type": "text/html"})
    assert not signal.present
    assert (signal.reservation, signal.policy, signal.diagnostics) == (None, None, ())


class Meta(NamedTuple):
    pairs: list[tuple[str, str]]
    expected: tuple[int | None, str | None]
    codes: list[str]


METAS = {
    "Value_One": Meta([("tdm-reservation", "1")], (1, None), []),
    "Value_Zero": Meta([("tdm-reservation", "0")], (0, None), []),
    "Value_OtherIsUnset": Meta([("tdm-reservation", "yes")], (None, None), ["bad-reservation"]),
    "Value_PolicyBesideZeroNotProcessed": Meta(
        [("tdm-reservation", "0"), ("tdm-policy", POLICY)], (0, None), ["policy-ignored"]
    ),
    "Choice_NameCaseInsensitive": Meta([("TDM-Reservation", "1")], (1, None), []),
    "Choice_ContentWhitespaceStripped": Meta([("tdm-reservation", " 1\n")], (1, None), []),
    "Choice_NoCommaListInMeta": Meta(
        [("tdm-reservation", "1,1")], (None, None), ["bad-reservation"]
    ),
    "Choice_DuplicatesAgreeing": Meta(
        [("tdm-reservation", "1"), ("tdm-reservation", "1")], (1, None), []
    ),
    "Choice_DuplicatesConflictingIsUnset": Meta(
        [("tdm-reservation", "1"), ("tdm-reservation", "0")], (None, None), ["conflicting-values"]
    ),
    "Choice_OtherNamesIgnored": Meta([("robots", "noai"), ("description", "1")], (None, None), []),
    "Choice_EpubNamesAreNotHtml": Meta([("tdm:reservation", "1")], (None, None), []),
}


@pytest.mark.parametrize("case", list(METAS.values()), ids=list(METAS))
def test_meta_values(case: Meta) -> None:
    signal = from_meta(case.pairs)
    assert (signal.reservation, signal.policy) == case.expected
    assert [d.code for d in signal.diagnostics] == case.codes
    assert signal.step == "meta"


def test_meta_source_rebuilds_the_tag() -> None:
    signal = from_meta([("tdm-reservation", "1"), ("tdm-policy", 'https://a.com/p?"x"&y')])
    assert signal.policy_source is not None
    assert signal.policy_source.describe() == (
        'meta tag <meta name="tdm-policy" content="https://a.com/p?&quot;x&quot;&amp;y">'
    )


def test_names_for_a_head_scanner() -> None:
    assert META_NAMES == HEADER_NAMES == {"tdm-reservation", "tdm-policy"}
