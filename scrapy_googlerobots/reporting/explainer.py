"""The crawl's answers about what it knows: ``explain()`` and ``sitemaps()`` of the middleware.

:class:`Explainer` reads the store (no fetch, no wait): robots.txt's copy
explains a request (:func:`~.explain.explain_rules`), then each later policy
file that can (an :class:`Annotates`, such as ``tdmrep.json``) adds its verdict
by the copy held; ``sitemaps()`` gives the ``Sitemap:`` lines of an origin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import origin_of
from scrapy_googlerobots.reporting.explain import RobotsDecision, explain_rules

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.robotstxt import RobotsTxt

__all__ = ["Annotates", "Explainer"]


@runtime_checkable
class Annotates(Protocol):
    """A policy file that adds its verdict to a request's explanation."""

    def needs(self, request: Request) -> bool:
        """Whether ``request`` is judged by the file (ValueError: a bad declaration)."""

    def annotate(
        self, request: Request, record: PolicyRecord, decision: RobotsDecision
    ) -> RobotsDecision:
        """``decision`` with the verdict of the file's ``record`` for ``request``."""


class Explainer:
    """``explain()`` and ``sitemaps()`` from the store (see the module doc).

    ``later``: each annotating file after robots.txt, with the function giving
    its ref for an origin's (None: the origin has none).
    """

    def __init__(
        self,
        get: Callable[[str], PolicyRecord | None],
        rules_of: Callable[[PolicyRecord], RobotsTxt],
        origin_ref: Callable[[str], OriginRef | None],
        token: Callable[[Request], str],
        later: Sequence[tuple[Callable[[OriginRef], OriginRef | None], Annotates]] = (),
    ) -> None:
        self._get = get
        self._rules_of = rules_of
        self._origin_ref = origin_ref
        self._token = token
        self.later = later

    def sitemaps(self, url: str) -> list[str] | None:
        """The ``Sitemap:`` URLs of the robots.txt of ``url``'s origin, as this crawl knows it
        (see :meth:`GoogleRobotsTxtMiddleware.sitemaps
        <scrapy_googlerobots.GoogleRobotsTxtMiddleware.sitemaps>`)."""
        try:
            origin = origin_of(url)
        except ValueError:
            return None
        if origin is None:
            return None
        record = self._get(origin.key)
        if record is None or record.outcome is FetchOutcome.UNREACHABLE:
            return None
        return list(self._rules_of(record).sitemaps)

    def explain(self, request: Request) -> RobotsDecision | None:
        """Why robots.txt lets ``request`` through or not, with the later files' verdicts
        (see :meth:`GoogleRobotsTxtMiddleware.explain
        <scrapy_googlerobots.GoogleRobotsTxtMiddleware.explain>`)."""
        ref = self._origin_ref(request.url)
        if ref is None:
            return None
        record = self._get(ref.key)
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
        for ref_of, file in self.later:
            try:
                needed = file.needs(request)
            except ValueError:
                needed = False
            fref = ref_of(ref) if needed else None
            held = None if fref is None else self._get(fref.key)
            if held is not None:  # not fetched yet: nothing known
                decision = file.annotate(request, held, decision)
        return decision
