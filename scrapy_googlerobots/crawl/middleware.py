"""GoogleRobotsTxtMiddleware: Scrapy's robots.txt middleware, with Google's rules (SPEC part B).

The class is the Scrapy shell: it reads the settings, wires the signals,
answers :meth:`~GoogleRobotsTxtMiddleware.process_request` from the cache (the
hot path) and delegates everything else:

- the decision on a cached record: :func:`scrapy_googlerobots.policy.decision.decide`;
- waiting requests: :class:`~scrapy_googlerobots.waiting.waiting_room.WaitingRoom`;
- fetching: :class:`~scrapy_googlerobots.fetching.coordinator.FetchCoordinator` and
  :class:`~scrapy_googlerobots.fetching.fetcher.RobotsFetcher`;
- log lines, stats, signals: :class:`~scrapy_googlerobots.reporting.reporter.Reporter`.

How a request meets robots.txt:

1. :meth:`process_request` answers from the cache (the hot path). A request
   of an origin with a fresh copy meets no other handler of ours.
2. While some origin has a fetch, a wait or a retry pending, a
   ``request_scheduled`` handler is connected: a request whose origin has no
   usable policy is *parked* there, before the scheduler, in the waiting room
   (outside the downloader too), and its origin's one fetch starts. The
   handler is disconnected once nothing is pending.
3. A request that reaches :meth:`process_request` with no usable policy
   (scheduled while nothing was pending, or expired in the scheduler) starts
   its origin's fetch, which connects the handler, and is handed back to the
   engine once, with ``dont_filter`` (it passed the duplicate filter already),
   to be parked. One that comes straight back (``engine.download`` re-downloads
   what it is handed), or that cannot be handed back (a test double's engine,
   Scrapy < 2.11.2), waits inline, as the stock middleware does.
4. When the fetch yields a policy, the parked requests go back to the engine
   and :meth:`process_request` judges each by the copy it waited for. A request
   parked at ``request_scheduled`` meets the duplicate filter once, on release.

Once the spider begins closing, no fetch starts and every wait ends, and the
parked requests are handed over where the crawl goes on
(:class:`~scrapy_googlerobots.waiting.handover.HandOver`): left in the shared store for
another worker or the resumed crawl to adopt, or put back into a scheduler
that persists its queue; only with neither do they get their errback.

A request of the spider for an origin's robots.txt itself (``SitemapSpider``'s
``sitemap_urls``, any callback's) is answered from the copy the middleware
fetched when that copy can stand for the download
(:mod:`~scrapy_googlerobots.fetching.robots_copy`): one fetch per origin.
:meth:`GoogleRobotsTxtMiddleware.sitemaps` gives an origin's ``Sitemap:``
lines from what the crawl knows.

AI usage preferences (robots.txt ``Content-Usage`` / ``Content-Signal`` rules,
the ``Content-Usage`` response header) are checked by :class:`~.usage.UsageGate`:
in :meth:`process_request` only for origins whose robots.txt has usage rules,
in :meth:`process_response` only for responses with the header or of such origins.

TDMRep (:class:`~scrapy_googlerobots.optouts.tdm_gate.TdmGate`) applies only to
requests that declare a use it covers (``train-ai``, ``ai-use``): once robots.txt
allows one, its origin's ``/.well-known/tdmrep.json`` is a second per-origin
policy, fetched, stored and waited for exactly like robots.txt (store key
``tdmrep|<origin key>``, a second :class:`~.tdm_room.TdmWaitingRoom`); its
header fields and meta tags are read in :meth:`process_response`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy import Request, signals
from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred, fail, succeed

from scrapy_googlerobots.crawl.lifecycle import CloseWatch
from scrapy_googlerobots.crawl.stock_parser import GoogleRobotParser
from scrapy_googlerobots.fetching.coordinator import FetchCoordinator, FetchReports
from scrapy_googlerobots.fetching.fetcher import RobotsFetcher
from scrapy_googlerobots.fetching.robots_copy import copy_response, request_fits
from scrapy_googlerobots.fetching.tdmrep_fetcher import TdmRepFetcher
from scrapy_googlerobots.optouts.page_directives import reader_for
from scrapy_googlerobots.optouts.tdm_gate import TdmGate
from scrapy_googlerobots.optouts.usage_gate import USAGE_META, UsageGate
from scrapy_googlerobots.pacing.crawl_delay import CrawlPacer, DelayLookup, applied_delay
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.decision import Action, is_the_copy_waited_for
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import OriginRef, origin_of
from scrapy_googlerobots.policy.record import FetchTimings, ParsedRulesCache
from scrapy_googlerobots.policy.slowdown import SLOW_DOWN_STATUSES
from scrapy_googlerobots.policy.tdm import tdm_store_key
from scrapy_googlerobots.reporting.explain import RobotsDecision, explain_rules
from scrapy_googlerobots.reporting.reporter import FORBIDDEN_MESSAGE, Reporter
from scrapy_googlerobots.reporting.slow_down_report import SlowDownReport
from scrapy_googlerobots.reporting.summary import CrawlSummary
from scrapy_googlerobots.reporting.tdm_reports import TdmReports
from scrapy_googlerobots.runtime.agents import AgentTokens
from scrapy_googlerobots.runtime.config import RobotsConfig
from scrapy_googlerobots.runtime.scrapy_compat import (
    PROCESS_REQUEST_IS_COROUTINE,
    REQUEST_SCHEDULED_CAN_DROP,
    call_before_scheduler_close,
    crawler_engine,
    duplicate_filter,
    engine_is_running,
    engine_takes_requests_back,
)
from scrapy_googlerobots.runtime.timers import Timer, sleep
from scrapy_googlerobots.stores.factory import build_store
from scrapy_googlerobots.stores.layered import LayeredPolicyStore
from scrapy_googlerobots.tdmrep import resolve as resolve_tdm
from scrapy_googlerobots.waiting.handover import HandOver
from scrapy_googlerobots.waiting.legacy_journal import take_up_legacy_journal
from scrapy_googlerobots.waiting.origin_state import (
    DROP_META,
    HANDED_BACK_META,
    OWN_DONT_FILTER_META,
    RELEASED_META,
    OriginState,
    Parked,
    end_wait,
)
from scrapy_googlerobots.waiting.parked_records import (
    NO_RECORDS,
    ParkedRecords,
    Records,
)
from scrapy_googlerobots.waiting.slow_down import Pause, PauseRoom, SiteSlowDown, SlowDownGate
from scrapy_googlerobots.waiting.tdm_room import (
    TDM_GAVE_UP_META,
    TDM_RELEASED_META,
    TdmWaitingRoom,
    no_rules,
)
from scrapy_googlerobots.waiting.waiting_room import WaitingRoom, disallow_message

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.robotstxt import RobotsTxt

__all__ = ["FORBIDDEN_MESSAGE", "GoogleRobotsTxtMiddleware"]

# Largest scheme://authority prefix remembered by the origin memo (longer
# ones, e.g. huge data: URLs, are resolved each time instead of stored).
_MEMO_KEY_MAX = 512
# Entries of the origin memo (cleared when full): a few times the origins with
# requests in flight, independent of how many origins the crawl meets.
_MEMO_SIZE = 10_000
_PARSED_RULES_SIZE = 4_096
_UNSEEN: Any = object()

_Room = TypeVar("_Room", bound=WaitingRoom)
# A request whose URL ends so may be for its origin's robots.txt (then answered
# from the copy: _serve).
_ROBOTS_PATH = "/robots.txt"


class GoogleRobotsTxtMiddleware:
    """Downloader middleware obeying robots.txt the way Googlebot does (see the module doc).

    ``clock`` (seconds, default :func:`time.time`) dates cache records and
    waits; tests pass a movable one through a subclass.
    """

    DOWNLOAD_PRIORITY: int = 1000

    def __init__(self, crawler: Crawler, *, clock: Callable[[], float] | None = None) -> None:
        config = RobotsConfig.from_settings(crawler.settings)
        if not config.obey:
            raise NotConfigured
        self.crawler = crawler
        self.config = config
        self._clock: Callable[[], float] = clock or time.time
        self._store = build_store(crawler.settings, crawler.stats, clock=self._clock)
        self._store_get = self._store.get
        timings = _timings(config)
        self._reporter = Reporter(crawler, config, timings, GoogleRobotParser.from_robotstxt)
        self._usage = UsageGate(
            config.usage,
            self._reporter,
            self.explain,
            reader_for(crawler, config) if config.page_directives else None,
        )
        self._usage_judge = self._usage.judge
        # TDMRep: set up always (a request's meta may declare a use it covers), used
        # only by requests that declare one.
        self._tdm_reports = TdmReports(crawler, self._reporter.summary)
        self._tdm = TdmGate(self._usage, self._tdm_reports, self.explain, max_size=config.max_size)
        self._tdm_always = self._tdm.always
        self._tdm_reports.on_file = self._tdm.file_of
        # Origin key -> the OriginRef of its tdmrep.json record (key tdmrep|<origin key>).
        self._tdm_refs: dict[str, OriginRef] = {}
        # Parsed rules of records a shared store returns without them (the
        # local cache parses its own quiet records again on their next use).
        self._rules = ParsedRulesCache(_PARSED_RULES_SIZE, config.max_size)
        self._rules_of = self._rules.rules_of
        # scheme://authority prefix of a URL -> its origin (None: no robots.txt).
        self._origins: dict[str, OriginRef | None] = {}
        # Origin key -> (fetched_at of its robots.txt, its cluster-wide delay).
        self._delays: dict[str, tuple[float, float | None]] = {}
        self._memo_size = _MEMO_SIZE
        self._agents = AgentTokens(
            config.user_agent, config.default_user_agent, lambda: {"spider": crawler.spider}
        )
        self._fixed_token = self._agents.fixed
        # What the spider's own download of a robots.txt may weigh (0: no limit).
        self._download_maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        self._close_watch = CloseWatch(lambda: crawler.engine, self._shutdown, self._busy)
        self._stopping = self._close_watch.stopping
        self._room = self._waiting_room(timings)
        self._tdm_room = self._tdm_waiting_room(timings)
        self._records = self._room.records = self._parked_records()
        self._tdm_room.records = self._records
        self._connect_signals()
        # A site's "slow down" (429/503) and, in a cluster, Crawl-delay as send slots.
        self._gate = self._slow_down_gate()
        rooms: tuple[Any, ...] = (self._room, self._tdm_room)
        if self._gate is not None:
            rooms += (self._gate.room,)
        self._handover = HandOver(crawler, rooms, self._records, self._reporter, self._store)
        # Opt-in: Google ignores Crawl-delay and Request-rate. In a cluster the
        # gate's send slots pace it instead of each worker's download slots.
        self._pacer = (
            CrawlPacer(crawler, self._reporter, self._robots_delay, maximum=config.crawl_delay_max)
            if config.crawl_delay and not self._cluster_paced
            else None
        )

    def _slow_down_gate(self) -> SlowDownGate | None:
        """The gate of pauses, slow-downs and cluster send slots, or None when all are off."""
        config, store = self.config, self._store
        shared = isinstance(store, LayeredPolicyStore) and store.pace_across_hosts
        self._cluster_paced = config.crawl_delay and shared
        if not config.slow_down and not self._cluster_paced:
            return None
        pace: Any = store
        report = SlowDownReport(self.crawler)
        site = SiteSlowDown(
            pace,
            report,
            max_pause=config.slow_down_max_pause,
            shared=lambda: isinstance(store, LayeredPolicyStore) and store.shares_pace,
        )
        room = PauseRoom(
            site, report, records=lambda: self._records, crawl=self._crawl, idle=self._rooms_idle
        )
        return SlowDownGate(
            self.crawler,
            site,
            room,
            origin_key=self._origin_key,
            delay_of=self._cluster_delay if self._cluster_paced else None,
            listen=self._listen,
            answers=config.slow_down,
            poll=isinstance(store, LayeredPolicyStore) and store.shares_pace,
        )

    def _origin_key(self, url: str) -> str | None:
        ref = self._origin_ref(url)
        return None if ref is None else ref.key

    def _cluster_delay(self, request: Request, key: str) -> float | None:
        """The Crawl-delay / Request-rate ``key``'s robots.txt asks of ``request``, capped."""
        record = self._store_get(key)
        if record is None:
            return None
        memo = self._delays.get(key)
        if memo is not None and memo[0] == record.fetched_at:
            return memo[1]
        rules = self._rules_of(record)
        delay = applied_delay(rules.delay(self._token(request)), self.config.crawl_delay_max)
        self._delays[key] = (record.fetched_at, delay)
        return delay

    def _busy(self) -> bool:
        """Something waits here: the spider must stay open."""
        gate = self._gate
        return self._room.busy or self._tdm_room.busy or (gate is not None and gate.room.busy)

    def _pending(self) -> bool:
        gate = self._gate
        return (
            self._room.pending
            or self._tdm_room.pending
            or (gate is not None and (gate.room.busy or bool(gate.site.paused)))
        )

    def _parked_records(self) -> Records:
        """Parked requests kept in the shared store too, when there is one (SQLite, Redis)."""
        store, ttl = self._store, self.config.parked_lease_ttl
        if not isinstance(store, LayeredPolicyStore) or store.parked is None or ttl <= 0:
            return NO_RECORDS
        crawler = self.crawler
        settings = crawler.settings
        # The duplicate filter of this process starts empty (Scrapy's default
        # filter, no JOBDIR): an adopted request that was handed back (passed
        # another process's filter) must meet this one, which may hold our own
        # copy of it. A shared or persisted filter (scrapy-redis, JOBDIR) has
        # seen it already, so it keeps the dont_filter it was handed back with.
        fresh_filter = (
            not settings.get("JOBDIR")
            and load_object(settings.get("DUPEFILTER_CLASS") or RFPDupeFilter) is RFPDupeFilter
        )
        return ParkedRecords(
            store,
            ttl=ttl,
            stats=crawler.stats,
            spider=lambda: crawler.spider,
            adopt=self._adopt,
            fresh_filter=fresh_filter,
        )

    def _waiting_room(self, timings: FetchTimings) -> WaitingRoom:
        """The waiting room of robots.txt fetches, and the coordinator it calls for fetches."""
        fetcher = RobotsFetcher(self.crawler, self.config)
        return self._build_room(WaitingRoom, fetcher, self._reporter, self._rules, timings)

    def _tdm_waiting_room(self, timings: FetchTimings) -> TdmWaitingRoom:
        """The waiting room of tdmrep.json fetches: robots.txt's, with TDMRep's decision."""
        fetcher = TdmRepFetcher(self.crawler, self.config)
        return self._build_room(
            TdmWaitingRoom, fetcher, self._tdm_reports, no_rules(), timings, robots=False
        )

    def _build_room(
        self,
        kind: type[_Room],
        fetcher: RobotsFetcher,
        reports: FetchReports,
        rules: ParsedRulesCache,
        timings: FetchTimings,
        *,
        robots: bool = True,
    ) -> _Room:
        """A waiting room of ``kind`` over the shared store, with its fetch coordinator."""
        crawler, config = self.crawler, self.config
        room = kind(
            config=config,
            store=self._store,
            rules=rules,
            reporter=self._reporter,
            clock=self._clock,
            crawl=self._crawl,
            stopping=self._stopping,
            watch=self._close_watch.watch,
            idle=self._rooms_idle,
            active=self._listen,
        )
        room.fetches = FetchCoordinator[OriginState](
            store=self._store,
            fetcher=fetcher,
            reporter=reports,
            rules=rules,
            timings=timings,
            clock=self._clock,
            stopping=self._stopping,
            engine_running=lambda: engine_is_running(crawler.engine),
            on_done=room.after_fetch,
            lease_ttl=config.fetch_lease_ttl,
            robots=robots,
        )
        return room

    def _rooms_idle(self) -> None:
        """A waiting room has nothing pending: if the others have nothing either, go idle."""
        if not self._pending():
            self._room_idle()

    def _connect_signals(self) -> None:
        manager = self.crawler.signals
        # Read through the module so tests can pretend to be an older Scrapy.
        self._can_park = REQUEST_SCHEDULED_CAN_DROP
        # request_scheduled is connected only while some origin is pending (_listen).
        self._listening = False
        self._unlisten_timer: Timer | None = None
        manager.connect(self._on_spider_opened, signal=signals.spider_opened)
        manager.connect(self._on_spider_idle, signal=signals.spider_idle)
        manager.connect(self._on_spider_closed, signal=signals.spider_closed)

    def _listen(self) -> None:
        """An origin is pending: park its requests at ``request_scheduled`` from now on."""
        self._cancel_unlisten()
        if self._can_park and not self._listening:
            self._listening = True
            self.crawler.signals.connect(
                self._on_request_scheduled, signal=signals.request_scheduled
            )

    def _room_idle(self) -> None:
        """Nothing is pending: requests go straight to the scheduler, with no handler on the way."""
        self._close_watch.unwatch()
        if self._listening and self._unlisten_timer is None:
            # Not now: this may run inside a request_scheduled dispatch, and
            # disconnecting a receiver there can make Scrapy skip the next one.
            self._unlisten_timer = Timer(0, self._unlisten)

    def _cancel_unlisten(self) -> None:
        timer, self._unlisten_timer = self._unlisten_timer, None
        if timer is not None:
            timer.cancel()

    def _unlisten(self, *, closing: bool = False) -> None:
        self._cancel_unlisten()
        if self._listening and (closing or not self._pending()):
            self._listening = False
            self.crawler.signals.disconnect(
                self._on_request_scheduled, signal=signals.request_scheduled
            )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- the hot path ------------------------------------------------------

    async def _process_request_async(
        self, request: Request, spider: Spider | None = None
    ) -> Request | Response | None:
        """Let ``request`` through (None), raise ``IgnoreRequest``, hand it back to be parked,
        or answer a request of the origin's robots.txt with the copy fetched."""
        meta = request.meta
        if meta.get("dont_obey_robotstxt"):
            return None
        url = request.url
        # The memo key: the URL up to the first "/" from index 8, which always
        # holds the whole scheme://authority of an http(s)/ftp URL (the
        # authority starts at index 6 to 8 and has no "/"), so equal keys mean
        # equal origins. Other schemes map to None whatever the key holds.
        # (_origin_ref, inlined: this is the hot path.)
        cut = url.find("/", 8)
        ref = self._origins.get(url if cut < 0 else url[:cut], _UNSEEN)
        if ref is _UNSEEN:
            ref = self._resolve(url, cut)
        if ref is None:
            return None
        gate = self._gate
        if gate is not None and gate.site.engaged:
            held = await self._slow_down(request, ref.key, gate)
            if held is not None:
                return held
        record = self._store_get(ref.key)
        if record is not None and self._clock() < record.expires_at:
            rules = record.rules or self._rules_of(record)
            token = self._fixed_token
            if token is None:
                token = self._agents.of(request)
            canonical = canonicalize_url(url)
            line = rules.deciding_line(canonical, token)
            if line >= 0:
                if rules.has_usage:
                    self._usage_judge(request, rules, canonical, token, ref)
                # The spider's own robots.txt request, answered from the copy,
                # is the crawl's control file: TDMRep does not judge it.
                if url.endswith(_ROBOTS_PATH):
                    served = self._serve(request, ref, record)
                    if served is not None:
                        return served
                if self._tdm_always or USAGE_META in meta:
                    return await self._tdm_step(request, ref)
                return None
            raise self._reporter.forbidden(request, rules, canonical, token, ref, -line)
        outcome = self._check_slow(request, ref, record)
        if isinstance(outcome, (Request, Response)):
            return outcome
        if outcome is not None:
            await outcome
            answered = self._answer(request, ref, self._store_get(ref.key))
            if answered is not None:
                return answered
        if self._tdm_always or USAGE_META in request.meta:
            return await self._tdm_step(request, ref)
        return None

    def _process_request_deferred(
        self, request: Request, spider: Spider | None = None
    ) -> Deferred[Request | Response | None] | None:
        """As the stock method before Scrapy 2.14: a Deferred for every request it checks."""
        if request.meta.get("dont_obey_robotstxt"):
            return None
        ref = self._origin_ref(request.url)
        if ref is None:
            return None  # like the stock method for data:, file: ... URLs
        gate = self._gate
        if gate is not None and gate.site.engaged:
            return deferred_from_coro(self._slow_down_then_check(request, ref.key, gate))  # type: ignore[no-any-return]
        outcome: (
            Request
            | Response
            | Coroutine[Any, Any, Request | Response | None]
            | Coroutine[Any, Any, None]
            | None
        )
        try:
            checked = self._check(request)
            if checked is None:
                outcome = self._tdm_check(request)
            elif isinstance(checked, (Request, Response)):
                outcome = checked
            else:
                outcome = self._then_tdm(checked, request)
        except IgnoreRequest:
            return fail()
        if outcome is None or isinstance(outcome, (Request, Response)):
            return succeed(outcome)
        return deferred_from_coro(outcome)  # type: ignore[no-any-return]

    # The stock class's calling convention on the installed Scrapy: ``async def``
    # from 2.14 (``await mw.process_request(request)``), a Deferred before.
    process_request = (
        _process_request_async if PROCESS_REQUEST_IS_COROUTINE else _process_request_deferred
    )

    async def _slow_down_then_check(
        self, request: Request, key: str, gate: SlowDownGate
    ) -> Request | Response | None:
        """The Deferred convention's path while the gate is active: its wait, then the check."""
        held = await self._slow_down(request, key, gate)
        if held is not None:
            return held
        checked = self._check(request)
        if isinstance(checked, (Request, Response)):
            return checked
        if checked is not None:
            return await self._then_tdm(checked, request)
        outcome = self._tdm_check(request)
        if outcome is None or isinstance(outcome, Request):
            return outcome
        await outcome
        return None

    async def _slow_down(self, request: Request, key: str, gate: SlowDownGate) -> Request | None:
        """``request``'s origin asked to slow down or is paced across the cluster: None once it
        may go (after waiting for its send slot), or the request handed back to be held for
        its origin's pause. Raises ``IgnoreRequest`` during a pause beyond the cap."""
        while True:
            step = gate.before_send(request, key)
            if step is None:
                return None
            if not isinstance(step, Pause):
                await sleep(step)
                return None
            if step.drop:
                raise gate.dropped(request, step)
            meta = request.meta
            if (
                self._can_park
                and not meta.get(HANDED_BACK_META)
                and engine_takes_requests_back(self.crawler.engine)
                and not self._stopping()
            ):
                meta[HANDED_BACK_META] = True
                if not request.dont_filter:
                    meta[OWN_DONT_FILTER_META] = True
                    request.dont_filter = True
                self._listen()
                return request
            # Nowhere to hold it (an older Scrapy, engine.download): it waits here.
            await sleep(step.until - time.monotonic())

    def _check(self, request: Request) -> Request | Response | Coroutine[Any, Any, None] | None:
        """For the Deferred convention: None (let through), raise ``IgnoreRequest``,
        a Request to hand back, or a wait. (The coroutine convention, the hot
        path from Scrapy 2.14, inlines the same steps.)"""
        if request.meta.get("dont_obey_robotstxt"):
            return None
        ref = self._origin_ref(request.url)
        if ref is None:
            return None
        record = self._store_get(ref.key)
        if record is not None and self._clock() < record.expires_at:
            self._judge(request, record.rules or self._rules_of(record))
            return self._answer(request, ref, record)
        return self._check_slow(request, ref, record)

    # -- TDMRep ---------------------------------------------------------------

    async def _tdm_step(self, request: Request, ref: OriginRef) -> Request | None:
        """robots.txt allows ``request``: TDMRep's file step, for the coroutine convention."""
        outcome = self._tdm_check(request, ref)
        if outcome is None or isinstance(outcome, Request):
            return outcome
        await outcome
        return None

    async def _then_tdm(
        self, wait: Coroutine[Any, Any, None], request: Request
    ) -> Request | Response | None:
        """A robots.txt wait, then the copy of robots.txt for the spider's own request of it,
        or TDMRep's file step (the Deferred convention)."""
        await wait
        ref = self._origin_ref(request.url)
        assert ref is not None, "only requests with an origin wait"
        answered = self._answer(request, ref, self._store_get(ref.key))
        if answered is not None:
            return answered
        outcome = self._tdm_check(request)
        if outcome is None or isinstance(outcome, Request):
            return outcome
        await outcome
        return None

    def _tdm_ref(self, ref: OriginRef) -> OriginRef | None:
        """The OriginRef of ``ref``'s tdmrep.json record; None for a scheme without one."""
        tref = self._tdm_refs.get(ref.key)
        if tref is None:
            if ref.origin.scheme not in ("http", "https"):
                return None
            if len(self._tdm_refs) >= self._memo_size:
                self._tdm_refs.clear()
            tref = self._tdm_refs[ref.key] = OriginRef(ref.origin)
            tref.key = tdm_store_key(ref.key)
        return tref

    def _tdm_check(
        self, request: Request, ref: OriginRef | None = None
    ) -> Request | Coroutine[Any, Any, None] | None:
        """robots.txt allows ``request``: refuse it if its origin's tdmrep.json reserves it,
        let it through, hand it back to be parked, or wait inline for the file."""
        meta = request.meta
        if meta.get("dont_obey_robotstxt") or not self._tdm.applies(request):
            return None
        if ref is None:
            ref = self._origin_ref(request.url)
        tref = None if ref is None else self._tdm_ref(ref)
        if tref is None:
            return None
        if meta.pop(TDM_GAVE_UP_META, None):
            self._tdm.unset(request)
            return None
        record = self._store_get(tref.key)
        now = self._clock()
        if record is not None and now < record.expires_at:
            self._tdm.check_file(request, record)
            return None
        if is_the_copy_waited_for(meta.pop(TDM_RELEASED_META, None), record):
            self._tdm.check_file(request, record)
            return None
        room = self._tdm_room
        decision = room.decide(record, now)
        if decision.action is not Action.WAIT:
            if decision.fetch:
                room.refresh(tref, request, record)
            self._tdm.check_file(request, record if decision.rules else None)
            return None
        if self._hand_back(request, room, tref, record):
            return request
        key = tref.key
        return room.wait_inline(
            request,
            tref,
            record,
            lambda waited, _rules: self._tdm.check_file(waited, self._tdm_known(key)),
        )

    def _tdm_known(self, key: str) -> PolicyRecord | None:
        """The tdmrep.json record of ``key`` after a wait (unreachable: no file)."""
        record = self._store.get(key)
        if record is None or record.outcome is FetchOutcome.UNREACHABLE:
            return None
        return record

    def _tdm_wait(
        self, request: Request, ref: OriginRef, now: float
    ) -> tuple[OriginRef, PolicyRecord | None] | None:
        """Whether ``request`` (robots.txt allows it) must wait for its origin's tdmrep.json:
        the TDM ref and record to park it with, or None."""
        meta = request.meta
        if not (self._tdm_always or USAGE_META in meta) or meta.get(TDM_GAVE_UP_META):
            return None
        try:
            if not self._tdm.applies(request):
                return None
        except ValueError:
            return None  # process_request raises it, with the request's errback
        tref = self._tdm_ref(ref)
        if tref is None:
            return None
        record = self._store_get(tref.key)
        if record is not None and now < record.expires_at:
            return None
        if is_the_copy_waited_for(meta.get(TDM_RELEASED_META), record):
            return None
        decision = self._tdm_room.decide(record, now)
        if decision.action is not Action.WAIT:
            if decision.fetch:
                self._tdm_room.refresh(tref, request, record)
            return None
        return tref, record

    def _tdm_prefetch(self, ref: OriginRef, request: Request) -> None:
        """``request`` waits for robots.txt in a crawl that declares a TDM use: fetch the
        origin's tdmrep.json at the same time, so that the request, once robots.txt allows
        it, usually finds the file known and does not wait a second time."""
        tref = self._tdm_ref(ref)
        if tref is None:
            return
        record = self._store_get(tref.key)
        if self._tdm_room.decide(record, self._clock()).fetch:
            self._tdm_room.refresh(tref, request, record)

    def _tdm_scheduled(self, request: Request, ref: OriginRef, now: float) -> None:
        """At ``request_scheduled``, robots.txt known: park ``request`` for its tdmrep.json."""
        wait = self._tdm_wait(request, ref, now)
        if wait is None or self._stopping() or self._duplicate(request):
            return
        self._tdm_room.park(wait[0], request, wait[1], now)
        raise IgnoreRequest("Waiting for tdmrep.json")

    def _origin_ref(self, url: str) -> OriginRef | None:
        """The origin of ``url`` through the memo (the coroutine hot path inlines this)."""
        cut = url.find("/", 8)
        ref = self._origins.get(url if cut < 0 else url[:cut], _UNSEEN)
        return self._resolve(url, cut) if ref is _UNSEEN else ref  # type: ignore[no-any-return]

    def _resolve(self, url: str, cut: int) -> OriginRef | None:
        prefix = url if cut < 0 else url[:cut]
        try:
            origin = origin_of(url)
        except ValueError as exc:
            # The download fails on its own; there is no robots.txt to ask.
            self._reporter.not_checked(url, exc)
            origin = None
        ref = None if origin is None else OriginRef(origin)
        if len(prefix) <= _MEMO_KEY_MAX:
            if len(self._origins) >= self._memo_size:
                self._origins.clear()
            self._origins[prefix] = ref
        return ref

    def _token(self, request: Request) -> str:
        """The product token ``request`` is judged for (the hot path inlines this)."""
        token = self._fixed_token
        return self._agents.of(request) if token is None else token

    def _judge(self, request: Request, rules: RobotsTxt) -> None:
        token = self._token(request)
        canonical = canonicalize_url(request.url)
        line = rules.deciding_line(canonical, token)
        if line >= 0 and not rules.has_usage:
            return
        ref = self._origin_ref(request.url)
        assert ref is not None, "only requests with an origin are judged"
        if line < 0:
            raise self._reporter.forbidden(request, rules, canonical, token, ref, -line)
        self._usage_judge(request, rules, canonical, token, ref)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response | Request:
        """Give ``response.meta["usage_preferences"]`` to a response that carries AI usage
        preferences (robots.txt, its ``Content-Usage`` header); raise ``IgnoreRequest``
        when its header says "no" for a use the request declares."""
        gate = self._gate
        if gate is not None and response.status in SLOW_DOWN_STATUSES:
            again = self._held_again(request, response, gate)
            if again is not None:
                return again
        response = self._usage.response(request, response)
        if self._tdm.seen:
            return self._tdm.response(request, response)
        return response

    def _held_again(
        self, request: Request, response: Response, gate: SlowDownGate
    ) -> Request | None:
        """A 429/503 that paused its origin and reached us (RetryMiddleware did not re-send
        it): the request again, to be held for the pause; None if the spider takes it."""
        meta = request.meta
        if (
            meta.get("dont_retry")
            or meta.get("dont_obey_robotstxt")
            or meta.get("handle_httpstatus_all")
            or response.status in meta.get("handle_httpstatus_list", ())
        ):
            return None
        key = self._origin_key(request.url)
        pause = gate.site.pause_of(key) if key is not None else None
        if pause is None or pause.drop:
            return None
        again = request.copy()
        if not again.dont_filter:
            again.meta[OWN_DONT_FILTER_META] = True
            again.dont_filter = True
        return again

    def _check_slow(
        self, request: Request, ref: OriginRef, record: PolicyRecord | None
    ) -> Request | Response | Coroutine[Any, Any, None] | None:
        """No fresh record: a released request, a stale copy, a drop, or a wait."""
        meta = request.meta
        reason = meta.get(DROP_META)
        if reason:
            raise self._reporter.dropped(request, reason, origin=ref.key)
        if is_the_copy_waited_for(meta.pop(RELEASED_META, None), record):
            assert record is not None
            self._judge(request, self._rules_of(record))
            return self._answer(request, ref, record)
        decision = self._room.decide(record, self._clock())
        if decision.action is Action.APPLY:
            if decision.fetch:
                self._room.refresh(ref, request, record)
            if record is not None and decision.rules:
                self._judge(request, self._rules_of(record))
            return self._answer(request, ref, record)
        if decision.action is Action.DROP:
            raise self._reporter.dropped(request, disallow_message(ref), origin=ref.key)
        if self._hand_back(request, self._room, ref, record):
            if self._tdm_always:
                self._tdm_prefetch(ref, request)
            return request
        return self._room.wait_inline(request, ref, record, self._judge)

    def _hand_back(
        self, request: Request, room: WaitingRoom, ref: OriginRef, record: PolicyRecord | None
    ) -> bool:
        """Hand ``request`` back to the engine to be parked in ``room``; False: it must wait
        inline (handed back once already, no engine that takes requests back, stopping)."""
        meta = request.meta
        if (
            not self._can_park
            or meta.get(HANDED_BACK_META)
            or not engine_takes_requests_back(self.crawler.engine)
            or self._stopping()
        ):
            return False
        # Back to the engine: request_scheduled (listening from here on) parks it
        # outside the downloader. It passed the duplicate filter once already. A
        # request that never meets the scheduler (engine.download) comes straight
        # back here and waits inline.
        meta[HANDED_BACK_META] = True
        if not request.dont_filter:
            meta[OWN_DONT_FILTER_META] = True
            request.dont_filter = True
        room.expect(ref, request, record)
        self._reporter.handed_back()
        return True

    # -- the spider's own robots.txt requests ------------------------------------

    def _answer(
        self, request: Request, ref: OriginRef, record: PolicyRecord | None
    ) -> Response | None:
        """The copy of ``ref``'s robots.txt if ``request`` asks for it and it can stand
        for the download; None (download it) otherwise."""
        if not request.url.endswith(_ROBOTS_PATH):
            return None
        return self._serve(request, ref, record)

    def _serve(
        self, request: Request, ref: OriginRef, record: PolicyRecord | None
    ) -> Response | None:
        """``request`` (its URL ends with /robots.txt, allowed) answered from ``record``, or None.

        Answered only when it is the origin's robots.txt URL itself, asked for
        as the middleware's fetch asked for it (``robots_copy.request_fits``),
        and the copy is fresh (within its lifetime) and kept whole with its
        headers (a 2xx, not redirected, not cut at ``ROBOTSTXT_MAX_SIZE``).
        """
        if request.url != ref.origin.robots_url:
            return None  # some other path ending with /robots.txt
        reporter = self._reporter
        if not request_fits(request):
            reporter.robots_not_served("request")
            return None
        now = self._clock()
        if (
            record is None
            or record.headers is None
            or record.status is None
            or record.outcome is not FetchOutcome.RULES
        ):
            reporter.robots_not_served("copy")
            return None
        if now >= record.expires_at:
            reporter.robots_not_served("expired")
            return None
        limit = request.meta.get("download_maxsize", self._download_maxsize)
        if limit and len(record.body or b"") > limit:
            reporter.robots_not_served("copy")  # the download would be cancelled
            return None
        response = copy_response(record, request)
        reporter.robots_served(request, ref.key, now - record.fetched_at)
        return response

    def sitemaps(self, url: str) -> list[str] | None:
        """The ``Sitemap:`` URLs of the robots.txt of ``url``'s origin, as this crawl knows it.

        ``url`` is any URL of the origin, or the origin itself
        (``https://example.com``). No fetch and no wait: None when nothing is
        known (no robots.txt fetched for the origin yet, only failures, or a
        URL without robots.txt such as ``data:``); an empty list when the
        robots.txt names no sitemap (or there is none: 4xx). The values are
        as written, in file order; the copy may be past its lifetime. With a
        shared store, another worker's fetch counts.
        """
        try:
            origin = origin_of(url)
        except ValueError:
            return None
        if origin is None:
            return None
        record = self._store.get(origin.key)
        if record is None or record.outcome is FetchOutcome.UNREACHABLE:
            return None
        return list(self._rules_of(record).sitemaps)

    def _robots_delay(self, request: Request) -> DelayLookup | None:
        """For the pacer: ``request``'s origin, the robots.txt copy in force, its delay."""
        ref = self._origin_ref(request.url)
        if ref is None:
            return None
        record = self._store_get(ref.key)
        if record is None:
            return None  # not fetched yet (e.g. the robots.txt request itself)
        token = self._token(request)
        rules = self._rules_of(record)
        return ref.key, (record.fetched_at, token), lambda: rules.delay(token)

    # -- parking (request_scheduled) -------------------------------------------

    def _on_request_scheduled(self, request: Request, **_: Any) -> None:
        meta = request.meta
        # Back through the engine: if it waits again, it may be handed back again.
        meta.pop(HANDED_BACK_META, None)
        if meta.get("dont_obey_robotstxt") or meta.get(DROP_META) or self._close_watch.closing:
            return
        ref = self._origin_ref(request.url)
        if ref is None:
            return
        gate = self._gate
        if (
            gate is not None
            and gate.site.paused
            and not self._stopping()
            and gate.site.pause_of(ref.key) is not None
            and not self._duplicate(request)
            and gate.hold(request, ref.key)
        ):
            raise IgnoreRequest("Waiting for its origin's pause to end")
        now = self._clock()
        record = self._store_get(ref.key)
        if record is not None and now < record.expires_at:
            # The common case: a fresh copy, by which process_request judges.
            if self._tdm_always or USAGE_META in meta:
                self._tdm_scheduled(request, ref, now)
            return
        if is_the_copy_waited_for(meta.get(RELEASED_META), record):
            self._tdm_scheduled(request, ref, now)
            return
        decision = self._room.decide(record, now)
        if decision.action is Action.APPLY:
            if decision.fetch:
                self._room.refresh(ref, request, record)
            self._tdm_scheduled(request, ref, now)
            return
        if decision.action is Action.DROP:
            return  # process_request drops it, so that its errback runs
        if self._stopping():
            return  # the scheduler keeps it (JOBDIR) or drops it, as without robots.txt
        if self._duplicate(request):
            return  # the scheduler filters it, as without robots.txt
        self._room.park(ref, request, record, now)
        if self._tdm_always:
            self._tdm_prefetch(ref, request)
        # Scrapy >= 2.11.2: the engine drops the request silently (no errback).
        raise IgnoreRequest("Waiting for robots.txt")

    def _duplicate(self, request: Request) -> bool:
        """True when the scheduler would filter ``request`` as a duplicate: it is not parked
        (the scheduler filters it, as without us). Otherwise it has now passed the filter,
        and is let through it when it comes back (``dont_filter``, ours to clear)."""
        if request.dont_filter:
            return False
        df = duplicate_filter(self.crawler.engine)
        if df is None:
            return False
        if df.request_seen(request):
            return True
        request.meta[OWN_DONT_FILTER_META] = True
        request.dont_filter = True
        return False

    def _crawl(self, request: Request) -> None:
        engine = self.crawler.engine
        if engine is None or self._close_watch.closing:
            return
        engine.crawl(request)

    # -- spider lifecycle ------------------------------------------------------

    def _on_spider_idle(self, **_: Any) -> None:
        if self._close_watch.closing:
            return
        if self._busy():
            raise DontCloseSpider
        # About to close: take over what stopped workers handed over since the
        # last beat, rather than leave it for the next crawl.
        if isinstance(self._records, ParkedRecords) and self._records.adopt_now():
            raise DontCloseSpider

    def _on_spider_opened(self, **_: Any) -> None:
        # The moment requests can still go to the scheduler, at any close.
        call_before_scheduler_close(crawler_engine(self.crawler), self._close_watch.close)
        if isinstance(self._records, ParkedRecords):
            self._records.start()
        if self._gate is not None:
            self._gate.start()
        jobdir, spider = self.crawler.settings.get("JOBDIR"), self.crawler.spider
        if jobdir and spider is not None:
            # Upgrade path from 0.1.0 (its JOBDIR/robotstxt.parked journal); goes with it.
            take_up_legacy_journal(jobdir, spider, self.crawler.stats, self._adopt)

    def _shutdown(self) -> None:
        """The spider has begun closing: no fetch starts, every wait ends, and the parked
        requests are handed over (:class:`~scrapy_googlerobots.waiting.handover.HandOver`)."""
        self._handover.at_close()

    def _adopt(self, request: Request, rid: str | None = None) -> None:
        """A request another worker left waiting (recorded as ours under ``rid``): wait or go on.

        Without ``rid`` (a request of a 0.1.0 journal, taken at ``spider_opened``),
        it is recorded if it waits, or goes to the engine.
        """
        if self._close_watch.closing:
            return  # stays in the store: the next adopter takes it
        ref = self._origin_ref(request.url)
        now = self._clock()
        if ref is not None and self._can_park and not request.meta.get("dont_obey_robotstxt"):
            record = self._store.get(ref.key)
            if self._room.decide(record, now).action is Action.WAIT:
                self._room.park(ref, request, record, now, rid=rid)
                return
            wait = self._tdm_wait(request, ref, now)
            if wait is not None:
                # Waiting on for tdmrep.json: the wait still counts from its first park.
                self._tdm_room.park(wait[0], request, wait[1], now, rid=rid)
                return
            end_wait(request.meta)  # its origin's policies are known: the wait is over
        if self._records.forget([Parked(request, now, rid=rid)]):
            self._crawl(request)

    def _on_spider_closed(self, **_: Any) -> None:
        self._close_watch.close()
        self._reporter.flush_counts()
        self._tdm_reports.flush_counts()
        self._unlisten(closing=True)
        if self._gate is not None:
            self._gate.close()
        if self.config.summary:
            self._reporter.crawl_summary()
            if self._gate is not None:
                self._gate.site.report.log_summary()
        # Nothing is parked any more: the close handed every waiting request over or dropped it.
        self._store.close()

    def explain(self, request: Request) -> RobotsDecision | None:
        """Why robots.txt lets ``request`` through or not, by the copy this crawl holds,
        with its AI usage preferences for the URL (``usage``) and, for a request that
        declares a use TDMRep covers, the verdict of the origin's ``tdmrep.json`` this
        crawl holds (``tdm``; its header and meta steps are known only from a response).

        None when there is nothing to explain: the URL has no robots.txt
        (``data:``, ``file:`` ...), or none has been fetched for its origin
        (not yet, or only failures: see the unreachable rules). The copy may be
        past its lifetime; the next request of the origin refreshes it.
        """
        ref = self._origin_ref(request.url)
        if ref is None:
            return None
        record = self._store.get(ref.key)
        if record is None or record.outcome is FetchOutcome.UNREACHABLE:
            return None
        token = self._token(request)
        canonical = canonicalize_url(request.url)
        robots_url = ref.origin.robots_url
        if record.outcome is FetchOutcome.ALLOW_ALL:
            decision = RobotsDecision(
                canonical, robots_url, True, 0, None, "", token, has_rules=False
            )
        else:
            decision = explain_rules(self._rules_of(record), canonical, token, robots_url)
        return self._with_tdm(request, ref, decision)

    def _with_tdm(
        self, request: Request, ref: OriginRef, decision: RobotsDecision
    ) -> RobotsDecision:
        """``decision`` with the verdict of the tdmrep.json held, if TDMRep applies."""
        try:
            applies = self._tdm.applies(request)
        except ValueError:
            applies = False
        tref = self._tdm_ref(ref) if applies else None
        if tref is None:
            return decision
        record = self._store.get(tref.key)
        if record is None:
            return decision  # not fetched yet: nothing known
        parsed = self._tdm.file_of(record)
        verdict = parsed.explain(request.url) if parsed is not None else resolve_tdm(None)
        return dataclasses.replace(decision, tdm=verdict)

    @property
    def summary(self) -> CrawlSummary:
        """What robots.txt did so far: origins and their answers, forbidden requests by rule."""
        return self._reporter.summary

    # -- for persistence (JOBDIR) ---------------------------------------------

    def parked_requests(self) -> list[Request]:
        """Requests waiting here for a robots.txt, per origin in the order they arrived.

        They are in neither the scheduler nor the downloader; a component that
        persists a paused crawl saves them and hands them back with :meth:`park`.
        """
        return self._room.parked_requests() + self._tdm_room.parked_requests()

    def park(self, request: Request) -> None:
        """Put ``request`` (e.g. restored from a paused crawl) on its way again.

        It waits here if its origin has no usable robots.txt yet, or goes to
        the engine (``engine.crawl``) at once; either way it bypasses the
        duplicate filter. Its wait counts from when it was first parked (kept
        in its meta by :meth:`parked_requests`), as
        ``ROBOTSTXT_UNREACHABLE_MAX_WAIT`` says, or from now if it never was.
        Call it with the spider open.
        """
        request.dont_filter = True
        request.meta.pop(DROP_META, None)
        ref = self._origin_ref(request.url)
        if ref is None or not self._can_park or request.meta.get("dont_obey_robotstxt"):
            self._crawl(request)
            return
        now = self._clock()
        record = self._store.get(ref.key)
        if self._room.decide(record, now).action is not Action.WAIT:
            end_wait(request.meta)
            self._crawl(request)
            return
        self._room.park(ref, request, record, now)


def _timings(config: RobotsConfig) -> FetchTimings:
    return FetchTimings(
        cache_ttl=config.cache_ttl,
        cache_min_ttl=config.cache_min_ttl,
        cache_max_ttl=config.cache_max_ttl,
        retry_delay=config.retry_delay,
        retry_max_delay=config.retry_max_delay,
        max_size=config.max_size,
    )
