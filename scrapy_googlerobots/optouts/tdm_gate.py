"""TDMRep in a crawl: the origin's ``tdmrep.json``, then the ``tdm-*`` header fields, then
the ``<meta name="tdm-*">`` tags, each superseding the last (the spec's order).

:class:`TdmGate` is also ``tdmrep.json``'s
:class:`~scrapy_googlerobots.fetching.policy_file.PolicyFile`: the crawl
fetches, stores and waits for it exactly as for robots.txt.

Only requests that declare a use TDMRep covers (:data:`~scrapy_googlerobots.policy.tdm.TDM_USES`:
``train-ai``, ``ai-use``; ``ROBOTSTXT_USAGE`` or the meta key ``robotstxt_usage``)
meet it:

- :meth:`TdmGate.check_file` runs in ``process_request`` once robots.txt allows
  the URL and the origin's ``tdmrep.json`` is known: a rule reserving the URL
  refuses the request before it is downloaded, as a robots.txt rule would.
- :meth:`TdmGate.response` runs in ``process_response``: the header fields and,
  for an HTML response, the meta tags of its head are put over the file rule
  (``resolve``); a reservation refuses the response.

Either way a response for which the protocol gives an answer gets
``response.meta["tdm_reservation"]``: ``{"reserved": bool, "policy": url or None,
"source": "file" | "header" | "meta", "explanation": str}``.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse

from scrapy_googlerobots.fetching.policy_file import record_of, unparsed
from scrapy_googlerobots.htmlmeta import head_meta
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.tdm import TDMREP_JSON, decide_tdm, tdm_applies
from scrapy_googlerobots.reporting.explain import RobotsDecision
from scrapy_googlerobots.tdmrep import (
    META_NAMES,
    TdmRepFile,
    from_header_values,
    from_meta,
    parse_tdmrep_json,
    resolve,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_googlerobots.fetching.fetcher import FetchResult
    from scrapy_googlerobots.optouts.usage_gate import UsageGate
    from scrapy_googlerobots.policy.decision import Decision
    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.policy.record import FetchTimings, PolicyRecord
    from scrapy_googlerobots.reporting.tdm_reports import TdmReports
    from scrapy_googlerobots.tdmrep import TdmRule, TdmVerdict

__all__ = ["TDM_GAVE_UP_META", "TDM_META", "TDM_RELEASED_META", "TdmGate"]

TDM_META = "tdm_reservation"
"""Response meta: the effective TDMRep reservation of the response (see the module doc)."""
TDM_RELEASED_META = "_robotstxt_tdm_released"
"""``fetched_at`` of the ``tdmrep.json`` record a released request waited for: it is
judged by that copy even if it has expired since (a tiny TTL)."""
TDM_GAVE_UP_META = "_robotstxt_tdm_gave_up"
"""Set on a request whose wait for ``tdmrep.json`` ran out: it goes on as "unset" once
(the spec reads a file it cannot get as no file)."""

_USAGE_META = "robotstxt_usage"
_RESERVATION = b"tdm-reservation"
_POLICY = b"tdm-policy"
# Parsed tdmrep.json files kept (per origin, with the body they were parsed from).
_FILES_SIZE = 4_096
# Bytes of an HTML body searched for the meta tags (the head; as htmlmeta's default).
_HEAD_LIMIT = 65_536
_NO_RULE: Any = object()


class TdmGate:
    """The TDMRep steps of one crawl (see the module doc).

    ``explain`` gives the robots.txt decision of a request (the middleware's
    ``explain``), for :func:`~scrapy_googlerobots.forbidden_by` of a refused one.
    """

    kind = TDMREP_JSON
    released_meta = TDM_RELEASED_META
    gave_up_meta = TDM_GAVE_UP_META
    trigger_meta = _USAGE_META

    def __init__(
        self,
        usage: UsageGate,
        reports: TdmReports,
        explain: Callable[[Request], RobotsDecision | None],
        *,
        max_size: int,
    ) -> None:
        self.always = tdm_applies(usage.declared)
        """The crawl declares a use TDMRep covers (``ROBOTSTXT_USAGE``)."""
        self._declared_of = usage.declared_of
        self._reports = reports
        self.reports = reports.fetches
        self._explain = explain
        self._max_size = max_size
        self.seen = False
        """Some request met the file step (``process_response`` looks only then)."""
        self._files: OrderedDict[str, tuple[bytes, TdmRepFile]] = OrderedDict()
        # A request the file step let through -> the matching rule (None: no rule),
        # until its response. Weak: a request that never gets one leaves no trace.
        self._found: weakref.WeakKeyDictionary[Request, TdmRule | None] = (
            weakref.WeakKeyDictionary()
        )

    def applies(self, request: Request) -> bool:
        """Whether ``request`` declares a use TDMRep covers (meta ``robotstxt_usage``, else
        ``ROBOTSTXT_USAGE``). ValueError for an unknown category in the meta."""
        meta = request.meta
        if _USAGE_META not in meta:
            return self.always
        return tdm_applies(self._declared_of(request))

    def flush_counts(self) -> None:
        """Add the per-response counts kept so far to the stats (at close)."""
        self._reports.flush_counts()

    # -- the policy file ------------------------------------------------------

    needs = applies

    def record(
        self,
        ref: OriginRef,
        result: FetchResult,
        previous: PolicyRecord | None,
        now: float,
        timings: FetchTimings,
    ) -> PolicyRecord:
        """The body is kept as fetched: parsed where it is judged (:meth:`file_of`)."""
        return record_of(ref.key, result, previous, now, timings, parse=unparsed)

    def decide(self, record: PolicyRecord | None, now: float) -> Decision:
        return decide_tdm(record, now)

    def judge(self, request: Request, record: PolicyRecord | None) -> None:
        """:meth:`check_file`, with an unreachable record read as no file."""
        if record is not None and record.outcome is FetchOutcome.UNREACHABLE:
            record = None
        self.check_file(request, record)

    def gave_up(self, request: Request, reason: str) -> None:
        """The wait for the file ran out: the request goes on as "unset"."""
        request.meta.pop(TDM_GAVE_UP_META, None)
        self.unset(request)

    async def fetched(
        self, result: FetchResult, record: PolicyRecord, trigger: Request | None
    ) -> None:
        """Parse a fetched file now, so that an invalid one is reported at its fetch."""
        if result.outcome is FetchOutcome.RULES:
            self.file_of(record)

    def annotate(
        self, request: Request, record: PolicyRecord, decision: RobotsDecision
    ) -> RobotsDecision:
        """``decision`` (robots.txt's, for ``explain()``) with the verdict of ``record``."""
        parsed = self.file_of(record)
        verdict = parsed.explain(request.url) if parsed is not None else resolve(None)
        return dataclasses.replace(decision, tdm=verdict)

    # -- the file (process_request) -------------------------------------------

    def file_of(self, record: PolicyRecord | None) -> TdmRepFile | None:
        """The parsed ``tdmrep.json`` of a record; None when the origin has none (a 4xx,
        unreachable, or a body that is not a JSON array)."""
        if record is None or record.outcome is not FetchOutcome.RULES or record.body is None:
            return None
        key = record.origin
        cached = self._files.get(key)
        if cached is not None and cached[0] == record.body:
            self._files.move_to_end(key)
            parsed = cached[1]
        else:
            origin = TDMREP_JSON.origin_key(key)
            parsed = parse_tdmrep_json(record.body, url=_file_url(origin), max_size=self._max_size)
            if not parsed.valid:
                self._reports.invalid_file(origin, parsed)
            self._files[key] = (record.body, parsed)
            if len(self._files) > _FILES_SIZE:
                self._files.popitem(last=False)
        return parsed if parsed.valid else None

    def check_file(self, request: Request, record: PolicyRecord | None) -> None:
        """robots.txt allows ``request``: raise ``IgnoreRequest`` if the origin's
        ``tdmrep.json`` (``record``; None: no file) reserves its URL, else keep the
        matching rule for the response."""
        self.seen = True
        parsed = self.file_of(record)
        rule = parsed.match(request.url) if parsed is not None else None
        if rule is not None and rule.reservation == 1:
            raise self._reports.forbidden(
                request, resolve(rule), "", lambda: self._decision_of(request)
            )
        self._found[request] = rule

    def unset(self, request: Request) -> None:
        """``request`` goes on without a file step (its wait for the file ran out)."""
        self.seen = True
        self._reports.gave_up()
        self._found[request] = None

    # -- the header and the meta tags (process_response) -----------------------

    def response(self, request: Request, response: Response) -> Response:
        """Put the header and meta steps over the file rule: drop ``response``
        (``IgnoreRequest``) if the result reserves TDM rights, give it ``tdm_reservation``
        when the protocol says anything."""
        meta = request.meta
        rule = self._found.pop(request, _NO_RULE)
        if rule is _NO_RULE:
            # Not checked by the file step: TDMRep does not apply (or robots.txt
            # was not asked). A value copied from an earlier response is not this one's.
            meta.pop(TDM_META, None)
            return response
        headers = response.headers
        reservations = headers.getlist(_RESERVATION)
        policies = headers.getlist(_POLICY)
        header = (
            from_header_values(reservations or None, policies or None)
            if reservations or policies
            else None
        )
        tags = None
        if isinstance(response, HtmlResponse):
            window = response.body[:_HEAD_LIMIT]
            low = window.lower()
            if b"tdm-reservation" in low or b"tdm-policy" in low:
                tags = from_meta(head_meta(window, META_NAMES.__contains__, _HEAD_LIMIT))
        if rule is None and header is None and tags is None:
            meta.pop(TDM_META, None)
            return response
        verdict = resolve(rule, header, tags)
        if verdict.reserved is None:
            meta.pop(TDM_META, None)
            return response
        meta[TDM_META] = {
            "reserved": verdict.reserved,
            "policy": verdict.policy,
            "source": verdict.source.step if verdict.source is not None else None,
            "explanation": verdict.explanation,
        }
        self._reports.response()
        if verdict.reserved:
            raise self._reports.forbidden(
                request, verdict, response.url, lambda: self._decision_of(request, verdict)
            )
        return response

    def _decision_of(self, request: Request, verdict: TdmVerdict | None = None) -> RobotsDecision:
        decision = self._explain(request)
        if decision is None:
            # No robots.txt copy to explain it (none fetched, or unreachable ones only).
            decision = RobotsDecision(request.url, "", True, 0, None, "", "", has_rules=False)
        return decision


def _file_url(origin_key: str) -> str:
    """``https://example.com/.well-known/tdmrep.json`` for ``https://example.com:443``."""
    scheme, _, rest = origin_key.partition("://")
    host, _, port = rest.rpartition(":")
    if (scheme, port) in (("https", "443"), ("http", "80")):
        return f"{scheme}://{host}/.well-known/tdmrep.json"
    return f"{scheme}://{host}:{port}/.well-known/tdmrep.json"
