"""``ROBOTSTXT_EVIDENCE`` in real crawls (issue 34): a ``train-ai`` crawl of loopback sites
writes every policy file it fetched (redirect hops and failures included) as WARC, one
decision record per refusal and per page handed to the spider, and the directory verifies."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.http import Response

from scrapy_googlerobots.commands.googlerobots import main
from scrapy_googlerobots.evidence.read import load
from scrapy_googlerobots.evidence.verify import verify

from middleware_support import robots_settings, robots_stats
from servers import CrawlResult, RecordingSpider, Reply, Site, run_crawl

TDMREP = "/.well-known/tdmrep.json"
ROBOTS_A = b"User-agent: *\nDisallow: /private/\nContent-Usage: /no-train/ train-ai=n\n"


def html(head: str = "", **headers: str) -> Reply:
    body = f"<!doctype html><html><head>{head}<title>t</title></head><body>page</body></html>"
    return Reply(200, body.encode(), {"Content-Type": "text/html; charset=utf-8", **headers})


class EvidenceSpider(RecordingSpider):
    """Records ``response.meta.get("robotstxt_evidence")`` per URL in ``seen``."""

    name = "evidence"
    seen: dict[str, Any]

    def parse(self, response: Response, **kwargs: Any) -> Any:
        self.seen[response.url] = response.meta.get("robotstxt_evidence")


async def crawl(
    directory: Path, start: list[str], **settings: Any
) -> tuple[CrawlResult, dict[str, Any]]:
    seen: dict[str, Any] = {}
    result = await run_crawl(
        robots_settings(
            ROBOTSTXT_USAGE=["train-ai"], ROBOTSTXT_EVIDENCE=str(directory), **settings
        ),
        start,
        spider_cls=EvidenceSpider,
        seen=seen,
    )
    return result, seen


def records(directory: Path) -> dict[str, dict[str, Any]]:
    """url -> its decision record (each URL decided once in these crawls)."""
    found = {}
    for path in sorted(directory.glob("decisions-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            assert record["url"] not in found, record["url"]
            found[record["url"]] = record
    return found


@pytest_twisted.ensureDeferred
async def test_a_train_ai_crawl_leaves_evidence_that_verifies(
    make_site: Callable[..., Site], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages, files, down = make_site(), make_site(), make_site()
    pages.script("/robots.txt", Reply(200, ROBOTS_A, {"Content-Type": "text/plain"}))
    pages.script("/page", html(**{"Content-Usage": "train-ai=y", "Set-Cookie": "s=secret"}))
    pages.script("/header", html(**{"Content-Usage": "train-ai=n"}))
    pages.script("/noai", html('<meta name="robots" content="noai">'))
    files.script("/robots.txt", Reply.redirect("/moved-robots.txt"))
    files.script("/moved-robots.txt", Reply(200, b"User-agent: *\nAllow: /\n"))
    files.script(TDMREP, Reply(200, b'[{"location": "/reserved/*", "tdm-reservation": 1}]'))
    files.script("/tdm-meta", html('<meta name="tdm-reservation" content="1">'))
    down.script("/robots.txt", Reply(503))
    urls = {
        "page": pages.url("/page"),
        "private": pages.url("/private/x"),
        "no-train": pages.url("/no-train/x"),
        "header": pages.url("/header"),
        "noai": pages.url("/noai"),
        "reserved": files.url("/reserved/1"),
        "tdm-meta": files.url("/tdm-meta"),
        "open": files.url("/open"),
        "down": down.url("/d"),
    }
    result, seen = await crawl(tmp_path, list(urls.values()), ROBOTSTXT_UNREACHABLE="disallow")
    assert set(seen) == {urls["page"], urls["open"]}
    found = records(tmp_path)
    assert set(found) == set(urls.values())
    verdicts = {name: found[url]["verdict"] for name, url in urls.items()}
    assert verdicts == {
        **dict.fromkeys(urls, "forbidden"),
        "page": "allowed",
        "open": "allowed",
    }
    sources = {name: found[url]["decided_by"]["source"] for name, url in urls.items()}
    assert sources == {
        "page": "robots.txt",
        "private": "robots.txt",
        "no-train": "robots.txt usage rule",
        "header": "Content-Usage header",
        "noai": "page directive",
        "reserved": "tdmrep.json",
        "tdm-meta": "tdm-reservation meta tag",
        "open": "robots.txt",
        "down": "robots.txt unreachable",
    }
    # The spider's responses point at their records.
    for url in (urls["page"], urls["open"]):
        assert seen[url] == found[url]["id"]
    page = found[urls["page"]]
    assert page["signals"]["usage_preferences"] == {"train-ai": True}
    assert page["page"]["headers"] == {"content-usage": ["train-ai=y"]}
    assert [p["file"] for p in page["policies"]] == ["robots.txt", "tdmrep.json"]
    assert found[urls["private"]]["decided_by"]["line"] == 2
    assert found[urls["private"]]["stage"] == "request"
    assert found[urls["header"]]["stage"] == "response"
    # Every policy file: robots.txt of three origins (a redirect hop, a 503) and their
    # tdmrep.json (fetched beside robots.txt: the down site's too, a page that is not JSON).
    evidence = load(tmp_path)
    fetched = sorted((e.file, e.url.split("/", 3)[3], e.status) for e in evidence.exchanges)
    assert fetched == sorted(
        [
            ("robots.txt", "robots.txt", 200),
            ("robots.txt", "robots.txt", 301),
            ("robots.txt", "moved-robots.txt", 200),
            ("robots.txt", "robots.txt", 503),
            ("tdmrep.json", ".well-known/tdmrep.json", 200),
            ("tdmrep.json", ".well-known/tdmrep.json", 200),
            ("tdmrep.json", ".well-known/tdmrep.json", 200),
        ]
    )
    assert b"secret" not in gzip.decompress(next(tmp_path.glob("*.warc.gz")).read_bytes())
    report = verify(evidence)
    assert report.problems == []
    assert (report.decisions, report.reproduced) == (9, 9)
    assert main(["evidence", "verify", str(tmp_path)]) == 0
    stats = robots_stats(result)
    assert stats["robotstxt/evidence/allowed"] == 2
    assert stats["robotstxt/evidence/forbidden"] == 7
    assert stats["robotstxt/evidence/bytes"] == sum(p.stat().st_size for p in tmp_path.iterdir())


def test_off_the_middleware_has_no_evidence_hook(tmp_path: Path) -> None:
    from scrapy.utils.test import get_crawler

    from scrapy_googlerobots import GoogleRobotsTxtMiddleware

    off = GoogleRobotsTxtMiddleware.from_crawler(
        get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    )
    assert off._parts.evidence is None
    # The very methods of the class: nothing wraps them, nothing is paid per request.
    assert off.process_request.__func__ is GoogleRobotsTxtMiddleware.process_request
    assert off.process_response.__func__ is GoogleRobotsTxtMiddleware.process_response
    on = GoogleRobotsTxtMiddleware.from_crawler(
        get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "ROBOTSTXT_EVIDENCE": str(tmp_path)})
    )
    assert on._parts.evidence is not None
    assert (
        getattr(on.process_request, "__func__", None)
        is not GoogleRobotsTxtMiddleware.process_request
    )
    assert list(tmp_path.iterdir()) == []  # files are made on their first record


def test_without_warcio_the_crawl_stops_at_start_saying_so(tmp_path: Path) -> None:
    # A Python where warcio cannot be imported (as when it is not installed): the
    # middleware stands a refuse-everything one in its place, after one clear line.
    script = (
        "import sys; sys.modules['warcio'] = None\n"
        "from scrapy.utils.test import get_crawler\n"
        "from scrapy_googlerobots import GoogleRobotsTxtMiddleware\n"
        "settings = {'ROBOTSTXT_OBEY': True, 'ROBOTSTXT_EVIDENCE': sys.argv[1]}\n"
        "mw = GoogleRobotsTxtMiddleware.from_crawler(get_crawler(settings_dict=settings))\n"
        "print(type(mw).__name__, mw.problem)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "ev")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == (
        "RefuseEverything ROBOTSTXT_EVIDENCE needs warcio to write WARC files: "
        "pip install 'scrapy-googlerobots[evidence]' (or pip install 'warcio>=1.7')"
    )
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "ev").exists()
