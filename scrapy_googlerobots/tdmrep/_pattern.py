"""``location`` patterns against URL paths: Google's matching plus the spec's encoding rules.

The spec points to Google's robots.txt rules ("URL matching based on path
values"), which :mod:`scrapy_googlerobots.robotstxt` implements: a pattern is
anchored at the start of the path (path, params and query), ``*`` matches
any run of bytes, a final ``$`` anchors the end, and the comparison is
byte for byte, so case-sensitive. Both sides are first put in one form, so
that equal URIs compare equal:

* Google's own escaping (:func:`escape_pattern`): bytes >= 0x80 become
  ``%XX`` and escapes get upper-case hex -- on the URL side too, so a URL given
  with raw UTF-8 or lower-case escapes still matches.
* "If a percent-encoded US-ASCII character is encountered in the URI, it
  MUST be unencoded prior to comparison, unless it is a reserved character
  [...] or the character is outside the unreserved character range": escapes
  of ``A-Z a-z 0-9 - . _ ~`` are decoded, on both sides (Google skips this).
* "If TDM Agents match special characters verbatim in the URI, they MUST use
  "%" encoding" (pattern ``/path/foo-%24`` for URI ``/path/foo-$``): a literal
  ``$`` or ``*`` in the URL path is compared as ``%24`` / ``%2A``, and so is a
  ``$`` that is not the pattern's last byte (Google's literal ``$``).
* Spaces and control bytes are compared as ``%XX`` (a URL as a browser
  sends it), on both sides.
"""

from __future__ import annotations

import re

from scrapy_googlerobots.robotstxt._lines import escape_pattern
from scrapy_googlerobots.robotstxt._match import path_params_query, pattern_matches

__all__ = ["compile_location", "literal_head", "location_matches", "normalise_path", "to_utf8"]

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# After escape_pattern every escape has upper-case hex.
_PATTERN_WORK = re.compile(rb"%[0-9A-F]{2}|[\x00-\x20\x7f$]")
_PATH_WORK = re.compile(rb"%[0-9A-F]{2}|[\x00-\x20\x7f$*]")


def _one(match: re.Match[bytes]) -> bytes:
    text = match[0]
    if len(text) == 3:
        byte = int(text[1:], 16)
        return bytes((byte,)) if byte in _UNRESERVED else text
    return b"%%%02X" % text[0]


def to_utf8(text: str | bytes) -> bytes:
    """``text`` as bytes, never raising (lone surrogates are kept as bytes)."""
    if isinstance(text, bytes):
        return text
    try:
        return text.encode()
    except UnicodeEncodeError:
        # surrogateescape restores bytes a lenient decode kept; any other
        # lone surrogate (a JSON "\ud800") is passed through as is.
        try:
            return text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogatepass")


def compile_location(location: str) -> bytes | None:
    """The normalised pattern of a ``location``, or None when it can never match.

    Paths always start with ``/``, so a pattern must start with ``/`` or ``*``.
    An empty pattern is refused as Google refuses an empty ``Disallow:``, rather
    than matching every path.
    """
    raw = to_utf8(location)
    if raw[:1] not in (b"/", b"*"):
        return None
    anchored = raw.endswith(b"$")
    body = _PATTERN_WORK.sub(_one, escape_pattern(raw[:-1] if anchored else raw))
    return body + b"$" if anchored else body


def normalise_path(url_or_path: str | bytes) -> bytes:
    """The path, params and query of a URL (or of a path), in the form patterns use."""
    path = path_params_query(to_utf8(url_or_path))
    return _PATH_WORK.sub(_one, escape_pattern(path))


def location_matches(pattern: bytes, path: bytes) -> bool:
    """Whether a :func:`compile_location` pattern matches a :func:`normalise_path` path."""
    return pattern_matches(path, pattern)


def literal_head(pattern: bytes) -> tuple[bytes, bool]:
    """The literal start every matching path has, and whether it is all the pattern.

    ``all`` is True for a pattern that matches exactly the paths starting with
    the head (no ``*`` inside, no ``$``): such a rule shadows every later rule
    whose own head starts with it.
    """
    anchored = pattern.endswith(b"$")
    body = pattern[:-1] if anchored else pattern
    if not anchored:
        body = body.rstrip(b"*")  # a trailing "*" adds nothing to a prefix match
    star = body.find(b"*")
    if star >= 0:
        return body[:star], False
    return body, not anchored
