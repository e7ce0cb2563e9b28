"""HTML character references, decoded as the HTML5 tokenizer does.

Unlike :func:`html.unescape`, an attribute value keeps a legacy reference
without ``;`` literal when ``=`` or an ASCII alphanumeric follows it
(``?lang=en&region=eu`` stays as written), and numeric references to control
characters are kept rather than dropped, as the WHATWG tokenizer does.
"""

from __future__ import annotations

import re
from html.entities import html5

__all__ = ["decode_attribute", "reference_at"]

# A reference's longest possible name is 32 characters with its ``;``
# ("CounterClockwiseContourIntegral;"): a longer run cannot name more.
_REF = re.compile(rb"&(?:#[xX]([0-9A-Fa-f]+);?|#([0-9]+);?|([A-Za-z0-9]{1,32});?)")
_REF_STR = re.compile(r"&(?:#[xX]([0-9A-Fa-f]+);?|#([0-9]+);?|([A-Za-z0-9]{1,32});?)")

# The numeric references the tokenizer maps to another code point (0x80-0x9F:
# windows-1252's characters), per the "numeric character reference end state".
_C1 = {
    0x80: 0x20AC, 0x82: 0x201A, 0x83: 0x0192, 0x84: 0x201E, 0x85: 0x2026, 0x86: 0x2020,
    0x87: 0x2021, 0x88: 0x02C6, 0x89: 0x2030, 0x8A: 0x0160, 0x8B: 0x2039, 0x8C: 0x0152,
    0x8E: 0x017D, 0x91: 0x2018, 0x92: 0x2019, 0x93: 0x201C, 0x94: 0x201D, 0x95: 0x2022,
    0x96: 0x2013, 0x97: 0x2014, 0x98: 0x02DC, 0x99: 0x2122, 0x9A: 0x0161, 0x9B: 0x203A,
    0x9C: 0x0153, 0x9E: 0x017E, 0x9F: 0x0178,
}  # fmt: skip


def _numeric(digits: str, base: int) -> str:
    # Digits beyond 0x10FFFF only matter as "too large": a long run is not converted.
    significant = digits.lstrip("0")
    value = int(significant or "0", base) if len(significant) <= 8 else 0x110000
    if value == 0 or value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        return "\ufffd"
    return chr(_C1.get(value, value))


def _named(name: str, semicolon: bool, following: str, in_attribute: bool) -> str | None:
    """The text of ``&name`` (``;`` after it when ``semicolon``), or None to keep it literal."""
    if semicolon:
        found = html5.get(name + ";")
        if found is not None:
            return found
    # The longest prefix that names a reference; only legacy ones match without ``;``.
    for end in range(len(name), 1, -1):
        found = html5.get(name[:end])
        if found is None:
            continue
        if end == len(name) and semicolon:
            after = ";"
        else:
            after = name[end] if end < len(name) else following
        if in_attribute and (after == "=" or (after.isascii() and after.isalnum())):
            return None
        return found + name[end:] + (";" if semicolon else "")
    return None


def _replace(match: re.Match[str], in_attribute: bool) -> str:
    hex_digits, digits, name = match.groups()
    if hex_digits is not None:
        return _numeric(hex_digits, 16)
    if digits is not None:
        return _numeric(digits, 10)
    semicolon = match.group().endswith(";")
    text = match.string
    end = match.end()
    following = text[end] if end < len(text) else ""
    found = _named(name, semicolon, following, in_attribute)
    return match.group() if found is None else found


def decode_attribute(value: str) -> str:
    """``value`` (an attribute value as written) with its character references decoded."""
    if "&" not in value:
        return value
    return _REF_STR.sub(lambda match: _replace(match, True), value)


def reference_at(data: bytes, pos: int) -> tuple[str, int]:
    """The text the reference at ``data[pos]`` (an ``&``) stands for in text, and where it ends."""
    match = _REF.match(data, pos)
    if match is None:
        return "&", pos + 1
    text = match.group().decode("ascii")
    decoded = _REF_STR.sub(lambda found: _replace(found, False), text)
    return decoded, match.end()
