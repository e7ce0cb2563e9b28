"""Nothing in the package raises on hostile input; the package imports only the stdlib."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.tdmrep import (
    from_header_values,
    from_headers,
    from_meta,
    parse_tdmrep_json,
    resolve,
)

ROOT = Path(__file__).resolve().parents[2]

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
_KEY = st.sampled_from(["location", "tdm-reservation", "tdm-policy", "other"]) | st.text()
_LOCATION = st.text(alphabet="/*$%?#aAé 0123456789-._~\x00", max_size=20)
RULE = st.dictionaries(
    _KEY,
    _LOCATION | st.sampled_from([0, 1, "1", True, "https://a.com/p"]) | JSON,
    max_size=4,
)
URL = st.text(max_size=40) | st.builds(lambda path: "https://a.com" + path, _LOCATION)


def _check(body: bytes, urls: list[str]) -> None:
    tdm = parse_tdmrep_json(body)
    for url in urls:
        rule = tdm.match(url)
        verdict = resolve(rule)
        assert verdict.describe()
        if rule is not None:
            assert rule.matches(url)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.lists(URL, max_size=3))
def test_arbitrary_bytes_never_raise(body: bytes, urls: list[str]) -> None:
    _check(body, urls)


@settings(max_examples=300, deadline=None)
@given(st.lists(RULE | JSON, max_size=6), st.lists(URL, max_size=3))
def test_arbitrary_json_never_raises(rules: list[object], urls: list[str]) -> None:
    _check(json.dumps(rules, ensure_ascii=False).encode("utf-8", "surrogatepass"), urls)


@settings(max_examples=200, deadline=None)
@given(st.lists(RULE, max_size=6), st.integers(0, 400), st.lists(URL, max_size=3))
def test_any_cut_never_raises(rules: list[object], cut: int, urls: list[str]) -> None:
    body = json.dumps(rules).encode()
    tdm = parse_tdmrep_json(body, max_size=cut)
    assert tdm.truncated is (len(body) > cut)
    for url in urls:
        tdm.match(url)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.text() | st.binary(), st.text() | st.binary()), max_size=5),
    st.lists(st.tuples(st.text(), st.text()), max_size=5),
)
def test_signals_never_raise(
    headers: list[tuple[str | bytes, str | bytes]], metas: list[tuple[str, str]]
) -> None:
    verdict = resolve(None, from_headers(headers), from_meta(metas))
    assert verdict.describe()
    from_header_values([value for _, value in headers] or None, "x")


def test_imports_only_the_standard_library_and_the_core() -> None:
    code = (
        "import sys; import scrapy_googlerobots.tdmrep as t; "
        't.parse_tdmrep_json(b\'[{"location": "/", "tdm-reservation": 1}]\').explain(\'/x\'); '
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('scrapy', 'twisted', 'idna', 'w3lib') or (m.startswith('scrapy_googlerobots.') "
        "and not m.startswith(('scrapy_googlerobots.tdmrep', 'scrapy_googlerobots.robotstxt', "
        "'scrapy_googlerobots.usagerules')))]; "
        "print(','.join(bad)); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
