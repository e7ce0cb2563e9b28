"""What ``scrapy robots`` found and how it is printed: an origin's robots.txt
(:class:`OriginCheck`), a URL's verdict (:class:`UrlVerdict`) with its TDMRep and
page-level parts (:class:`PageCheck`), and the text and ``--json`` outputs.

Kept apart from the command (``scrapy_robots``), which drives the crawl that
fetches what these judge.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from scrapy_googlerobots.commands.googlerobots import rule_texts, unreachable_reason, usage_verdict
from scrapy_googlerobots.commands.page_check import directive_lines
from scrapy_googlerobots.fetching.fetcher import FetchResult
from scrapy_googlerobots.pacing.crawl_delay import applied_delay
from scrapy_googlerobots.pagedirectives import PageDirectives
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import Origin
from scrapy_googlerobots.policy.page_rules import crawl_effects
from scrapy_googlerobots.policy.tdm import TDMREP_JSON
from scrapy_googlerobots.reporting.explain import UsagePreference
from scrapy_googlerobots.robotstxt import (
    USAGE_CATEGORIES,
    RobotsTxt,
    parse,
)
from scrapy_googlerobots.runtime.config import RobotsConfig
from scrapy_googlerobots.tdmrep import TdmVerdict, parse_tdmrep_json, resolve

__all__ = [
    "OriginCheck",
    "PageCheck",
    "UrlVerdict",
    "add_pages",
    "json_document",
    "tdm_verdict",
    "text_report",
    "utc_now",
    "with_page",
    "with_tdm",
    "write",
]


@dataclass(frozen=True)
class OriginCheck:
    """What one origin's robots.txt fetch means for the URLs of that origin."""

    robots_url: str
    outcome: FetchOutcome
    reason: str
    """``HTTP 200``, ``more than 5 redirects``, ``ConnectionRefusedError: …``."""
    redirects: tuple[str, ...]
    rules: RobotsTxt | None
    """The parsed rules (outcome RULES only)."""
    texts: dict[int, str]
    """Allow/disallow and Content-Usage/Content-Signal lines by number, as written."""
    crawl_delay: float | None
    """The delay the group chosen for the product token asks (the larger of
    Crawl-delay and Request-rate's seconds per request), if any."""
    applied_delay: float | None = None
    """The delay a crawl with these settings applies: None when pacing is off
    (``ROBOTSTXT_CRAWL_DELAY``) or nothing is asked; capped at the maximum."""
    pacing: bool = False
    """``ROBOTSTXT_CRAWL_DELAY``: whether the crawl paces by robots.txt at all."""
    unreachable: str = "disallow"
    """``ROBOTSTXT_UNREACHABLE``: what a crawl does while robots.txt is unreachable."""
    max_wait: float = 0.0
    """``ROBOTSTXT_UNREACHABLE_MAX_WAIT``: how long a ``"defer"`` crawl's requests wait."""

    @classmethod
    def of(
        cls, result: FetchResult, origin: Origin, token: str, config: RobotsConfig
    ) -> OriginCheck:
        """Read one :class:`RobotsFetcher` result for ``token``, with ``config``'s pacing."""
        rules, texts, delay = None, {}, None
        if result.outcome is FetchOutcome.RULES:
            rules, texts = parse(result.body), rule_texts(result.body, usage=True)
            delay = rules.delay(token)
        applied = applied_delay(delay, config.crawl_delay_max) if config.crawl_delay else None
        return cls(
            origin.robots_url,
            result.outcome,
            result.reason,
            tuple(result.redirects),
            rules,
            texts,
            delay,
            applied,
            config.crawl_delay,
            config.unreachable,
            config.unreachable_max_wait,
        )

    def verdict(self, url: str, token: str, usage: tuple[str, ...] = ()) -> UrlVerdict:
        """The answer for ``url`` (of this origin) and ``token``; ``usage``: the declared
        AI uses (a "no" for one of them disallows, as the crawl would not fetch the URL)."""
        preferences: dict[str, UsagePreference | None] = dict.fromkeys(usage)
        if self.rules is None:
            if self.outcome is FetchOutcome.UNREACHABLE:
                why = unreachable_reason(self.reason)
                if self.unreachable == "defer":
                    why = (
                        f"robots.txt unreachable: {self.reason}; not fetched now: a crawl "
                        f"waits ({self.waiting_text()})"
                    )
                return UrlVerdict(url, False, None, None, why, self, preferences)
            why = f"no robots.txt ({self.reason})"
            return UrlVerdict(url, True, None, None, why, self, preferences)
        canonical = canonicalize_url(url)
        verdict = self.rules.explain(canonical, token)
        line, rule, why = None, None, "no matching rule"
        if verdict.line:
            line, rule = verdict.line, self.texts.get(verdict.line, verdict.rule or "")
            why = f"line {line}: {rule}"
        if verdict.allowed and self.rules.has_usage:
            found = self.rules.usage(canonical, token)
            for category in USAGE_CATEGORIES:
                if category in found:
                    preferences[category] = UsagePreference.of_rule(
                        found[category], self.robots_url
                    )
        for category in usage:
            refused = preferences[category]
            if refused is not None and not refused.allowed:
                # The wording of ``googlerobots check --usage``.
                _, why = usage_verdict(self.rules, self.texts, canonical, token, category)
                rule = self.texts.get(refused.line, refused.rule)
                return UrlVerdict(url, False, refused.line, rule, why, self, preferences)
        return UrlVerdict(url, verdict.allowed, line, rule, why, self, preferences)

    @property
    def sitemaps(self) -> list[str]:
        """The ``Sitemap:`` URLs of the robots.txt, as written, in file order."""
        return [] if self.rules is None else list(self.rules.sitemaps)

    def describe(self) -> str:
        """One line: where robots.txt was read, what it means, the crawl delay."""
        hops = "".join(f" -> {url}" for url in self.redirects)
        if self.outcome is FetchOutcome.UNREACHABLE:
            if self.unreachable == "defer":
                return f"{self.robots_url}{hops}: {self.reason}, unreachable: {self.waiting_text()}"
            return (
                f"{self.robots_url}{hops}: {self.reason}, unreachable: every URL disallowed "
                "(ROBOTSTXT_UNREACHABLE = 'disallow', as Google)"
            )
        if self.rules is None:
            return f"{self.robots_url}{hops}: {self.reason}, no rules: every URL allowed"
        delay = self.delay_text()
        return f"{self.robots_url}{hops}: {self.reason}, rules apply; crawl delay: {delay}"

    def waiting_text(self) -> str:
        """What a ``"defer"`` crawl does with the origin's requests while robots.txt is
        unreachable."""
        return (
            "a crawl's requests wait while robots.txt is fetched again with backoff, "
            f"and are dropped if it stays unreachable {self.max_wait:g} s "
            "(ROBOTSTXT_UNREACHABLE = 'defer', ROBOTSTXT_UNREACHABLE_MAX_WAIT)"
        )

    def delay_text(self) -> str:
        """The crawl delay a crawl with the project's settings applies, and why."""
        asked, applied = self.crawl_delay, self.applied_delay
        if not asked or asked <= 0:
            return "none"
        if not self.pacing:
            return f"none applied (robots.txt asks {asked:g} s; ROBOTSTXT_CRAWL_DELAY is off)"
        if applied is None:
            return f"none applied (robots.txt asks {asked:g} s; ROBOTSTXT_CRAWL_DELAY_MAX = 0)"
        if applied < asked:
            return f"{applied:g} s (capped from {asked:g} s by ROBOTSTXT_CRAWL_DELAY_MAX)"
        return f"{applied:g} s"


@dataclass(frozen=True)
class UrlVerdict:
    """One URL's answer: allowed or not, and why."""

    url: str
    allowed: bool
    line: int | None
    rule: str | None
    """The deciding line as written (``Disallow: /private/``)."""
    reason: str
    robots: OriginCheck
    usage: dict[str, UsagePreference | None] = field(default_factory=dict)
    """The declared AI uses and robots.txt's preferences for the URL, by category: the
    deciding rule, or None when robots.txt states none for a declared category."""
    tdm: TdmVerdict | None = None
    """The TDMRep verdict of the origin's ``tdmrep.json`` (a declared use TDMRep covers
    only); None when not asked."""
    tdm_file: FetchResult | None = None
    """How the ``tdmrep.json`` fetch went (None when not asked)."""

    @property
    def usage_text(self) -> str:
        """``train-ai=y (line 5), search: no preference``; empty without usage to show."""
        return ", ".join(
            f"{category}: no preference" if p is None else f"{category}={p.value} (line {p.line})"
            for category, p in self.usage.items()
        )


@dataclass(frozen=True)
class PageCheck:
    """One page fetched for ``--page``: where it ended up and its directives."""

    url: str
    """The URL asked about."""
    final_url: str
    status: int | None
    """The HTTP status; None when the download failed (see ``error``)."""
    directives: PageDirectives | None
    error: str = ""
    refused: tuple[str, str] | None = None
    """The declared use the page says "no" to and what said it (its ``Content-Usage``
    header, or an AI opt-out tag or header as written), as the crawl's usage gate."""

    def lines(self, token: str) -> list[str]:
        """The text block under the URL's verdict."""
        if self.directives is None:
            return [f"page: not fetched: {self.error}"]
        via = f" (via redirect to {self.final_url})" if self.final_url != self.url else ""
        head = f"page: HTTP {self.status}{via}; directives for {token}:"
        return [head] + [f"  {line}" for line in directive_lines(self.directives, utc_now())]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def tdm_verdict(url: str, origin: Origin, result: FetchResult) -> TdmVerdict:
    """The verdict of ``origin``'s tdmrep.json fetch ``result`` for ``url`` (file step only)."""
    if result.outcome is not FetchOutcome.RULES:
        return resolve(None)
    parsed = parse_tdmrep_json(result.body, url=TDMREP_JSON.url_for(origin) or "")
    return parsed.explain(url) if parsed.valid else resolve(None)


def _tdm_text(verdict: UrlVerdict) -> str:
    """``; TDMRep: TDM rights reserved: rule 1 of ...`` (or unset, with why)."""
    tdm, result = verdict.tdm, verdict.tdm_file
    if tdm is None or result is None:
        return ""
    if tdm.reserved is None and tdm.file_rule is None:
        if result.outcome is not FetchOutcome.RULES:
            return f"; TDMRep: unset (no tdmrep.json: {result.reason})"
        if not parse_tdmrep_json(result.body).valid:
            return "; TDMRep: unset (tdmrep.json is not a JSON array)"
        return "; TDMRep: unset (no tdmrep.json rule matches)"
    return f"; TDMRep: {tdm.describe()}"


def with_page(verdict: UrlVerdict, page: PageCheck | None) -> UrlVerdict:
    """``verdict`` DISALLOWED when the fetched page says "no" to a declared use, as the
    crawl's usage gate refuses the response (``Forbidden by usage preference``)."""
    if page is None or page.refused is None or not verdict.allowed:
        return verdict
    category, written = page.refused
    why = f"{category}=n by the page: {written} (a crawl declaring {category} refuses it)"
    return dataclasses.replace(verdict, allowed=False, reason=why)


def with_tdm(verdict: UrlVerdict, origin: Origin, results: dict[Origin, FetchResult]) -> UrlVerdict:
    """``verdict`` with its TDMRep verdict; DISALLOWED when the file reserves the URL."""
    result = results.get(origin)
    if result is None or not verdict.allowed:
        return verdict  # robots.txt refuses first: TDMRep is not asked (as in a crawl)
    tdm = tdm_verdict(verdict.url, origin, result)
    allowed = verdict.allowed and not tdm.reserved
    return dataclasses.replace(verdict, allowed=allowed, tdm=tdm, tdm_file=result)


def write(output: str) -> None:
    """Write to stdout; a URL it cannot encode is escaped, a closed pipe (``| head``) is quiet."""
    try:
        sys.stdout.buffer.write(output.encode(sys.stdout.encoding, "backslashreplace"))
        sys.stdout.flush()
    except BrokenPipeError:
        # Keep the interpreter's final flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def text_report(
    agent: str,
    setting: str,
    token: str,
    verdicts: list[UrlVerdict],
    declared: tuple[tuple[str, ...], str] = ((), ""),
    pages: dict[str, PageCheck] | None = None,
) -> str:
    """One line per origin's robots.txt, its URLs under it (in argument order); with
    ``pages`` (``--page``), each URL's page directives under it."""
    lines = [f"product token: {token} (from {setting} = {agent!r})"]
    if declared[0]:
        lines.append(f"declared AI use: {', '.join(declared[0])} (from {declared[1]})")
    by_robots: dict[str, list[UrlVerdict]] = {}
    for verdict in verdicts:
        by_robots.setdefault(verdict.robots.robots_url, []).append(verdict)
    for group in by_robots.values():
        lines.append(group[0].robots.describe())
        for verdict in group:
            word = "ALLOWED" if verdict.allowed else "DISALLOWED"
            # Refused by TDMRep only: robots.txt allowed it, so its preferences apply too.
            robots_allowed = verdict.allowed or (verdict.tdm is not None and verdict.tdm.reserved)
            usage = f"; usage: {verdict.usage_text}" if robots_allowed and verdict.usage else ""
            usage += _tdm_text(verdict)
            lines.append(f"  {word:<11} {verdict.url}  {verdict.reason}{usage}")
            page = pages.get(verdict.url) if pages is not None else None
            if page is not None:
                lines += [f"      {line}" for line in page.lines(token)]
        lines.extend(f"  Sitemap: {url}" for url in group[0].robots.sitemaps)
    return "\n".join(lines) + "\n"


def add_pages(document: dict[str, Any], pages: dict[str, PageCheck]) -> None:
    """``--json --page``: each URL entry gets ``page`` (None when not fetched)."""
    now = utc_now()
    for entry in document["urls"]:
        page = pages.get(entry["url"])
        if page is None or page.directives is None:
            entry["page"] = {"fetched": False, "reason": page.error if page else ""}
            continue
        directives = page.directives
        entry["page"] = {
            "fetched": True,
            "url": page.final_url,
            "status": page.status,
            "directives": [{"directive": d, "source": s} for d, s in directives.explain()],
            "noindex": directives.is_noindex(now),
            "nofollow": directives.nofollow,
            "effects": crawl_effects(directives, now),
            "ignored": [str(r) for r in directives.ignored],
            "malformed": [str(r) for r in directives.malformed],
        }


def json_document(
    agent: str,
    setting: str,
    token: str,
    verdicts: list[UrlVerdict],
    declared: tuple[str, ...] = (),
) -> dict[str, object]:
    """The ``--json`` document: the agent, then one entry per URL in argument order."""
    return {
        "user_agent": agent,
        "user_agent_setting": setting,
        "token": token,
        "declared_use": list(declared),
        "all_allowed": all(v.allowed for v in verdicts),
        "urls": [
            {
                "url": v.url,
                "allowed": v.allowed,
                "line": v.line,
                "rule": v.rule,
                "reason": v.reason,
                "token": token,
                "usage": {
                    category: None
                    if p is None
                    else {
                        "allowed": p.allowed,
                        "line": p.line,
                        "rule": v.robots.texts.get(p.line, p.rule),
                    }
                    for category, p in v.usage.items()
                },
                "tdmrep": None
                if v.tdm is None or v.tdm_file is None
                else {
                    "reserved": v.tdm.reserved,
                    "policy": v.tdm.policy,
                    "source": None if v.tdm.source is None else v.tdm.source.step,
                    "explanation": v.tdm.explanation,
                    "file": {
                        "outcome": v.tdm_file.outcome.value,
                        "reason": v.tdm_file.reason,
                        "redirects": list(v.tdm_file.redirects),
                    },
                },
                "crawl_delay": v.robots.crawl_delay,
                "crawl_delay_applied": v.robots.applied_delay,
                "robots_txt": {
                    "url": v.robots.robots_url,
                    "redirects": list(v.robots.redirects),
                    "outcome": v.robots.outcome.value,
                    "reason": v.robots.reason,
                    "sitemaps": v.robots.sitemaps,
                },
            }
            for v in verdicts
        ],
    }
