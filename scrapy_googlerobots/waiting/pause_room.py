"""Requests held outside the scheduler and the downloader for their origin: pauses, send slots.

:class:`PauseRoom` holds, per origin and in the order they came, the requests
of origins that asked for a pause (``Retry-After``) and those waiting for a
send slot more than :data:`~.slow_down.INLINE_WAIT` s away (see
:mod:`~scrapy_googlerobots.waiting.slow_down`). While they wait they are
recorded in the shared store like requests waiting for robots.txt, so a stop
hands them over (:mod:`~scrapy_googlerobots.waiting.handover`) and a kill
leaves them to be adopted by another worker. They go back to the engine when
the pause ends, or shortly before their slot.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scrapy_googlerobots.reporting.slow_down_report import Waiting
from scrapy_googlerobots.runtime.timers import Timer
from scrapy_googlerobots.waiting.origin_state import Parked

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_googlerobots.reporting.slow_down_report import SlowDownReport
    from scrapy_googlerobots.waiting.parked_records import Records

__all__ = ["PAUSES_META", "SLOT_META", "Pause", "PauseRoom", "Pauses", "back_from_slot"]

PAUSES_META = "_robotstxt_pauses"
"""How many pauses a request has waited out (its retry count is given back for each)."""

SLOT_META = "_robotstxt_send_slot"
"""Wall-clock time (:func:`time.time`) of the send slot a request was handed back to wait for.

Wall-clock: with a shared scheduler (scrapy-redis) the request, once released,
may be sent by another worker of the machine (workers on several machines need
clocks kept in step, as NTP keeps them). Removed when it is sent; a worker
that adopts it (after a stop or a kill) reserves a fresh slot.
"""
_OWN_PRIORITY_META = "_robotstxt_own_priority"

# A request released for its send slot goes to the scheduler with this priority:
# out of it before anything it holds (it had its turn once), so that it is back in
# time for its slot. Its own priority is restored when it is back (kept in its meta
# for a scheduler that serializes requests: scrapy-redis, JOBDIR).
_AHEAD_PRIORITY = 1_000_000

# A request that has waited out this many pauses keeps the retry count the
# pauses cost it: a site that never stops asking ends in RetryMiddleware's give-up.
_MAX_PAUSES_FORGIVEN = 10


@dataclass(slots=True)
class Pause:
    """An origin's pause: until ``until`` (the crawl's monotonic clock), why, and whether its
    requests are dropped meanwhile (a pause beyond ``ROBOTSTXT_SLOW_DOWN_MAX_PAUSE``)."""

    until: float
    reason: str
    drop: bool = False


class Pauses(Protocol):
    """Where the room reads an origin's pause in force (:class:`~.slow_down.SiteSlowDown`)."""

    def pause_of(self, key: str) -> Pause | None: ...


def back_from_slot(request: Request) -> float | None:
    """``request`` reached ``process_request`` again: the wall-clock time of the send slot
    it was held for (None: none), that mark removed and its own priority restored."""
    meta = request.meta
    own = meta.pop(_OWN_PRIORITY_META, None)
    if isinstance(own, int):
        request.priority = own
    slot = meta.pop(SLOT_META, None)
    return slot if isinstance(slot, float) else None


class PauseRoom:
    """Requests held for their origin's pause or their send slot (see the module doc).

    ``records()`` gives the store's records of waiting requests (kept there
    while they wait); ``crawl`` sends a request back to the engine; ``idle``
    is called when the room empties.
    """

    def __init__(
        self,
        slow_down: Pauses,
        report: SlowDownReport,
        *,
        records: Callable[[], Records],
        crawl: Callable[[Request], None],
        idle: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.slow_down = slow_down
        self._wall = wall
        self.report = report
        self._records = records
        self._crawl = crawl
        self._idle = idle
        self._clock = clock
        self._held: dict[str, deque[Parked]] = {}
        self._timers: dict[str, tuple[float, Timer]] = {}

    @property
    def busy(self) -> bool:
        """Some request is held: the spider must stay open."""
        return bool(self._held)

    def held(self) -> int:
        return sum(len(queue) for queue in self._held.values())

    def parked_requests(self) -> list[Request]:
        """The held requests, per origin in the order they came."""
        return [entry.request for queue in self._held.values() for entry in queue]

    def waiting(self) -> list[Waiting]:
        """Per origin: the requests held, for what, until when (wall-clock time)."""
        lead = self._wall() - self._clock()
        entries = []
        for key, queue in self._held.items():
            paused = self.slow_down.pause_of(key) is not None
            # Until the pause ends, or until the last held request is given back.
            until = max(entry.deadline for entry in queue)
            armed = self._timers.get(key)
            if armed is not None and armed[0] > until:
                until = armed[0]
            entries.append(
                Waiting(
                    key,
                    len(queue),
                    "a pause" if paused else "send slots",
                    until + lead,
                    "ROBOTSTXT_SLOW_DOWN_MAX_PAUSE" if paused else "ROBOTSTXT_CRAWL_DELAY_MAX",
                )
            )
        return entries

    def hold(self, key: str, request: Request, pause: Pause, rid: str | None = None) -> None:
        """Hold ``request`` until ``key``'s ``pause`` ends (``rid``: its record, if adopted)."""
        meta = request.meta
        pauses = int(meta.get(PAUSES_META, 0)) + 1
        meta[PAUSES_META] = pauses
        if pauses <= _MAX_PAUSES_FORGIVEN:
            # The retry a pause cost it is given back: waiting is not failing.
            retries = meta.get("retry_times")
            if isinstance(retries, int) and retries > 0:
                meta["retry_times"] = retries - 1
        self._keep(key, Parked(request, pause.until, rid=rid))
        self.report.held(request, pause.reason, pause.until - self._clock())

    def hold_for_slot(self, key: str, request: Request, until: float) -> None:
        """Hold ``request`` until ``until`` (this crawl's clock), shortly before its send slot."""
        self._keep(key, Parked(request, until))
        self.report.slot_held(request, until - self._clock())

    def _keep(self, key: str, entry: Parked) -> None:
        self._records().record(entry)
        self._held.setdefault(key, deque()).append(entry)
        self._arm(key)

    def _arm(self, key: str) -> None:
        """Release ``key``'s requests when the first is due (not before its pause ends)."""
        queue = self._held.get(key)
        if not queue:
            return
        until = queue[0].deadline
        pause = self.slow_down.pause_of(key)
        if pause is not None and pause.until > until:
            until = pause.until
        armed = self._timers.get(key)
        if armed is not None:
            if armed[0] == until:
                return
            armed[1].cancel()
        self._timers[key] = (until, Timer(until - self._clock(), lambda: self.release(key)))

    def release(self, key: str) -> None:
        """Send on ``key``'s requests that are due, in the order they came: all at the end of
        its pause (unless another worker made it longer), those waiting for send slots when
        their time has come."""
        self._timers.pop(key, None)
        queue = self._held.get(key)
        if queue and self.slow_down.pause_of(key) is None:
            now = self._clock()
            due = []
            while queue and queue[0].deadline <= now:
                due.append(queue.popleft())
            if not queue:
                del self._held[key]
            kept = self._records().forget(due)
            slots = 0
            for entry in kept:
                request = entry.request
                if SLOT_META not in request.meta:
                    self._crawl(request)
                    continue
                slots += 1
                own = request.meta[_OWN_PRIORITY_META] = request.priority
                request.priority = _AHEAD_PRIORITY
                try:
                    self._crawl(request)
                finally:
                    request.priority = own
            if len(kept) > slots:
                self.report.released(len(kept) - slots)
            if slots:
                self.report.slots_released(slots)
        self._arm(key)
        if not self._held:
            self._idle()

    # -- for the hand-over at a stop (waiting.handover) ---------------------------

    def shutdown(self) -> list[tuple[str, str, Parked]]:
        """Every held request with why it waited and its origin key, the room emptied."""
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        entries = [
            (
                f"{key} asked for a pause that had not ended"
                if SLOT_META not in entry.request.meta
                else f"its send slot for {key} had not come",
                key,
                entry,
            )
            for key, queue in self._held.items()
            for entry in queue
        ]
        self._held.clear()
        return entries
