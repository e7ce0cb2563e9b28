"""A site that asks to slow down, for every worker: pauses, slow-downs, send slots.

:class:`SiteSlowDown` keeps what the crawl knows of each origin's "slow down"
(rules in :mod:`scrapy_googlerobots.policy.slowdown`):

- a ``429``/``503`` answer with ``Retry-After`` pauses the origin, in the store
  (:class:`~scrapy_googlerobots.stores.base.PaceStore`) so that every worker
  sharing it holds back too; a store that pushes pauses (Redis pub/sub) has every
  worker record it at once (:meth:`SiteSlowDown.learn`), and workers read the
  store's pauses four times a second, once with a feed (:meth:`SiteSlowDown.poll`);
  after the pause the origin is slowed down;
- one without ``Retry-After`` slows it down (a raised gap between requests,
  recovering after successes);
- a request for a slowed origin, or for one paced by its ``Crawl-delay`` in
  a cluster, reserves a send slot in the store (:meth:`SiteSlowDown.slot`)
  and waits for it: in ``process_request`` when the slot is at most
  :data:`INLINE_WAIT` s away, else outside the scheduler and the downloader
  until shortly before it (:meth:`SlowDownGate.before`).

:class:`~.pause_room.PauseRoom` holds the requests of paused origins, and
those waiting for a send slot, outside the scheduler and the downloader.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import IgnoreRequest

from scrapy_googlerobots.fetching.fetcher import ORIGIN_META
from scrapy_googlerobots.policy.slowdown import (
    SLOW_DOWN_STATUSES,
    PauseKind,
    SlowDown,
    parse_retry_after,
    pause_decision,
)
from scrapy_googlerobots.runtime.timers import Timer, sleep
from scrapy_googlerobots.stores.pause_feed import FeedHandlers
from scrapy_googlerobots.waiting.origin_state import OWN_DONT_FILTER_META
from scrapy_googlerobots.waiting.pause_room import (
    PAUSES_META,
    SLOT_META,
    Pause,
    PauseRoom,
    back_from_slot,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_googlerobots.reporting.explain import RobotsDecision
    from scrapy_googlerobots.reporting.slow_down_report import SlowDownReport
    from scrapy_googlerobots.stores.base import PaceStore
    from scrapy_googlerobots.stores.pause_feed import PauseFeed

# PAUSES_META, SLOT_META, Pause and PauseRoom: from .pause_room, where they were split off to.
__all__ = [
    "INLINE_WAIT",
    "PAUSES_META",
    "POLL_EVERY",
    "POLL_WITH_FEED",
    "SEND_MARGIN",
    "SLOT_META",
    "Pause",
    "PauseRoom",
    "SiteSlowDown",
    "SlowDownGate",
]

_SLOT_TRIPS_META = "_robotstxt_slot_trips"

FeedMaker = Callable[[FeedHandlers], "PauseFeed | None"]
"""Makes the store's feed of pauses (``LayeredPolicyStore.pause_feed``), given its callbacks."""

#: Seconds added to every send slot (see :meth:`SiteSlowDown.slot`).
SEND_MARGIN = 0.1

#: A send slot at most this many seconds away is waited for in ``process_request``
#: (in the downloader, as Scrapy's ``DOWNLOAD_DELAY`` waits); a later one outside
#: the scheduler and the downloader, the request released this long before it.
INLINE_WAIT = 0.5

# A request that missed its slot this many times (a congested scheduler kept it
# past its slot) waits for its next one in process_request: each miss costs the
# origin a slot nobody used.
_MAX_SLOT_TRIPS = 3

#: Seconds between two reads of the shared store's pauses (one round trip each).
POLL_EVERY = 0.25

#: The same with a feed pushing every pause as it is set (Redis): the reads are its
#: safety net (a pause set while the feed was away), and its catch-up after an outage.
POLL_WITH_FEED = 1.0

# A pause learned from another worker ending within this many seconds of the one
# known here is the same pause.
_SAME_NEWS = 0.25

# A Retry-After ending within this many seconds of the pause in force is the same
# pause (answers to requests that were on their way when it began).
_SAME_PAUSE = 1.0


class SiteSlowDown:
    """What the crawl knows of origins that asked to slow down (see the module doc).

    ``shared``: the store is shared with other workers (pauses are read back
    from it, crawl delays become cluster-wide send slots).
    """

    def __init__(
        self,
        store: PaceStore,
        report: SlowDownReport,
        *,
        max_pause: float,
        shared: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.report = report
        self.max_pause = max_pause
        self.shared = shared
        self._clock = clock
        self._wall = wall
        self.paused: dict[str, Pause] = {}
        self.slowed: dict[str, SlowDown] = {}
        self.always = False
        """Every request asks :meth:`SlowDownGate.before_send` (Crawl-delay as cluster slots)."""
        self.engaged = False
        """``process_request`` must ask (an attribute, read on the hot path)."""

    def changed(self) -> None:
        """Some origin's pause or slow-down began or ended."""
        self.engaged = self.always or bool(self.paused or self.slowed)

    # -- the hot path ------------------------------------------------------------

    def pause_of(self, key: str) -> Pause | None:
        """``key``'s pause in force, or None."""
        pause = self.paused.get(key)
        if pause is None:
            return None
        if self._clock() >= pause.until:
            del self.paused[key]
            self.changed()
            return None
        return pause

    def describe(self, key: str) -> str | None:
        """What ``key`` asked, for ``explain()``: its pause or its slow-down; None: nothing."""
        pause = self.pause_of(key)
        if pause is not None:
            left = pause.until - self._clock()
            return f"paused for {left:.1f} s more ({pause.reason})"
        state = self.slowed.get(key)
        if state is not None:
            return f"slowed down: {state.delay:g} s between requests"
        return None

    def gap(self, key: str) -> float:
        """Seconds ``key``'s slow-down keeps between two of its requests (0: none)."""
        state = self.slowed.get(key)
        return state.delay if state is not None else 0.0

    def slot(self, key: str, gap: float) -> float:
        """Reserve ``key``'s next send ``gap`` s after the one before: the seconds to wait.

        Slots are :data:`SEND_MARGIN` longer than ``gap``: a send that leaves a
        little late (a busy reactor) never comes closer than ``gap`` to the next.
        """
        wait = self.store.reserve_send(key, gap + SEND_MARGIN)
        self.report.slot(key, wait, shared=self.shared())
        return wait

    # -- answers -----------------------------------------------------------------

    def on_answer(self, key: str, url: str, status: int, retry_after: bytes | None) -> Pause | None:
        """A response of ``key`` arrived: the pause it starts, if any.

        429/503 with a usable ``Retry-After``: a pause (shared through the
        store), then a slow-down; without one: a slow-down. Any other status:
        one success towards the slow-down's recovery.
        """
        if status not in SLOW_DOWN_STATUSES:
            state = self.slowed.get(key)
            if state is not None:
                after = state.after_success()
                if after is None:
                    del self.slowed[key]
                    self.changed()
                    self.report.recovered(key)
                else:
                    self.slowed[key] = after
            return None
        read = parse_retry_after(retry_after, self._wall())
        known = self.pause_of(key)
        now = self._clock()
        if read is not None and read.seconds is not None:
            if known is not None and known.until >= now + read.seconds - _SAME_PAUSE:
                return known  # an answer to a request on its way before the pause began
            decision = pause_decision(read.seconds, self.max_pause)
            value = (retry_after or b"").decode("latin-1").strip()
            reason = f"Retry-After: {value} from <{status} {url}>"
            lasts = self.store.pause_origin(key, decision.seconds, reason)
            pause = self._pause(key, lasts, reason, drop=decision.kind is PauseKind.DROP)
            self.report.paused(key, status, lasts, reason, drop=pause.drop)
            # Then it resumes gently, not with everything held at once.
            self.slowed.setdefault(key, SlowDown(raised_at=now))
            self.changed()
            return pause
        if read is not None and read.problem is not None:
            self.report.bad_retry_after(key, read.problem)
        if known is not None:
            return known  # paused already: its requests wait, nothing more to slow
        current = self.slowed.get(key)
        state = SlowDown.after_answer(current, now)
        if state is not current:
            self.slowed[key] = state
            self.changed()
            self.report.slowed(key, status, state.delay)
        return None

    def poll(self) -> list[str]:
        """Read the pauses other workers set; the origins newly paused here."""
        paused = self.store.paused_origins().items()
        return [key for key, (left, reason) in paused if self.learn(key, left, reason)]

    def learn(self, key: str, left: float, reason: str, *, pushed: bool = False) -> bool:
        """Another worker paused ``key`` for ``left`` s more (read from the store, or
        ``pushed`` by its feed): True when that is news here."""
        now = self._clock()
        known = self.paused.get(key)
        if known is not None and known.until >= now + left - _SAME_NEWS:
            return False  # known already (our own pause, or pushed before it was read)
        self._pause(key, left, reason, drop=left > self.max_pause)
        self.slowed.setdefault(key, SlowDown(raised_at=now))
        self.report.learned_pause(key, left, reason, pushed=pushed)
        self.changed()
        return True

    def _pause(self, key: str, seconds: float, reason: str, *, drop: bool) -> Pause:
        until = self._clock() + seconds
        known = self.paused.get(key)
        if known is not None and known.until >= until:
            return known
        pause = self.paused[key] = Pause(until, reason, drop)
        return pause


class SlowDownGate:
    """Where the crawl meets :class:`SiteSlowDown` and :class:`PauseRoom` (one per crawler).

    - every response (``response_downloaded``, before any middleware's
      ``process_response``, so before ``RetryMiddleware`` re-sends it) tells
      :meth:`SiteSlowDown.on_answer` how the site answered;
    - ``process_request`` asks :meth:`before_send`, while :attr:`active`:
      a request of a paused origin is handed back (and held at
      ``request_scheduled``, :meth:`hold`), one of a paced or slowed origin
      waits for its send slot;
    - with a shared store the store's pauses are read every :data:`POLL_EVERY` s; a
      store that pushes them as they are set (Redis: ``feed`` makes its
      :class:`~scrapy_googlerobots.stores.pause_feed.PauseFeed`) has them recorded at
      once, and read every :data:`POLL_WITH_FEED` s as a safety net.

    ``delay_of(key)``: the ``Crawl-delay`` paced for the origin across the
    cluster (None: none, or pacing stays per worker).
    """

    def __init__(
        self,
        crawler: Crawler,
        site: SiteSlowDown,
        room: PauseRoom,
        *,
        origin_key: Callable[[str], str | None],
        delay_of: Callable[[Request, str], float | None] | None,
        hand_back: Callable[[Request], bool],
        listen: Callable[[], None],
        answers: bool,
        poll: bool,
        feed: FeedMaker | None = None,
    ) -> None:
        self.crawler = crawler
        self.site = site
        self.room = room
        self._origin_key = origin_key
        self._delay_of = delay_of
        self._hand_back = hand_back
        self._listen = listen
        self._poll = poll
        self._poll_timer: Timer | None = None
        self._make_feed = feed
        self._feed: PauseFeed | None = None
        self._feed_up = False
        self._closed = False
        site.always = delay_of is not None
        site.changed()
        if answers:
            crawler.signals.connect(self._on_response, signal=signals.response_downloaded)

    def explained(self, decision: RobotsDecision | None, url: str) -> RobotsDecision | None:
        """``decision`` with the slow-down or pause of ``url``'s origin, if any (``explain()``)."""
        if decision is None or not self.site.engaged:
            return decision
        key = self._origin_key(url)
        said = self.site.describe(key) if key is not None else None
        return decision if said is None else replace(decision, slow_down=said)

    @property
    def active(self) -> bool:
        """``process_request`` must ask :meth:`before_send` (some origin is paused, slowed,
        or paced across the cluster). The hot path reads ``site.engaged`` itself."""
        return self.site.engaged

    def start(self) -> None:
        """The spider is open: subscribe to the store's feed of pauses, if it has one, then
        read its pauses now (before any request is adopted from another worker) and from
        then on."""
        if self._make_feed is not None:
            from twisted.internet import reactor
            from twisted.internet.interfaces import IReactorFromThreads

            # (Typed through the interface: Twisted 24.3 ships the module untyped.)
            threads: IReactorFromThreads = reactor  # type: ignore[assignment,unused-ignore]
            handlers = FeedHandlers(
                threads.callFromThread, self._pushed, self._feed_lost, self._feed_back
            )
            self._feed = self._make_feed(handlers)
            if self._feed is not None:
                self._feed_up = self._feed.start()
        if self._poll:
            self._read_pauses()

    def close(self) -> None:
        self._closed = True
        timer, self._poll_timer = self._poll_timer, None
        if timer is not None:
            timer.cancel()
        feed, self._feed = self._feed, None
        if feed is not None:
            feed.stop()

    def _read_pauses(self) -> None:
        if self._closed:
            return
        try:
            if self.site.poll():
                self._listen()
        finally:
            # While the feed pushes every pause, the reads are only its safety net.
            every = POLL_WITH_FEED if self._feed_up else POLL_EVERY
            self._poll_timer = Timer(every, self._read_pauses)

    # -- the feed (its thread delivers these on the reactor) -----------------------

    def _pushed(self, key: str, left: float, reason: str) -> None:
        if not self._closed and self.site.learn(key, left, reason, pushed=True):
            self._listen()

    def _feed_lost(self, _: BaseException) -> None:
        self._feed_up = False  # the store is read four times a second meanwhile

    def _feed_back(self) -> None:
        if self._closed:
            return
        self._feed_up = True
        # Pauses set while it was away were not pushed: read them now.
        timer, self._poll_timer = self._poll_timer, None
        if timer is not None:
            timer.cancel()
        self._read_pauses()

    # -- responses ---------------------------------------------------------------

    def _on_response(self, response: Response, request: Request, **_: Any) -> None:
        status = response.status
        site = self.site
        if status not in SLOW_DOWN_STATUSES and not site.slowed:
            return  # the common case: nothing asked, nothing to recover from
        if ORIGIN_META in request.meta:
            return  # a policy file's fetch: its backoff honours Retry-After
        key = self._origin_key(request.url)
        if key is None:
            return
        pause = site.on_answer(key, request.url, status, response.headers.get(b"Retry-After"))
        if pause is not None:
            self._listen()

    # -- requests ----------------------------------------------------------------

    def before_send(self, request: Request, key: str) -> Pause | float | None:
        """``request`` of ``key`` is about to be sent: its origin's pause (hold it, or drop it
        if ``drop``), the seconds to wait for its send slot, or None (send now).

        A request back from waiting for its slot (:data:`SLOT_META`) keeps that slot
        unless it missed it by more than :data:`SEND_MARGIN` (a later send could come
        closer than the gap to the next slot's holder): then it reserves a new one.
        """
        site = self.site
        slot = back_from_slot(request)
        pause = site.pause_of(key)
        if pause is not None:
            return pause  # after it, a fresh slot
        if slot is not None:
            left = slot - time.time()
            if left >= -SEND_MARGIN:
                return left if left > 0 else None
            site.report.slot_missed(request, -left)
        gap = site.gap(key)
        if self._delay_of is not None:
            delay = self._delay_of(request, key)
            if delay is not None and delay > gap:
                gap = delay
        if gap <= 0:
            return None
        wait = site.slot(key, gap)
        return wait if wait > 0 else None

    async def before(self, request: Request, key: str) -> Request | None:
        """``process_request``, while :attr:`active`: None once ``request`` may go (after
        waiting for its send slot), or the request handed back to be held for its origin's
        pause or, more than :data:`INLINE_WAIT` s ahead, its send slot. Raises
        ``IgnoreRequest`` during a pause beyond the cap."""
        while True:
            step = self.before_send(request, key)
            if step is None:
                request.meta.pop(_SLOT_TRIPS_META, None)
                return None
            if not isinstance(step, Pause):
                if step > INLINE_WAIT and self._hand_back_for_slot(request, step):
                    return request
                slot = time.time() + step
                await sleep(step)
                if self.site.pause_of(key) is not None:
                    continue  # paused while it waited: held for the pause instead
                late = time.time() - slot
                if late > SEND_MARGIN:
                    # The process stalled past its slot: a send now could come closer
                    # than the gap to the next slot's holder.
                    self.site.report.slot_missed(request, late)
                    continue
                request.meta.pop(_SLOT_TRIPS_META, None)
                return None
            if step.drop:
                raise self.dropped(request, step)
            if self._hand_back(request):
                return request
            # Nowhere to hold it (an older Scrapy, engine.download): it waits here.
            await sleep(step.until - time.monotonic())

    def _hand_back_for_slot(self, request: Request, wait: float) -> bool:
        """Hand ``request`` back to be held until shortly before its slot, ``wait`` s away;
        False: it waits in ``process_request`` (it missed slots before, or cannot go back)."""
        meta = request.meta
        trips = meta.get(_SLOT_TRIPS_META, 0)
        if not isinstance(trips, int) or trips >= _MAX_SLOT_TRIPS:
            return False
        meta[SLOT_META] = time.time() + wait
        if not self._hand_back(request):
            del meta[SLOT_META]
            return False
        meta[_SLOT_TRIPS_META] = trips + 1
        return True

    def held_again(self, request: Request, response: Response) -> Request | None:
        """A 429/503 that paused its origin reached ``process_response`` (RetryMiddleware
        did not re-send it): the request again, to be held for the pause; None when the
        spider takes the answer itself (``dont_retry``, ``handle_httpstatus_*``)."""
        meta = request.meta
        if (
            meta.get("dont_retry")
            or meta.get("dont_obey_robotstxt")
            or meta.get("handle_httpstatus_all")
            or response.status in meta.get("handle_httpstatus_list", ())
        ):
            return None
        key = self._origin_key(request.url)
        pause = self.site.pause_of(key) if key is not None else None
        if pause is None or pause.drop:
            return None
        again = request.copy()
        if not again.dont_filter:
            again.meta[OWN_DONT_FILTER_META] = True
            again.dont_filter = True
        return again

    def holds(self, request: Request, key: str) -> bool:
        """At ``request_scheduled``: ``request`` may have to be held (its origin is paused,
        or it was handed back to wait for its send slot)."""
        return SLOT_META in request.meta or (
            bool(self.site.paused) and self.site.pause_of(key) is not None
        )

    def hold(self, request: Request, key: str) -> bool:
        """At ``request_scheduled``: hold ``request`` if its origin is paused, or until shortly
        before its send slot; True if held."""
        pause = self.site.pause_of(key)
        if pause is not None:
            if pause.drop:
                return False  # a drop happens in process_request, where the errback runs
            request.meta.pop(SLOT_META, None)  # after the pause it takes a fresh slot
            self.room.hold(key, request, pause)
            return True
        slot = request.meta.get(SLOT_META)
        if not isinstance(slot, float):
            return False
        now = time.monotonic()
        until = now + slot - time.time() - INLINE_WAIT
        if until <= now:
            return False  # released, or due soon: process_request waits out the rest
        self.room.hold_for_slot(key, request, until)
        return True

    def dropped(self, request: Request, pause: Pause) -> IgnoreRequest:
        """The exception dropping ``request`` during a pause beyond the cap."""
        return IgnoreRequest(self.site.report.dropped(request, pause.reason))
