"""Per-origin bookkeeping of the waiting room, and the meta keys it puts on waiting requests."""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred

from scrapy_googlerobots.runtime.timers import Timer

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_googlerobots.policy.origin import Origin, OriginRef

__all__ = [
    "DROP_META",
    "FAILED_META",
    "HANDED_BACK_META",
    "OWN_DONT_FILTER_META",
    "RELEASED_META",
    "WAITING_SINCE_META",
    "WAITING_URL_META",
    "OriginState",
    "Parked",
    "clear_bookkeeping",
    "end_wait",
    "first_parked",
    "start_wait",
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
"""Clock time a parked request started waiting (max-wait counts from it).

Set when the request is first parked, by the wall clock (:func:`time.time`) of
the worker that parks it, and carried in its meta wherever it goes while it
waits: into the store's record, through an adoption by another worker, into a
scheduler that keeps its queue at a stop and back. Removed when the wait ends
(released, or dropped).
"""
WAITING_URL_META = "_robotstxt_waiting_url"
"""The URL of the request :data:`WAITING_SINCE_META` was set on.

Meta is copied into the requests made from a request or its response (a
redirect, ``response.follow(..., meta=response.meta)``): a copy for another
URL starts a wait of its own instead of inheriting the first park's time.
"""
RELEASED_META = "_robotstxt_released"
"""``fetched_at`` of the record a released request waited for: it is judged by that copy."""
FAILED_META = "_robotstxt_failed"
"""Set on a request released because its origin's fetch failed with the crawl's own
exception (a component's bug): ``process_request`` raises that exception for it."""
DROP_META = "_robotstxt_unreachable"
"""Set on a request that gave up waiting: the middleware drops it with this message."""


# Middleware keys a waiting request keeps when it moves to another process
# (store record, a persisting scheduler): the rest is the bookkeeping of the
# process that parked it.
_CARRIED_META = frozenset({WAITING_SINCE_META, WAITING_URL_META})
_MIDDLEWARE_META_PREFIX = "_robotstxt_"


def clear_bookkeeping(meta: MutableMapping[str, Any]) -> None:
    """Remove the middleware's own meta keys from a request moving to another process,
    but its first-park time: the wait goes on counting from it."""
    for key in [k for k in meta if k.startswith(_MIDDLEWARE_META_PREFIX)]:
        if key not in _CARRIED_META:
            del meta[key]


def first_parked(meta: MutableMapping[str, Any], url: str, now: float) -> tuple[float, float]:
    """When the request of ``meta`` and ``url`` was first parked, and how far in the future.

    Its :data:`WAITING_SINCE_META`, set by whichever worker (or run) parked it
    first; ``now`` if it never was, if the value is not a finite number, or if
    it was set on a request for another URL (:data:`WAITING_URL_META`; a 0.1.0
    journal's requests have none). A time ahead of ``now`` (the clock of the
    worker that parked it is ahead of this one's) counts as ``now``: the wait
    never lasts longer than the maximum from here. The second value is that
    lead in seconds (0 if none).
    """
    since = meta.get(WAITING_SINCE_META)
    if isinstance(since, bool) or not isinstance(since, int | float) or not math.isfinite(since):
        return now, 0.0
    if meta.get(WAITING_URL_META, url) != url:
        return now, 0.0
    if since > now:
        return now, since - now
    return float(since), 0.0


def start_wait(meta: MutableMapping[str, Any], url: str, since: float) -> None:
    """Mark the request of ``meta`` and ``url`` as waiting since ``since``."""
    meta[WAITING_SINCE_META] = since
    meta[WAITING_URL_META] = url


def end_wait(meta: MutableMapping[str, Any]) -> float | None:
    """The request of ``meta`` waits no more: remove its first park's time; return it."""
    meta.pop(WAITING_URL_META, None)
    since = meta.pop(WAITING_SINCE_META, None)
    return since if isinstance(since, int | float) else None


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
    ahead: bool = False
    """It had passed the scheduler (handed back from the downloader): released first."""


class OriginState:
    """One origin with parked requests, inline waiters, a fetch or timers."""

    __slots__ = (
        "expiry_at",
        "expiry_timer",
        "failure",
        "fetching",
        "key",
        "origin",
        "parked",
        "ref",
        "retry_timer",
        "trigger",
        "waiters",
    )

    def __init__(self, ref: OriginRef) -> None:
        self.ref = ref
        # The crawl's own exception the last fetch failed with (None: none).
        self.failure: BaseException | None = None
        self.origin: Origin = ref.origin
        self.key: str = ref.key
        self.parked: deque[Parked] = deque()
        self.fetching = False
        self.waiters: list[Deferred[None]] = []
        self.retry_timer: Timer | None = None
        self.expiry_timer: Timer | None = None
        # When expiry_timer fires (the earliest deadline when it was armed).
        self.expiry_at = 0.0
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
