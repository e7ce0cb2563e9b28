"""Per-origin bookkeeping of the waiting room, and the meta keys it puts on waiting requests."""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import TYPE_CHECKING

from twisted.internet.defer import Deferred

from scrapy_googlerobots.runtime.timers import Timer

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_googlerobots.policy.origin import Origin

__all__ = [
    "DROP_META",
    "HANDED_BACK_META",
    "OWN_DONT_FILTER_META",
    "RELEASED_META",
    "WAITING_SINCE_META",
    "OriginState",
    "Parked",
]

HANDED_BACK_META = "_robotstxt_handed_back"
"""Set on a request ``process_request`` handed back to the engine to be parked.

Handed back a second time, it waits inline instead: only a request that never
passes the scheduler (``engine.download``) comes back to ``process_request``
without meeting ``request_scheduled`` in between.
"""
OWN_DONT_FILTER_META = "_robotstxt_own_dont_filter"
"""Set when the middleware set ``dont_filter`` on a request it handed back (it had passed
the duplicate filter): a worker that adopts it with a fresh filter of its own clears it."""
WAITING_SINCE_META = "_robotstxt_waiting_since"
"""Clock time a parked request started waiting (max-wait counts from it)."""
RELEASED_META = "_robotstxt_released"
"""``fetched_at`` of the record a released request waited for: it is judged by that copy."""
DROP_META = "_robotstxt_unreachable"
"""Set on a request that gave up waiting: the middleware drops it with this message."""


@dataclasses.dataclass(slots=True)
class Parked:
    request: Request
    deadline: float
    deferred: bool = False
    """Counted in robotstxt/unreachable/deferred (waiting on an unreachable origin)."""
    rid: str | None = None
    """Its record's id in the shared store (None: kept in this process only)."""
    unserializable: bool = False
    """It cannot be serialized: nowhere but here to keep it."""


class OriginState:
    """One origin with parked requests, inline waiters, a fetch or timers."""

    __slots__ = (
        "expiry_timer",
        "fetching",
        "key",
        "origin",
        "parked",
        "retry_timer",
        "trigger",
        "waiters",
    )

    def __init__(self, origin: Origin, key: str) -> None:
        self.origin = origin
        self.key = key
        self.parked: deque[Parked] = deque()
        self.fetching = False
        self.waiters: list[Deferred[None]] = []
        self.retry_timer: Timer | None = None
        self.expiry_timer: Timer | None = None
        # The request that triggered the pending fetch (robots_parsed's request=).
        self.trigger: Request | None = None

    @property
    def busy(self) -> bool:
        return bool(self.parked or self.fetching or self.waiters)

    @property
    def waiting(self) -> int:
        """Requests waiting for this origin's robots.txt."""
        return len(self.parked) + len(self.waiters)

    def cancel_timers(self) -> None:
        for timer in (self.retry_timer, self.expiry_timer):
            if timer is not None:
                timer.cancel()
        self.retry_timer = self.expiry_timer = None
