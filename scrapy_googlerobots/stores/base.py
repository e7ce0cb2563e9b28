"""Where robots.txt knowledge is kept between requests: one record per origin.

The middleware talks to a :class:`PolicyStore`; :class:`~.memory.MemoryPolicyStore`
(an LRU dict) is the default. Persistent and shared stores implement the same
protocol, so the middleware never knows which one it has.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["PolicyStore"]


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
