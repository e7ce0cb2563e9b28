"""Run the cluster demo on this machine: one Redis, a small local web, two scrapy-redis workers.

    python run_cluster.py            # starts its own redis-server (needs the binary)
    REDIS_URL=redis://host:6379/0 python run_cluster.py   # or uses yours
    python run_cluster.py --chaos --seed 3 --runs 5       # the chaos check (chaos.py)
    python run_cluster.py --chaos-jobdir                  # its one-process JOBDIR variant

Both workers share the request queue and duplicate filter (scrapy-redis) and
the robots.txt cache (scrapy-googlerobots' Redis store). The report shows,
per origin, how many times its robots.txt was fetched (once, for the whole
cluster), which worker crawled each page, and that disallowed pages were
never requested. Exit status 0 when all of that holds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

from origins import ALLOWED, HERE, Origin


def start_redis(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    """A private redis-server on a unix socket in ``workdir`` (no TCP port to pick)."""
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server not found: apt-get install redis-server, or set REDIS_URL")
    socket_path = workdir / "redis.sock"
    process = subprocess.Popen(
        [
            binary,
            "--port",
            "0",
            "--unixsocket",
            str(socket_path),
            "--unixsocketperm",
            "700",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "ready to accept connections" in line.lower():
            break
    else:
        sys.exit("redis-server did not start")
    threading.Thread(target=process.stdout.read, daemon=True).start()
    return process, f"unix://{socket_path}?db=0"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--origins", type=int, default=6, help="origins in the demo web")
    parser.add_argument("--json", action="store_true", help="end with a JSON summary line")
    parser.add_argument(
        "--keep", action="store_true", help="keep the workers' logs and feeds (path printed)"
    )
    chaos = parser.add_argument_group("chaos check (see chaos.py)")
    chaos.add_argument(
        "--chaos",
        action="store_true",
        help="30 origins (6 unreachable for a while), 240 pages, 3 workers: SIGINT one and "
        "SIGKILL another while pages wait for robots.txt; report what was lost",
    )
    chaos.add_argument(
        "--chaos-jobdir",
        action="store_true",
        help="one process with JOBDIR, no Redis: SIGKILL while pages wait, restart, recovery",
    )
    chaos.add_argument("--seed", type=int, default=1, help="first seed (timings, pages, targets)")
    chaos.add_argument("--runs", type=int, default=1, help="runs, with seeds seed, seed+1, ...")
    chaos.add_argument("--timeout", type=float, default=180, help="hard limit per run (seconds)")
    chaos.add_argument(
        "--settle",
        type=float,
        default=20,
        help="seconds after the last fault before the cluster counts as idle (default 20: "
        "longer than the 15 s leases a dead worker leaves behind)",
    )
    chaos.add_argument(
        "--reactor",
        choices=["asyncio", "classic"],
        help="the workers' Twisted reactor (default: Scrapy's default for the project)",
    )
    args = parser.parse_args()
    if args.chaos_jobdir:
        return run_chaos(args, None)

    import redis

    workdir = Path(tempfile.mkdtemp(prefix="cluster-demo-"))
    redis_process = None
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        redis_process, redis_url = start_redis(workdir)
    if args.chaos:
        try:
            return run_chaos(args, redis_url, workdir)
        finally:
            if redis_process is not None:
                redis_process.kill()
                redis_process.wait()
    try:
        client = redis.Redis.from_url(redis_url)
        for pattern in ("pages:*", "cluster_demo:robotstxt:*"):
            for key in client.scan_iter(pattern):
                client.delete(key)
        origins = [Origin() for _ in range(args.origins)]
        client.lpush("pages:start_urls", *[origin.url + "/" for origin in origins])

        env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
        workers = []
        for name in ("worker-1", "worker-2"):
            log = open(workdir / f"{name}.log", "w")  # noqa: SIM115 - closed below
            command = [
                sys.executable,
                "-m",
                "scrapy",
                "crawl",
                "pages",
                "-o",
                str(workdir / f"{name}.jsonl"),
            ]
            workers.append(
                (
                    name,
                    log,
                    subprocess.Popen(
                        command,
                        cwd=HERE,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env={**env, "REDIS_URL": redis_url, "WORKER_NAME": name},
                    ),
                )
            )
        codes = {}
        for name, log, process in workers:
            codes[name] = process.wait(timeout=300)
            log.close()
        return report(origins, workdir, codes, args.json)
    finally:
        for origin in locals().get("origins", []):
            origin.server.shutdown()
        if redis_process is not None:
            redis_process.kill()
            redis_process.wait()
        if args.keep:
            print(f"logs and feeds kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def run_chaos(args: argparse.Namespace, redis_url: str | None, workdir: Path | None = None) -> int:
    """``--chaos`` / ``--chaos-jobdir``: the runs of chaos.py, in a temporary directory."""
    import chaos

    workdir = workdir or Path(tempfile.mkdtemp(prefix="cluster-chaos-"))
    code = chaos.main(args, workdir, redis_url)
    if args.keep or code:
        print(f"logs and events kept in {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return code


def report(origins: list[Origin], workdir: Path, codes: dict[str, int], as_json: bool) -> int:
    crawled: dict[str, list[str]] = {}
    for name in codes:
        feed = workdir / f"{name}.jsonl"
        lines = feed.read_text().splitlines() if feed.exists() else []
        for line in lines:
            item = json.loads(line)
            crawled.setdefault(item["url"], []).append(item["worker"])
    robots_fetches = sum(origin.hits["/robots.txt"] for origin in origins)
    disallowed = sum(
        n for o in origins for path, n in o.hits.items() if path.startswith("/private/")
    )
    for origin in origins:
        print(f"{origin.url}  robots.txt fetched {origin.hits['/robots.txt']}x")
        for path in ALLOWED:
            workers = ", ".join(crawled.get(origin.url + path, [])) or "-"
            print(f"    {path:<10} crawled by {workers}")
    pages = [origin.url + path for origin in origins for path in ALLOWED]
    once = all(len(crawled.get(page, [])) == 1 for page in pages)
    per_worker = Counter(worker for workers in crawled.values() for worker in workers)
    print(
        f"robots.txt fetches: {robots_fetches} for {len(origins)} origins and {len(codes)} "
        f"workers (each worker fetching its own: {len(origins) * len(codes)})"
    )
    print(
        f"pages crawled: {sum(per_worker.values())} of {len(pages)}, each once: {once}; "
        + ", ".join(f"{name}: {per_worker[name]}" for name in codes)
    )
    print(f"disallowed pages requested: {disallowed}")
    ok = all(code == 0 for code in codes.values()) and once and not disallowed
    ok = ok and all(origin.hits["/robots.txt"] == 1 for origin in origins)
    if not ok:
        for name in codes:
            print(
                f"--- {name} (exit {codes[name]}) ---\n"
                + (workdir / f"{name}.log").read_text()[-3000:]
            )
    if as_json:
        print(
            json.dumps(
                {
                    "origins": len(origins),
                    "robots_fetches": robots_fetches,
                    "pages": len(pages),
                    "each_page_once": once,
                    "per_worker": dict(per_worker),
                    "disallowed_requested": disallowed,
                    "exit_codes": codes,
                    "ok": ok,
                }
            )
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
