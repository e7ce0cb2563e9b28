"""Parse speed, match speed and memory: our core vs Protego, same corpus, same queries.

Both parsers get every file of ``../shared/corpus/robotstxt`` in its native
input type -- bytes for ours (what a response body is), str for Protego (what
``Protego.parse`` takes; decoding is left out of its time) -- and the same
queries: for each file, URLs derived from its own rules plus generic ones,
asked for ``googlebot``, ``bingbot`` and an unknown crawler.

- parse: MB/s over the whole corpus.
- match: queries/s with every file parsed once. "warm" is the steady state
  (after a first pass, which fills both libraries' lazy per-crawler
  indexes); "cold" is that first pass over freshly parsed files, the lazy
  costs included.
- Timings are the best of ``--repeat`` interleaved rounds (each round times
  both libraries once, so a busy machine slows both alike), with the garbage
  collector off while the clock runs, as ``timeit`` does.
- memory: bytes tracemalloc sees retained by all parsed files, right after
  parsing and again after the queries (lazy indexes included).

Run from the repository root: ``python benchmarks/bench_core.py``.
``--check`` exits 1 unless parse >= 2x, warm match >= 5x and memory <= 1x
Protego; ``--profile`` prints where our match time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import re
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from protego import Protego

from scrapy_googlerobots.robotstxt import parse

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "robotstxt"
AGENTS = ("googlebot", "bingbot", "zz-unknown-bot")
GENERIC = ("/", "/index.html", "/search?q=robots", "/about/team/", "/static/app.js?v=3")
RULE = re.compile(rb"(?im)^[ \t]*(?:dis)?allow[ \t]*:[ \t]*([^\s#]+)")

Query = tuple[str, str]


def load_corpus() -> list[tuple[str, bytes]]:
    if not CORPUS.is_dir():
        sys.exit(f"corpus not found at {CORPUS}")
    return [(path.name, path.read_bytes()) for path in sorted(CORPUS.iterdir())]


def queries_for(name: str, body: bytes, per_file: int) -> list[Query]:
    """URLs aimed at the file's own rules (filled wildcards, `$` cut) plus generic ones."""
    rng = random.Random(zlib.crc32(name.encode()))
    paths = list(GENERIC)
    for raw in RULE.findall(body):
        pattern = raw.decode("utf-8", "replace").rstrip("$")
        if not pattern.startswith("/"):
            pattern = "/" + pattern
        paths.append(pattern.replace("*", "x"))
        paths.append(pattern.replace("*", "") + rng.choice(["", "a/b.html", "?id=7"]))
    paths = rng.sample(paths, min(per_file, len(paths)))
    return [(f"https://{name}{path}", agent) for path in paths for agent in AGENTS]


def clock(func: Callable[[], object]) -> float:
    """Seconds ``func`` takes, garbage collector off (as timeit does): the other
    library's objects alive in the same process must not tax this one."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        func()
        return time.perf_counter() - start
    finally:
        gc.enable()


def retained(
    build: Callable[[], list[Any]], then: Callable[[list[Any]], object]
) -> tuple[int, int]:
    """Bytes retained by what ``build`` returns, before and after ``then`` ran on it."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    objects = build()
    gc.collect()
    parsed = tracemalloc.get_traced_memory()[0] - base
    then(objects)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del objects
    return parsed, used


def main() -> int:
    argp = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    argp.add_argument("--repeat", type=int, default=7)
    argp.add_argument("--per-file", type=int, default=40, help="URLs per file (x3 agents)")
    argp.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    argp.add_argument("--profile", action="store_true", help="profile our warm match pass")
    args = argp.parse_args()

    corpus = load_corpus()
    bodies = [body for _, body in corpus]
    texts = [body.decode("utf-8", "replace") for body in bodies]
    size_mb = sum(map(len, bodies)) / 1e6
    work = [queries_for(name, body, args.per_file) for name, body in corpus]
    n_queries = sum(map(len, work))

    def parse_ours() -> list[Any]:
        return [parse(body) for body in bodies]

    def parse_protego() -> list[Any]:
        return [Protego.parse(text) for text in texts]

    def match_ours(parsed: list[Any]) -> None:
        for robots, queries in zip(parsed, work, strict=True):
            allowed = robots.allowed
            for url, agent in queries:
                allowed(url, agent)

    def match_protego(parsed: list[Any]) -> None:
        for robots, queries in zip(parsed, work, strict=True):
            can_fetch = robots.can_fetch
            for url, agent in queries:
                can_fetch(url, agent)

    # Interleaved: every round times each library once, so load from other
    # processes on the machine hits both alike; each keeps its best round.
    sides = {
        "ours": (parse_ours, match_ours),
        "protego": (parse_protego, match_protego),
    }
    parsed = {name: parse_all() for name, (parse_all, _) in sides.items()}
    # The first pass over fresh parses ("cold") builds the lazy indexes.
    best = {name: {"cold": clock(partial(sides[name][1], parsed[name]))} for name in sides}
    for _ in range(args.repeat):
        for name, (parse_all, match_all) in sides.items():
            best[name]["parse"] = min(best[name].get("parse", 1e9), clock(parse_all))
            warm = clock(partial(match_all, parsed[name]))
            best[name]["warm"] = min(best[name].get("warm", 1e9), warm)
    rows = []
    for name, (parse_all, match_all) in sides.items():
        mem_parsed, mem_used = retained(parse_all, match_all)
        times = best[name]
        rows.append(
            (
                name,
                size_mb / times["parse"],
                n_queries / times["warm"],
                n_queries / times["cold"],
                mem_parsed,
                mem_used,
            )
        )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(match_ours, parsed["ours"])
        pstats.Stats(profiler).sort_stats("tottime").print_stats(8)

    ours, protego = rows
    print(f"corpus: {len(corpus)} files, {size_mb:.2f} MB; {n_queries} queries")
    print(f"{'':24}{'ours':>14}{'protego':>14}{'ours/protego':>14}")
    names = (
        "parse MB/s",
        "match queries/s (warm)",
        "match queries/s (cold)",
        "memory after parse, MB",
        "memory after match, MB",
    )
    for index, name in enumerate(names, start=1):
        a, b = ours[index], protego[index]
        scale = 1e6 if "memory" in name else 1
        print(f"{name:24}{a / scale:>14,.2f}{b / scale:>14,.2f}{a / b:>14.2f}")

    met = ours[1] >= 2 * protego[1] and ours[2] >= 5 * protego[2] and ours[5] <= protego[5]
    print("targets (parse >= 2x, warm match >= 5x, memory <= 1x):", "met" if met else "NOT met")
    return 0 if met or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
