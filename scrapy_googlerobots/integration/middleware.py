"""GoogleRobotsTxtMiddleware: Scrapy's robots.txt middleware, with Google's rules (SPEC part B).

How a request meets robots.txt:

1. At ``request_scheduled`` (before the scheduler), a request whose origin
   has no usable policy yet — first fetch pending, cache expired, or robots.txt
   unreachable in ``"defer"`` mode — is *parked* here, outside the scheduler
   and the downloader, so it takes no concurrency from other origins. The
   one robots.txt fetch for its origin starts if it is not running yet.
2. When the fetch yields a policy, the parked requests go back to the engine
   (``engine.crawl``) and :meth:`process_request` judges each of them by the
   copy they waited for (even if a tiny TTL has expired it meanwhile); a
   disallowed one raises ``IgnoreRequest("Forbidden by robots.txt")`` and its
   errback runs once. A request parked at ``request_scheduled`` has not met
   the duplicate filter yet and meets it once, on release, as it would have
   without robots.txt; one handed back from :meth:`process_request` (below)
   has met it already and goes back with ``dont_filter``. Either way no
   request is ever filtered as a duplicate of itself.
3. :meth:`process_request` answers from the cache (the hot path). A request
   that reaches it without a usable policy (the cache expired while it sat in
   the scheduler) is handed back to the engine to be parked; one that never
   went through the scheduler (``engine.download`` by user code, or Scrapy
   older than 2.11.2, where ``request_scheduled`` cannot drop requests) waits
   for the fetch inline.

Unreachable robots.txt (429, 5xx, network errors): in ``"defer"`` mode the
origin's requests stay parked while robots.txt is fetched again with
exponential backoff; a request parked longer than
``ROBOTSTXT_UNREACHABLE_MAX_WAIT`` goes back to the engine marked to be
dropped, so :meth:`process_request` raises ``IgnoreRequest`` (robots.txt
unreachable) and its errback runs exactly once. ``spider_idle`` keeps the
spider open while anything is parked or fetched.

Cache policy: a fresh copy is used until it expires; the first request after
expiry waits for the refresh like a first fetch; a refresh that finds the site
unreachable keeps the previous good copy (retried with backoff in the
background); with no good copy, an origin unreachable for longer than
``ROBOTSTXT_UNREACHABLE_ALLOW_AFTER`` allows everything.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.log import failure_to_exc_info
from twisted.internet.defer import Deferred, fail, succeed
from twisted.python.failure import Failure

from scrapy_googlerobots.integration.config import RobotsConfig
from scrapy_googlerobots.integration.fetcher import FetchResult, RobotsFetcher
from scrapy_googlerobots.integration.journal import attach_parked_journal
from scrapy_googlerobots.integration.scrapy_compat import (
    PROCESS_REQUEST_IS_COROUTINE,
    REQUEST_SCHEDULED_CAN_DROP,
    engine_is_closing,
)
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.fetch_policy import (
    FetchOutcome,
    backoff_delay,
    ttl_from_cache_control,
)
from scrapy_googlerobots.policy.origin import Origin, origin_of
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.policy.useragent import crawler_token
from scrapy_googlerobots.robotstxt import RobotsTxt, parse
from scrapy_googlerobots.stores.base import PolicyStore
from scrapy_googlerobots.stores.factory import build_store

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["GoogleRobotsTxtMiddleware"]

logger = logging.getLogger(__name__)

SCHEDULED_META = "_robotstxt_scheduled"
"""Set on requests that passed ``request_scheduled``: safe to hand back to the engine."""
WAITING_SINCE_META = "_robotstxt_waiting_since"
"""Clock time a parked request started waiting (max-wait counts from it)."""
RELEASED_META = "_robotstxt_released"
"""``fetched_at`` of the record a released request waited for: it is judged by that copy."""
DROP_META = "_robotstxt_unreachable"
"""Set on a request that gave up waiting: :meth:`process_request` drops it with this message."""

FORBIDDEN_MESSAGE = "Forbidden by robots.txt"

# Largest scheme://authority prefix remembered by the origin memo (longer
# ones, e.g. huge data: URLs, are resolved each time instead of stored).
_MEMO_KEY_MAX = 512
# Seconds between looks at the engine while requests wait (see _arm_watchdog).
_WATCH_INTERVAL = 0.5
_UNSEEN: Any = object()


class _Action(enum.Enum):
    APPLY = "apply"
    """A policy exists: judge the request by it (the rules may be stale or empty)."""
    WAIT = "wait"
    """No policy yet (never fetched, or expired): wait for the fetch."""
    UNREACHABLE = "unreachable"
    """robots.txt unreachable and no good copy: wait ("defer") or drop ("disallow")."""


@dataclasses.dataclass(slots=True)
class _Parked:
    request: Request
    deadline: float
    deferred: bool = False
    """Counted in robotstxt/unreachable/deferred (waiting on an unreachable origin)."""


class _Timer:
    """A cancellable reactor/asyncio timer (Scrapy's ``call_later`` where it exists)."""

    __slots__ = ("_handle",)

    def __init__(self, delay: float, function: Callable[[], None]) -> None:
        try:
            from scrapy.utils.asyncio import call_later
        except ImportError:  # Scrapy < 2.14
            from twisted.internet import reactor

            reactor_time: Any = reactor
            self._handle: Any = reactor_time.callLater(max(delay, 0.0), function)
        else:
            self._handle = call_later(max(delay, 0.0), function)

    def cancel(self) -> None:
        handle = self._handle
        active = getattr(handle, "active", None)
        if active is None or active():
            handle.cancel()


class _OriginState:
    """Bookkeeping for one origin with parked requests, a fetch or timers."""

    __slots__ = (
        "expiry_timer",
        "fetching",
        "key",
        "origin",
        "parked",
        "retry_timer",
        "trigger",
        "waiters",
    )

    def __init__(self, origin: Origin, key: str) -> None:
        self.origin = origin
        self.key = key
        self.parked: deque[_Parked] = deque()
        self.fetching = False
        self.waiters: list[Deferred[None]] = []
        self.retry_timer: _Timer | None = None
        self.expiry_timer: _Timer | None = None
        # The request that triggered the pending fetch (robots_parsed's request=).
        self.trigger: Request | None = None

    @property
    def busy(self) -> bool:
        return bool(self.parked or self.fetching or self.waiters)


class _OriginRef:
    __slots__ = ("key", "origin")

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.key = origin.key


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
        self._stats = crawler.stats
        self._clock: Callable[[], float] = clock or time.time
        self._store: PolicyStore = build_store(crawler.settings, crawler.stats, clock=self._clock)
        self._store_get = self._store.get
        self._fetcher = RobotsFetcher(crawler, config)
        self._empty: RobotsTxt = parse(b"")
        # scheme://authority prefix of a URL -> its origin (None: no robots.txt).
        self._origins: dict[str, _OriginRef | None] = {}
        self._memo_size = max(1_024, config.cache_size)
        # User-Agent header value -> product token.
        self._tokens: dict[bytes, str] = {}
        # Before the first _token_of call (ROBOTSTXT_USER_AGENT may be a browser string).
        self._warned_browser = False
        self._fixed_token: str | None = (
            self._token_of(config.user_agent) if config.user_agent else None
        )
        self._default_token: str | None = None
        # Parsed rules for records a store returns without them.
        self._parsed: OrderedDict[str, tuple[bytes | None, RobotsTxt]] = OrderedDict()
        self._states: dict[str, _OriginState] = {}
        # _closing: the spider has begun closing (no new fetch, waiting requests
        # dropped or saved); _closed: spider_closed has been sent.
        self._closing = False
        self._closed = False
        self._watchdog: _Timer | None = None
        settings = crawler.settings
        self._lease_ttl = (settings.getfloat("DOWNLOAD_TIMEOUT", 180) + 10) * (
            settings.getint("RETRY_TIMES", 2) + 1
        )
        # Read through the module so tests can pretend to be an older Scrapy.
        self._can_park = REQUEST_SCHEDULED_CAN_DROP
        if self._can_park:
            crawler.signals.connect(self._on_request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(self._on_spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._on_spider_closed, signal=signals.spider_closed)
        # With JOBDIR: parked requests (in neither scheduler nor downloader)
        # are saved at close and handed back to the engine on resume.
        self._journal = attach_parked_journal(crawler, self)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- the hot path ------------------------------------------------------

    async def _process_request_async(
        self, request: Request, spider: Spider | None = None
    ) -> Request | None:
        """Let ``request`` through (None), raise ``IgnoreRequest``, or hand it back to be parked."""
        outcome = self._check(request)
        if outcome is None or isinstance(outcome, Request):
            return outcome
        await outcome
        return None

    def _process_request_deferred(
        self, request: Request, spider: Spider | None = None
    ) -> Deferred[Request | None] | None:
        """As the stock method before Scrapy 2.14: a Deferred for every request it checks."""
        if request.meta.get("dont_obey_robotstxt"):
            return None
        if self._origin_ref(request.url) is None:
            return None  # like the stock method for data:, file: ... URLs
        try:
            outcome = self._check(request)
        except IgnoreRequest:
            return fail()
        if outcome is None or isinstance(outcome, Request):
            return succeed(outcome)
        return deferred_from_coro(outcome)  # type: ignore[no-any-return]

    # The stock class's calling convention on the installed Scrapy: ``async def``
    # from 2.14 (``await mw.process_request(request)``), a Deferred before.
    process_request = (
        _process_request_async if PROCESS_REQUEST_IS_COROUTINE else _process_request_deferred
    )

    def _check(self, request: Request) -> Request | Coroutine[Any, Any, None] | None:
        """None (let through), raise ``IgnoreRequest``, a Request to hand back, or a wait."""
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
        record = self._store_get(ref.key)
        if record is not None and self._clock() < record.expires_at:
            rules = record.rules or self._rules(record)
            token = self._fixed_token
            if token is None:
                token = self._agent(request)
            if rules.allowed(canonicalize_url(url), token):
                return None
            raise self._forbidden(request)
        return self._process_slow(request, ref, record)

    def _origin_ref(self, url: str) -> _OriginRef | None:
        """The origin of ``url`` through the memo (process_request inlines this)."""
        cut = url.find("/", 8)
        ref = self._origins.get(url if cut < 0 else url[:cut], _UNSEEN)
        return self._resolve(url, cut) if ref is _UNSEEN else ref  # type: ignore[no-any-return]

    def _resolve(self, url: str, cut: int) -> _OriginRef | None:
        prefix = url if cut < 0 else url[:cut]
        try:
            origin = origin_of(url)
        except ValueError as exc:
            # The download fails on its own; there is no robots.txt to ask.
            logger.debug("Not checking %s against robots.txt: %s", url, exc)
            origin = None
        ref = None if origin is None else _OriginRef(origin)
        if len(prefix) <= _MEMO_KEY_MAX:
            if len(self._origins) >= self._memo_size:
                self._origins.clear()
            self._origins[prefix] = ref
        return ref

    def _agent(self, request: Request) -> str:
        # Headers is a dict of normalised (title-case) names to value lists;
        # reading it directly skips Headers.get's per-call normalisation.
        values = dict.get(request.headers, b"User-Agent")
        value = values[-1] if values else None
        if value is None:
            token = self._default_token
            if token is None:
                token = self._default_token = self._token_of(self.config.default_user_agent)
            return token
        token = self._tokens.get(value)
        if token is None:
            if len(self._tokens) >= 1_024:
                self._tokens.clear()
            token = self._tokens[value] = self._token_of(value.decode("latin-1"))
        return token

    def _token_of(self, user_agent: str) -> str:
        token = crawler_token(user_agent)
        if (token == "Mozilla" or not token) and not self._warned_browser:
            # Once per crawl: a rotating browser User-Agent must not flood the log.
            self._warned_browser = True
            logger.warning(
                "robots.txt groups are matched for the product token %(token)r of the "
                "User-Agent %(agent)r, which names no crawler; set ROBOTSTXT_USER_AGENT to "
                "your crawler's name (e.g. 'MyBot') so sites can address it",
                {"token": token, "agent": user_agent},
                extra={"spider": self.crawler.spider},
            )
        return token

    def _rules(self, record: PolicyRecord) -> RobotsTxt:
        """Parsed rules of a record a store returned without them (kept in a small LRU)."""
        if record.outcome is not FetchOutcome.RULES or not record.body:
            return self._empty
        cached = self._parsed.get(record.origin)
        if cached is not None and cached[0] == record.body:
            self._parsed.move_to_end(record.origin)
            return cached[1]
        rules = parse(record.body, max_size=self.config.max_size)
        self._parsed[record.origin] = (record.body, rules)
        if len(self._parsed) > self.config.cache_size:
            self._parsed.popitem(last=False)
        return rules

    def _judge(self, request: Request, rules: RobotsTxt) -> None:
        token = self._fixed_token
        if token is None:
            token = self._agent(request)
        if not rules.allowed(canonicalize_url(request.url), token):
            raise self._forbidden(request)

    def _forbidden(self, request: Request) -> IgnoreRequest:
        logger.debug(
            "Forbidden by robots.txt: %(request)s",
            {"request": request},
            extra={"spider": self.crawler.spider},
        )
        self._stats.inc_value("robotstxt/forbidden")
        return IgnoreRequest(FORBIDDEN_MESSAGE)

    # -- decisions -----------------------------------------------------------

    def _decide(self, record: PolicyRecord | None, now: float) -> tuple[_Action, RobotsTxt, bool]:
        """What a request of this record's origin does now, its rules, whether a fetch is due."""
        if record is None:
            return _Action.WAIT, self._empty, True
        due = record.retry_at is None or now >= record.retry_at
        if record.outcome is not FetchOutcome.UNREACHABLE:
            if now < record.expires_at:
                return _Action.APPLY, record.rules or self._rules(record), False
            if record.unreachable_since is None:
                return _Action.WAIT, self._empty, True
            # The last refresh failed: a stale good copy beats "disallow all" (SPEC B5).
            return _Action.APPLY, record.rules or self._rules(record), due
        since = record.unreachable_since
        if since is not None and now - since >= self.config.unreachable_allow_after:
            return _Action.APPLY, self._empty, due
        if due and self.config.unreachable == "disallow":
            # Time to try again: wait for that fetch instead of dropping at once.
            return _Action.WAIT, self._empty, True
        return _Action.UNREACHABLE, self._empty, due

    def _process_slow(
        self, request: Request, ref: _OriginRef, record: PolicyRecord | None
    ) -> Request | Coroutine[Any, Any, None] | None:
        meta = request.meta
        reason = meta.get(DROP_META)
        if reason:
            raise self._drop(request, reason)
        if self._waited_for(meta.pop(RELEASED_META, None), record):
            assert record is not None
            self._judge(request, record.rules or self._rules(record))
            return None
        action, rules, due = self._decide(record, self._clock())
        if action is _Action.APPLY:
            if due:
                self._refresh_in_background(ref, request, record)
            self._judge(request, rules)
            return None
        if action is _Action.UNREACHABLE and self.config.unreachable == "disallow":
            raise self._drop(request, self._disallow_message(ref))
        if meta.get(SCHEDULED_META) and self._can_park and not self._stopping():
            # Back to the engine: request_scheduled parks it outside the
            # downloader. It passed the duplicate filter once already.
            request.dont_filter = True
            return request
        return self._wait_inline(request, ref)

    @staticmethod
    def _waited_for(fetched_at: float | None, record: PolicyRecord | None) -> bool:
        """True if ``record`` is the good copy a released request waited for."""
        return (
            fetched_at is not None
            and record is not None
            and record.outcome is not FetchOutcome.UNREACHABLE
            and record.fetched_at == fetched_at
        )

    def _disallow_message(self, ref: _OriginRef) -> str:
        return f"robots.txt unreachable for {ref.key} (ROBOTSTXT_UNREACHABLE = 'disallow')"

    def _drop(self, request: Request, reason: str) -> IgnoreRequest:
        self._stats.inc_value("robotstxt/unreachable/dropped")
        logger.info(
            "Dropped %(request)s: %(reason)s",
            {"request": request, "reason": reason},
            extra={"spider": self.crawler.spider},
        )
        return IgnoreRequest(reason)

    # -- parking (request_scheduled) -------------------------------------------

    def _on_request_scheduled(self, request: Request, **_: Any) -> None:
        meta = request.meta
        if meta.get("dont_obey_robotstxt") or meta.get(DROP_META) or self._closing:
            return
        ref = self._origin_ref(request.url)
        if ref is None:
            return
        meta[SCHEDULED_META] = True
        now = self._clock()
        record = self._store.get(ref.key)
        if self._waited_for(meta.get(RELEASED_META), record):
            return
        action, _rules, due = self._decide(record, now)
        if action is _Action.APPLY:
            if due:
                self._refresh_in_background(ref, request, record)
            return
        if action is _Action.UNREACHABLE and self.config.unreachable == "disallow":
            return  # process_request drops it, so that its errback runs
        if self._stopping():
            return  # the scheduler keeps it (JOBDIR) or drops it, as without robots.txt
        self._park(ref, request, record, now)
        # Scrapy >= 2.11.2: the engine drops the request silently (no errback).
        raise IgnoreRequest("Waiting for robots.txt")

    def _park(
        self, ref: _OriginRef, request: Request, record: PolicyRecord | None, now: float
    ) -> None:
        state = self._state(ref)
        since = request.meta.setdefault(WAITING_SINCE_META, now)
        entry = _Parked(request, since + self.config.unreachable_max_wait)
        state.parked.append(entry)
        self._stats.inc_value("robotstxt/parked")
        if record is not None and record.outcome is FetchOutcome.UNREACHABLE:
            self._mark_deferred(entry)
        if state.trigger is None:
            state.trigger = request
        self._advance(state, record, now)
        self._arm_expiry(state, now)
        self._arm_watchdog()

    def _mark_deferred(self, entry: _Parked) -> None:
        if not entry.deferred and self.config.unreachable == "defer":
            entry.deferred = True
            self._stats.inc_value("robotstxt/unreachable/deferred")

    def _state(self, ref: _OriginRef) -> _OriginState:
        state = self._states.get(ref.key)
        if state is None:
            state = self._states[ref.key] = _OriginState(ref.origin, ref.key)
        return state

    def _advance(self, state: _OriginState, record: PolicyRecord | None, now: float) -> None:
        """Make sure something will happen for a waiting origin: a fetch now or a retry timer."""
        if state.fetching or self._stopping():
            return
        if record is None or record.retry_at is None or now >= record.retry_at:
            self._start_fetch(state, record)
        elif state.retry_timer is None:
            state.retry_timer = _Timer(record.retry_at - now, lambda: self._retry_due(state))

    def _retry_due(self, state: _OriginState) -> None:
        state.retry_timer = None
        if not self._stopping() and not state.fetching and state.busy:
            # The timer is the schedule: fetch whatever the (movable) clock says.
            self._start_fetch(state, self._store.get(state.key))
        self._forget_if_idle(state)

    def _arm_expiry(self, state: _OriginState, now: float) -> None:
        if state.expiry_timer is not None or not state.parked or self._closing:
            return
        first = min(entry.deadline for entry in state.parked)
        state.expiry_timer = _Timer(first - now, lambda: self._expire(state))

    def _expire(self, state: _OriginState) -> None:
        """Send parked requests past their max wait back to the engine, marked to be dropped."""
        state.expiry_timer = None
        if self._stopping():
            return
        now = self._clock()
        expired = [entry for entry in state.parked if entry.deadline <= now]
        state.parked = deque(entry for entry in state.parked if entry.deadline > now)
        for entry in expired:
            request = entry.request
            waited = now - request.meta.pop(WAITING_SINCE_META, now)
            request.meta[DROP_META] = (
                f"robots.txt unreachable for {state.key}: gave up after waiting {waited:.0f} s "
                "(ROBOTSTXT_UNREACHABLE_MAX_WAIT)"
            )
            self._crawl(request)
        self._arm_expiry(state, now)
        self._forget_if_idle(state)

    def _release(self, state: _OriginState, record: PolicyRecord | None) -> None:
        """Hand every parked request back to the engine, to be judged by process_request."""
        parked, state.parked = state.parked, deque()
        if state.expiry_timer is not None:
            # Before handing them back: one may be parked again, with a new timer.
            state.expiry_timer.cancel()
            state.expiry_timer = None
        released = 0
        good = record is not None and record.outcome is not FetchOutcome.UNREACHABLE
        for entry in parked:
            meta = entry.request.meta
            meta.pop(WAITING_SINCE_META, None)
            if good:
                assert record is not None
                meta[RELEASED_META] = record.fetched_at
            if entry.deferred:
                released += 1
            self._crawl(entry.request)
        if released:
            self._stats.inc_value("robotstxt/unreachable/released", released)

    def _crawl(self, request: Request) -> None:
        engine = self.crawler.engine
        if engine is None or self._closing:
            return
        engine.crawl(request)

    def _forget_if_idle(self, state: _OriginState) -> None:
        if state.busy:
            return
        for timer in (state.retry_timer, state.expiry_timer):
            if timer is not None:
                timer.cancel()
        state.retry_timer = state.expiry_timer = None
        state.trigger = None
        if self._states.get(state.key) is state:
            del self._states[state.key]

    # -- waiting inline (requests that never went through the scheduler) -------

    async def _wait_inline(self, request: Request, ref: _OriginRef) -> None:
        self._stats.inc_value("robotstxt/inline_waits")
        started = self._clock()
        deadline = started + self.config.unreachable_max_wait
        deferred = False
        while True:
            now = self._clock()
            record = self._store.get(ref.key)
            if (
                record is not None
                and record.outcome is not FetchOutcome.UNREACHABLE
                and record.fetched_at >= started
            ):
                # Fetched while we waited: judged by it, even if already expired.
                rules = record.rules or self._rules(record)
                action = _Action.APPLY
            else:
                action, rules, due = self._decide(record, now)
                if action is _Action.APPLY and due:
                    self._refresh_in_background(ref, request, record)
            if action is _Action.APPLY:
                if deferred:
                    self._stats.inc_value("robotstxt/unreachable/released")
                self._judge(request, rules)
                return
            if action is _Action.UNREACHABLE:
                if self.config.unreachable == "disallow":
                    raise self._drop(request, self._disallow_message(ref))
                if not deferred:
                    deferred = True
                    self._stats.inc_value("robotstxt/unreachable/deferred")
            if now >= deadline or self._stopping():
                raise self._drop(
                    request,
                    f"robots.txt unreachable for {ref.key}: gave up after waiting "
                    f"{now - started:.0f} s",
                )
            state = self._state(ref)
            if state.trigger is None:
                state.trigger = request
            waiter: Deferred[None] = Deferred()
            state.waiters.append(waiter)
            self._advance(state, record, now)
            self._arm_watchdog()
            # Wake up at the deadline, and every few seconds to notice a closing engine.
            timer = _Timer(min(deadline - now, 5.0), lambda w=waiter: _fire(w))  # type: ignore[misc]
            try:
                await maybe_deferred_to_future(waiter)
            finally:
                timer.cancel()
                if waiter in state.waiters:
                    state.waiters.remove(waiter)
                self._forget_if_idle(state)

    # -- fetching ----------------------------------------------------------------

    def _refresh_in_background(
        self, ref: _OriginRef, request: Request, basis: PolicyRecord | None
    ) -> None:
        state = self._state(ref)
        if not state.fetching and not self._stopping():
            state.trigger = state.trigger or request
            self._start_fetch(state, basis)

    def _start_fetch(self, state: _OriginState, basis: PolicyRecord | None) -> None:
        """Start the one fetch of ``state``'s origin; ``basis`` is the record that called for it."""
        state.fetching = True
        if state.retry_timer is not None:
            state.retry_timer.cancel()
            state.retry_timer = None
        done = deferred_from_coro(self._fetch(state, basis))
        done.addErrback(self._log_fetch_bug, state.key)

    def _log_fetch_bug(self, failure: Failure, key: str) -> None:
        logger.error(
            "Unexpected error fetching robots.txt of %(origin)s",
            {"origin": key},
            exc_info=failure_to_exc_info(failure),
            extra={"spider": self.crawler.spider},
        )

    async def _fetch(self, state: _OriginState, basis: PolicyRecord | None) -> None:
        record: PolicyRecord | None = None
        try:
            # Start on a later reactor turn, as the asyncio reactor does anyway:
            # never inside the handler that asked for it (a spider_opened
            # handler may run before other middlewares have set themselves up).
            await _sleep(0.0)
            if await self._lease(state, basis):
                try:
                    self._stats.inc_value("robotstxt/request_count")
                    try:
                        result = await self._fetcher.fetch(state.origin)
                    except Exception as exc:  # a bug; back off as for any failure
                        result = FetchResult(
                            FetchOutcome.UNREACHABLE, f"{type(exc).__name__}: {exc}", exception=exc
                        )
                    previous = self._store.get(state.key)
                    record = self._record(state.key, result, previous, self._clock())
                    self._store.put(record)
                finally:
                    self._store.release_fetch_lease(state.key)
                self._report(state, result, record, previous)
                # Only a fetch that yielded a policy (not an unreachable one
                # that merely kept a previous good copy).
                if result.response is not None and result.outcome is not FetchOutcome.UNREACHABLE:
                    await self._send_robots_parsed(record, state.trigger)
        finally:
            state.fetching = False
            state.trigger = None
            self._after_fetch(state, record)

    async def _lease(self, state: _OriginState, seen: PolicyRecord | None) -> bool:
        """Take the store's fetch lease; False when another process fetched meanwhile.

        A store shared by several processes grants the lease to one of them;
        the others poll the store until a record other than ``seen`` (the one
        they decided to fetch on) appears, or the holder's lease lapses and
        they try again. A record that appeared before the lease was granted
        means the same: someone else just fetched.
        """
        key = state.key
        while not self._store.acquire_fetch_lease(key, self._lease_ttl):
            self._stats.inc_value("robotstxt/fetch_lease/waits")
            give_up = self._clock() + self._lease_ttl
            pause = 0.25
            while True:
                await _sleep(pause)
                if self._stopping():
                    return False
                if self._fetched_elsewhere(key, seen):
                    return False
                if self._clock() >= give_up:
                    break  # the holder's lease has lapsed: try to take it
                pause = min(pause * 2, 5.0)
        if self._stopping() or self._fetched_elsewhere(key, seen):
            # The holder finished between our decision and our lease.
            self._store.release_fetch_lease(key)
            return False
        return True

    def _fetched_elsewhere(self, key: str, seen: PolicyRecord | None) -> bool:
        current = self._store.get(key)
        return current is not None and current != seen

    def _record(
        self, key: str, result: FetchResult, previous: PolicyRecord | None, now: float
    ) -> PolicyRecord:
        config = self.config
        if result.outcome is FetchOutcome.UNREACHABLE:
            failures = (previous.failures if previous is not None else 0) + 1
            since = previous.unreachable_since if previous is not None else None
            retry_at = now + backoff_delay(
                failures, base=config.retry_delay, maximum=config.retry_max_delay
            )
            if previous is not None and previous.outcome is not FetchOutcome.UNREACHABLE:
                # Keep the good copy (and its rules); note the outage.
                return dataclasses.replace(
                    previous,
                    unreachable_since=now if since is None else since,
                    failures=failures,
                    retry_at=retry_at,
                )
            return PolicyRecord(
                origin=key,
                outcome=FetchOutcome.UNREACHABLE,
                status=result.status,
                unreachable_since=now if since is None else since,
                failures=failures,
                retry_at=retry_at,
            )
        response = result.response
        cache_control = response.headers.getlist(b"Cache-Control") if response else None
        ttl = ttl_from_cache_control(
            cache_control,
            default=config.cache_ttl,
            minimum=config.cache_min_ttl,
            maximum=config.cache_max_ttl,
        )
        if result.outcome is FetchOutcome.RULES:
            rules = parse(result.body, max_size=config.max_size)
            body: bytes | None = result.body
        else:
            rules, body = self._empty, None
        return PolicyRecord(
            origin=key,
            outcome=result.outcome,
            body=body,
            status=result.status,
            fetched_at=now,
            expires_at=now + ttl,
            rules=rules,
        )

    def _report(
        self,
        state: _OriginState,
        result: FetchResult,
        record: PolicyRecord,
        previous: PolicyRecord | None,
    ) -> None:
        """Log and count one fetch's outcome."""
        extra = {"spider": self.crawler.spider}
        self._stats.inc_value(f"robotstxt/outcome/{result.outcome.value}")
        if result.outcome is not FetchOutcome.UNREACHABLE:
            if previous is not None and previous.unreachable_since is not None:
                logger.info(
                    "robots.txt of %(origin)s is reachable again after %(outage).0f s "
                    "(%(reason)s); %(waiting)d waiting requests released",
                    {
                        "origin": state.key,
                        "outage": record.fetched_at - previous.unreachable_since,
                        "reason": result.reason,
                        "waiting": len(state.parked) + len(state.waiters),
                    },
                    extra=extra,
                )
            logger.debug(
                "robots.txt of %(origin)s: %(reason)s%(via)s, %(what)s, fresh for %(ttl).0f s",
                {
                    "origin": state.key,
                    "reason": result.reason,
                    "via": f" via {result.redirects[-1]}" if result.redirects else "",
                    "what": (
                        f"{len(record.body or b'')} bytes of rules"
                        if record.outcome is FetchOutcome.RULES
                        else "no rules (everything allowed)"
                    ),
                    "ttl": record.expires_at - record.fetched_at,
                },
                extra=extra,
            )
            return
        next_in = (record.retry_at or 0.0) - self._clock()
        args = {
            "origin": state.key,
            "reason": result.reason,
            "next": next_in,
            "failures": record.failures,
            "waiting": len(state.parked) + len(state.waiters),
        }
        if _is_unexpected(result.exception):
            logger.error(
                "Error downloading robots.txt of %(origin)s: %(reason)s",
                args,
                exc_info=result.exception,
                extra=extra,
            )
        if record.outcome is not FetchOutcome.UNREACHABLE:
            self._stats.inc_value("robotstxt/unreachable/stale_kept")
            logger.log(
                logging.WARNING if record.failures == 1 else logging.DEBUG,
                "robots.txt of %(origin)s could not be refreshed (%(reason)s); keeping the copy "
                "fetched %(age).0f s ago; next attempt in %(next).3g s",
                {**args, "age": self._clock() - record.fetched_at},
                extra=extra,
            )
            return
        since = record.unreachable_since or 0.0
        allow_after = self.config.unreachable_allow_after
        if self._clock() - since >= allow_after:
            self._stats.inc_value("robotstxt/unreachable/allow_after")
            # WARNING when the limit is first crossed, DEBUG at later attempts.
            first_time = True
            if previous is not None and previous.retry_at is not None:
                config = self.config
                last_attempt = previous.retry_at - backoff_delay(
                    previous.failures, base=config.retry_delay, maximum=config.retry_max_delay
                )
                first_time = last_attempt - since < allow_after
            logger.log(
                logging.WARNING if first_time else logging.DEBUG,
                "robots.txt of %(origin)s unreachable for more than "
                "ROBOTSTXT_UNREACHABLE_ALLOW_AFTER (%(limit).0f s) with no copy ever fetched: "
                "everything allowed; next attempt in %(next).3g s",
                {**args, "limit": self.config.unreachable_allow_after},
                extra=extra,
            )
            return
        if self.config.unreachable == "disallow":
            what = "its requests are dropped"
        else:
            what = "%(waiting)d requests wait for it"
        logger.log(
            logging.WARNING if record.failures == 1 else logging.INFO,
            "robots.txt of %(origin)s unreachable (%(reason)s, attempt %(failures)d): "
            + what
            + "; next attempt in %(next).3g s",
            args,
            extra=extra,
        )

    async def _send_robots_parsed(self, record: PolicyRecord, request: Request | None) -> None:
        signal = getattr(signals, "robots_parsed", None)
        if signal is None:  # Scrapy < 2.19
            return
        parser = self._robot_parser(record)
        manager = self.crawler.signals
        send_async = getattr(manager, "send_catch_log_async", None)
        if send_async is not None:
            await send_async(signal=signal, robotparser=parser, request=request)
        else:  # pragma: no cover - every Scrapy with robots_parsed has send_catch_log_async
            manager.send_catch_log(signal=signal, robotparser=parser, request=request)

    def _robot_parser(self, record: PolicyRecord) -> Any:
        """A ``scrapy.robotstxt.RobotParser`` over the record's rules."""
        from scrapy_googlerobots.integration.parser import GoogleRobotParser

        rules = record.rules or self._rules(record)
        from_rules = getattr(GoogleRobotParser, "from_robotstxt", None)
        if from_rules is not None:
            return from_rules(rules)
        return GoogleRobotParser.from_crawler(self.crawler, record.body or b"")

    def _after_fetch(self, state: _OriginState, fetched: PolicyRecord | None) -> None:
        """Release, keep waiting, or re-arm: whatever the new record says.

        ``fetched`` is the record this fetch stored (None when another process
        fetched, or nothing was stored). A good copy just fetched releases the
        waiting requests even if it has already expired (a tiny TTL): each of
        them is judged by the fetch it waited for.
        """
        if not self._closing:  # closing: parked requests are dropped or saved, not released
            now = self._clock()
            record = self._store.get(state.key)
            if fetched is not None and fetched.outcome is not FetchOutcome.UNREACHABLE:
                record = fetched
                self._release(state, record)
            else:
                action, _rules, _due = self._decide(record, now)
                if action is _Action.APPLY or (
                    action is _Action.UNREACHABLE and self.config.unreachable == "disallow"
                ):
                    self._release(state, record)
                elif state.parked:
                    if action is _Action.UNREACHABLE:
                        for entry in state.parked:
                            self._mark_deferred(entry)
                    self._advance(state, record, now)
        # Last: on the classic reactor a waiter resumes its coroutine right here.
        waiters, state.waiters = state.waiters, []
        for waiter in waiters:
            _fire(waiter)
        self._forget_if_idle(state)

    # -- spider lifecycle ------------------------------------------------------

    def _on_spider_idle(self, **_: Any) -> None:
        if not self._closing and any(state.busy for state in self._states.values()):
            raise DontCloseSpider

    def _stopping(self) -> bool:
        """True once the spider has begun closing (noticed here first: shut the waiting down)."""
        if not self._closing and engine_is_closing(self.crawler.engine):
            self._begin_shutdown()
        return self._closing

    def _arm_watchdog(self) -> None:
        """While requests wait, look every ``_WATCH_INTERVAL`` s whether the spider is closing.

        Scrapy sends no signal when a close begins (``spider_closed`` comes
        after in-progress downloads end), and waiting requests must not hold
        a stopping crawl open.
        """
        if self._watchdog is None and not self._closing:
            self._watchdog = _Timer(_WATCH_INTERVAL, self._watch)

    def _watch(self) -> None:
        self._watchdog = None
        if not self._stopping() and any(state.busy for state in self._states.values()):
            self._arm_watchdog()

    def _begin_shutdown(self) -> None:
        """The spider is closing: start no fetch, end every wait.

        Inline waits end with ``IgnoreRequest`` (Scrapy runs their errbacks);
        parked requests get their errback here, once, or, with ``JOBDIR``,
        stay parked for the journal to save at ``spider_closed``.
        """
        self._closing = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        dropped = 0
        for state in list(self._states.values()):
            for timer in (state.retry_timer, state.expiry_timer):
                if timer is not None:
                    timer.cancel()
            state.retry_timer = state.expiry_timer = None
            if self._journal is None:
                parked, state.parked = state.parked, deque()
                reason = f"robots.txt of {state.key} not known yet: the spider is closing"
                for entry in parked:
                    self._errback_dropped(entry.request, reason)
                dropped += len(parked)
            waiters, state.waiters = state.waiters, []
            for waiter in waiters:
                _fire(waiter)
            self._forget_if_idle(state)
        if dropped:
            logger.info(
                "Spider closing: dropped %(count)d requests that were waiting for robots.txt",
                {"count": dropped},
                extra={"spider": self.crawler.spider},
            )

    def _errback_dropped(self, request: Request, reason: str) -> None:
        """Drop a parked request (outside Scrapy's flow): count it, run its errback once."""
        self._stats.inc_value("robotstxt/unreachable/dropped")
        logger.debug(
            "Dropped %(request)s: %(reason)s",
            {"request": request, "reason": reason},
            extra={"spider": self.crawler.spider},
        )
        errback = request.errback
        if errback is None:
            return
        try:
            failure = Failure(IgnoreRequest(reason))  # type: ignore[no-untyped-call]
            failure.request = request  # type: ignore[attr-defined]  # as Scrapy sets it
            output = errback(failure)
            if inspect.iscoroutine(output):
                deferred_from_coro(output).addErrback(self._log_errback_error, request)
            elif inspect.isasyncgen(output):
                deferred_from_coro(_drain_async(output)).addErrback(
                    self._log_errback_error, request
                )
            elif inspect.isgenerator(output):
                # Run the errback's body; what it yields cannot be scheduled any more.
                for _ in output:
                    pass
        except Exception:
            self._log_errback_error(Failure(), request)  # type: ignore[no-untyped-call]

    def _log_errback_error(self, failure: Failure, request: Request) -> None:
        logger.error(
            "Error in the errback of %(request)s (dropped: the spider is closing)",
            {"request": request},
            exc_info=failure_to_exc_info(failure),
            extra={"spider": self.crawler.spider},
        )

    def _on_spider_closed(self, **_: Any) -> None:
        if not self._closing:
            self._begin_shutdown()
        self._closed = True
        waiting = sum(len(state.parked) for state in self._states.values())
        if waiting:
            self._stats.set_value("robotstxt/parked/at_close", waiting)
            logger.info(
                "%(count)d requests were still waiting for robots.txt when the spider closed",
                {"count": waiting},
                extra={"spider": self.crawler.spider},
            )
        self._store.close()

    # -- for persistence (JOBDIR) ---------------------------------------------

    def parked_requests(self) -> list[Request]:
        """Requests waiting here for a robots.txt, per origin in the order they arrived.

        They are in neither the scheduler nor the downloader; a component that
        persists a paused crawl saves them and hands them back with :meth:`park`.
        """
        return [entry.request for state in self._states.values() for entry in state.parked]

    def park(self, request: Request) -> None:
        """Put ``request`` (e.g. restored from a paused crawl) on its way again.

        It waits here if its origin has no usable robots.txt yet, or goes to
        the engine (``engine.crawl``) at once; either way it bypasses the
        duplicate filter and its wait starts now. Call it with the spider open.
        """
        request.dont_filter = True
        request.meta.pop(WAITING_SINCE_META, None)
        request.meta.pop(DROP_META, None)
        origin_ref = self._origin_ref(request.url)
        if origin_ref is None or not self._can_park or request.meta.get("dont_obey_robotstxt"):
            self._crawl(request)
            return
        now = self._clock()
        record = self._store.get(origin_ref.key)
        action, _, _ = self._decide(record, now)
        if action is _Action.APPLY or (
            action is _Action.UNREACHABLE and self.config.unreachable == "disallow"
        ):
            self._crawl(request)
            return
        request.meta[SCHEDULED_META] = True
        self._park(origin_ref, request, record, now)


async def _drain_async(output: Any) -> None:
    async for _ in output:
        pass


def _fire(waiter: Deferred[None]) -> None:
    if not waiter.called:
        waiter.callback(None)


async def _sleep(seconds: float) -> None:
    waiter: Deferred[None] = Deferred()
    _Timer(seconds, lambda: _fire(waiter))
    await maybe_deferred_to_future(waiter)


def _is_unexpected(exc: BaseException | None) -> bool:
    """True for a download failure that is not a network problem (a bug worth a traceback)."""
    if exc is None:
        return False
    import scrapy.exceptions as scrapy_exceptions
    from twisted.internet import error as internet_error
    from twisted.internet.defer import CancelledError
    from twisted.internet.defer import TimeoutError as DeferredTimeoutError
    from twisted.web._newclient import ResponseFailed, ResponseNeverReceived

    expected: tuple[type[BaseException], ...] = (
        OSError,
        internet_error.ConnectError,
        internet_error.ConnectionLost,
        internet_error.ConnectionDone,
        internet_error.DNSLookupError,
        internet_error.TimeoutError,
        DeferredTimeoutError,
        CancelledError,
        ResponseFailed,
        ResponseNeverReceived,
    )
    for name in (
        "CannotResolveHostError",
        "DownloadConnectionRefusedError",
        "DownloadTimeoutError",
        "DownloadCancelledError",
        "DownloadFailedError",
        "ResponseDataLossError",
        "UnsupportedURLSchemeError",
        "NotSupported",
    ):
        found = getattr(scrapy_exceptions, name, None)
        if isinstance(found, type):
            expected += (found,)
    return not isinstance(exc, expected)
