"""The tokenizer: robots.txt bytes -> physical lines -> (key, value) directives.

One tokenizer, two consumers: :func:`scan_lines` reports every line with its
metadata (for the linter); :func:`directives` yields just the key/value lines
:func:`scrapy_googlerobots.robotstxt.parse` cares for, skipping the others
unparsed. Both follow google/robotstxt ``robots.cc``
(``RobotsTxtParser::Parse`` and ``GetKeyAndValueFrom``) byte for byte.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from typing import NamedTuple

__all__ = [
    "MAX_LINE_LENGTH",
    "LineKind",
    "RobotsLine",
    "scan_lines",
]

#: Bytes of a line the reference keeps: its buffer is 2083 * 8 bytes, one of
#: which is reserved for the C string terminator.
MAX_LINE_LENGTH = 2083 * 8 - 1

#: The only bytes that count as whitespace (``absl::ascii_isspace``).
WHITESPACE = b" \t\n\v\f\r"

_UTF8_BOM = b"\xef\xbb\xbf"


class LineKind(enum.Enum):
    """What a directive line is, by its key."""

    USER_AGENT = "user-agent"
    ALLOW = "allow"
    DISALLOW = "disallow"
    SITEMAP = "sitemap"
    OTHER = "other"


# Keys are recognised by case-insensitive *prefix*, in this order. The second
# tuple of each entry holds the misspellings the reference accepts
# (Google-specific: RFC 9309 knows only the exact keys).
_KEYS: tuple[tuple[LineKind, tuple[bytes, ...], tuple[bytes, ...]], ...] = (
    (LineKind.USER_AGENT, (b"user-agent",), (b"useragent", b"user agent")),
    (LineKind.ALLOW, (b"allow",), ()),
    (
        LineKind.DISALLOW,
        (b"disallow",),
        (b"dissallow", b"dissalow", b"disalow", b"diasllow", b"disallaw"),
    ),
    (LineKind.SITEMAP, (b"sitemap",), (b"site-map",)),
)
# The longest prefix above; lower-casing more of the key than that is waste.
KEY_PREFIX_LENGTH = 10


def classify_key(key: bytes) -> tuple[LineKind, bool]:
    """The kind of a (stripped, non-empty) key and whether it is an accepted typo."""
    low = key[:KEY_PREFIX_LENGTH].lower()  # bytes.lower() is ASCII-only, like absl's
    for kind, exact, typos in _KEYS:
        if low.startswith(exact):
            return kind, False
        if typos and low.startswith(typos):
            return kind, True
    return LineKind.OTHER, False


def skip_bom(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 BOM or BOM prefix.

    Google-specific: a UTF-8 BOM -- or any prefix of one -- at the very start is
    skipped byte by byte; the first byte that breaks the sequence stays.
    """
    if data[:1] != b"\xef":
        return data
    return data[3 if data.startswith(_UTF8_BOM) else 2 if data.startswith(b"\xef\xbb") else 1 :]


# Bodies are processed in slices of about this many bytes, cut at line breaks,
# so a huge body of tiny lines never becomes one huge list of lines.
_CHUNK = 1 << 20


def line_chunks(data: bytes) -> Iterator[bytes]:
    """The body after the BOM skip, with LF line breaks only, in slices cut at line breaks.

    CR, LF and CRLF each end a line; the last line needs no terminator and is
    always present (possibly empty), as in the reference. Splitting every
    slice on LF yields the physical lines in order.
    """
    data = skip_bom(data)
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    start = 0
    while len(data) - start > _CHUNK:
        cut = data.find(b"\n", start + _CHUNK)
        if cut < 0:
            break
        yield data[start:cut]
        start = cut + 1
    yield data[start:] if start else data


_SPACE_OR_TAB = re.compile(rb"[ \t]+")


def split_without_colon(content: bytes) -> tuple[bytes, bytes] | None:
    """Key and value of a stripped, colon-less line, or None when it is no directive.

    Google-specific: a forgotten colon is tolerated -- a run of spaces/tabs
    separates key and value, but only when the line is exactly two words.
    """
    sep = _SPACE_OR_TAB.search(content)
    if sep is None:
        return None
    value = content[sep.end() :]
    if b" " in value or b"\t" in value:
        return None
    return content[: sep.start()], value


_ESCAPE_NEEDED = re.compile(rb"%[0-9a-fA-F]{2}|[\x80-\xff]")


def _escape_one(match: re.Match[bytes]) -> bytes:
    text = match[0]
    if text[0] == 0x25:  # an existing escape: only its hex digits change
        return text.upper()
    return b"%%%02X" % text[0]


def escape_pattern(value: bytes) -> bytes:
    """Normalise a rule value like ``MaybeEscapePattern``.

    Bytes >= 0x80 become ``%XX`` and existing ``%xx`` escapes get uppercase hex;
    nothing else changes (no decoding, RFC 9309 notwithstanding).
    """
    if value.isascii() and 0x25 not in value:  # 0x25: "%" (an int test is cheaper)
        return value
    return _ESCAPE_NEEDED.sub(_escape_one, value)


class RobotsLine(NamedTuple):
    """One physical line of a robots.txt, as the reference's parser sees it."""

    number: int
    """1-based line number."""
    kind: LineKind | None
    """The directive's kind; None for empty, comment and unparsable lines."""
    key: bytes
    """The key as written, stripped (empty when ``kind`` is None)."""
    value: bytes
    """The value as written, stripped, not escaped (empty when ``kind`` is None)."""
    raw: bytes
    """The line's bytes after the BOM skip and the length cut."""
    has_comment: bool
    is_comment: bool
    is_empty: bool
    missing_colon: bool
    acceptable_typo: bool
    too_long: bool


def _line_content(raw: bytes) -> tuple[bytes, bool]:
    """The directive text of a line (C-string cut at NUL, comment removed, stripped)."""
    nul = raw.find(b"\0")  # the reference works on C strings
    content = raw if nul < 0 else raw[:nul]
    hash_pos = content.find(b"#")
    if hash_pos >= 0:
        content = content[:hash_pos]
    return content.strip(WHITESPACE), hash_pos >= 0


def split_directive(content: bytes) -> tuple[bytes, bytes, bool] | None:
    """Key, value and "colon missing" of a stripped, non-empty line; None if no directive.

    The first colon separates key and value, both stripped; an empty key makes
    the line no directive, an empty value is kept.
    """
    key, colon, value = content.partition(b":")
    if not colon:
        split = split_without_colon(content)
        if split is None:
            return None
        key, value = split
    key = key.rstrip(WHITESPACE)  # its left side was stripped with the line
    if not key:
        return None
    return key, value.lstrip(WHITESPACE), not colon


def scan_lines(body: bytes | str) -> Iterator[RobotsLine]:
    """Yield one :class:`RobotsLine` per physical line of ``body``, in order.

    Mirrors the reference's per-line report (``ReportLineMetadata``); never raises.
    """
    lines = (line for chunk in line_chunks(to_bytes(body)) for line in chunk.split(b"\n"))
    for number, line in enumerate(lines, 1):
        too_long = len(line) > MAX_LINE_LENGTH
        raw = line[:MAX_LINE_LENGTH] if too_long else line
        content, has_comment = _line_content(raw)
        directive = split_directive(content) if content else None
        if directive is None:
            yield RobotsLine(
                number, None, b"", b"", raw, has_comment,
                has_comment and not content, not has_comment and not content,
                False, False, too_long,
            )  # fmt: skip
        else:
            key, value, missing_colon = directive
            kind, typo = classify_key(key)
            yield RobotsLine(
                number, kind, key, value, raw, has_comment, False, False,
                missing_colon, typo, too_long,
            )  # fmt: skip


#: Keys as most files spell them, lower-cased (a dict lookup beats classify_key).
EXACT_KEYS = {
    b"user-agent": LineKind.USER_AGENT,
    b"allow": LineKind.ALLOW,
    b"disallow": LineKind.DISALLOW,
    b"sitemap": LineKind.SITEMAP,
}


_WHITESPACE_BYTES = frozenset(WHITESPACE)


def directives(data: bytes, first_bytes: frozenset[int]) -> Iterator[tuple[int, bytes, bytes]]:
    """(line number, key, value) of each directive line whose key starts with a wanted byte.

    The steps of :func:`scan_lines` without its per-line report; lines that
    cannot hold a wanted key (comments, prose, HTML) are skipped unparsed.
    Values are not escaped.
    """
    number = 0
    for chunk in line_chunks(data):
        has_nul = 0 in chunk
        has_long_lines = len(chunk) > MAX_LINE_LENGTH
        for line in chunk.split(b"\n"):
            number += 1
            if not line:
                continue
            if line[0] not in first_bytes:
                if line[0] not in _WHITESPACE_BYTES:
                    continue
                start = line.lstrip(WHITESPACE)[:1]
                if not start or start[0] not in first_bytes:
                    continue
            if has_long_lines:
                line = line[:MAX_LINE_LENGTH]
            if has_nul and 0 in line:
                line = line[: line.index(0)]  # the reference works on C strings
            if 35 in line:  # "#": a comment
                line = line[: line.index(35)]
            key, colon, value = line.partition(b":")
            if colon:
                key = key.strip(WHITESPACE)  # not empty: it starts with a wanted byte
                value = value.strip(WHITESPACE)
            else:
                directive = split_directive(line.strip(WHITESPACE))
                if directive is None:
                    continue
                key, value = directive[0], directive[1]
            yield number, key, value


def to_bytes(body: bytes | str) -> bytes:
    """``body`` as bytes; a str is UTF-8 encoded (lone surrogates included, never raising)."""
    if isinstance(body, str):
        return body.encode("utf-8", "surrogatepass")
    return bytes(body)
