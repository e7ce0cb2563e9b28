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
  and waits for it.

:class:`PauseRoom` holds the requests of paused origins outside the scheduler
and the downloader, recorded in the store like requests waiting for robots.txt
(so a stop hands them over and a kill leaves them to be adopted), and sends
them on, in the order they came, when the pause ends.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
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
from scrapy_googlerobots.reporting.slow_down_report import Waiting
from scrapy_googlerobots.runtime.timers import Timer, sleep
from scrapy_googlerobots.stores.pause_feed import FeedHandlers
from scrapy_googlerobots.waiting.origin_state import OWN_DONT_FILTER_META, Parked

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_googlerobots.reporting.explain import RobotsDecision
    from scrapy_googlerobots.reporting.slow_down_report import SlowDownReport
    from scrapy_googlerobots.stores.base import PaceStore
    from scrapy_googlerobots.stores.pause_feed import PauseFeed
    from scrapy_googlerobots.waiting.parked_records import Records

__all__ = [
    "PAUSES_META",
    "POLL_EVERY",
    "POLL_WITH_FEED",
    "SEND_MARGIN",
    "Pause",
    "PauseRoom",
    "SiteSlowDown",
    "SlowDownGate",
]

FeedMaker = Callable[[FeedHandlers], "PauseFeed | None"]
"""Makes the store's feed of pauses (``LayeredPolicyStore.pause_feed``), given its callbacks."""

PAUSES_META = "_robotstxt_pauses"
"""How many pauses a request has waited out (its retry count is given back for each)."""

#: Seconds added to every send slot (see :meth:`SiteSlowDown.slot`).
SEND_MARGIN = 0.1

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


class PauseRoom:
    """Requests held for their origin's pause (see the module doc).

    ``records()`` gives the store's records of waiting requests (kept there
    while they wait); ``crawl`` sends a request back to the engine; ``idle``
    is called when the room empties.
    """

    def __init__(
        self,
        slow_down: SiteSlowDown,
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

    def origins(self) -> dict[str, tuple[int, Pause | None]]:
        """Origin -> (requests held, its pause): what the crawl waits for."""
        return {key: (len(q), self.slow_down.paused.get(key)) for key, q in self._held.items()}

    def waiting(self) -> list[Waiting]:
        """Per origin: the requests held, until when (wall-clock time)."""
        lead = self._wall() - self._clock()
        return [
            Waiting(
                key,
                len(queue),
                "a pause",
                self._timers[key][0] + lead if key in self._timers else None,
                "ROBOTSTXT_SLOW_DOWN_MAX_PAUSE",
            )
            for key, queue in self._held.items()
        ]

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
        entry = Parked(request, pause.until, rid=rid)
        self._records().record(entry)
        self._held.setdefault(key, deque()).append(entry)
        self._arm(key, pause.until)
        self.report.held(request, pause.reason, pause.until - self._clock())

    def _arm(self, key: str, until: float) -> None:
        armed = self._timers.get(key)
        if armed is not None:
            if armed[0] >= until:
                return
            armed[1].cancel()
        self._timers[key] = (until, Timer(until - self._clock(), lambda: self.release(key)))

    def release(self, key: str) -> None:
        """``key``'s pause is over (unless another worker made it longer): send its requests."""
        self._timers.pop(key, None)
        pause = self.slow_down.pause_of(key)
        if pause is not None:
            self._arm(key, pause.until)
            return
        queue = self._held.pop(key, None)
        if queue:
            entries = list(queue)
            kept = self._records().forget(entries)
            for entry in kept:
                self._crawl(entry.request)
            self.report.released(len(kept))
        if not self._held:
            self._idle()

    # -- for the hand-over at a stop (waiting.handover) ---------------------------

    def shutdown(self) -> list[tuple[str, Parked]]:
        """Every held request with its origin key, the room emptied."""
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        entries = [(key, entry) for key, queue in self._held.items() for entry in queue]
        self._held.clear()
        return entries


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

            handlers = FeedHandlers(
                reactor.callFromThread, self._pushed, self._feed_lost, self._feed_back
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
        if ``drop``), the seconds to wait for its send slot, or None (send now)."""
        site = self.site
        pause = site.pause_of(key)
        if pause is not None:
            return pause
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
        pause. Raises ``IgnoreRequest`` during a pause beyond the cap."""
        while True:
            step = self.before_send(request, key)
            if step is None:
                return None
            if not isinstance(step, Pause):
                await sleep(step)
                return None
            if step.drop:
                raise self.dropped(request, step)
            if self._hand_back(request):
                return request
            # Nowhere to hold it (an older Scrapy, engine.download): it waits here.
            await sleep(step.until - time.monotonic())

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

    def hold(self, request: Request, key: str) -> bool:
        """At ``request_scheduled``: hold ``request`` if its origin is paused; True if held."""
        pause = self.site.pause_of(key)
        if pause is None or pause.drop:
            return False  # a drop happens in process_request, where the errback runs
        self.room.hold(key, request, pause)
        return True

    def dropped(self, request: Request, pause: Pause) -> IgnoreRequest:
        """The exception dropping ``request`` during a pause beyond the cap."""
        return IgnoreRequest(self.site.report.dropped(request, pause.reason))
