"""GoogleRobotsTxtMiddleware: Scrapy's robots.txt middleware, with Google's rules (SPEC part B).

The class is the Scrapy shell: it answers :meth:`~GoogleRobotsTxtMiddleware.process_request`
from the cache (the hot path), wires the signals and delegates the rest to
parts :func:`~scrapy_googlerobots.crawl.factory.build` makes. A request meets,
in order, each per-origin policy file's step
(:class:`~scrapy_googlerobots.waiting.file_step.FileStep`: robots.txt, then
``tdmrep.json`` for a request declaring a use TDMRep covers): the file's
decision on its record, then its waiting. A request of an origin with a fresh
robots.txt copy meets no other handler of ours.

A request whose origin's file is not known yet is *parked* in the file's
waiting room, outside the scheduler and the downloader
(:class:`~scrapy_googlerobots.waiting.parking.Parking`): at
``request_scheduled`` while some origin is pending, or handed back once by
:meth:`process_request` (with ``dont_filter``: it passed the duplicate filter
already); one that cannot be handed back waits inline, as the stock middleware
does. The origin's one fetch releases them, and each is judged by the copy it
waited for. At a stop, parked requests are handed over where the crawl goes on
(:class:`~scrapy_googlerobots.waiting.handover.HandOver`).

A request of the spider for an origin's robots.txt itself is answered from
the copy fetched when it can stand for the download
(:mod:`~scrapy_googlerobots.fetching.robots_serve`). AI usage preferences are
checked by :class:`~scrapy_googlerobots.optouts.usage_gate.UsageGate`, TDMRep's
header and meta steps by :class:`~scrapy_googlerobots.optouts.tdm_gate.TdmGate`
in :meth:`process_response`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred, fail, succeed

from scrapy_googlerobots.crawl.bad_setting import RefuseEverything
from scrapy_googlerobots.crawl.factory import build
from scrapy_googlerobots.evidence.recorder import check_evidence
from scrapy_googlerobots.fetching.robots_serve import ROBOTS_PATH
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.slowdown import SLOW_DOWN_STATUSES
from scrapy_googlerobots.reporting.reporter import FORBIDDEN_MESSAGE
from scrapy_googlerobots.runtime.config import RobotsConfig
from scrapy_googlerobots.runtime.scrapy_compat import (
    PROCESS_REQUEST_IS_COROUTINE,
)

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_googlerobots.crawl.factory import Parts
    from scrapy_googlerobots.fetching.policy_file import PolicyFile
    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.reporting.explain import RobotsDecision
    from scrapy_googlerobots.reporting.summary import CrawlSummary
    from scrapy_googlerobots.waiting.slow_down import SlowDownGate

__all__ = ["FORBIDDEN_MESSAGE", "GoogleRobotsTxtMiddleware"]

_UNSEEN: Any = object()
_NO_KEY = "\0"  # a meta key no request has: no later file is triggered by meta


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
        parts = self._parts = build(self, config, self._clock)
        # scheme://authority prefix of a URL -> its origin (None: no robots.txt).
        self._origins = parts.memo.refs
        self._resolve = parts.memo.resolve
        self._origin_ref = parts.memo.ref
        self._store = parts.store
        self._store_get = parts.store.get
        self._reporter = parts.reporter
        self._rules_of = parts.rules.rules_of
        self._agents = parts.agents
        self._fixed_token = parts.agents.fixed
        self._usage = parts.usage
        self._usage_judge = parts.usage.judge
        self._tdm = parts.tdm
        self._parking = parts.parking
        assert parts.chain and parts.server and parts.explainer, "built by build()"
        self._run = parts.chain.run
        self._server = parts.server
        self._explainer = parts.explainer
        self._pacer = parts.pacer
        self._gate = parts.gate
        # Requests that may need a later file than robots.txt: all of them, or those
        # whose meta has the one key that may make them (cheap to test per request).
        later = [step.file for step in parts.steps[1:]]
        keys = {file.trigger_meta for file in later if not file.always}
        self._later_always = any(file.always for file in later) or len(keys) > 1
        self._trigger = keys.pop() if len(keys) == 1 else _NO_KEY
        if parts.evidence is not None:  # off, the methods stay the class's own
            parts.evidence.wrap(self, coroutine=PROCESS_REQUEST_IS_COROUTINE)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | RefuseEverything:
        try:
            config = RobotsConfig.from_settings(crawler.settings)
            if config.obey and config.evidence:
                check_evidence(config.evidence)  # warcio installed, the directory made
        except ValueError as exc:  # a ROBOTSTXT_* setting that cannot work: one clear line
            if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
                raise NotConfigured from None
            return RefuseEverything(crawler, str(exc))
        return cls(crawler)

    def _policy_files(self, parts: Parts) -> list[PolicyFile]:
        """The per-origin policy files of the crawl, in the order a request meets them."""
        return [parts.robots, parts.tdm]

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
        # The origin memo (policy.origin.OriginMemo.ref), inlined: this is the hot path.
        cut = url.find("/", 8)
        ref = self._origins.get(url if cut < 0 else url[:cut], _UNSEEN)
        if ref is _UNSEEN:
            ref = self._resolve(url, cut)
        if ref is None:
            return None
        gate = self._gate
        if gate is not None and gate.site.engaged:  # a pause, a slow-down, cluster pacing
            held = await gate.before(request, ref.key)
            if held is not None:
                return held
        record = self._store_get(ref.key)
        if record is not None and self._clock() < record.expires_at:
            # robots.txt's step on a fresh copy, inlined.
            rules = record.rules or self._rules_of(record)
            token = self._fixed_token
            if token is None:
                token = self._agents.of(request)
            canonical = canonicalize_url(url)
            line = rules.deciding_line(canonical, token)
            if line < 0:
                raise self._reporter.forbidden(request, rules, canonical, token, ref, -line)
            if rules.has_usage:
                self._usage_judge(request, rules, canonical, token, ref)
            # The spider's own robots.txt request, answered from the copy, is
            # the crawl's control file: no later file judges it.
            if url.endswith(ROBOTS_PATH):
                served = self._server.serve(request, ref, record)
                if served is not None:
                    return served
            if not self._later_always and self._trigger not in meta:
                return None
            outcome = self._run(request, ref, 1)  # the later files' steps
        else:
            outcome = self._run(request, ref, 0)  # every file's step, robots.txt's first
        if outcome is None or isinstance(outcome, (Request, Response)):
            return outcome
        return await outcome

    def _process_request_deferred(
        self, request: Request, spider: Spider | None = None
    ) -> Deferred[Request | Response | None] | None:
        """As the stock method before Scrapy 2.14: a Deferred for every request it checks."""
        ref = None if request.meta.get("dont_obey_robotstxt") else self._origin_ref(request.url)
        if ref is None:
            return None  # like the stock method for data:, file: ... URLs
        gate = self._gate
        if gate is not None and gate.site.engaged:
            return deferred_from_coro(self._gated(request, ref, gate))  # type: ignore[no-any-return]
        try:
            outcome = self._run(request, ref, 0)
        except IgnoreRequest:
            return fail()
        if outcome is None or isinstance(outcome, (Request, Response)):
            return succeed(outcome)
        return deferred_from_coro(outcome)  # type: ignore[no-any-return]

    async def _gated(
        self, request: Request, ref: OriginRef, gate: SlowDownGate
    ) -> Request | Response | None:
        """The Deferred convention while the gate is engaged: its wait, then every step."""
        held = await gate.before(request, ref.key)
        if held is not None:
            return held
        outcome = self._run(request, ref, 0)
        if outcome is None or isinstance(outcome, (Request, Response)):
            return outcome
        return await outcome

    # The stock class's calling convention on the installed Scrapy: ``async def``
    # from 2.14 (``await mw.process_request(request)``), a Deferred before.
    process_request = (
        _process_request_async if PROCESS_REQUEST_IS_COROUTINE else _process_request_deferred
    )

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response | Request:
        """Give ``response.meta["usage_preferences"]`` to a response that carries AI usage
        preferences (robots.txt, its ``Content-Usage`` header); raise ``IgnoreRequest``
        when its header says "no" for a use the request declares. A 429/503 that paused
        its origin comes back as its request, to be held for the pause."""
        gate = self._gate
        if gate is not None and response.status in SLOW_DOWN_STATUSES:
            again = gate.held_again(request, response)
            if again is not None:
                return again
        response = self._usage.response(request, response)
        if self._tdm.seen:
            return self._tdm.response(request, response)
        return response

    def _on_request_scheduled(self, request: Request, **_: Any) -> None:
        self._parking.on_request_scheduled(request)

    # -- what the crawl knows ------------------------------------------------------

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
        decision = self._explainer.explain(request)
        gate = self._gate
        return decision if gate is None else gate.explained(decision, request.url)

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
        return self._explainer.sitemaps(url)

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
        return self._parking.parked_requests()

    def park(self, request: Request) -> None:
        """Put ``request`` (e.g. restored from a paused crawl) on its way again.

        It waits here if its origin has no usable robots.txt yet, or goes to
        the engine (``engine.crawl``) at once; either way it bypasses the
        duplicate filter. Its wait counts from when it was first parked (kept
        in its meta by :meth:`parked_requests`), as
        ``ROBOTSTXT_UNREACHABLE_MAX_WAIT`` says, or from now if it never was.
        Call it with the spider open.
        """
        self._parking.park(request)
