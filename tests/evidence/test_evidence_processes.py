"""Evidence written by several processes and runs into one directory (issue 34): a cluster's
workers, a JOBDIR crawl resumed, a worker killed outright. Each adds files, none is
overwritten, and the directory verifies as a whole (a decision of one process names the
robots.txt another fetched)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy import Request, signals
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK

from scrapy_googlerobots.evidence.read import load
from scrapy_googlerobots.evidence.verify import verify

from middleware_support import robots_settings
from processes import ScriptProcess
from redis_server import RedisServer, redis_server
from servers import RecordingSpider, Reply, Site, _reactor, run_crawl

__all__ = ["redis_server"]  # the fixture, imported for the tests below

HERE = Path(__file__).resolve()
ROBOTS = b"User-agent: *\nDisallow: /private/\n"


def worker_config(directory: Path, urls: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "urls": urls,
        "settings": robots_settings(
            ROBOTSTXT_EVIDENCE=str(directory),
            ROBOTSTXT_USAGE=["train-ai"],
            RETRY_TIMES=0,
            TELNETCONSOLE_ENABLED=False,
            LOG_LEVEL="INFO",
            **extra,
        ),
    }


def decision_lines(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(directory.glob("decisions-*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


@pytest_twisted.ensureDeferred
async def test_two_workers_of_a_cluster_write_one_directory(
    redis_server: RedisServer, make_site: Callable[..., Site], tmp_path: Path
) -> None:
    sites = [make_site() for _ in range(10)]
    for site in sites:
        site.script("/robots.txt", Reply(200, ROBOTS))
    urls = [u for site in sites for u in (site.url("/a"), site.url("/private/x"))]
    config = worker_config(tmp_path, urls, ROBOTSTXT_CACHE_STORE=redis_server.url)
    workers = [ScriptProcess(HERE, config) for _ in range(2)]
    reports = [await w.ended.addTimeout(90, _reactor()) for w in workers]
    for report in reports:
        assert report["exit"] == 0, report["stderr"]
    # One fetch per origin for the cluster, each in the WARC of the worker that made it.
    assert [site.hits("/robots.txt") for site in sites] == [1] * 10
    assert len(list(tmp_path.glob("decisions-*.jsonl"))) == 2
    evidence = load(tmp_path)
    assert sorted(e.url for e in evidence.exchanges if e.file == "robots.txt") == sorted(
        site.url("/robots.txt") for site in sites
    )
    # Each worker decided on every URL: 2 x 20 records, each judged by its one robots.txt.
    assert len(evidence.decisions) == 40
    report = verify(evidence)
    assert report.problems == [] and report.reproduced == 40


@pytest_twisted.ensureDeferred
async def test_a_resumed_jobdir_crawl_adds_files_and_names_the_first_runs_fetch(
    make_site: Callable[..., Site], tmp_path: Path
) -> None:
    site = make_site()
    site.script("/robots.txt", Reply(200, ROBOTS))
    evidence_dir, jobdir = tmp_path / "evidence", tmp_path / "job"
    settings = worker_config(evidence_dir, [], JOBDIR=str(jobdir))["settings"]
    await run_crawl(settings, [site.url("/a"), site.url("/private/1")])
    first = set(evidence_dir.iterdir())
    await run_crawl(settings, [site.url("/b"), site.url("/private/2")])
    # robots.txt came from the JOBDIR's store: one fetch, one WARC, two decision files.
    assert site.hits("/robots.txt") == 1
    assert first < set(evidence_dir.iterdir())
    assert len(list(evidence_dir.glob("*.warc.gz"))) == 1
    assert len(list(evidence_dir.glob("decisions-*.jsonl"))) == 2
    records = decision_lines(evidence_dir)
    ids = {r["url"]: r["policies"][0]["warc_record_id"] for r in records}
    assert len(set(ids.values())) == 1
    report = verify(load(evidence_dir))
    assert report.problems == [] and report.reproduced == 4


@pytest_twisted.ensureDeferred
async def test_a_killed_worker_leaves_readable_files(
    make_site: Callable[..., Site], tmp_path: Path
) -> None:
    site = make_site()
    site.script("/robots.txt", Reply(200, ROBOTS))
    site.script("/last", Reply.hang())
    urls = [site.url(f"/a{n}") for n in range(5)] + [site.url("/private/x")]
    worker = ScriptProcess(HERE, {**worker_config(tmp_path, urls), "then": site.url("/last")})
    # The spider asks for /last once it has every page: their records are written by then.
    await site.wait_for_hits("/last", 1, timeout=60)
    worker.kill()
    ended = await worker.ended.addTimeout(30, _reactor())
    assert ended["exit"] != 0
    evidence = load(tmp_path)
    assert sorted(r.record["url"] for r in evidence.decisions) == sorted(urls)
    report = verify(evidence)
    assert report.problems == [] and report.reproduced == 6


class ThenSpider(RecordingSpider):
    """Requests ``then`` once every start URL's page arrived."""

    name = "then"
    then: str | None = None
    expected = 0

    def parse(self, response: Response, **kwargs: Any) -> Any:
        self.expected -= 1
        if self.then and self.expected == 0:
            yield Request(self.then, callback=self.parse)


def _worker(config: dict[str, Any]) -> dict[str, Any]:
    from scrapy.crawler import CrawlerProcess

    process = CrawlerProcess(config["settings"], install_root_handler=True)
    crawler = process.create_crawler(ThenSpider)
    report: dict[str, Any] = {"downloaded": []}

    def on_response(response: Response, request: Request, spider: Any) -> None:
        if request.callback is not NO_CALLBACK:
            report["downloaded"].append(response.url)

    crawler.signals.connect(on_response, signal=signals.response_received, weak=False)
    allowed = [u for u in config["urls"] if "/private/" not in u]
    process.crawl(
        crawler, start_urls=config["urls"], then=config.get("then"), expected=len(allowed)
    )
    process.start()
    return report


if __name__ == "__main__":
    print(json.dumps(_worker(json.loads(sys.argv[1]))))
