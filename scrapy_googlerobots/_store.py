"""Where robots.txt knowledge is kept between requests: one record per origin.

The middleware talks to a :class:`PolicyStore`; :class:`MemoryPolicyStore`
(an LRU dict) is the default. Persistent and shared stores implement the same
protocol, so the middleware never knows which one it has.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from scrapy_googlerobots._fetch_policy import FetchOutcome
from scrapy_googlerobots.robotstxt import RobotsTxt


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    """Everything known about one origin's robots.txt.

    ``outcome``/``body``/``status``/``fetched_at`` describe the last *good*
    fetch (RULES or ALLOW_ALL); ``outcome`` is UNREACHABLE when there has never
    been one. ``unreachable_since``/``failures``/``retry_at`` describe the
    current outage, if any. Times are seconds from the middleware's clock.
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
    # Parsed form of ``body``; runtime only, never serialised by stores.
    rules: RobotsTxt | None = field(default=None, compare=False, repr=False)


@runtime_checkable
class PolicyStore(Protocol):
    """A keyed store of :class:`PolicyRecord`, one per origin key."""

    def get(self, origin: str) -> PolicyRecord | None:
        """The record for ``origin``, or None when nothing is known."""

    def put(self, record: PolicyRecord) -> None:
        """Store ``record`` under ``record.origin``, replacing any previous one."""

    def acquire_fetch_lease(self, origin: str, ttl: float) -> bool:
        """Claim the right to fetch ``origin``'s robots.txt for ``ttl`` seconds.

        True means: this caller fetches. A store shared between processes
        returns False while another process holds the lease; the caller then
        waits for the record to appear instead of fetching too.
        """

    def release_fetch_lease(self, origin: str) -> None:
        """Give up a lease taken with :meth:`acquire_fetch_lease`."""

    def close(self) -> None:
        """Release resources; the store is not used afterwards."""


class MemoryPolicyStore:
    """In-process store keeping at most ``max_size`` origins, least recently used evicted."""

    def __init__(self, max_size: int = 10_000) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, got {max_size!r}")
        self.max_size = max_size
        self._records: OrderedDict[str, PolicyRecord] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def get(self, origin: str) -> PolicyRecord | None:
        record = self._records.get(origin)
        if record is not None:
            self._records.move_to_end(origin)
        return record

    def put(self, record: PolicyRecord) -> None:
        self._records[record.origin] = record
        self._records.move_to_end(record.origin)
        while len(self._records) > self.max_size:
            self._records.popitem(last=False)

    def acquire_fetch_lease(self, origin: str, ttl: float) -> bool:
        # One process: the middleware's own in-flight map already
        # guarantees a single fetch per origin.
        return True

    def release_fetch_lease(self, origin: str) -> None:
        pass

    def close(self) -> None:
        self._records.clear()
