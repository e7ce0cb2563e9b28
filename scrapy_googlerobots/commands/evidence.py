"""``googlerobots evidence show DIR URL`` and ``googlerobots evidence verify DIR``.

``show`` prints the chain behind each decision on URL (or the decision with
that record ID): the policy files with their fetch time, status and digest,
the deciding line as the recorded file has it, the verdict. ``verify``
re-judges every decision of DIR from the recorded files
(:mod:`scrapy_googlerobots.evidence.verify`) and checks every digest. Both
read WARC files with warcio (``pip install 'scrapy-googlerobots[evidence]'``).

Exit status: ``show`` 0 found, 1 no decision on URL; ``verify`` 0 every
decision reproduced and every digest right, 1 otherwise (each problem named
on stdout); 2 usage or I/O error.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from scrapy_googlerobots.evidence.read import DecisionEntry, Evidence, WarcEntry, load
from scrapy_googlerobots.evidence.verify import verify
from scrapy_googlerobots.evidence.warc import warcio_missing
from scrapy_googlerobots.policy.canonical import canonicalize_url

__all__ = ["EvidenceError", "add_parser"]

_OK, _FINDINGS = 0, 1


class EvidenceError(Exception):
    """A usage or I/O problem (one line on stderr, exit status 2)."""


def _load(directory: str) -> Evidence:
    missing = warcio_missing()
    if missing is not None:
        raise EvidenceError(missing.replace("ROBOTSTXT_EVIDENCE needs", "reading evidence needs"))
    try:
        return load(Path(directory))
    except (OSError, ValueError) as exc:
        raise EvidenceError(str(exc)) from None


def run_verify(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``evidence verify DIR``."""
    evidence = _load(args.directory)
    report = verify(evidence)
    for note in evidence.notes:
        print(f"note: {note}", file=err)
    for problem in report.problems:
        print(f"FAILED {problem}", file=out)
    print(
        f"{report.decisions} decision(s) re-judged, {report.reproduced} reproduced; "
        f"{report.policy_files} policy-file record(s), "
        f"{'digests right' if report.ok else f'{len(report.problems)} problem(s)'}",
        file=out,
    )
    return _OK if report.ok and report.decisions == report.reproduced else _FINDINGS


def run_show(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``evidence show DIR URL``."""
    evidence = _load(args.directory)
    wanted = {args.url, canonicalize_url(args.url)}
    found = [
        entry
        for entry in evidence.decisions
        if wanted & {entry.record.get("url"), entry.record.get("canonical"), entry.record.get("id")}
    ]
    if not found:
        print(f"no decision on {args.url} in {args.directory}", file=err)
        return _FINDINGS
    for number, entry in enumerate(found):
        if number:
            print(file=out)
        _show(entry, evidence, out)
    return _OK


def _show(entry: DecisionEntry, evidence: Evidence, out: IO[str]) -> None:
    record = entry.record
    stage = "refused before download" if record.get("stage") == "request" else "after download"
    if record.get("verdict") == "allowed":
        stage = "handed to the spider"
    agent = record.get("agent") or {}
    print(f"{str(record.get('verdict')).upper()} {record.get('url')}  ({stage})", file=out)
    print(f"  decision   {record.get('id')}  {record.get('time')}  {entry.where}", file=out)
    use = ", ".join(record.get("use") or ()) or "(none declared)"
    print(f"  agent      {agent.get('token')}  ({agent.get('user_agent')})  use: {use}", file=out)
    print(f"  because    {record.get('because')}", file=out)
    decided = record.get("decided_by") or {}
    print(f"  decided by {json.dumps(decided, ensure_ascii=False)}", file=out)
    for policy in record.get("policies") or ():
        print(
            f"  policy     {policy.get('file')} {policy.get('url')}  HTTP {policy.get('status')}"
            f"  fetched {policy.get('fetched_at')}  {policy.get('digest')}",
            file=out,
        )
        warc = evidence.responses.get(policy.get("warc_record_id") or "")
        if warc is None:
            print(f"             not in the evidence: {policy.get('warc_record_id')}", file=out)
            continue
        moved = f"  (answered at {warc.url})" if warc.url != policy.get("url") else ""
        print(f"             {warc.warc} {warc.record_id}{moved}", file=out)
        line = _line(warc, decided, policy)
        if line is not None:
            print(f"             line {decided.get('line')} as recorded: {line}", file=out)
    signals: Mapping[str, Any] = record.get("signals") or {}
    for name, value in signals.items():
        print(f"  signal     {name}: {json.dumps(value, ensure_ascii=False)}", file=out)


def _line(warc: WarcEntry, decided: Mapping[str, Any], policy: Mapping[str, Any]) -> str | None:
    """The deciding line of a robots.txt as the recorded body has it."""
    number = decided.get("line")
    if not isinstance(number, int) or number <= 0 or policy.get("file") != "robots.txt":
        return None
    if decided.get("url") != policy.get("url"):
        return None
    lines = warc.body.splitlines()
    if number > len(lines):
        return None
    text: str = lines[number - 1].decode("utf-8", "replace").strip()
    return text


def add_parser(commands: Any) -> None:
    """Add ``evidence`` (``show``, ``verify``) to the ``googlerobots`` sub-commands."""
    evidence = commands.add_parser(
        "evidence",
        help="show or verify a crawl's evidence directory (ROBOTSTXT_EVIDENCE)",
        description="The policy files a crawl fetched (WARC) and its decisions (JSON Lines).",
    )
    actions = evidence.add_subparsers(dest="action", required=True, metavar="{show,verify}")
    show = actions.add_parser(
        "show",
        help="print the chain behind the decisions on URL",
        description="Exit status: 0 found, 1 no decision on URL, 2 error.",
    )
    show.add_argument("directory", metavar="DIR", help="the ROBOTSTXT_EVIDENCE directory")
    show.add_argument("url", metavar="URL", help="a URL (or a decision record ID)")
    show.set_defaults(run=run_show)
    check = actions.add_parser(
        "verify",
        help="re-judge every decision from the recorded files and check the digests",
        description="Exit status: 0 every decision reproduced and every digest right, "
        "1 otherwise (each problem named), 2 error.",
    )
    check.add_argument("directory", metavar="DIR", help="the ROBOTSTXT_EVIDENCE directory")
    check.set_defaults(run=run_verify)
