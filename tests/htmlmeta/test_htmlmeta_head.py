"""htmlmeta.head_meta: the meta tags of the head only, robust to real-world markup."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.htmlmeta import head_meta

ROBOTS_NOINDEX = [("robots", "noindex")]

CASES = [
    pytest.param(
        b'<head><meta name="robots" content="noindex"></head>', ROBOTS_NOINDEX, id="plain"
    ),
    pytest.param(
        b"<head><meta content='noindex' name='robots'></head>",
        ROBOTS_NOINDEX,
        id="attribute_order_and_single_quotes",
    ),
    pytest.param(b"<head><meta name=robots content=noindex></head>", ROBOTS_NOINDEX, id="unquoted"),
    pytest.param(
        b'<HEAD><META NAME="ROBOTS" CONTENT="noindex"></HEAD>',
        ROBOTS_NOINDEX,
        id="upper_case_names_lowercased",
    ),
    pytest.param(
        b'<head><MeTa NaMe=" Robots\t" CoNtEnT="NoIndex"></head>',
        [("robots", "NoIndex")],
        id="mixed_case_content_kept",
    ),
    pytest.param(
        b'<meta name="robots" content="noindex" />', ROBOTS_NOINDEX, id="self_closing_no_head"
    ),
    pytest.param(
        b'<meta name="robots" content="noindex"/>', ROBOTS_NOINDEX, id="self_closing_no_space"
    ),
    pytest.param(
        b'<meta\n  name = "robots"\n\tcontent =\n"noindex"\n>',
        ROBOTS_NOINDEX,
        id="whitespace_and_newlines_in_tag",
    ),
    pytest.param(
        b'<meta name="robots" content="  noindex , nofollow  ">',
        [("robots", "noindex , nofollow")],
        id="content_stripped",
    ),
    pytest.param(
        b'<meta name="robots" content="no&#105;ndex&comma; &amp;">',
        [("robots", "noindex, &")],
        id="entities_decoded",
    ),
    pytest.param(
        "<meta name=description content='caf\u00e9'>".encode(),
        [("description", "caf\u00e9")],
        id="utf8_content",
    ),
    pytest.param(
        b"<meta name=d content='\xff\xfe'>", [("d", "\ufffd\ufffd")], id="invalid_utf8_replaced"
    ),
    pytest.param(
        b'<meta name="robots" content="a" content="b" name="x">',
        [("robots", "a")],
        id="first_duplicate_attribute_wins",
    ),
    pytest.param(b'<meta name="robots">', [], id="no_content_no_pair"),
    pytest.param(b'<meta content="noindex">', [], id="no_name_no_pair"),
    pytest.param(
        b'<meta charset="utf-8"><meta http-equiv="x" content="y">',
        [],
        id="charset_and_http_equiv_skipped",
    ),
    pytest.param(b'<meta name=robots content="">', [("robots", "")], id="empty_content"),
    pytest.param(b'<meta name="robots" content="a>b">', [("robots", "a>b")], id="gt_inside_quotes"),
    pytest.param(
        b'<link href="x>y"><meta name=robots content=noindex>',
        ROBOTS_NOINDEX,
        id="gt_inside_quotes_of_other_tag",
    ),
    pytest.param(
        b"<metax name=robots content=noindex><meta-x name=robots content=x>",
        [],
        id="other_tag_names",
    ),
    pytest.param(
        b"<head><!-- <meta name=robots content=noindex> --></head>", [], id="comment_not_counted"
    ),
    pytest.param(
        b"<!--><meta name=robots content=noindex>", ROBOTS_NOINDEX, id="empty_comment_closes"
    ),
    pytest.param(b"<!-- unclosed <meta name=robots content=noindex>", [], id="unclosed_comment"),
    pytest.param(
        b"<!DOCTYPE html><?xml x?><meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="doctype_and_pi",
    ),
    pytest.param(
        b'<head><script>document.write("<meta name=robots content=noindex>")</script></head>',
        [],
        id="script_content_skipped",
    ),
    pytest.param(
        b"<script>x='</scriptx><meta name=a content=b>'</script >"
        b"<meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="script_end_needs_delimiter",
    ),
    pytest.param(
        b"<style>/* <meta name=robots content=noindex> */</style>", [], id="style_content_skipped"
    ),
    pytest.param(
        b"<title><meta name=robots content=noindex></title>", [], id="title_content_skipped"
    ),
    pytest.param(
        b"<noscript><meta name=robots content=noindex></noscript>",
        [],
        id="noscript_content_skipped",
    ),
    pytest.param(b"<script>unclosed <meta name=robots content=noindex>", [], id="unclosed_script"),
    pytest.param(b"<head></head><meta name=robots content=noindex>", [], id="stops_at_head_end"),
    pytest.param(
        b"<head></HEAD ><meta name=robots content=noindex>", [], id="stops_at_head_end_any_case"
    ),
    pytest.param(b"<body><meta name=robots content=noindex>", [], id="stops_at_body"),
    pytest.param(
        b"<BODY class=x><meta name=robots content=noindex>", [], id="stops_at_body_any_case"
    ),
    pytest.param(
        b"<head><bodyx><meta name=robots content=noindex>", ROBOTS_NOINDEX, id="bodyx_is_not_body"
    ),
    pytest.param(b"<meta name=robots content=noindex", [], id="unclosed_tag_dropped"),
    pytest.param(b'<meta name="robots content=noindex>', [], id="unclosed_quote_dropped"),
    pytest.param(
        b"<meta name=a content=1><meta name=b content=2>",
        [("a", "1"), ("b", "2")],
        id="document_order",
    ),
    pytest.param(b"no markup at all", [], id="no_meta_fast_path"),
    pytest.param(b"", [], id="empty_body"),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_head_meta(body: bytes, expected: list[tuple[str, str]]) -> None:
    assert head_meta(body) == expected


def test_names_filter_sees_lowercased_names() -> None:
    body = b"<meta name=ROBOTS content=a><meta name=viewport content=b><meta name=MyBot content=c>"
    seen: list[str] = []

    def wanted(name: str) -> bool:
        seen.append(name)
        return name in ("robots", "mybot")

    assert head_meta(body, wanted) == [("robots", "a"), ("mybot", "c")]
    assert seen == ["robots", "viewport", "mybot"]


def test_limit_bounds_the_scan() -> None:
    tag = b"<meta name=robots content=noindex>"
    body = b" " * 100 + tag
    assert head_meta(body, limit=100 + len(tag)) == ROBOTS_NOINDEX
    # A tag cut by the limit is dropped, not read truncated.
    assert head_meta(body, limit=100 + len(tag) - 1) == []
    assert head_meta(body, limit=50) == []
    assert head_meta(body, limit=0) == []
    assert head_meta(body, limit=-1) == []


PATHOLOGICAL = [
    pytest.param(b"<meta " + b"a " * 500_000 + b">", id="many_attributes"),
    pytest.param(b"<meta " + b'a=" ' * 350_000, id="unclosed_quotes"),
    pytest.param(b"<meta " + b"= " * 500_000, id="many_equals"),
    pytest.param(b"<" * 1_000_000, id="many_lt"),
    pytest.param(b"<meta" * 200_000, id="many_meta_prefixes"),
    pytest.param(b"<!--" * 250_000, id="many_comment_openers"),
    pytest.param(b"<script>" + b"</scrip" * 150_000, id="many_near_script_ends"),
    pytest.param(b"<meta name=a content=b>" * 45_000, id="many_meta_tags"),
]


@pytest.mark.parametrize("body", PATHOLOGICAL)
def test_linear_time_on_hostile_input(body: bytes) -> None:
    # Generous bound: only a quadratic (or worse) blow-up can exceed it.
    started = time.perf_counter()
    head_meta(body, limit=len(body))
    assert time.perf_counter() - started < 2.0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_never_raises_on_bytes(body: bytes) -> None:
    for name, content in head_meta(body):
        assert name == name.lower().strip(" \t\n\r\f")
        assert content == content.strip(" \t\n\r\f")


_PIECES = st.sampled_from(
    [
        b"<meta",
        b"<META ",
        b" name=",
        b"content=",
        b"'",
        b'"',
        b">",
        b"/>",
        b"<!--",
        b"-->",
        b"<script>",
        b"</script>",
        b"</head>",
        b"<body>",
        b"robots",
        b"noindex",
        b" ",
        b"=",
        b"&amp;",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_never_raises_on_markup_soup(pieces: list[bytes]) -> None:
    head_meta(b"".join(pieces))
