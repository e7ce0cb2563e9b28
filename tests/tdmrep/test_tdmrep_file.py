"""tdmrep.json parsing: one case per rule, and one per diagnostic.

Ids name the rule: ``Value_…`` for what a property accepts, ``Choice_…`` for
what the spec leaves open and the package docstrings decide, ``Diag_<code>``
for each diagnostic.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest

from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE
from scrapy_googlerobots.tdmrep import WELL_KNOWN_PATH, parse_tdmrep_json

POLICY = "https://provider.com/policies/policy.json"


def one_rule(**properties: object) -> bytes:
    rule = {key.replace("_", "-"): value for key, value in properties.items()}
    return json.dumps([rule]).encode()


class Rule(NamedTuple):
    body: bytes
    reservation: int | None
    policy: str | None


RULES = {
    "Value_ReservationOne": Rule(one_rule(location="/", tdm_reservation=1), 1, None),
    "Value_ReservationZero": Rule(one_rule(location="/", tdm_reservation=0), 0, None),
    "Value_ReservationStringOneIsUnset": Rule(
        one_rule(location="/", tdm_reservation="1"), None, None
    ),
    "Value_ReservationStringZeroIsUnset": Rule(
        one_rule(location="/", tdm_reservation="0"), None, None
    ),
    "Value_ReservationTrueIsUnset": Rule(one_rule(location="/", tdm_reservation=True), None, None),
    "Value_ReservationFalseIsUnset": Rule(
        one_rule(location="/", tdm_reservation=False), None, None
    ),
    "Value_ReservationFloatIsUnset": Rule(
        b'[{"location": "/", "tdm-reservation": 1.0}]', None, None
    ),
    "Value_ReservationTwoIsUnset": Rule(one_rule(location="/", tdm_reservation=2), None, None),
    "Value_ReservationNullIsUnset": Rule(one_rule(location="/", tdm_reservation=None), None, None),
    "Value_ReservationMissingIsUnset": Rule(one_rule(location="/"), None, None),
    "Value_PolicyKeptWithOne": Rule(
        one_rule(location="/", tdm_reservation=1, tdm_policy=POLICY), 1, POLICY
    ),
    "Value_PolicyDroppedWithZero": Rule(
        one_rule(location="/", tdm_reservation=0, tdm_policy=POLICY), 0, None
    ),
    "Choice_PolicyKeptWithInvalidReservation": Rule(
        one_rule(location="/", tdm_reservation="x", tdm_policy=POLICY), None, POLICY
    ),
    "Choice_PolicyRelativeDropped": Rule(
        one_rule(location="/", tdm_reservation=1, tdm_policy="/policy.json"), 1, None
    ),
    "Choice_PolicyNotHttpDropped": Rule(
        one_rule(location="/", tdm_reservation=1, tdm_policy="ftp://a/p"), 1, None
    ),
    "Choice_PolicySurroundingSpaceStripped": Rule(
        one_rule(location="/", tdm_reservation=1, tdm_policy=f" {POLICY} "), 1, POLICY
    ),
    "Choice_DuplicateKeyLastWins": Rule(
        b'[{"location": "/", "tdm-reservation": 0, "tdm-reservation": 1}]', 1, None
    ),
}


@pytest.mark.parametrize("case", list(RULES.values()), ids=list(RULES))
def test_rule_values(case: Rule) -> None:
    tdm = parse_tdmrep_json(case.body)
    assert tdm.valid
    (rule,) = tdm.rules
    assert (rule.reservation, rule.policy) == (case.reservation, case.policy)


def test_Choice_InvalidReservationStillMatchesFirst() -> None:
    # The first matching rule is "the match"; its invalid value is unset there,
    # it does not let a later rule decide.
    tdm = parse_tdmrep_json(
        b'[{"location": "/", "tdm-reservation": "1"}, {"location": "/", "tdm-reservation": 0}]'
    )
    rule = tdm.match("/x")
    assert rule is not None and rule.index == 1
    verdict = tdm.explain("/x")
    assert verdict.reserved is None
    assert verdict.describe() == (
        'TDM reservation unset: rule 1 of /.well-known/tdmrep.json (location "/") matches '
        "but sets no valid tdm-reservation"
    )


class Diag(NamedTuple):
    body: bytes
    codes: list[str]
    valid: bool = True
    rule: int | None = None


DIAGNOSTICS = {
    "Diag_not-json_Garbage": Diag(b"User-agent: *", ["not-json"], False),
    "Diag_not-json_Empty": Diag(b"", ["not-json"], False),
    "Diag_not-json_TrailingComma": Diag(
        b'[{"location": "/", "tdm-reservation": 1},]', ["not-json"], False, None
    ),
    "Diag_not-json_ExtraData": Diag(b"[] []", ["not-json"], False),
    "Diag_not-json_Unclosed": Diag(b'[{"location": "/"', ["not-json"], False),
    "Diag_not-json_TooDeep": Diag(b"[" * 100_000, ["not-json"], False),
    "Diag_not-array_Object": Diag(b'{"location": "/", "tdm-reservation": 1}', ["not-array"], False),
    "Diag_not-array_Number": Diag(b"1", ["not-array"], False),
    "Diag_no-rules": Diag(b"[]", ["no-rules"]),
    "Diag_rule-not-object": Diag(b'["/", 1, null]', ["rule-not-object"] * 3, rule=1),
    "Diag_missing-location": Diag(one_rule(tdm_reservation=1), ["missing-location"], rule=1),
    "Diag_bad-location": Diag(one_rule(location=["/"], tdm_reservation=1), ["bad-location"]),
    "Diag_location-never-matches_NoSlash": Diag(
        one_rule(location="articles/", tdm_reservation=1), ["location-never-matches"]
    ),
    "Diag_location-never-matches_Url": Diag(
        one_rule(location="https://a.com/", tdm_reservation=1), ["location-never-matches"]
    ),
    "Diag_location-never-matches_Empty": Diag(
        one_rule(location="", tdm_reservation=1), ["location-never-matches"]
    ),
    "Diag_unreachable-rule": Diag(
        b'[{"location": "/", "tdm-reservation": 0},'
        b' {"location": "/private/*.pdf", "tdm-reservation": 1}]',
        ["unreachable-rule"],
        rule=2,
    ),
    "Diag_missing-reservation": Diag(one_rule(location="/"), ["missing-reservation"]),
    "Diag_bad-reservation": Diag(one_rule(location="/", tdm_reservation="1"), ["bad-reservation"]),
    "Diag_bad-policy_NotString": Diag(
        one_rule(location="/", tdm_reservation=1, tdm_policy=1), ["bad-policy"]
    ),
    "Diag_bad-policy_NotAbsolute": Diag(
        one_rule(location="/", tdm_reservation=1, tdm_policy="policy.json"), ["bad-policy"]
    ),
    "Diag_bad-policy_Empty": Diag(
        one_rule(location="/", tdm_reservation=1, tdm_policy=""), ["bad-policy"]
    ),
    "Diag_policy-ignored": Diag(
        one_rule(location="/", tdm_reservation=0, tdm_policy=POLICY), ["policy-ignored"]
    ),
    "Diag_duplicate-key": Diag(
        b'[{"location": "/", "location": "/a", "tdm-reservation": 1}]', ["duplicate-key"]
    ),
    "Diag_unknown-key": Diag(
        one_rule(location="/", tdm_reservation=1, comment="x"), ["unknown-key"], rule=1
    ),
    "Diag_bom": Diag(b"\xef\xbb\xbf" + one_rule(location="/", tdm_reservation=1), ["bom"]),
    "Diag_encoding": Diag(b'[{"location": "/caf\xe9", "tdm-reservation": 1}]', ["encoding"]),
}


@pytest.mark.parametrize("case", list(DIAGNOSTICS.values()), ids=list(DIAGNOSTICS))
def test_diagnostics(case: Diag) -> None:
    tdm = parse_tdmrep_json(case.body)
    assert [d.code for d in tdm.diagnostics] == case.codes
    assert tdm.valid is case.valid
    if not case.valid:
        assert tdm.rules == ()
    if case.rule is not None:
        assert tdm.diagnostics[0].rule == case.rule
    for diagnostic in tdm.diagnostics:
        assert diagnostic.message
        assert diagnostic.as_dict()["code"] == diagnostic.code


def test_Diag_unknown_key_hints_near_misses() -> None:
    tdm = parse_tdmrep_json(one_rule(location="/", tdm_reservation=1, tdmPolicy=POLICY))
    (diagnostic,) = tdm.diagnostics
    assert 'did you mean "tdm-policy"' in diagnostic.message


def test_diagnostics_carry_rule_index_and_line() -> None:
    body = (
        b'[\n  {"location": "/", "tdm-reservation": 1},\n'
        b'  {"location": "x",\n "tdm-reservation": 1}\n]'
    )
    tdm = parse_tdmrep_json(body)
    assert [(r.index, r.line) for r in tdm.rules] == [(1, 2), (2, 3)]
    (diagnostic,) = tdm.diagnostics
    assert (diagnostic.rule, diagnostic.line) == (2, 3)
    assert diagnostic.message.startswith("rule 2: ")


def test_Choice_InvalidUtf8KeptByteForByte() -> None:
    tdm = parse_tdmrep_json(b'[{"location": "/caf\xe9", "tdm-reservation": 1}]')
    assert tdm.match("/caf%E9/x") is not None
    assert tdm.match("/caf%C3%A9/x") is None


def test_Choice_BomIgnored() -> None:
    tdm = parse_tdmrep_json(b"\xef\xbb\xbf" + one_rule(location="/", tdm_reservation=1))
    assert tdm.explain("/x").reserved is True


def test_Choice_StrBodyAccepted() -> None:
    tdm = parse_tdmrep_json('[{"location": "/é", "tdm-reservation": 1}]')
    assert tdm.match("/%C3%A9") is not None


def test_Choice_RulesPastTheSizeCapUnread() -> None:
    first = b'{"location": "/a", "tdm-reservation": 1}'
    fillers = [b'{"location": "/filler%d$", "tdm-reservation": 0}' % n for n in range(20_000)]
    last = b'{"location": "/b", "tdm-reservation": 1}'
    count = len(fillers)
    body = b"[" + b",".join([first, *fillers, last]) + b"]"
    assert len(body) > GOOGLE_MAX_SIZE
    tdm = parse_tdmrep_json(body)
    assert tdm.valid and tdm.truncated
    assert [d.code for d in tdm.diagnostics] == ["too-large"]
    assert tdm.match("/a") is not None and tdm.match("/b") is None
    assert len(tdm.rules) < count
    whole = parse_tdmrep_json(body, max_size=None)
    assert not whole.truncated and whole.match("/b") is not None


def test_Choice_SmallCap() -> None:
    body = one_rule(location="/", tdm_reservation=1)
    tdm = parse_tdmrep_json(body, max_size=10)
    assert tdm.valid and tdm.truncated and tdm.rules == ()
    assert [d.code for d in tdm.diagnostics] == ["too-large"]


def test_file_url_names_the_rules() -> None:
    url = "https://provider.com/.well-known/tdmrep.json"
    tdm = parse_tdmrep_json(one_rule(location="/", tdm_reservation=1), url=url)
    assert tdm.url == url and tdm.rules[0].file_url == url
    assert tdm.explain("/x").explanation == f'rule 1 of {url} (location "/")'
    assert parse_tdmrep_json(b"[]").url == WELL_KNOWN_PATH


def test_rules_keep_file_order_and_index_skips_non_objects() -> None:
    tdm = parse_tdmrep_json(
        b'[{"location": "/b", "tdm-reservation": 1}, 7, {"location": "/a", "tdm-reservation": 0}]'
    )
    assert [(r.index, r.location) for r in tdm.rules] == [(1, "/b"), (3, "/a")]
