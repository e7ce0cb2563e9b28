"""Why robots.txt let a request through or stopped it, for code that wants to know.

A forbidden request's errback gets Scrapy's ``IgnoreRequest("Forbidden by
robots.txt")``, as with the stock middleware; :func:`forbidden_by` turns it
into the :class:`RobotsDecision` that names the rule. Any request can be
explained on demand with :meth:`GoogleRobotsTxtMiddleware.explain
<scrapy_googlerobots.GoogleRobotsTxtMiddleware.explain>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest
from twisted.python.failure import Failure

if TYPE_CHECKING:
    from scrapy_googlerobots.policy.origin import Origin
    from scrapy_googlerobots.robotstxt import RobotsTxt

__all__ = ["FORBIDDEN_MESSAGE", "RobotsDecision", "explain_rules", "forbidden", "forbidden_by"]

FORBIDDEN_MESSAGE = "Forbidden by robots.txt"
"""The ``IgnoreRequest`` message of a disallowed request, as Scrapy's stock middleware."""


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

    @property
    def directive(self) -> str | None:
        """The deciding line as Google reads it (``"Disallow: /private/"``); None without one."""
        if not self.line:
            return None
        return f"{'Allow' if self.allowed else 'Disallow'}: {self.rule}"

    def __str__(self) -> str:
        if not self.line:
            why = "no rule matched" if self.has_rules else "no rules (everything allowed)"
            return f"{self.robots_url}: {why}"
        return f'{self.robots_url} line {self.line}: "{self.directive}", group "{self.group}"'


# On a forbidden request's exception: what explains it, as (rules, canonical
# URL, token, origin) until first asked, then the RobotsDecision.
_ATTRIBUTE = "_robotstxt_decision"


def forbidden(rules: RobotsTxt, url: str, token: str, origin: Origin) -> IgnoreRequest:
    """The exception for a request ``rules`` disallow: Scrapy's own ``IgnoreRequest`` and
    message (so stats, ``failure.check`` and message matching stay as with the
    stock middleware), from which :func:`forbidden_by` tells the rule."""
    error = IgnoreRequest(FORBIDDEN_MESSAGE)
    setattr(error, _ATTRIBUTE, (rules, url, token, origin))
    return error


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
    rules, url, token, origin = found
    decision = explain_rules(rules, url, token, origin.robots_url)
    setattr(value, _ATTRIBUTE, decision)
    return decision


def explain_rules(rules: RobotsTxt, url: str, token: str, robots_url: str) -> RobotsDecision:
    """What ``rules`` (from ``robots_url``) decide on canonical ``url`` for ``token``."""
    verdict = rules.explain(url, token)
    return RobotsDecision(
        url, robots_url, verdict.allowed, verdict.line, verdict.rule, rules.group_name(token), token
    )
