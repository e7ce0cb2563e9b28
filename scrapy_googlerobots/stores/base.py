"""Where robots.txt knowledge is kept between requests: one record per origin.

The middleware talks to a :class:`PolicyStore`; :class:`~.memory.MemoryPolicyStore`
(an LRU dict) is the default. Persistent and shared stores implement the same
protocol, so the middleware never knows which one it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["STORE_ERRORS_STAT", "PaceStore", "ParkedStore", "PolicyStore", "StatsLike"]

STORE_ERRORS_STAT = "robotstxt/store/errors"
"""Failed or too slow store operations, corrupt or unusable store files."""


class StatsLike(Protocol):
    """The part of Scrapy's ``StatsCollector`` the stores use."""

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...


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


@runtime_checkable
class ParkedStore(Protocol):
    """Where a worker keeps the requests it has parked, so that they outlive it.

    Implemented by the stores shared between processes (SQLite, Redis), next
    to :class:`PolicyStore`. Records are grouped by ``scope`` (the spider's
    name) and owned by the process that wrote them; the owner holds a lease
    (``ttl`` seconds, renewed by :meth:`renew_parked_lease`) on all of them
    at once. Once the lease lapses (the owner died) or is released (the owner
    stopped), another process takes them over with :meth:`adopt_parked`,
    atomically: two adopters never both get a record.
    """

    def keep_parked(self, scope: str, rid: str, data: bytes, ttl: float) -> None:
        """Record ``data`` (a serialized request) as ``rid``, owned by this process."""

    def forget_parked(self, scope: str, rids: Sequence[str]) -> list[str]:
        """Delete our records ``rids``; return those that were still ours (not adopted)."""

    def renew_parked_lease(self, scope: str, ttl: float) -> None:
        """This process is alive: its records are not to be adopted for ``ttl`` seconds."""

    def release_parked_lease(self, scope: str) -> None:
        """This process stops: its records, if any are left, may be adopted at once."""

    def adopt_parked(self, scope: str, ttl: float) -> list[tuple[str, bytes]]:
        """Renew our lease and take over the records of every owner whose lease is gone."""


@runtime_checkable
class PaceStore(Protocol):
    """An origin's *next allowed send* and *pause-until*, where every worker sees them.

    Implemented by every store: in memory for one process
    (:class:`~scrapy_googlerobots.stores.pace.LocalPace`), in SQLite for the
    processes of one host, in Redis for a cluster. Times are the store's own
    (Redis's clock, not the workers'): callers get and give *seconds from now*.
    """

    def reserve_send(self, origin: str, gap: float) -> float:
        """Reserve ``origin``'s next send, atomically: the seconds to wait before it (0: now).

        The send is no earlier than the origin's next allowed send and the end
        of its pause; the next reservation gets a slot ``gap`` seconds after it.
        """

    def pause_origin(self, origin: str, seconds: float, reason: str) -> float:
        """No send to ``origin`` for ``seconds``; the seconds its pause now lasts.

        A longer pause already in force is kept (with its ``reason``).
        """

    def paused_origins(self) -> dict[str, tuple[float, str]]:
        """The origins paused now: origin -> (seconds left, the pause's reason)."""
