"""Where each directive came from, effective noindex at a given time, and the HTML entry point."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.pagedirectives import (
    EMPTY,
    PageDirectives,
    from_headers_and_body,
    parse_date,
    parse_page_directives,
)

UTC = timezone.utc


def test_explain_names_each_directive_and_its_source() -> None:
    result = parse_page_directives(
        ["none"],
        [("robots", "max-snippet:10, nofollow"), ("mybot", "max-image-preview:standard")],
        "MyBot",
    )
    assert result.explain() == [
        ("noindex", "X-Robots-Tag: none"),
        ("nofollow", "X-Robots-Tag: none"),
        ("max-snippet:10", '<meta name="robots" content="max-snippet:10, nofollow">'),
        ("max-image-preview:standard", '<meta name="mybot" content="max-image-preview:standard">'),
    ]


def test_winning_value_names_its_own_source() -> None:
    result = parse_page_directives(["max-snippet:50"], [("robots", "max-snippet:10")], "bot")
    source = result.source("max-snippet")
    assert source is not None and source.kind == "meta" and source.directive == "max-snippet:10"


def test_max_snippet_zero_is_the_source_of_nosnippet() -> None:
    result = parse_page_directives(["max-snippet:0"], [], "bot")
    source = result.source("nosnippet")
    assert source is not None and source.short() == "X-Robots-Tag: max-snippet:0"


BEFORE = datetime(2010, 6, 25, 22, 59, tzinfo=UTC)
AFTER = datetime(2010, 6, 25, 23, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "now", "directive"),
    [
        pytest.param(["noindex"], BEFORE, "noindex", id="Google_noindex"),
        pytest.param(["none"], BEFORE, "none", id="Google_none_source_says_none"),
        pytest.param(
            ["unavailable_after: 25 Jun 2010 15:00:00 PST"],
            AFTER,
            "unavailable_after: 25 Jun 2010 15:00:00 PST",
            id="Google_unavailable_after_passed",
        ),
        pytest.param(
            ["unavailable_after: 25 Jun 2010 15:00:00 PST"],
            BEFORE,
            None,
            id="Google_unavailable_after_not_yet",
        ),
        pytest.param(
            ["unavailable_after: 25 Jun 2010 15:00:00 PST"],
            AFTER.replace(tzinfo=None),
            "unavailable_after: 25 Jun 2010 15:00:00 PST",
            id="Naive_now_is_utc",
        ),
        pytest.param(
            ["unavailable_after: bogus"], AFTER, None, id="Google_unparseable_date_ignored"
        ),
        pytest.param(["nofollow"], AFTER, None, id="Google_nofollow_is_not_noindex"),
    ],
)
def test_effective_noindex(headers: list[str], now: datetime, directive: str | None) -> None:
    result = parse_page_directives(headers, [], "googlebot")
    source = result.noindex_source(now)
    assert (source.directive if source else None) == directive
    assert result.is_noindex(now) is (directive is not None)


def test_noindex_default_now_is_the_current_time() -> None:
    past = parse_page_directives(["unavailable_after: 2001-01-01"], [], "bot")
    future = parse_page_directives(["unavailable_after: 2999-01-01"], [], "bot")
    assert past.is_noindex() and not future.is_noindex()


def test_result_is_immutable() -> None:
    result = parse_page_directives(["noindex"], [], "bot")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.noindex = False  # type: ignore[misc]
    assert hash(result) == hash(parse_page_directives(["noindex"], [], "bot"))


def test_nothing_gives_the_shared_empty_result() -> None:
    assert parse_page_directives([], [], "bot") is EMPTY
    assert parse_page_directives(["all"], [("robots", "index, follow")], "bot") is EMPTY
    assert EMPTY.empty and EMPTY.explain() == [] and EMPTY.notes() == [] and not EMPTY.is_noindex()


HTML = b"""<!doctype html><html><head>
<!-- <meta name="robots" content="noarchive"> -->
<meta name="viewport" content="width=device-width">
<meta name="ROBOTS" content="noindex">
<meta name="MyBot" content="nofollow">
<meta name="otherbot" content="nosnippet">
</head><body><meta name="robots" content="noimageindex"></body></html>"""


def test_from_headers_and_body_reads_head_meta_for_us() -> None:
    result = from_headers_and_body([b"notranslate"], HTML, "mybot", content_type_is_html=True)
    assert (result.notranslate, result.noindex, result.nofollow) == (True, True, True)
    assert not (result.noarchive or result.nosnippet or result.noimageindex)
    # Only robots and our own name are read from the body.
    assert result.ignored == ()


def test_from_headers_and_body_skips_non_html() -> None:
    result = from_headers_and_body(None, HTML, "mybot", content_type_is_html=False)
    assert result is EMPTY


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(None, id="no_body"),
        pytest.param(b"", id="empty_body"),
        pytest.param(
            b"<html><head><meta charset=utf-8><title>x</title></head></html>", id="no_robots_meta"
        ),
        pytest.param(b"%PDF-1.7 binary", id="not_markup"),
    ],
)
def test_common_case_is_the_shared_empty(body: bytes | None) -> None:
    assert from_headers_and_body([], body, "mybot", content_type_is_html=True) is EMPTY


def test_from_headers_and_body_respects_limit() -> None:
    body = b" " * 1000 + b'<meta name="robots" content="noindex">'
    assert from_headers_and_body([], body, "bot", content_type_is_html=True).noindex
    assert from_headers_and_body([], body, "bot", content_type_is_html=True, limit=500) is EMPTY


PST = timezone(timedelta(hours=-8))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "25 Jun 2010 15:00:00 PST", datetime(2010, 6, 25, 15, tzinfo=PST), id="Google_example"
        ),
        pytest.param(
            "Fri, 25 Jun 2010 15:00:00 -0800",
            datetime(2010, 6, 25, 15, tzinfo=PST),
            id="rfc1123_offset",
        ),
        pytest.param(
            "Fri, 25 Jun 10 15:00:00 PST",
            datetime(2010, 6, 25, 15, tzinfo=PST),
            id="rfc822_two_digit_year",
        ),
        pytest.param(
            "Friday, 25-Jun-10 15:00:00 PST", datetime(2010, 6, 25, 15, tzinfo=PST), id="rfc850"
        ),
        pytest.param(
            "Fri Jun 25 23:00:00 2010", datetime(2010, 6, 25, 23, tzinfo=UTC), id="asctime_utc"
        ),
        pytest.param("2010-06-25", datetime(2010, 6, 25, tzinfo=UTC), id="iso_date"),
        pytest.param(
            "2010-06-25T15:00:00-08:00", datetime(2010, 6, 25, 15, tzinfo=PST), id="iso_offset"
        ),
        pytest.param(
            "2010-06-25T23:00:00.250Z", datetime(2010, 6, 25, 23, tzinfo=UTC), id="iso_fraction_z"
        ),
        pytest.param(
            "2010-06-25 23:00 UTC", datetime(2010, 6, 25, 23, tzinfo=UTC), id="iso_space_named_zone"
        ),
        pytest.param(
            "25 Jun 2010 18:00 EDT", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_edt"
        ),
        pytest.param(
            "25 jun 2010 17:00 cdt", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_cdt_lowercase"
        ),
        pytest.param(
            "25 Jun 2010 16:00 MDT", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_mdt"
        ),
        pytest.param(
            "25 Jun 2010 15:00 MST", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_mst"
        ),
        pytest.param(
            "25 Jun 2010 16:00 CST", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_cst"
        ),
        pytest.param(
            "25 Jun 2010 17:00 EST", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_est"
        ),
        pytest.param(
            "25 Jun 2010 15:00 PDT", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_pdt"
        ),
        pytest.param(
            "25 Jun 2010 22:00 GMT", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_gmt"
        ),
        pytest.param("25 Jun 2010 22:00 Z", datetime(2010, 6, 25, 22, tzinfo=UTC), id="named_z"),
        pytest.param("June 25, 2010", datetime(2010, 6, 25, tzinfo=UTC), id="us_long"),
        pytest.param(
            "31 Dec 1998 23:59:60 GMT", datetime(1999, 1, 1, tzinfo=UTC), id="leap_second"
        ),
        pytest.param("30 Feb 2010", None, id="no_such_day"),
        pytest.param("25 Foo 2010", None, id="no_such_month"),
        pytest.param("2010-06-25T25:00", None, id="no_such_hour"),
        pytest.param("25 Jun 2010 15:00 CEST", None, id="unknown_zone"),
        pytest.param("tomorrow", None, id="words"),
        pytest.param("", None, id="empty"),
    ],
)
def test_parse_date(text: str, expected: datetime | None) -> None:
    assert parse_date(text) == expected


_DIRECTIVE_BITS = st.sampled_from(
    [
        "noindex",
        "NONE",
        "all",
        ",",
        ", ",
        ":",
        ": ",
        "googlebot",
        "mybot",
        "max-snippet",
        "max-image-preview",
        "max-video-preview",
        "unavailable_after",
        "-1",
        "0",
        "10",
        "large",
        "Friday",
        "25-Jun-10",
        "15:00:00",
        "PST",
        "2010-06-25",
        " ",
        ";",
        "noai",
    ]
)
_HEADERS = st.lists(
    st.one_of(
        st.text(max_size=60),
        st.binary(max_size=60),
        st.lists(_DIRECTIVE_BITS, max_size=12).map("".join),
    ),
    max_size=4,
)
_META = st.lists(
    st.tuples(
        st.sampled_from(["robots", "mybot", "other", ""]) | st.text(max_size=10),
        st.text(max_size=60) | st.lists(_DIRECTIVE_BITS, max_size=12).map("".join),
    ),
    max_size=4,
)


@settings(max_examples=400, deadline=None)
@given(_HEADERS, _META, st.sampled_from(["mybot", "MyBot", "", "googlebot"]) | st.text(max_size=10))
def test_parsing_never_raises(
    headers: list[str | bytes], meta: list[tuple[str, str]], agent: str
) -> None:
    result = parse_page_directives(headers, meta, agent)
    assert isinstance(result, PageDirectives)
    result.explain()
    result.notes()
    result.is_noindex(datetime(2020, 1, 1, tzinfo=UTC))
    for name, _ in result.sources:
        assert result.source(name) is not None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.lists(st.binary(max_size=40), max_size=3), st.text(max_size=8))
def test_from_headers_and_body_never_raises(body: bytes, headers: list[bytes], agent: str) -> None:
    from_headers_and_body(
        headers, b"<meta name=robots content='" + body, agent, content_type_is_html=True
    )
    from_headers_and_body(headers, body, agent, content_type_is_html=True)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_parse_date_never_raises(text: str) -> None:
    moment = parse_date(text)
    assert moment is None or moment.tzinfo is not None


def test_agent_asked_only_when_needed() -> None:
    # Issue 33: the product token is worked out only for a header or a <meta>.
    asked: list[str] = []

    def agent() -> str:
        asked.append("asked")
        return "MyBot"

    assert from_headers_and_body(None, b"<p>no meta", agent, content_type_is_html=True) is EMPTY
    assert asked == []
    page = b"<meta name=mybot content=noindex>" + b" " * 70_000  # too large for the pre-test
    assert from_headers_and_body(None, page, agent, content_type_is_html=True).noindex
    assert from_headers_and_body([b"nofollow"], None, agent, content_type_is_html=False).nofollow
    assert len(asked) == 2
