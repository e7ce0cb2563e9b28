"""What is known about one origin's robots.txt: the record stores keep and decisions read.

:func:`record_after_fetch` is the pure step from one fetch's outcome (and the
previous record) to the next record: lifetime from ``Cache-Control``, the
outage bookkeeping and backoff of an unreachable robots.txt (SPEC B4, B5).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scrapy_googlerobots.policy.fetch_policy import (
    FetchOutcome,
    backoff_delay,
    ttl_from_cache_control,
)
from scrapy_googlerobots.robotstxt import RobotsTxt
from scrapy_googlerobots.robotstxt import parse as parse_robots

__all__ = ["FetchTimings", "ParsedRulesCache", "PolicyRecord", "record_after_fetch"]


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    """Everything known about one origin's robots.txt.

    ``outcome``/``body``/``status``/``fetched_at`` describe the last *good*
    fetch (RULES or ALLOW_ALL); ``outcome`` is UNREACHABLE when there has never
    been one. ``unreachable_since``/``failures``/``retry_at`` describe the
    current outage, if any. Times are seconds from the middleware's clock.
    ``headers`` is the response's header block (``Name: value`` lines, CRLF
    ended) when the copy can stand for the download of robots.txt itself (see
    the sitemaps usage page): a 2xx, whole, not redirected; None otherwise.
    """

    origin: str
    outcome: FetchOutcome
    body: bytes | None = None
    status: int | None = None
    fetched_at: float = 0.0
    expires_at: float = 0.0
    unreachable_since: float | None = None
    failures: int = 0
    retry_at: float | None = None
    headers: bytes | None = None
    # Parsed form of ``body``; runtime only, never serialised by stores.
    rules: RobotsTxt | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class FetchTimings:
    """The settings that date a record: lifetimes (``ROBOTSTXT_CACHE_*``) and backoff."""

    cache_ttl: float
    cache_min_ttl: float
    cache_max_ttl: float
    retry_delay: float
    retry_max_delay: float
    max_size: int

    def backoff(self, failures: int) -> float:
        """Seconds before the next attempt after ``failures`` failed ones in a row."""
        return backoff_delay(failures, base=self.retry_delay, maximum=self.retry_max_delay)


def record_after_fetch(
    key: str,
    outcome: FetchOutcome,
    *,
    status: int | None,
    body: bytes,
    cache_control: Sequence[bytes] | None,
    previous: PolicyRecord | None,
    now: float,
    timings: FetchTimings,
    headers: bytes | None = None,
    parse: Callable[[bytes], RobotsTxt | None] | None = None,
    retry_after: float | None = None,
) -> PolicyRecord:
    """The record of ``key`` after a fetch with ``outcome`` at ``now``.

    ``headers``: the response's header block, when the body is the whole
    response body (kept with RULES only).

    An unreachable fetch keeps a previous good copy (its rules included) and
    notes the outage; with none, the record says "unreachable since". A good
    fetch starts a fresh record whose lifetime comes from ``Cache-Control``.
    ``parse`` reads the kept body into the record's ``rules`` (default: as
    robots.txt; a file parsed where it is judged, such as ``tdmrep.json``,
    passes one that returns None). ``retry_after``: seconds the answer's
    ``Retry-After`` asks (:func:`~scrapy_googlerobots.policy.slowdown.retry_after_of`);
    an unreachable fetch is not retried before them, whatever the backoff says.
    """
    if outcome is FetchOutcome.UNREACHABLE:
        failures = (previous.failures if previous is not None else 0) + 1
        since = previous.unreachable_since if previous is not None else None
        retry_at = now + max(timings.backoff(failures), retry_after or 0.0)
        if previous is not None and previous.outcome is not FetchOutcome.UNREACHABLE:
            return dataclasses.replace(
                previous,
                unreachable_since=now if since is None else since,
                failures=failures,
                retry_at=retry_at,
            )
        return PolicyRecord(
            origin=key,
            outcome=FetchOutcome.UNREACHABLE,
            status=status,
            unreachable_since=now if since is None else since,
            failures=failures,
            retry_at=retry_at,
        )
    ttl = ttl_from_cache_control(
        cache_control,
        default=timings.cache_ttl,
        minimum=timings.cache_min_ttl,
        maximum=timings.cache_max_ttl,
    )
    kept: bytes | None = body if outcome is FetchOutcome.RULES else None
    # ALLOW_ALL gets parsed empty rules too: the hot path finds rules on every fresh record.
    body_kept = kept or b""
    rules: RobotsTxt | None
    if parse is None:
        rules = parse_robots(body_kept, max_size=timings.max_size)
    else:
        rules = parse(body_kept)
    return PolicyRecord(
        origin=key,
        outcome=outcome,
        body=kept,
        status=status,
        fetched_at=now,
        expires_at=now + ttl,
        headers=headers if kept is not None else None,
        rules=rules,
    )


class ParsedRulesCache:
    """Parsed rules of records a store returns without them (SQLite, Redis), in a small LRU."""

    __slots__ = ("_empty", "_entries", "_max_size", "_size_limit")

    def __init__(self, max_entries: int, max_size: int) -> None:
        self._entries: OrderedDict[str, tuple[bytes | None, RobotsTxt]] = OrderedDict()
        self._max_size = max_entries
        self._size_limit = max_size
        self._empty = parse_robots(b"")

    @property
    def empty(self) -> RobotsTxt:
        """Rules that allow everything."""
        return self._empty

    def rules_of(self, record: PolicyRecord) -> RobotsTxt:
        """``record``'s rules: its own, a cached parse of its body, or none (allow all)."""
        if record.rules is not None:
            return record.rules
        if record.outcome is not FetchOutcome.RULES or not record.body:
            return self._empty
        cached = self._entries.get(record.origin)
        if cached is not None and cached[0] == record.body:
            self._entries.move_to_end(record.origin)
            return cached[1]
        rules = parse_robots(record.body, max_size=self._size_limit)
        self._entries[record.origin] = (record.body, rules)
        if len(self._entries) > self._max_size:
            self._entries.popitem(last=False)
        return rules
