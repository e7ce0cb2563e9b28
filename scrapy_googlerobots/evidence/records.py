"""Decision records: one JSON object per decision, one line each, in ``decisions-<run>.jsonl``.

A record (format version :data:`FORMAT`) holds what the decision was and
everything needed to take it again: the URL and its canonical form, the
verdict (``allowed`` / ``forbidden``), the stage (``request``: before the
download, ``response``: after it), the deciding source in words
(``because``) and in structure (``decided_by``), the product token and
User-Agent, the declared use, the time, the policy files it was judged by
(``policies``: each with the ``warc_record_id`` of its WARC response record
and its payload digest), and for a downloaded page the headers and meta tags
that state preferences (``page``) with the signals read from them
(``signals``). See docs/usage/evidence.rst for an example.

Its ID, ``<run>-<n>``, is what ``response.meta["robotstxt_evidence"]`` holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scrapy_googlerobots.evidence.files import AppendFile
from scrapy_googlerobots.evidence.warc import warc_date

__all__ = [
    "FORMAT",
    "PAGE_HEADERS",
    "Decision",
    "DecisionLog",
    "PolicyRef",
    "Verdict",
]

FORMAT = 1
"""The record format's version (the ``v`` of each record)."""

Verdict = Literal["allowed", "forbidden"]
Stage = Literal["request", "response"]

PAGE_HEADERS = (b"Content-Usage", b"X-Robots-Tag", b"tdm-reservation", b"tdm-policy")
"""The response headers recorded with a page: those that state preferences (no others,
no cookies)."""


@dataclass(frozen=True, slots=True)
class PolicyRef:
    """One policy file a decision was judged by, pointing at its WARC response record."""

    file: str
    """``robots.txt`` or ``tdmrep.json``."""
    url: str
    status: int | None
    fetched_at: float
    warc_record_id: str
    digest: str | None
    """The response record's ``WARC-Payload-Digest``; None when not known here (a 4xx
    answer fetched by another worker, whose body the crawl does not keep)."""
    _json: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        # Made once per copy (the recorder keeps its PolicyRefs), read by every decision.
        if self._json is not None:
            return self._json
        data = {
            "file": self.file,
            "url": self.url,
            "status": self.status,
            "fetched_at": warc_date(self.fetched_at),
            "warc_record_id": self.warc_record_id,
            "digest": self.digest,
        }
        object.__setattr__(self, "_json", data)
        return data


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision on one URL (see the module doc for the fields)."""

    url: str
    canonical: str
    verdict: Verdict
    stage: Stage
    because: str
    decided_by: Mapping[str, Any]
    token: str
    user_agent: str
    use: Sequence[str]
    at: float
    policies: Sequence[PolicyRef] = ()
    page: Mapping[str, Any] | None = None
    signals: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self, record_id: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "v": FORMAT,
            "id": record_id,
            "time": warc_date(self.at),
            "url": self.url,
            "canonical": self.canonical,
            "verdict": self.verdict,
            "stage": self.stage,
            "because": self.because,
            "decided_by": dict(self.decided_by),
            "agent": {"token": self.token, "user_agent": self.user_agent},
            "use": list(self.use),
            "policies": [policy.to_json() for policy in self.policies],
        }
        if self.page is not None:
            data["page"] = dict(self.page)
        if self.signals:
            data["signals"] = dict(self.signals)
        if self.settings:
            data["settings"] = dict(self.settings)
        return data


class DecisionLog:
    """Appends decision records to ``<directory>/decisions-<run>.jsonl`` (made on the first)."""

    __slots__ = ("_next", "file", "run")

    def __init__(self, directory: Path, run: str) -> None:
        self.run = run
        self.file = AppendFile(directory, f"decisions-{run}.jsonl")
        self._next = 0

    def write(self, decision: Decision) -> str:
        """Write ``decision`` as one line (one ``write``); its record ID."""
        self._next += 1
        record_id = f"{self.run}-{self._next}"
        line = json.dumps(decision.to_json(record_id), ensure_ascii=False, separators=(",", ":"))
        self.file.write(line.encode("utf-8", "surrogateescape") + b"\n")
        return record_id
