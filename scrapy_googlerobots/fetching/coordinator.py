"""One fetch of a policy file per origin at a time, from decision to stored record.

:class:`FetchCoordinator` starts the fetch a waiting origin needs, takes the
store's fetch lease (so a shared store fetches each origin once for all
workers), downloads through :class:`~.fetcher.RobotsFetcher`, has the
:class:`~.policy_file.PolicyFile` turn the outcome into the next
:class:`~scrapy_googlerobots.policy.record.PolicyRecord`, stores it, reports
it, and hands the origin back to the waiting room. One coordinator per file;
it never asks which file it fetches.

:meth:`FetchCoordinator.fetched` is the one place where a fetch's raw result
(the final response, its body, redirects) and the record it stored are both
known: the place for a hook that keeps evidence of every policy file fetched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from scrapy.utils.defer import deferred_from_coro

from scrapy_googlerobots.fetching.failures import is_unreachable
from scrapy_googlerobots.fetching.fetcher import FetchResult
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.runtime.timers import Timer, sleep

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_googlerobots.fetching.fetcher import Download, RobotsFetcher
    from scrapy_googlerobots.fetching.policy_file import FetchReports, PolicyFile
    from scrapy_googlerobots.policy.origin import Origin, OriginRef
    from scrapy_googlerobots.policy.record import FetchTimings, PolicyRecord
    from scrapy_googlerobots.stores.base import PolicyStore

__all__ = ["FetchCoordinator", "FetchingOrigin"]


class FetchingOrigin(Protocol):
    """What the coordinator reads and sets on an origin's live state (the waiting room's)."""

    key: str
    origin: Origin
    ref: OriginRef
    fetching: bool
    trigger: Request | None
    """The request that triggered the pending fetch (``robots_parsed``'s ``request=``)."""
    failure: BaseException | None
    """The crawl's own exception the fetch failed with (not the site's: see failures.py)."""

    @property
    def waiting(self) -> int:
        """Requests waiting for this origin's file."""


_S = TypeVar("_S", bound=FetchingOrigin)

Evidence = Callable[[str, str, FetchResult, "PolicyRecord"], None]
"""Keeps one fetch (``ROBOTSTXT_EVIDENCE``): the file's name, the store key, the result,
the record stored."""

# Longest pause between looks at another worker's lease (its end, or a store outage).
_MAX_LEASE_POLL = 1.0


class _StartTurn:
    """Whether :meth:`FetchCoordinator.start` has returned, and whether its caller asked
    for the fetch's result on a later turn (the request that called for it is on its
    way back through the engine)."""

    __slots__ = ("later", "over")

    def __init__(self, *, later: bool) -> None:
        self.later = later
        self.over = False


class FetchCoordinator(Generic[_S]):
    """Runs the fetches of one policy file in one crawl; ``on_done(state, record)`` follows each."""

    def __init__(
        self,
        *,
        store: PolicyStore,
        file: PolicyFile,
        fetcher: RobotsFetcher,
        timings: FetchTimings,
        clock: Callable[[], float],
        stopping: Callable[[], bool],
        engine_running: Callable[[], bool],
        on_done: Callable[[_S, PolicyRecord | None], None],
        lease_ttl: float,
        evidence: Evidence | None = None,
    ) -> None:
        self.store = store
        self.file = file
        self.fetcher = fetcher
        self.reporter: FetchReports = file.reports
        self.timings = timings
        self.clock = clock
        self.stopping = stopping
        self.engine_running = engine_running
        self.on_done = on_done
        self.lease_ttl = lease_ttl
        # ROBOTSTXT_EVIDENCE: what keeps each fetch (None: off).
        self.evidence = evidence
        # Fetch leases held now (origin key -> renewal), released at once by a stop.
        self._held: dict[str, _LeaseRenewal] = {}

    def start(self, state: _S, basis: PolicyRecord | None, *, later: bool = False) -> None:
        """Start the one fetch of ``state``'s origin; ``basis`` is the record that called for it.

        With the engine running and the lease free, the download is handed to
        the engine right here, as the stock middleware does; otherwise on a
        later reactor turn (a ``spider_opened`` handler may run before other
        middlewares have set themselves up). ``later``: the request that called
        for it is on its way back through the engine, and an answer that comes
        at once is handled on a later turn, once that request is parked; the
        download still starts here (with Scrapy >= 2.14 on the asyncio reactor,
        on the loop's next step, before the engine's next look at the scheduler),
        so it takes that request's place in the downloader: with the downloader
        full, the engine takes no other request out of the scheduler before the
        answer, as with the stock middleware.
        """
        state.fetching = True
        started: Download | None = None
        if self.engine_running() and self.store.acquire_fetch_lease(state.key, self.lease_ttl):
            if self._fetched_elsewhere(state.key, basis):
                self.store.release_fetch_lease(state.key)
            else:
                self.reporter.fetch_started()
                try:
                    started = self.fetcher.start(state.origin)
                except Exception:  # the async path meets (and reports) it again
                    self.store.release_fetch_lease(state.key)
        turn = _StartTurn(later=later)
        done = deferred_from_coro(self._fetch(state, basis, started, turn))
        turn.over = True
        done.addErrback(self.reporter.fetch_bug, state.key)

    async def _fetch(
        self, state: _S, basis: PolicyRecord | None, started: Download | None, turn: _StartTurn
    ) -> None:
        record: PolicyRecord | None = None
        own: BaseException | None = None
        try:
            if started is None:
                await sleep(0.0)
            if started is not None or await self._lease(state, basis):
                renewal = self._held[state.key] = _LeaseRenewal(
                    self.store, state.key, self.lease_ttl
                )
                try:
                    if started is None:
                        self.reporter.fetch_started()
                    result = await self._download(state, started)
                    if turn.later and not turn.over:
                        await sleep(0.0)  # answered at once: not before the caller is parked
                    own = _own_failure(result)
                    if own is None:
                        previous = self.store.get(state.key)
                        record = self.file.record(
                            state.ref, result, previous, self.clock(), self.timings
                        )
                        self.store.put(record)
                finally:
                    renewal.cancel()
                    if self._held.pop(state.key, None) is not None:
                        self.store.release_fetch_lease(state.key)
                if own is not None:
                    # Not the site's doing: nothing is stored, the waiting requests
                    # fail with it (WaitingRoom.after_fetch).
                    state.failure = own
                    self.reporter.own_failure(state.key, own, waiting=state.waiting)
                    return
                assert record is not None
                await self.fetched(state, result, record, previous)
        finally:
            state.fetching = False
            state.trigger = None
            self.on_done(state, record)

    async def fetched(
        self, state: _S, result: FetchResult, record: PolicyRecord, previous: PolicyRecord | None
    ) -> None:
        """A fetch of ``state``'s file stored ``record`` (``previous``: the record before).

        The one place where a fetch's raw result and its record are both known:
        it is reported, then the file does what follows (robots.txt sends
        ``robots_parsed``). The waiting requests are released after this.
        """
        if self.evidence is not None:
            self.evidence(self.file.kind.name, state.key, result, record)
        self.reporter.fetched(
            state.key, result, record, previous, waiting=state.waiting, now=self.clock()
        )
        await self.file.fetched(result, record, state.trigger)

    def release_leases(self) -> int:
        """The spider is closing: give up every fetch lease now; return how many.

        A fetch in flight still stores what it gets, but another worker need
        not wait for it (up to ``ROBOTSTXT_FETCH_LEASE_TTL``): it may fetch at
        once. (A killed worker cannot do this; its leases lapse.)
        """
        held, self._held = self._held, {}
        for key, renewal in held.items():
            renewal.cancel()
            self.store.release_fetch_lease(key)
        return len(held)

    async def _download(self, state: _S, started: Download | None) -> FetchResult:
        try:
            return await self.fetcher.fetch(state.origin, started)
        except Exception as exc:  # a bug; back off as for any failure
            return FetchResult(
                FetchOutcome.UNREACHABLE, f"{type(exc).__name__}: {exc}", exception=exc
            )

    async def _lease(self, state: _S, seen: PolicyRecord | None) -> bool:
        """Take the store's fetch lease; False when another process fetched meanwhile.

        A store shared by several processes grants the lease to one of them;
        the others poll: a record other than ``seen`` (the one they decided to
        fetch on) means someone fetched; a granted lease means the holder's
        lapsed (it died: leases are short and renewed only while a fetch runs)
        or the store is down (a store that cannot answer cannot coordinate, so
        the layered store grants it: the wait ends at the next poll).
        """
        key = state.key
        pause = 0.1
        while not self.store.acquire_fetch_lease(key, self.lease_ttl):
            if pause == 0.1:
                self.reporter.lease_wait()
            await sleep(pause)
            if self.stopping() or self._fetched_elsewhere(key, seen):
                return False
            pause = min(pause * 2, _MAX_LEASE_POLL)
        if self.stopping() or self._fetched_elsewhere(key, seen):
            # The holder finished between our decision and our lease.
            self.store.release_fetch_lease(key)
            return False
        return True

    def _fetched_elsewhere(self, key: str, seen: PolicyRecord | None) -> bool:
        current = self.store.get(key)
        return current is not None and current != seen


class _LeaseRenewal:
    """Renews a fetch lease every third of its lifetime until cancelled (the fetch ended)."""

    __slots__ = ("_key", "_store", "_timer", "_ttl")

    def __init__(self, store: PolicyStore, key: str, ttl: float) -> None:
        self._store = store
        self._key = key
        self._ttl = ttl
        self._timer = Timer(ttl / 3, self._renew)

    def _renew(self) -> None:
        self._timer = Timer(self._ttl / 3, self._renew)
        self._store.acquire_fetch_lease(self._key, self._ttl)

    def cancel(self) -> None:
        self._timer.cancel()


def _own_failure(result: FetchResult) -> BaseException | None:
    """The crawl's own exception ``result`` failed with (a component's bug), or None."""
    exc = result.exception
    if exc is None or result.outcome is not FetchOutcome.UNREACHABLE or is_unreachable(exc):
        return None
    return exc
