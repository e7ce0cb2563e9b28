"""One robots.txt fetch per origin at a time, from decision to stored record.

:class:`FetchCoordinator` starts the fetch a waiting origin needs, takes the
store's fetch lease (so a shared store fetches each origin once for all
workers), downloads through :class:`~.fetcher.RobotsFetcher`, turns the
outcome into the next :class:`~scrapy_googlerobots.policy.record.PolicyRecord`,
stores it, reports it, and hands the origin back to the waiting room.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from scrapy.utils.defer import deferred_from_coro

from scrapy_googlerobots.fetching.fetcher import FetchResult
from scrapy_googlerobots.fetching.robots_copy import kept_headers
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import record_after_fetch
from scrapy_googlerobots.policy.slowdown import retry_after_of
from scrapy_googlerobots.runtime.timers import Timer, sleep

if TYPE_CHECKING:
    from scrapy import Request
    from twisted.python.failure import Failure

    from scrapy_googlerobots.fetching.fetcher import Download, RobotsFetcher
    from scrapy_googlerobots.policy.origin import Origin
    from scrapy_googlerobots.policy.record import FetchTimings, ParsedRulesCache, PolicyRecord
    from scrapy_googlerobots.robotstxt import RobotsTxt
    from scrapy_googlerobots.stores.base import PolicyStore

__all__ = ["FetchCoordinator", "FetchReports", "FetchingOrigin"]


class FetchingOrigin(Protocol):
    """What the coordinator reads and sets on an origin's live state (the waiting room's)."""

    key: str
    origin: Origin
    fetching: bool
    trigger: Request | None
    """The request that triggered the pending fetch (``robots_parsed``'s ``request=``)."""

    @property
    def waiting(self) -> int:
        """Requests waiting for this origin's robots.txt."""


class FetchReports(Protocol):
    """What the coordinator tells the user about fetches (the reporting unit implements it)."""

    def fetch_started(self) -> None: ...

    def lease_wait(self) -> None: ...

    def fetch_bug(self, failure: Failure, key: str) -> None: ...

    def fetched(
        self,
        key: str,
        result: FetchResult,
        record: PolicyRecord,
        previous: PolicyRecord | None,
        *,
        waiting: int,
        now: float,
    ) -> None: ...

    async def robots_parsed(
        self, record: PolicyRecord, rules: RobotsTxt, request: Request | None
    ) -> None: ...


_S = TypeVar("_S", bound=FetchingOrigin)

# Longest pause between looks at another worker's lease (its end, or a store outage).
_MAX_LEASE_POLL = 1.0


class FetchCoordinator(Generic[_S]):
    """Runs the robots.txt fetches of one crawl; ``on_done(state, record)`` follows each."""

    def __init__(
        self,
        *,
        store: PolicyStore,
        fetcher: RobotsFetcher,
        reporter: FetchReports,
        rules: ParsedRulesCache,
        timings: FetchTimings,
        clock: Callable[[], float],
        stopping: Callable[[], bool],
        engine_running: Callable[[], bool],
        on_done: Callable[[_S, PolicyRecord | None], None],
        lease_ttl: float,
        robots: bool = True,
    ) -> None:
        self.store = store
        self.fetcher = fetcher
        self.reporter = reporter
        self.rules = rules
        self.timings = timings
        self.clock = clock
        self.stopping = stopping
        self.engine_running = engine_running
        self.on_done = on_done
        self.lease_ttl = lease_ttl
        # False: the file fetched is not robots.txt (tdmrep.json): kept unparsed,
        # and robots_parsed is not sent for it.
        self.robots = robots
        # Fetch leases held now (origin key -> renewal), released at once by a stop.
        self._held: dict[str, _LeaseRenewal] = {}

    def start(self, state: _S, basis: PolicyRecord | None) -> None:
        """Start the one fetch of ``state``'s origin; ``basis`` is the record that called for it.

        With the engine running and the lease free, the download is handed to
        the engine right here, as the stock middleware does; otherwise on a
        later reactor turn (a ``spider_opened`` handler may run before other
        middlewares have set themselves up).
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
        done = deferred_from_coro(self._fetch(state, basis, started))
        done.addErrback(self.reporter.fetch_bug, state.key)

    async def _fetch(self, state: _S, basis: PolicyRecord | None, started: Download | None) -> None:
        record: PolicyRecord | None = None
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
                    previous = self.store.get(state.key)
                    record = self._record(state, result, previous)
                    self.store.put(record)
                finally:
                    renewal.cancel()
                    if self._held.pop(state.key, None) is not None:
                        self.store.release_fetch_lease(state.key)
                self.reporter.fetched(
                    state.key, result, record, previous, waiting=state.waiting, now=self.clock()
                )
                # Only a fetch that yielded a policy (not an unreachable one
                # that merely kept a previous good copy).
                if (
                    self.robots
                    and result.response is not None
                    and result.outcome is not FetchOutcome.UNREACHABLE
                ):
                    rules = self.rules.rules_of(record)
                    await self.reporter.robots_parsed(record, rules, state.trigger)
        finally:
            state.fetching = False
            state.trigger = None
            self.on_done(state, record)

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

    def _record(
        self, state: _S, result: FetchResult, previous: PolicyRecord | None
    ) -> PolicyRecord:
        response = result.response
        # Kept so that the spider's own request of this robots.txt can be
        # answered from the copy (one fetch per origin: robots_copy).
        # (Not for a tdmrep.json: no request of the spider is answered from it.)
        headers = (
            kept_headers(result.outcome, response, url=state.origin.robots_url, whole=result.whole)
            if self.robots
            else None
        )
        return record_after_fetch(
            state.key,
            result.outcome,
            status=result.status,
            body=result.body,
            cache_control=response.headers.getlist(b"Cache-Control") if response else None,
            previous=previous,
            now=self.clock(),
            timings=self.timings,
            headers=headers,
            parse_rules=self.robots,
            retry_after=retry_after_of(response, self.clock()),
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
