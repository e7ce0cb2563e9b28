"""What robots.txt did in one crawl, counted as it happens, for the end-of-crawl INFO block."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import origin_of

if TYPE_CHECKING:
    from scrapy_googlerobots.integration.fetcher import FetchResult

__all__ = ["ANSWERS", "MAX_COUNTED_RULES", "CrawlSummary", "ForbiddingRule"]

ANSWERS = ("2xx", "allow-all 4xx", "redirected", "too big", "unreachable")
"""How an origin's robots.txt answered, in the order the summary lists them."""

MAX_COUNTED_RULES = 100_000
"""Distinct (robots.txt, line) rules counted; later new ones are not (memory stays bounded)."""


@dataclass(frozen=True, slots=True)
class ForbiddingRule:
    """A robots.txt rule that forbade requests: where it is, what it says."""

    robots_url: str
    line: int
    rule: str


@dataclass
class CrawlSummary:
    """Origins checked and how their robots.txt answered; requests forbidden, by rule."""

    answers: dict[str, str] = field(default_factory=dict)
    """Origin -> how its robots.txt last answered (see :meth:`answer_of`)."""
    forbidden_by: Counter[tuple[str, int]] = field(default_factory=Counter)
    """Requests forbidden, per (origin, line) (at most :data:`MAX_COUNTED_RULES` of them)."""
    rules: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    """(origin, line) -> (robots.txt URL, rule as written), for the rules counted."""

    @staticmethod
    def answer_of(result: FetchResult) -> str:
        """``"2xx"``, ``"allow-all 4xx"``, ``"unreachable"``, ``"too big"`` or ``"redirected"``."""
        if result.outcome is FetchOutcome.UNREACHABLE:
            return "unreachable"
        if result.truncated:
            return "too big"
        if result.redirects:
            return "redirected"
        if result.outcome is FetchOutcome.RULES:
            return "2xx"
        return "allow-all 4xx"

    def answer_for(self, url: str) -> str | None:
        """How the robots.txt of the origin of ``url`` answered; None if it was not asked."""
        try:
            origin = origin_of(url)
        except ValueError:
            return None
        return None if origin is None else self.answers.get(origin.key)

    def fetched(self, origin: str, result: FetchResult) -> None:
        self.answers[origin] = self.answer_of(result)

    def count_forbidden(self, key: tuple[str, int]) -> bool:
        """Count one request forbidden by ``key``'s rule; False when the rule is not named yet."""
        counts = self.forbidden_by
        if key in counts:
            counts[key] += 1
            return True
        if len(counts) < MAX_COUNTED_RULES:
            counts[key] = 1
        return False

    def name_rule(self, key: tuple[str, int], robots_url: str, rule: str | None) -> None:
        if key in self.forbidden_by:
            self.rules[key] = (robots_url, rule or "")

    def top_rules(self, count: int = 10) -> list[tuple[ForbiddingRule, int]]:
        """The ``count`` rules that forbade the most requests."""
        top = []
        for key, n in self.forbidden_by.most_common(count):
            robots_url, rule = self.rules.get(key, (f"{key[0]}/robots.txt", "?"))
            top.append((ForbiddingRule(robots_url, key[1], rule), n))
        return top

    def render(self, stats: dict[str, object]) -> str:
        """The INFO block: a few lines, whatever the number of origins."""
        by_answer = Counter(self.answers.values())
        answers = ", ".join(f"{by_answer[a]} {a}" for a in ANSWERS if by_answer[a])

        def stat(name: str) -> object:
            return stats.get(f"robotstxt/{name}", 0)

        lines = [
            f"robots.txt summary: {len(self.answers)} origins checked ({answers or 'none'})",
            f"  requests: {stat('forbidden')} forbidden, {stat('unreachable/deferred')} deferred, "
            f"{stat('unreachable/released')} released, {stat('unreachable/dropped')} dropped",
        ]
        top = self.top_rules()
        if top:
            lines.append("  rules that forbade the most requests:")
            lines += [
                f"    {count:>6}  {rule.robots_url} line {rule.line}: Disallow: {rule.rule}"
                for rule, count in top
            ]
        return "\n".join(lines)
