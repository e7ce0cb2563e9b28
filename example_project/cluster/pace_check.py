"""How polite is a 4-worker cluster to one site? Arrival times measured at the server.

    python pace_check.py                     # all three scenarios, 4 workers
    python pace_check.py --scenario pace     # Crawl-delay: 2 and Request-rate: 1/2s
    python pace_check.py --scenario slowdown # 429 + Retry-After: 6 for 6 s
    python pace_check.py --scenario dead     # robots.txt unreachable: ERROR lines
    python pace_check.py --json              # a JSON line per scenario too

Each scenario starts a private ``redis-server``, loopback origins that record
the arrival time, path and answer of every request, pushes the pages to the
shared start list, and runs ``--workers`` scrapy-redis workers (``scrapy
crawl pages``, ``cluster_demo/settings.py``: one Redis for the queue, the
duplicate filter and the robots.txt store, ``ROBOTSTXT_CRAWL_DELAY = True``).

- ``pace``: one origin's robots.txt says ``Crawl-delay: 2``, another's
  ``Request-rate: 1/2s``; 12 pages each. Reported per origin: the smallest
  gap between two page requests, whichever workers sent them, and the rate
  (requests per minute, first to last).
- ``slowdown``: the origin answers its first page request ``429 Too Many
  Requests`` with ``Retry-After: 6``, and every request for the next 6 s
  likewise; 8 pages. Reported: the timeline from the first 429 (each
  arrival, its answer), the first request after it, and the pages the site
  answered 200 in the end (the others were lost). Each worker stamps, as a
  request leaves its downloader middlewares (:class:`SendStamp`), the time it
  sent it; a thread watches the store for the moment the pause is recorded
  (:func:`watch_pause`): a request sent after that moment that still reached
  the site during the pause was not "already on the wire".
- ``dead``: five origins whose robots.txt answers 503 and one that refuses
  connections, 4 pages each, for ``--dead-seconds``; then every worker gets
  SIGINT. Reported: the ERROR lines of all workers' logs, by message.
- ``mixed`` (not part of ``all``): ``--origins`` origins (300), 3 pages each, a
  tenth paced by ``Crawl-delay: 1``, a tenth answering 429 + ``Retry-After: 6``
  for their first 6 s. Reported: pages answered 200 (each must be, once).

The package the workers import is the one on ``PYTHONPATH`` first: point it at
another checkout to measure that code (``PYTHONPATH=/path/to/checkout``).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
START_KEY = "pages:start_urls"
KEY_PATTERNS = ("pages:*", "cluster_demo:robotstxt:*")
PAUSE_SECONDS = 6
SENT_HEADER = "X-Pace-Check-Sent"
PAUSES_KEY = "cluster_demo:robotstxt:pauses"  # the store's paused origins (stores/redis.py)
# The workers' middlewares (cluster_demo/settings.py) and, last, the send stamp.
STAMPED_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
    "pace_check.SendStamp": 999,
}


class SendStamp:
    """A downloader middleware, last before the download: stamps the time a request goes."""

    def process_request(self, request: Any, spider: Any = None) -> None:
        request.headers[SENT_HEADER] = f"{time.time():.6f}"


@dataclass
class Arrival:
    """One request as the site saw it."""

    at: float  # time.monotonic() of this (the harness's) process
    path: str
    status: int
    sent: float | None = None  # the worker's time.time() as it sent it (SendStamp)
    wall: float = 0.0  # time.time() of the arrival


@dataclass
class Site:
    """A loopback origin recording every arrival; what it answers is set per scenario."""

    robots: bytes | None = b"User-agent: *\nAllow: /\n"  # None: robots.txt answers 503
    # Seconds of "429 + Retry-After" from its first page request (None: never).
    busy_for: float | None = None
    arrivals: list[Arrival] = field(default_factory=list)
    url: str = ""
    _busy_until: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Site:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stamp = self.headers.get(SENT_HEADER)
                status, headers, body = site.answer(self.path, float(stamp) if stamp else None)
                self.send_response(status)
                for name, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.request_queue_size = 256
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def answer(self, path: str, sent: float | None = None) -> tuple[int, dict[str, str], bytes]:
        now, wall = time.monotonic(), time.time()
        with self._lock:
            if path == "/robots.txt":
                status, headers, body = (
                    (503, {}, b"") if self.robots is None else (200, {}, self.robots)
                )
            else:
                if self.busy_for is not None and self._busy_until is None:
                    self._busy_until = now + self.busy_for
                if self._busy_until is not None and now < self._busy_until:
                    status, headers, body = 429, {"Retry-After": str(PAUSE_SECONDS)}, b""
                else:
                    status, headers, body = 200, {"Content-Type": "text/html"}, b"<html></html>"
            self.arrivals.append(Arrival(now, path, status, sent, wall))
        return status, headers, body

    def pages(self) -> list[Arrival]:
        return [a for a in self.arrivals if a.path != "/robots.txt"]


def closed_port() -> str:
    """A loopback URL nothing listens on (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def start_redis(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    sys.path.insert(0, str(HERE))
    from run_cluster import start_redis as start

    return start(workdir)


def run_workers(
    redis_url: str,
    workdir: Path,
    name: str,
    workers: int,
    settings: dict[str, str],
    urls: list[str],
    *,
    stop_after: float,
) -> list[Path]:
    """Push ``urls``, run ``workers`` workers until idle (or SIGINT after ``stop_after`` s)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    for pattern in KEY_PATTERNS:
        for key in client.scan_iter(pattern):
            client.delete(key)
    client.rpush(START_KEY, *urls)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env["REDIS_URL"] = redis_url
    options = [arg for key, value in settings.items() for arg in ("-s", f"{key}={value}")]
    logs, processes = [], []
    for n in range(1, workers + 1):
        log_path = workdir / f"{name}-worker-{n}.log"
        logs.append(log_path)
        with open(log_path, "w") as log:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "scrapy", "crawl", "pages", *options],
                    cwd=HERE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**env, "WORKER_NAME": f"worker-{n}"},
                )
            )
    deadline = time.monotonic() + stop_after
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return logs


def gaps(arrivals: list[Arrival]) -> list[float]:
    times = sorted(a.at for a in arrivals)
    return [b - a for a, b in itertools.pairwise(times)]


def scenario_pace(run: Callable[..., list[Path]], pages: int) -> dict[str, Any]:
    delayed = Site(robots=b"User-agent: *\nCrawl-delay: 2\n").start()
    rated = Site(robots=b"User-agent: *\nRequest-rate: 1/2s\n").start()
    urls = [
        f"{site.url}/p/{n}" for n in range(pages) for site in (delayed, rated)
    ]  # interleaved, so every worker gets pages of both
    run("pace", {"ROBOTSTXT_CRAWL_DELAY": "True"}, urls, stop_after=4.0 * pages + 30)
    result: dict[str, Any] = {}
    for label, site in (("Crawl-delay: 2", delayed), ("Request-rate: 1/2s", rated)):
        seen = site.pages()
        between = gaps(seen)
        span = max(a.at for a in seen) - min(a.at for a in seen) if len(seen) > 1 else 0.0
        result[label] = {
            "pages": len(seen),
            "smallest_gap": round(min(between), 3) if between else None,
            "per_minute": round((len(seen) - 1) / span * 60, 1) if span else None,
            "gaps": [round(g, 2) for g in between],
        }
    return result


def watch_pause(redis_url: str, stop: threading.Event, found: list[float]) -> None:
    """Look at the store's paused origins every 2 ms: the moment one appears (time.time())."""
    import redis

    client = redis.Redis.from_url(redis_url)
    while not stop.is_set():
        if client.zcard(PAUSES_KEY):
            found.append(time.time())
            return
        stop.wait(0.002)


def scenario_slowdown(run: Callable[..., list[Path]], pages: int, redis_url: str) -> dict[str, Any]:
    site = Site(busy_for=float(PAUSE_SECONDS)).start()
    urls = [f"{site.url}/p/{n}" for n in range(pages)]
    stop, found = threading.Event(), []
    watcher = threading.Thread(target=watch_pause, args=(redis_url, stop, found), daemon=True)
    watcher.start()
    stamped = {"DOWNLOADER_MIDDLEWARES": json.dumps(STAMPED_MIDDLEWARES)}
    try:
        logs = run("slowdown", stamped, urls, stop_after=60.0)
    finally:
        stop.set()
        watcher.join()
    seen = site.pages()
    first = min(a.at for a in seen if a.status == 429)
    first_wall = min(a.wall for a in seen if a.status == 429)
    paused_at = found[0] if found else None
    # Sent after the pause was in the store, arrived before it ended: not on the wire.
    late = [
        a
        for a in seen
        if paused_at is not None
        and a.sent is not None
        and a.sent > paused_at
        and a.wall < first_wall + PAUSE_SECONDS
    ]
    after = [a for a in seen if a.at >= first]
    ok = {a.path for a in seen if a.status == 200}
    first_after = next(
        (a for a in after if a.at >= first + PAUSE_SECONDS - 1e-3 or a.status == 200), None
    )
    return {
        "timeline": [(round(a.at - first, 2), a.path, a.status) for a in after],
        "requests_429": sum(a.status == 429 for a in seen),
        "requests_within_pause": sum(1 for a in after[1:] if a.at < first + PAUSE_SECONDS),
        "pause_in_store_at": round(paused_at - first_wall, 3) if paused_at else None,
        "sent_after_pause_within_it": [
            (round(a.sent - first_wall, 3), round(a.wall - first_wall, 3), a.path, a.status)
            for a in late
            if a.sent is not None
        ],
        "first_request_after_the_429": round(first_after.at - first, 2) if first_after else None,
        "pages_answered_200": len(ok),
        "pages_lost": pages - len(ok),
        "errors": error_lines(logs),
    }


def scenario_mixed(run: Callable[..., list[Path]], origins: int) -> dict[str, Any]:
    """``origins`` origins, 3 pages each: a tenth paced (``Crawl-delay: 1``), a tenth
    answering 429 + ``Retry-After`` for their first seconds, the rest plain. Every page
    must be answered 200 exactly once (none lost, none twice)."""
    tenth = max(1, origins // 10)
    sites = [
        Site(robots=b"User-agent: *\nCrawl-delay: 1\n")
        if n < tenth
        else Site(busy_for=float(PAUSE_SECONDS))
        if n < 2 * tenth
        else Site()
        for n in range(origins)
    ]
    for site in sites:
        site.start()
    urls = [f"{site.url}/p/{n}" for n in range(3) for site in sites]
    settings = {
        "ROBOTSTXT_CRAWL_DELAY": "True",
        "REDIS_START_URLS_BATCH_SIZE": "50",
        "CONCURRENT_REQUESTS": "16",
    }
    logs = run("mixed", settings, urls, stop_after=240.0)
    answered: Counter[str] = Counter()
    for site in sites:
        for arrival in site.pages():
            if arrival.status == 200:
                answered[site.url + arrival.path] += 1
    paced_gaps = [g for site in sites[:tenth] for g in gaps(site.pages())]
    return {
        "origins": origins,
        "pages": len(urls),
        "answered_200": sum(1 for url in urls if answered[url]),
        "lost": sum(1 for url in urls if not answered[url]),
        "twice": sum(1 for url in urls if answered[url] > 1),
        "answers_429": sum(a.status == 429 for site in sites for a in site.pages()),
        "paced_smallest_gap": round(min(paced_gaps), 3) if paced_gaps else None,
        "errors": error_lines(logs),
    }


def scenario_dead(run: Callable[..., list[Path]], pages: int, seconds: float) -> dict[str, Any]:
    dead = [Site(robots=None).start() for _ in range(5)]
    urls = [f"{site.url}/p/{n}" for site in dead for n in range(pages)]
    refused = closed_port()
    urls += [f"{refused}/p/{n}" for n in range(pages)]
    settings = {
        "ROBOTSTXT_RETRY_DELAY": "1",
        "ROBOTSTXT_RETRY_MAX_DELAY": "4",
        "MAX_IDLE_TIME_BEFORE_CLOSE": "0",
    }
    logs = run("dead", settings, urls, stop_after=seconds)
    robots = sum(1 for site in dead for a in site.arrivals if a.path == "/robots.txt")
    return {"seconds": seconds, "robots_downloads": robots, "errors": error_lines(logs)}


_ERROR = re.compile(r"\] ERROR: (.*)$")
_VARIABLE = re.compile(r"127\.0\.0\.1:\d+|\d+")


def error_lines(logs: list[Path]) -> dict[str, Any]:
    """ERROR lines of all workers, counted by message (ports and numbers blanked)."""
    kinds: Counter[str] = Counter()
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            match = _ERROR.search(line)
            if match:
                kinds[_VARIABLE.sub("N", match[1])[:120]] += 1
    return {"total": sum(kinds.values()), "by_message": dict(kinds.most_common(5))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    scenarios = ["pace", "slowdown", "dead", "mixed", "all"]
    parser.add_argument("--scenario", choices=scenarios, default="all")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--pages", type=int, default=12, help="pages per paced origin")
    parser.add_argument("--dead-seconds", type=float, default=40.0)
    parser.add_argument("--origins", type=int, default=300, help="origins of --scenario mixed")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the workers' logs")
    args = parser.parse_args()

    import scrapy_googlerobots

    print(f"scrapy_googlerobots from {Path(scrapy_googlerobots.__file__).parent}")
    workdir = Path(tempfile.mkdtemp(prefix="pace-check-"))
    redis_process, redis_url = start_redis(workdir)
    base = {"MAX_IDLE_TIME_BEFORE_CLOSE": "8", "LOG_LEVEL": "DEBUG"}

    def run(name: str, settings: dict[str, str], urls: list[str], **kw: Any) -> list[Path]:
        return run_workers(redis_url, workdir, name, args.workers, {**base, **settings}, urls, **kw)

    results: dict[str, Any] = {}
    try:
        if args.scenario in ("pace", "all"):
            results["pace"] = scenario_pace(run, args.pages)
        if args.scenario in ("slowdown", "all"):
            results["slowdown"] = scenario_slowdown(run, 8, redis_url)
        if args.scenario in ("dead", "all"):
            results["dead"] = scenario_dead(run, 4, args.dead_seconds)
        if args.scenario == "mixed":
            results["mixed"] = scenario_mixed(run, args.origins)
    finally:
        redis_process.kill()
        redis_process.wait()
        if args.keep:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report(results)
    if args.json:
        print(json.dumps(results))
    return 0


def report(results: dict[str, Any]) -> None:
    for label, figures in results.get("pace", {}).items():
        print(
            f"pace  {label:<20} {figures['pages']} pages, smallest gap "
            f"{figures['smallest_gap']} s, {figures['per_minute']} requests/min"
        )
    slow = results.get("slowdown")
    if slow:
        print(
            f"slowdown  429 Retry-After: {PAUSE_SECONDS}: {slow['requests_429']} answers 429, "
            f"{slow['requests_within_pause']} requests within the pause, first request after "
            f"the first 429 at +{slow['first_request_after_the_429']} s; pages answered 200: "
            f"{slow['pages_answered_200']}, lost: {slow['pages_lost']}"
        )
        for at, path, status in slow["timeline"]:
            print(f"    +{at:6.2f} s  {status}  {path}")
        print(
            f"    the pause was in the store at +{slow['pause_in_store_at']} s; requests sent "
            f"after that which reached the site during the pause: "
            f"{len(slow['sent_after_pause_within_it'])}"
        )
        for sent, at, path, status in slow["sent_after_pause_within_it"]:
            print(f"    sent +{sent:.3f} s, arrived +{at:.3f} s  {status}  {path}")
    dead = results.get("dead")
    for scenario in ("slowdown", "dead"):
        figures = results.get(scenario)
        if figures:
            print(f"{scenario}  ERROR lines: {figures['errors']['total']}")
            for message, count in figures["errors"]["by_message"].items():
                print(f"    {count:4d}  {message}")
    mixed = results.get("mixed")
    if mixed:
        print(
            f"mixed  {mixed['origins']} origins, {mixed['pages']} pages: answered 200 "
            f"{mixed['answered_200']}, lost {mixed['lost']}, twice {mixed['twice']}; "
            f"429 answers {mixed['answers_429']}; smallest gap at a Crawl-delay: 1 origin "
            f"{mixed['paced_smallest_gap']} s; ERROR lines {mixed['errors']['total']}"
        )
    if dead:
        print(f"dead  robots.txt downloads in {dead['seconds']:.0f} s: {dead['robots_downloads']}")


if __name__ == "__main__":
    sys.exit(main())
