"""What a robots.txt fetch result means for an origin (SPEC B3, B5): pure functions.

Decisions beyond SPEC B3/B5:

- Statuses outside 100-599 and 1xx as a final status are invalid responses,
  treated like a network failure: UNREACHABLE.
- Of the 3xx codes, 301, 302, 303, 307 and 308 with a ``Location`` are
  redirects (the codes Scrapy's own redirect middleware follows); any other
  3xx (300, 304, 305, 306, or a redirect without ``Location``) cannot be
  followed and counts "as 404": ALLOW_ALL.
- Only ``Cache-Control`` sets the lifetime: ``max-age`` (the first one, if
  repeated), while ``no-cache``/``no-store`` mean "as short as allowed"
  (the minimum TTL) — re-fetching robots.txt before every request is never
  what a site wants. ``s-maxage`` is for shared HTTP caches, which a
  crawler's robots.txt cache is not, and is ignored; so are ``Expires`` and
  ``Age``. A malformed ``max-age`` is ignored (default TTL).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable

__all__ = [
    "REDIRECT_STATUSES",
    "FetchOutcome",
    "backoff_delay",
    "is_redirect",
    "outcome_for_status",
    "ttl_from_cache_control",
]


class FetchOutcome(enum.Enum):
    """What a robots.txt fetch means for the origin (SPEC B3)."""

    RULES = "rules"
    """2xx: the body is parsed and its rules apply ("conditional allow")."""
    ALLOW_ALL = "allow_all"
    """4xx other than 429, too many redirects, or the fetch was ignored: no rules."""
    UNREACHABLE = "unreachable"
    """429, 5xx or a network failure: full disallow for now, fetch again later."""


#: Statuses whose ``Location`` is followed (SPEC B3: at least five hops).
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def is_redirect(status: int) -> bool:
    """True for a status whose ``Location`` the fetcher follows."""
    return status in REDIRECT_STATUSES


def outcome_for_status(status: int) -> FetchOutcome:
    """The outcome of a final (not followed) response with ``status`` (SPEC B3).

    2xx → RULES; 3xx that was not followed and 4xx except 429 → ALLOW_ALL;
    429, 5xx and invalid statuses → UNREACHABLE.
    """
    if 200 <= status < 300:
        return FetchOutcome.RULES
    if 300 <= status < 500 and status != 429:
        return FetchOutcome.ALLOW_ALL
    return FetchOutcome.UNREACHABLE


# One Cache-Control directive: a token, optionally "=" token or quoted string.
_DIRECTIVE = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*("[^"]*"|[^,\s]*))?\s*(?:,|$)')


def ttl_from_cache_control(
    values: Iterable[bytes | str] | None,
    *,
    default: float,
    minimum: float,
    maximum: float,
) -> float:
    """Seconds a robots.txt response stays fresh, clamped to [``minimum``, ``maximum``].

    ``values`` are the response's ``Cache-Control`` header values. Without a
    usable ``max-age`` (or ``no-cache``/``no-store``) the answer is ``default``.
    """
    ttl = default
    max_age: float | None = None
    no_cache = False
    for value in values or ():
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        for match in _DIRECTIVE.finditer(text):
            name = match[1].lower()
            if name in ("no-cache", "no-store"):
                no_cache = True
            elif name == "max-age" and max_age is None:
                argument = (match[2] or "").strip('"')
                if argument.isdigit() and argument.isascii():
                    max_age = float(argument)
    if no_cache:
        ttl = minimum
    elif max_age is not None:
        ttl = max_age
    return min(max(ttl, minimum), maximum)


def backoff_delay(failures: int, *, base: float, maximum: float) -> float:
    """Seconds before fetching again after ``failures`` failed fetches in a row.

    ``base`` after the first failure, doubling with each further one, never
    more than ``maximum``: ``min(base * 2**(failures - 1), maximum)``.
    """
    if failures < 1:
        return 0.0
    # Cap the exponent: past 2**64 the maximum has long been reached.
    return float(min(base * 2.0 ** min(failures - 1, 64), maximum))
