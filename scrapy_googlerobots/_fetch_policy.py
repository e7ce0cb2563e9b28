"""What a robots.txt fetch result means for an origin (SPEC B3, B5): pure functions."""

from __future__ import annotations

import enum


class FetchOutcome(enum.Enum):
    """What a robots.txt fetch means for the origin (SPEC B3)."""

    RULES = "rules"
    """2xx: the body is parsed and its rules apply ("conditional allow")."""
    ALLOW_ALL = "allow_all"
    """4xx other than 429, too many redirects, or the fetch was ignored: no rules."""
    UNREACHABLE = "unreachable"
    """429, 5xx or a network failure: full disallow for now, fetch again later."""
