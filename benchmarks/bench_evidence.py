"""What ``ROBOTSTXT_EVIDENCE`` costs (issue 34), in one process, per request, page and origin.

The middleware of bench_middleware.py, warmed with the same origins (robots.txt
bodies from ``../shared/corpus/robotstxt``) and request mix, built twice: evidence
off (the setting unset) and on (a fresh directory), with ``ROBOTSTXT_USAGE =
["train-ai"]`` and every origin's ``tdmrep.json`` known (a reserving rule for a
third of them, as bench_crawl serves them), so each decision names both files.

- per request: warm ``process_request`` off and on (best of ``--repeat`` passes,
  alternating); on, each refused request writes its decision record;
- per page: ``process_response`` of an allowed request's HTML response (the page
  bench_crawl serves), off and on: on, the ``allowed`` record;
- per origin: one robots.txt fetch (200, its corpus body, a redirect hop for every
  tenth origin) and one ``tdmrep.json`` fetch handed to the evidence as a crawl's
  fetch hands them (``EvidenceTrail.fetched``): CPU, and WARC bytes per 1,000
  origins; decision records' bytes per 1,000 pages.

CPU is ``time.process_time`` (the evidence's own ``write`` calls included; no
``fsync``: that runs on a schedule, off the reactor). The ratio printed for
``process_request`` is on/off; off is the middleware's own unwrapped method.

Run from the repository root: ``python benchmarks/bench_evidence.py`` (``--origins N``,
``--repeat N``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse, Response

from scrapy_googlerobots.fetching.fetcher import FetchResult
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import origin_of
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.policy.tdm import tdm_store_key

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_middleware import (
    CORPUS,
    build_origins,
    build_requests,
    caller,
    find_store,
    load_corpus,
    new_crawler,
    warm_ours,
)

PAGE = b"<!doctype html><title>page</title>" + b"<p>Lorem ipsum dolor sit amet.</p>" * 40
TDMREP = (
    b'[{"location": "/blog/*", "tdm-reservation": 1, "tdm-policy": "https://x.example/p"},'
    b' {"location": "/", "tdm-reservation": 0}]'
)


def build(origins: Sequence[tuple[str, bytes]], evidence: Path | None) -> Any:
    crawler = new_crawler(None, ("train-ai",))
    if evidence is not None:
        crawler.settings.frozen = False
        crawler.settings.set("ROBOTSTXT_EVIDENCE", str(evidence))
    middleware = warm_ours(crawler, origins)
    store = find_store(middleware)
    now = time.time()
    for index, (base, _) in enumerate(origins):
        origin = origin_of(base + "/")
        assert origin is not None
        store.put(
            PolicyRecord(
                origin=tdm_store_key(origin.key),
                outcome=FetchOutcome.RULES if index % 3 else FetchOutcome.ALLOW_ALL,
                body=TDMREP if index % 3 else None,
                status=200 if index % 3 else 404,
                fetched_at=now,
                expires_at=now + 10 * 86_400,
            )
        )
    return middleware


def cpu_per_call(work: Callable[[], object], count: int, repeat: int) -> float:
    """Best CPU microseconds per call of ``count`` calls, over ``repeat`` passes."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        work()
        best = min(best, (time.process_time() - started) / count)
    return best * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}: nothing to measure")
        return 0
    origins = build_origins(load_corpus(CORPUS), args.origins)
    requests = build_requests(origins)
    folder = Path(tempfile.mkdtemp(prefix="bench-evidence-"))
    try:
        off = build(origins, None)
        on = build(origins, folder / "requests")
        assert off._parts.evidence is None and on._parts.evidence is not None
        spider = off.crawler.spider
        call_off, call_on = caller(off, spider), caller(on, spider)

        def run(call: Callable[[Request], bool]) -> Callable[[], object]:
            return lambda: [call(request) for request in requests]

        allowed = [request for request in requests if call_off(request)]
        for call in (call_off, call_on):  # warm-up
            run(call)()
        best_off = best_on = float("inf")
        for _ in range(args.repeat):
            best_off = min(best_off, cpu_per_call(run(call_off), len(requests), 1))
            best_on = min(best_on, cpu_per_call(run(call_on), len(requests), 1))
        refused = len(requests) - len(allowed)
        print(
            f"{len(origins)} origins, {len(requests)} requests ({refused} refused: "
            f"{refused / len(requests):.0%}), ROBOTSTXT_USAGE = ['train-ai']"
        )
        print(
            f"  process_request warm   off {best_off:.2f} us   on {best_on:.2f} us   "
            f"on/off {best_on / best_off:.2f}  (on: a record per refused request)"
        )

        pairs = [
            (r, HtmlResponse(r.url, body=PAGE, headers={"Content-Type": "text/html"}, request=r))
            for r in allowed
        ]

        def respond(middleware: Any, call: Callable[[Request], bool]) -> Callable[[], object]:
            def work() -> None:
                for request, response in pairs:
                    call(request)
                    # A response refused (none here: plain pages) would raise.
                    middleware.process_response(request, response)

            return work

        page_off = cpu_per_call(respond(off, call_off), len(pairs), args.repeat)
        page_on = cpu_per_call(respond(on, call_on), len(pairs), args.repeat)
        print(
            f"  request+response of an allowed page   off {page_off:.1f} us   on {page_on:.1f} us"
            f"   evidence {page_on - page_off:.1f} us per page (its allowed record)"
        )

        # Per origin: a fetch of each file handed over as the crawl hands it.
        trail = on._parts.evidence
        fetches = []
        for index, (base, body) in enumerate(origins):
            origin = origin_of(base + "/")
            assert origin is not None
            robots_url = origin.robots_url
            request = Request(
                robots_url, headers={"User-Agent": "FooBot/1.0", "Accept-Encoding": "gzip, deflate"}
            )
            response = Response(
                robots_url,
                status=200,
                body=body,
                headers={"Content-Type": "text/plain"},
                request=request,
            )
            hops = []
            if index % 10 == 0:
                hop = Response(
                    robots_url, status=301, headers={"Location": robots_url}, request=request
                )
                hops.append(hop)
            robots = FetchResult(
                FetchOutcome.RULES,
                "HTTP 200",
                body=body,
                response=response,
                hops=hops,
                request=request,
            )
            tdm_url = robots_url[: -len("/robots.txt")] + "/.well-known/tdmrep.json"
            tdm_request = Request(tdm_url, headers={"User-Agent": "FooBot/1.0"})
            tdm_response = Response(tdm_url, status=200, body=TDMREP, request=tdm_request)
            tdm = FetchResult(
                FetchOutcome.RULES,
                "HTTP 200",
                body=TDMREP,
                response=tdm_response,
                request=tdm_request,
            )
            now = time.time()
            fetches.append((origin.key, robots, tdm, now))

        def fetch_all() -> None:
            for key, robots, tdm, now in fetches:
                record = PolicyRecord(key, FetchOutcome.RULES, robots.body, 200, now, now + 1)
                trail.fetched("robots.txt", key, robots, record)
                trail.fetched("tdmrep.json", tdm_store_key(key), tdm, record)

        warc_before = trail.recorder.warc.file.bytes
        per_origin = cpu_per_call(fetch_all, len(fetches), 1)
        warc_bytes = trail.recorder.warc.file.bytes - warc_before
        decisions = trail.recorder.decisions.file
        print(
            f"  per origin (robots.txt + tdmrep.json as WARC)   {per_origin:.0f} us CPU, "
            f"{warc_bytes / len(fetches) * 1000 / 1e6:.2f} MB per 1,000 origins "
            f"(corpus bodies, mean {sum(len(b) for _, b in origins) / len(origins) / 1e3:.1f} kB)"
        )
        print(
            f"  decision records: {decisions.records} written, "
            f"{decisions.bytes / decisions.records:.0f} bytes each "
            f"({decisions.bytes / decisions.records * 1000 / 1e6:.2f} MB per 1,000 pages)"
        )
        trail.close()
        print(json.dumps({"request_off_us": best_off, "request_on_us": best_on}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
