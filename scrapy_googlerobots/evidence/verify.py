"""Every decision of an evidence directory taken again, and every digest checked.

:func:`verify` re-judges each decision record (:func:`~.judge.judge`) from the
policy files its ``policies`` name, read from the WARC records, with the
recorded agent, use, headers and meta tags; a decision is reproduced when the
verdict and the deciding source (:func:`~.judge.key_of`) are the recorded
ones. Each WARC payload is hashed again and compared with its
``WARC-Payload-Digest`` and with the digest the decision records hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scrapy_googlerobots.evidence.judge import PolicyFile, Unjudgeable, judge, key_of
from scrapy_googlerobots.evidence.read import DecisionEntry, Evidence, WarcEntry

__all__ = ["Report", "verify"]


@dataclass
class Report:
    """What :func:`verify` found: counts, and one line per problem (naming the record)."""

    decisions: int = 0
    reproduced: int = 0
    policy_files: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(evidence: Evidence) -> Report:
    """Re-judge every decision of ``evidence`` and check every digest."""
    report = Report(problems=list(evidence.problems))
    bad_bodies: set[str] = set()
    for entry in evidence.responses.values():
        report.policy_files += 1
        if entry.status is not None and entry.digest != entry.actual_digest:
            bad_bodies.add(entry.record_id)
            report.problems.append(
                f"{entry.warc} {entry.record_id} ({entry.url}): the body does not match its "
                f"WARC-Payload-Digest {entry.digest} (it hashes to {entry.actual_digest})"
            )
    for decision in evidence.decisions:
        report.decisions += 1
        problem = _check(decision, evidence.responses, bad_bodies)
        if problem is None:
            report.reproduced += 1
        else:
            record = decision.record
            report.problems.append(
                f"{decision.where} {record.get('id')} ({record.get('url')}): {problem}"
            )
    return report


def _policy(
    record: Mapping[str, Any], kind: str, responses: Mapping[str, WarcEntry], bad: set[str]
) -> tuple[PolicyFile | None, str | None]:
    """The recorded policy file of ``kind`` the decision names, or why it cannot be used."""
    for policy in record.get("policies") or ():
        if policy.get("file") != kind:
            continue
        found = responses.get(policy.get("warc_record_id") or "")
        if found is None:
            return None, f"its {kind} ({policy.get('warc_record_id')}) is not in the evidence"
        if found.record_id in bad:
            return None, f"its {kind} {found.record_id} was changed after the crawl"
        digest = policy.get("digest")
        if digest is not None and found.status is not None and digest != found.actual_digest:
            return None, (
                f"its {kind} {found.record_id} is not the one it was judged by "
                f"(recorded digest {digest}, the WARC record's {found.actual_digest})"
            )
        return PolicyFile(found.url, found.status, found.body), None
    return None, None


def _check(
    decision: DecisionEntry, responses: Mapping[str, WarcEntry], bad: set[str]
) -> str | None:
    """None when ``decision`` is reproduced, else why not."""
    record = decision.record
    robots, problem = _policy(record, "robots.txt", responses, bad)
    if problem is not None:
        return problem
    tdmrep, problem = _policy(record, "tdmrep.json", responses, bad)
    if problem is not None:
        return problem
    try:
        again = judge(record, robots, tdmrep)
    except Unjudgeable as exc:
        return f"cannot be judged again: {exc}"
    except (KeyError, TypeError, ValueError) as exc:
        return f"not a well-formed decision record ({type(exc).__name__}: {exc})"
    recorded = record.get("decided_by") or {}
    if again.verdict != record.get("verdict") or key_of(again.decided_by) != key_of(recorded):
        return (
            f"NOT REPRODUCED: recorded {record.get('verdict')} by {_describe(recorded)}, "
            f"judged {again.verdict} by {_describe(again.decided_by)}"
        )
    return None


def _describe(decided_by: Mapping[str, Any]) -> str:
    """``robots.txt line 3``, ``Content-Usage header (train-ai)``, ``tdmrep.json rule 1``."""
    text = str(decided_by.get("source"))
    if decided_by.get("line"):
        text += f" line {decided_by['line']}"
    if decided_by.get("rule_index"):
        text += f" rule {decided_by['rule_index']}"
    if decided_by.get("directive"):
        text += f" {decided_by['directive']}"
    if decided_by.get("category"):
        text += f" ({decided_by['category']})"
    return text
