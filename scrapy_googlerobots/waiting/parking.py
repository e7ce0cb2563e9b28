"""Holding requests per origin, across the crawl's policy files: parking, hand-back, adoption.

:class:`Parking` is where a request leaves the engine's way to wait for an
origin's policy file and where it comes back:

- the ``request_scheduled`` handler (:meth:`Parking.on_request_scheduled`),
  connected only while some origin has something pending in a room: a request
  that must wait for a file is parked in that file's room, before the scheduler;
- the hand-back from ``process_request`` (:meth:`Parking.hand_back`): once,
  with ``dont_filter``, to be parked at ``request_scheduled``;
- adoption of a request another worker left waiting (:meth:`Parking.adopt`),
  and the persistence API (:meth:`Parking.park`, :meth:`Parking.parked_requests`).

Each asks the :class:`~.file_step.FileStep` of every file, in order, whether
the request must wait for it; nothing here knows which files there are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import IgnoreRequest

from scrapy_googlerobots.runtime.scrapy_compat import (
    REQUEST_SCHEDULED_CAN_DROP,
    downloader_full,
    duplicate_filter,
    engine_takes_requests_back,
    seen_by_filter,
)
from scrapy_googlerobots.runtime.timers import Timer
from scrapy_googlerobots.waiting.origin_state import (
    FAILED_META,
    HANDED_BACK_META,
    OWN_DONT_FILTER_META,
    Parked,
    end_wait,
)
from scrapy_googlerobots.waiting.parked_records import NO_RECORDS, Records

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.reporting.reporter import Reporter
    from scrapy_googlerobots.reporting.slow_down_report import Waiting
    from scrapy_googlerobots.waiting.file_step import FileStep
    from scrapy_googlerobots.waiting.slow_down import SlowDownGate
    from scrapy_googlerobots.waiting.waiting_room import WaitingRoom

__all__ = ["Parking"]

# On a request whose fingerprint the duplicate check took: when it comes back
# (released, or waiting for the next file) it is itself, not its duplicate.
_COUNTED_META = "_robotstxt_fingerprinted"


class Parking:
    """The crawl's requests held per origin, for every policy file (see the module doc).

    ``handler`` is the ``request_scheduled`` receiver connected while something
    is pending (the middleware's, which calls :meth:`on_request_scheduled`).
    """

    def __init__(
        self,
        crawler: Crawler,
        reporter: Reporter,
        *,
        origin_ref: Callable[[str], OriginRef | None],
        clock: Callable[[], float],
        closing: Callable[[], bool],
        stopping: Callable[[], bool],
        unwatch: Callable[[], None],
        handler: Callable[..., None],
    ) -> None:
        self.crawler = crawler
        self.reporter = reporter
        self._origin_ref = origin_ref
        self._clock = clock
        self._closing = closing
        self.stopping = stopping
        self._unwatch = unwatch
        self._handler = handler
        self.steps: Sequence[FileStep] = ()
        """Every policy file's step, in the order a request meets them (robots.txt first)."""
        self.records: Records = NO_RECORDS
        # Fingerprints of requests parked before they met the scheduler's filter.
        self._parked_fingerprints: set[bytes] = set()
        self.gate: SlowDownGate | None = None
        """Pauses and send slots of origins that asked to slow down (None: off)."""
        # Read through the module so tests can pretend to be an older Scrapy.
        self.can_park = REQUEST_SCHEDULED_CAN_DROP
        # request_scheduled is connected only while some origin is pending (listen).
        self._listening = False
        self._unlisten_timer: Timer | None = None

    # -- the rooms' state ---------------------------------------------------------

    @property
    def busy(self) -> bool:
        """Something waits in a room, or a fetch runs: the spider must stay open."""
        gate = self.gate
        return any(step.room.busy for step in self.steps) or (gate is not None and gate.room.busy)

    def _pending(self) -> bool:
        gate = self.gate
        return any(step.room.pending for step in self.steps) or (
            gate is not None and (gate.room.busy or bool(gate.site.paused))
        )

    def waiting(self) -> list[Waiting]:
        """What every origin's requests wait for, per room (for the idle crawl's line)."""
        entries = [entry for step in self.steps for entry in step.room.waiting()]
        if self.gate is not None:
            entries += self.gate.room.waiting()
        return entries

    def parked_requests(self) -> list[Request]:
        """Requests waiting for a policy file (per file and origin in the order they
        arrived), then those held for their origin's pause."""
        parked = [request for step in self.steps for request in step.room.parked_requests()]
        if self.gate is not None:
            parked += self.gate.room.parked_requests()
        return parked

    def listen(self) -> None:
        """An origin is pending: park its requests at ``request_scheduled`` from now on."""
        self._cancel_unlisten()
        if self.can_park and not self._listening:
            self._listening = True
            self.crawler.signals.connect(self._handler, signal=signals.request_scheduled)

    def room_idle(self) -> None:
        """A room has nothing pending: if no room has, requests go straight to the
        scheduler, with no handler on the way."""
        if self._pending():
            return
        self._unwatch()
        if self._listening and self._unlisten_timer is None:
            # Not now: this may run inside a request_scheduled dispatch, and
            # disconnecting a receiver there can make Scrapy skip the next one.
            self._unlisten_timer = Timer(0, self.unlisten)

    def _cancel_unlisten(self) -> None:
        timer, self._unlisten_timer = self._unlisten_timer, None
        if timer is not None:
            timer.cancel()

    def unlisten(self, *, closing: bool = False) -> None:
        """Disconnect the ``request_scheduled`` handler (unless something is pending again)."""
        self._cancel_unlisten()
        if self._listening and (closing or not self._pending()):
            self._listening = False
            self.crawler.signals.disconnect(self._handler, signal=signals.request_scheduled)

    # -- on the way in ---------------------------------------------------------

    def on_request_scheduled(self, request: Request) -> None:
        """Park ``request`` in the room of the first file it must wait for (raising
        ``IgnoreRequest``: Scrapy >= 2.11.2 drops it silently), or let it on."""
        meta = request.meta
        # Back through the engine: if it waits again, it may be handed back again.
        handed_back = bool(meta.pop(HANDED_BACK_META, None))
        if meta.get("dont_obey_robotstxt") or FAILED_META in meta or self._closing():
            return
        ref = self._origin_ref(request.url)
        if ref is None:
            return
        gate = self.gate
        if (
            gate is not None
            and gate.holds(request, ref.key)
            and not self.stopping()
            and not self.duplicate(request)
            and gate.hold(request, ref.key)
        ):
            raise IgnoreRequest("Waiting for its origin's pause to end")
        now = self._clock()
        steps = self.steps
        record = steps[0].room.store.get(ref.key)
        if (
            record is not None
            and now < record.expires_at
            and not any(_may_need(step, meta) for step in steps[1:])
        ):
            return  # the common case: the first file's copy is fresh, no later file applies
        for index, step in enumerate(steps):
            wait = step.must_wait(request, ref, now)
            if wait is True:
                return  # process_request decides (drops it, or lets it on)
            if wait is False:
                continue
            if wait[1] is None and not handed_back and self._downloader_full(ref.key):
                # The file's first fetch is on its way and the engine can take
                # nothing out of the scheduler before it ends: the request waits
                # there, in the scheduler's order and at its priority, as with the
                # stock middleware (one that comes out before the answer is
                # handed back and parked).
                return
            if self.stopping():
                return  # the scheduler keeps it (JOBDIR) or drops it, as without us
            if self.duplicate(request):
                return  # the scheduler filters it, as without us
            step.room.park(wait[0], request, wait[1], now, ahead=handed_back)
            self._prefetch(ref, request, steps[index + 1 :])
            raise IgnoreRequest(f"Waiting for {step.file.kind.name}")

    def _downloader_full(self, key: str) -> bool:
        """The engine's downloader takes no more requests before origin ``key``'s answer:
        full (``CONCURRENT_REQUESTS``) even without that origin's own requests in it,
        which are handed back (freeing their places) until the answer comes."""

        def holds(request: Request) -> bool:
            if request.meta.get("dont_obey_robotstxt"):
                return True  # a policy file's download, or one that never waits
            ref = self._origin_ref(request.url)
            return ref is None or ref.key != key

        return downloader_full(self.crawler.engine, holds)

    def duplicate(self, request: Request) -> bool:
        """True when the scheduler would filter ``request`` as a duplicate: it is not parked.

        The scheduler's filter is asked without recording anything (it meets the
        request when it is released, as before); a copy of a request parked here
        before (which that filter has not met yet) is dropped silently here, as the
        filter would, and logged by it.
        """
        if request.dont_filter or request.meta.get(_COUNTED_META):
            return False  # a request parked before, coming back (released, next file)
        df = duplicate_filter(self.crawler.engine)
        if df is None:
            return False
        if seen_by_filter(df, request):
            return True  # the scheduler filters it, as without us
        fingerprinter = getattr(self.crawler, "request_fingerprinter", None)
        if fingerprinter is None:
            return False
        fingerprint = fingerprinter.fingerprint(request)
        if fingerprint not in self._parked_fingerprints:
            self._parked_fingerprints.add(fingerprint)
            request.meta[_COUNTED_META] = True
            return False
        if callable(getattr(df, "log", None)):
            df.log(request, self.crawler.spider)
        raise IgnoreRequest("Filtered duplicate request")

    def hand_back_to_hold(self, request: Request) -> bool:
        """Hand ``request`` back to the engine to be held for its origin's pause or its send
        slot (at ``request_scheduled``); False: it must wait inline."""
        if not self._may_hand_back(request):
            return False
        self._mark_handed_back(request)
        self.listen()
        return True

    def _may_hand_back(self, request: Request) -> bool:
        return (
            self.can_park
            and not request.meta.get(HANDED_BACK_META)
            and engine_takes_requests_back(self.crawler.engine)
            and not self.stopping()
        )

    @staticmethod
    def _mark_handed_back(request: Request) -> None:
        meta = request.meta
        meta[HANDED_BACK_META] = True
        if not request.dont_filter:
            meta[OWN_DONT_FILTER_META] = True
            request.dont_filter = True

    def hand_back(
        self, request: Request, room: WaitingRoom, ref: OriginRef, record: PolicyRecord | None
    ) -> bool:
        """Hand ``request`` back to the engine to be parked in ``room``; False: it must wait
        inline (handed back once already, no engine that takes requests back, stopping)."""
        if not self._may_hand_back(request):
            return False
        # Back to the engine: request_scheduled (listening from here on) parks it
        # outside the downloader. It passed the duplicate filter once already. A
        # request that never meets the scheduler (engine.download) comes straight
        # back here and waits inline.
        self._mark_handed_back(request)
        room.expect(ref, request, record)
        self.reporter.handed_back()
        steps = self.steps
        index = next(i for i, step in enumerate(steps) if step.room is room)
        self._prefetch(ref, request, steps[index + 1 :])
        return True

    def _prefetch(self, ref: OriginRef, request: Request, later: Sequence[FileStep]) -> None:
        """``request`` waits for a file: fetch the later files every request needs now too,
        so that it seldom waits a second time."""
        for step in later:
            if step.file.always:
                step.prefetch(ref, request)

    def crawl(self, request: Request) -> None:
        """Send ``request`` to the engine (unless the spider is closing)."""
        engine = self.crawler.engine
        if engine is None or self._closing():
            return
        engine.crawl(request)

    # -- adoption and the persistence API ---------------------------------------

    def adopt(self, request: Request, rid: str | None = None) -> None:
        """A request another worker left waiting (recorded as ours under ``rid``): wait or go on.

        Without ``rid`` (a request of a 0.1.0 journal, taken at ``spider_opened``),
        it is recorded if it waits, or goes to the engine.
        """
        if self._closing():
            return  # stays in the store: the next adopter takes it
        now = self._clock()
        if not self._wait_again(request, now, rid) and self.records.forget(
            [Parked(request, now, rid=rid)]
        ):
            self.crawl(request)

    def park(self, request: Request) -> None:
        """Put ``request`` (e.g. restored from a paused crawl) on its way again: park it for
        the first file it must wait for, or send it to the engine (no duplicate filter)."""
        request.dont_filter = True
        for step in self.steps:
            request.meta.pop(step.file.gave_up_meta, None)
        if not self._wait_again(request, self._clock(), None):
            self.crawl(request)

    def _wait_again(self, request: Request, now: float, rid: str | None) -> bool:
        """Park ``request`` for the first file it must wait for (its wait still counts from
        its first park); False: it need not wait (its wait is over)."""
        ref = self._origin_ref(request.url)
        if ref is None or not self.can_park or request.meta.get("dont_obey_robotstxt"):
            return False
        for step in self.steps:
            wait = step.must_wait(request, ref, now)
            if wait is True:
                break
            if wait is not False:
                step.room.park(wait[0], request, wait[1], now, rid=rid)
                return True
        end_wait(request.meta)  # its origin's policies are known: the wait is over
        return False


def _may_need(step: FileStep, meta: dict[str, Any]) -> bool:
    file = step.file
    return file.always or file.trigger_meta in meta
