"""The processing priority (spec 6.7): file rule, then header, then meta tags.

Each row: what each step says, the verdict, and the step that decided.
Step values: ``-`` absent, ``0``/``1``, ``x`` invalid, ``+P`` a policy.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from scrapy_googlerobots.tdmrep import (
    TdmRule,
    TdmSignal,
    from_headers,
    from_meta,
    parse_tdmrep_json,
    resolve,
)

P, Q, R = "https://a.com/p", "https://a.com/q", "https://a.com/r"


def file_rule(spec: str) -> TdmRule | None:
    if spec == "-":
        return None
    value, _, policy = spec.partition("+")
    reservation = {"0": "0", "1": "1", "x": '"x"'}[value]
    extra = f', "tdm-policy": "{policy}"' if policy else ""
    body = f'[{{"location": "/", "tdm-reservation": {reservation}{extra}}}]'
    return parse_tdmrep_json(body.encode()).match("/page")


def pairs(spec: str) -> list[tuple[str, str]]:
    if spec == "-":
        return []
    value, _, policy = spec.partition("+")
    found = [("tdm-reservation", value)] if value else []
    return found + ([("tdm-policy", policy)] if policy else [])


def header(spec: str) -> TdmSignal:
    return from_headers(pairs(spec))


def meta(spec: str) -> TdmSignal:
    return from_meta(pairs(spec))


class Row(NamedTuple):
    file: str
    header: str
    meta: str
    reserved: bool | None
    policy: str | None
    source: str | None
    policy_source: str | None = None


TABLE = {
    "NothingIsUnset": Row("-", "-", "-", None, None, None),
    "FileAlone": Row("1", "-", "-", True, None, "file"),
    "FileZeroAlone": Row("0", "-", "-", False, None, "file"),
    "HeaderAlone": Row("-", "1", "-", True, None, "header"),
    "MetaAlone": Row("-", "-", "0", False, None, "meta"),
    "HeaderSupersedesFile": Row("1", "0", "-", False, None, "header"),
    "HeaderSupersedesFileZero": Row("0", "1", "-", True, None, "header"),
    "MetaSupersedesHeader": Row("1", "0", "1", True, None, "meta"),
    "MetaSupersedesFile": Row("0", "-", "1", True, None, "meta"),
    "AbsentHeaderKeepsFile": Row("1+" + P, "-", "-", True, P, "file", "file"),
    "InvalidHeaderKeepsFile": Row("1", "x", "-", True, None, "file"),
    "InvalidMetaKeepsHeader": Row("-", "0", "x", False, None, "header"),
    "InvalidFileRuleIsUnset": Row("x", "-", "-", None, None, None),
    "InvalidFileThenHeader": Row("x", "1", "-", True, None, "header"),
    "HeaderPolicySupersedesFilePolicy": Row("1+" + P, "1+" + Q, "-", True, Q, "header", "header"),
    "HeaderPolicyOnlyKeepsFileReservation": Row("1+" + P, "+" + Q, "-", True, Q, "file", "header"),
    "HeaderReservationOnlyKeepsFilePolicy": Row("1+" + P, "1", "-", True, P, "header", "file"),
    "MetaPolicySupersedesAll": Row("1+" + P, "1+" + Q, "+" + R, True, R, "header", "meta"),
    "ZeroHidesPolicy": Row("1+" + P, "0", "-", False, None, "header"),
    "PolicyBesideZeroNotCarried": Row("0+" + P, "1", "-", True, None, "header"),
    "CarriedPolicyBackWithOne": Row("1+" + P, "0", "1", True, P, "meta", "file"),
    "PolicyWithoutReservationIsDropped": Row("-", "+" + Q, "-", None, None, None),
}


@pytest.mark.parametrize("row", list(TABLE.values()), ids=list(TABLE))
def test_precedence(row: Row) -> None:
    verdict = resolve(file_rule(row.file), header(row.header), meta(row.meta))
    assert (verdict.reserved, verdict.policy) == (row.reserved, row.policy)
    assert (verdict.source.step if verdict.source else None) == row.source
    assert (verdict.policy_source.step if verdict.policy_source else None) == row.policy_source


def test_absent_steps_may_be_none() -> None:
    verdict = resolve(file_rule("1"), None, None)
    assert verdict.reserved is True


ARTICLES = (
    b'[{"location": "/drafts/", "tdm-reservation": 0},'
    b' {"location": "/articles/*", "tdm-reservation": 1, "tdm-policy": "https://a.com/p.json"}]'
)


def test_explanation_for_a_crawl_log() -> None:
    verdict = parse_tdmrep_json(ARTICLES).explain("https://a.com/articles/x.html")
    assert f"Forbidden by TDM reservation: {verdict.explanation}" == (
        "Forbidden by TDM reservation: rule 2 of /.well-known/tdmrep.json "
        '(location "/articles/*"), policy https://a.com/p.json'
    )
    assert verdict.describe() == (
        'TDM rights reserved: rule 2 of /.well-known/tdmrep.json (location "/articles/*"), '
        "policy https://a.com/p.json"
    )
    assert verdict.file_rule is not None and verdict.file_rule.index == 2


@pytest.mark.parametrize(
    ("header_spec", "meta_spec", "line"),
    [
        pytest.param("0", "-", 'TDM rights not reserved: header "tdm-reservation: 0"', id="header"),
        pytest.param(
            "-",
            "0",
            'TDM rights not reserved: meta tag <meta name="tdm-reservation" content="0">',
            id="meta",
        ),
        pytest.param(
            "+https://a.com/q",
            "-",
            'TDM rights reserved: rule 2 of /.well-known/tdmrep.json (location "/articles/*"), '
            'policy https://a.com/q (from header "tdm-policy: https://a.com/q")',
            id="policy_from_other_step",
        ),
    ],
)
def test_describe_names_the_deciding_step(header_spec: str, meta_spec: str, line: str) -> None:
    rule = parse_tdmrep_json(ARTICLES).match("/articles/x")
    assert resolve(rule, header(header_spec), meta(meta_spec)).describe() == line


def test_describe_unset() -> None:
    assert resolve(None).describe() == (
        "TDM reservation unset: no tdmrep.json rule, header field or meta tag sets tdm-reservation"
    )


def test_verdict_is_immutable_and_collects_signal_problems() -> None:
    verdict = resolve(None, header("x"), meta("2"))
    assert [d.code for d in verdict.diagnostics] == ["bad-reservation", "bad-reservation"]
    with pytest.raises(AttributeError):
        verdict.reserved = True  # type: ignore[misc]
