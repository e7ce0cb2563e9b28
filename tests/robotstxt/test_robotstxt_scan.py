"""scan_lines: one report per physical line, with the reference's line metadata.

(Agreement with the reference's own ``ReportLineMetadata`` over the corpus and
generated bodies is in test_robotstxt_differential.py; these pin each field.)
"""

from __future__ import annotations

from typing import Any

import pytest

from scrapy_googlerobots.robotstxt import MAX_LINE_LENGTH, LineKind, RobotsLine, scan_lines


def only(body: bytes | str) -> RobotsLine:
    lines = list(scan_lines(body))
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        pytest.param(
            b"Disallow: /x # why",
            {"kind": LineKind.DISALLOW, "key": b"Disallow", "value": b"/x", "has_comment": True},
            id="ID_Directive_KeyValueStrippedCommentFlagged",
        ),
        pytest.param(
            "Disallow: /ツ %aa",
            {"value": "/ツ %aa".encode()},
            id="ID_Value_AsWrittenNotEscaped",
        ),
        pytest.param(b"", {"kind": None, "is_empty": True, "is_comment": False}, id="ID_Empty"),
        pytest.param(b" \t\x0b", {"kind": None, "is_empty": True}, id="ID_Empty_WhitespaceOnly"),
        pytest.param(
            b"  # note",
            {"kind": None, "is_comment": True, "has_comment": True, "is_empty": False},
            id="ID_Comment_WholeLine",
        ),
        pytest.param(b"junk", {"kind": None, "is_empty": False}, id="ID_Unparsable_OneWord"),
        pytest.param(b": /x", {"kind": None}, id="ID_Unparsable_EmptyKey"),
        pytest.param(
            b"disallow /x",
            {"kind": LineKind.DISALLOW, "value": b"/x", "missing_colon": True},
            id="GoogleOnly_MissingColon_Flagged",
        ),
        pytest.param(b"disallow /x y", {"kind": None}, id="GoogleOnly_MissingColon_ThreeWords"),
        pytest.param(
            b"crawl-delay: 5",
            {"kind": LineKind.OTHER, "key": b"crawl-delay", "value": b"5"},
            id="ID_Other_KeyKept",
        ),
        pytest.param(
            b"x\0# hidden",
            {"kind": None, "has_comment": False, "raw": b"x\0# hidden"},
            id="GoogleOnly_Nul_EndsContentRawKept",
        ),
        pytest.param(
            b"\xef\xbb\xbfuser-agent: *",
            {"kind": LineKind.USER_AGENT, "raw": b"user-agent: *"},
            id="GoogleOnly_Bom_NotInRaw",
        ),
    ],
)
def test_line_fields(body: bytes | str, fields: dict[str, Any]) -> None:
    line = only(body)
    assert {name: getattr(line, name) for name in fields} == fields


@pytest.mark.parametrize(
    ("key", "kind", "typo"),
    [
        ("user-agent", LineKind.USER_AGENT, False),
        ("User-Agents", LineKind.USER_AGENT, False),
        ("useragent", LineKind.USER_AGENT, True),
        ("user agent", LineKind.USER_AGENT, True),
        ("allow", LineKind.ALLOW, False),
        ("disallow", LineKind.DISALLOW, False),
        ("disallowed", LineKind.DISALLOW, False),
        ("dissallow", LineKind.DISALLOW, True),
        ("dissalow", LineKind.DISALLOW, True),
        ("disalow", LineKind.DISALLOW, True),
        ("diasllow", LineKind.DISALLOW, True),
        ("disallaw", LineKind.DISALLOW, True),
        ("sitemap", LineKind.SITEMAP, False),
        ("site-map", LineKind.SITEMAP, True),
        ("host", LineKind.OTHER, False),
    ],
    ids=lambda value: str(value),
)
def test_keys_and_accepted_typos(key: str, kind: LineKind, typo: bool) -> None:
    line = only(f"{key}: x")
    assert (line.kind, line.acceptable_typo) == (kind, typo)


def test_line_numbers_count_cr_lf_and_crlf_alike() -> None:
    lines = list(scan_lines(b"a: 1\r\nb: 2\rc: 3\nd: 4\r\n\r\ne: 5"))
    assert [(line.number, line.key) for line in lines if line.kind] == [
        (1, b"a"),
        (2, b"b"),
        (3, b"c"),
        (4, b"d"),
        (6, b"e"),
    ]


def test_final_line_always_reported() -> None:
    lines = list(scan_lines(b"allow: /\n"))
    assert [(line.number, line.is_empty) for line in lines] == [(1, False), (2, True)]


@pytest.mark.parametrize(
    ("length", "too_long"),
    [(MAX_LINE_LENGTH, False), (MAX_LINE_LENGTH + 1, True)],
    ids=["GoogleOnly_LongLine_AtLimit", "GoogleOnly_LongLine_OverLimit"],
)
def test_too_long_lines_are_flagged_and_cut(length: int, too_long: bool) -> None:
    body = b"disallow: /" + b"a" * (length - 11)
    line = only(body)
    assert line.too_long is too_long
    assert line.raw == body[:MAX_LINE_LENGTH]
    assert line.value == body[10:MAX_LINE_LENGTH]


def test_str_body_is_utf8_and_never_raises() -> None:
    assert only("disallow: /\udc80").value == "/\udc80".encode("utf-8", "surrogatepass")
