"""Why robots.txt let a request through or stopped it, for code that wants to know.

A forbidden request's errback gets Scrapy's ``IgnoreRequest("Forbidden by
robots.txt")``, as with the stock middleware; :func:`forbidden_by` turns it
into the :class:`RobotsDecision` that names the rule. A request stopped by an
AI usage preference (``ROBOTSTXT_USAGE``) gets ``IgnoreRequest("Forbidden by
usage preference: ...")``, and its decision names the preference in
:attr:`RobotsDecision.usage_refused`. Any request can be explained on demand
with :meth:`GoogleRobotsTxtMiddleware.explain
<scrapy_googlerobots.GoogleRobotsTxtMiddleware.explain>`. A request stopped by a
TDMRep reservation gets ``IgnoreRequest("Forbidden by TDM reservation: ...")``,
and its decision carries the verdict in :attr:`RobotsDecision.tdm_refused`.

A page-level robots directive (``X-Robots-Tag``, robots meta tags) that stops
a request or drops an item is named by :attr:`RobotsDecision.page_refused`, a
:class:`PageRefusal`: on the ``DropItem`` of an item dropped for ``noindex``, and
from :meth:`PageDirectivesMiddleware.explain
<scrapy_googlerobots.PageDirectivesMiddleware.explain>`. A ``noai`` directive
refuses a response like a ``Content-Usage: train-ai=n`` header: its
:class:`UsagePreference` names the header or tag.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest
from twisted.python.failure import Failure

from scrapy_googlerobots.policy.usage import written_as
from scrapy_googlerobots.robotstxt import USAGE_CATEGORIES, UsageRule

if TYPE_CHECKING:
    from scrapy_googlerobots.policy.origin import Origin
    from scrapy_googlerobots.robotstxt import RobotsTxt
    from scrapy_googlerobots.tdmrep import TdmVerdict

__all__ = [
    "FORBIDDEN_MESSAGE",
    "PAGE_FORBIDDEN_MESSAGE",
    "TDM_FORBIDDEN_MESSAGE",
    "USAGE_FORBIDDEN_MESSAGE",
    "PageRefusal",
    "RobotsDecision",
    "UsagePreference",
    "explain_rules",
    "forbidden",
    "forbidden_by",
    "page_decision",
    "page_forbidden",
    "tdm_forbidden",
    "usage_forbidden",
]

FORBIDDEN_MESSAGE = "Forbidden by robots.txt"
"""The ``IgnoreRequest`` message of a disallowed request, as Scrapy's stock middleware."""
USAGE_FORBIDDEN_MESSAGE = "Forbidden by usage preference"
"""How the ``IgnoreRequest`` message of a request refused by a usage preference starts."""
PAGE_FORBIDDEN_MESSAGE = "Forbidden by page directive"
"""How the message of an item dropped (``DropItem``) for a page directive starts."""
_USAGE_DIRECTIVES = ("Content-Usage", "Content-Signal")
TDM_FORBIDDEN_MESSAGE = "Forbidden by TDM reservation"
"""How the ``IgnoreRequest`` message of a request refused by a TDMRep reservation starts."""


@dataclass(frozen=True, slots=True)
class UsagePreference:
    """One AI usage preference for one URL: a category, "y" or "n", and where it was said."""

    category: str
    """The IETF category (``train-ai``, ``ai-use``, ``search``), whatever the vocabulary used."""
    allowed: bool
    """True for ``y`` / ``yes``, False for ``n`` / ``no``."""
    line: int
    """1-based robots.txt line of the deciding rule; 0 when a response header said it."""
    directive: str
    """``"Content-Usage"`` or ``"Content-Signal"``."""
    path: str
    """The rule's path as written; ``""`` for a rule without one (and for a header)."""
    source: str
    """The robots.txt URL; for a header, the URL of the response that carried it."""

    @classmethod
    def of_rule(cls, rule: UsageRule, robots_url: str) -> UsagePreference:
        """The preference a robots.txt rule (the core's :class:`UsageRule`) gives."""
        return cls(rule.category, rule.allowed, rule.line, rule.directive, rule.path, robots_url)

    @classmethod
    def of_header(cls, category: str, allowed: bool, url: str) -> UsagePreference:
        """The preference a ``Content-Usage`` response header of ``url`` gives."""
        return cls(category, allowed, 0, "Content-Usage", "", url)

    @classmethod
    def of_page(cls, category: str, written: str, url: str) -> UsagePreference:
        """The "no" a page directive of ``url`` gives (``noai``: ``train-ai``); ``written``
        is the directive as the page wrote it (``X-Robots-Tag: noai``)."""
        return cls(category, False, 0, written, "", url)

    @property
    def from_page(self) -> bool:
        """Said by a page-level robots directive (``X-Robots-Tag``, a robots meta tag)."""
        return self.directive not in _USAGE_DIRECTIVES

    @property
    def value(self) -> str:
        """``"y"`` or ``"n"``."""
        return "y" if self.allowed else "n"

    @property
    def from_header(self) -> bool:
        """Said by a ``Content-Usage`` response header, not by robots.txt (nor a page
        directive: see :attr:`from_page`)."""
        return self.line == 0 and not self.from_page

    @property
    def rule(self) -> str:
        """The rule as Google's parser reads it: ``Content-Usage: /ai-ok/ train-ai=y``,
        ``Content-Signal: ai-train=no`` (the deciding category only); a page directive
        as written (``X-Robots-Tag: noai``)."""
        if self.from_page:
            return self.directive
        path = f"{self.path} " if self.path else ""
        return f"{self.directive}: {path}{written_as(self.directive, self.category, self.allowed)}"

    def __str__(self) -> str:
        if self.from_header:
            return f"Content-Usage header of {self.source}: {self.category}={self.value}"
        if self.from_page:
            return f"{self.directive} of {self.source}: {self.category}={self.value}"
        return f'{self.source} line {self.line}: "{self.rule}"'


@dataclass(frozen=True, slots=True)
class PageRefusal:
    """A page-level robots directive that stopped a request or dropped an item."""

    directive: str
    """What was obeyed: ``nofollow``, ``noindex`` or ``unavailable_after`` (the page's),
    or ``rel=nofollow`` / ``rel=ugc`` / ``rel=sponsored`` (the link's)."""
    source: str
    """Where the page said it, as written: ``X-Robots-Tag: none``,
    ``<meta name="robots" content="nofollow">``, ``<a rel="ugc">``."""
    url: str
    """The page (the response the request or the item came from)."""

    def __str__(self) -> str:
        return f"{self.source} of {self.url}"


@dataclass(frozen=True, slots=True)
class RobotsDecision:
    """What one robots.txt copy says about one URL for one product token."""

    url: str
    """The URL asked about, as robots.txt rules see it (canonical form)."""
    robots_url: str
    allowed: bool
    line: int
    """1-based line of the deciding rule; 0 when no rule decided (none matched,
    or the origin has no rules: its robots.txt answered 4xx)."""
    rule: str | None
    """The deciding rule's value as written (``"/private/"``); None when ``line`` is 0."""
    group: str
    """The group that applied: the product token (lower case), ``"*"``, or ``""`` for none."""
    token: str
    """The product token robots.txt was asked for."""
    has_rules: bool = True
    """False when the origin has no rules (its robots.txt answered 4xx): all allowed."""
    usage: tuple[UsagePreference, ...] = ()
    """robots.txt's AI usage preferences for the URL, one per category it decides (in
    ``train-ai``, ``ai-use``, ``search`` order); empty when it states none (or disallows
    the URL: a URL that is not fetched has no usage preference)."""
    usage_refused: UsagePreference | None = None
    """The preference that stopped the request: a "no" for a category the crawl declared
    (``ROBOTSTXT_USAGE``, meta ``robotstxt_usage``), from robots.txt or from the response's
    ``Content-Usage`` header. None when it was not stopped by one."""
    page_refused: PageRefusal | None = None
    """The page-level robots directive that dropped the request or the item (then the
    robots.txt fields say nothing: robots.txt was not asked about it). None otherwise."""
    tdm: TdmVerdict | None = None
    """The TDMRep verdict for the URL: from the ``tdmrep.json`` this crawl holds
    (:meth:`~scrapy_googlerobots.GoogleRobotsTxtMiddleware.explain`, when the request
    declares a use TDMRep covers), or the one that refused the request. None: not asked."""
    tdm_refused: TdmVerdict | None = None
    """The TDMRep verdict that stopped the request (``reserved`` is True): a
    ``tdmrep.json`` rule, a ``tdm-reservation`` header or meta tag. None otherwise."""
    slow_down: str | None = None
    """What the origin asked to slow the crawl down, as the crawl holds it now:
    ``"paused for 4.2 s more (Retry-After: 6 from <429 http://…/p/3>)"`` or
    ``"slowed down: 4 s between requests"``; None when it asked nothing
    (:setting:`ROBOTSTXT_SLOW_DOWN`)."""

    @property
    def preferences(self) -> dict[str, bool]:
        """robots.txt's usage preferences for the URL: category -> allowed (absent: unknown)."""
        return {preference.category: preference.allowed for preference in self.usage}

    @property
    def directive(self) -> str | None:
        """The deciding line as Google reads it (``"Disallow: /private/"``); None without one."""
        if not self.line:
            return None
        return f"{'Allow' if self.allowed else 'Disallow'}: {self.rule}"

    def __str__(self) -> str:
        if self.page_refused is not None:
            return str(self.page_refused)
        if self.tdm_refused is not None:
            return f"TDM reservation: {self.tdm_refused.explanation}"
        refused = self.usage_refused
        if refused is not None:
            if refused.line == 0:
                return str(refused)
            return f'{refused}, group "{self.group}"'
        if not self.line:
            why = "no rule matched" if self.has_rules else "no rules (everything allowed)"
            return f"{self.robots_url}: {why}"
        return f'{self.robots_url} line {self.line}: "{self.directive}", group "{self.group}"'


# On a forbidden request's exception: what explains it, as a function making
# the RobotsDecision until first asked, then the RobotsDecision.
_ATTRIBUTE = "_robotstxt_decision"


def forbidden(rules: RobotsTxt, url: str, token: str, origin: Origin) -> IgnoreRequest:
    """The exception for a request ``rules`` disallow: Scrapy's own ``IgnoreRequest`` and
    message (so stats, ``failure.check`` and message matching stay as with the
    stock middleware), from which :func:`forbidden_by` tells the rule."""
    error = IgnoreRequest(FORBIDDEN_MESSAGE)
    setattr(error, _ATTRIBUTE, partial(explain_rules, rules, url, token, origin.robots_url))
    return error


def usage_forbidden(
    refused: UsagePreference, explain: Callable[[], RobotsDecision]
) -> IgnoreRequest:
    """The exception for a request a usage preference refuses: ``IgnoreRequest("Forbidden by
    usage preference: train-ai=n (https://example.com/robots.txt line 4)")``.

    ``explain`` makes the robots.txt decision for the URL when
    :func:`forbidden_by` first asks; ``refused`` is added to it.
    """
    if refused.from_page:
        where = f"{refused.directive} of {refused.source}"
    elif refused.from_header:
        where = f"Content-Usage header of {refused.source}"
    else:
        where = f"{refused.source} line {refused.line}"
    error = IgnoreRequest(
        f"{USAGE_FORBIDDEN_MESSAGE}: {refused.category}={refused.value} ({where})"
    )
    setattr(error, _ATTRIBUTE, partial(_refused_by, refused, explain))
    return error


def page_decision(refused: PageRefusal, url: str, token: str) -> RobotsDecision:
    """The decision on ``url`` (a request's, or the page's for an item) that ``refused``
    took for the product token ``token``; robots.txt was not asked."""
    return RobotsDecision(url, "", True, 0, None, "", token, has_rules=False, page_refused=refused)


def page_forbidden(error: Exception, decision: RobotsDecision) -> Exception:
    """``error`` (a ``DropItem``) made explainable: :func:`forbidden_by` gives ``decision``."""
    setattr(error, _ATTRIBUTE, decision)
    return error


def tdm_forbidden(
    verdict: TdmVerdict, where: str, explain: Callable[[], RobotsDecision]
) -> IgnoreRequest:
    """The exception for a request a TDMRep reservation refuses: ``IgnoreRequest("Forbidden
    by TDM reservation: rule 1 of https://example.com/.well-known/tdmrep.json (location
    "/articles/*"), policy https://example.com/policy.json")``.

    ``where``: the URL of the response whose header or meta tag decided (``""`` for a
    file rule). ``explain`` makes the robots.txt decision when :func:`forbidden_by` asks.
    """
    text = verdict.explanation
    if where:
        text += f" (response of {where})"
    error = IgnoreRequest(f"{TDM_FORBIDDEN_MESSAGE}: {text}")
    setattr(error, _ATTRIBUTE, partial(_tdm_refused_by, verdict, explain))
    return error


def _tdm_refused_by(verdict: TdmVerdict, explain: Callable[[], RobotsDecision]) -> RobotsDecision:
    return dataclasses.replace(explain(), tdm=verdict, tdm_refused=verdict)


def _refused_by(refused: UsagePreference, explain: Callable[[], RobotsDecision]) -> RobotsDecision:
    return dataclasses.replace(explain(), usage_refused=refused)


def forbidden_by(error: BaseException | Failure) -> RobotsDecision | None:
    """The robots.txt rule that forbade a request, from its errback's failure or exception.

    None when robots.txt did not forbid it (another ``IgnoreRequest``, a
    download error ...). The rule is worked out when first asked for, so
    forbidding a request costs no more than with the stock middleware.
    """
    value = error.value if isinstance(error, Failure) else error
    found = getattr(value, _ATTRIBUTE, None)
    if found is None or isinstance(found, RobotsDecision):
        return found
    decision: RobotsDecision = found()
    setattr(value, _ATTRIBUTE, decision)
    return decision


def explain_rules(rules: RobotsTxt, url: str, token: str, robots_url: str) -> RobotsDecision:
    """What ``rules`` (from ``robots_url``) decide on canonical ``url`` for ``token``."""
    verdict = rules.explain(url, token)
    usage: tuple[UsagePreference, ...] = ()
    if rules.has_usage:
        found = rules.usage(url, token)
        usage = tuple(
            UsagePreference.of_rule(found[category], robots_url)
            for category in USAGE_CATEGORIES
            if category in found
        )
    return RobotsDecision(
        url,
        robots_url,
        verdict.allowed,
        verdict.line,
        verdict.rule,
        rules.group_name(token),
        token,
        True,
        usage,
    )
