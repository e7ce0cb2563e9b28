"""A local in-memory layer in front of a persistent or shared policy store.

Every request asks the store for its origin's record, so the hot path must not
touch SQLite or Redis: :class:`LayeredPolicyStore` answers from a local
:class:`~scrapy_googlerobots.stores.base.MemoryPolicyStore` and re-reads the shared
store only when the local copy is older than ``local_ttl`` seconds or the
record itself needs attention (expired, or its retry time has come — the
moments another worker may have written a newer one).

When the shared store fails or answers slower than ``timeout`` it is taken out
of the path: the layer serves and keeps local records, logs one WARNING per
outage and one INFO when the store answers again, counts every failure in
``robotstxt/store/errors``, and probes the store again with a growing pause,
so a dead store costs at most one failed call per pause. A shared store that
pushes pauses (Redis, :meth:`LayeredPolicyStore.pause_feed`) counts a lost feed
connection as such a failure.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.stores.base import (
    STORE_ERRORS_STAT,
    PaceStore,
    ParkedStore,
    PolicyStore,
    StatsLike,
)
from scrapy_googlerobots.stores.memory import MemoryPolicyStore
from scrapy_googlerobots.stores.pace import LocalPace

if TYPE_CHECKING:
    from scrapy_googlerobots.stores.pause_feed import FeedHandlers, PauseFeed

__all__ = ["PACE_LOCAL_STAT", "LayeredPolicyStore", "relevant_until"]

logger = logging.getLogger(__name__)

STORE_OUTAGES_STAT = "robotstxt/store/outages"
"""Times the shared store was taken out of the path (one per outage)."""

PACE_LOCAL_STAT = "robotstxt/pace/local_fallback"
"""Send slots reserved and pauses set by this worker alone: the shared store did not answer."""

# Probing a failed store again: first after this many seconds, doubling up to
# the maximum, so a hung store blocks the reactor for ``timeout`` at most once
# per pause.
_PROBE_FIRST = 1.0
_PROBE_MAX = 30.0

# Most entries of the hot-path index (fewer with a smaller ROBOTSTXT_CACHE_SIZE).
_FRESH_SIZE = 10_000

_T = TypeVar("_T")


def relevant_until(record: PolicyRecord, allow_after: float) -> float:
    """When ``record`` stops mattering: past it, a store may forget it.

    A fresh copy matters until it expires; the last good copy and "unreachable
    since" matter for ``allow_after`` seconds (``ROBOTSTXT_UNREACHABLE_ALLOW_AFTER``:
    the stale copy is what a failed refresh falls back on, and the start of an
    outage is what the 30-day rule counts from).
    """
    until = record.expires_at
    if record.outcome is not FetchOutcome.UNREACHABLE:
        until = max(until, record.fetched_at + allow_after)
    if record.unreachable_since is not None:
        until = max(until, record.unreachable_since + allow_after)
    if record.retry_at is not None:
        until = max(until, record.retry_at)
    return until


def _due(record: PolicyRecord) -> float:
    """When the record is due for a fetch: from then on another worker may have done it."""
    return record.retry_at if record.retry_at is not None else record.expires_at


class LayeredPolicyStore:
    """A :class:`PolicyStore`: a local LRU layer in front of ``shared``.

    ``local`` is the local layer (default: a :class:`MemoryPolicyStore` of
    ``local_size`` origins, None meaning the default memory budget);
    ``clock`` is the middleware's record clock (decides when a record is due);
    ``monotonic`` times the local layer's ``local_ttl`` and the probe pauses.
    """

    def __init__(
        self,
        shared: PolicyStore,
        *,
        description: str,
        local_size: int | None = None,
        local: MemoryPolicyStore | None = None,
        local_ttl: float = 60.0,
        timeout: float = 1.0,
        stats: StatsLike | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.shared = shared
        self._parked = shared if isinstance(shared, ParkedStore) else None
        self._pace = shared if isinstance(shared, PaceStore) else None
        # Per-worker pacing while the shared store is out (and for stores without pace).
        self._local_pace = LocalPace(monotonic)
        self._pace_fallback_warned = False
        self.description = description
        self.local = local if local is not None else MemoryPolicyStore(max_size=local_size)
        self.local_ttl = local_ttl
        self.timeout = timeout
        self._stats = stats
        self._clock = clock
        self._monotonic = monotonic
        # The hot path's index: origin -> (record, monotonic time until which
        # it needs no re-read, record-clock time at which it is due for a
        # fetch). Filled when a record is checked against the shared store;
        # bounded (its records hold parsed rules).
        self._fresh: OrderedDict[str, tuple[PolicyRecord, float, float]] = OrderedDict()
        self._fresh_size = min(self.local.max_size or _FRESH_SIZE, _FRESH_SIZE)
        # Origins written locally while the shared store was out; pushed to it
        # on recovery unless it holds a good copy at least as recent.
        self._dirty: set[str] = set()
        self._down_since: float | None = None
        self._probe_at = 0.0
        self._probe_pause = _PROBE_FIRST

    @property
    def degraded(self) -> bool:
        """True while the shared store is out of the path."""
        return self._down_since is not None

    # -- PolicyStore -----------------------------------------------------

    def get(self, origin: str) -> PolicyRecord | None:
        entry = self._fresh.get(origin)
        if entry is not None:
            record, until, due = entry
            if self._monotonic() < until and self._clock() < due:
                return record
        local = self.local.get(origin)
        now = self._monotonic()
        if not self._shared_usable(now):
            return local
        ok, shared = self._call("get", self.shared.get, origin)
        if not ok:
            return local
        if shared is None:
            # Unknown there, or forgotten (expired key, flushed Redis): our
            # copy, if any, is still the best knowledge there is.
            if local is not None:
                self._mark_checked(local, now)
            return local
        if local is not None and local.rules is not None and _same_copy(local, shared):
            # Keep the parsed rules: re-parsing the same body on every
            # re-read would put the parser back on the hot path.
            shared = dataclasses.replace(shared, rules=local.rules)
        self.local.put(shared)
        self._mark_checked(shared, now)
        self._dirty.discard(origin)
        return shared

    def put(self, record: PolicyRecord) -> None:
        self.local.put(record)
        now = self._monotonic()
        if self._shared_usable(now):
            ok, _ = self._call("put", self.shared.put, record)
            if ok:
                self._dirty.discard(record.origin)
                self._mark_checked(record, now)
                return
        # Not in the shared store: the hot-path index must not serve the old copy.
        self._fresh.pop(record.origin, None)
        self._dirty.add(record.origin)

    def acquire_fetch_lease(self, origin: str, ttl: float) -> bool:
        if not self._shared_usable(self._monotonic()):
            return True
        ok, granted = self._call(
            "acquire_fetch_lease", self.shared.acquire_fetch_lease, origin, ttl
        )
        # A store that cannot answer cannot coordinate: fetch ourselves.
        return bool(granted) if ok else True

    def release_fetch_lease(self, origin: str) -> None:
        if self._shared_usable(self._monotonic()):
            self._call("release_fetch_lease", self.shared.release_fetch_lease, origin)

    # -- ParkedStore, when the shared store is one -------------------------

    @property
    def parked(self) -> ParkedStore | None:
        """The shared store's side for parked requests, if it has one."""
        return self._parked

    def keep_parked(self, scope: str, rid: str, data: bytes, ttl: float) -> bool:
        """Record a parked request; False when the store cannot (it stays local only)."""
        parked = self.parked
        if parked is None or not self._shared_usable(self._monotonic()):
            return False
        ok, _ = self._call("keep_parked", parked.keep_parked, scope, rid, data, ttl)
        return ok

    def forget_parked(self, scope: str, rids: Sequence[str]) -> list[str] | None:
        """Delete our records; the ids still ours, or None when the store cannot tell."""
        parked = self.parked
        if parked is None or not rids:
            return list(rids)
        if not self._shared_usable(self._monotonic()):
            return None
        ok, ours = self._call("forget_parked", parked.forget_parked, scope, rids)
        return ours if ok else None

    def renew_parked_lease(self, scope: str, ttl: float) -> bool:
        parked = self.parked
        if parked is None or not self._shared_usable(self._monotonic()):
            return False
        ok, _ = self._call("renew_parked_lease", parked.renew_parked_lease, scope, ttl)
        return ok

    def release_parked_lease(self, scope: str) -> bool:
        parked = self.parked
        if parked is None or not self._shared_usable(self._monotonic()):
            return False
        ok, _ = self._call("release_parked_lease", parked.release_parked_lease, scope)
        return ok

    def adopt_parked(self, scope: str, ttl: float) -> list[tuple[str, bytes]]:
        parked = self.parked
        if parked is None or not self._shared_usable(self._monotonic()):
            return []
        ok, taken = self._call("adopt_parked", parked.adopt_parked, scope, ttl)
        return taken or [] if ok else []

    # -- PaceStore: the shared store's, or this worker's while it is out -----

    @property
    def pace_across_hosts(self) -> bool:
        """The shared store is one a cluster shares (Redis): ``Crawl-delay`` becomes its send
        slots. SQLite (one host, usually one process) keeps the per-worker pacing."""
        return self._pace is not None and bool(getattr(self.shared, "shared_by_hosts", False))

    @property
    def shares_pace(self) -> bool:
        """True when slots and pauses are shared with other processes (now)."""
        return self._pace is not None and not self.degraded

    def reserve_send(self, origin: str, gap: float) -> float:
        pace = self._pace
        if pace is not None and self._shared_usable(self._monotonic()):
            ok, wait = self._call("reserve_send", pace.reserve_send, origin, gap)
            if ok and wait is not None:
                return wait
        self._pace_locally()
        return self._local_pace.reserve_send(origin, gap)

    def pause_origin(self, origin: str, seconds: float, reason: str) -> float:
        local = self._local_pace.pause_origin(origin, seconds, reason)
        pace = self._pace
        if pace is not None and self._shared_usable(self._monotonic()):
            ok, lasts = self._call("pause_origin", pace.pause_origin, origin, seconds, reason)
            if ok and lasts is not None:
                return lasts
        self._pace_locally()
        return local

    def paused_origins(self) -> dict[str, tuple[float, str]]:
        pace = self._pace
        if pace is not None and self._shared_usable(self._monotonic()):
            ok, paused = self._call("paused_origins", pace.paused_origins)
            if ok and paused is not None:
                return {**self._local_pace.paused_origins(), **paused}
        return self._local_pace.paused_origins()

    def pause_feed(self, handlers: FeedHandlers) -> PauseFeed | None:
        """The shared store's feed of pauses as other workers set them (Redis; not started),
        or None (the pauses are to be read with :meth:`paused_origins`).

        A lost feed connection is the store failing (:meth:`_feed_lost`): one WARNING
        per outage, counted, then ``handlers.on_lost``.
        """
        make = getattr(self.shared, "pause_feed", None) if self._pace is not None else None
        if make is None:
            return None
        on_lost = handlers.on_lost

        def lost(exc: BaseException) -> None:
            self._feed_lost(exc)
            on_lost(exc)

        feed: PauseFeed = make(dataclasses.replace(handlers, on_lost=lost))
        return feed

    def _feed_lost(self, exc: BaseException) -> None:
        if self._down_since is None:
            self._failed("pause feed", exc)
        else:  # the outage is known (and said) already
            if self._stats is not None:
                self._stats.inc_value(STORE_ERRORS_STAT)
            logger.debug("robots.txt store %s: pause feed lost too: %s", self.description, exc)

    def _pace_locally(self) -> None:
        if self._pace is None:
            return
        if self._stats is not None:
            self._stats.inc_value(PACE_LOCAL_STAT)
        if not self._pace_fallback_warned:
            self._pace_fallback_warned = True
            logger.warning(
                "robots.txt store %s does not answer: each worker now paces origins and keeps "
                "their pauses on its own (so N workers may send up to N times as fast) until "
                "it answers again",
                self.description,
            )

    def close(self) -> None:
        try:
            self.shared.close()
        except Exception:  # closing must not fail a crawl's shutdown
            logger.debug("Closing robots.txt store %s failed", self.description, exc_info=True)
        self.local.close()
        self._fresh.clear()

    # -- health ----------------------------------------------------------

    def _mark_checked(self, record: PolicyRecord, now: float) -> None:
        origin = record.origin
        self._fresh[origin] = (record, now + self.local_ttl, _due(record))
        self._fresh.move_to_end(origin)
        if len(self._fresh) > self._fresh_size:
            self._fresh.popitem(last=False)

    def _shared_usable(self, now: float) -> bool:
        return self._down_since is None or now >= self._probe_at

    def _call(self, what: str, func: Callable[..., _T], *args: Any) -> tuple[bool, _T | None]:
        """Run one shared-store operation; (False, None) if it failed or was too slow."""
        started = time.perf_counter()
        try:
            result = func(*args)
        except Exception as exc:  # any store failure degrades, never crashes
            self._failed(what, exc)
            return False, None
        elapsed = time.perf_counter() - started
        if elapsed > self.timeout:
            self._failed(what, TimeoutError(f"{what} took {elapsed:.3f}s > {self.timeout:g}s"))
            # The answer is still right, only late: use it.
            return True, result
        if self._down_since is not None:
            self._recovered()
        return True, result

    def _failed(self, what: str, exc: BaseException) -> None:
        if self._stats is not None:
            self._stats.inc_value(STORE_ERRORS_STAT)
        now = self._monotonic()
        if self._down_since is None:
            self._down_since = now
            self._probe_pause = _PROBE_FIRST
            if self._stats is not None:
                self._stats.inc_value(STORE_OUTAGES_STAT)
            logger.warning(
                "robots.txt store %s failed (%s: %s: %s); using the local cache only "
                "until it answers again",
                self.description,
                what,
                type(exc).__name__,
                exc,
            )
        else:
            self._probe_pause = min(self._probe_pause * 2, _PROBE_MAX)
            logger.debug("robots.txt store %s still failing: %s: %s", self.description, what, exc)
        self._probe_at = now + self._probe_pause

    def _recovered(self) -> None:
        assert self._down_since is not None
        outage = self._monotonic() - self._down_since
        self._down_since = None
        self._probe_pause = _PROBE_FIRST
        self._pace_fallback_warned = False
        logger.info(
            "robots.txt store %s is back after %.1fs; using it again", self.description, outage
        )
        self._flush_dirty()

    def _flush_dirty(self) -> None:
        """Write records kept locally during the outage where they are news to the shared store.

        A record goes up when the shared store has none for its origin, or an
        older good copy than ours (we fetched during the outage); a copy at
        least as recent, written by another worker meanwhile, is left alone.
        """
        dirty, self._dirty = self._dirty, set()
        for origin in dirty:
            record = self.local.get(origin)
            if record is None:
                continue
            ok, existing = self._call("get", self.shared.get, origin)
            if ok and (existing is None or existing.fetched_at < record.fetched_at):
                ok, _ = self._call("put", self.shared.put, record)
            if not ok:
                # Down again: keep everything not yet written for next time.
                self._dirty |= dirty
                return


def _same_copy(a: PolicyRecord, b: PolicyRecord) -> bool:
    # Parsed rules depend on the body alone.
    return a.outcome is b.outcome and a.body == b.body
