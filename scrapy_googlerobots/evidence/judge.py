"""One decision taken again from recorded inputs, with the core only (for ``verify``).

The crawl's steps, in the crawl's order, on what a decision record and the
WARC records hold:

- before the download (``request``): robots.txt's allow/disallow (Google's
  rules, the product token), then its usage rules for each declared category,
  then, for a use TDMRep covers, the ``tdmrep.json`` rule matching the URL;
- after it (``response``): the ``Content-Usage`` header for each declared
  category, the page's AI opt-out (``noai`` & co., read as ``train-ai=n``) when
  page directives were read, then TDMRep's header fields and meta tags over the
  file rule.

The first step that says no decides; a page no step refuses is allowed, by
robots.txt's allowing rule. :func:`key_of` is the part of ``decided_by`` two
judgements must share to agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scrapy_googlerobots.pagedirectives import parse_page_directives
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome, outcome_for_status
from scrapy_googlerobots.policy.page_rules import ai_opt_out
from scrapy_googlerobots.policy.tdm import tdm_applies
from scrapy_googlerobots.robotstxt import RobotsTxt, parse, parse_usage_header
from scrapy_googlerobots.tdmrep import (
    META_NAMES,
    FileSource,
    TdmVerdict,
    from_header_values,
    from_meta,
    parse_tdmrep_json,
    resolve,
)

__all__ = ["Judgement", "PolicyFile", "Unjudgeable", "judge", "key_of", "tdm_decided"]

_KEY_FIELDS = ("source", "line", "category", "directive", "rule_index", "reserved")


class Unjudgeable(Exception):
    """The record does not hold what its decision needs (a policy file not recorded)."""


@dataclass(frozen=True, slots=True)
class PolicyFile:
    """A policy file as recorded: its URL, its answer's status (None: no answer), its body."""

    url: str
    status: int | None
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class Judgement:
    """A verdict, the stage it was reached at, and what decided it."""

    verdict: str
    stage: str
    decided_by: dict[str, Any]


def key_of(decided_by: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies the deciding source: its kind, robots.txt line, category, page
    directive, ``tdmrep.json`` rule number, reservation (not the words around them)."""
    return tuple(decided_by.get(name) for name in _KEY_FIELDS)


def judge(
    record: Mapping[str, Any],
    robots: PolicyFile | None,
    tdmrep: PolicyFile | None,
) -> Judgement:
    """Take the decision of ``record`` again, from ``robots`` and ``tdmrep`` as recorded."""
    url: str = record["url"]
    token: str = record["agent"]["token"]
    use: Sequence[str] = record.get("use") or ()
    settings: Mapping[str, Any] = record.get("settings") or {}
    max_size = settings.get("max_size")
    canonical = canonicalize_url(url)
    if robots is None:
        raise Unjudgeable("its robots.txt is not in the evidence")
    outcome = outcome_for_status(robots.status) if robots.status is not None else None
    if outcome is None or outcome is FetchOutcome.UNREACHABLE:
        # Only a request dropped for it ("disallow" mode, or its wait ran out) is judged so.
        return Judgement(
            "forbidden", "request", {"source": "robots.txt unreachable", "url": robots.url}
        )
    rules = parse(robots.body if outcome is FetchOutcome.RULES else b"", max_size=max_size)
    has_rules = outcome is FetchOutcome.RULES
    line = rules.deciding_line(canonical, token)
    allowing = _robots_rule(rules, robots.url, canonical, token, line, has_rules)
    if line < 0:
        return Judgement("forbidden", "request", allowing)
    if rules.has_usage:
        found = rules.usage(canonical, token)
        for category in use:
            rule = found.get(category)
            if rule is not None and not rule.allowed:
                return Judgement(
                    "forbidden",
                    "request",
                    {
                        "source": "robots.txt usage rule",
                        "url": robots.url,
                        "line": rule.line,
                        "category": category,
                    },
                )
    tdm_rule = None
    tdm_checked = bool(settings.get("tdm_checked"))
    if tdm_checked and tdm_applies(use):
        tdm_rule = _tdm_rule(tdmrep, url, max_size)
        if tdm_rule is not None and tdm_rule.reservation == 1:
            return Judgement("forbidden", "request", tdm_decided(resolve(tdm_rule)))
    page = record.get("page")
    if page is None:
        return Judgement("allowed", "request", allowing)
    headers: Mapping[str, list[str]] = page.get("headers") or {}
    meta: list[list[str]] = page.get("meta") or []
    usage_values = headers.get("content-usage")
    if usage_values:
        header = parse_usage_header(b", ".join(v.encode("latin-1") for v in usage_values))
        for category in use:
            if header.get(category) is False:
                return Judgement(
                    "forbidden",
                    "response",
                    {"source": "Content-Usage header", "category": category},
                )
    if settings.get("page_directives") and use and "train-ai" in use:
        names = {"robots", token.lower()}
        directives = parse_page_directives(
            [v.encode("latin-1") for v in headers.get("x-robots-tag") or ()],
            [(name, content) for name, content in meta if name in names],
            token,
        )
        source = ai_opt_out(directives)
        if source is not None:
            return Judgement(
                "forbidden",
                "response",
                {"source": "page directive", "category": "train-ai", "directive": source.short()},
            )
    if tdm_checked and tdm_applies(use):
        reservations = [v.encode("latin-1") for v in headers.get("tdm-reservation") or ()]
        policies = [v.encode("latin-1") for v in headers.get("tdm-policy") or ()]
        signal = (
            from_header_values(reservations or None, policies or None)
            if reservations or policies
            else None
        )
        tag_pairs = [(name, content) for name, content in meta if name in META_NAMES]
        tags = from_meta(tag_pairs) if tag_pairs else None
        verdict = resolve(tdm_rule, signal, tags)
        if verdict.reserved:
            return Judgement("forbidden", "response", tdm_decided(verdict))
    return Judgement("allowed", "response", allowing)


def _robots_rule(
    rules: RobotsTxt, robots_url: str, canonical: str, token: str, line: int, has_rules: bool
) -> dict[str, Any]:
    """``decided_by`` of robots.txt's allow/disallow (line 0: no rule matched, or no rules)."""
    number = abs(line)
    decided: dict[str, Any] = {
        "source": "robots.txt",
        "url": robots_url,
        "line": number,
        "rule": None,
        "group": rules.group_name(token),
    }
    if number:
        verdict = rules.explain(canonical, token)
        decided["rule"] = f"{'Allow' if verdict.allowed else 'Disallow'}: {verdict.rule}"
    if not has_rules:
        decided["has_rules"] = False
    return decided


def _tdm_rule(tdmrep: PolicyFile | None, url: str, max_size: int | None) -> Any:
    """The ``tdmrep.json`` rule matching ``url`` (None: no file, or no rule matches)."""
    if tdmrep is None or tdmrep.status is None:
        return None
    if outcome_for_status(tdmrep.status) is not FetchOutcome.RULES:
        return None
    parsed = parse_tdmrep_json(tdmrep.body, url=tdmrep.url, max_size=max_size)
    return parsed.match(url) if parsed.valid else None


def tdm_decided(verdict: TdmVerdict) -> dict[str, Any]:
    """``decided_by`` of a TDMRep reservation."""
    source = verdict.source
    step = source.step if source is not None else None
    decided: dict[str, Any] = {
        "source": {"file": "tdmrep.json", "header": "tdm-reservation header"}.get(
            step or "", "tdm-reservation meta tag"
        ),
        "reserved": verdict.reserved,
        "policy": verdict.policy,
        "explanation": verdict.explanation,
    }
    if isinstance(source, FileSource):
        decided["rule_index"] = source.rule
        decided["location"] = source.location
    return decided
