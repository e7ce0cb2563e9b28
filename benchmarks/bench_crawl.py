"""What a real crawl costs: CPU of whole Scrapy crawls without robots.txt, with Scrapy's stock
middleware (Protego) and with ours, on the same loopback web.

A server process (twisted.web, this file's ``serve`` mode) listens on one port
per origin on 127.0.0.1 (each port is an origin, with its own robots.txt taken
from ``../shared/corpus/robotstxt``) and answers every other path with a small
HTML page. Each crawl is a fresh Python process (this file's ``crawl`` mode)
running ``scrapy.crawler.CrawlerProcess`` over the workload's URLs; it reports
its own CPU time (user + system, from the crawler's creation to the end of the
crawl; the robots.txt middlewares and parsers of all three variants are
imported before the clock starts, as imports are not crawl work).

Workloads (page paths come from each origin's own robots.txt rules, so some
are disallowed, plus generic paths):

- dense: 150 origins x 20 pages
- broad: 800 origins x 2 pages

"ours" is both of our middlewares, as the add-on installs them: the robots.txt
downloader middleware and the page directives' spider middleware (the pages
have no directives, as nearly all pages of the web).

Each round runs the three variants (none / stock / ours); ratios are paired per
round, and the table shows their median and spread. The order of the variants
changes per round as a Williams design (:func:`round_orders`): over a full cycle
each variant runs in every position and right after every other variant equally
often, so a crawl's after-effects on the next one (the server's state, the
machine's caches) fall on every variant alike. A plain rotation would have each
variant always follow the same one. ``--aa`` adds ``stock-again``, stock crawled
a second time per round: ``stock-again/stock`` is the benchmark's own noise and
bias, to read the other ratios against.

``--tdmrep`` (issue 27) adds a fourth variant, ``ours+tdm``: ours with
``ROBOTSTXT_USAGE = ["train-ai"]``, so every origin's
``/.well-known/tdmrep.json`` is fetched once and each allowed request meets
TDMRep's file step, its response the header and meta steps. The server then
answers ``tdmrep.json`` on every origin: a third reserve ``/blog/*`` (with a
policy), a third have an empty array, a third answer 404. The table adds
``ours+tdm/ours``: what declaring a TDM use costs, fetches included.

``--evidence`` (issue 34) adds ``ours+tdm`` and ``ours+evidence``: ``ours+tdm`` with
``ROBOTSTXT_EVIDENCE`` (a fresh directory per crawl). The table adds
``ours+evidence/ours+tdm`` and the bytes written (WARC, decision records); with both
workloads, the extra CPU is split into a part per decision record (per page) and a part
per origin (its robots.txt and tdmrep.json fetches as WARC) by solving
``extra = a * pages + b * origins`` over the two, and the bytes are given per 1,000
origins and per 1,000 pages.

Run from the repository root: ``python benchmarks/bench_crawl.py``
(``--rounds N``, ``--workload dense|broad``; ``--page-pair`` adds a fourth variant,
ours without the page directives' spider middleware, and prints
``ours/robots-only``, that middleware's own cost paired per round). ``--check`` exits 1 unless
ours/stock <= 1.00 on every workload measured and ours/none <= 1.08 on the dense
one (CPU medians; with ``--instructions``, the counts' means, the steadier check).
``--profile VARIANT`` profiles one crawl of that variant (the first
``--workload``, dense by default).

``--instructions N`` counts instead of timing: each variant's crawl runs N times
under valgrind's cachegrind (``--cache-sim=no``), which counts the instructions
the crawler process executes. The count of the same process stopped right before
the crawl (imports, settings) is taken off, so what remains is the crawl's own
work, from the crawler's creation to its end, as the CPU figures. Counts do not
move with the machine's load, so where paired CPU times of two variants spread
by +-10% on a busy machine, counts differ by a fraction of a percent between
repeats; a crawl under valgrind takes about 15x its CPU time, two at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "robotstxt"
WORKLOADS = {"dense": (150, 20), "broad": (800, 2)}
VARIANTS = ("none", "stock", "ours")
ALL_VARIANTS = (*VARIANTS, "robots-only", "stock-again", "ours+tdm", "ours+evidence")
USER_AGENT = "BenchBot/1.0 (+https://bench.example/bot)"
GENERIC = ("/", "/index.html", "/about/team/", "/search?q=robots&page=2", "/blog/2024/06/post")
RULE = re.compile(rb"(?im)^[ \t]*(?:dis)?allow[ \t]*:[ \t]*(/[^\s#]*)")
PAGE = b"<!doctype html><title>page</title>" + b"<p>Lorem ipsum dolor sit amet.</p>" * 40

COMMON_SETTINGS: dict[str, Any] = {
    "USER_AGENT": USER_AGENT,
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    # Every origin is 127.0.0.1 (one Scrapy slot): let the whole crawl run wide.
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
    "RETRY_ENABLED": False,
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
        # What the add-on installs next to it (issue 26): the page directives.
        "SPIDER_MIDDLEWARES": {"scrapy_googlerobots.PageDirectivesMiddleware": 950},
    },
}
# --page-pair: ours without the page directives' spider middleware, in the same rounds,
# so that the spider middleware's own cost is a paired ratio (ours/robots-only).
VARIANT_SETTINGS["robots-only"] = {
    key: value for key, value in VARIANT_SETTINGS["ours"].items() if key != "SPIDER_MIDDLEWARES"
}
VARIANT_SETTINGS["stock-again"] = VARIANT_SETTINGS["stock"]  # --aa: the A/A control
VARIANT_SETTINGS["ours+tdm"] = {**VARIANT_SETTINGS["ours"], "ROBOTSTXT_USAGE": ["train-ai"]}
# --evidence: ours+tdm keeping its evidence (the directory is made per crawl).
VARIANT_SETTINGS["ours+evidence"] = dict(VARIANT_SETTINGS["ours+tdm"])


# -- the server process -----------------------------------------------------------


TDMREP_FILES = (
    json.dumps(
        [
            {"location": "/blog/*", "tdm-reservation": 1, "tdm-policy": "https://x.example/p"},
            {"location": "/", "tdm-reservation": 0},
        ]
    ).encode(),
    b"[]",
    b"",  # 404
)


def origin_site(robots: bytes, tdmrep: bytes | None = None) -> Any:
    """A twisted.web ``Site`` for one origin: ``robots`` at /robots.txt, :data:`PAGE` elsewhere;
    ``tdmrep`` (``b""``: a 404) at /.well-known/tdmrep.json when given."""
    from twisted.web.resource import Resource
    from twisted.web.server import Site

    class Origin(Resource):
        isLeaf = True

        def render_GET(self, request: Any) -> bytes:
            if request.path == b"/robots.txt":
                request.setHeader(b"Content-Type", b"text/plain")
                return robots
            if tdmrep is not None and request.path == b"/.well-known/tdmrep.json":
                if not tdmrep:
                    request.setResponseCode(404)
                    return b"not found"
                request.setHeader(b"Content-Type", b"application/json")
                return tdmrep
            request.setHeader(b"Content-Type", b"text/html")
            return PAGE

    site = Site(Origin())
    site.displayTracebacks = False
    site.noisy = False
    return site


def run_until_stdin_closes() -> None:
    """Run the reactor until the parent process closes our stdin."""
    from twisted.internet import reactor

    def wait_for_eof() -> None:
        sys.stdin.read()
        reactor.callFromThread(reactor.stop)  # type: ignore[attr-defined]

    threading.Thread(target=wait_for_eof, daemon=True).start()
    reactor.run()  # type: ignore[attr-defined]


def serve(files: list[str]) -> None:
    """Listen on one port per robots.txt file; print the ports; stop when stdin closes."""
    from twisted.internet import reactor

    ports = []
    for index, name in enumerate(files):
        site = origin_site((CORPUS / name).read_bytes(), TDMREP_FILES[index % len(TDMREP_FILES)])
        port = reactor.listenTCP(0, site, interface="127.0.0.1")  # type: ignore[attr-defined]
        ports.append(port.getHost().port)
    print(json.dumps(ports), flush=True)
    run_until_stdin_closes()


class Server:
    """The server process, for one workload's origins."""

    def __init__(self, files: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "serve", json.dumps(files)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.ports: list[int] = json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


# -- the crawler process ---------------------------------------------------------


def crawl(variant: str, work: str, profile: bool, setup_only: bool = False) -> None:
    """Crawl the URLs in ``work`` (a JSON file) with ``variant``; print CPU and counts."""
    from scrapy import Request, Spider
    from scrapy.crawler import CrawlerProcess

    urls: list[str] = json.loads(Path(work).read_text())
    outcome: dict[str, Any] = {}

    class BenchSpider(Spider):
        name = "bench"

        async def start(self) -> Any:  # Scrapy >= 2.13
            for request in self.start_requests():
                yield request

        def start_requests(self) -> Any:
            for url in urls:
                yield Request(url, callback=self.parse, errback=self.failed)

        def parse(self, response: Any) -> None:
            outcome["crawled"] = outcome.get("crawled", 0) + 1

        def failed(self, failure: Any) -> None:
            outcome["failed"] = outcome.get("failed", 0) + 1

    settings = {**COMMON_SETTINGS, **VARIANT_SETTINGS[variant]}
    evidence = None
    if variant == "ours+evidence":
        evidence = Path(tempfile.mkdtemp(prefix="bench-evidence-"))
        settings["ROBOTSTXT_EVIDENCE"] = str(evidence)
    # Imports happen once per process and are not crawl work: every variant
    # imports all robots.txt code before the clock starts. (This matters where
    # PYTHONDONTWRITEBYTECODE is set: a package without .pyc files would be
    # compiled from source inside the timed part.)
    # scrapy_googlerobots' top level imports its parts on first use, so every
    # module of the package is imported here by name.
    import importlib
    import pkgutil

    import protego  # noqa: F401
    import scrapy.downloadermiddlewares.robotstxt
    import scrapy.robotstxt  # noqa: F401

    import scrapy_googlerobots

    for module in pkgutil.walk_packages(scrapy_googlerobots.__path__, "scrapy_googlerobots."):
        # ImportError: an optional extra (redis) that is not installed.
        with contextlib.suppress(ImportError):
            importlib.import_module(module.name)

    if setup_only:  # --instructions: what a process costs before its crawl starts
        print(json.dumps(outcome), flush=True)
        return
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    started = os.times()
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(BenchSpider)
    process.crawl(crawler)
    process.start()
    ended = os.times()
    if profiler is not None:
        import pstats

        profiler.disable()
        profiler.dump_stats(Path(tempfile.gettempdir()) / f"bench_crawl_{variant}.prof")
        view = pstats.Stats(profiler, stream=sys.stderr)
        view.sort_stats("tottime").print_stats(25)
        # Where robots.txt work goes: the middlewares' own functions by cumulative time.
        view.sort_stats("cumulative").print_stats("robotstxt|googlerobots|protego", 25)
    stats = crawler.stats.get_stats() if crawler.stats else {}
    outcome["cpu"] = (ended.user - started.user) + (ended.system - started.system)
    outcome["wall"] = ended.elapsed - started.elapsed
    outcome["robots"] = stats.get("robotstxt/request_count", 0)
    outcome["forbidden"] = stats.get("robotstxt/forbidden", 0)
    outcome["enqueued"] = stats.get("scheduler/enqueued", 0)
    outcome["handed_back"] = stats.get("robotstxt/handed_back", 0)
    outcome["tdmrep"] = stats.get("robotstxt/tdmrep/request_count", 0)
    outcome["tdm_forbidden"] = sum(
        value for key, value in stats.items() if key.startswith("robotstxt/tdmrep/forbidden/")
    )
    if evidence is not None:
        files = list(evidence.iterdir())
        outcome["warc_bytes"] = sum(f.stat().st_size for f in files if f.suffix == ".gz")
        outcome["decision_bytes"] = sum(f.stat().st_size for f in files if f.suffix == ".jsonl")
        outcome["decisions"] = sum(
            stats.get(f"robotstxt/evidence/{verdict}", 0) for verdict in ("allowed", "forbidden")
        )
        shutil.rmtree(evidence)
    print(json.dumps(outcome), flush=True)


def crawl_process(
    variant: str, work: Path, *flags: str, under: tuple[str, ...] = (), timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run this file's ``crawl`` mode for ``variant`` in a fresh process (``under`` a tool)."""
    command = [*under, sys.executable, __file__, "crawl", variant, str(work), *flags]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 or not done.stdout.strip():
        sys.exit(f"{variant} crawl failed:\n{done.stderr[-3000:]}")
    return done


def run_crawl(variant: str, work: Path, profile: bool = False) -> dict[str, Any]:
    done = crawl_process(variant, work, *(["--profile"] if profile else []))
    if profile:
        print(done.stderr)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


INSTRUCTIONS = re.compile(r"I\s+refs:\s+([\d,]+)")
CACHEGRIND = ("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null")


def count_crawl(variant: str, work: Path, setup_only: bool = False) -> tuple[int, int]:
    """The instructions one crawl of ``variant`` executes (counted by cachegrind), and
    the pages it crawled."""
    flags = ["--setup-only"] if setup_only else []
    done = crawl_process(variant, work, *flags, under=CACHEGRIND, timeout=3600)
    found = INSTRUCTIONS.search(done.stderr)
    if found is None:
        sys.exit(f"{variant} crawl under valgrind printed no count:\n{done.stderr[-3000:]}")
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    return int(found.group(1).replace(",", "")), outcome.get("crawled", 0)


def count(name: str, rounds: int, variants: tuple[str, ...]) -> dict[str, float]:
    """``--instructions``: each variant's crawl instructions, ``rounds`` times, two at a time;
    returns the ratios of their means (``ours/stock``, ``ours/none``, ...)."""
    from concurrent.futures import ThreadPoolExecutor

    origins, pages = WORKLOADS[name]
    with served(name) as (work, _):
        jobs = [variant for _ in range(rounds) for variant in variants]
        with ThreadPoolExecutor(max_workers=2) as pool:
            setup_run = pool.submit(count_crawl, "none", work, True)
            counted = list(pool.map(lambda variant: count_crawl(variant, work), jobs))
            setup = setup_run.result()[0]
    crawls: dict[str, list[int]] = {v: [] for v in variants}
    crawled: dict[str, int] = {}
    for variant, (instructions, pages_crawled) in zip(jobs, counted, strict=True):
        crawls[variant].append(instructions - setup)
        crawled[variant] = pages_crawled
    print(f"\n{name}: {origins} origins x {pages} pages, instructions of the crawl (valgrind)")
    print(f"  setup (imports, settings; taken off)  {setup / 1e9:.3f} G")
    for variant, values in crawls.items():
        shown = ", ".join(f"{value / 1e9:.3f}" for value in values)
        print(f"  {variant:<12} {shown} G   crawled {crawled[variant]}")
    mean = {v: statistics.mean(values) for v, values in crawls.items()}
    figures = {"ours/none": mean["ours"] / mean["none"]}
    print(f"  ours/none  {figures['ours/none']:.4f}")
    for variant in variants:
        if variant != "stock":
            figures[f"{variant}/stock"] = mean[variant] / mean["stock"]
            print(f"  {variant}/stock  {figures[f'{variant}/stock']:.4f}")
    if "robots-only" in mean:
        figures["ours/robots-only"] = mean["ours"] / mean["robots-only"]
        print(f"  ours/robots-only  {figures['ours/robots-only']:.4f}")
    return figures


# -- workloads and the table ------------------------------------------------------


def workload(files: list[str], ports: list[int], pages: int) -> list[str]:
    """``pages`` URLs per origin, paths from its own rules and generic ones, interleaved."""
    per_origin: list[list[str]] = []
    for index, (name, port) in enumerate(zip(files, ports, strict=True)):
        rules = [r.decode("utf-8", "replace") for r in RULE.findall((CORPUS / name).read_bytes())]
        paths: list[str] = []
        for n in range(pages):
            if rules and n % 4 == 0:
                path = rules[(index + n) % len(rules)].replace("*", "x").rstrip("$") or "/"
            else:
                path = GENERIC[(index + n) % len(GENERIC)]
            sep = "&" if "?" in path else "?"
            paths.append(f"{path}{sep}n={n}")  # no URL twice (the duplicate filter)
        per_origin.append([f"http://127.0.0.1:{port}{path}" for path in paths])
    # Round-robin over origins, as a crawl discovering links would interleave them.
    return [urls[n] for n in range(pages) for urls in per_origin]


@contextlib.contextmanager
def served(name: str) -> Iterator[tuple[Path, list[str]]]:
    """Workload ``name`` served for the crawl processes: its URL file, and its URLs."""
    origins, pages = WORKLOADS[name]
    corpus = sorted(path.name for path in CORPUS.iterdir() if path.is_file())
    files = [corpus[(i * 7) % len(corpus)] for i in range(origins)]
    server = Server(files)
    try:
        urls = workload(files, server.ports, pages)
        with tempfile.TemporaryDirectory() as folder:
            work = Path(folder) / "urls.json"
            work.write_text(json.dumps(urls))
            yield work, urls
    finally:
        server.close()


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def round_orders(count: int) -> list[list[int]]:
    """A Williams design for ``count`` variants: the orders of one cycle of rounds.

    Row 0 is 0, 1, n-1, 2, n-2, ...; row i adds i (mod n). With an even ``count``
    the n rows put each variant right after every other exactly once; with an odd
    one the rows and their mirror images (2n rounds) do.
    """
    first = [0]
    low, high = 1, count - 1
    while len(first) < count:
        first.append(low)
        low += 1
        if len(first) < count:
            first.append(high)
            high -= 1
    rows = [[(v + shift) % count for v in first] for shift in range(count)]
    if count % 2:
        rows += [row[::-1] for row in rows]
    return rows


def measure(name: str, rounds: int, variants: tuple[str, ...] = VARIANTS) -> dict[str, float]:
    origins, pages = WORKLOADS[name]
    with served(name) as (work, urls):
        cpu: dict[str, list[float]] = {v: [] for v in variants}
        counts: dict[str, Any] = {}
        for variant in variants:  # one untimed warm-up each (file caches, bytecode)
            run_crawl(variant, work)
        orders = round_orders(len(variants))
        for number in range(rounds):
            for variant in (variants[v] for v in orders[number % len(orders)]):
                result = run_crawl(variant, work)
                cpu[variant].append(result["cpu"])
                counts[variant] = result
    ours_stock = [o / s for o, s in zip(cpu["ours"], cpu["stock"], strict=True)]
    ours_none = [o / n for o, n in zip(cpu["ours"], cpu["none"], strict=True)]
    stock_none = [s / n for s, n in zip(cpu["stock"], cpu["none"], strict=True)]
    print(f"\n{name}: {origins} origins x {pages} pages = {len(urls)} requests, {rounds} rounds")
    for variant in variants:
        result = counts[variant]
        print(
            f"  {variant:<6} CPU {spread(cpu[variant])} s   crawled {result.get('crawled', 0)}, "
            f"robots.txt fetched {result['robots']}, forbidden {result['forbidden']}, "
            f"scheduler passes {result['enqueued']}"
            + (f" ({result['handed_back']} handed back)" if variant.startswith("ours") else "")
            + (
                f", tdmrep.json fetched {result['tdmrep']}, TDM refused {result['tdm_forbidden']}"
                if variant == "ours+tdm"
                else ""
            )
        )
    figures = {
        "ours/stock": statistics.median(ours_stock),
        "ours/none": statistics.median(ours_none),
    }
    print(f"  ours/stock  {spread(ours_stock)}")
    print(f"  ours/none   {spread(ours_none)}")
    print(f"  stock/none  {spread(stock_none)}")
    if "robots-only" in variants:
        pair = [o / r for o, r in zip(cpu["ours"], cpu["robots-only"], strict=True)]
        print(f"  ours/robots-only  {spread(pair)}  (the page directives' spider middleware)")
        figures["ours/robots-only"] = statistics.median(pair)
    if "stock-again" in variants:
        pair = [a / s for a, s in zip(cpu["stock-again"], cpu["stock"], strict=True)]
        print(f"  stock-again/stock  {spread(pair)}  (A/A: the benchmark's own noise)")
        figures["stock-again/stock"] = statistics.median(pair)
    if "ours+tdm" in variants:
        tdm_ours = [t / o for t, o in zip(cpu["ours+tdm"], cpu["ours"], strict=True)]
        print(f"  ours+tdm/ours {spread(tdm_ours)}")
        figures["ours+tdm/ours"] = statistics.median(tdm_ours)
    if "ours+evidence" in variants:
        on = cpu["ours+evidence"]
        pair = [e / t for e, t in zip(on, cpu["ours+tdm"], strict=True)]
        extra = [e - t for e, t in zip(on, cpu["ours+tdm"], strict=True)]
        result = counts["ours+evidence"]
        print(
            f"  ours+evidence/ours+tdm {spread(pair)}; extra CPU {spread(extra)} s; "
            f"{result['decisions']} decision records, {result['decision_bytes']} bytes; "
            f"WARC {result['warc_bytes']} bytes"
        )
        figures["ours+evidence/ours+tdm"] = statistics.median(pair)
        figures["extra_cpu"] = statistics.median(extra)
        figures["origins"], figures["pages"] = origins, len(urls)
        figures["warc_bytes"] = result["warc_bytes"]
        figures["decision_bytes"] = result["decision_bytes"]
    return figures


def evidence_costs(results: dict[str, dict[str, float]]) -> None:
    """The extra CPU per page and per origin (two workloads, two unknowns); bytes per 1,000."""
    runs = [figures for figures in results.values() if "extra_cpu" in figures]
    for figures in runs:
        print(
            f"  {int(figures['origins'])} origins: WARC "
            f"{figures['warc_bytes'] / figures['origins'] * 1000 / 1e6:.2f} MB per 1,000 origins; "
            f"decision records {figures['decision_bytes'] / figures['pages'] * 1000 / 1e6:.2f} MB "
            "per 1,000 pages"
        )
    if len(runs) != 2:
        return
    (p1, o1, e1), (p2, o2, e2) = ((f["pages"], f["origins"], f["extra_cpu"]) for f in runs)
    det = p1 * o2 - p2 * o1
    per_page = (e1 * o2 - e2 * o1) / det
    per_origin = (p1 * e2 - p2 * e1) / det
    print(
        f"  evidence CPU: {per_page * 1e6:.0f} us per page (its decision record), "
        f"{per_origin * 1e3:.2f} ms per origin (its policy files as WARC)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--profile", choices=ALL_VARIANTS)
    parser.add_argument(
        "--page-pair",
        action="store_true",
        help="also crawl with ours minus the page directives' spider middleware (robots-only)",
    )
    parser.add_argument(
        "--aa",
        action="store_true",
        help="also crawl with stock a second time per round (stock-again/stock: the noise)",
    )
    parser.add_argument(
        "--tdmrep", action="store_true", help="add the ours+tdm variant (ROBOTSTXT_USAGE train-ai)"
    )
    parser.add_argument(
        "--evidence",
        action="store_true",
        help="add ours+tdm and ours+evidence (ROBOTSTXT_EVIDENCE): CPU and bytes of the evidence",
    )
    parser.add_argument(
        "--instructions",
        type=int,
        metavar="N",
        help="count each variant's crawl instructions N times under valgrind instead of timing",
    )
    args = parser.parse_args(argv)
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}: nothing to measure")
        return 0
    if args.profile:
        with served((args.workload or ["dense"])[0]) as (work, _):
            print(run_crawl(args.profile, work, profile=True))
        return 0
    started = time.monotonic()
    variants = VARIANTS + (("robots-only",) if args.page_pair else ())
    variants += ("stock-again",) if args.aa else ()
    variants += ("ours+tdm",) if args.tdmrep or args.evidence else ()
    variants += ("ours+evidence",) if args.evidence else ()
    if args.instructions:
        if shutil.which("valgrind") is None:
            print("--instructions needs valgrind (Debian: apt install valgrind)")
            return 2
        names = args.workload or ["dense"]
        results = {name: count(name, args.instructions, variants) for name in names}
    else:
        names = args.workload or list(WORKLOADS)
        results = {name: measure(name, args.rounds, variants) for name in names}
        if args.evidence:
            evidence_costs(results)
    print(f"\n({time.monotonic() - started:.0f} s)")
    return check(results) if args.check else 0


def check(results: dict[str, dict[str, float]]) -> int:
    """``--check``: 1 unless ours/stock <= 1.00 on every workload measured and
    ours/none <= 1.08 on the dense one (CPU medians, or instruction counts)."""
    failed = [
        f"{name} {ratio} {value:.3f} > {limit}"
        for name, figures in results.items()
        for ratio, limit in (("ours/stock", 1.00), ("ours/none", 1.08))
        if (ratio == "ours/stock" or name == "dense") and (value := figures[ratio]) > limit
    ]
    for line in failed:
        print(f"CHECK FAILED: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(json.loads(sys.argv[2]))
    elif len(sys.argv) > 1 and sys.argv[1] == "crawl":
        crawl(
            sys.argv[2],
            sys.argv[3],
            profile="--profile" in sys.argv[4:],
            setup_only="--setup-only" in sys.argv[4:],
        )
    else:
        sys.exit(main())
