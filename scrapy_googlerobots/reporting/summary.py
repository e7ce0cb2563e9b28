"""What robots.txt did in one crawl, counted as it happens, for the end-of-crawl INFO block."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import origin_of
from scrapy_googlerobots.runtime.wording import counted

if TYPE_CHECKING:
    from scrapy_googlerobots.fetching.fetcher import FetchResult

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
    declared_use: tuple[str, ...] = ()
    """``ROBOTSTXT_USAGE``: the categories the crawl declares (IETF names)."""
    usage_forbidden_by: Counter[tuple[str, int, str]] = field(default_factory=Counter)
    """Requests refused by a robots.txt usage rule, per (origin, line, category)."""
    usage_rules: dict[tuple[str, int, str], tuple[str, str]] = field(default_factory=dict)
    """(origin, line, category) -> (robots.txt URL, rule as Google reads it)."""
    tdm_answers: dict[str, str] = field(default_factory=dict)
    """Origin -> how its ``tdmrep.json`` last answered (as :attr:`answers`)."""
    tdm_forbidden_by: Counter[str] = field(default_factory=Counter)
    """Requests refused by a ``tdmrep.json`` rule, per rule (its explanation)."""

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
        return _count(self.forbidden_by, key)

    def name_rule(self, key: tuple[str, int], robots_url: str, rule: str | None) -> None:
        if key in self.forbidden_by:
            self.rules[key] = (robots_url, rule or "")

    def top_rules(self, count: int = 10) -> list[tuple[ForbiddingRule, int]]:
        """The ``count`` rules that forbade the most requests."""
        return _top(self.forbidden_by, self.rules, count)

    def count_usage_forbidden(self, key: tuple[str, int, str], robots_url: str, rule: str) -> None:
        """Count one request refused by the usage rule ``key`` (``rule`` as Google reads it)."""
        if not _count(self.usage_forbidden_by, key) and key in self.usage_forbidden_by:
            self.usage_rules[key] = (robots_url, rule)

    def top_usage_rules(self, count: int = 10) -> list[tuple[ForbiddingRule, int]]:
        """The ``count`` usage rules that refused the most requests."""
        return _top(self.usage_forbidden_by, self.usage_rules, count)

    def tdm_fetched(self, key: str, result: FetchResult) -> None:
        """Note how the ``tdmrep.json`` of ``key`` (``tdmrep|<origin>``) answered."""
        if len(self.tdm_answers) < MAX_COUNTED_RULES or key in self.tdm_answers:
            self.tdm_answers[key] = self.answer_of(result)

    def tdm_invalid(self, key: str) -> None:
        """The ``tdmrep.json`` of ``key`` came (2xx) but is not a JSON array."""
        if key in self.tdm_answers:
            self.tdm_answers[key] = "invalid"

    def count_tdm_forbidden(self, step: str, rule: str) -> None:
        """Count one request refused by TDMRep; ``rule`` names a file rule (``""`` else)."""
        if step == "file" and rule:
            _count(self.tdm_forbidden_by, rule)

    def render(self, stats: dict[str, object]) -> str:
        """The INFO block: a few lines, whatever the number of origins."""
        by_answer = Counter(self.answers.values())
        answers = ", ".join(f"{by_answer[a]} {a}" for a in ANSWERS if by_answer[a])

        def stat(name: str) -> object:
            return stats.get(f"robotstxt/{name}", 0)

        lines = [
            f"robots.txt summary: {counted(len(self.answers), 'origin')} checked "
            f"({answers or 'none'})",
            f"  requests: {stat('forbidden')} forbidden, {stat('unreachable/deferred')} deferred, "
            f"{stat('unreachable/released')} released, {stat('unreachable/dropped')} dropped",
        ]
        lines += _ranked("rules that forbade the most requests", self.top_rules(), "Disallow: ")
        lines += self._render_usage(stats)
        lines += _render_page(stats)
        lines += self._render_tdm(stats)
        return "\n".join(lines)

    def _render_tdm(self, stats: dict[str, object]) -> list[str]:
        """The TDMRep lines: only when some request declared a use TDMRep covers."""
        if not self.tdm_answers and not any(k.startswith("robotstxt/tdmrep/") for k in stats):
            return []

        def stat(name: str) -> object:
            return stats.get(f"robotstxt/tdmrep/{name}", 0)

        by_answer = Counter(self.tdm_answers.values())
        answers = ", ".join(f"{by_answer[a]} {a}" for a in (*ANSWERS, "invalid") if by_answer[a])
        responses = stat("responses")
        lines = [
            f"  TDMRep: {len(self.tdm_answers)} tdmrep.json fetched ({answers or 'none'}); "
            f"requests refused: {stat('forbidden/file')} by tdmrep.json, "
            f"{stat('forbidden/header')} by tdm-reservation header, "
            f"{stat('forbidden/meta')} by meta tag; "
            f"{counted(responses if isinstance(responses, int) else 0, 'response')} with a "
            "reservation value"
        ]
        top = self.tdm_forbidden_by.most_common(10)
        if top:
            lines.append("  tdmrep.json rules that refused the most requests:")
            lines += [f"    {count:>6}  {rule}" for rule, count in top]
        return lines

    def _render_usage(self, stats: dict[str, object]) -> list[str]:
        """The usage preferences lines: only when the crawl declares a use or met preferences."""

        def total(prefix: str) -> int:
            return sum(
                value
                for key, value in stats.items()
                if key.startswith(prefix) and isinstance(value, int)
            )

        refused = total("robotstxt/usage/forbidden/")
        dropped = total("robotstxt/usage/header_forbidden/")
        carried = total("robotstxt/usage/responses")
        by_page = total("robotstxt/usage/page_forbidden/")
        if not (self.declared_use or refused or dropped or carried or by_page):
            return []
        declared = ", ".join(self.declared_use) or "none"
        # Named only when it happened: a noai page directive (X-Robots-Tag, robots meta).
        page = f", {by_page} dropped by a noai page directive" if by_page else ""
        lines = [
            f"  usage preferences (declared use: {declared}): {refused} forbidden by robots.txt, "
            f"{dropped} dropped by their Content-Usage header{page}, "
            f"{counted(carried, 'response')} with preferences"
        ]
        lines += _ranked("usage rules that forbade the most requests", self.top_usage_rules())
        return lines


def _render_page(stats: dict[str, object]) -> list[str]:
    """The page directives lines (PageDirectivesMiddleware): only when a page had some."""

    def stat(name: str) -> int:
        value = stats.get(f"robotstxt/page/{name}", 0)
        return value if isinstance(value, int) else 0

    def family(prefix: str) -> dict[str, int]:
        start = f"robotstxt/page/{prefix}/"
        return {
            key[len(start) :]: value
            for key, value in stats.items()
            if key.startswith(start) and isinstance(value, int)
        }

    responses, ignored, malformed = stat("responses"), stat("ignored"), stat("malformed")
    if not (responses or ignored or malformed):
        return []
    directives = family("directive")
    ranked = sorted(directives.items(), key=lambda pair: (-pair[1], pair[0]))
    detail = f" ({', '.join(f'{n} {d}' for d, n in ranked)})" if ranked else ""
    dropped_requests = sum(family("requests_dropped").values())
    kept, dropped_items = sum(family("items_kept").values()), sum(family("items_dropped").values())
    links = sum(family("links_dropped").values())
    return [
        f"  page directives: {counted(responses, 'response')} with directives for this "
        f"crawler{detail}, {counted(ignored, 'directive')} for other crawlers ignored, "
        f"{malformed} malformed",
        f"  page directives applied: {counted(dropped_requests, 'request')} not followed "
        f"(nofollow), {counted(kept, 'item')} of noindex pages kept, {dropped_items} dropped, "
        f"{counted(links, 'link target')} not followed (rel)",
    ]


def _count(counts: Counter[Any], key: Any) -> bool:
    """Count one more for ``key``; False when it was not counted before (to be named)."""
    if key in counts:
        counts[key] += 1
        return True
    if len(counts) < MAX_COUNTED_RULES:
        counts[key] = 1
    return False


def _top(
    counts: Counter[Any], names: dict[Any, tuple[str, str]], count: int
) -> list[tuple[ForbiddingRule, int]]:
    top = []
    for key, n in counts.most_common(count):
        robots_url, rule = names.get(key, (f"{key[0]}/robots.txt", "?"))
        top.append((ForbiddingRule(robots_url, key[1], rule), n))
    return top


def _ranked(title: str, top: list[tuple[ForbiddingRule, int]], directive: str = "") -> list[str]:
    """A summary block: ``title``, then one line per rule with its count (none: no block)."""
    if not top:
        return []
    return [f"  {title}:"] + [
        f"    {count:>6}  {rule.robots_url} line {rule.line}: {directive}{rule.rule}"
        for rule, count in top
    ]
