"""What a request of an origin does now, from what is known of the origin's robots.txt (SPEC B5).

Pure: a :class:`~scrapy_googlerobots.policy.record.PolicyRecord` (or None) and the
clock in, a :class:`Decision` out. The middleware applies it: judges the
request by the rules, makes it wait for a fetch, or drops it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome

if TYPE_CHECKING:
    from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["Action", "Decision", "decide", "is_the_copy_waited_for"]


class Action(enum.Enum):
    APPLY = "apply"
    """Judge the request by the record's rules (possibly stale, possibly none: allow all)."""
    WAIT = "wait"
    """Wait for robots.txt: never fetched, expired, or unreachable in ``"defer"`` mode."""
    DROP = "drop"
    """robots.txt unreachable, no good copy, ``"disallow"`` mode: drop the request now."""


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    fetch: bool
    """A fetch of robots.txt is due now (first fetch, refresh, or a backoff attempt)."""
    rules: bool = True
    """APPLY: the record's rules apply; False: nothing is disallowed (no rules to apply)."""
    unreachable: bool = False
    """The origin is unreachable with no good copy (a waiting request counts as deferred)."""


_APPLY = Decision(Action.APPLY, fetch=False)
_APPLY_REFRESH = Decision(Action.APPLY, fetch=True)
_ALLOW_ALL = Decision(Action.APPLY, fetch=False, rules=False)
_ALLOW_ALL_RETRY = Decision(Action.APPLY, fetch=True, rules=False)
_FETCH_AND_WAIT = Decision(Action.WAIT, fetch=True)
_DEFERRED = Decision(Action.WAIT, fetch=False, unreachable=True)
_DEFERRED_RETRY = Decision(Action.WAIT, fetch=True, unreachable=True)
_DROP = Decision(Action.DROP, fetch=False, unreachable=True)


def decide(
    record: PolicyRecord | None, now: float, *, disallow_mode: bool, allow_after: float
) -> Decision:
    """The decision for a request of ``record``'s origin at ``now``.

    ``disallow_mode``: ``ROBOTSTXT_UNREACHABLE = "disallow"`` (drop rather
    than wait); ``allow_after``: ``ROBOTSTXT_UNREACHABLE_ALLOW_AFTER``.
    """
    if record is None:
        return _FETCH_AND_WAIT
    due = record.retry_at is None or now >= record.retry_at
    if record.outcome is not FetchOutcome.UNREACHABLE:
        if now < record.expires_at:
            return _APPLY
        if record.unreachable_since is None:
            return _FETCH_AND_WAIT
        # The last refresh failed: a stale good copy beats "disallow all" (SPEC B5).
        return _APPLY_REFRESH if due else _APPLY
    since = record.unreachable_since
    if since is not None and now - since >= allow_after:
        return _ALLOW_ALL_RETRY if due else _ALLOW_ALL
    if disallow_mode:
        # Time to try again: wait for that fetch instead of dropping at once.
        return _FETCH_AND_WAIT if due else _DROP
    return _DEFERRED_RETRY if due else _DEFERRED


def is_the_copy_waited_for(fetched_at: float | None, record: PolicyRecord | None) -> bool:
    """True if ``record`` is the good copy fetched at ``fetched_at`` a released request waited for.

    Such a request is judged by it even if it has expired meanwhile (a tiny TTL).
    """
    return (
        fetched_at is not None
        and record is not None
        and record.outcome is not FetchOutcome.UNREACHABLE
        and record.fetched_at == fetched_at
    )
