"""htmlmeta.head_meta: the meta tags of the head only, robust to real-world markup."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from growth import assert_linear
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.htmlmeta import head_meta, may_name

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
    pytest.param(
        b"<head></head><meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="after_head_end_goes_back_in_head",
    ),
    pytest.param(
        b"<head></HEAD >\n<!-- x --><link rel=x><meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="after_head_end_any_case_after_link_and_comment",
    ),
    pytest.param(
        b"<head></head><p><meta name=robots content=noindex>", [], id="stops_at_content_after_head"
    ),
    pytest.param(b"<body><meta name=robots content=noindex>", [], id="stops_at_body"),
    pytest.param(
        b"<BODY class=x><meta name=robots content=noindex>", [], id="stops_at_body_any_case"
    ),
    pytest.param(
        b"<head><bodyx><meta name=robots content=noindex>", [], id="unknown_element_ends_head"
    ),
    pytest.param(b"<meta name=robots content=noindex", [], id="unclosed_tag_dropped"),
    pytest.param(b'<meta name="robots content=noindex>', [], id="unclosed_quote_dropped"),
    pytest.param(
        b"<meta name=a content=1><meta name=b content=2>",
        [("a", "1"), ("b", "2")],
        id="document_order",
    ),
    pytest.param(b"no markup at all", [], id="no_meta_fast_path"),
    # Issue 33: the head as an HTML5 tree builder builds it.
    pytest.param(
        b"<head><!-- x --!><meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="comment_closed_by_bang",
    ),
    pytest.param(
        b"<head><!-- x --!<meta name=robots content=noindex>-->", [], id="comment_bang_without_gt"
    ),
    pytest.param(
        b"<!---><meta name=robots content=noindex>", ROBOTS_NOINDEX, id="three_dash_comment_closes"
    ),
    pytest.param(
        b"<!--!><meta name=robots content=noindex>", [], id="bang_gt_right_after_opener_is_text"
    ),
    pytest.param(
        b"<script><!--<script></script><meta name=robots content=x>--></script>"
        b"<meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="script_double_escaped",
    ),
    pytest.param(
        b"<script><!--</script><meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="script_escaped_end_tag_still_closes",
    ),
    pytest.param(
        b"<script><!--><meta name=a content=b></script><meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="script_empty_escape",
    ),
    pytest.param(
        b"<title>a</title x=y><meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="end_tag_with_attributes",
    ),
    pytest.param(
        b'<meta name=tdm-policy content="https://e.example/p?lang=en&region=eu&copy=1&not;&amp">',
        [("tdm-policy", "https://e.example/p?lang=en&region=eu&copy=1\u00ac&")],
        id="legacy_reference_rule_in_attributes",
    ),
    pytest.param(
        b"<meta name=robots content='a&#0;b&#x80;c&#1;'>",
        [("robots", "a\ufffdb\u20acc\x01")],
        id="numeric_references_as_html",
    ),
    pytest.param(
        b"<meta name=robots content='a\r\nb\rc\x00'>",
        [("robots", "a\nb\nc\ufffd")],
        id="newlines_normalised_nul_replaced",
    ),
    pytest.param(b"<head><img src=x><meta name=robots content=noindex>", [], id="img_ends_head"),
    pytest.param(b"<head><div><meta name=robots content=noindex>", [], id="div_ends_head"),
    pytest.param(b"<head>x<meta name=robots content=noindex>", [], id="text_ends_head"),
    pytest.param(b"<head>&nbsp;<meta name=robots content=noindex>", [], id="nbsp_ends_head"),
    pytest.param(b"<head>\x00<meta name=robots content=noindex>", [], id="nul_ends_head"),
    pytest.param(
        b"<head>&#32;&Tab;\f<meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="whitespace_references_do_not_end_head",
    ),
    pytest.param(
        b"<head><my-widget><meta name=robots content=noindex>", [], id="custom_element_ends_head"
    ),
    pytest.param(b"<head></br><meta name=robots content=noindex>", [], id="br_end_tag_ends_head"),
    pytest.param(
        b"<head></div></p><meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="stray_end_tags_ignored",
    ),
    pytest.param(b"<frameset><meta name=robots content=noindex>", [], id="frameset_ends_head"),
    pytest.param(
        b"<head></head><noscript><meta name=robots content=noindex></noscript>",
        [],
        id="noscript_after_head_is_body",
    ),
    pytest.param(
        b"<head><template><meta name=robots content=x><style></template></style></template>"
        b"<meta name=robots content=noindex>",
        ROBOTS_NOINDEX,
        id="template_content_is_not_the_head",
    ),
    pytest.param(b"< meta name=robots content=noindex>", [], id="lt_space_is_text"),
    pytest.param(
        b"<head></><meta name=robots content=noindex>", ROBOTS_NOINDEX, id="empty_end_tag_ignored"
    ),
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


# Each hostile shape at a size of ``n`` repetitions (the full sizes are about 1 MB).
PATHOLOGICAL: list[tuple[str, Callable[[int], bytes], int]] = [
    ("many_attributes", lambda n: b"<meta " + b"a " * n + b">", 500_000),
    ("unclosed_quotes", lambda n: b"<meta " + b'a=" ' * n, 350_000),
    ("many_equals", lambda n: b"<meta " + b"= " * n, 500_000),
    ("many_lt", lambda n: b"<" * n, 1_000_000),
    ("many_meta_prefixes", lambda n: b"<meta" * n, 200_000),
    ("many_comment_openers", lambda n: b"<!--" * n, 250_000),
    ("many_near_script_ends", lambda n: b"<script>" + b"</scrip" * n, 150_000),
    ("many_meta_tags", lambda n: b"<meta name=a content=b>" * n, 45_000),
]


@pytest.mark.parametrize(
    ("make", "full"), [pytest.param(make, full, id=name) for name, make, full in PATHOLOGICAL]
)
def test_linear_time_on_hostile_input(make: Callable[[int], bytes], full: int) -> None:
    def work(n: int) -> Callable[[], object]:
        body = make(n)
        return lambda: head_meta(body, limit=len(body))

    # A quarter, then all of the full size (both past the CPU caches, whose edge alone
    # can make a small input several times cheaper per byte): only a quadratic (or
    # worse) blow-up fails.
    assert_linear(work, full // 4)


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


# -- issue 33: the encoding, and no 64 KiB window ---------------------------------


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom(codec: str) -> None:
    text = '<head><meta name="robots" content="noindex, caf\u00e9">'
    body = "\ufeff".encode(codec) + text.encode(codec)
    assert head_meta(body) == [("robots", "noindex, caf\u00e9")]
    # The byte order mark wins over a declared encoding, as in HTML and Scrapy.
    assert head_meta(body, encoding="iso-8859-1") == [("robots", "noindex, caf\u00e9")]


def test_utf8_bom_skipped() -> None:
    assert head_meta(b"\xef\xbb\xbf<meta name=robots content=noindex>") == ROBOTS_NOINDEX


def test_utf16_declared_without_bom() -> None:
    body = "<meta name=robots content=noindex>".encode("utf-16-le")
    assert head_meta(body) == []
    assert head_meta(body, encoding="utf-16-le") == ROBOTS_NOINDEX


@pytest.mark.parametrize(
    ("codec", "content"),
    [
        ("windows-1252", "\u00e9t\u00e9 \u20ac"),
        ("shift_jis", "\u8868\u793a"),
        ("koi8-r", "\u0434\u0430"),
    ],
)
def test_legacy_encoding(codec: str, content: str) -> None:
    body = f'<meta charset="{codec}"><meta name="description" content="{content}">'.encode(codec)
    assert head_meta(body, encoding=codec) == [("description", content)]


def test_iso2022_decoded_before_reading() -> None:
    body = '<meta name="description" content="\u8868\u793a">'.encode("iso2022_jp")
    assert head_meta(body, encoding="iso-2022-jp") == [("description", "\u8868\u793a")]


def test_unknown_encoding_reads_utf8() -> None:
    assert head_meta(b"<meta name=robots content=noindex>", encoding="x-nonsense") == ROBOTS_NOINDEX


def test_head_longer_than_64_kib() -> None:
    style = b"<style>" + b".a{color:red}" * 20_000 + b"</style>"
    hreflang = b'<link rel="alternate" hreflang="de" href="https://example.com/de/">' * 2_000
    body = b"<head>" + style + hreflang + b"<meta name=robots content=noindex></head><body>"
    assert len(body) > 300_000
    assert head_meta(body) == ROBOTS_NOINDEX


def test_reading_stops_where_the_head_ends() -> None:
    # What follows the head is the body's: neither read nor counted.
    body = b"<head><title>t</title></head><body>" + b"<p>x</p>" * 1_000
    assert head_meta(body + b"<meta name=robots content=noindex>") == []


def test_lazy_encoding_asked_only_for_a_wanted_meta() -> None:
    asked: list[str] = []

    def encoding() -> str:
        asked.append("asked")
        return "windows-1252"

    body = '<meta name=viewport content=x><meta name=robots content="\u00e9t\u00e9">'.encode(
        "cp1252"
    )
    assert head_meta(body, lambda n: n == "viewport", encoding=encoding) == [("viewport", "x")]
    assert asked == ["asked"]
    assert head_meta(body, lambda n: n == "robots", encoding=encoding) == [
        ("robots", "\u00e9t\u00e9")
    ]
    assert asked == ["asked", "asked"]
    assert head_meta(b"<title>x</title><p>", encoding=encoding) == []
    assert len(asked) == 2


def test_lazy_encoding_not_read_as_bytes_restarts() -> None:
    body = '<meta name="d" content="\u8868">'.encode("iso2022_jp")
    assert head_meta(body, encoding=lambda: "iso-2022-jp") == [("d", "\u8868")]
    utf16 = "<meta name=robots content=noindex>".encode("utf-16-le")
    assert head_meta(utf16, encoding=lambda: "utf-16-le") == ROBOTS_NOINDEX


# -- may_name: the cheap test before head_meta never hides a meta -------------------

_NAMED_PIECES = st.sampled_from(
    [
        b"<meta",
        b"<META ",
        b"<mEtA",
        b" name=",
        b" NAME=",
        b"content=",
        b"'",
        b'"',
        b">",
        b"robots",
        b"ROBOTS",
        b"RoBoTs",
        b"&#114;obots",
        b"&#x52;OBOTS",
        b"\xe2\x84\xaa",
        b"mybot",
        b"MyBot",
        b"</head>",
        b"<p>",
        b"<main>",
        b" ",
        b"x",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_NAMED_PIECES, max_size=30))
def test_may_name_is_false_only_when_head_meta_finds_nothing(pieces: list[bytes]) -> None:
    body = b"".join(pieces)
    names = ("robots", "mybot")
    if not may_name(body, names):
        assert head_meta(body, names.__contains__) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b"<title>x</title><p>no meta", False, id="no_meta"),
        pytest.param(b"<main><meta name=viewport content=x>", False, id="other_name"),
        pytest.param(b"<meta name=ROBOTS content=x>", True, id="name_any_case"),
        pytest.param(b"<meta name=&#114;obots content=x>", True, id="name_by_reference"),
        pytest.param("\ufeff<meta>".encode("utf-16"), True, id="utf16"),
        pytest.param(b"<meta name=x content=y>" + b" " * 70_000, True, id="large_body_unsure"),
    ],
)
def test_may_name(body: bytes, expected: bool) -> None:
    assert may_name(body, ("robots",)) is expected


@settings(max_examples=300, deadline=None)
@given(st.lists(_NAMED_PIECES, max_size=30))
def test_names_as_a_collection_reads_as_the_callable(pieces: list[bytes]) -> None:
    body = b"".join(pieces)
    names = ("robots", "mybot")
    assert head_meta(body, names) == head_meta(body, names.__contains__)
