"""Page-level robots directives in a crawl: ``X-Robots-Tag`` headers and robots meta tags.

:class:`PageReader` reads a response's directives for the crawl's product
token once (its ``X-Robots-Tag`` headers and, for an HTML response, the meta
tags of its head; the core's :func:`~scrapy_googlerobots.pagedirectives.from_headers_and_body`),
shared by both middlewares of a crawl (:func:`reader_for`).

:class:`PageDirectivesMiddleware`, a spider middleware, applies them:

- every response with directives gets ``response.meta["page_directives"]``;
- ``nofollow`` (or ``none``): requests the callback yields are not scheduled;
- ``noindex`` (or ``none``, or a past ``unavailable_after``): items are kept
  and counted (and marked in a field, if asked), or dropped;
- with ``ROBOTSTXT_PAGE_REL_NOFOLLOW``, requests for link targets the page
  links only with those ``rel`` values are not scheduled;
- ``noai`` / ``noimageai`` / ``noml``: ``train-ai`` is "no" in
  ``response.meta["usage_preferences"]``; a crawl that declares that use has the
  response refused earlier, by :class:`~.usage_gate.UsageGate`.

A response without ``X-Robots-Tag`` that is not HTML costs a dict lookup and an
``isinstance``; an HTML one a read of its head (:func:`~scrapy_googlerobots.htmlmeta.head_meta`,
which stops where the head ends), once per response.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from itemadapter import ItemAdapter
from scrapy import Request, signals
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredList
from w3lib.url import canonicalize_url

from scrapy_googlerobots.pagedirectives import EMPTY, PageDirectives, from_headers_and_body
from scrapy_googlerobots.policy.page_rules import ai_opt_out
from scrapy_googlerobots.policy.usage import combine
from scrapy_googlerobots.reporting.explain import (
    PAGE_FORBIDDEN_MESSAGE,
    PageRefusal,
    RobotsDecision,
    page_decision,
    page_forbidden,
)
from scrapy_googlerobots.reporting.page_report import PageReporter
from scrapy_googlerobots.runtime.agents import AgentTokens
from scrapy_googlerobots.runtime.config import RobotsConfig
from scrapy_googlerobots.runtime.scrapy_compat import send_signal

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_googlerobots.pagedirectives import Source

__all__ = [
    "DIRECTIVES_META",
    "X_ROBOTS_TAG",
    "PageDirectivesMiddleware",
    "PageReader",
    "reader_for",
]

DIRECTIVES_META = "page_directives"
"""Response meta: the :class:`~scrapy_googlerobots.pagedirectives.PageDirectives` in effect."""
PREFERENCES_META = "usage_preferences"
X_ROBOTS_TAG = b"X-Robots-Tag"
_NO_TRAINING = {"train-ai": False}


_T = TypeVar("_T")


class ResponseMemo(Generic[_T]):
    """A value per response, kept while the response lives.

    A dict by ``id()`` holding a plain weak reference to check the key with: no
    callback per entry (a ``WeakKeyDictionary`` entry costs several times more);
    dead entries are swept when the dict has doubled since the last sweep.
    """

    __slots__ = ("entries", "sweep_at")
    # (The spider middleware reads ``entries`` inline: once per response.)

    def __init__(self) -> None:
        self.entries: dict[int, tuple[weakref.ReferenceType[Response], _T]] = {}
        """id(response) -> (weak reference to it, value); empty: nothing remembered."""
        self.sweep_at = 256
        """Entries at which the next :meth:`sweep` is due."""

    def get(self, response: Response) -> _T | None:
        """The value remembered for ``response``, or None."""
        entry = self.entries.get(id(response))
        if entry is not None and entry[0]() is response:
            return entry[1]
        return None  # none, or one of a dead response whose id was reused

    def put(self, response: Response, value: _T) -> None:
        """Remember ``value`` for ``response``."""
        entries = self.entries
        entries[id(response)] = (weakref.ref(response), value)
        if len(entries) >= self.sweep_at:
            self.sweep()

    def sweep(self) -> None:
        """Forget the values of dead responses."""
        live = {key: entry for key, entry in self.entries.items() if entry[0]() is not None}
        self.entries = live
        self.sweep_at = max(256, 2 * len(live))

    def __len__(self) -> int:
        return len(self.entries)


class PageReader:
    """The page directives of responses for the product token their request is judged for.

    Read once per response object (both middlewares of a crawl share one reader,
    :func:`reader_for`): the downloader middleware reads them only when the crawl
    declares an AI use, the spider middleware for every response it handles.
    """

    __slots__ = ("_memo", "tokens")

    def __init__(self, tokens: AgentTokens) -> None:
        self.tokens = tokens
        # Weak: a response leaves nothing behind once Scrapy drops it.
        self._memo: ResponseMemo[PageDirectives] = ResponseMemo()

    def token(self, response: Response) -> str:
        """The product token ``response``'s request is judged for."""
        fixed = self.tokens.fixed
        if fixed is not None:
            return fixed
        request = getattr(response, "request", None)
        if request is None:  # a response built by hand (tests, scrapy shell)
            return self.tokens.of(Request("data:,"))
        return self.tokens.of(request)

    def of(self, response: Response, *, remember: bool = True) -> PageDirectives:
        """``response``'s directives in effect (:data:`~scrapy_googlerobots.pagedirectives.EMPTY`
        when it has none), read once if ``remember`` (for a later caller: the
        spider middleware after the downloader middleware's usage gate)."""
        # Headers is a dict of normalised names to value lists (no per-call normalisation).
        values = dict.get(response.headers, X_ROBOTS_TAG)
        html = isinstance(response, HtmlResponse)
        if not values and not html:
            return EMPTY
        memo = self._memo
        if memo.entries:
            found = memo.get(response)
            if found is not None:
                return found
        if isinstance(response, HtmlResponse):  # (html, for the type checker)
            directives = from_headers_and_body(
                values,
                response.body,
                lambda: self.token(response),  # asked only for a header or a <meta>
                content_type_is_html=True,
                # Read as Scrapy decodes the page (BOM, header, <meta charset>), asked
                # only when a meta needs it (the response memoizes it for the callback).
                encoding=lambda: response.encoding,
            )
        else:
            directives = from_headers_and_body(
                values, None, self.token(response), content_type_is_html=False
            )
        if remember:
            memo.put(response, directives)  # "no directives" too
        return directives


_READERS: weakref.WeakKeyDictionary[Crawler, PageReader] = weakref.WeakKeyDictionary()


def reader_for(crawler: Crawler, config: RobotsConfig) -> PageReader:
    """The :class:`PageReader` of ``crawler`` (one per crawl, made on first use)."""
    reader = _READERS.get(crawler)
    if reader is None:
        tokens = AgentTokens(
            config.user_agent,
            config.default_user_agent,
            lambda: {"spider": crawler.spider},
            warn=False,
        )
        reader = _READERS[crawler] = PageReader(tokens)
    return reader


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one response's directives enforce on what its callback yields."""

    token: str
    nofollow: tuple[PageRefusal, str] | None = None
    """The refusal and its stat key (``nofollow`` or ``none``)."""
    noindex: tuple[PageRefusal, str] | None = None
    """The refusal and its stat key (``noindex``, ``none`` or ``unavailable_after``)."""
    links: dict[str, PageRefusal] | None = None
    """Canonical URL -> refusal, for targets linked only with a ``rel`` hint we obey."""


@dataclass(frozen=True, slots=True)
class _Dropped:
    """An item ``"drop"`` refused, with the ``DropItem`` its ``item_dropped`` carries."""

    item: Any
    error: Exception


_NOTHING = _Plan("")
"""The remembered plan of a page whose directives enforce nothing and say nothing."""

_REPORTED = _Plan("")
"""The plan of a page whose directives enforce nothing: remembered so that they are
counted and logged once."""


def _key(source: Source, canonical: str) -> str:
    """The stat key of a directive: ``none`` when the page said ``none``, else ``canonical``."""
    return "none" if source.directive.strip().lower() == "none" else canonical


class PageDirectivesMiddleware:
    """Spider middleware applying page-level robots directives (see the module doc).

    Installed by the add-on next to the downloader middleware; by hand:
    ``SPIDER_MIDDLEWARES = {"scrapy_googlerobots.PageDirectivesMiddleware": 950}``.
    Off (``NotConfigured``) when ``ROBOTSTXT_OBEY`` or ``ROBOTSTXT_PAGE_DIRECTIVES`` is off.
    """

    def __init__(self, crawler: Crawler) -> None:
        try:
            config = RobotsConfig.from_settings(crawler.settings)
        except ValueError as exc:  # the robots.txt middleware reports it, and crawls nothing
            raise NotConfigured(str(exc)) from None
        if not config.obey or not config.page_directives:
            raise NotConfigured
        self.crawler = crawler
        self.config = config
        self._reader = reader_for(crawler, config)
        self._report = PageReporter(crawler)
        self._nofollow = config.page_nofollow
        self._drop_items = config.page_noindex_items == "drop"
        self._field = config.page_noindex_field
        self._rel = frozenset(config.page_rel_nofollow)
        # The response read last whose output has not been seen, with its plan: held
        # strongly while its callback runs, the common case, which then costs no
        # memo; moved to the memo when another response is read first.
        self._pending: tuple[Response, _Plan] | None = None
        # Response -> what its output meets (_NOTHING: nothing), weak like the reader's.
        self._plans: ResponseMemo[_Plan] = ResponseMemo()
        # item_dropped sends a sync callback's output could not wait for; the close does.
        self._sending: set[Deferred[None]] = set()
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- Scrapy's hooks ----------------------------------------------------------

    def process_spider_input(self, response: Response, spider: Spider | None = None) -> None:
        """Read ``response``'s directives before its callback runs: its meta gets them."""
        pending = self._pending
        if pending is not None:
            if pending[0] is response:
                return  # read already
            self._pending = None
            self._keep(*pending)  # its output is still to come: remembered weakly
        entries = self._plans.entries
        if entries:
            entry = entries.get(id(response))
            if entry is not None and entry[0]() is response:
                return  # read already
        self._pending = (response, self._read(response) or _NOTHING)

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any], spider: Spider | None = None
    ) -> Iterable[Any]:
        """Drop the requests and items the directives of ``response`` refuse (sync callbacks)."""
        plan = self._plan_of(response) if isinstance(response, Response) else None
        if plan is None or plan is _REPORTED:
            return result
        return self._filter(plan, response, result)  # type: ignore[arg-type]

    async def process_spider_output_async(
        self,
        response: Response | None,
        result: AsyncIterator[Any],
        spider: Spider | None = None,
    ) -> AsyncIterator[Any]:
        """As :meth:`process_spider_output`, for asynchronous spider output."""
        plan = self._plan_of(response) if isinstance(response, Response) else None
        if plan is None or plan is _REPORTED:
            async for output in result:
                yield output
            return
        assert response is not None
        async for output in result:
            kept = self._judge(plan, response, output)
            if type(kept) is _Dropped:
                await self._item_dropped(kept, response)
            elif kept is not None:
                yield kept

    def _filter(self, plan: _Plan, response: Response, result: Iterable[Any]) -> Iterable[Any]:
        for output in result:
            kept = self._judge(plan, response, output)
            if type(kept) is _Dropped:
                sending = deferred_from_coro(self._item_dropped(kept, response))
                self._sending.add(sending)
                sending.addBoth(self._sent, sending)
            elif kept is not None:
                yield kept

    # -- deciding ------------------------------------------------------------------

    def _plan_of(self, response: Response) -> _Plan | None:
        """What ``response``'s directives enforce on its output (None: nothing), read
        once: by :meth:`process_spider_input`, or here if it did not see the response."""
        pending = self._pending
        if pending is not None and pending[0] is response:
            plan = pending[1]
            if plan is _NOTHING:
                # Its output is seen once: nothing left to keep (a second look, after
                # another middleware's recovery, reads it again, unseen).
                self._pending = None
                return None
            return plan  # kept: a second look finds it, counted once
        entries = self._plans.entries
        key = id(response)
        entry = entries.get(key)
        if entry is not None and entry[0]() is response:
            plan = entry[1]
            if plan is _NOTHING:
                del entries[key]
                return None
            return plan
        plan = self._read(response) or _NOTHING  # not seen by process_spider_input
        self._keep(response, plan)
        return None if plan is _NOTHING else plan

    def _keep(self, response: Response, plan: _Plan) -> None:
        """Remember ``response``'s plan weakly, until its output is seen."""
        # An HTML page is remembered with nothing to enforce too (read once);
        # any other response without directives costs less to look at again.
        if plan is not _NOTHING or isinstance(response, HtmlResponse):
            self._plans.put(response, plan)

    def _read(self, response: Response) -> _Plan | None:
        """Read ``response``'s directives: its meta, the stats, the log; what they enforce.

        Runs once per response (:meth:`_plan_of` remembers its plan, "nothing to
        enforce" included).
        """
        # The plan is remembered (_plan_of): the reader need not remember the page.
        directives = self._reader.of(response, remember=False)
        meta = _meta(response)
        if directives is EMPTY:
            if meta is not None and DIRECTIVES_META in meta:
                del meta[DIRECTIVES_META]  # copied from an earlier response's meta
            return self._rel_plan(response, None) if self._rel else None
        token = self._reader.token(response)
        self._report.response(response, directives, token)
        if meta is not None:
            meta[DIRECTIVES_META] = directives
            if ai_opt_out(directives) is not None:
                meta[PREFERENCES_META] = combine(meta.get(PREFERENCES_META) or {}, _NO_TRAINING)
        if meta is not None and meta.get("dont_obey_robotstxt"):
            return _REPORTED
        return self._plan(response, directives, token) or _REPORTED

    def _plan(self, response: Response, directives: PageDirectives, token: str) -> _Plan | None:
        if (
            not self._rel
            and not directives.noindex
            and directives.unavailable_after is None
            and not (self._nofollow and directives.nofollow)
        ):
            return None  # the common case (max-image-preview, index, follow): nothing to build
        url = response.url
        nofollow = noindex = None
        if self._nofollow and directives.nofollow:
            source = directives.source("nofollow")
            assert source is not None
            nofollow = (PageRefusal("nofollow", str(source), url), _key(source, "nofollow"))
        source = directives.noindex_source()  # the clock read only for unavailable_after
        if source is not None:
            name = "noindex" if directives.noindex else "unavailable_after"
            noindex = (PageRefusal(name, str(source), url), _key(source, name))
        plan = _Plan(token, nofollow, noindex)
        if self._rel:
            return self._rel_plan(response, plan)
        return plan if nofollow or noindex else None

    def _rel_plan(self, response: Response, plan: _Plan | None) -> _Plan | None:
        """``plan`` with the link targets of ``response`` that only ``rel`` hints we obey reach."""
        if not isinstance(response, HtmlResponse) or (plan is not None and plan.nofollow):
            return plan  # nothing to read, or every request is dropped anyway
        links = _hinted_targets(response, self._rel)
        if not links:
            return plan
        if plan is None:
            return _Plan(self._reader.token(response), links=links)
        return _Plan(plan.token, plan.nofollow, plan.noindex, links)

    def _judge(self, plan: _Plan, response: Response, output: Any) -> Any:
        """``output`` if it may go on, else None (counted and logged); an item dropped
        by ``"drop"`` as :class:`_Dropped`, its ``item_dropped`` still to be sent."""
        if isinstance(output, Request):
            if plan.nofollow is not None:
                refusal, key = plan.nofollow
                self._report.request_dropped(output, response, refusal, key)
                return None
            if plan.links:
                refusal = plan.links.get(canonicalize_url(output.url))  # type: ignore[assignment]
                if refusal is not None:
                    self._report.link_dropped(output, response, refusal)
                    return None
            return output
        if plan.noindex is None:
            return output
        refusal, key = plan.noindex
        if self._drop_items:
            self._report.item(response, refusal, key, dropped=True)
            error = page_forbidden(
                DropItem(f"{PAGE_FORBIDDEN_MESSAGE}: {refusal.directive} ({refusal})"),
                page_decision(refusal, response.url, plan.token),
            )
            return _Dropped(output, error)
        self._report.item(response, refusal, key, dropped=False)
        if self._field is not None:
            self._mark(output, refusal)
        return output

    def _mark(self, item: Any, refusal: PageRefusal) -> None:
        field = self._field
        assert field is not None
        try:
            ItemAdapter(item)[field] = refusal.source
        except (KeyError, TypeError) as exc:
            self._report.unmarked(item, field, exc)

    def _sent(self, result: Any, sending: Deferred[None]) -> Any:
        self._sending.discard(sending)
        return result  # a failure (a bug: receivers' errors are caught) stays unhandled, logged

    async def _spider_closed(self) -> None:
        """Let the crawl end once the ``item_dropped`` receivers still running are done."""
        self._pending = None
        if self._sending:
            await maybe_deferred_to_future(DeferredList(list(self._sending)))

    async def _item_dropped(self, dropped: _Dropped, response: Response) -> None:
        """Tell ``item_dropped`` receivers, as Scrapy does for a pipeline's ``DropItem``
        (asynchronous receivers awaited)."""
        await send_signal(
            self.crawler.signals,
            signals.item_dropped,
            item=dropped.item,
            response=response,
            exception=dropped.error,
            spider=self.crawler.spider,
        )

    # -- explaining ------------------------------------------------------------------

    def explain(self, response: Response, request: Request | None = None) -> RobotsDecision | None:
        """What the page directives of ``response`` decide for ``request`` yielded from it
        (for its items when ``request`` is None): the decision naming the directive that
        drops it (:attr:`~scrapy_googlerobots.RobotsDecision.page_refused`), or None when
        they let it through (or the crawl's settings do not apply them)."""
        plan = self._plan_of(response)
        if plan is None or plan is _REPORTED:
            return None
        if request is None:
            if plan.noindex is None or not self._drop_items:
                return None
            return page_decision(plan.noindex[0], response.url, plan.token)
        refusal = plan.nofollow[0] if plan.nofollow is not None else None
        if refusal is None and plan.links:
            refusal = plan.links.get(canonicalize_url(request.url))
        if refusal is None:
            return None
        return page_decision(refusal, request.url, plan.token)


def _meta(response: Response) -> dict[str, Any] | None:
    """``response.meta``, or None for a response without a request (built by hand)."""
    try:
        return response.meta
    except AttributeError:
        return None


def _hinted_targets(response: HtmlResponse, hints: frozenset[str]) -> dict[str, PageRefusal]:
    """Canonical URL -> refusal for each link target of ``response`` that every link to it
    marks with one of ``hints`` (``rel`` values): a target also linked plainly is followed,
    as Google treats ``rel`` values as hints."""
    hinted: dict[str, PageRefusal] = {}
    plain: set[str] = set()
    for link in response.xpath("//a[@href] | //area[@href]"):
        href = (link.attrib.get("href") or "").strip()
        if not href or href.startswith("#"):
            continue
        try:
            target = canonicalize_url(response.urljoin(href))
        except ValueError:
            continue
        rel = (link.attrib.get("rel") or "").lower().split()
        found = next((value for value in rel if value in hints), None)
        if found is None:
            plain.add(target)
        elif target not in hinted:
            hinted[target] = PageRefusal(f"rel={found}", f'<a rel="{" ".join(rel)}">', response.url)
    return {target: refusal for target, refusal in hinted.items() if target not in plain}
