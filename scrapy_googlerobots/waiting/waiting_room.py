"""Where requests wait for their origin's policy file, outside the scheduler and the downloader.

One :class:`WaitingRoom` per :class:`~scrapy_googlerobots.fetching.policy_file.PolicyFile`
(robots.txt, tdmrep.json, ...): the file decides, the room holds. A request
of an origin with no usable policy (first fetch pending, cache
expired, robots.txt unreachable in ``"defer"`` mode) is *parked* here, so it
takes no concurrency from other origins. The :class:`WaitingRoom` keeps one
:class:`OriginState` per origin with waiting requests: it makes sure a fetch
or a backoff timer is always pending for it, sends requests past
``ROBOTSTXT_UNREACHABLE_MAX_WAIT`` back to the engine marked to be dropped,
and releases the others to the engine when a fetch yields a policy.

Requests that never passed the scheduler (``engine.download`` by user code,
Scrapy < 2.11.2) cannot be parked; they wait inline (:meth:`WaitingRoom.wait_inline`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scrapy_googlerobots.policy.decision import Action
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import OriginRef
from scrapy_googlerobots.reporting.slow_down_report import Waiting
from scrapy_googlerobots.runtime.timers import Timer, fire
from scrapy_googlerobots.waiting.origin_state import (
    FAILED_META,
    OriginState,
    Parked,
    end_wait,
    first_parked,
    start_wait,
)
from scrapy_googlerobots.waiting.parked_records import NO_RECORDS, Records

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_googlerobots.fetching.coordinator import FetchCoordinator
    from scrapy_googlerobots.fetching.policy_file import PolicyFile
    from scrapy_googlerobots.policy.decision import Decision
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.reporting.reporter import Reporter
    from scrapy_googlerobots.runtime.config import RobotsConfig
    from scrapy_googlerobots.stores.base import PolicyStore

__all__ = ["WaitingRoom", "disallow_message"]

# Seconds an inline wait sleeps at most before looking at the clock and the engine again.
_INLINE_NAP = 5.0
# Seconds a first-park time may lie in this worker's future before the clocks
# count as disagreeing (hosts kept in sync by NTP differ by milliseconds).
_CLOCK_TOLERANCE = 1.0


class WaitingRoom:
    """Parked requests and inline waits of one policy file, per origin, and the timers that
    move them on.

    :meth:`park` (and :meth:`expect`, :meth:`wait_inline`) is where a request is
    held for its origin, :meth:`_release` where the held requests go back to the
    engine: the seams for anything else that holds requests per origin.
    """

    def __init__(
        self,
        *,
        file: PolicyFile,
        config: RobotsConfig,
        store: PolicyStore,
        reporter: Reporter,
        clock: Callable[[], float],
        crawl: Callable[[Request], None],
        stopping: Callable[[], bool],
        watch: Callable[[], None],
        idle: Callable[[], None],
        active: Callable[[], None],
    ) -> None:
        self.file = file
        self.config = config
        self.store = store
        self.reporter = reporter
        self.clock = clock
        self.crawl = crawl
        self.stopping = stopping
        # Called whenever a request starts waiting (the middleware watches for a close).
        self.watch = watch
        # Called when nothing waits any more (the watch stops: no timer outlives the wait).
        self.idle = idle
        # Called when the first origin with something pending (wait, fetch, timer) appears.
        self.active = active
        self.fetches: FetchCoordinator[OriginState] | None = None
        # Parked requests kept in the shared store too (none without one).
        self.records: Records = NO_RECORDS
        self.closing = False
        self._states: dict[str, OriginState] = {}

    def decide(self, record: PolicyRecord | None, now: float) -> Decision:
        """What a request of this room's file does from ``record`` at ``now``."""
        return self.file.decide(record, now)

    # -- parking -------------------------------------------------------------

    def park(
        self,
        ref: OriginRef,
        request: Request,
        record: PolicyRecord | None,
        now: float,
        *,
        rid: str | None = None,
        ahead: bool = False,
    ) -> None:
        """Keep ``request`` here until its origin's file answers (or its wait runs out).

        ``rid``: the request is recorded in the shared store already (adopted);
        ``ahead``: it had passed the scheduler already (handed back from the
        downloader), so it goes out again before the requests that had not.
        """
        state = self.state(ref)
        # The wait counts from the first park, by whichever worker or run:
        # adopted, taken from a persisting scheduler, or parked again.
        since, lead = first_parked(request.meta, request.url, now)
        if lead > _CLOCK_TOLERANCE:
            self.reporter.clock_ahead(request, lead)
        start_wait(request.meta, request.url, since)
        entry = Parked(request, since + self.config.unreachable_max_wait, rid=rid, ahead=ahead)
        state.parked.append(entry)
        self.reporter.parked()
        if lead and rid is not None:
            # Re-based on this worker's clock: the next adopter must read that too.
            self.records.rewrite(entry)
        self.records.record(entry)
        if record is not None and record.outcome is FetchOutcome.UNREACHABLE:
            self._mark_deferred(entry)
        if state.trigger is None:
            state.trigger = request
        self._advance(state, record, now)
        self._arm_expiry(state, now, entry.deadline)
        self.watch()

    def waiting(self) -> list[Waiting]:
        """Per origin: the requests parked or waiting inline, until when at the latest."""
        return [
            Waiting(
                self.file.kind.origin_key(state.key),
                state.waiting,
                self.file.kind.name,
                max((entry.deadline for entry in state.parked), default=None),
                "ROBOTSTXT_UNREACHABLE_MAX_WAIT",
            )
            for state in self._states.values()
            if state.waiting
        ]

    def parked_requests(self) -> list[Request]:
        """Requests parked now, per origin in the order they arrived."""
        return [entry.request for state in self._states.values() for entry in state.parked]

    @property
    def pending(self) -> bool:
        """Some origin has something pending: a wait, a fetch or a timer."""
        return bool(self._states)

    @property
    def busy(self) -> bool:
        """Something waits here, or a fetch runs: the spider must stay open."""
        return any(state.busy for state in self._states.values())

    def state(self, ref: OriginRef) -> OriginState:
        state = self._states.get(ref.key)
        if state is None:
            first = not self._states
            state = self._states[ref.key] = OriginState(ref)
            if first:
                self.active()
        return state

    def expect(self, ref: OriginRef, request: Request, record: PolicyRecord | None) -> None:
        """``request`` is being handed back to the engine to be parked: get its fetch going.

        The origin is pending from now on (``active`` has run), so the
        ``request_scheduled`` handler is there to park the request when it
        comes back.
        """
        state = self.state(ref)
        if state.trigger is None:
            state.trigger = request
        self._advance(state, record, self.clock(), later=True)

    def refresh(self, ref: OriginRef, request: Request, basis: PolicyRecord | None) -> None:
        """Refresh ``ref``'s file in the background (a stale copy keeps applying)."""
        state = self.state(ref)
        if not state.fetching and not self.stopping():
            state.trigger = state.trigger or request
            self._start_fetch(state, basis)

    def _mark_deferred(self, entry: Parked) -> None:
        if not entry.deferred and self.config.unreachable == "defer":
            entry.deferred = True
            self.reporter.deferred()

    def _start_fetch(
        self, state: OriginState, basis: PolicyRecord | None, *, later: bool = False
    ) -> None:
        assert self.fetches is not None, "WaitingRoom.fetches is set at construction"
        if state.retry_timer is not None:
            state.retry_timer.cancel()
            state.retry_timer = None
        if state.trigger is None and state.parked:
            # A retry the room starts on its own: robots_parsed names the
            # first request still waiting for it.
            state.trigger = state.parked[0].request
        self.fetches.start(state, basis, later=later)

    def _advance(
        self, state: OriginState, record: PolicyRecord | None, now: float, *, later: bool = False
    ) -> None:
        """Make sure something will happen for a waiting origin: a fetch now (``later``:
        on the next reactor turn) or a retry timer."""
        if state.fetching or self.stopping():
            return
        if record is None or record.retry_at is None or now >= record.retry_at:
            self._start_fetch(state, record, later=later)
        elif state.retry_timer is None:
            retry_at = record.retry_at
            state.retry_timer = Timer(retry_at - now, lambda: self._retry_due(state, retry_at))

    def _retry_due(self, state: OriginState, retry_at: float) -> None:
        state.retry_timer = None
        if not self.stopping() and not state.fetching and state.busy:
            record = self.store.get(state.key)
            if record is not None and record.retry_at is not None and record.retry_at > retry_at:
                # Another worker sharing the store made this attempt: wait for its next one.
                self._advance(state, record, self.clock())
            else:
                # The timer is the schedule: fetch whatever the (movable) clock says.
                self._start_fetch(state, record)
        self._forget_if_idle(state)

    def _arm_expiry(self, state: OriginState, now: float, deadline: float | None = None) -> None:
        """Have a timer fire at the earliest deadline of ``state``'s parked requests.

        ``deadline``: of the request just parked. Adopted and re-queued requests
        carry their first park's deadline, which may come before the one the
        timer is armed for: the timer is moved forward then.
        """
        if not state.parked or self.closing:
            return
        if state.expiry_timer is not None:
            if deadline is None or deadline >= state.expiry_at:
                return
            state.expiry_timer.cancel()
            first = deadline
        else:
            first = min(entry.deadline for entry in state.parked)
        state.expiry_at = first
        state.expiry_timer = Timer(first - now, lambda: self._expire(state))

    def _expire(self, state: OriginState) -> None:
        """Send parked requests past their max wait back to the engine, marked to be dropped."""
        state.expiry_timer = None
        if self.stopping():
            return
        now = self.clock()
        expired = [entry for entry in state.parked if entry.deadline <= now]
        state.parked = deque(entry for entry in state.parked if entry.deadline > now)
        for entry in self.records.forget(expired):
            request = entry.request
            since = end_wait(request.meta)
            waited = now - (now if since is None else since)
            request.meta[self.file.gave_up_meta] = self._gave_up(state.key, waited)
            self.crawl(request)
        self._arm_expiry(state, now)
        self._forget_if_idle(state)

    def _gave_up(self, key: str, waited: float) -> str:
        """Why a request that waited ``waited`` seconds since its first park is dropped."""
        kind = self.file.kind
        return (
            f"{kind.name} unreachable for {kind.origin_key(key)}: gave up after waiting "
            f"{waited:.0f} s since "
            f"it was first parked (ROBOTSTXT_UNREACHABLE_MAX_WAIT = "
            f"{self.config.unreachable_max_wait:g} s)"
        )

    # -- after a fetch ----------------------------------------------------------

    def after_fetch(self, state: OriginState, fetched: PolicyRecord | None) -> None:
        """Release, keep waiting, or re-arm: whatever the new record says.

        ``fetched`` is the record this fetch stored (None when another process
        fetched, or nothing was stored). A good copy just fetched releases the
        waiting requests even if it has already expired (a tiny TTL): each of
        them is judged by the fetch it waited for.
        """
        failure, state.failure = state.failure, None
        if failure is not None:
            self._fail(state, failure)
        elif not self.closing:  # closing: parked requests are dropped or saved, not released
            now = self.clock()
            record = self.store.get(state.key)
            if fetched is not None and fetched.outcome is not FetchOutcome.UNREACHABLE:
                self._release(state, fetched)
            else:
                decision = self.decide(record, now)
                if decision.action is not Action.WAIT:
                    self._release(state, record)
                elif state.parked:
                    if decision.unreachable:
                        for entry in state.parked:
                            self._mark_deferred(entry)
                    self._advance(state, record, now)
        # Last: on the classic reactor a waiter resumes its coroutine right here.
        waiters, state.waiters = state.waiters, []
        for waiter in waiters:
            fire(waiter)
        self._forget_if_idle(state)

    def _fail(self, state: OriginState, failure: BaseException) -> None:
        """The fetch failed with the crawl's own exception: every waiting request fails with
        it now (``process_request`` raises it for the parked ones, as it reaches them)."""
        waiters, state.waiters = state.waiters, []
        for waiter in waiters:
            if not waiter.called:
                waiter.errback(Failure(failure))  # type: ignore[no-untyped-call]
        if self.closing:
            return  # parked requests are dropped or saved by the hand-over
        parked, state.parked = state.parked, deque()
        if state.expiry_timer is not None:
            state.expiry_timer.cancel()
            state.expiry_timer = None
        for entry in self.records.forget(list(parked)):
            meta = entry.request.meta
            end_wait(meta)
            meta[FAILED_META] = failure
            self.crawl(entry.request)

    def _release(self, state: OriginState, record: PolicyRecord | None) -> None:
        """Hand every parked request back to the engine, to be judged by the middleware."""
        parked, state.parked = state.parked, deque()
        if state.expiry_timer is not None:
            # Before handing them back: one may be parked again, with a new timer.
            state.expiry_timer.cancel()
            state.expiry_timer = None
        released = 0
        good = record is not None and record.outcome is not FetchOutcome.UNREACHABLE
        # Those that had passed the scheduler first, in their order; then the rest.
        kept = self.records.forget(list(parked))
        ordered = [e for e in kept if e.ahead] + [e for e in kept if not e.ahead]
        for index, entry in enumerate(ordered):
            meta = entry.request.meta
            end_wait(meta)
            if good:
                assert record is not None
                meta[self.file.released_meta] = record.fetched_at
            if entry.deferred:
                released += 1
            if entry.ahead:
                _crawl_ahead(self.crawl, entry.request, index)
            else:
                self.crawl(entry.request)
        if released:
            self.reporter.released(released)

    def _forget_if_idle(self, state: OriginState) -> None:
        if state.busy:
            return
        state.cancel_timers()
        state.trigger = None
        if self._states.get(state.key) is state:
            del self._states[state.key]
            if not self._states:
                self.idle()

    # -- waiting inline ------------------------------------------------------------

    def wait_inline(
        self,
        request: Request,
        ref: OriginRef,
        record: PolicyRecord | None,
    ) -> Coroutine[Any, Any, None]:
        """Wait here, inside ``process_request``, for ``ref``'s file; then judge ``request``.

        The fetch starts now, before the wait is awaited (as the stock middleware
        asks the engine at once); the returned coroutine does the waiting.
        """
        state = self.state(ref)
        if state.trigger is None:
            state.trigger = request
        self._advance(state, record, self.clock())
        return self._wait_inline(request, ref)

    async def _wait_inline(self, request: Request, ref: OriginRef) -> None:
        self.reporter.inline_wait()
        started = self.clock()
        # A request parked before (adopted, re-queued) keeps its first park's deadline.
        since, lead = first_parked(request.meta, request.url, started)
        if lead > _CLOCK_TOLERANCE:
            self.reporter.clock_ahead(request, lead)
        deadline = since + self.config.unreachable_max_wait
        deferred = False
        while True:
            now = self.clock()
            record = self.store.get(ref.key)
            if (
                record is not None
                and record.outcome is not FetchOutcome.UNREACHABLE
                and record.fetched_at >= started
            ):
                # Fetched while we waited: judged by it, even if already expired.
                self.file.judge(request, record)
                if deferred:
                    self.reporter.released()
                return
            decision = self.decide(record, now)
            if decision.action is Action.APPLY:
                if decision.fetch:
                    self.refresh(ref, request, record)
                if deferred:
                    self.reporter.released()
                self.file.judge(request, record if decision.rules else None)
                return
            if decision.action is Action.DROP:
                raise self.reporter.dropped(
                    request, disallow_message(self.file, ref), origin=ref.key
                )
            if decision.unreachable and not deferred:
                deferred = True
                self.reporter.deferred()
            if now >= deadline or self.stopping():
                end_wait(request.meta)
                raise self.reporter.dropped(
                    request, self._gave_up(ref.key, now - since), origin=ref.key
                )
            await self._nap(request, ref, record, min(deadline - now, _INLINE_NAP))

    async def _nap(
        self, request: Request, ref: OriginRef, record: PolicyRecord | None, seconds: float
    ) -> None:
        """Sleep until the origin's next fetch ends, or ``seconds`` at most."""
        state = self.state(ref)
        if state.trigger is None:
            state.trigger = request
        waiter: Deferred[None] = Deferred()
        state.waiters.append(waiter)
        self._advance(state, record, self.clock())
        self.watch()
        timer = Timer(seconds, lambda: fire(waiter))
        try:
            await maybe_deferred_to_future(waiter)
        finally:
            timer.cancel()
            if waiter in state.waiters:
                state.waiters.remove(waiter)
            self._forget_if_idle(state)

    # -- the close -----------------------------------------------------------------

    def shutdown(self) -> list[tuple[str, Parked]]:
        """The spider is closing: cancel timers, end inline waits, hand over the parked requests.

        Returns every parked request with its origin key, taken out of the
        room: the caller keeps them where the crawl goes on (the shared store,
        a persisting scheduler) or drops them with their errback.
        """
        self.closing = True
        taken: list[tuple[str, Parked]] = []
        for state in list(self._states.values()):
            state.cancel_timers()
            parked, state.parked = state.parked, deque()
            taken += [(state.key, entry) for entry in parked]
            waiters, state.waiters = state.waiters, []
            for waiter in waiters:
                fire(waiter)
            self._forget_if_idle(state)
        return taken


def disallow_message(file: PolicyFile, ref: OriginRef) -> str:
    """Why a request of an origin whose ``file`` is unreachable is dropped in
    ``"disallow"`` mode."""
    kind = file.kind
    return (
        f"{kind.name} unreachable for {kind.origin_key(ref.key)} "
        "(ROBOTSTXT_UNREACHABLE = 'disallow')"
    )


# Released requests that had passed the scheduler are enqueued with this priority
# (less their rank): the scheduler sends them out before anything it holds, in
# the order they first came out of it. Their own priority is restored once queued.
_AHEAD_PRIORITY = 1_000_000


def _crawl_ahead(crawl: Callable[[Request], None], request: Request, rank: int) -> None:
    own = request.priority
    request.priority = _AHEAD_PRIORITY - rank
    try:
        crawl(request)
    finally:
        request.priority = own
