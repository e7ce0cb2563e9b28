"""Upgrade path from 0.1.0: a crawl paused with its JOBDIR journal, resumed with this version.

0.1.0 kept the requests waiting for robots.txt in ``JOBDIR/robotstxt.parked``.
The tests write that file as 0.1.0's ``ParkedJournal.save`` did (a pickled
list of pickled ``Request.to_dict(spider=...)``, protocol 4), then resume with
real crawls against a local site: every request comes back once, waits for
robots.txt or goes on, and the file is never replayed; a file that no longer
makes requests is reported, counted and moved aside, and the crawl goes on.
"""

from __future__ import annotations

import logging
import pickle
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, Spider

from scrapy_googlerobots.waiting.legacy_journal import LEGACY_JOURNAL_NAME

from servers import CrawlResult, RecordingSpider, Reply, Site, run_crawl

ROBOTS = b"User-agent: *\nDisallow: /b\n"
LOGGER = "scrapy_googlerobots.waiting.legacy_journal"


def settings(jobdir: Path, **extra: Any) -> dict[str, Any]:
    return {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
        },
        "JOBDIR": str(jobdir),
        "RETRY_TIMES": 0,
        "DOWNLOAD_TIMEOUT": 5,
        **extra,
    }


def journal_bytes(requests: list[Request], spider: Spider) -> bytes:
    """``requests`` as 0.1.0's ParkedJournal.save wrote them."""
    entries = [pickle.dumps(request.to_dict(spider=spider), protocol=4) for request in requests]
    return pickle.dumps(entries, protocol=4)


def write_journal(jobdir: Path, requests: list[Request], spider: Spider) -> Path:
    jobdir.mkdir(parents=True, exist_ok=True)
    path = jobdir / LEGACY_JOURNAL_NAME
    path.write_bytes(journal_bytes(requests, spider))
    return path


def waiting_requests(site: Site, *paths: str) -> list[Request]:
    """Requests as 0.1.0 parked them: spider callbacks, the middleware's bookkeeping meta.

    Parked a moment ago by the wall clock, as 0.1.0 dated them: their wait
    goes on from there (ROBOTSTXT_UNREACHABLE_MAX_WAIT counts from the first park).
    """
    spider = RecordingSpider()
    return [
        Request(
            site.url(path),
            callback=spider.parse,
            errback=spider.on_error,
            meta={"_robotstxt_waiting_since": time.time() - 5, "depth": 1},
        )
        for path in paths
    ]


def migration_lines(result: CrawlResult, level: int) -> list[str]:
    return [
        record.getMessage()
        for record in result.logs
        if record.name == LOGGER and record.levelno == level
    ]


def serve_pages(site: Site, robots: Reply) -> None:
    site.script("/robots.txt", robots)
    for path in ("/a", "/b", "/c", "/d"):
        site.script(path, Reply(200, b"page"))


@pytest.mark.parametrize("lease_ttl", [15.0, 0.0], ids=["recorded-in-store", "no-records"])
@pytest_twisted.ensureDeferred
async def test_journal_requests_wait_for_robots_again_and_are_taken_once(
    site: Site, tmp_path: Path, lease_ttl: float
) -> None:
    # robots.txt takes a moment: the journal's requests wait for it, as they did at the pause.
    serve_pages(site, Reply(200, ROBOTS, delay=0.3))
    jobdir = tmp_path / "job"
    journal = write_journal(jobdir, waiting_requests(site, "/a", "/b", "/c"), RecordingSpider())
    common = settings(jobdir, ROBOTSTXT_PARKED_LEASE_TTL=lease_ttl)

    # The same command again: its start requests include /a once more.
    resumed = await run_crawl(common, [site.url("/a"), site.url("/d")])
    assert resumed.stats["finish_reason"] == "finished"
    assert sorted(resumed.downloaded) == [site.url(p) for p in ("/a", "/c", "/d")]
    assert site.hits("/a") == 1, "the journal's copy and the restarted one deduplicated"
    assert site.hits("/b") == 0, "judged by robots.txt"
    assert site.hits("/robots.txt") == 1
    assert resumed.stats["robotstxt/parked/migrated"] == 3
    assert resumed.stats["robotstxt/parked"] >= 3, "they waited for robots.txt again"
    assert "robotstxt/handed_back" not in resumed.stats, "parked at once, not via the downloader"
    if lease_ttl:
        assert resumed.stats["robotstxt/parked/recorded"] >= 3, (
            "recorded in the store while waiting"
        )
    else:
        assert "robotstxt/parked/recorded" not in resumed.stats
    assert migration_lines(resumed, logging.INFO) == [
        f"Took 3 requests waiting for robots.txt from {journal}, written by scrapy_googlerobots "
        "0.1.0 when the crawl was paused; renamed it robotstxt.parked.migrated"
    ]
    assert not journal.exists()
    assert (jobdir / "robotstxt.parked.migrated").exists()

    again = await run_crawl(common, [])
    assert "robotstxt/parked/migrated" not in again.stats, "never replayed"
    assert migration_lines(again, logging.INFO) == []
    assert site.hits("/a") == site.hits("/c") == 1


@pytest_twisted.ensureDeferred
async def test_journal_requests_keep_their_first_park_for_the_max_wait(
    site: Site, tmp_path: Path
) -> None:
    # Paused with 0.1.0 an hour ago while robots.txt was unreachable, and it
    # still is: the wait counts from the first park, so they are dropped at once.
    serve_pages(site, Reply(503))
    jobdir = tmp_path / "job"
    requests = waiting_requests(site, "/a", "/b")
    for request in requests:
        request.meta["_robotstxt_waiting_since"] = time.time() - 3_600
    write_journal(jobdir, requests, RecordingSpider())
    resumed = await run_crawl(settings(jobdir, ROBOTSTXT_UNREACHABLE_MAX_WAIT=600), [])
    assert resumed.stats["robotstxt/parked/migrated"] == 2
    assert resumed.stats["robotstxt/unreachable/dropped"] == 2
    for url in (site.url("/a"), site.url("/b")):
        [failure] = resumed.failed(url)
        assert "since it was first parked (ROBOTSTXT_UNREACHABLE_MAX_WAIT = 600 s)" in str(
            failure.value
        )
    assert site.hits("/a") == site.hits("/b") == 0


@pytest_twisted.ensureDeferred
async def test_journal_requests_of_a_known_origin_go_straight_on(
    site: Site, tmp_path: Path
) -> None:
    serve_pages(site, Reply(200, ROBOTS))
    jobdir = tmp_path / "job"
    common = settings(jobdir)
    first = await run_crawl(common, [site.url("/d")])
    assert first.downloaded == [site.url("/d")]
    # robots.txt is fresh in JOBDIR/robotstxt.sqlite: nothing to wait for.
    write_journal(jobdir, waiting_requests(site, "/a", "/b", "/c"), RecordingSpider())

    resumed = await run_crawl(common, [])
    assert sorted(resumed.downloaded) == [site.url("/a"), site.url("/c")]
    assert site.hits("/b") == 0
    assert resumed.stats["robotstxt/forbidden"] == 1
    assert resumed.stats["robotstxt/parked/migrated"] == 3
    assert "robotstxt/parked" not in resumed.stats, "none waited"
    assert site.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_a_journal_that_cannot_be_renamed_is_reported_after_its_requests_went_on(
    site: Site, tmp_path: Path
) -> None:
    serve_pages(site, Reply(200, ROBOTS))
    jobdir = tmp_path / "job"
    journal = write_journal(jobdir, waiting_requests(site, "/a", "/c"), RecordingSpider())
    # A directory in the way makes the rename fail (whoever runs the tests).
    (jobdir / "robotstxt.parked.migrated" / "in-the-way").mkdir(parents=True)

    result = await run_crawl(settings(jobdir), [])
    assert sorted(result.downloaded) == [site.url("/a"), site.url("/c")], "nothing lost"
    assert result.stats["robotstxt/parked/migrated"] == 2
    assert result.stats["robotstxt/store/errors"] == 1
    [warning] = migration_lines(result, logging.WARNING)
    assert warning.startswith(f"Took 2 requests waiting for robots.txt from {journal} ")
    assert warning.endswith(": delete it, or the next resume crawls them again")
    assert journal.exists()


class RenamedCallbackSpider(RecordingSpider):
    """The spider as it was at the pause: a callback the resumed spider no longer has."""

    def parse_item(self, response: Any) -> None:
        return None


def _changed_spider_journal(site: Site) -> bytes:
    old = RenamedCallbackSpider()
    requests = [
        Request(site.url("/c"), callback=old.parse),
        Request(site.url("/b"), callback=old.parse_item),
    ]
    return journal_bytes(requests, old)


def _truncated_journal(site: Site) -> bytes:
    whole = journal_bytes(waiting_requests(site, "/c"), RecordingSpider())
    return whole[: len(whole) // 2]


@pytest.mark.parametrize(
    "content",
    [
        lambda site: b"\x80\x04not a pickle",
        _truncated_journal,
        lambda site: pickle.dumps({"requests": []}, protocol=4),
        _changed_spider_journal,
    ],
    ids=["not-a-pickle", "truncated", "not-a-list-of-requests", "callback-gone"],
)
@pytest_twisted.ensureDeferred
async def test_an_unreadable_journal_is_reported_counted_and_moved_aside(
    site: Site, tmp_path: Path, content: Any
) -> None:
    serve_pages(site, Reply(200, ROBOTS))
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    journal = jobdir / LEGACY_JOURNAL_NAME
    journal.write_bytes(content(site))

    result = await run_crawl(settings(jobdir), [site.url("/a")])
    assert result.stats["finish_reason"] == "finished"
    assert result.downloaded == [site.url("/a")], "the crawl goes on"
    assert site.hits("/c") == 0, "none of the file's requests: all or nothing"
    assert result.stats["robotstxt/store/errors"] == 1
    assert "robotstxt/parked/migrated" not in result.stats
    [warning] = migration_lines(result, logging.WARNING)
    [aside] = list(jobdir.glob("robotstxt.parked.corrupt-*"))
    assert warning.startswith(f"Cannot read {journal}, the requests scrapy_googlerobots 0.1.0 ")
    assert f"moved it to {aside}" in warning
    assert "resume once with the spider that paused; else delete it" in warning
    assert migration_lines(result, logging.INFO) == []
    assert not journal.exists()
    assert aside.read_bytes() == content(site), "kept as it was, for a second try"

    again = await run_crawl(settings(jobdir), [])
    assert migration_lines(again, logging.WARNING) == [], "reported once"
    assert "robotstxt/store/errors" not in again.stats
