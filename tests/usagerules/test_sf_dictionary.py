"""The RFC 9651 Dictionary parser against the ``http-sf`` library as oracle.

Both must agree on every input: valid or not, and for a valid one the keys,
values and parameters (types included: Token vs String, Integer vs Decimal).
Hand-written cases come from RFC 9651's text; generated ones are built from
the grammar's pieces, shuffled and broken.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from growth import assert_linear
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.usagerules._sf import Date, DisplayString, Token, parse_dictionary

http_sf: Any = pytest.importorskip("http_sf", reason="http-sf (test extra) is the oracle")

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _bare(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, datetime.datetime):
        return ("date", int((value - _EPOCH).total_seconds()))
    if isinstance(value, Date):
        return ("date", int(value))
    if isinstance(value, int):
        return ("integer", value)
    if isinstance(value, Decimal):
        return ("decimal", value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if isinstance(value, (DisplayString, http_sf.DisplayString)):
        return ("displaystring", str(value))
    if isinstance(value, (Token, http_sf.Token)):
        return ("token", str(value))
    assert isinstance(value, str), value
    return ("string", value)


def _params(params: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    return {key: _bare(value) for key, value in params.items()}


def normalised(members: dict[str, Any] | None) -> dict[str, Any] | None:
    """Members as comparable plain data (each library has its own types)."""
    if members is None:
        return None
    out: dict[str, Any] = {}
    for key, (value, params) in members.items():
        if isinstance(value, list):
            out[key] = ("inner", [(_bare(v), _params(p)) for v, p in value], _params(params))
        else:
            out[key] = (_bare(value), _params(params))
    return out


def oracle(value: bytes) -> dict[str, Any] | None:
    try:
        return normalised(http_sf.parse(value, tltype="dictionary"))
    except http_sf.StructuredFieldError as exc:
        if "Date value out of range" in str(exc):
            # http-sf turns Dates into datetimes (years 1 to 9999) and fails
            # outside; RFC 9651 4.2.9 takes any Integer. Not a disagreement
            # on the grammar: parse the value with the Date made small.
            return _date_outside_datetime
        return None


_date_outside_datetime: dict[str, Any] = {"<date outside datetime>": True}


def check(value: bytes) -> None:
    expected = oracle(value)
    ours = parse_dictionary(value)
    if expected is _date_outside_datetime:
        assert ours is not None
        return
    assert normalised(ours) == expected, value
    if value.isascii():  # the str form is the same parse
        assert normalised(parse_dictionary(value.decode())) == expected


RFC_CASES = [
    # RFC 9651 section 3.2 and its examples
    b'en="Applepie", da=:w4ZibGV0w6ZydGUK:',
    b"a=?0, b, c; foo=bar",
    b"rating=1.5, feelings=(joy sadness)",
    b"a=(1 2), b=3, c=4;aa=bb, d=(5 6);valid",
    b"foo=1, bar=2",
    b"example-dict=?0, b, c;foo=bar",
    # items of section 3.3
    b'a="hello world"',
    b'a="with \\"quotes\\" and \\\\"',
    b"a=:cHJldGVuZCB0aGlzIGlzIGJpbmFyeSBjb250ZW50Lg==:",
    b"a=@1659578233",
    b'a=%"This is intended for display to %c3%bcsers."',
    b"a=foo123/456",
    b"a=4.5, b=-0.5, c=-999999999999999, d=999999999999.999",
    b"a=(), b=( ), c=();p",
    b'a=("foo"; a=1;b=2);lvl=5, b=("bar" "baz");lvl=1',
    # the usage vocabulary
    b"train-ai=n, search=y",
    b"train-ai=n,search=y,ai-use=y",
    b"search=yes, ai-input=yes, ai-train=no",
    b'train-ai=n;reason="policy"',
    # invalid
    b"a=1,",
    b"a=1,,b=2",
    b",a=1",
    b"A=1",
    b"1a=1",
    b"a=1 b=2",
    b"a=(1 2",
    b"a=((1))",
    b"a=(1)(2)",
    b"a=1.",
    b"a=1.1234",
    b"a=1234567890123.1",
    b"a=1234567890123456",
    b"a=-",
    b"a=?2",
    b'a="\\x"',
    b'a="\x7f"',
    b"a=:ab=c:",
    b"a=:a:",
    b"a=:===:",
    b'a=%"%C3%BC"',
    b'a=%"%c3"',
    b"a=@1.5",
    b"a=1 ;b=2",
    b"\ta=1",
    b"a=1;",
    b"a=\xc3\xa9",
    b'a="\xc3\xa9"',
    b"a=1\x00",
    # edge whitespace
    b"",
    b"   ",
    b"  a=1  ",
    b"a=1\t",
    b"a=1 ,\tb=2",
    b"a=1, b=2, a=3",
    b"a;x;y=2;x=3",
]


@pytest.mark.parametrize("value", RFC_CASES, ids=[repr(v)[2:-1][:40] for v in RFC_CASES])
def test_rfc_cases_agree_with_http_sf(value: bytes) -> None:
    check(value)


_KEYS = st.sampled_from(
    ["a", "b", "train-ai", "ai-use", "search", "*", "a.b_c", "a1", "A", "1", "-a", ""]
)
_BARE = st.sampled_from(
    [
        "1", "-1", "0", "-0", "42", "1.5", "-1.25", "1.", "1.1234", "999999999999999",
        "1000000000000000", "123456789012.123", "1234567890123.1", "-", "--1",
        "y", "n", "yes", "no", "Y", "*tok", "t/x:y", "t%", "a!b",
        '"s"', '""', '"a\\"b"', '"a\\\\b"', '"\\x"', '"unterminated', '"é"', '"\t"',
        ":aGk=:", "::", ":aGk:", ":a:", ":ab=c:", ":a==:", ":===:", ":aGk", ":a b:",
        "?0", "?1", "?", "?2", "@0", "@-1", "@1.5", "@", "@1659578233",
        '%""', '%"x"', '%"%c3%bc"', '%"%C3%BC"', '%"%c3"', '%"%zz"', '%x', '%"a',
        "(", ")", "()", "(1 2)", "(1  2 )", "((1))", "(1)(2)", "( y n )", "(1;a=2 3);b",
    ]
)  # fmt: skip
_SEPS = st.sampled_from([",", ", ", " ,", ",\t", " , ", ",,", "", " ", "\t", ";", "  ,  "])
_NOISE = st.sampled_from(["", "", "", "", " ", "\t", "é", "\x00", "\x7f", "=", ";", ")", "(", ","])


@st.composite
def _parameters(draw: st.DrawFn) -> str:
    out = ""
    for _ in range(draw(st.integers(0, 2))):
        out += ";" + draw(st.sampled_from(["", " ", "  "])) + draw(_KEYS)
        if draw(st.booleans()):
            out += "=" + draw(_BARE)
    return out


@st.composite
def _member(draw: st.DrawFn) -> str:
    member = draw(_KEYS)
    if draw(st.integers(0, 4)):
        member += "=" + draw(_BARE)
    return member + draw(_parameters())


@st.composite
def _dictionaries(draw: st.DrawFn) -> bytes:
    text = draw(st.sampled_from(["", "", " ", "  "]))
    for index in range(draw(st.integers(0, 4))):
        if index:
            text += draw(_SEPS)
        text += draw(_member()) + draw(_NOISE)
    text += draw(st.sampled_from(["", "", " ", "\t", ","]))
    return text.encode()


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(_dictionaries())
def test_generated_dictionaries_agree_with_http_sf(value: bytes) -> None:
    check(value)


_ALPHABET = st.sampled_from([*' \t,;=()"\\:?@%*-./01269aAbnyz\x00\x7f', "é", "%c3", "=:"])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ALPHABET, max_size=30).map(lambda chars: "".join(chars).encode()))
def test_random_text_agrees_with_http_sf(value: bytes) -> None:
    check(value)


# Each hostile shape at a size of ``n`` repetitions, and its full size (about 200 KB).
HOSTILE: list[tuple[str, Callable[[int], bytes], int]] = [
    ("LongNumber", lambda n: b"a=" + b"1" * n, 200_000),
    ("LongString", lambda n: b'a="' + b"x" * n + b'"', 40_000),
    ("LongEscapes", lambda n: b'a="' + b'\\"' * n + b'"', 100_000),
    ("LongToken", lambda n: b"a=" + b"t" * n, 200_000),
    ("LongBytes", lambda n: b"a=:" + b"QUFB" * n + b":", 50_000),
    ("ManyMembers", lambda n: b", ".join(b"k%d=1" % i for i in range(n)), 20_000),
    ("LongInnerList", lambda n: b"a=(" + b"1 " * n + b")", 100_000),
    ("DeepInnerListOpen", lambda n: b"a=" + b"(" * n, 200_000),
    ("InnerListsInInnerList", lambda n: b"a=(" + b"()" * n, 100_000),
    ("ManyParameters", lambda n: b"a=1" + b";p" * n, 100_000),
    ("LongSpaceRun", lambda n: b"a=1" + b" " * n + b"x", 200_000),
    ("LongDisplayString", lambda n: b'a=%"' + b"%c3%bc" * n + b'"', 40_000),
]


@pytest.mark.parametrize(
    ("make", "full"), [pytest.param(make, full, id=name) for name, make, full in HOSTILE]
)
def test_hostile_inputs_are_linear(make: Callable[[int], bytes], full: int) -> None:
    def work(n: int) -> Callable[[], object]:
        value = make(n)
        return lambda: parse_dictionary(value)

    # A quarter, then all of the full size, in CPU time: only a quadratic (or
    # worse) blow-up fails, however fast or busy the machine.
    assert_linear(work, full // 4)
    value = make(full)
    assert normalised(parse_dictionary(value)) == oracle(value)
