"""canonicalize_url(): request URLs in the form rules are matched against (SPEC B7)."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.robotstxt import parse

WIKI = "http://fi.wikipedia.org/wiki/"
CANONICAL_KAYTTAJA = WIKI + "K%C3%A4ytt%C3%A4j%C3%A4:"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param(WIKI + "Käyttäjä:", CANONICAL_KAYTTAJA, id="B7_non_ascii_to_utf8_escapes"),
        pytest.param(
            WIKI + "K%c3%a4ytt%c3%a4j%c3%a4:",
            CANONICAL_KAYTTAJA,
            id="B7_lowercase_escapes_uppercased",
        ),
        pytest.param(
            WIKI + "K%C3%a4ytt%c3%A4j%C3%A4:", CANONICAL_KAYTTAJA, id="mixed_case_escapes"
        ),
        pytest.param(WIKI + "Kä%c3%a4", WIKI + "K%C3%A4%C3%A4", id="raw_and_escaped_together"),
        pytest.param("http://a/?q=ü&r=%e2%82%ac", "http://a/?q=%C3%BC&r=%E2%82%AC", id="query_too"),
        pytest.param(
            "http://a/ä#frä%c3", "http://a/%C3%A4#fr%C3%A4%C3", id="fragment_kept_normalised"
        ),
        pytest.param("http://a/ツ", "http://a/%E3%83%84", id="A6_three_byte_char"),
        pytest.param("http://a/😀", "http://a/%F0%9F%98%80", id="four_byte_char"),
        pytest.param("http://a/\ud800", "http://a/%ED%A0%80", id="lone_surrogate_never_raises"),
        pytest.param(
            "http://www.müller.eu/", "http://www.xn--mller-kva.eu/", id="B7_host_punycode"
        ),
        pytest.param(
            "http://üser:päss@müller.eu:8080/ä",
            "http://%C3%BCser:p%C3%A4ss@xn--mller-kva.eu:8080/%C3%A4",
            id="userinfo_escaped_port_kept",
        ),
        pytest.param("http://a..ü/x", "http://a..%C3%BC/x", id="invalid_host_escaped_not_raised"),
        pytest.param("http://[::1]:8080/ä", "http://[::1]:8080/%C3%A4", id="ipv6_host_kept"),
        pytest.param("http://a/%zz%4a", "http://a/%zz%4A", id="only_valid_escapes_uppercased"),
        pytest.param("http://a/%e", "http://a/%e", id="truncated_escape_kept"),
        pytest.param("http://a/%%c3", "http://a/%%C3", id="percent_before_escape"),
        pytest.param("http://a/%41%7a", "http://a/%41%7A", id="A6_escapes_never_decoded"),
        pytest.param("data:text/plain,%e2%82%ac", "data:text/plain,%E2%82%AC", id="no_authority"),
        pytest.param("/relative/päth", "/relative/p%C3%A4th", id="relative_reference"),
    ],
)
def test_canonicalize(url: str, expected: str) -> None:
    assert canonicalize_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("http://example.com/a/b?c=d#e", id="plain_ascii"),
        pytest.param("http://Example.COM/A%2FB", id="uppercase_escape_and_host_case_kept"),
        pytest.param("http://a/b?z=1&a=2", id="query_order_kept"),
        pytest.param("http://a/./b/../c", id="dot_segments_kept"),
        pytest.param('http://a/x y"<>', id="ascii_specials_not_escaped"),
        pytest.param("http://a/%zz", id="invalid_escape_only"),
        pytest.param("http://a/%", id="trailing_percent"),
        pytest.param("", id="empty"),
    ],
)
def test_fast_path_returns_same_object(url: str) -> None:
    assert canonicalize_url(url) is url


@pytest.mark.parametrize(
    "url",
    [
        pytest.param(WIKI + "Käyttäjä:?q=%c3#x", id="mixed"),
        pytest.param("http://www.müller.eu/%7e", id="host_and_escape"),
    ],
)
def test_idempotent(url: str) -> None:
    once = canonicalize_url(url)
    assert once != url
    assert canonicalize_url(once) is once


@given(st.text())
def test_output_ascii_idempotent_and_same_bytes(tail: str) -> None:
    url = "http://example.com/" + tail
    out = canonicalize_url(url)
    assert out.isascii()
    assert canonicalize_url(out) == out
    # Only the spelling changes: both name the same bytes (a text comparison
    # would fail on escapes that are no UTF-8, such as "%80").
    assert unquote_to_bytes(out) == unquote_to_bytes(url)


SPELLINGS = ["/wiki/Käyttäjä:", "/wiki/K%c3%a4ytt%c3%a4j%c3%a4:", "/wiki/K%C3%A4ytt%C3%A4j%C3%A4:"]


@pytest.mark.parametrize("rule", SPELLINGS, ids=["rule_raw", "rule_lower", "rule_upper"])
@pytest.mark.parametrize("path", SPELLINGS, ids=["url_raw", "url_lower", "url_upper"])
def test_B7_every_spelling_meets_every_rule(rule: str, path: str) -> None:
    rules = parse(f"user-agent: *\ndisallow: {rule}\n")
    url = canonicalize_url("http://fi.wikipedia.org" + path)
    assert not rules.allowed(url, "FooBot")
    assert rules.allowed(canonicalize_url("http://fi.wikipedia.org/wiki/Kayttaja:"), "FooBot")


@given(st.text(alphabet="abcXYZ019/-._~%?&=äöü€ツ", min_size=1))
def test_canonical_url_meets_rule_written_the_same_way(tail: str) -> None:
    # Whatever the spelling, the core's pattern normalisation and this URL
    # normalisation agree, so a rule always matches the URL it was copied from.
    rules = parse(f"user-agent: *\ndisallow: /{tail}$\n")
    assert not rules.allowed(canonicalize_url("http://example.com/" + tail), "FooBot")
