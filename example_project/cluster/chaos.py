"""The chaos check of the cluster demo (``run_cluster.py --chaos`` and ``--chaos-jobdir``).

``--chaos``: a private Redis, a loopback web of 30 origins (6 of them answer
503 for robots.txt until they "recover"; every robots.txt disallows
``/private/``), 240 pages in the start list (``pages:start_urls``), three
``scrapy crawl pages`` workers. While the 6 origins are unreachable and their
pages wait for robots.txt, one worker gets one SIGINT and another is
SIGKILLed; a replacement worker joins, the origins recover, and the cluster
runs until it is idle (start list and queue empty, no parked request left in
Redis for adoption, every worker idle). The seed decides the page order, the
slow pages, which workers are hit, in what order and when.

The workers declare ``ROBOTSTXT_USAGE = ["train-ai"]``, and every sixth origin
reserves TDM rights for ``/page/5`` in its ``/.well-known/tdmrep.json``
(TDMRep; the others answer 404): those pages are not allowed by the final
rules, and none may be fetched (``tdm_reserved_fetched``).

``--chaos-jobdir``: one ``scrapy crawl links`` process with ``JOBDIR`` and no
Redis; SIGKILLed while pages wait for unreachable origins, restarted with the
same ``JOBDIR`` (and no start URL, so only what ``JOBDIR`` kept can bring the
waiting pages back), then the origins recover.

Each worker writes what it holds to an events file (``cluster_demo/snapshots.py``);
the web server counts every fetch. The report says, per run: every page allowed
by the final rules crawled or not, pages fetched twice, disallowed pages
fetched, waiting pages lost at the SIGINT stop and at the SIGKILL, and, apart,
scrapy-redis's own loss (requests the killed worker had taken off the shared
queue or the start list and was not holding for robots.txt: nobody gives them
back). Exit status 0 only when the faults met waiting pages and the losses that
are ours (robots.txt waits), the duplicates, the disallowed fetches and the
records left in Redis are all zero.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from origins import HERE, Origin

ORIGINS = 30
FLAKY = 6
ALLOWED_PATHS = [f"/page/{n}" for n in range(6)]
PRIVATE_PATHS = ["/private/0", "/private/1"]
SITE: dict[str, list[str]] = {path: [] for path in ALLOWED_PATHS + PRIVATE_PATHS}
START_KEY = "pages:start_urls"
# TDMRep: every sixth origin reserves this page (not by the seed: the seeded
# scenario stays as it was).
TDM_RESERVED_PATH = "/page/5"
TDMREP = json.dumps(
    [
        {
            "location": TDM_RESERVED_PATH,
            "tdm-reservation": 1,
            "tdm-policy": "https://publisher.example/tdm-policy.json",
        }
    ]
).encode()
QUEUE_KEY = "pages:requests"  # scrapy-redis SCHEDULER_QUEUE_KEY for the spider "pages"
KEY_PATTERNS = ("pages:*", "cluster_demo:robotstxt:*")
# Where the Redis store keeps each worker's parked requests (a hash per owner;
# see scrapy_googlerobots/stores/redis.py): what a stopped or dead worker left
# there waits for adoption, so the cluster is not idle while any is left.
PARKED_RECORDS = "cluster_demo:robotstxt:parked:pages:requests:*"

# Settings of every chaos worker (on top of cluster_demo/settings.py).
WORKER_SETTINGS = {
    # Only the harness ends a worker: it must still be there to adopt what a dead one left.
    "MAX_IDLE_TIME_BEFORE_CLOSE": "0",
    "REDIS_START_URLS_BATCH_SIZE": "6",
    # Quick retries of the unreachable robots.txt, so recovery is seen within seconds.
    "ROBOTSTXT_RETRY_DELAY": "1",
    "ROBOTSTXT_RETRY_MAX_DELAY": "2",
    "DOWNLOAD_TIMEOUT": "10",
    "LOG_LEVEL": "INFO",
    # A crawl for training data: TDMRep applies (tdmrep.json fetched once per origin).
    "ROBOTSTXT_USAGE": "train-ai",
}

# --reactor: the workers' TWISTED_REACTOR (default: the project's, i.e. Scrapy's).
REACTORS = {
    "asyncio": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
    "classic": "twisted.internet.epollreactor.EPollReactor",
}

# The log line of a stop about the requests that were waiting (dropped or handed over).
_WAITING_LINE = re.compile(r"waiting for robots\.txt", re.IGNORECASE)
_STOP_WORDS = re.compile(r"dropp|hand|requeue|re-queue|return|kept|keep|saved", re.IGNORECASE)


# -- the workers ----------------------------------------------------------------


@dataclass
class Seen:
    """Where each URL was last seen: (time, worker, state) with the largest time."""

    last: dict[str, tuple[float, str, str]] = field(default_factory=dict)

    def note(self, url: str, t: float, worker: str, state: str) -> None:
        old = self.last.get(url)
        if old is None or t >= old[0]:
            self.last[url] = (t, worker, state)


class Worker:
    """One ``scrapy crawl`` process: its log (lines about waiting requests timed) and events."""

    # Every worker started, so that none outlives the harness (they never stop on their own).
    launched: ClassVar[list[Worker]] = []

    def __init__(self, name: str, workdir: Path, env: dict[str, str], args: list[str]) -> None:
        Worker.launched.append(self)
        self.name = name
        self.events_path = workdir / f"{name}.events"
        self.log_path = workdir / f"{name}.log"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scrapy",
                "crawl",
                *args,
                "-s",
                f"SNAPSHOT_FILE={self.events_path}",
            ],
            cwd=HERE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**env, "WORKER_NAME": name},
        )
        # (time.time() on arrival, line) of the lines about waiting requests.
        self.waiting_lines: list[tuple[float, str]] = []
        self.snapshot: dict[str, Any] | None = None
        self.snapshots = 0
        self.crawled: list[str] = []
        self.stats: dict[str, Any] = {}
        self._offset = 0
        self._partial = b""
        self._pump = threading.Thread(target=self._read_output, daemon=True)
        self._pump.start()

    def _read_output(self) -> None:
        assert self.process.stdout is not None
        with open(self.log_path, "w") as log:
            for line in self.process.stdout:
                log.write(line)
                if _WAITING_LINE.search(line):
                    self.waiting_lines.append((time.time(), line.strip()))

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def read(self, seen: Seen) -> None:
        """Take in the events written since the last call."""
        try:
            with open(self.events_path, "rb") as events:
                events.seek(self._offset)
                data = events.read()
        except FileNotFoundError:
            return
        self._offset += len(data)
        data = self._partial + data
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            event = json.loads(line)
            t, kind = event["t"], event["event"]
            if kind == "snapshot":
                self.snapshot = event
                self.snapshots += 1
                for url in event["parked"]:
                    seen.note(url, t, self.name, "parked")
                for url in event["active"]:
                    seen.note(url, t, self.name, "active")
            elif kind == "stats":
                self.stats = event["stats"]
            else:
                seen.note(event["url"], t, self.name, kind)
                if kind == "crawled":
                    self.crawled.append(event["url"])

    def fresh_snapshot(self, seen: Seen, timeout: float = 10.0) -> dict[str, Any] | None:
        """Wait for the next snapshot (so that a signal follows it within milliseconds)."""
        count = self.snapshots
        deadline = time.monotonic() + timeout
        while self.snapshots == count and time.monotonic() < deadline and self.alive:
            time.sleep(0.01)
            self.read(seen)
        return self.snapshot

    def send(self, sig: int) -> float:
        self.process.send_signal(sig)
        return time.time()

    def stop(self, timeout: float = 30.0) -> int:
        """SIGINT (a clean stop), then SIGKILL if it does not end in ``timeout`` seconds."""
        if self.alive:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._pump.join(5)
        return self.process.returncode


def _settings_args(settings: dict[str, str]) -> list[str]:
    return [arg for key, value in settings.items() for arg in ("-s", f"{key}={value}")]


def _worker_env(redis_url: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


# -- the web ------------------------------------------------------------------------


class Web:
    """The loopback web: ``count`` origins, ``flaky`` of them answering 503 for robots.txt until
    :meth:`recover`; pages take a seeded 0.1-0.4 s each."""

    def __init__(
        self, rng: random.Random, count: int, flaky: int, site: dict[str, list[str]] = SITE
    ) -> None:
        self.recovered = threading.Event()
        # Origin index -> when its robots.txt was first served with 200.
        self._known_at: dict[int, float] = {}
        flaky_indices = set(rng.sample(range(count), flaky))
        self.origins = [
            Origin(
                delay=round(rng.uniform(0.1, 0.4), 2),
                site=site,
                robots_status=self._robots_status(i, flaky=i in flaky_indices),
                tdmrep=TDMREP if i % 6 == 5 else None,
            )
            for i in range(count)
        ]
        self.flaky = [self.origins[i].url for i in sorted(flaky_indices)]
        self.reserved = [
            origin.url + TDM_RESERVED_PATH for i, origin in enumerate(self.origins) if i % 6 == 5
        ]

    def _robots_status(self, index: int, *, flaky: bool) -> Callable[[], int]:
        def status() -> int:
            if flaky and not self.recovered.is_set():
                return 503
            self._known_at.setdefault(index, time.time())
            return 200

        return status

    def robots_known_at(self, url: str) -> float:
        """When the robots.txt of ``url``'s origin was first served with 200 (inf: never)."""
        for index, origin in enumerate(self.origins):
            if url.startswith(origin.url + "/"):
                return self._known_at.get(index, float("inf"))
        return float("inf")

    def recover(self) -> float:
        self.recovered.set()
        return time.time()

    def pages(self, paths: Iterable[str]) -> list[str]:
        return [origin.url + path for origin in self.origins for path in paths]

    def hits(self) -> Counter[str]:
        """Fetches per page URL (robots.txt and tdmrep.json left out)."""
        return Counter(
            {
                origin.url + path: n
                for origin in self.origins
                for path, n in origin.hits.items()
                if path not in ("/robots.txt", "/.well-known/tdmrep.json")
            }
        )

    def tdmrep_fetches(self) -> int:
        return sum(origin.hits["/.well-known/tdmrep.json"] for origin in self.origins)

    def close(self) -> None:
        for origin in self.origins:
            origin.server.shutdown()
            origin.server.server_close()


# -- the cluster scenario -------------------------------------------------------------


@dataclass
class Fault:
    kind: str  # "SIGINT" or "SIGKILL"
    worker: Worker
    at: float = 0.0
    waiting: list[str] = field(default_factory=list)
    downloading: list[str] = field(default_factory=list)


def chaos_run(
    seed: int,
    redis_url: str,
    workdir: Path,
    timeout: float,
    settle: float,
    settings: dict[str, str] = WORKER_SETTINGS,
) -> dict[str, Any]:
    """One seeded run of the cluster scenario; returns its figures."""
    import redis

    rng = random.Random(seed)
    client = redis.Redis.from_url(redis_url)
    for pattern in KEY_PATTERNS:
        for key in client.scan_iter(pattern):
            client.delete(key)
    web = Web(rng, ORIGINS, FLAKY)
    pages = web.pages(ALLOWED_PATHS + PRIVATE_PATHS)
    reserved = set(web.reserved)
    allowed = [url for url in web.pages(ALLOWED_PATHS) if url not in reserved]
    allowed_set = set(allowed)
    rng.shuffle(pages)
    client.rpush(START_KEY, *[json.dumps({"url": url}) for url in pages])

    rundir = workdir / f"seed-{seed}"
    rundir.mkdir()
    env = _worker_env(redis_url)
    args = ["pages", *_settings_args(settings)]
    seen = Seen()
    began = time.time()
    events: list[tuple[float, str]] = []
    workers = [Worker(f"worker-{n}", rundir, env, args) for n in (1, 2, 3)]

    def poll() -> None:
        for worker in workers:
            worker.read(seen)

    def parked_in_store() -> int:
        return sum(client.hlen(key) for key in client.scan_iter(PARKED_RECORDS))

    def waiting(worker: Worker) -> list[str]:
        snapshot = worker.snapshot or {"parked": []}
        return [url for url in snapshot["parked"] if url in allowed_set]

    hit = rng.sample(workers, 2)
    faults = [Fault("SIGINT", hit[0]), Fault("SIGKILL", hit[1])]
    rng.shuffle(faults)
    # Strike when this many start URLs are left at most (0: the list is drained)
    # and both workers to be hit hold waiting pages.
    left_at_most = rng.choice([0, 24, 60])
    gap = round(rng.uniform(0.0, 1.0), 2)
    join_after = round(rng.uniform(0.2, 1.5), 2)
    recover_after = round(rng.uniform(1.0, 4.0), 2)
    deadline = time.monotonic() + timeout
    strike_by = time.monotonic() + min(60.0, timeout / 2)
    while time.monotonic() < strike_by:
        poll()
        if client.llen(START_KEY) <= left_at_most and all(waiting(f.worker) for f in faults):
            break
        time.sleep(0.05)

    for index, fault in enumerate(faults):
        if index:
            time.sleep(gap)
        snapshot = fault.worker.fresh_snapshot(seen) or {"parked": [], "active": []}
        fault.at = fault.worker.send(signal.SIGINT if fault.kind == "SIGINT" else signal.SIGKILL)
        fault.waiting = [u for u in snapshot["parked"] if u in allowed_set]
        fault.downloading = [u for u in snapshot["active"] if u in allowed_set]
        events.append(
            (
                fault.at,
                f"{fault.kind} {fault.worker.name} ({len(fault.waiting)} pages waiting for "
                f"robots.txt, {len(fault.downloading)} in its downloader; "
                f"{client.llen(START_KEY)} start URLs left)",
            )
        )
    time.sleep(join_after)
    workers.append(Worker("worker-4", rundir, env, args))
    events.append((time.time(), "worker-4 joins (replacement)"))
    time.sleep(recover_after)
    events.append((web.recover(), f"{FLAKY} origins recover (robots.txt 200)"))

    # Idle: the queue and the start list empty, no parked request left in the
    # store for adoption, and every live worker's last snapshot (under a second
    # old) without waiting or downloading requests, for 2 s in a row, and at
    # least `settle` seconds after the last fault (a dead worker's leases lapse).
    settle_until = max(f.at for f in faults) + settle
    quiet_since: float | None = None
    timed_out = True
    while time.monotonic() < deadline:
        poll()
        now = time.time()
        live = [w for w in workers if w.alive and w not in [f.worker for f in faults]]
        idle = (
            client.llen(START_KEY) == 0
            and not client.exists(QUEUE_KEY)
            and not parked_in_store()
            and all(
                w.snapshot is not None
                and now - w.snapshot["t"] < 1.0
                and not w.snapshot["parked"]
                and not w.snapshot["active"]
                for w in live
            )
        )
        quiet_since = (quiet_since or now) if idle else None
        if quiet_since is not None and now - quiet_since >= 2.0 and now >= settle_until:
            timed_out = False
            break
        time.sleep(0.25)
    events.append((time.time(), "cluster idle" if not timed_out else "TIMEOUT: cluster not idle"))
    codes = {w.name: w.stop() for w in workers}
    poll()
    left_in_store = parked_in_store()
    tdmrep_fetches = web.tdmrep_fetches()
    web.close()

    crawled = Counter(url for w in workers for url in w.crawled)
    hits = web.hits()
    lost = [url for url in allowed if url not in crawled]
    stop, kill = (next(f for f in faults if f.kind == kind) for kind in ("SIGINT", "SIGKILL"))
    losses: dict[str, list[str]] = {"stop": [], "kill": [], "scrapy_redis": [], "other": []}
    for url in lost:
        t, where, state = seen.last.get(url, (0.0, "", "never seen"))
        # Last seen given to the engine (a start URL taken from Redis, or a
        # request handed back): it was waiting for robots.txt unless its origin's
        # robots.txt had been served already; then it went on to the queue or
        # the downloader (scrapy-redis's business).
        was_waiting = state == "parked" or (state == "scheduled" and web.robots_known_at(url) > t)
        if where == stop.worker.name and was_waiting:
            losses["stop"].append(url)
        elif where == kill.worker.name and was_waiting:
            losses["kill"].append(url)
        elif where == kill.worker.name or (not where and not timed_out):
            # Never seen: taken from the start list in a batch by the killed
            # worker, which died before giving it to its engine (a waiting
            # request is always seen: the "scheduled" event comes first).
            losses["scrapy_redis"].append(url)
        else:
            losses["other"].append(url)
    handover = [(t, line) for t, line in stop.worker.waiting_lines if t >= stop.at]
    handover = [(t, line) for t, line in handover if _STOP_WORDS.search(line)]
    # The last adoption: by then every record the faulted workers left was taken.
    adoptions = [
        t for w in workers for t, line in w.waiting_lines if "Adopted" in line and t > kill.at
    ]
    duplicates = sorted(url for url, n in hits.items() if n > 1)
    forbidden = sum(n for url, n in hits.items() if "/private/" in url)
    result = {
        "seed": seed,
        "origins": ORIGINS,
        "flaky_origins": FLAKY,
        "start_pages": len(pages),
        "allowed_pages": len(allowed),
        "crawled": len(allowed) - len(lost),
        "sigint_worker": stop.worker.name,
        "sigkill_worker": kill.worker.name,
        "waiting_at_stop": len(stop.waiting),
        "waiting_at_kill": len(kill.waiting),
        "downloading_at_kill": len(kill.downloading),
        "lost_at_stop": len(losses["stop"]),
        "lost_at_kill": len(losses["kill"]),
        "scrapy_redis_loss": len(losses["scrapy_redis"]),
        "lost_other": len(losses["other"]),
        "lost_urls": {k: v for k, v in losses.items() if v},
        "duplicates": len(duplicates),
        "duplicate_urls": duplicates,
        "forbidden_fetched": forbidden,
        "tdm_reserved_pages": len(reserved),
        "tdm_reserved_fetched": sum(hits[url] for url in reserved),
        "tdm_refused": sum(
            value
            for w in workers
            for key, value in w.stats.items()
            if key.startswith("robotstxt/tdmrep/forbidden/")
        ),
        "tdmrep_fetches": tdmrep_fetches,
        "left_in_store": left_in_store,
        "handed_over": stop.worker.stats.get("robotstxt/parked/handed_over", 0),
        "adopted": sum(w.stats.get("robotstxt/parked/adopted", 0) for w in workers),
        "last_adoption_after_kill": round(max(adoptions) - kill.at, 2) if adoptions else None,
        "fetch_lease_waits": sum(w.stats.get("robotstxt/fetch_lease/waits", 0) for w in workers),
        "handover_latency": round(handover[0][0] - stop.at, 3) if handover else None,
        "handover_line": handover[0][1] if handover else None,
        "timed_out": timed_out,
        "exit_codes": codes,
        "stats": {w.name: w.stats for w in workers},
        "timeline": [(round(t - began, 2), text) for t, text in sorted(events)],
        "workdir": str(rundir),
    }
    result["ok"] = (
        not timed_out
        and result["waiting_at_stop"] > 0
        and result["waiting_at_kill"] > 0
        and not any(result[k] for k in ("lost_at_stop", "lost_at_kill", "lost_other"))
        and not duplicates
        and not forbidden
        and not result["tdm_reserved_fetched"]
        and not left_in_store
    )
    return result


def print_run(result: dict[str, Any], out: Callable[[str], None] = print) -> None:
    out(
        f"chaos run, seed {result['seed']}: {result['origins']} origins ({result['flaky_origins']} "
        f"answer 503 for robots.txt until they recover), {result['start_pages']} start pages "
        f"({result['allowed_pages']} allowed by the final rules)"
    )
    for at, text in result["timeline"]:
        out(f"  {at:6.2f} s  {text}")
    lost = result["allowed_pages"] - result["crawled"]
    out(
        f"pages allowed by the final rules crawled: {result['crawled']} "
        f"of {result['allowed_pages']}"
        + (
            ""
            if not lost
            else " (all others: scrapy-redis's own loss)"
            if lost == result["scrapy_redis_loss"]
            else f" ({lost} missing)"
        )
    )
    out(f"duplicates (pages fetched more than once): {result['duplicates']}")
    out(f"disallowed pages fetched: {result['forbidden_fetched']}")
    out(
        f"TDM-reserved pages fetched: {result['tdm_reserved_fetched']} of "
        f"{result['tdm_reserved_pages']} ({result['tdm_refused']} refusals counted by the "
        f"workers; tdmrep.json fetched {result['tdmrep_fetches']} times for "
        f"{result['origins']} origins)"
    )
    out(
        f"waiting pages lost at the SIGINT stop ({result['sigint_worker']}): "
        f"{result['lost_at_stop']} of {result['waiting_at_stop']}"
    )
    out(
        f"waiting pages lost at the SIGKILL ({result['sigkill_worker']}): "
        f"{result['lost_at_kill']} of {result['waiting_at_kill']}"
    )
    out(
        "scrapy-redis's own loss (taken from Redis by the killed worker, not waiting for "
        f"robots.txt; not ours): {result['scrapy_redis_loss']} "
        f"({result['downloading_at_kill']} in its downloader at its last snapshot)"
    )
    if result["lost_other"]:
        out(f"other pages lost: {result['lost_other']}")
    out(
        f"robots.txt stats: {result['handed_over']} handed over at the stop "
        f"(robotstxt/parked/handed_over), {result['adopted']} adopted by other workers "
        "(robotstxt/parked/adopted)"
    )
    if result["last_adoption_after_kill"] is not None:
        out(f"last adoption: {result['last_adoption_after_kill']:.1f} s after the SIGKILL")
    if result["left_in_store"]:
        out(f"parked requests left in Redis, adopted by nobody: {result['left_in_store']}")
    if result["handover_line"]:
        out(
            f"SIGINT to the stop's log line: {result['handover_latency']:.2f} s "
            f"({result['handover_line'].split('] ', 1)[-1]})"
        )
    else:
        out("SIGINT to the stop's log line: no such line")
    where = "" if result["ok"] else f"; logs in {result['workdir']}"
    out(f"result: {'PASS' if result['ok'] else 'FAIL'} (pages lost in all: {lost}{where})")


def print_table(results: list[dict[str, Any]], out: Callable[[str], None] = print) -> None:
    out("")
    out(
        "seed | waiting at stop | lost at stop | waiting at kill | lost at kill | "
        "scrapy-redis loss | duplicates | forbidden fetched | hand-over latency | "
        "last adoption | ok"
    )
    for r in results:
        latency = "-" if r["handover_latency"] is None else f"{r['handover_latency']:.2f} s"
        adopted = r.get("last_adoption_after_kill")
        adoption = "-" if adopted is None else f"{adopted:.1f} s"
        out(
            f"{r['seed']:>4} | {r['waiting_at_stop']:>15} | {r['lost_at_stop']:>12} | "
            f"{r['waiting_at_kill']:>15} | {r['lost_at_kill']:>12} | "
            f"{r['scrapy_redis_loss']:>17} | "
            f"{r['duplicates']:>10} | {r['forbidden_fetched']:>17} | {latency:>17} | "
            f"{adoption:>13} | {r['ok']}"
        )


# -- the JOBDIR scenario ---------------------------------------------------------------


def jobdir_run(
    seed: int, workdir: Path, timeout: float, settings: dict[str, str] = WORKER_SETTINGS
) -> dict[str, Any]:
    """One process with JOBDIR: SIGKILLed while pages wait, restarted, then recovery."""
    rng = random.Random(seed)
    page_paths = ALLOWED_PATHS[:5] + PRIVATE_PATHS[:1]
    web = Web(rng, 8, 3, site={path: [] for path in page_paths})
    pages = web.pages(page_paths)
    rng.shuffle(pages)
    hub = Origin(delay=0, site={"/": pages})
    allowed = [u for u in pages if "/private/" not in u]
    flaky_allowed = {u for u in allowed if any(u.startswith(o + "/") for o in web.flaky)}

    rundir = workdir / f"jobdir-seed-{seed}"
    rundir.mkdir()
    jobdir = rundir / "job"
    env = _worker_env()
    arguments = _settings_args({**settings, "JOBDIR": str(jobdir), "CONCURRENT_REQUESTS": "8"})
    seen = Seen()
    began = time.time()
    events: list[tuple[float, str]] = []
    deadline = time.monotonic() + timeout

    first = Worker("run-1", rundir, env, ["links", "-a", f"start_url={hub.url}/", *arguments])
    healthy = set(allowed) - flaky_allowed
    while time.monotonic() < deadline and first.alive:
        first.read(seen)
        snapshot = first.snapshot
        if (
            snapshot is not None
            and flaky_allowed <= set(snapshot["parked"])
            and healthy <= set(first.crawled)
            and not snapshot["active"]
        ):
            break
        time.sleep(0.05)
    snapshot = first.fresh_snapshot(seen) or {"parked": []}
    killed_at = first.send(signal.SIGKILL)
    first.stop()
    waiting = [u for u in snapshot["parked"] if u in flaky_allowed]
    events.append(
        (killed_at, f"SIGKILL {first.name} ({len(waiting)} pages waiting for robots.txt)")
    )

    second = Worker("run-2", rundir, env, ["links", *arguments])
    events.append((time.time(), f"{second.name} restarts with the same JOBDIR (no start URL)"))
    time.sleep(round(rng.uniform(1.0, 3.0), 2))
    events.append((web.recover(), "3 origins recover (robots.txt 200)"))
    remaining = max(1.0, deadline - time.monotonic())
    try:
        second.process.wait(remaining)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    code = second.stop()
    second.read(seen)
    events.append((time.time(), f"{second.name} ended (exit {code})"))
    hub.server.shutdown()
    hub.server.server_close()
    web.close()

    crawled = Counter(first.crawled + second.crawled)
    hits = web.hits()
    lost = [u for u in waiting if u not in crawled]
    never = [u for u in allowed if u not in crawled]
    duplicates = sorted(url for url, n in hits.items() if n > 1)
    forbidden = sum(n for url, n in hits.items() if "/private/" in url)
    result = {
        "seed": seed,
        "pages": len(pages),
        "allowed_pages": len(allowed),
        "waiting_at_kill": len(waiting),
        "crawled_after_restart": sum(1 for u in waiting if u in second.crawled),
        "lost_at_kill": len(lost),
        "never_crawled": len(never),
        "duplicates": len(duplicates),
        "duplicate_urls": duplicates,
        "forbidden_fetched": forbidden,
        "restart_stats": second.stats,
        "timed_out": timed_out,
        "timeline": [(round(t - began, 2), text) for t, text in sorted(events)],
        "workdir": str(rundir),
    }
    result["ok"] = (
        not timed_out
        and len(waiting) == len(flaky_allowed) > 0
        and not lost
        and not never
        and not duplicates
        and not forbidden
    )
    return result


def print_jobdir(result: dict[str, Any], out: Callable[[str], None] = print) -> None:
    out(
        f"JOBDIR run, seed {result['seed']}: one process, {result['pages']} pages linked "
        f"from a hub ({result['allowed_pages']} allowed), 3 of 8 origins answer 503 for robots.txt"
    )
    for at, text in result["timeline"]:
        out(f"  {at:6.2f} s  {text}")
    out(
        f"waiting pages crawled after the restart: {result['crawled_after_restart']} "
        f"of {result['waiting_at_kill']}; lost at the SIGKILL: {result['lost_at_kill']}"
    )
    out(
        f"restored by the restart: {result['restart_stats'].get('robotstxt/parked/adopted', 0)} "
        "(robotstxt/parked/adopted)"
    )
    out(f"pages allowed and never crawled: {result['never_crawled']}")
    out(f"duplicates (pages fetched more than once): {result['duplicates']}")
    out(f"disallowed pages fetched: {result['forbidden_fetched']}")
    where = "" if result["ok"] else f" (logs in {result['workdir']})"
    out(f"result: {'PASS' if result['ok'] else 'FAIL'}{where}")


# -- entry point (from run_cluster.py) ----------------------------------------------------


def main(args: argparse.Namespace, workdir: Path, redis_url: str | None) -> int:
    results: list[dict[str, Any]] = []
    seeds = [args.seed + n for n in range(args.runs)]
    settings = dict(WORKER_SETTINGS)
    if args.reactor:
        settings["TWISTED_REACTOR"] = REACTORS[args.reactor]
    try:
        for seed in seeds:
            if args.chaos_jobdir:
                result = jobdir_run(seed, workdir, args.timeout, settings)
                print_jobdir(result)
            else:
                assert redis_url is not None
                result = chaos_run(seed, redis_url, workdir, args.timeout, args.settle, settings)
                print_run(result)
            print(flush=True)
            results.append(result)
    finally:
        # After an error or Ctrl-C in the harness, no worker is left running.
        for worker in Worker.launched:
            if worker.alive:
                worker.process.kill()
                worker.process.wait()
    if len(results) > 1 and not args.chaos_jobdir:
        print_table(results)
    ok = bool(results) and all(r["ok"] for r in results)
    if args.json:
        print(json.dumps({"ok": ok, "runs": results}))
    return 0 if ok else 1
