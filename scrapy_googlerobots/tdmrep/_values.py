"""The two property values, read the same way in a file rule, a header and a meta tag."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["check_policy_url", "reservation_from_text"]

# What HTTP (OWS) and HTML (ASCII whitespace) let surround a value; both are
# stripped before a value is judged.
_STRIP = " \t\n\r\f"


def reservation_from_text(text: str) -> int | None:
    """``0`` or ``1`` for exactly that text (surrounding whitespace aside); None otherwise.

    The spec allows only these two values; "Other values are considered
    protocol errors" (``01``, ``1.0``, ``true``, ``yes`` included).
    """
    value = text.strip(_STRIP)
    if value == "1":
        return 1
    if value == "0":
        return 0
    return None


def check_policy_url(text: str) -> tuple[str | None, str | None]:
    """``(url, None)`` for an absolute http(s) URL, else ``(None, why)``.

    The spec calls ``tdm-policy`` "a URL pointing to a TDM Policy" and gives
    no base to resolve a relative one against (a tdmrep.json or a header
    may come from a redirect), so only absolute http(s) URLs are kept.
    """
    url = text.strip(_STRIP)
    if not url:
        return None, "is empty"
    if any(char <= " " or char == "\x7f" for char in url):
        return None, "contains whitespace or control characters"
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return None, "is not a URL"
    if parts.scheme.lower() not in ("http", "https"):
        return None, "is not an absolute http(s) URL"
    if not parts.netloc:
        return None, "has no host"
    return url, None
