"""TDMRep in a crawl: the origin's ``tdmrep.json``, then the ``tdm-*`` header fields, then
the ``<meta name="tdm-*">`` tags, each superseding the last (the spec's order).

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

import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse

from scrapy_googlerobots.htmlmeta import head_meta, may_name
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.tdm import TDM_STORE_PREFIX, tdm_applies
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

    from scrapy_googlerobots.optouts.usage_gate import UsageGate
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.reporting.tdm_reports import TdmReports
    from scrapy_googlerobots.tdmrep import TdmRule, TdmVerdict

__all__ = ["TDM_META", "TdmGate"]

TDM_META = "tdm_reservation"
"""Response meta: the effective TDMRep reservation of the response (see the module doc)."""

_USAGE_META = "robotstxt_usage"
_RESERVATION = b"tdm-reservation"
_POLICY = b"tdm-policy"
# Parsed tdmrep.json files kept (per origin, with the body they were parsed from).
_FILES_SIZE = 4_096
_META_NAMES = tuple(sorted(META_NAMES))
_NO_RULE: Any = object()


class TdmGate:
    """The TDMRep steps of one crawl (see the module doc).

    ``explain`` gives the robots.txt decision of a request (the middleware's
    ``explain``), for :func:`~scrapy_googlerobots.forbidden_by` of a refused one.
    """

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
            origin = key.removeprefix(TDM_STORE_PREFIX)
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
        if isinstance(response, HtmlResponse) and may_name(response.body, _META_NAMES):
            # The head as an HTML5 parser builds it (a meta in the body lifts nothing).
            found = head_meta(
                response.body, META_NAMES.__contains__, encoding=lambda: response.encoding
            )
            if found:
                tags = from_meta(found)
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
