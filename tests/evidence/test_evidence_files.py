"""Evidence directories written by the writers themselves (no crawl, no reactor), read back,
shown and verified: every kind of deciding source, tampering, a killed writer's files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from scrapy_googlerobots.commands.googlerobots import main
from scrapy_googlerobots.evidence.files import AppendFile, run_id
from scrapy_googlerobots.evidence.read import load
from scrapy_googlerobots.evidence.records import Decision, DecisionLog, PolicyRef
from scrapy_googlerobots.evidence.verify import verify
from scrapy_googlerobots.evidence.warc import Exchange, WarcLog, payload_digest, policy_record_id

ROBOTS = b"""User-agent: *
Disallow: /private/
Content-Usage: /no-train/ train-ai=n

User-agent: otherbot
Disallow: /
"""
TDMREP = b'[{"location": "/reserved/*", "tdm-reservation": 1, "tdm-policy": "https://p.test/p"}]'
ORIGIN = "https://a.test:443"
AT = 1_800_000_000.0


class Crawl:
    """One process's evidence, written as the crawl writes it."""

    def __init__(self, directory: Path) -> None:
        run = run_id()
        self.warc = WarcLog(directory, run, software="test", settings={"max_size": 500})
        self.log = DecisionLog(directory, run)
        self.policies: list[PolicyRef] = []

    def fetch(self, file: str, url: str, status: int, body: bytes, key: str) -> PolicyRef:
        record_id = policy_record_id(key, AT)
        ref = self.warc.write(
            Exchange(
                file,
                url,
                AT,
                [(b"User-Agent", b"mybot/1.0"), (b"Cookie", b"secret=1")],
                status=status,
                response_headers=[(b"Content-Type", b"text/plain"), (b"Set-Cookie", b"s=1")],
                body=body,
                record_id=record_id,
            )
        )
        policy = PolicyRef(file, url, status, AT, ref.record_id, ref.digest)
        self.policies.append(policy)
        return policy

    def decide(
        self, url: str, verdict: str, stage: str, decided_by: dict[str, Any], **kw: Any
    ) -> str:
        settings = {"max_size": 500, "page_directives": True, "tdm_checked": True}
        return self.log.write(
            Decision(
                url=url,
                canonical=url,
                verdict=verdict,  # type: ignore[arg-type]
                stage=stage,  # type: ignore[arg-type]
                because="(words)",
                decided_by=decided_by,
                token="mybot",
                user_agent="mybot/1.0",
                use=("train-ai",),
                at=AT + 1,
                policies=tuple(self.policies),
                settings=settings,
                **kw,
            )
        )


def robots_rule(line: int, rule: str | None) -> dict[str, Any]:
    return {
        "source": "robots.txt",
        "url": "https://a.test/robots.txt",
        "line": line,
        "rule": rule,
        "group": "*",
    }


@pytest.fixture
def evidence_dir(tmp_path: Path) -> Path:
    crawl = Crawl(tmp_path)
    crawl.fetch("robots.txt", "https://a.test/robots.txt", 200, ROBOTS, ORIGIN)
    crawl.fetch(
        "tdmrep.json", "https://a.test/.well-known/tdmrep.json", 200, TDMREP, "tdmrep|" + ORIGIN
    )
    crawl.decide(
        "https://a.test/private/x", "forbidden", "request", robots_rule(2, "Disallow: /private/")
    )
    crawl.decide(
        "https://a.test/no-train/x",
        "forbidden",
        "request",
        {"source": "robots.txt usage rule", "line": 3, "category": "train-ai"},
    )
    crawl.decide(
        "https://a.test/reserved/x",
        "forbidden",
        "request",
        {"source": "tdmrep.json", "rule_index": 1, "reserved": True},
    )
    crawl.decide(
        "https://a.test/header",
        "forbidden",
        "response",
        {"source": "Content-Usage header", "category": "train-ai"},
        page={"status": 200, "headers": {"content-usage": ["train-ai=n"]}},
    )
    crawl.decide(
        "https://a.test/noai",
        "forbidden",
        "response",
        {
            "source": "page directive",
            "category": "train-ai",
            "directive": '<meta name="robots" content="noai">',
        },
        page={"status": 200, "headers": {}, "html": True, "meta": [["robots", "noai"]]},
    )
    crawl.decide(
        "https://a.test/tdm-meta",
        "forbidden",
        "response",
        {"source": "tdm-reservation meta tag", "reserved": True},
        page={"status": 200, "headers": {}, "html": True, "meta": [["tdm-reservation", "1"]]},
    )
    crawl.decide(
        "https://a.test/tdm-header",
        "forbidden",
        "response",
        {"source": "tdm-reservation header", "reserved": True},
        page={"status": 200, "headers": {"tdm-reservation": ["1"]}},
    )
    crawl.decide(
        "https://a.test/page",
        "allowed",
        "response",
        robots_rule(0, None),
        page={"status": 200, "headers": {"content-usage": ["train-ai=y"]}},
        signals={"usage_preferences": {"train-ai": True}},
    )
    return tmp_path


def test_a_clean_directory_is_verified(
    evidence_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evidence", "verify", str(evidence_dir)]) == 0
    out = capsys.readouterr().out
    assert "8 decision(s) re-judged, 8 reproduced; 2 policy-file record(s), digests right" in out


def test_the_files_hold_what_the_crawl_handed_over(evidence_dir: Path) -> None:
    evidence = load(evidence_dir)
    robots = next(e for e in evidence.exchanges if e.file == "robots.txt")
    assert robots.body == ROBOTS and robots.status == 200
    assert robots.digest == payload_digest(ROBOTS) == robots.actual_digest
    assert robots.record_id == policy_record_id(ORIGIN, AT)
    raw = gzip.decompress(next(evidence_dir.glob("*.warc.gz")).read_bytes())
    assert b"secret" not in raw and b"s=1" not in raw  # no cookies recorded
    assert (
        b"WARC-Type: request" in raw and b"WARC-Concurrent-To: " + robots.record_id.encode() in raw
    )
    (decisions,) = evidence_dir.glob("decisions-*.jsonl")
    first = json.loads(decisions.read_text().splitlines()[0])
    assert first["policies"][0]["warc_record_id"] == robots.record_id
    assert first["id"].endswith("-1") and first["verdict"] == "forbidden"


def test_warcio_reads_the_warc_and_its_digests_check(evidence_dir: Path) -> None:
    from warcio.archiveiterator import ArchiveIterator

    (path,) = evidence_dir.glob("*.warc.gz")
    with path.open("rb") as stream:
        kinds = []
        for record in ArchiveIterator(stream, check_digests="raise"):
            record.content_stream().read()
            kinds.append(record.rec_type)
    assert kinds == ["warcinfo", "response", "request", "response", "request"]


def _rewrite(path: Path, old: bytes, new: bytes) -> None:
    """Edit a file as someone changing it after the crawl would."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        plain = gzip.decompress(data)
        assert old in plain
        # Written back as WARC tools write it: one gzip member per record.
        records = plain.replace(old, new, 1).split(b"WARC/1.1\r\n")[1:]
        path.write_bytes(b"".join(gzip.compress(b"WARC/1.1\r\n" + r) for r in records))
    else:
        assert old in data
        path.write_bytes(data.replace(old, new, 1))


def test_a_flipped_verdict_is_named(evidence_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (path,) = evidence_dir.glob("decisions-*.jsonl")
    _rewrite(path, b'"verdict":"forbidden"', b'"verdict":"allowed"')
    assert main(["evidence", "verify", str(evidence_dir)]) == 1
    out = capsys.readouterr().out
    assert f"FAILED {path.name}:1 " in out
    assert "https://a.test/private/x): NOT REPRODUCED: recorded allowed by robots.txt line 2" in out
    assert "judged forbidden by robots.txt line 2" in out


def test_an_edited_robots_txt_is_named(
    evidence_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (path,) = evidence_dir.glob("*.warc.gz")
    _rewrite(path, b"Disallow: /private/", b"Disallow: /privatX/")
    assert main(["evidence", "verify", str(evidence_dir)]) == 1
    out = capsys.readouterr().out
    assert "(https://a.test/robots.txt): the body does not match its WARC-Payload-Digest" in out
    # Every decision judged by it is named too.
    assert out.count("its robots.txt <urn:uuid:") == 8


def test_a_decision_whose_source_changed_is_named(
    evidence_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (path,) = evidence_dir.glob("decisions-*.jsonl")
    _rewrite(path, b'"source":"Content-Usage header"', b'"source":"page directive"')
    assert main(["evidence", "verify", str(evidence_dir)]) == 1
    out = capsys.readouterr().out
    assert (
        f"FAILED {path.name}:4 " in out
        and "judged forbidden by Content-Usage header (train-ai)" in out
    )


def test_show_prints_the_chain(evidence_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evidence", "show", str(evidence_dir), "https://a.test/private/x"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("FORBIDDEN https://a.test/private/x  (refused before download)")
    assert "line 2 as recorded: Disallow: /private/" in out
    assert f"fetched 2027-01-15T08:00:00.000000Z  {payload_digest(ROBOTS)}" in out
    assert main(["evidence", "show", str(evidence_dir), "https://a.test/nothing"]) == 1


def test_a_killed_writer_leaves_readable_files(
    evidence_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (decisions,) = evidence_dir.glob("decisions-*.jsonl")
    (warc,) = evidence_dir.glob("*.warc.gz")
    with decisions.open("ab") as stream:
        stream.write(b'{"v":1,"id":"x-9","url":"https://a.te')  # killed mid-record
    with warc.open("ab") as stream:
        stream.write(gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n")[:20])
    assert main(["evidence", "verify", str(evidence_dir)]) == 0
    captured = capsys.readouterr()
    assert "8 decision(s) re-judged, 8 reproduced" in captured.out
    assert "an unfinished last line (skipped)" in captured.err


def test_file_names_never_repeat_and_nothing_is_overwritten(tmp_path: Path) -> None:
    first, second = Crawl(tmp_path), Crawl(tmp_path)
    for crawl in (first, second):
        crawl.fetch("robots.txt", "https://a.test/robots.txt", 404, b"gone", ORIGIN)
        crawl.decide(
            "https://a.test/x",
            "allowed",
            "request",
            {**robots_rule(0, None), "group": "", "has_rules": False},
        )
    assert len(list(tmp_path.glob("*.warc.gz"))) == 2
    assert len(list(tmp_path.glob("decisions-*.jsonl"))) == 2
    taken = AppendFile(tmp_path, first.log.file.path.name)
    with pytest.raises(FileExistsError):
        taken.write(b"x\n")
    report = verify(load(tmp_path))
    assert (report.decisions, report.reproduced, report.ok) == (2, 2, True)


def test_a_policy_file_not_in_the_evidence_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crawl = Crawl(tmp_path)
    crawl.policies.append(
        PolicyRef("robots.txt", "https://a.test/robots.txt", 200, AT, "<urn:uuid:0>", None)
    )
    crawl.decide("https://a.test/x", "allowed", "request", robots_rule(0, None))
    assert main(["evidence", "verify", str(tmp_path)]) == 1
    assert "its robots.txt (<urn:uuid:0>) is not in the evidence" in capsys.readouterr().out


def test_an_unreachable_robots_txt_decides_a_drop(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path)
    ref = crawl.warc.write(
        Exchange("robots.txt", "https://a.test/robots.txt", AT, error="DNSLookupError: x")
    )
    crawl.policies.append(
        PolicyRef("robots.txt", "https://a.test/robots.txt", None, AT, ref.record_id, None)
    )
    crawl.decide(
        "https://a.test/x",
        "forbidden",
        "request",
        {"source": "robots.txt unreachable", "url": "https://a.test/robots.txt"},
    )
    evidence = load(tmp_path)
    assert evidence.responses[ref.record_id].error == "DNSLookupError: x"
    assert verify(evidence).ok


def test_verify_and_show_of_a_missing_directory_fail_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evidence", "verify", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("googlerobots: error: ") and "is not a directory" in err


def test_records_reach_the_file_at_once_and_the_disk_only_when_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from scrapy_googlerobots.evidence.recorder import EvidenceRecorder

    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    recorder = EvidenceRecorder.open(str(tmp_path / "ev"), {"max_size": 500})
    assert recorder is not None
    crawl = Crawl(tmp_path)  # only for its decision shape
    for number in range(100):
        recorder.decided(
            Decision(
                url=f"https://a.test/{number}",
                canonical=f"https://a.test/{number}",
                verdict="allowed",
                stage="request",
                because="",
                decided_by=robots_rule(0, None),
                token="mybot",
                user_agent="mybot",
                use=(),
                at=AT,
                policies=tuple(crawl.policies),
            )
        )
        # Each record is in the file as soon as it is made (a SIGKILL now loses nothing).
        assert len(recorder.decisions.file.path.read_bytes().splitlines()) == number + 1
    assert synced == []  # no disk flush per record
    recorder.sync()
    assert len(synced) == 1  # the WARC file is not made yet: one file to sync
    recorder.close()
    assert len(synced) == 2


def test_a_body_edited_with_its_digest_still_fails_against_the_decisions(
    evidence_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (path,) = evidence_dir.glob("*.warc.gz")
    edited = ROBOTS.replace(b"Disallow: /private/", b"Disallow: /privatX/")
    _rewrite(path, ROBOTS, edited)
    _rewrite(path, payload_digest(ROBOTS).encode(), payload_digest(edited).encode())
    assert main(["evidence", "verify", str(evidence_dir)]) == 1
    out = capsys.readouterr().out
    assert "is not the one it was judged by (recorded digest " + payload_digest(ROBOTS) in out
    assert "the body does not match" not in out
