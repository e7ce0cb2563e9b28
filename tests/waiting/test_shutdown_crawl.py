"""A stop is a stop: a crawl whose origins are all in robots.txt backoff ends promptly on SIGINT.

The crawl runs in a subprocess (this file run as a script), as a user runs
``scrapy crawl``, so a real SIGINT goes through Scrapy's own signal handling.
The 50 sites run here, in the test's reactor, and answer robots.txt with 503,
slowly and at staggered speeds, so at the signal some robots.txt downloads are
in flight and every origin is in backoff with requests waiting.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_twisted

from processes import ScriptProcess
from servers import Reply, Site

HERE = Path(__file__).resolve()
ORIGINS = 50
PAGES_PER_ORIGIN = 4
SLOWEST_ROBOTS = 1.0  # seconds: the longest a robots.txt download takes here


@pytest_twisted.ensureDeferred
async def test_sigint_stops_a_crawl_with_every_origin_in_backoff(
    make_site: Callable[..., Site],
) -> None:
    sites = [make_site() for _ in range(ORIGINS)]
    for index, site in enumerate(sites):
        site.script("/robots.txt", Reply(503, delay=SLOWEST_ROBOTS * (index % 10) / 10))
    urls = [site.url(f"/page/{n}") for site in sites for n in range(PAGES_PER_ORIGIN)]
    crawl = ScriptProcess(
        HERE,
        {
            "urls": urls,
            "settings": {
                "ROBOTSTXT_OBEY": True,
                "DOWNLOADER_MIDDLEWARES": {
                    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
                    "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
                },
                "RETRY_ENABLED": False,
                # Short backoff: attempts keep starting all the time, the worst case for a stop.
                "ROBOTSTXT_RETRY_DELAY": 0.1,
                "ROBOTSTXT_RETRY_MAX_DELAY": 0.4,
                "CONCURRENT_REQUESTS": 64,
                # All origins are one host: let every robots.txt download be in
                # flight at once, so none is still queued in the downloader at
                # the signal (it would reach its site late, started before the stop).
                "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
                "DOWNLOAD_TIMEOUT": 10,
                "TELNETCONSOLE_ENABLED": False,
                "LOG_LEVEL": "INFO",
            },
        },
    )
    # Every origin has been tried twice: all are in backoff, all requests wait.
    for site in sites:
        await site.wait_for_hits("/robots.txt", 2, timeout=60)
    signalled = time.monotonic()
    crawl.interrupt()
    report = await crawl.ended.addTimeout(60, _reactor())
    stopped_after = report["ended_at"] - signalled
    assert report["exit"] == 0, report["stderr"]

    # Ends within 5 s of the signal plus the downloads in flight (generous bound: no hang).
    assert stopped_after < 5 + SLOWEST_ROBOTS + 10, report
    # No robots.txt attempt starts once the close has begun: what reached the
    # sites after the signal was already on its way (in flight, or connecting).
    late = [
        record
        for site in sites
        for record in site.requests("/robots.txt")
        if record.at > signalled + 1.0
    ]
    print(
        f"figure: SIGINT stop after {stopped_after:.2f} s; {len(urls)} waiting requests: "
        f"{len(report['errbacks'])} errbacks, {len(report['downloaded'])} downloaded; "
        f"{len(late)} robots.txt attempts started after the signal"
    )
    assert late == [], f"{len(late)} robots.txt attempts started after SIGINT"
    # Every waiting request got its errback exactly once; none was crawled or lost.
    assert report["downloaded"] == []
    assert sorted(report["errbacks"]) == sorted(urls)
    assert report["stats"]["robotstxt/unreachable/dropped"] == len(urls)
    assert report["finish_reason"] == "shutdown"


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


# -- the crawler process ---------------------------------------------------------


def _crawl(config: dict[str, Any]) -> dict[str, Any]:
    from scrapy import Request, Spider
    from scrapy.crawler import CrawlerProcess

    report: dict[str, Any] = {"downloaded": [], "errbacks": []}

    class WaitingSpider(Spider):
        name = "waiting"

        async def start(self) -> Any:  # Scrapy >= 2.13
            for request in self.start_requests():
                yield request

        def start_requests(self) -> Any:  # Scrapy < 2.13
            for url in config["urls"]:
                yield Request(url, callback=self.parse, errback=self.on_error)

        def parse(self, response: Any) -> None:
            report["downloaded"].append(response.url)

        def on_error(self, failure: Any) -> None:
            report["errbacks"].append(failure.request.url)

    process = CrawlerProcess(config["settings"], install_root_handler=True)
    crawler = process.create_crawler(WaitingSpider)
    process.crawl(crawler)
    process.start()
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    report["stats"] = {k: v for k, v in stats.items() if k.startswith("robotstxt/")}
    report["finish_reason"] = stats.get("finish_reason")
    return report


if __name__ == "__main__":
    print(json.dumps(_crawl(json.loads(sys.argv[1]))))
