"""Cost as a crawl grows: memory per origin, CPU per request, robots.txt fetches per origin.

1. A loopback web: server processes (twisted.web, this file's ``serve`` mode)
   listen on one address of 127.0.0.0/8 per origin (127.1.x.y, all on one
   port), so each origin is its own host and its own Scrapy download slot;
   each serves a robots.txt from ``../shared/corpus/robotstxt`` and a small
   HTML page for every other path. A server process holds at most
   ``--origins-per-server`` listening sockets (each process has its own
   file-descriptor limit) and closes every connection after its response
   (``Connection: close``), so neither side accumulates sockets: a dropped
   connection would make a robots.txt fetch fail for reasons that are not the
   middleware's (unreachable, fetched again after the retry delay). Each
   variant (no robots.txt middleware, Scrapy's stock one with Protego, ours)
   crawls it in a fresh process (this
   file's ``crawl`` mode) in two phases: one page of every origin (the first
   request of each origin), then, once that is done, one more page of every
   origin in the same order (a later request: the crawl comes back to each
   origin after meeting all the others). It reports its peak RSS growth (from
   just before the crawl to the process's peak, ``ru_maxrss``) per origin, the
   CPU (user + system) per request of each phase, and robots.txt fetches per
   origin (``robotstxt/request_count``). The robots.txt cost of a variant is
   its figure minus the no-middleware crawl's.
2. The local cache alone (core only, no network, no Scrapy): ``N`` synthetic
   origins (bodies cycled from the corpus, each with a realistic response
   header block) put into a default
   :class:`~scrapy_googlerobots.stores.memory.MemoryPolicyStore`; memory per
   origin as tracemalloc sees it (10k, 100k) and as RSS growth (1M; tracemalloc
   would double the run time), beside the store's own estimate.
3. Redis: a sample of origins of the corpus mix written through the Redis
   store into a real ``redis-server`` (127.0.0.1, throw-away), ``INFO memory``
   before and after, bytes per origin, extrapolated to a million origins
   (an extrapolation, stated as such).

Run from the repository root: ``python benchmarks/bench_scale.py`` (8,000
origins, cache at 10k/100k/1M, 20,000 Redis records: several minutes), or
``--quick`` (2,000 origins, cache at 10k/100k, 5,000 Redis records);
``--origins N``, ``--variant ours`` (repeatable), ``--crawl-only``,
``--origins-per-server N`` (default 4,000).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "robotstxt"
sys.path[:0] = [str(ROOT / "example_project" / "cluster")]

from bench_crawl import origin_site, run_until_stdin_closes  # noqa: E402 - after the path set-up
from run_cluster import start_redis  # noqa: E402

VARIANTS = ("none", "stock", "ours")
USER_AGENT = "BenchBot/1.0 (+https://bench.example/bot)"
COMMON_SETTINGS: dict[str, Any] = {
    "USER_AGENT": USER_AGENT,
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "CONCURRENT_REQUESTS": 64,
    "RETRY_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 60,
}
VARIANT_SETTINGS: dict[str, dict[str, Any]] = {
    "none": {"ROBOTSTXT_OBEY": False},
    "stock": {"ROBOTSTXT_OBEY": True},
    "ours": {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
        },
    },
}


def address(index: int) -> str:
    """The loopback address of origin ``index``: 127.1.x.y (y from 1)."""
    return f"127.{1 + index // 65_000}.{(index % 65_000) // 250}.{index % 250 + 1}"


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        sys.exit(f"corpus not found at {CORPUS}")
    return sorted(path for path in CORPUS.iterdir() if path.is_file())


def corpus_bodies() -> list[bytes]:
    """The corpus files as a crawl keeps them: cut at Google's 500 KiB (ROBOTSTXT_MAX_SIZE)."""
    from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE

    return [path.read_bytes()[:GOOGLE_MAX_SIZE] for path in corpus_files()]


# -- the server process -----------------------------------------------------------


ORIGINS_PER_SERVER = 4_000
"""Listening sockets per server process: well under a 20,000 file-descriptor limit
(``ulimit -n``) with the connections in flight beside them."""


def serve(first: int, count: int, port: int) -> None:
    """Listen for origins ``first`` to ``first + count - 1`` on ``port`` (0: one the OS
    picks), each on its own loopback address; print the port; stop when stdin closes."""
    from twisted.internet import reactor
    from twisted.web.http import HTTPChannel

    files = corpus_files()

    class ClosingChannel(HTTPChannel):
        """One request per connection (``Connection: close``): with thousands of
        origins, kept-alive connections would hold a socket per origin on both sides."""

        def checkPersistence(self, request: Any, version: bytes) -> bool:
            request.responseHeaders.setRawHeaders(b"Connection", [b"close"])
            return False

    # Each address is its own socket namespace: all can listen on one port.
    files_bodies = [path.read_bytes() for path in files]
    for index in range(first, first + count):
        site = origin_site(files_bodies[index % len(files)])
        site.protocol = ClosingChannel
        listening = reactor.listenTCP(port, site, interface=address(index))  # type: ignore[attr-defined]
        port = listening.getHost().port
    print(port, flush=True)
    run_until_stdin_closes()


class Server:
    """Server processes for ``count`` origins, ``per_process`` each, all on one port."""

    def __init__(self, count: int, per_process: int = ORIGINS_PER_SERVER) -> None:
        self.processes: list[subprocess.Popen[str]] = []
        self.port = 0
        try:
            for first in range(0, count, per_process):
                size = min(per_process, count - first)
                process = subprocess.Popen(
                    [sys.executable, __file__, "serve", str(first), str(size), str(self.port)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                self.processes.append(process)
                assert process.stdout is not None
                line = process.stdout.readline()
                if not line.strip():
                    raise RuntimeError(f"server for origins {first}+{size} did not start")
                self.port = int(line)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.close()
        for process in self.processes:
            process.wait(timeout=60)


# -- the crawler process ---------------------------------------------------------


def rss_now() -> int:
    """Resident set size of this process, bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def crawl(variant: str, count: int, port: int) -> None:
    """Crawl every origin twice (two phases) with ``variant``; print figures as JSON."""
    import contextlib
    import importlib
    import pkgutil

    import protego  # noqa: F401
    import scrapy.downloadermiddlewares.robotstxt  # noqa: F401
    from scrapy import Request, Spider, signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.exceptions import DontCloseSpider

    import scrapy_googlerobots

    for module in pkgutil.walk_packages(scrapy_googlerobots.__path__, "scrapy_googlerobots."):
        with contextlib.suppress(ImportError):
            importlib.import_module(module.name)

    origins = [f"http://{address(i)}:{port}" for i in range(count)]
    marks: list[os.times_result] = []
    outcome: dict[str, Any] = {"pages": 0, "failed": 0}

    class ScaleSpider(Spider):
        name = "scale"

        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> ScaleSpider:
            spider: ScaleSpider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(spider.idle, signal=signals.spider_idle)
            return spider

        async def start(self) -> Any:  # Scrapy >= 2.13
            for request in self.start_requests():
                yield request

        def start_requests(self) -> Any:
            marks.append(os.times())
            for url in origins:
                yield Request(url + "/first", callback=self.parse, errback=self.failed)

        def idle(self) -> None:
            if len(marks) == 1:
                marks.append(os.times())
                for url in origins:
                    self.crawler.engine.crawl(  # type: ignore[union-attr]
                        Request(url + "/later", callback=self.parse, errback=self.failed)
                    )
                raise DontCloseSpider

        def parse(self, response: Any) -> None:
            outcome["pages"] += 1

        def failed(self, failure: Any) -> None:
            outcome["failed"] += 1

    gc.collect()
    before = rss_now()
    started = time.monotonic()
    process = CrawlerProcess({**COMMON_SETTINGS, **VARIANT_SETTINGS[variant]})
    crawler = process.create_crawler(ScaleSpider)
    process.crawl(crawler)
    process.start()
    marks.append(os.times())
    outcome["seconds"] = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    stats = crawler.stats.get_stats() if crawler.stats else {}

    def cpu(a: os.times_result, b: os.times_result) -> float:
        return (b.user - a.user) + (b.system - a.system)

    outcome["rss_growth"] = peak - before
    outcome["cpu_first"] = cpu(marks[0], marks[1])
    outcome["cpu_later"] = cpu(marks[1], marks[2])
    outcome["robots"] = stats.get("robotstxt/request_count", 0)
    outcome["evicted"] = stats.get("robotstxt/cache/evicted", 0)
    # Anything that went wrong on the wire, so a figure above 1 fetch per
    # origin can be told apart from the middleware's own doing.
    outcome["unreachable"] = stats.get("robotstxt/outcome/unreachable", 0)
    outcome["errors"] = {
        key: value
        for key, value in stats.items()
        if key.startswith(("robotstxt/exception_count/", "downloader/exception_type_count/"))
    }
    print(json.dumps(outcome), flush=True)


def run_crawl(variant: str, count: int, port: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "crawl", variant, str(count), str(port)],
        capture_output=True,
        text=True,
        timeout=3_600,
    )
    if done.returncode != 0 or not done.stdout.strip():
        sys.exit(f"{variant} crawl failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def crawl_table(
    count: int, variants: tuple[str, ...] = VARIANTS, per_server: int = ORIGINS_PER_SERVER
) -> None:
    # A server process holds a listening socket per origin it serves plus the
    # connections in flight (closed after each response): past its
    # file-descriptor limit it would drop connections, and robots.txt fetches
    # would fail for reasons that are not the middleware's.
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if min(per_server, count) + 1_000 > limit:
        print(
            f"warning: {min(per_server, count)} origins per server process need more file "
            f"descriptors than the limit, {limit}: lower --origins-per-server"
        )
    server = Server(count, per_server)
    try:
        results = {variant: run_crawl(variant, count, server.port) for variant in variants}
    finally:
        server.close()
    none = results.get("none", {"rss_growth": 0, "cpu_first": 0.0, "cpu_later": 0.0})
    print(f"\nCrawl: {count} origins (one 127.x.y.z address each), each visited twice")
    print(
        f"{'':<8}{'peak RSS growth':>18}{'robots.txt':>12}{'CPU/request':>14}{'CPU/request':>14}"
        f"{'fetches':>10}{'pages':>8}"
    )
    print(f"{'':<8}{'per origin':>18}{'share':>12}{'first':>14}{'later':>14}{'/origin':>10}")
    for variant, result in results.items():
        growth = result["rss_growth"] / count
        extra = (
            "" if variant == "none" else f"+{(growth - none['rss_growth'] / count) / 1024:.1f} KB"
        )
        first = result["cpu_first"] / count * 1e6
        later = result["cpu_later"] / count * 1e6
        print(
            f"{variant:<8}{growth / 1024:>15.1f} KB{extra:>12}{first:>11.0f} us{later:>11.0f} us"
            f"{result['robots'] / count:>10.3f}{result['pages']:>8}"
        )
    for variant, result in results.items():
        print(
            f"  {variant}: {result['seconds']:.0f} s, {result['failed']} pages failed "
            f"(forbidden included), {result['unreachable']} robots.txt fetches unreachable, "
            f"{result['evicted']} evicted"
            + "".join(f", {key} {value}" for key, value in sorted(result["errors"].items()))
        )
    for variant in ("stock", "ours"):
        if variant not in results or "none" not in results:
            continue
        result = results[variant]
        rss = (result["rss_growth"] - none["rss_growth"]) / count / 1024
        first = (result["cpu_first"] - none["cpu_first"]) / count * 1e6
        later = (result["cpu_later"] - none["cpu_later"]) / count * 1e6
        print(
            f"  {variant}: robots.txt cost per origin {rss:.1f} KB RSS, "
            f"first request +{first:.0f} us, later request +{later:.0f} us CPU"
            + (f", evicted {result['evicted']}" if variant == "ours" else "")
        )


# -- the local cache alone --------------------------------------------------------


# Response headers as robots.txt servers send them (nginx, Apache, a CDN, object
# storage): records keep them since issue 28, to serve the spider's own
# robots.txt request. Each origin gets one, with its own dates and validators.
HEADER_SETS = (
    "Server: nginx\r\nDate: {date}\r\nContent-Type: text/plain\r\nContent-Length: {size}\r\n"
    'Last-Modified: {date}\r\nConnection: keep-alive\r\nEtag: "{tag}"\r\n'
    "Accept-Ranges: bytes\r\n",
    'Date: {date}\r\nServer: Apache\r\nLast-Modified: {date}\r\nEtag: "{tag}"\r\n'
    "Accept-Ranges: bytes\r\nContent-Length: {size}\r\nVary: Accept-Encoding\r\n"
    "Content-Type: text/plain\r\n",
    "Date: {date}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: keep-alive\r\n"
    "Cache-Control: max-age=14400\r\nCf-Cache-Status: HIT\r\nAge: 3017\r\n"
    "Last-Modified: {date}\r\nVary: Accept-Encoding\r\n"
    "Strict-Transport-Security: max-age=31536000; includeSubDomains\r\n"
    "X-Content-Type-Options: nosniff\r\nServer: cloudflare\r\nCf-Ray: {tag}-FRA\r\n",
    "Content-Type: text/plain\r\nContent-Length: {size}\r\nConnection: keep-alive\r\n"
    'Date: {date}\r\nLast-Modified: {date}\r\nEtag: "{tag}"\r\nAccept-Ranges: bytes\r\n'
    "Server: AmazonS3\r\nX-Cache: Hit from cloudfront\r\n"
    "Via: 1.1 {tag}.cloudfront.net (CloudFront)\r\nX-Amz-Cf-Pop: FRA56-P5\r\n"
    "X-Amz-Cf-Id: {tag}{tag}==\r\nAge: 1784\r\n",
)


def header_block(index: int, body: bytes) -> bytes:
    """A realistic response header block for origin ``index`` (one of HEADER_SETS)."""
    day = index % 28 + 1
    date = f"Wed, {day:02d} Nov 2026 {index % 24:02d}:{index % 60:02d}:{day:02d} GMT"
    tag = f"{index * 2654435761 % 2**64:016x}"
    template = HEADER_SETS[index % len(HEADER_SETS)]
    return template.format(date=date, size=len(body), tag=tag).encode()


def cache_per_origin(count: int, traced: bool) -> tuple[float, float]:
    """(measured, estimated) bytes per origin of a default store holding ``count`` origins."""
    from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.robotstxt import parse
    from scrapy_googlerobots.stores.memory import MemoryPolicyStore

    bodies = corpus_bodies()
    gc.collect()
    store = MemoryPolicyStore()
    if traced:
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
    else:
        start = rss_now()
    # More origins than the hot set holds (~12,000) are parsed.
    hot_from = count - 20_000
    for index in range(count):
        key = f"https://www.site-{index:07d}.example:443"
        # A fresh copy of the body per origin, as a crawl downloads it.
        body = bytes(bytearray(bodies[index % len(bodies)]))
        # The origins that stay in the hot set get parsed and queried rules,
        # as after a fetch; the others would be compacted the same either way.
        rules = parse(body) if index >= hot_from else None
        if rules is not None:
            rules.deciding_line(f"https://www.site-{index:07d}.example/a/b?c", "benchbot")
        record = PolicyRecord(
            key,
            FetchOutcome.RULES,
            body=body,
            status=200,
            expires_at=9e9,
            headers=header_block(index, body),
            rules=rules,
        )
        store.put(record)
        del record, rules
    gc.collect()
    if traced:
        used = tracemalloc.get_traced_memory()[0] - start
        tracemalloc.stop()
    else:
        used = rss_now() - start
    return used / count, store.estimated_bytes / count


def cache_table(counts: list[int]) -> None:
    print("\nLocal cache alone (default MemoryPolicyStore, corpus mix; the hot set, ~12,000")
    print("origins, within 1/8 of the budget, parsed and queried; the rest quiet)")
    for count in counts:
        traced = count <= 100_000
        measured, estimated = cache_per_origin(count, traced)
        how = "tracemalloc" if traced else "RSS growth"
        print(
            f"  {count:>9,} origins: {measured:>7.0f} B/origin ({how}), "
            f"estimate {estimated:.0f} B, total {measured * count / 2**20:.0f} MiB"
        )


# -- Redis ---------------------------------------------------------------------------


def redis_table(count: int) -> None:
    if shutil.which("redis-server") is None:
        print("\nRedis: redis-server not installed, skipped")
        return
    with tempfile.TemporaryDirectory() as workdir:
        server, url = start_redis(Path(workdir))
        try:
            used = redis_used(url, count)
        finally:
            server.terminate()
            server.wait(timeout=30)
    per = used / count
    print(
        f"\nRedis: {count:,} origins of the corpus mix: {per:.0f} B/origin (INFO memory "
        f"used_memory); extrapolated to 1,000,000 origins: {per * 1e6 / 2**30:.2f} GiB"
    )


def redis_used(url: str, count: int) -> int:
    """Bytes of Redis memory ``count`` records of the corpus mix take (``INFO memory``)."""
    import redis

    from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    client = redis.Redis.from_url(url)
    try:
        store = RedisPolicyStore(client, clock=lambda: 1_000.0)
        bodies = corpus_bodies()
        before = client.info("memory")["used_memory"]
        for index in range(count):
            key = f"https://www.site-{index:07d}.example:443"
            store.put(
                PolicyRecord(
                    key,
                    FetchOutcome.RULES,
                    body=bodies[index % len(bodies)],
                    status=200,
                    fetched_at=1_000.0,
                    expires_at=87_400.0,
                    headers=header_block(index, bodies[index % len(bodies)]),
                )
            )
        return int(client.info("memory")["used_memory"]) - before
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run, a few minutes")
    parser.add_argument("--origins", type=int, help="origins of the crawl (default 8000)")
    parser.add_argument("--variant", choices=VARIANTS, action="append", help="crawl only these")
    parser.add_argument("--crawl-only", action="store_true", help="no cache-alone, no Redis part")
    parser.add_argument("--skip-crawl", action="store_true")
    parser.add_argument(
        "--origins-per-server",
        type=int,
        default=ORIGINS_PER_SERVER,
        help=f"origins per server process (default {ORIGINS_PER_SERVER})",
    )
    args = parser.parse_args(argv)
    origins = args.origins or (2_000 if args.quick else 8_000)
    if not args.skip_crawl:
        crawl_table(origins, tuple(args.variant or VARIANTS), args.origins_per_server)
    if not args.crawl_only:
        cache_table([10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000])
        redis_table(5_000 if args.quick else 20_000)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "crawl":
        crawl(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(main())
