"""The HTML5 tokenizer states the head needs, as searches over bytes.

Each function takes the position just after the markup that entered a state
and returns where the tokenizer is back in the data state, or -1 when the
input ends first (the token is then never emitted). All searches are plain
literals or patterns whose repetitions cannot fail once started, so every
call is linear in what it scans and each caller advances past it.

Bytes stand for characters: every byte the tokenizer reacts to is ASCII, and
the encodings read as bytes here (UTF-8 and the ASCII-compatible legacy ones)
never put an ASCII byte inside a multi-byte character.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "ATTRIBUTE",
    "QUIET_RUN",
    "TAG_REST",
    "TOKEN",
    "comment_end",
    "raw_text_end",
    "script_end",
    "tag_end",
]

_SPACE = rb"\t\n\f\r "


def _html(pattern: bytes) -> re.Pattern[bytes]:
    # ``~`` stands for HTML's whitespace (not Python's ``\s``, which has \v).
    return re.compile(pattern.replace(b"~", _SPACE))


# The rest of a start or end tag after its name, up to (not including) its
# ``>``: attributes as the tokenizer reads them (a quote opens a value only
# right after ``=``; an unclosed one runs to the end of the input).
_REST = rb"""(?:[~/]+|[^~/>][^~/=>]*(?:[~]*=[~]*(?:"[^"]*"?|'[^']*'?|[^~>]*))?)*"""
TAG_REST = _html(_REST)

# One token from the data state, after any whitespace (which the head modes
# ignore): a start or end tag (1: ``/`` or empty, 2: name, 3: attributes,
# 4: ``>`` or empty when the input ends inside the tag), a comment opener (5),
# other markup declarations (6), a character reference (7). None of them:
# text, or the end.
TOKEN = _html(rb"[~]*(?:<(/?)([A-Za-z][^~/>]*)(" + _REST + rb")(>?)|(<!--)|(<[!?]|</)|(&))?")

# One attribute inside a tag's span: its name, then an optional value in one of
# the three spellings (groups 2-4: double-quoted, single-quoted, unquoted).
ATTRIBUTE = _html(rb"""[~/]*([^~/>][^~/=>]*)(?:[~]*=[~]*(?:"([^"]*)"?|'([^']*)'?|([^~>]*)))?""")

_COMMENT_CLOSE = re.compile(rb"--!?>")

# A run of tokens that, before and in the head, change nothing but may be metas
# (one match instead of a step per token): whitespace; the start tags of
# ``html``, ``head``, ``meta`` and the head's void elements; end tags other than
# those of ``head``, ``body``, ``html`` and ``br``; comments (as
# :func:`comment_end` closes them) and bogus comments (``<!DOCTYPE>``, ``<?...>``,
# ``</...>``). Each token is read exactly as :data:`TOKEN` reads it: a tag's
# attributes are matched in a lookahead (atomic) and taken by reference, so an
# unclosed tag cannot be matched as a shorter one; the run stops before any
# token it does not take, which the caller then reads with :data:`TOKEN`.
# The common attributes (``name="value"``, ``name='value'``, ``name``, each after
# whitespace) are tried first: where they reach the ``>``, they read as _REST.
_PLAIN_ATTRIBUTES = rb"""(?:[~]+[A-Za-z][^~/=>"']*(?:="[^"]*"|='[^']*')?)*[~/]*>"""
QUIET_RUN = _html(
    rb"(?:[~]+"
    rb"|<(?:(?i:html|head|meta|link|base|basefont|bgsound)"
    rb"|/(?!(?i:head|body|html|br)[~/>])[A-Za-z][^~/>]*)(?=[~/>])"
    rb"(?:" + _PLAIN_ATTRIBUTES + rb"|(?=(" + _REST + rb"))\1>)"
    rb"|<!--(?:>|->|-!>|(?s:.*?)--!?>)"
    rb"|<!(?!--)[^>]*>|<\?[^>]*>|</(?![A-Za-z])[^>]*>)*"
)


def tag_end(data: bytes, pos: int) -> int:
    """The position of the ``>`` closing the tag whose attributes start at ``pos``, or -1."""
    rest = TAG_REST.match(data, pos)
    assert rest is not None  # cannot fail: every repetition is optional
    end = rest.end()
    return end if end < len(data) else -1


def comment_end(data: bytes, pos: int) -> int:
    """After the comment whose ``<!--`` ends at ``pos``: ``<!-->`` and ``<!--->``
    close at once, else the first ``-->`` or ``--!>``."""
    # Searching from the opener's own dashes finds ``<!-->`` and ``<!--->``;
    # a ``--!>`` made of them (``<!--!>``) does not close.
    found = _COMMENT_CLOSE.search(data, pos - 2)
    while found is not None and found.start() == pos - 2 and found.end() - found.start() == 4:
        found = _COMMENT_CLOSE.search(data, pos - 1)
    return -1 if found is None else found.end()


@lru_cache(maxsize=32)
def _end_tag(name: bytes) -> re.Pattern[bytes]:
    # An "appropriate end tag": the name, then a delimiter (``</titlex`` is text).
    return _html(rb"</(?i:" + re.escape(name) + rb")[~/>]")


def _after_end_tag(data: bytes, found: re.Match[bytes]) -> int:
    """Past the end tag ``found`` (its attributes, if any, up to ``>``), or -1."""
    if data[found.end() - 1] == 0x3E:  # ">"
        return found.end()
    close = tag_end(data, found.end() - 1)
    return -1 if close < 0 else close + 1


def raw_text_end(data: bytes, name: bytes, pos: int) -> int:
    """After the RCDATA or RAWTEXT element ``name`` whose start tag ends at ``pos``."""
    found = _end_tag(name).search(data, pos)
    return -1 if found is None else _after_end_tag(data, found)


# Script data: ``<!--`` escapes (an end tag still closes the script); inside
# an escape ``<script`` double-escapes (only ``-->`` or ``</script`` leave it).
_SCRIPT_DATA = _html(rb"(<!--)|</(?i:script)[~/>]")
_SCRIPT_ESCAPED = _html(rb"(-->)|(<(?i:script)[~/>])|</(?i:script)[~/>]")
_SCRIPT_DOUBLE = _html(rb"(-->)|</(?i:script)[~/>]")


def script_end(data: bytes, pos: int) -> int:
    """After the script element whose start tag ends at ``pos``."""
    while True:
        found = _SCRIPT_DATA.search(data, pos)
        if found is None:
            return -1
        if found[1] is None:
            return _after_end_tag(data, found)
        # Escaped: from the opener's dashes, so that ``<!-->`` closes at once.
        pos = found.end() - 2
        while True:
            found = _SCRIPT_ESCAPED.search(data, pos)
            if found is None:
                return -1
            if found[1] is not None:
                pos = found.end()
                break  # back to script data
            if found[2] is None:
                return _after_end_tag(data, found)
            found = _SCRIPT_DOUBLE.search(data, found.end())
            if found is None:
                return -1
            pos = found.end()
            if found[1] is not None:
                break  # ``-->`` leaves both escapes
            # ``</script`` leaves the double escape only.
