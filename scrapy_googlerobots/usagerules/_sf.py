"""RFC 9651 structured-field Dictionaries, parsed by the RFC's own algorithm (section 4.2).

Only the Dictionary top-level type is needed here (the ``Content-Usage`` and
``Content-Signal`` values), but every member type is parsed, so the verdict
valid/invalid is the RFC's for any input. :func:`parse_dictionary` returns
None for an invalid value instead of raising: a malformed preference is
ordinary input, not an error.

Hostile input: the parser walks the value once, left to right; every run
(key, token, string, number, base64) is one anchored regular expression
without nested repetition, so the cost is linear in the input's length.
Inner lists cannot nest (their members are Items), so nothing recurses.
"""

from __future__ import annotations

import base64
import binascii
import re
from decimal import Decimal
from typing import TypeAlias

__all__ = ["Date", "DisplayString", "Member", "Token", "parse_dictionary"]


class Token(str):
    """An sf-token (``y``, ``*foo/bar``), as opposed to an sf-string."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Token({str.__repr__(self)})"


class DisplayString(str):
    """An sf-displaystring (``%"f%c3%bc"``), decoded."""

    __slots__ = ()


class Date(int):
    """An sf-date (``@1659578233``): seconds since the Unix epoch."""

    __slots__ = ()


BareItem: TypeAlias = int | Decimal | str | bytes | bool
Parameters: TypeAlias = dict[str, BareItem]
Item: TypeAlias = tuple[BareItem, Parameters]
InnerList: TypeAlias = tuple[list[Item], Parameters]
Member: TypeAlias = Item | InnerList


class _Invalid(Exception):
    """The value is not a valid structured field (internal: callers get None)."""


_KEY = re.compile(r"[a-z*][a-z0-9_.*-]*")
_TOKEN = re.compile(r"[A-Za-z*][!#$%&'*+.^_`|~0-9A-Za-z:/-]*")
# Integer part and optional "." with fraction; the RFC's length limits are
# checked on the groups (its loop fails at the first byte past a limit, which
# a longer greedy match fails on as well).
_NUMBER = re.compile(r"-?([0-9]+)(?:(\.)([0-9]*))?")
_STRING = re.compile(r'"((?:[ !#-\[\]-~]|\\["\\])*)"')
_STRING_ESCAPE = re.compile(r"\\(.)")
_BYTES = re.compile(r":([A-Za-z0-9+/=]*):")
_DISPLAY = re.compile(r'%"((?:[ !#$&-~]|%[0-9a-f]{2})*)"')
_OWS = re.compile(r"[ \t]*")
_SP = re.compile(r" *")


def parse_dictionary(value: bytes | str) -> dict[str, Member] | None:
    """The members of a structured-field Dictionary, or None when ``value`` is not one.

    Keys map to ``(bare item, parameters)`` or, for an inner list,
    ``([(bare item, parameters), ...], parameters)``. A member without a
    value is Boolean true. A key written twice keeps its last value (RFC
    9651: overwrite). An empty value is an empty Dictionary.
    """
    if isinstance(value, bytes):
        if not value.isascii():
            return None
        text = value.decode("ascii")
    else:
        if not value.isascii():
            return None
        text = value
    try:
        return _Parser(text).dictionary()
    except _Invalid:
        return None


class _Parser:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = _SP.match(text).end()  # type: ignore[union-attr]

    def dictionary(self) -> dict[str, Member]:
        text = self.text
        end = len(text.rstrip(" "))  # trailing SP is discarded (section 4.2)
        members: dict[str, Member] = {}
        while self.pos < end:
            key = self.key()
            member: Member
            if self.pos < end and text[self.pos] == "=":
                self.pos += 1
                member = self.inner_list() if text[self.pos : self.pos + 1] == "(" else self.item()
            else:
                member = (True, self.parameters())
            members[key] = member  # a repeated key: the last value wins
            self.pos = _OWS.match(text, self.pos).end()  # type: ignore[union-attr]
            if self.pos >= end:
                break
            if text[self.pos] != ",":
                raise _Invalid
            self.pos = _OWS.match(text, self.pos + 1).end()  # type: ignore[union-attr]
            if self.pos >= end:
                raise _Invalid  # a trailing comma
        return members

    def key(self) -> str:
        found = _KEY.match(self.text, self.pos)
        if found is None:
            raise _Invalid
        self.pos = found.end()
        return found[0]

    def inner_list(self) -> InnerList:
        text = self.text
        self.pos += 1  # "("
        items: list[Item] = []
        while True:
            self.pos = _SP.match(text, self.pos).end()  # type: ignore[union-attr]
            if self.pos >= len(text):
                raise _Invalid
            if text[self.pos] == ")":
                self.pos += 1
                return items, self.parameters()
            items.append(self.item())
            if text[self.pos : self.pos + 1] not in (" ", ")"):
                raise _Invalid

    def item(self) -> Item:
        bare = self.bare_item()
        return bare, self.parameters()

    def parameters(self) -> Parameters:
        text = self.text
        parameters: Parameters = {}
        while text[self.pos : self.pos + 1] == ";":
            self.pos = _SP.match(text, self.pos + 1).end()  # type: ignore[union-attr]
            key = self.key()
            value: BareItem = True
            if text[self.pos : self.pos + 1] == "=":
                self.pos += 1
                value = self.bare_item()
            parameters[key] = value
        return parameters

    def bare_item(self) -> BareItem:
        text = self.text
        first = text[self.pos : self.pos + 1]
        if first == "-" or first.isdigit():
            return self.number()
        if first == '"':
            found = _STRING.match(text, self.pos)
            if found is None:
                raise _Invalid
            self.pos = found.end()
            return _STRING_ESCAPE.sub(r"\1", found[1])
        if first == "*" or first.isalpha():
            found = _TOKEN.match(text, self.pos)
            assert found is not None  # it starts with a token's first character
            self.pos = found.end()
            return Token(found[0])
        if first == ":":
            return self.byte_sequence()
        if first == "?":
            flag = text[self.pos + 1 : self.pos + 2]
            if flag not in ("0", "1"):
                raise _Invalid
            self.pos += 2
            return flag == "1"
        if first == "@":
            self.pos += 1
            seconds = self.number()
            if not isinstance(seconds, int):
                raise _Invalid  # a Date is an Integer
            return Date(seconds)
        if first == "%":
            return self.display_string()
        raise _Invalid

    def number(self) -> int | Decimal:
        found = _NUMBER.match(self.text, self.pos)
        if found is None:
            raise _Invalid  # "-" without a digit
        whole, dot, fraction = found.groups()
        if dot is None:
            if len(whole) > 15:
                raise _Invalid
            self.pos = found.end()
            return int(found[0])
        if len(whole) > 12 or not fraction or len(fraction) > 3:
            raise _Invalid
        self.pos = found.end()
        return Decimal(found[0])

    def byte_sequence(self) -> bytes:
        found = _BYTES.match(self.text, self.pos)
        if found is None:
            raise _Invalid
        self.pos = found.end()
        content = found[1]
        # Padding is optional (RFC 9651 4.2.7: parsers SHOULD NOT fail without
        # it) but, when present, one or two "=" at the end after some data.
        data = content.rstrip("=")
        padding = len(content) - len(data)
        if padding > 2 or (padding and not data) or "=" in data:
            raise _Invalid
        try:
            return base64.b64decode(data + "=" * (-len(data) % 4), validate=True)
        except binascii.Error:
            raise _Invalid from None

    def display_string(self) -> DisplayString:
        found = _DISPLAY.match(self.text, self.pos)
        if found is None:
            raise _Invalid
        self.pos = found.end()
        raw = found[1]
        if "%" not in raw:
            return DisplayString(raw)
        pieces = raw.split("%")
        data = bytearray(pieces[0].encode("ascii"))
        for piece in pieces[1:]:
            data.append(int(piece[:2], 16))
            data += piece[2:].encode("ascii")
        try:
            return DisplayString(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise _Invalid from None
