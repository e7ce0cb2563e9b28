"""A linear-time scan of an HTML head for ``<meta name content>`` pairs.

Not a full HTML tokenizer: it knows just enough of one (comments, bogus
comments, raw-text elements, quoted attribute values) that markup which is not
a ``<meta>`` element in the head is never mistaken for one.

Worst case: O(n) in the scanned window (at most ``limit`` bytes). Every regex
below is either a plain literal search or a pattern whose repetitions are
over disjoint character classes and which cannot fail once started (each ends
in ``*``/``?``), so the engine never backtracks more than a bounded run of
whitespace; every loop advances the position it searches from.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

__all__ = ["DEFAULT_LIMIT", "head_meta"]

DEFAULT_LIMIT = 65536
"""Bytes of the document scanned at most; a head longer than this is cut."""

# The markup that changes the scanner's state. Searched on the lowercased
# window, so tag names need no case folding.
_MARKUP = re.compile(rb"<(?:(!--)|(/?)([a-z][^\s/>]*)|[!?])")

# The rest of a start or end tag, up to (not including) its ``>``. A quote
# only opens a value right after ``=``, as in HTML; an unclosed one runs to the
# end of the window (the tag then never closes and is dropped). Cannot fail,
# so ``[^>=]+`` inside ``*`` never backtracks.
_TAG_REST = re.compile(rb"""(?:[^>=]+|=\s*"[^"]*"?|=\s*'[^']*'?|=)*""")

# One attribute inside a tag's span: name, then an optional value in one of
# the three spellings. The ``[\s/]*`` lead-in and the name class are disjoint.
_ATTR = re.compile(rb"""[\s/]*([^\s/>][^\s/>=]*)(?:\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s>]*)))?""")

# Elements whose content is text, not markup: a ``<meta`` inside is not a tag.
# ``noscript`` and ``template`` too, as a scripting browser (Google renders
# with scripting on) does not put their content in the head.
_RAW_TEXT = frozenset(
    {
        b"script",
        b"style",
        b"title",
        b"textarea",
        b"xmp",
        b"iframe",
        b"noembed",
        b"noframes",
        b"noscript",
        b"template",
    }
)

_HTML_SPACE = " \t\n\r\f"


def _text(raw: bytes) -> str:
    # Attribute text: UTF-8 in practice; never fail on bytes that are not.
    return unescape(raw.decode("utf-8", errors="replace")).strip(_HTML_SPACE)


def _raw_text_end(low: bytes, name: bytes, pos: int) -> int:
    """Where the raw-text element ``name`` ends (after its end tag), or -1."""
    closer = b"</" + name
    while True:
        at = low.find(closer, pos)
        if at < 0:
            return -1
        after = at + len(closer)
        # ``</scriptx`` does not close a script; only a delimiter after the name does.
        if after >= len(low) or low[after] in b" \t\n\r\f/>":
            close = low.find(b">", after)
            return -1 if close < 0 else close + 1
        pos = after


def head_meta(
    body: bytes, names: Callable[[str], bool] | None = None, limit: int = DEFAULT_LIMIT
) -> list[tuple[str, str]]:
    """(name, content) of each <meta name=... content=...> in the document's head, in document order; name lowercased and stripped, content with HTML entities decoded and surrounding whitespace stripped. Only names for which `names(name)` is true are returned (all when None).

    The scan stops at ``</head>``, at ``<body`` or after ``limit`` bytes; a tag
    not closed within the window is dropped. For a duplicated attribute the
    first one counts, as in HTML.
    """  # noqa: E501
    window = body[:limit] if 0 <= limit < len(body) else body if limit >= 0 else b""
    low = window.lower()
    # The common case, a window without any <meta, costs one lower() and one find().
    if b"<meta" not in low:
        return []
    found: list[tuple[str, str]] = []
    end = len(low)
    pos = 0
    while pos < end:
        mark = _MARKUP.search(low, pos)
        if mark is None:
            break
        start = mark.start()
        if mark[1] is not None:
            # <!--> and <!---> are complete (empty) comments in HTML.
            if low.startswith(b">", start + 4):
                pos = start + 5
                continue
            if low.startswith(b"->", start + 4):
                pos = start + 6
                continue
            close = low.find(b"-->", start + 4)
            if close < 0:
                break
            pos = close + 3
            continue
        tag = mark[3]
        if tag is None:
            # <!DOCTYPE ...>, <?xml ...?>: a bogus comment up to the next >.
            close = low.find(b">", mark.end())
            if close < 0:
                break
            pos = close + 1
            continue
        is_end = bool(mark[2])
        rest = _TAG_REST.match(low, mark.end())
        # _TAG_REST cannot fail; the assert is for the type checker.
        assert rest is not None
        close = rest.end()
        if close >= end:
            break  # the tag never closes inside the window
        pos = close + 1
        if is_end:
            if tag == b"head":
                break
            continue
        if tag == b"body" or tag == b"plaintext":
            break
        if tag in _RAW_TEXT:
            pos = _raw_text_end(low, tag, pos)
            if pos < 0:
                break
            continue
        if tag != b"meta":
            continue
        name_raw: bytes | None = None
        content_raw: bytes | None = None
        for attr in _ATTR.finditer(window, mark.end(), close):
            key = low[attr.start(1) : attr.end(1)]
            if key == b"name" or key == b"content":
                value = attr[2] if attr[2] is not None else attr[3]
                if value is None:
                    value = attr[4] if attr[4] is not None else b""
                if key == b"name" and name_raw is None:
                    name_raw = value
                elif key == b"content" and content_raw is None:
                    content_raw = value
        if name_raw is None or content_raw is None:
            continue
        name = _text(name_raw).lower()
        if names is not None and not names(name):
            continue
        found.append((name, _text(content_raw)))
    return found
