"""What the crawl hands to its evidence (``ROBOTSTXT_EVIDENCE``): fetches and decisions.

:class:`EvidenceTrail` turns the crawl's own objects into evidence records
(:mod:`scrapy_googlerobots.evidence`):

- a policy file's fetch (its redirect hops, its answer or its failure) into
  WARC records, the answer that became the stored copy under the ID every
  decision judged by that copy names;
- a refusal (the ``IgnoreRequest`` the crawl raises, whose
  :func:`~scrapy_googlerobots.forbidden_by` names the rule, header or tag) into
  a ``forbidden`` decision record; a drop for an unreachable robots.txt too;
- a response handed on to the spider into an ``allowed`` record with the
  page-level signals it carries; its ID goes into
  ``response.meta["robotstxt_evidence"]``.

Built only when the setting is on: with it off the crawl holds no trail and
pays nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response

from scrapy_googlerobots.evidence.capture import exchange_of, page_of
from scrapy_googlerobots.evidence.judge import tdm_decided
from scrapy_googlerobots.evidence.recorder import EVIDENCE_META, EvidenceRecorder
from scrapy_googlerobots.evidence.records import Decision, PolicyRef
from scrapy_googlerobots.evidence.warc import policy_record_id
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import origin_of
from scrapy_googlerobots.reporting.explain import RobotsDecision, forbidden_by

if TYPE_CHECKING:
    from scrapy import Request
    from twisted.python.failure import Failure

    from scrapy_googlerobots.fetching.fetcher import FetchResult
    from scrapy_googlerobots.optouts.page_directives import PageReader
    from scrapy_googlerobots.policy.origin import FileKind
    from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["EVIDENCE_META", "EvidenceTrail"]

logger = logging.getLogger(__name__)

_TDM_META = "tdm_reservation"
_PREFERENCES_META = "usage_preferences"
_ROBOTS_SOURCES = frozenset({"robots.txt", "robots.txt usage rule", "robots.txt unreachable"})


class EvidenceTrail:
    """The crawl's side of its evidence (see the module doc)."""

    def __init__(
        self,
        recorder: EvidenceRecorder,
        *,
        files: Sequence[tuple[FileKind, Callable[[Request], bool]]],
        store_get: Callable[[str], PolicyRecord | None],
        token_of: Callable[[Request], str],
        user_agent_of: Callable[[Request], str],
        declared_of: Callable[[Request], tuple[str, ...]],
        tdm_applies: Callable[[Request], bool],
        explain: Callable[[Request], RobotsDecision | None],
        pages: PageReader | None,
        settings: dict[str, Any],
        stats: Any,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.recorder = recorder
        # The crawl's policy files in the order a request meets them (robots.txt first),
        # each with what tells whether a request needs it.
        self._files = files
        self._store_get = store_get
        self._token_of = token_of
        self._user_agent_of = user_agent_of
        self._declared_of = declared_of
        self._tdm_applies = tdm_applies
        self._explain = explain
        self._pages = pages
        self._settings = settings
        self._stats = stats
        self._clock = clock

    # -- the crawl's hooks -----------------------------------------------------------

    def start(self, **_: Any) -> None:
        """The spider opened: say where the evidence goes; sync it on a schedule."""
        recorder = self.recorder
        recorder.start()
        logger.info(
            "Evidence of this crawl goes to %(directory)s (run %(run)s)",
            {"directory": recorder.directory, "run": recorder.run},
        )

    def close(self, **_: Any) -> None:
        """The spider closed: sync and close the files; their counts in the stats and log."""
        recorder = self.recorder
        recorder.close()
        warc, decisions = recorder.warc.file, recorder.decisions.file
        stats = self._stats
        stats.set_value("robotstxt/evidence/bytes", warc.bytes + decisions.bytes)
        logger.info(
            "Evidence: %(decisions)d decision record(s) in %(jsonl)s, %(warc_bytes)d bytes of "
            "policy files in %(warc)s",
            {
                "decisions": decisions.records,
                "jsonl": decisions.path if decisions.records else "(none)",
                "warc_bytes": warc.bytes,
                "warc": warc.path if warc.records else "(none)",
            },
        )

    def wrap(self, middleware: Any, *, coroutine: bool) -> None:
        """Record each decision of ``middleware`` (its ``process_request`` and
        ``process_response`` replaced, on the instance, by recording wrappers)."""
        middleware.process_request = self.wrap_process_request(
            middleware.process_request, coroutine=coroutine
        )
        middleware.process_response = self.wrap_process_response(middleware.process_response)

    def wrap_process_request(
        self, process_request: Callable[..., Any], *, coroutine: bool
    ) -> Callable[..., Any]:
        """``process_request`` with each refusal before the download recorded."""
        refused = self._request_refused
        if coroutine:

            async def recorded(request: Request, spider: Any = None) -> Any:
                try:
                    return await process_request(request, spider)
                except IgnoreRequest as exc:
                    refused(request, exc)
                    raise

            return recorded

        def recorded_deferred(request: Request, spider: Any = None) -> Any:
            try:
                result = process_request(request, spider)
            except IgnoreRequest as exc:
                refused(request, exc)
                raise
            if result is not None and hasattr(result, "addErrback"):

                def failed(failure: Failure) -> Failure:
                    if isinstance(failure.value, IgnoreRequest):
                        refused(request, failure.value)
                    return failure

                result.addErrback(failed)
            return result

        return recorded_deferred

    def wrap_process_response(
        self, process_response: Callable[..., Response | Request]
    ) -> Callable[..., Response | Request]:
        """``process_response`` with each response refused, or handed on, recorded (a
        request given back instead, e.g. held for its site's pause, is not a decision)."""

        def recorded(
            request: Request, response: Response, spider: Any = None
        ) -> Response | Request:
            try:
                passed = process_response(request, response, spider)
            except IgnoreRequest as exc:
                self.refused(request, exc, response)
                raise
            if isinstance(passed, Response) and not request.meta.get("dont_obey_robotstxt"):
                self.allowed(request, passed)
            return passed

        return recorded

    def _request_refused(self, request: Request, error: BaseException) -> None:
        """``process_request`` raised ``error``: a refusal (its rule named) or a drop."""
        if forbidden_by(error) is not None:
            self.refused(request, error)
        else:
            self.dropped(request, str(error))

    # -- fetches -------------------------------------------------------------------

    def fetched(
        self, file: str, key: str, result: FetchResult, record: PolicyRecord | None
    ) -> None:
        """One fetch of ``file`` for store key ``key``: its hops, then its answer or failure.

        ``record``: what the fetch stored; its fetch time names the answer's record when
        the answer is the copy (not for a failure that kept an earlier copy).
        """
        recorder, at = self.recorder, self._clock()
        self._stats.inc_value("robotstxt/evidence/fetches")
        for hop in result.hops:
            recorder.fetched(exchange_of(file, hop.request, hop, at=at))
        response = result.response
        if response is None:
            request = result.request
            if request is not None:
                recorder.fetched(exchange_of(file, request, None, at=at, error=result.reason), key)
            return
        record_id = None
        if result.outcome is not FetchOutcome.UNREACHABLE and record is not None:
            at = record.fetched_at
            record_id = policy_record_id(key, at)
        if result.outcome is FetchOutcome.RULES:
            body = result.body
            altered = body != response.body
        else:
            body, altered = response.body, False
        limit = self._settings.get("max_size") or len(body)
        cut = len(body) > limit
        recorder.fetched(
            exchange_of(
                file,
                response.request,
                response,
                at=at,
                body=body[:limit] if cut else body,
                inflated=altered and not result.truncated,
                truncated=result.truncated or cut,
                record_id=record_id,
            ),
            key,
        )

    # -- decisions -------------------------------------------------------------------

    def refused(
        self, request: Request, error: BaseException, response: Response | None = None
    ) -> None:
        """A request refused before its download (``response`` None) or after it."""
        decision = forbidden_by(error)
        if decision is None:
            return
        decided, because = _decided_by(decision)
        self._write(request, "forbidden", decided, because, response)

    def dropped(self, request: Request, reason: str) -> None:
        """A request dropped because its origin's robots.txt is unreachable."""
        origin = _origin(request.url)
        robots_url = origin.robots_url if origin is not None else ""
        decided = {"source": "robots.txt unreachable", "url": robots_url, "reason": reason}
        self._write(request, "forbidden", decided, reason, None)

    def allowed(self, request: Request, response: Response) -> None:
        """``response`` goes on to the spider: its ``allowed`` record, with its signals."""
        decision = self._explain(request)
        if decision is None:
            return  # no robots.txt for it (data:, file: ...) or none known: nothing obeyed
        decided, because = _decided_by(decision)
        signals: dict[str, Any] = {}
        meta = request.meta
        if _PREFERENCES_META in meta:
            signals["usage_preferences"] = meta[_PREFERENCES_META]
        if _TDM_META in meta:
            signals["tdm_reservation"] = meta[_TDM_META]
        if self._pages is not None:
            directives = self._pages.of(response)
            if not directives.empty:
                signals["page_directives"] = [
                    f"{name} ({source})" for name, source in directives.explain()
                ]
        self._write(request, "allowed", decided, because, response, signals)

    def _write(
        self,
        request: Request,
        verdict: str,
        decided: dict[str, Any],
        because: str,
        response: Response | None,
        signals: dict[str, Any] | None = None,
    ) -> None:
        token = self._token_of(request)
        try:
            use = self._declared_of(request)
            tdm = self._tdm_applies(request)
        except ValueError:
            use, tdm = (), False
        # robots.txt decides first: a request it refuses was never judged by tdmrep.json.
        past_robots = response is not None or decided.get("source") not in _ROBOTS_SOURCES
        policies = self._policies(request, past_robots)
        settings = {**self._settings, "tdm_checked": tdm}
        decision = Decision(
            url=request.url,
            canonical=canonicalize_url(request.url),
            verdict=verdict,  # type: ignore[arg-type]
            stage="request" if response is None else "response",
            because=because,
            decided_by=decided,
            token=token,
            user_agent=self._user_agent_of(request),
            use=use,
            at=self._clock(),
            policies=policies,
            page=page_of(response, token) if response is not None else None,
            signals=signals,
            settings=settings,
        )
        request.meta[EVIDENCE_META] = self.recorder.decided(decision)
        self._stats.inc_value(f"robotstxt/evidence/{verdict}")

    def _policies(self, request: Request, past_robots: bool) -> tuple[PolicyRef, ...]:
        """The policy files the decision on ``request`` was judged by: robots.txt, and the
        later files it needs once robots.txt let it through (``past_robots``)."""
        origin = _origin(request.url)
        if origin is None:
            return ()
        refs = []
        for index, (kind, needs) in enumerate(self._files):
            if index:
                if not past_robots:
                    break
                try:
                    if not needs(request):
                        continue
                except ValueError:
                    continue
            url = kind.url_for(origin)
            if url is None:
                continue
            key = kind.store_prefix + origin.key
            record = self._store_get(key)
            if record is None:
                continue
            ref = self.recorder.policy_ref(kind.name, key, url, record)
            # A later file never had (no answer known here): no file, as the crawl read it.
            if index and not ref.warc_record_id:
                continue
            refs.append(ref)
        return tuple(refs)


def _origin(url: str) -> Any:
    try:
        return origin_of(url)
    except ValueError:
        return None


def _decided_by(decision: RobotsDecision) -> tuple[dict[str, Any], str]:
    """``decided_by`` and ``because`` of a decision the crawl explains."""
    because = str(decision)
    if decision.tdm_refused is not None:
        return tdm_decided(decision.tdm_refused), because
    refused = decision.usage_refused
    if refused is not None:
        if refused.from_page:
            return {
                "source": "page directive",
                "category": refused.category,
                "directive": refused.directive,
                "url": refused.source,
            }, because
        if refused.from_header:
            return {
                "source": "Content-Usage header",
                "category": refused.category,
                "value": refused.value,
            }, because
        return {
            "source": "robots.txt usage rule",
            "url": refused.source,
            "line": refused.line,
            "category": refused.category,
            "rule": refused.rule,
        }, because
    decided: dict[str, Any] = {
        "source": "robots.txt",
        "url": decision.robots_url,
        "line": decision.line,
        "rule": decision.directive,
        "group": decision.group,
    }
    if not decision.has_rules:
        decided["has_rules"] = False
    return decided, because
