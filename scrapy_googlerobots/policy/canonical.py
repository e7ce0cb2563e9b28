"""Request URLs in the form robots.txt rules are matched against (SPEC B7, A5, A6).

The matcher compares bytes, and a rule's pattern is normalised by escaping
bytes >= 0x80 as ``%XX`` and upper-casing existing escapes (SPEC A5). The URL
gets exactly the same treatment, so ``/Käyttäjä:``, ``/K%c3%a4…`` and
``/K%C3%A4…`` all meet a rule written in any of those forms.

Decisions:

- Non-ASCII characters anywhere outside the host (user info, path, query,
  fragment) become UTF-8 ``%XX``; a lone surrogate is encoded as its
  surrogate-escaped bytes instead of raising.
- Only valid escapes (``%`` + two hex digits) are upper-cased; ``%zz`` and a
  trailing ``%`` stay as written. Escapes are never decoded (``%41`` stays).
- The fragment is kept (normalised like the rest); the matcher drops it.
- A non-ASCII host becomes punycode (as :func:`~scrapy_googlerobots.policy.origin.origin_of`
  spells it); an ASCII host is left alone, case included, since matching never
  looks at it. A host that cannot be converted is left as written: the
  function never raises.
- Nothing else changes: no case folding, no query reordering, no dot-segment
  removal, no escaping of ASCII characters.
"""

from __future__ import annotations

import contextlib
import re

from scrapy_googlerobots.policy.origin import ascii_host

__all__ = ["canonicalize_url"]

_LOWER_ESCAPE = re.compile(r"%(?:[0-9A-Fa-f][a-f]|[a-f][0-9A-F])")
# scheme "://" authority rest; the authority ends at the first "/", "?" or "#".
_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#]*)(.*)", re.DOTALL)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def canonicalize_url(url: str) -> str:
    """``url`` with non-ASCII characters UTF-8 percent-encoded, escapes in uppercase
    hex and a non-ASCII host in punycode; anything else as written.

    A plain-ASCII URL without lowercase escapes is returned as is (same object).
    """
    if url.isascii() and ("%" not in url or _LOWER_ESCAPE.search(url) is None):
        return url
    match = _AUTHORITY.match(url)
    if match is not None and not match[2].isascii():
        url = match[1] + _canonical_authority(match[2]) + match[3]
    if not url.isascii():
        url = _NON_ASCII.sub(_utf8_escapes, url)
    return _LOWER_ESCAPE.sub(_upper, url) if "%" in url else url


def _canonical_authority(authority: str) -> str:
    userinfo, at, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        # IPv6 literals are ASCII; only the user info needs escaping.
        return authority
    host, colon, port = hostport.partition(":")
    if not host.isascii():
        # Left as written when invalid: the path, not the host, is what gets matched.
        with contextlib.suppress(ValueError):
            host = ascii_host(host)
    return f"{userinfo}{at}{host}{colon}{port}"


def _utf8_escapes(match: re.Match[str]) -> str:
    # Uppercase hex, so the result needs no further upper-casing.
    return "".join([f"%{byte:02X}" for byte in match[0].encode("utf-8", "surrogatepass")])


def _upper(match: re.Match[str]) -> str:
    return match[0].upper()
