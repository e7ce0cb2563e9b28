"""Building the parts of one crawl's :class:`~.middleware.GoogleRobotsTxtMiddleware`.

:func:`build` makes, from the settings, the store, the reporter, the gates,
one :class:`~scrapy_googlerobots.fetching.policy_file.PolicyFile` per
per-origin file (robots.txt, ``tdmrep.json``, and any the middleware's
``_policy_files`` adds) with its fetcher, coordinator, waiting room and step,
then what holds and hands over waiting requests. The middleware keeps the
handful it reads per request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import signals
from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.misc import load_object

from scrapy_googlerobots.crawl.evidence_trail import EvidenceTrail
from scrapy_googlerobots.crawl.lifecycle import CloseWatch, Lifecycle
from scrapy_googlerobots.crawl.robots_file import RobotsTxtFile
from scrapy_googlerobots.crawl.stock_parser import GoogleRobotParser
from scrapy_googlerobots.evidence.recorder import EvidenceRecorder
from scrapy_googlerobots.fetching.coordinator import FetchCoordinator
from scrapy_googlerobots.fetching.fetcher import RobotsFetcher
from scrapy_googlerobots.fetching.robots_serve import RobotsServer
from scrapy_googlerobots.optouts.page_directives import reader_for
from scrapy_googlerobots.optouts.tdm_gate import TdmGate
from scrapy_googlerobots.optouts.usage_gate import UsageGate
from scrapy_googlerobots.pacing.crawl_delay import CrawlPacer, DelayLookup, applied_delay
from scrapy_googlerobots.policy.origin import OriginMemo
from scrapy_googlerobots.policy.record import FetchTimings, ParsedRulesCache
from scrapy_googlerobots.reporting.explainer import Annotates, Explainer
from scrapy_googlerobots.reporting.reporter import Reporter
from scrapy_googlerobots.reporting.slow_down_report import SlowDownReport
from scrapy_googlerobots.reporting.tdm_reports import TdmReports
from scrapy_googlerobots.runtime.agents import AgentTokens
from scrapy_googlerobots.runtime.scrapy_compat import engine_is_running
from scrapy_googlerobots.stores.factory import build_store
from scrapy_googlerobots.stores.layered import LayeredPolicyStore
from scrapy_googlerobots.waiting.file_step import FileStep, FileSteps
from scrapy_googlerobots.waiting.handover import HandOver
from scrapy_googlerobots.waiting.origin_state import OriginState
from scrapy_googlerobots.waiting.parked_records import NO_RECORDS, ParkedRecords, Records
from scrapy_googlerobots.waiting.parking import Parking
from scrapy_googlerobots.waiting.slow_down import PauseRoom, SiteSlowDown, SlowDownGate
from scrapy_googlerobots.waiting.waiting_room import WaitingRoom

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_googlerobots.fetching.policy_file import PolicyFile
    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.reporting.explain import RobotsDecision
    from scrapy_googlerobots.runtime.config import RobotsConfig
    from scrapy_googlerobots.stores.base import PolicyStore

__all__ = ["Parts", "Shell", "build"]

_PARSED_RULES_SIZE = 4_096


class Shell(Protocol):
    """What the parts call back in the middleware (its hooks)."""

    crawler: Crawler
    DOWNLOAD_PRIORITY: int

    def explain(self, request: Request) -> RobotsDecision | None: ...

    def _on_request_scheduled(self, request: Request, **_: Any) -> None: ...

    def _policy_files(self, parts: Parts) -> list[PolicyFile]: ...


@dataclass
class Parts:
    """What the middleware's parts are built from, and then the parts themselves."""

    crawler: Crawler
    config: RobotsConfig
    clock: Callable[[], float]
    store: PolicyStore
    timings: FetchTimings
    reporter: Reporter
    memo: OriginMemo
    rules: ParsedRulesCache
    agents: AgentTokens
    usage: UsageGate
    robots: RobotsTxtFile
    tdm: TdmGate
    close_watch: CloseWatch
    parking: Parking
    steps: Sequence[FileStep] = ()
    records: Records = NO_RECORDS
    handover: HandOver | None = None
    chain: FileSteps | None = None
    server: RobotsServer | None = None
    explainer: Explainer | None = None
    evidence: EvidenceTrail | None = None
    """``ROBOTSTXT_EVIDENCE``: the crawl's evidence (None: off)."""
    pacer: CrawlPacer | None = None
    lifecycle: Lifecycle | None = None
    gate: SlowDownGate | None = None


def build(mw: Shell, config: RobotsConfig, clock: Callable[[], float]) -> Parts:
    """The parts of ``mw`` (its callbacks are bound here: explain, origin memo, shutdown)."""
    crawler = mw.crawler
    settings = crawler.settings
    store = build_store(settings, crawler.stats, clock=clock)
    timings = _timings(config)
    reporter = Reporter(crawler, config, timings, GoogleRobotParser.from_robotstxt)
    memo = OriginMemo(reporter.not_checked)
    rules = ParsedRulesCache(_PARSED_RULES_SIZE, config.max_size)
    agents = AgentTokens(
        config.user_agent, config.default_user_agent, lambda: {"spider": crawler.spider}
    )
    usage = UsageGate(
        config.usage,
        reporter,
        mw.explain,
        reader_for(crawler, config) if config.page_directives else None,
    )
    robots = RobotsTxtFile(
        config,
        reporter,
        rules,
        origin_ref=memo.ref,
        token=agents.token,
        usage_judge=usage.judge,
    )
    # TDMRep: set up always (a request's meta may declare a use it covers), used
    # only by requests that declare one.
    tdm_reports = TdmReports(crawler, reporter.summary)
    tdm = TdmGate(usage, tdm_reports, mw.explain, max_size=config.max_size)
    parking: Parking
    handover: HandOver
    # The spider has begun closing: no fetch starts, every wait ends, and the
    # parked requests are handed over (HandOver).
    close_watch = CloseWatch(
        lambda: crawler.engine, lambda: handover.at_close(), lambda: parking.busy
    )
    parking = Parking(
        crawler,
        reporter,
        origin_ref=memo.ref,
        clock=clock,
        closing=lambda: close_watch.closing,
        stopping=close_watch.stopping,
        unwatch=close_watch.unwatch,
        handler=mw._on_request_scheduled,
    )
    parts = Parts(
        crawler, config, clock, store, timings, reporter, memo, rules, agents, usage, robots, tdm,
        close_watch, parking,
    )  # fmt: skip
    files = mw._policy_files(parts)
    parts.evidence = _evidence(parts, files)
    parts.steps = parking.steps = [_step(parts, file, type(mw).DOWNLOAD_PRIORITY) for file in files]
    parts.records = parking.records = _parked_records(parts)
    for step in parts.steps:
        step.room.records = parts.records
    gate = parts.gate = parking.gate = _slow_down_gate(parts)
    handover = parts.handover = HandOver(
        crawler,
        [step.room for step in parts.steps],
        parts.records,
        reporter,
        store,
        pauses=gate.room if gate is not None else None,
    )
    server = parts.server = RobotsServer(reporter, clock, settings.getint("DOWNLOAD_MAXSIZE"))
    parts.chain = FileSteps(
        parts.steps, lambda request, ref: server.answer(request, ref, store.get(ref.key))
    )
    if gate is not None:
        parts.chain.after_wait = _send_slot(gate)
    parts.explainer = Explainer(
        store.get,
        rules.rules_of,
        memo.ref,
        agents.token,
        [(step.refs.of, step.file) for step in parts.steps if isinstance(step.file, Annotates)],
    )
    # Opt-in: Google ignores Crawl-delay and Request-rate. Across a cluster the
    # gate's send slots pace it instead of each worker's download slots.
    if config.crawl_delay and not (gate is not None and gate.site.always):
        lookup = _delay_lookup(parts)
        parts.pacer = CrawlPacer(crawler, reporter, lookup, maximum=config.crawl_delay_max)
    parts.lifecycle = Lifecycle(
        crawler,
        close_watch=close_watch,
        parking=parking,
        records=parts.records,
        reporter=reporter,
        flush=[reporter.flush_counts, tdm.flush_counts],
        store=store,
        summary=config.summary,
        gate=gate,
    )
    return parts


def _slow_down_gate(parts: Parts) -> SlowDownGate | None:
    """A site's "slow down" (429/503) and, across a cluster, Crawl-delay as send slots;
    None when both are off."""
    config, store, parking = parts.config, parts.store, parts.parking
    layered = store if isinstance(store, LayeredPolicyStore) else None
    cluster_paced = config.crawl_delay and layered is not None and layered.pace_across_hosts
    if not config.slow_down and not cluster_paced:
        return None
    pace: Any = store  # every store is a PaceStore (stores.base)
    report = SlowDownReport(parts.crawler)
    site = SiteSlowDown(
        pace,
        report,
        max_pause=config.slow_down_max_pause,
        shared=lambda: layered is not None and layered.shares_pace,
    )
    room = PauseRoom(
        site,
        report,
        records=lambda: parts.records,
        crawl=parking.crawl,
        idle=parking.room_idle,
    )
    return SlowDownGate(
        parts.crawler,
        site,
        room,
        origin_key=lambda url: None if (ref := parts.memo.ref(url)) is None else ref.key,
        delay_of=_cluster_delay(parts) if cluster_paced else None,
        hand_back=parking.hand_back_to_hold,
        listen=parking.listen,
        answers=config.slow_down,
        poll=layered is not None and layered.shares_pace,
        feed=layered.pause_feed if layered is not None and layered.shares_pace else None,
    )


def _send_slot(gate: SlowDownGate) -> Callable[[Request, OriginRef], Awaitable[Request | None]]:
    """After an inline wait for a policy file (the origin's pace known only then): the
    wait for the request's send slot, as ``process_request`` asks it before the files."""

    async def after_wait(request: Request, ref: OriginRef) -> Request | None:
        return await gate.before(request, ref.key) if gate.site.engaged else None

    return after_wait


def _cluster_delay(parts: Parts) -> Callable[[Request, str], float | None]:
    """The Crawl-delay / Request-rate an origin's robots.txt asks of a request, capped."""
    get, rules_of, token_of = parts.store.get, parts.rules.rules_of, parts.agents.token
    maximum = parts.config.crawl_delay_max
    # Origin key -> (fetched_at of its robots.txt, the delay it asks).
    delays: dict[str, tuple[float, float | None]] = {}

    def delay_of(request: Request, key: str) -> float | None:
        record = get(key)
        if record is None:
            return None
        memo = delays.get(key)
        if memo is not None and memo[0] == record.fetched_at:
            return memo[1]
        delay = applied_delay(rules_of(record).delay(token_of(request)), maximum)
        delays[key] = (record.fetched_at, delay)
        return delay

    return delay_of


def _step(parts: Parts, file: PolicyFile, priority: int) -> FileStep:
    """``file``'s waiting room, with its fetch coordinator, and its step."""
    crawler, config, parking, watch = parts.crawler, parts.config, parts.parking, parts.close_watch
    room = WaitingRoom(
        file=file,
        config=config,
        store=parts.store,
        reporter=parts.reporter,
        clock=parts.clock,
        crawl=parking.crawl,
        stopping=watch.stopping,
        watch=watch.watch,
        idle=parking.room_idle,
        active=parking.listen,
    )
    room.fetches = FetchCoordinator[OriginState](
        store=parts.store,
        file=file,
        fetcher=RobotsFetcher(crawler, config, file.kind, priority=priority),
        timings=parts.timings,
        clock=parts.clock,
        stopping=watch.stopping,
        engine_running=lambda: engine_is_running(crawler.engine),
        on_done=room.after_fetch,
        lease_ttl=config.fetch_lease_ttl,
        evidence=parts.evidence.fetched if parts.evidence is not None else None,
    )
    return FileStep(file, room, clock=parts.clock, hand_back=parking.hand_back)


def _evidence(parts: Parts, files: Sequence[PolicyFile]) -> EvidenceTrail | None:
    """The crawl's evidence when ``ROBOTSTXT_EVIDENCE`` asks for it (ValueError without
    warcio: the crawl stops at start-up), its signals connected; None when off."""
    config, crawler = parts.config, parts.crawler
    recorded: dict[str, Any] = {
        "max_size": config.max_size,
        "page_directives": config.page_directives,
    }
    recorder = EvidenceRecorder.open(config.evidence, recorded)
    if recorder is None:
        return None
    default_agent = config.default_user_agent

    def user_agent_of(request: Request) -> str:
        value = request.headers.get(b"User-Agent")
        return value.decode("latin-1") if value else default_agent

    def robots_decision(request: Request) -> RobotsDecision | None:
        assert parts.explainer is not None, "built before the first decision"
        return parts.explainer.robots(request)

    trail = EvidenceTrail(
        recorder,
        files=[(file.kind, file.needs) for file in files],
        store_get=parts.store.get,
        token_of=parts.agents.token,
        user_agent_of=user_agent_of,
        declared_of=parts.usage.declared_of,
        tdm_applies=parts.tdm.applies,
        explain=robots_decision,
        pages=reader_for(crawler, config) if config.page_directives else None,
        settings=recorded,
        stats=crawler.stats,
        clock=parts.clock,
    )
    crawler.signals.connect(trail.start, signal=signals.spider_opened)
    crawler.signals.connect(trail.close, signal=signals.spider_closed)
    return trail


def _parked_records(parts: Parts) -> Records:
    """Parked requests kept in the shared store too, when there is one (SQLite, Redis)."""
    store, ttl, crawler = parts.store, parts.config.parked_lease_ttl, parts.crawler
    if not isinstance(store, LayeredPolicyStore) or store.parked is None or ttl <= 0:
        return NO_RECORDS
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
        adopt=parts.parking.adopt,
        fresh_filter=fresh_filter,
    )


def _delay_lookup(parts: Parts) -> Callable[[Request], DelayLookup | None]:
    """For the pacer: a request's origin, the robots.txt copy in force, its delay."""
    get, rules_of = parts.store.get, parts.rules.rules_of
    origin_ref, token_of = parts.memo.ref, parts.agents.token

    def lookup(request: Request) -> DelayLookup | None:
        ref = origin_ref(request.url)
        if ref is None:
            return None
        record = get(ref.key)
        if record is None:
            return None  # not fetched yet (e.g. the robots.txt request itself)
        token = token_of(request)
        rules = rules_of(record)
        return ref.key, (record.fetched_at, token), lambda: rules.delay(token)

    return lookup


def _timings(config: RobotsConfig) -> FetchTimings:
    return FetchTimings(
        cache_ttl=config.cache_ttl,
        cache_min_ttl=config.cache_min_ttl,
        cache_max_ttl=config.cache_max_ttl,
        retry_delay=config.retry_delay,
        retry_max_delay=config.retry_max_delay,
        max_size=config.max_size,
    )
