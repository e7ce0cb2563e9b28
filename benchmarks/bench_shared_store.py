"""What a shared robots.txt store saves a cluster, and what it costs per request.

1. Fetches: ``--workers`` crawler processes each crawl the same ``--origins``
   local origins (a page and a disallowed page per origin), once with every
   worker on its own in-memory cache and once sharing one Redis
   (``ROBOTSTXT_CACHE_STORE = "redis://..."``). The origins count the
   robots.txt requests they get: N x M without sharing, M with it.
2. Per-request cost: ``process_request`` with a warm cache (10,000 origins by
   default) in one process, for the stores a crawl can have: memory (the
   default), SQLite (JOBDIR) and Redis behind their local layer, and Redis with
   the local layer switched off (``ROBOTSTXT_LOCAL_CACHE_TTL = 0``: one Redis
   round trip per request, which is what the local layer exists to avoid).
   Redis once more with parked requests not kept in the store
   (``ROBOTSTXT_PARKED_LEASE_TTL = 0``): a request that is not parked pays
   nothing for them, so the two Redis lines match (within noise).
3. Park cost: what keeping a parked request in the store adds, per request:
   serializing it and recording it when it is parked, deleting its record
   when it is released (in batches of one origin's waiting requests, as a
   release does), for Redis and SQLite; and one adoption scan (the heartbeat
   every third of ``ROBOTSTXT_PARKED_LEASE_TTL``) taking over a dead
   worker's records.

Needs ``redis-server`` (started here on a unix socket) and the ``redis``
package. Run from the repository root:
``python benchmarks/bench_shared_store.py [--workers 4 --origins 50 --cached 10000]``.
It reuses the request mix and timing loop of ``bench_middleware.py`` and the
demo web and Redis launcher of ``example_project/cluster/run_cluster.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "example_project" / "cluster")]

from bench_middleware import (  # noqa: E402 - after the path set-up
    BenchSpider,
    build_requests,
    caller,
    time_per_request,
    warm_ours,
)
from origins import Origin  # noqa: E402
from run_cluster import start_redis  # noqa: E402

MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
}


# --------------------------------------------------------------------------
# 1. Fetches across worker processes


def worker(config: dict[str, Any]) -> None:
    """One crawler process: crawl ``urls``, print its robots.txt stats as JSON."""
    from scrapy import Spider
    from scrapy.crawler import CrawlerProcess

    class Pages(Spider):
        name = "pages"
        start_urls = config["urls"]

        def parse(self, response: Any, **kwargs: Any) -> None:
            return None

    process = CrawlerProcess(
        {
            "ROBOTSTXT_OBEY": True,
            "DOWNLOADER_MIDDLEWARES": MIDDLEWARES,
            "CONCURRENT_REQUESTS": 64,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
            "TELNETCONSOLE_ENABLED": False,
            "LOG_LEVEL": "ERROR",
            **config["settings"],
        }
    )
    crawler = process.create_crawler(Pages)
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    print(json.dumps({k: v for k, v in stats.items() if k.startswith("robotstxt/")}))


def run_workers(count: int, urls: list[str], settings: dict[str, Any]) -> list[dict[str, Any]]:
    config = json.dumps({"urls": urls, "settings": settings})
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    processes = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", config],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(count)
    ]
    reports = []
    for process in processes:
        out, _ = process.communicate(timeout=600)
        if process.returncode:
            raise SystemExit(f"a worker failed (exit {process.returncode})")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def measure_fetches(workers: int, origins_count: int, redis_url: str) -> None:
    print(f"== robots.txt fetches: {workers} worker processes x {origins_count} origins ==")
    totals = {}
    for label, settings in (
        ("own memory cache", {"ROBOTSTXT_CACHE_STORE": "memory"}),
        (
            "shared Redis store",
            {
                "ROBOTSTXT_CACHE_STORE": redis_url,
                "ROBOTSTXT_CACHE_KEY_PREFIX": f"bench{time.time_ns()}:",
            },
        ),
    ):
        origins = [Origin(delay=0) for _ in range(origins_count)]
        urls = [u for o in origins for u in (o.url + "/a", o.url + "/private/x")]
        started = time.perf_counter()
        reports = run_workers(workers, urls, settings)
        elapsed = time.perf_counter() - started
        fetched = sum(o.hits["/robots.txt"] for o in origins)
        disallowed = sum(o.hits["/private/x"] for o in origins)
        waits = sum(r.get("robotstxt/fetch_lease/waits", 0) for r in reports)
        totals[label] = fetched
        print(
            f"{label:<20} robots.txt fetches {fetched:>5} (per origin: "
            f"{min(o.hits['/robots.txt'] for o in origins)}-"
            f"{max(o.hits['/robots.txt'] for o in origins)}), disallowed pages requested "
            f"{disallowed}, lease waits {waits}, wall {elapsed:.1f} s"
        )
        for origin in origins:
            origin.server.shutdown()
    own, shared = totals["own memory cache"], totals["shared Redis store"]
    print(
        f"shared / own: {shared}/{own} = {shared / own:.3f} (ideal 1/{workers} = "
        f"{1 / workers:.3f})\n"
    )


# --------------------------------------------------------------------------
# 2. Per-request cost with a warm cache


def synthetic_origins(count: int) -> list[tuple[str, bytes]]:
    return [
        (
            f"https://site{index}.example",
            f"User-agent: *\nDisallow: /private/\nDisallow: /tmp{index % 7}/\nAllow: /\n".encode(),
        )
        for index in range(count)
    ]


def new_crawler(settings: dict[str, Any]) -> Any:
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(
        BenchSpider,
        {
            "ROBOTSTXT_OBEY": True,
            "USER_AGENT": "FooBot/1.0 (+https://foo.example/bot)",
            "LOG_LEVEL": "ERROR",
            "TELNETCONSOLE_ENABLED": False,
            **settings,
        },
    )
    if getattr(crawler, "spider", None) is None:
        crawler.spider = crawler._create_spider()
    return crawler


def measure_overhead(cached: int, repeat: int, redis_url: str, workdir: Path) -> None:
    print(f"== process_request, warm cache of {cached} origins, {2 * cached} requests ==")
    origins = synthetic_origins(cached)
    requests = build_requests(origins)
    variants = [
        ("memory (default)", {"ROBOTSTXT_CACHE_STORE": "memory"}),
        ("SQLite + local layer", {"ROBOTSTXT_CACHE_STORE": str(workdir / "bench.sqlite")}),
        (
            "Redis + local layer",
            {"ROBOTSTXT_CACHE_STORE": redis_url, "ROBOTSTXT_CACHE_KEY_PREFIX": "benchwarm:"},
        ),
        (
            "Redis, parked records off",
            {
                "ROBOTSTXT_CACHE_STORE": redis_url,
                "ROBOTSTXT_CACHE_KEY_PREFIX": "benchwarm:",
                "ROBOTSTXT_PARKED_LEASE_TTL": 0,
            },
        ),
    ]
    calls = []
    for _label, settings in variants:
        crawler = new_crawler(settings)
        calls.append(caller(warm_ours(crawler, origins), crawler.spider))
    results = time_per_request(calls, requests, repeat)
    base = results[0][0]
    for (label, _), (ns, allowed) in zip(variants, results, strict=True):
        print(f"{label:<28} {ns:>9.0f} ns/request  ({ns / base:.2f}x memory, {allowed} allowed)")
    # No local layer: every request asks Redis (fewer requests: it is slow).
    crawler = new_crawler(
        {
            "ROBOTSTXT_CACHE_STORE": redis_url,
            "ROBOTSTXT_LOCAL_CACHE_TTL": 0,
            "ROBOTSTXT_CACHE_KEY_PREFIX": "benchwarm:",
        }
    )
    call = caller(warm_ours(crawler, origins[:1000]), crawler.spider)
    [(ns, _)] = time_per_request([call], requests[:2000], max(1, repeat // 2))
    print(
        f"{'Redis, no local layer':<28} {ns:>9.0f} ns/request  ({ns / base:.2f}x memory: "
        "a round trip per request)\n"
    )


# --------------------------------------------------------------------------
# 3. What a park costs with a shared store


def measure_park_cost(count: int, batch: int, redis_url: str, workdir: Path) -> None:
    from scrapy import Request

    from scrapy_googlerobots.waiting.origin_state import Parked
    from scrapy_googlerobots.waiting.parked_records import ParkedRecords, serialize_request

    print(f"== parked requests kept in the store: {count} requests, released {batch} at a time ==")
    for label, store_setting in (
        ("Redis", redis_url),
        ("SQLite", str(workdir / "park.sqlite")),
    ):
        crawler = new_crawler(
            {"ROBOTSTXT_CACHE_STORE": store_setting, "ROBOTSTXT_CACHE_KEY_PREFIX": "benchpark:"}
        )
        middleware = warm_ours(crawler, [])
        records = middleware._parking.records  # the middleware's own unit (bench of our internals)
        assert isinstance(records, ParkedRecords), f"{label}: parked requests are not recorded"
        spider = crawler.spider
        requests = [
            Request(f"https://site{i % 50}.example/page/{i}", callback=spider.parse)
            for i in range(count)
        ]
        started = time.perf_counter_ns()
        for request in requests:
            serialize_request(request, spider)
        serialize_ns = (time.perf_counter_ns() - started) / count
        entries = [Parked(request, 0.0) for request in requests]
        started = time.perf_counter_ns()
        for entry in entries:
            records.record(entry)
        park_ns = (time.perf_counter_ns() - started) / count
        assert all(entry.rid is not None for entry in entries)
        started = time.perf_counter_ns()
        for first in range(0, count, batch):
            kept = records.forget(entries[first : first + batch])
            assert len(kept) == len(entries[first : first + batch])
        release_ns = (time.perf_counter_ns() - started) / count
        # A dead worker's records, taken over in one scan by another process's handle.
        dead = new_crawler(
            {"ROBOTSTXT_CACHE_STORE": store_setting, "ROBOTSTXT_CACHE_KEY_PREFIX": "benchpark:"}
        )
        dead_records = warm_ours(dead, [])._parking.records
        for request in requests:
            dead_records.record(Parked(request, 0.0))
        dead_records.stop()
        taken: list[tuple[Any, str]] = []
        adopter = ParkedRecords(
            records.store,
            ttl=records.ttl,
            stats=crawler.stats,
            spider=lambda spider=spider: spider,
            adopt=lambda request, rid, taken=taken: taken.append((request, rid)),
        )
        started = time.perf_counter_ns()
        adopter.adopt_now()
        adopt_ns = (time.perf_counter_ns() - started) / count
        adopter.stop()
        assert len(taken) == count, f"{label}: adopted {len(taken)} of {count}"
        print(
            f"{label:<8} park +{park_ns / 1000:7.1f} us/request (of which serializing "
            f"{serialize_ns / 1000:.1f} us), release +{release_ns / 1000:6.1f} us/request, "
            f"adoption {adopt_ns / 1000:6.1f} us/request (incl. deserializing)"
        )
    print(
        "(a request that is not parked pays none of this: compare the Redis lines of section 2)\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--origins", type=int, default=50)
    parser.add_argument("--cached", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--parked", type=int, default=2_000, help="requests parked (section 3)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="bench-shared-store-"))
    redis_process, redis_url = start_redis(workdir)
    try:
        measure_fetches(args.workers, args.origins, redis_url)
        measure_overhead(args.cached, args.repeat, redis_url, workdir)
        measure_park_cost(args.parked, 20, redis_url, workdir)
    finally:
        redis_process.kill()
        redis_process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
