"""The ``<meta>`` elements an HTML5 tree builder places in ``<head>``.

The WHATWG tree construction's "before head", "in head" and "after head"
insertion modes (scripting on, so ``<noscript>`` in the head is raw text), over
the tokenizer states they use (:mod:`._tokens`). Before the head come the
"initial" and "before html" modes, which differ from "before head" only in
where comments go. The head ends where a tree builder would insert ``<body>``
(or a ``<frameset>``): at text that is not whitespace, at an element that is
not valid in the head, at ``</body>``, ``</html>``, ``</br>``, or at the end of
the input. A meta after ``</head>`` but before that point goes back into the
head, as HTML5 says. A ``<template>``'s content is a separate fragment: its
metas are not the head's.

Worst case: O(n) in the bytes read; the reading stops where the head ends.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Collection
from functools import lru_cache

from ._charrefs import decode_attribute, reference_at
from ._tokens import ATTRIBUTE, QUIET_RUN, TOKEN, comment_end, raw_text_end, script_end

__all__ = ["DEFAULT_LIMIT", "head_meta", "may_name", "named_meta"]

DEFAULT_LIMIT = 15 * 1024 * 1024
"""Bytes of a document read at most: Google reads the first 15 MB of an HTML file."""

# Start tags the "in head" mode takes, by what the tokenizer does next.
_VOID = frozenset({b"base", b"basefont", b"bgsound", b"link"})
_RCDATA = frozenset({b"title"})
_RAWTEXT = frozenset({b"style", b"noframes", b"noscript"})
# In a template's content, elements of "in body" switch the tokenizer too.
_TEMPLATE_RCDATA = frozenset({b"title", b"textarea"})
_TEMPLATE_RAWTEXT = frozenset({b"style", b"noframes", b"noscript", b"xmp", b"iframe", b"noembed"})
# End tags that, before or in the head, end it like any other content.
_ENDING_END_TAGS = frozenset({b"body", b"html", b"br"})

_HTML_SPACE = " \t\n\r\f"

# Encodings whose bytes are not ASCII where they spell markup: decoded first.
_NOT_ASCII_PREFIXES = ("utf-16", "utf-32", "iso2022", "utf-7", "hz")
_PROBE = "<meta name=\"'\t\n\f\r /=>&#;-!?[]"


@lru_cache(maxsize=64)
def _codec(encoding: str | None) -> tuple[str, bool]:
    """The Python codec for ``encoding`` (UTF-8 when unknown) and whether markup reads as bytes."""
    try:
        name = codecs.lookup(encoding or "utf-8").name
    except LookupError:
        return "utf-8", True
    if name.startswith(_NOT_ASCII_PREFIXES):
        return name, False
    try:
        ascii_compatible = _PROBE.encode(name) == _PROBE.encode("ascii")
    except UnicodeError:
        ascii_compatible = False
    return name, ascii_compatible


_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def _prepare(body: bytes, encoding: str | None) -> tuple[bytes, str]:
    """``body`` as bytes the tokenizer reads, and the codec of its attribute values.

    A byte order mark wins over ``encoding``, as in HTML and in Scrapy's
    ``TextResponse``; an encoding whose markup is not ASCII is decoded and
    read as UTF-8.
    """
    if body.startswith(b"\xef\xbb\xbf"):
        return body[3:], "utf-8"
    if body.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16-le" if body[0] == 0xFF else "utf-16-be"
        text = body[2:].decode(codec, "replace")
        return text.encode("utf-8", "surrogatepass"), "utf-8"
    codec, as_bytes = _codec(encoding)
    if as_bytes:
        return body, codec
    return body.decode(codec, "replace").encode("utf-8", "surrogatepass"), "utf-8"


def _value(raw: bytes, codec: str) -> str:
    """An attribute value as the tokenizer gives it (references decoded), then stripped."""
    text = raw.decode(codec, "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    return decode_attribute(text).strip(_HTML_SPACE)


def _plain(raw: bytes) -> bool:
    """Whether ``raw`` reads the same in every encoding read as bytes: ASCII without
    the escape of ISO-2022 (``ESC``) or HZ (``~{``) shifts."""
    return raw.isascii() and b"\x1b" not in raw and b"~{" not in raw


def _meta(
    data: bytes, start: int, close: int, wanted: tuple[bytes, ...] | None
) -> tuple[bytes, bytes] | None:
    """The raw name and content of the meta whose attributes span ``data[start:close]``
    (None as well when its name cannot be one of ``wanted``, if given)."""
    span = data[start:close].lower()
    if b"name" not in span or b"content" not in span:
        return None  # no such attributes (a cheap test: most metas are og: or charset)
    if wanted is not None and span.isascii() and b"&" not in span:
        for word in wanted:
            if word in span:
                break
        else:
            return None  # none of the wanted names is written in it
    name: bytes | None = None
    content: bytes | None = None
    for attr in ATTRIBUTE.finditer(data, start, close):
        key = attr[1].lower()
        if key == b"name" or key == b"content":
            value = attr[2]
            if value is None:
                value = attr[3] if attr[3] is not None else attr[4] or b""
            if key == b"name":
                if name is None:  # the first of a duplicated attribute counts
                    name = value
            elif content is None:
                content = value
    if name is None or content is None:
        return None
    return name, content


def _template_end(data: bytes, pos: int) -> int:
    """After the ``</template>`` closing the template whose start tag ends at ``pos``."""
    depth = 1
    token = TOKEN.match
    while True:
        at = data.find(b"<", pos)
        if at < 0:
            return -1
        match = token(data, at)
        assert match is not None
        name = match[2]
        if name is None:
            if match[5] is not None:
                pos = comment_end(data, match.end())
            elif match[6] is not None:
                close = data.find(b">", match.end())
                pos = -1 if close < 0 else close + 1
            else:
                pos = at + 1
            if pos < 0:
                return -1
            continue
        if not match[4]:
            return -1
        pos = match.end()
        tag = name.lower()
        if match[1]:
            if tag == b"template":
                depth -= 1
                if depth == 0:
                    return pos
            continue
        if tag == b"template":
            depth += 1
        elif tag == b"script":
            pos = script_end(data, pos)
        elif tag in _TEMPLATE_RAWTEXT or tag in _TEMPLATE_RCDATA:
            pos = raw_text_end(data, tag, pos)
        elif tag == b"plaintext":
            return -1
        if pos < 0:
            return -1


# Bodies up to this size are lowercased whole (a copy and a few searches cost
# less than reading a head): a test before reading, and where to stop reading.
_TEST_WHOLE = 65_536
# Whether a body holds a ``<meta`` at all, without a lowercase copy of it.
_META_OPEN = re.compile(rb"<meta", re.IGNORECASE)
_KELVIN = "\u212a".encode()  # lowercases to "k"


class _Wanted:
    """The meta names asked for, as bytes, and what else could spell them."""

    __slots__ = ("kelvin", "punctuated", "words")

    def __init__(self, words: tuple[bytes, ...]) -> None:
        self.words = words
        joined = b"".join(words)
        # Named references spell some punctuation (``&lowbar;``, ``&period;``; not
        # ``-``); the Kelvin sign lowercases to "k".
        self.punctuated = not joined.replace(b"-", b"").isalnum()
        self.kelvin = b"k" in joined

    @staticmethod
    def of(names: tuple[str, ...]) -> _Wanted | None:
        """The wanted ``names`` (lowercase); None when one is not ASCII (no test then)."""
        try:
            return _WANTED[names]
        except KeyError:
            pass
        if len(_WANTED) >= 64:
            _WANTED.clear()  # a crawl asks for one or two sets: never in practice
        wanted = _WANTED[names] = (
            _Wanted(tuple(name.encode() for name in names)) if "".join(names).isascii() else None
        )
        return wanted


# Names asked for -> their _Wanted (a plain dict: asked for on every HTML response).
_WANTED: dict[tuple[str, ...], _Wanted | None] = {}


def _spelling_at(low: bytes, wanted: _Wanted, start: int = 0, end: int | None = None) -> int:
    """Where lowercased markup ``low[start:end]`` may first hold one of the ``wanted``
    names (-1: nowhere): written plainly, with character references (numeric ones
    for letters and digits, named ones for some punctuation), or with the Kelvin
    sign. Other bytes that are not ASCII never lowercase to ASCII."""
    if end is None:
        end = len(low)
    first = -1
    for word in wanted.words:
        at = low.find(word, start, end)
        if at >= 0 and (first < 0 or at < first):
            first = at
            end = at + len(word)  # nothing after it can come first
    # (One byte first: memchr, where a two-byte search is slow on a page full of ``<``.)
    at = low.find(b"&", start, end)
    if at >= 0 and not wanted.punctuated:
        at = low.find(b"&#", at, end)
    if at >= 0 and (first < 0 or at < first):
        first = at
    if wanted.kelvin:
        at = low.find(_KELVIN, start, end)
        if at >= 0 and (first < 0 or at < first):
            first = at
    return first


def _last_spelling(low: bytes, wanted: _Wanted) -> int:
    """Where lowercased markup ``low`` may last hold one of the ``wanted`` names (-1: nowhere)."""
    # (One byte first, as in _spelling_at; then each search only past the last found.)
    last = low.rfind(b"&")
    if last >= 0 and not wanted.punctuated:
        last = low.rfind(b"&#", 0, last + 2)
    for word in wanted.words:
        at = low.rfind(word, last + 1)
        if at > last:
            last = at
    if wanted.kelvin:
        at = low.rfind(_KELVIN, last + 1)
        if at > last:
            last = at
    return last


# Without a lowercase copy of the whole body, the places a wanted meta may be
# written are looked for this many bytes at a time.
_WINDOW = 8192


def _first(low: bytes, wanted: _Wanted | None, start: int, end: int) -> int:
    """Where ``low[start:end]`` may first hold a wanted meta (``wanted`` None: any meta)."""
    if wanted is None:
        return low.find(b"<meta", start, end)
    return _spelling_at(low, wanted, start, end)


def _lowered(body: bytes) -> bytes | None:
    """``body`` lowercased, when it is small and its markup reads as ASCII bytes (no
    byte order mark, no NUL in its first characters: not UTF-16 or UTF-32)."""
    if len(body) > _TEST_WHOLE or body.startswith(_BOMS) or body.find(b"\x00", 0, 4) >= 0:
        return None
    return body.lower()


def may_name(
    body: bytes,
    names: tuple[str, ...] | Callable[[], tuple[str, ...]],
    limit: int = DEFAULT_LIMIT,
) -> bool:
    """False when no meta of ``body``'s head can be named one of ``names`` (lowercase;
    or a function giving them, called only once a ``<meta`` is seen): a cheap test
    before :func:`head_meta`. True when unsure: a large body, a name spelled with
    character references, an encoding that does not spell markup in ASCII.
    """
    if 0 <= limit < len(body):
        body = body[:limit]
    low = _lowered(body)
    if low is None:
        return True
    if b"<meta" not in low:
        return False
    wanted = _Wanted.of(tuple(names() if callable(names) else names))
    return wanted is None or _spelling_at(low, wanted) >= 0


def head_meta(
    body: bytes,
    names: Callable[[str], bool] | Collection[str] | None = None,
    limit: int = DEFAULT_LIMIT,
    *,
    encoding: str | Callable[[], str | None] | None = None,
) -> list[tuple[str, str]]:
    """(name, content) of each ``<meta name=... content=...>`` an HTML5 parser puts in the
    document's head, in document order; the name lowercased and stripped, the content
    with character references decoded and surrounding whitespace stripped. Only names
    for which ``names(name)`` is true, or that are in ``names`` (lowercase) when it is a
    collection (faster: other metas are skipped unparsed), are returned (all when None).

    At most ``limit`` bytes are read (a tag they cut is dropped); the reading stops
    where the head ends. ``encoding`` is the document's encoding (a Python codec name
    or label; UTF-8 when None or unknown), or a function giving it, called only when
    needed (a meta to decode); a byte order mark overrides it. For a duplicated
    attribute the first one counts, as in HTML.
    """
    cut = _cut(body, limit)
    if cut is None:
        return []
    return _head(cut[0], names, encoding, cut[1])


def named_meta(
    body: bytes,
    names: tuple[str, ...] | Callable[[], tuple[str, ...]],
    limit: int = DEFAULT_LIMIT,
    *,
    encoding: str | Callable[[], str | None] | None = None,
) -> list[tuple[str, str]]:
    """``head_meta(body, names, limit, encoding=encoding)`` for ``names`` (lowercase), or a
    function giving them, called only once a ``<meta`` is seen: :func:`may_name`'s test
    and the reading share one lowercase copy, and the reading stops after the last
    place one of ``names`` may be written."""
    # _cut and may_name, inlined: every HTML response of a crawl costs this.
    if limit < 0:
        return []
    if limit < len(body):
        body = body[:limit]
    low = None
    last = None
    if len(body) <= _TEST_WHOLE and not body.startswith(_BOMS) and body.find(b"\x00", 0, 4) < 0:
        # No lowercase copy for a page without ``<meta``: one search.
        if _META_OPEN.search(body) is None:
            return []
        low = body.lower()
        if callable(names):
            names = names()
        wanted = _Wanted.of(names)
        if wanted is not None:
            last = _last_spelling(low, wanted)
            if last < 0:
                return []  # metas, none of which can be named so (most pages)
    elif callable(names):
        names = names()
    return _head(body, names, encoding, low, last)


def _cut(body: bytes, limit: int) -> tuple[bytes, bytes | None] | None:
    """The ``limit`` bytes of ``body`` read, and them lowercased (or None: large, or not
    ASCII markup); None when they hold no ``<meta`` at all."""
    if limit < 0:
        return None
    if limit < len(body):
        body = body[:limit]
    low = _lowered(body)
    if low is not None and b"<meta" not in low:
        return None
    return body, low


def _head(
    body: bytes,
    names: Callable[[str], bool] | Collection[str] | None,
    encoding: str | Callable[[], str | None] | None,
    low: bytes | None,
    last: int | None = None,
) -> list[tuple[str, str]]:
    """:func:`head_meta` after the cut (``low``: ``body`` lowercased, or None; ``last``:
    :func:`_last_spelling` of ``low``, if known)."""
    if callable(encoding):
        if low is not None or (not body.startswith(_BOMS) and b"\x00" not in body[:4]):
            # Read as ASCII markup until a meta needs the encoding.
            found = _read(body, names, None, encoding, low, last)
            if found is not None:
                return found
        encoding = encoding()
    data, codec = _prepare(body, encoding)
    same = data is body
    found = _read(data, names, codec, None, low if same else None, last if same else None)
    assert found is not None  # only a lazy encoding restarts
    return found


def _read(
    data: bytes,
    names: Callable[[str], bool] | Collection[str] | None,
    codec: str | None,
    lazy: Callable[[], str | None] | None,
    low: bytes | None,
    last: int | None = None,
) -> list[tuple[str, str]] | None:
    """The head's metas in ``data`` (``low``: lowercased, or None; ``last``: where a
    wanted name is last spelled in it, if known); ``codec`` None: asked of ``lazy`` at
    the first meta that needs it (None returned when that encoding does not read as
    bytes)."""
    wanted: _Wanted | None = None
    words: tuple[bytes, ...] | None = None
    accept: Callable[[str], bool] | None
    if names is None or callable(names):
        accept = names
    else:
        accept = names.__contains__
        wanted = _Wanted.of(tuple(names))
        if wanted is not None:
            words = wanted.words
    end = stop = len(data)
    if low is not None and wanted is not None:
        # No token starting after the last place a wanted name may be written
        # can be a wanted meta: the reading stops there.
        stop = (_last_spelling(low, wanted) if last is None else last) + 1
    found: list[tuple[str, str]] = []
    # "before head" and "in head" treat every token alike here; only "after
    # head" differs (``<noscript>`` there starts the body).
    after_head = False
    pos = 0
    token = TOKEN.match
    quiet = QUIET_RUN.match
    cut = -1  # where the next token that may be a wanted meta is at the latest
    base, piece = 0, b""  # without ``low``: data[base:][:_WINDOW] lowercased
    while pos < stop:
        if pos > cut:
            # The next place a wanted meta may be written (past a window of a large
            # body, read lowercased piece by piece).
            if low is not None:
                cut = _first(low, wanted, pos, stop)
                cut = stop if cut < 0 else cut
            else:
                if pos >= base + len(piece):
                    base, piece = pos, data[pos : pos + _WINDOW].lower()
                cut = _first(piece, wanted, pos - base, len(piece))
                cut = base + (len(piece) if cut < 0 else cut)
        if pos < cut:
            # The tokens before it that change nothing, in one match (a token the
            # cut splits does not match: the run stops before it, and it is read
            # on its own below).
            run = quiet(data, pos, cut).end()  # type: ignore[union-attr]  # cannot fail
            if run > pos:
                pos = run
                continue
        match = token(data, pos)
        assert match is not None  # cannot fail: every part is optional
        name = match[2]
        if name is None:
            if match[5] is not None:  # <!--
                pos = comment_end(data, match.end())
            elif match[6] is not None:  # <!DOCTYPE>, <?...>, </...> bogus comments
                after = match.end()
                if match[6] == b"</" and data.startswith(b">", after):
                    pos = after + 1  # "</>": nothing
                    continue
                if match[6] == b"</" and after >= end:
                    break  # "</" at the end is text, and the end anyway
                close = data.find(b">", after)
                pos = -1 if close < 0 else close + 1
            elif match[7] is not None:  # a character reference: whitespace?
                text, pos = reference_at(data, match.end() - 1)
                if text.strip(_HTML_SPACE):
                    break
            else:
                break  # text that is not whitespace, or the end
            if pos < 0:
                break
            continue
        if not match[4]:
            break  # the input ends inside the tag: it is never emitted
        pos = match.end()
        tag = name.lower()
        if match[1]:  # an end tag
            if tag == b"head":
                after_head = True
            elif tag in _ENDING_END_TAGS:
                break
            continue
        if tag == b"meta":
            pair = _meta(data, match.start(3), match.end(3), words)
            if pair is None:
                continue
            raw_name, raw_content = pair
            if codec is None and not (_plain(raw_name) and _plain(raw_content)):
                assert lazy is not None
                codec, as_bytes = _codec(lazy())
                if not as_bytes:
                    return None
            # Plain ASCII reads the same in every encoding read as bytes.
            meta_name = _value(raw_name, codec or "ascii").lower()
            if accept is None or accept(meta_name):
                found.append((meta_name, _value(raw_content, codec or "ascii")))
        elif tag in _VOID or tag == b"html":
            pass
        elif tag == b"head":
            pass  # opens the head before it; ignored once there is one
        elif tag == b"script":
            pos = script_end(data, pos)
        elif tag in _RAWTEXT:
            if tag == b"noscript" and after_head:
                break  # not one of the elements "after head" puts back in the head
            pos = raw_text_end(data, tag, pos)
        elif tag in _RCDATA:
            pos = raw_text_end(data, tag, pos)
        elif tag == b"template":
            pos = _template_end(data, pos)
        else:
            break  # <body>, <frameset>, or an element not valid in the head
        if pos < 0:
            break
    return found
