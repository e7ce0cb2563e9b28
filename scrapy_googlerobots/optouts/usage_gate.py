"""AI usage preferences in a crawl: the declared use against robots.txt and ``Content-Usage``.

The crawl declares what it collects content for (``ROBOTSTXT_USAGE``, or per
request the meta key ``robotstxt_usage``). Two sources state preferences:

- robots.txt ``Content-Usage`` / ``Content-Signal`` rules: :meth:`UsageGate.judge`
  runs in ``process_request`` once robots.txt allows a URL of an origin whose
  robots.txt has usage rules (the hot path tests ``RobotsTxt.has_usage`` and
  nothing more). A "no" for a declared category: the request is not downloaded.
- the ``Content-Usage`` response header: :meth:`UsageGate.response` runs in
  ``process_response``. A "no" for a declared category: the response is dropped.
- the page's AI opt-out directives (``noai``, ``noimageai``, ``noml`` in its
  ``X-Robots-Tag`` headers or robots meta tags): a "no" for ``train-ai``, read in
  ``process_response`` only when the request declares a use, and refused like
  the header's, naming the header or tag.

Either way the response gets ``response.meta["usage_preferences"]``, the
effective values ("no wins"), also when the crawl declares nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.policy.page_rules import ai_opt_out
from scrapy_googlerobots.policy.usage import combine, declared_use
from scrapy_googlerobots.reporting.explain import RobotsDecision, UsagePreference, explain_rules
from scrapy_googlerobots.robotstxt import parse_usage_header

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_googlerobots.optouts.page_directives import PageReader
    from scrapy_googlerobots.pagedirectives import Source
    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.reporting.reporter import Reporter
    from scrapy_googlerobots.robotstxt import RobotsTxt, UsageRule

__all__ = ["PREFERENCES_META", "USAGE_HEADER", "USAGE_META", "UsageGate"]

USAGE_META = "robotstxt_usage"
"""Request meta: the categories this request collects content for (replaces ``ROBOTSTXT_USAGE``)."""
PREFERENCES_META = "usage_preferences"
"""Response meta: category -> True / False, the effective preferences (absent: unknown)."""
USAGE_HEADER = b"Content-Usage"

_UNSET: Any = object()
# Distinct header values and meta values remembered (parsed once each), and the
# longest header value remembered (a hostile one is parsed, not kept).
_MEMO_SIZE = 1_024
_MEMO_VALUE_MAX = 512


class UsageGate:
    """The declared use of one crawl, checked against robots.txt and response headers.

    ``explain`` gives the robots.txt decision of a request (the middleware's
    :meth:`~scrapy_googlerobots.GoogleRobotsTxtMiddleware.explain`), for the
    decision of a response dropped for its header.
    """

    def __init__(
        self,
        declared: tuple[str, ...],
        reporter: Reporter,
        explain: Callable[[Request], RobotsDecision | None],
        pages: PageReader | None = None,
    ) -> None:
        self.declared = declared
        # The page directives' reader (ROBOTSTXT_PAGE_DIRECTIVES), for noai & co.
        self._pages = pages
        self._reporter = reporter
        self._explain = explain
        self.seen = False
        """Some robots.txt judged in this crawl has usage rules (process_response looks for
        what :meth:`judge` found only then)."""
        # A request robots.txt stated preferences for -> the rules found, until its
        # response. Weak: a request that never gets one leaves no trace, and a copy
        # (retry, redirect) is a new request, judged afresh.
        self._found: weakref.WeakKeyDictionary[Request, dict[str, UsageRule]] = (
            weakref.WeakKeyDictionary()
        )
        self._pop_found = self._found.pop
        self._headers: dict[bytes, dict[str, bool]] = {}
        self._metas: dict[object, tuple[str, ...]] = {}

    def declared_of(self, request: Request) -> tuple[str, ...]:
        """The categories ``request`` collects content for: its meta ``robotstxt_usage``,
        else ``ROBOTSTXT_USAGE``. ValueError for an unknown category in the meta."""
        value = request.meta.get(USAGE_META, _UNSET)
        if value is _UNSET:
            return self.declared
        key = tuple(value) if isinstance(value, list) else value
        try:
            return self._metas[key]
        except (KeyError, TypeError):  # not seen yet, or unhashable
            pass
        declared = declared_use(value, f"meta {USAGE_META!r} of {request}")
        try:
            if len(self._metas) >= _MEMO_SIZE:
                self._metas.clear()
            self._metas[key] = declared
        except TypeError:
            pass
        return declared

    # -- robots.txt (process_request) ---------------------------------------

    def judge(
        self, request: Request, rules: RobotsTxt, url: str, token: str, ref: OriginRef
    ) -> None:
        """robots.txt (``rules``, with usage rules) allows canonical ``url``: raise
        ``IgnoreRequest`` if it says "no" for a declared category, else keep what it
        says for the response."""
        self.seen = True
        found = rules.usage(url, token)
        if not found:
            return
        robots_url = ref.origin.robots_url
        for category in self.declared_of(request):
            rule = found.get(category)
            if rule is not None and not rule.allowed:
                refused = UsagePreference.of_rule(rule, robots_url)
                explain = partial(explain_rules, rules, url, token, robots_url)
                raise self._reporter.usage_forbidden(request, refused, explain, ref.key)
        self._found[request] = found

    # -- the response header (process_response) ------------------------------

    def response(self, request: Request, response: Response) -> Response:
        """Drop ``response`` (``IgnoreRequest``) if its header says "no" for a declared
        category; give it ``usage_preferences`` when either source states any."""
        found = self._pop_found(request, None) if self.seen else None
        headers = response.headers
        meta = request.meta
        stated = USAGE_HEADER in headers
        page_no = None
        if self._pages is not None and (self.declared or USAGE_META in meta):
            # Only a crawl that declares a use reads the page here (the spider
            # middleware reads it anyway, after the download).
            page_no = self._page_refusal(request, response)
        if found is None and not stated and page_no is None:
            if PREFERENCES_META in meta:
                # Copied from an earlier response's meta: not this response's.
                del meta[PREFERENCES_META]
            return response
        if meta.get("dont_obey_robotstxt"):
            return response  # not ours to judge (robots.txt itself, or the user's opt-out)
        effective = {c: rule.allowed for c, rule in found.items()} if found else {}
        header = self._header(headers.getlist(USAGE_HEADER)) if stated else {}
        if header:
            effective = combine(effective, header)
        if page_no is not None:
            effective = combine(effective, {"train-ai": False})
        if effective:
            meta[PREFERENCES_META] = effective
            self._reporter.usage_response()
        else:
            meta.pop(PREFERENCES_META, None)
        if header:
            for category in self.declared_of(request):
                if header.get(category) is False:
                    refused = UsagePreference.of_header(category, False, response.url)
                    raise self._reporter.usage_forbidden(
                        request, refused, lambda: self._decision_of(request), ""
                    )
        if page_no is not None and "train-ai" in self.declared_of(request):
            # The header or tag quoted whole, as the page wrote it (as `scrapy robots` does).
            refused = UsagePreference.of_page("train-ai", str(page_no), response.url)
            raise self._reporter.usage_forbidden(
                request, refused, lambda: self._decision_of(request), ""
            )
        return response

    def _page_refusal(self, request: Request, response: Response) -> Source | None:
        """The page's AI opt-out directive for our crawler (``noai`` …), if any."""
        if request.meta.get("dont_obey_robotstxt"):
            return None
        assert self._pages is not None
        return ai_opt_out(self._pages.of(response))

    def _header(self, values: list[bytes]) -> dict[str, bool]:
        """The preferences of the ``Content-Usage`` header lines ``values`` (parsed once each)."""
        if not values:
            return {}
        value = b", ".join(values)
        parsed = self._headers.get(value)
        if parsed is None:
            parsed = parse_usage_header(value)
            if len(value) <= _MEMO_VALUE_MAX:
                if len(self._headers) >= _MEMO_SIZE:
                    self._headers.clear()
                self._headers[value] = parsed
        return parsed

    def _decision_of(self, request: Request) -> RobotsDecision:
        """The robots.txt decision for a request whose response was dropped for its header."""
        decision = self._explain(request)
        if decision is not None:
            return decision
        # No robots.txt copy to explain it (none fetched, or unreachable ones only).
        return RobotsDecision(request.url, "", True, 0, None, "", "", has_rules=False)
