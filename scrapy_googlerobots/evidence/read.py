"""An evidence directory read back: its WARC records by ID, its decision records in order.

Written by any number of processes and runs (``policies-*.warc.gz``,
``decisions-*.jsonl``, gzipped or not). A file cut short by a killed process
is read up to its last whole record; the cut is noted, not fatal.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from scrapy_googlerobots.evidence.warc import payload_digest

__all__ = ["DecisionEntry", "Evidence", "WarcEntry", "load"]


@dataclass(frozen=True, slots=True)
class WarcEntry:
    """One ``response`` or ``metadata`` record of a policy file."""

    record_id: str
    file: str
    """``robots.txt`` or ``tdmrep.json``."""
    url: str
    date: str
    status: int | None
    """None: a metadata record (no answer; see ``error``)."""
    body: bytes
    digest: str | None
    """The record's ``WARC-Payload-Digest``."""
    truncated: bool
    error: str
    warc: str
    """The WARC file's name."""

    @property
    def actual_digest(self) -> str:
        """The digest of the payload as it is in the file now."""
        return payload_digest(self.body)


@dataclass(frozen=True, slots=True)
class DecisionEntry:
    """One decision record and where it is: file name and line number."""

    record: dict[str, Any]
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Evidence:
    """Everything a directory holds."""

    responses: dict[str, WarcEntry] = field(default_factory=dict)
    exchanges: list[WarcEntry] = field(default_factory=list)
    decisions: list[DecisionEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Files cut short by a killed writer (read up to their last whole record)."""
    problems: list[str] = field(default_factory=list)
    """Lines that are not decision records: the file was changed."""


def load(directory: Path) -> Evidence:
    """Read every evidence file of ``directory`` (ValueError if it is not a directory)."""
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a directory")
    evidence = Evidence()
    for path in sorted(directory.glob("*.warc*")):
        _read_warc(path, evidence)
    for path in sorted(directory.glob("*.jsonl*")):
        _read_decisions(path, evidence)
    return evidence


def _read_warc(path: Path, evidence: Evidence) -> None:
    from warcio.archiveiterator import ArchiveIterator

    with path.open("rb") as stream:
        records = iter(ArchiveIterator(stream, check_digests=False))
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except Exception as exc:  # a record cut short by a killed writer
                evidence.notes.append(f"{path.name}: cut short after its last whole record ({exc})")
                return
            kind = record.rec_type
            if kind not in ("response", "metadata"):
                continue
            headers = record.rec_headers
            raw = record.raw_stream.read()
            status = None
            error = ""
            if kind == "response" and record.http_headers is not None:
                status = int(record.http_headers.get_statuscode())
            elif kind == "metadata":
                error = raw.decode("utf-8", "replace").partition("fetch-error: ")[2].strip()
            entry = WarcEntry(
                record_id=headers.get_header("WARC-Record-ID"),
                file=headers.get_header("WARC-Policy-File") or "",
                url=headers.get_header("WARC-Target-URI") or "",
                date=headers.get_header("WARC-Date") or "",
                status=status,
                body=raw if kind == "response" else b"",
                digest=headers.get_header("WARC-Payload-Digest"),
                truncated=headers.get_header("WARC-Truncated") is not None,
                error=error,
                warc=path.name,
            )
            evidence.exchanges.append(entry)
            evidence.responses[entry.record_id] = entry


def _open(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _lines(path: Path, evidence: Evidence) -> Iterator[tuple[int, bytes]]:
    with _open(path) as stream:
        try:
            yield from enumerate(stream, 1)
        except (EOFError, OSError) as exc:
            evidence.notes.append(f"{path.name}: cut short ({exc})")


def _read_decisions(path: Path, evidence: Evidence) -> None:
    for number, line in _lines(path, evidence):
        if not line.endswith(b"\n"):
            # The record being written when the process was killed.
            evidence.notes.append(f"{path.name}:{number}: an unfinished last line (skipped)")
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            evidence.problems.append(f"{path.name}:{number}: not a JSON record ({exc})")
            continue
        if isinstance(record, dict) and "url" in record:
            evidence.decisions.append(DecisionEntry(record, path.name, number))
        else:
            evidence.problems.append(f"{path.name}:{number}: not a decision record")
