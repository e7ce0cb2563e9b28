"""Warm-cache cost of ``process_request`` and memory per cached origin: ours vs Scrapy's stock.

Both middlewares get the same 10,000 origins (robots.txt bodies cycled from
``../shared/corpus/robotstxt``, one fresh copy of the body per origin, as a
crawl would download them) and the same request mix (two requests per origin:
one path taken from the origin's own rules, one generic path), in one process.

- Stock: ``scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware`` with
  its default parser (Protego); warmed the way it warms itself, by storing a
  parsed ``ProtegoRobotParser`` per netloc in its ``_parsers`` dict.
- Ours: ``GoogleRobotsTxtMiddleware``; warmed through its policy store, the
  documented seam (``PolicyStore.put`` of a RULES record, what a fetch
  stores), then one untimed pass so any per-origin memo fills as it would
  in a crawl.

Per-request time is the best of ``--repeat`` passes over the whole mix
(``process_request`` called and, when it returns a coroutine or Deferred,
driven to its result; a disallowed request's IgnoreRequest is part of the
cost). Ours also has a ``request_scheduled`` handler (to park requests of
origins without a usable robots.txt before the scheduler), connected only
while some origin's robots.txt is pending; what it adds per request warm
(nothing pending: it should add nothing) and while connected is printed too,
and the total beside stock's ``process_request``. Memory is what tracemalloc
sees retained after warming 10,000 origins and one pass of requests over them
(so per-origin and per-agent memos count), bodies included for whichever side
keeps them.

Ours also has a ``process_response`` (AI usage preferences: the
``Content-Usage`` header); what it costs per response is printed, for
responses without that header of origins without usage rules (nearly all of
today's web).

``--usage-rules`` (issue 20) measures a crawl that declares an AI use
(``ROBOTSTXT_USAGE = ["search"]``) where every origin's robots.txt states
preferences: each body starts with Cloudflare's managed block
(``User-agent: *`` / ``Content-Signal: search=yes, ai-train=no`` / ``Allow: /``),
so every request our side allows also pays the usage lookup (none is refused:
search is allowed). Stock, which ignores these lines, gets the same bodies.

Run from the repository root: ``python benchmarks/bench_middleware.py``.
``--check`` exits 1 unless ours costs <= 0.5x stock per request and holds no
more memory; ``--profile`` prints where our hot path spends its time.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import inspect
import pstats
import re
import sys
import time
import timeit
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.robotstxt import ProtegoRobotParser
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from scrapy_googlerobots import GoogleRobotsTxtMiddleware
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import origin_of
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.policy.useragent import crawler_token
from scrapy_googlerobots.robotstxt import parse
from scrapy_googlerobots.stores.base import PolicyStore

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "robotstxt"
USER_AGENT = "FooBot/1.0 (+https://foo.example/bot)"
GENERIC_PATHS = (
    "/",
    "/index.html",
    "/search?q=robots&page=2",
    "/products/item-12345.html",
    "/wp-admin/admin-ajax.php",
    "/user/login?destination=/node/1",
)
# Cloudflare's managed robots.txt block (contentsignals.org), for --usage-rules.
USAGE_BLOCK = b"User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n\n"
_RULE = re.compile(rb"^[ \t]*(?:dis)?allow[ \t]*:[ \t]*(/[^\s#]*)", re.IGNORECASE | re.MULTILINE)


class BenchSpider(Spider):
    name = "bench"


# --------------------------------------------------------------------------
# Inputs


def load_corpus(directory: Path) -> list[tuple[str, bytes]]:
    files = sorted(path for path in directory.iterdir() if path.is_file())
    return [(path.name, path.read_bytes()) for path in files]


def build_origins(corpus: Sequence[tuple[str, bytes]], count: int) -> list[tuple[str, bytes]]:
    """``count`` (base URL, body) pairs, cycling the corpus; hosts are made unique."""
    origins = []
    for index in range(count):
        host, body = corpus[index % len(corpus)]
        cycle = index // len(corpus)
        if cycle:
            host = f"m{cycle}.{host}"
        origins.append((f"https://{host}", body))
    return origins


def build_requests(origins: Sequence[tuple[str, bytes]]) -> list[Request]:
    """Two requests per origin: a path from its own rules (if any), and a generic one."""
    requests = []
    for index, (base, body) in enumerate(origins):
        rules = _RULE.findall(body)
        if rules:
            path = rules[index % len(rules)].decode("utf-8", "replace")
            path = path.replace("*", "x").rstrip("$") or "/"
        else:
            path = GENERIC_PATHS[index % len(GENERIC_PATHS)]
        requests.append(Request(base + path))
        requests.append(Request(base + GENERIC_PATHS[(index + 3) % len(GENERIC_PATHS)]))
    return requests


def new_crawler(robots_agent: str | None, usage: Sequence[str] = ()) -> Any:
    settings = {
        "ROBOTSTXT_OBEY": True,
        "USER_AGENT": USER_AGENT,
        "ROBOTSTXT_USER_AGENT": robots_agent,
        "ROBOTSTXT_USAGE": list(usage),
        "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False,
    }
    crawler = get_crawler(BenchSpider, settings)
    if getattr(crawler, "spider", None) is None:
        crawler.spider = crawler._create_spider()
    return crawler


# --------------------------------------------------------------------------
# Warming


def warm_stock(crawler: Any, origins: Sequence[tuple[str, bytes]]) -> RobotsTxtMiddleware:
    middleware = RobotsTxtMiddleware.from_crawler(crawler)
    for base, body in origins:
        netloc = base.split("://", 1)[1]
        middleware._parsers[netloc] = ProtegoRobotParser.from_crawler(crawler, bytes(body))
    return middleware


def find_store(middleware: Any) -> PolicyStore:
    for name in ("store", "_store"):
        store = getattr(middleware, name, None)
        if isinstance(store, PolicyStore):
            return store
    for value in vars(middleware).values():
        if isinstance(value, PolicyStore):
            return value
    raise SystemExit("cannot find the middleware's PolicyStore to warm it")


def find_clock(middleware: Any) -> Callable[[], float]:
    for name in ("clock", "_clock"):
        clock = getattr(middleware, name, None)
        if callable(clock):
            return clock  # type: ignore[no-any-return]
    return time.time


def warm_ours(crawler: Any, origins: Sequence[tuple[str, bytes]]) -> Any:
    middleware = GoogleRobotsTxtMiddleware.from_crawler(crawler)
    store = find_store(middleware)
    now = find_clock(middleware)()
    for base, body in origins:
        origin = origin_of(base + "/")
        assert origin is not None
        copy = bytes(body)  # a fresh object per origin, as a download would be
        store.put(
            PolicyRecord(
                origin=origin.key,
                outcome=FetchOutcome.RULES,
                body=copy,
                status=200,
                fetched_at=now,
                expires_at=now + 10 * 86_400,
                rules=parse(copy, max_size=512_000),
            )
        )
    return middleware


# --------------------------------------------------------------------------
# Measuring


def caller(middleware: Any, spider: Spider) -> Callable[[Request], bool]:
    """A function running ``process_request`` to completion; True when allowed."""
    method = middleware.process_request
    wants_spider = any(
        parameter.name == "spider" and parameter.default is inspect.Parameter.empty
        for parameter in inspect.signature(method).parameters.values()
    )

    def call(request: Request) -> bool:
        try:
            result = method(request, spider) if wants_spider else method(request)
            if inspect.iscoroutine(result):
                try:
                    result.send(None)
                except StopIteration:
                    return True
                result.close()
                raise RuntimeError(f"cache not warm: {request} had to wait")
            if isinstance(result, Deferred):
                outcome: list[Any] = []
                result.addBoth(outcome.append)
                if not outcome:
                    raise RuntimeError(f"cache not warm: {request} had to wait")
                if hasattr(outcome[0], "raiseException"):
                    outcome[0].raiseException()
            return True
        except IgnoreRequest:
            return False

    return call


def time_per_request(
    calls: Sequence[Callable[[Request], bool]], requests: Sequence[Request], repeat: int
) -> list[tuple[float, int]]:
    """Per caller: best per-request nanoseconds over ``repeat`` passes, and how many allowed.

    Passes alternate between callers, so load changes on the machine hit both alike.
    """
    allowed = [sum(call(request) for request in requests) for call in calls]  # warm-up
    best = [float("inf")] * len(calls)
    for _ in range(repeat):
        for index, call in enumerate(calls):
            started = time.perf_counter_ns()
            for request in requests:
                call(request)
            elapsed = (time.perf_counter_ns() - started) / len(requests)
            best[index] = min(best[index], elapsed)
    return list(zip(best, allowed, strict=True))


def response_ns(middleware: Any, requests: Sequence[Request], repeat: int) -> float:
    """Best per-response nanoseconds of our ``process_response`` (after each request's
    ``process_request``), for plain responses: no ``Content-Usage`` header."""
    call = caller(middleware, middleware.crawler.spider)
    allowed = [request for request in requests if call(request)]
    pairs = [
        (request, Response(request.url, headers={"Content-Type": "text/html"}, request=request))
        for request in allowed
    ]
    process_response = middleware.process_response
    best = float("inf")
    for _ in range(repeat):
        for request in allowed:  # what process_request leaves for the response
            call(request)
        started = time.perf_counter_ns()
        for request, response in pairs:
            process_response(request, response)
        best = min(best, (time.perf_counter_ns() - started) / max(len(pairs), 1))
    return best


def scheduled_handler_ns(
    crawler: Any, ours: Any, requests: Sequence[Request], repeat: int
) -> tuple[float, float]:
    """What our ``request_scheduled`` handler adds to each request, warm, as
    (nothing pending, an origin pending): the engine sends the signal for every
    request anyway, so this is the signal as the middleware leaves it minus the
    same with no handler of ours. Warm, nothing is pending, so the handler
    should not be connected at all; while some origin's robots.txt is pending
    (most of a broad crawl) it is."""
    send = crawler.signals.send_catch_log
    spider = crawler.spider

    def per_request() -> float:
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter_ns()
            for request in requests:
                send(signals.request_scheduled, request=request, spider=spider)
            best = min(best, (time.perf_counter_ns() - started) / len(requests))
        return best

    as_left = per_request()
    # As the middleware connects it while an origin is pending (its own switch).
    ours._parking.listen()
    pending = per_request()
    ours._parking.unlisten()
    without = per_request()
    return max(as_left - without, 0.0), max(pending - without, 0.0)


def retained_bytes(build: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes still allocated (tracemalloc) after ``build()``, and what it built."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    built = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return after - before, built


def profile(call: Callable[[Request], bool], requests: Sequence[Request], top: int) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for request in requests:
        call(request)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(top)


def breakdown(middleware: Any, requests: Sequence[Request], robots_agent: str | None) -> None:
    """Best-of timings of the pieces our warm hot path is made of, per request."""
    store = find_store(middleware)
    urls = [request.url for request in requests]
    keys = []
    for url in urls:
        origin = origin_of(url)
        assert origin is not None
        keys.append(origin.key)
    records = [store.get(key) for key in keys]
    canonical = [canonicalize_url(url) for url in urls]
    token = crawler_token(robots_agent or USER_AGENT)
    pairs = [(record.rules, url) for record, url in zip(records, canonical, strict=True) if record]
    forbidden = [
        r
        for r, (rules, url) in zip(requests, pairs, strict=True)
        if rules and not rules.allowed(url, token)
    ]

    def cost(work: Callable[[], object], count: int = len(requests)) -> float:
        return min(timeit.repeat(work, number=3, repeat=7)) / 3 / count * 1e9

    def forbid() -> None:
        for request in forbidden:
            try:
                raise middleware._forbidden(request)
            except IgnoreRequest:
                pass

    rows = [
        (
            "origin_of(url).key (memoised by the middleware)",
            cost(lambda: [origin_of(u).key for u in urls]),
        ),
        ("store.get(key)", cost(lambda: [store.get(key) for key in keys])),
        ("canonicalize_url(url)", cost(lambda: [canonicalize_url(u) for u in urls])),
        (
            "request.headers.get(b'User-Agent')",
            cost(lambda: [r.headers.get(b"User-Agent") for r in requests]),
        ),
        (
            "RobotsTxt.allowed(url, token)",
            cost(lambda: [rules.allowed(u, token) for rules, u in pairs]),
        ),
    ]
    if forbidden and hasattr(middleware, "_forbidden"):
        per_forbidden = cost(forbid, len(forbidden))
        share = len(forbidden) / len(requests)
        rows.append((f"forbidden: log+stat+raise ({share:.0%} of requests)", per_forbidden * share))
    print("\nour hot path, piece by piece (ns per request, best of 7):")
    for name, value in rows:
        print(f"  {name:52}{value:>8.0f}")


# --------------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--robots-agent",
        metavar="NAME",
        help="set ROBOTSTXT_USER_AGENT (default: unset, the agent comes from USER_AGENT)",
    )
    parser.add_argument(
        "--usage-rules",
        action="store_true",
        help="every robots.txt states AI usage preferences and the crawl declares a use",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when acceptance fails")
    parser.add_argument("--profile", action="store_true", help="profile our hot path")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"corpus not found at {args.corpus}; nothing to measure")
        return 0
    warnings.simplefilter("ignore")

    corpus = load_corpus(args.corpus)
    origins = build_origins(corpus, args.origins)
    requests = build_requests(origins)
    usage: tuple[str, ...] = ()
    if args.usage_rules:
        origins = [(base, USAGE_BLOCK + body) for base, body in origins]
        usage = ("search",)
    print(f"{len(origins)} origins from {len(corpus)} corpus files, {len(requests)} requests")
    if usage:
        print("usage rules in every robots.txt; ROBOTSTXT_USAGE = ['search']")

    crawler = new_crawler(args.robots_agent, usage)
    spider = crawler.spider

    def warmed(build: Callable[[Any, Sequence[tuple[str, bytes]]], Any]) -> Any:
        # One untimed pass over a request mix of its own, so whatever either
        # side memoises per origin or per agent is counted; the requests are
        # dropped again, so per-request caches are not.
        middleware = build(crawler, origins)
        call = caller(middleware, spider)
        for request in build_requests(origins):
            call(request)
        return middleware

    stock_memory, stock = retained_bytes(lambda: warmed(warm_stock))
    ours_memory, ours = retained_bytes(lambda: warmed(warm_ours))

    stock_call, ours_call = caller(stock, spider), caller(ours, spider)
    (stock_ns, stock_allowed), (ours_ns, ours_allowed) = time_per_request(
        [stock_call, ours_call], requests, args.repeat
    )

    time_ratio = ours_ns / stock_ns
    memory_ratio = ours_memory / stock_memory
    handler_ns, pending_ns = scheduled_handler_ns(crawler, ours, requests, args.repeat)
    per_response_ns = response_ns(ours, requests, args.repeat)
    per_origin = len(origins) * 1024
    rows = [
        ("", "stock (Protego)", "ours", "ours/stock"),
        (
            "process_request, warm",
            f"{stock_ns / 1000:.2f} us",
            f"{ours_ns / 1000:.2f} us",
            f"{time_ratio:.2f}",
        ),
        (
            f"memory, {len(origins)} origins",
            f"{stock_memory / 2**20:.1f} MB",
            f"{ours_memory / 2**20:.1f} MB",
            f"{memory_ratio:.2f}",
        ),
        (
            "  per origin",
            f"{stock_memory / per_origin:.1f} KB",
            f"{ours_memory / per_origin:.1f} KB",
        ),
        (
            "+ request_scheduled handler",
            "(none)",
            f"{handler_ns / 1000:.2f} us",
        ),
        (
            "  (while a fetch is pending)",
            "(none)",
            f"{pending_ns / 1000:.2f} us",
        ),
        (
            "+ process_response",
            "(none)",
            f"{per_response_ns / 1000:.2f} us",
        ),
        (
            "per request, all handlers",
            f"{stock_ns / 1000:.2f} us",
            f"{(ours_ns + handler_ns + per_response_ns) / 1000:.2f} us",
            f"{(ours_ns + handler_ns + per_response_ns) / stock_ns:.2f}",
        ),
        ("requests allowed", str(stock_allowed), str(ours_allowed)),
    ]
    print()
    for row in rows:
        print(f"{row[0]:28}" + "".join(f"{cell:>16}" for cell in row[1:]))
    time_ok, memory_ok = time_ratio <= 0.5, memory_ratio <= 1.0
    print()
    print(f"per-request <= 0.5x stock: {_verdict(time_ok)} ({time_ratio:.2f}x)")
    print(f"memory <= stock:           {_verdict(memory_ok)} ({memory_ratio:.2f}x)")

    if args.profile:
        breakdown(ours, requests, args.robots_agent)
        print("\nour hot path, by own time (cProfile):")
        profile(ours_call, requests, 20)
    return 0 if (time_ok and memory_ok) or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
