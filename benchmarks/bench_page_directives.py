"""What the page directives' spider middleware costs per response, by kind of page.

``PageDirectivesMiddleware`` (issue 26) runs ``process_spider_input`` once per
response and sees every object its callback yields. This script times both for
fresh responses (a response's directives are read once and remembered for that
response object, so each timed response is new) against no middleware at all
(the outputs iterated as Scrapy would without it), and, for scale, against
Scrapy's own ``DepthMiddleware``, which every crawl runs. Each response's
callback yields ``--outputs`` requests and one item (a CrawlSpider page).

Pages (each an ``HtmlResponse`` unless said otherwise):

- ``binary, no header``: a non-HTML response without ``X-Robots-Tag`` (images, PDFs);
- ``html, no meta``: ``bench_crawl``'s page, no ``<meta`` at all;
- ``html, other meta``: a real-world head (charset, viewport, description, Open
  Graph), no robots meta: the common case of today's web;
- ``html, robots meta``: ``<meta name="robots" content="max-image-preview:large">``
  (Google's own recommendation, widespread), nothing enforced;
- ``html, nofollow meta``: every request dropped;
- ``header noindex``: ``X-Robots-Tag: noindex`` on HTML, every item counted.

Times are the process's CPU time (``time.process_time``): on a machine shared
with other jobs, time spent descheduled is not charged.

Per response: the best of ``--repeat`` passes over ``--responses`` responses,
sync (``process_spider_output``, Scrapy < 2.13 with sync callbacks) and async
(``process_spider_output_async``, what Scrapy 2.13+ always calls).

``--scan`` (issue 33) times the reading of one page's directives alone
(:func:`~scrapy_googlerobots.pagedirectives.from_headers_and_body`: the
pre-test, then the head) on the page without meta, a WordPress (Yoast) head,
and pages whose head is 1.5, 7.5 and 15 MB (inline CSS then a robots
``noindex``: Google reads the first 15 MB), microseconds per call.

``--baseline REF`` (issue 33) adds a ``before`` column: the package as of git
``REF`` (e.g. ``main``), extracted under another name and run in the same
process, each repeat timing none / depth / before / ours in turn, so that
before and after share the machine's state.

Run from the repository root: ``python benchmarks/bench_page_directives.py``.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse, Response
from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.utils.test import get_crawler

from scrapy_googlerobots import PageDirectivesMiddleware

AGENT = "BenchBot/1.0 (+https://bench.example/bot)"
BODY = b"<p>Lorem ipsum dolor sit amet.</p>" * 40
PLAIN_HEAD = b"<!doctype html><title>page</title>"
REAL_HEAD = (
    b'<!doctype html><html lang="en"><head><meta charset="utf-8">'
    b'<meta name="viewport" content="width=device-width, initial-scale=1">'
    b'<meta name="description" content="A page about things, with a description.">'
    b'<meta property="og:title" content="Things"><meta property="og:type" content="article">'
    b'<link rel="stylesheet" href="/s.css"><script src="/app.js"></script>'
    b"<title>Things</title></head><body>"
)


def pages() -> dict[str, Callable[[Request], Response]]:
    def html(head: bytes, headers: dict[str, str] | None = None) -> Callable[[Request], Response]:
        body = head + BODY

        def make(request: Request) -> Response:
            return HtmlResponse(
                request.url,
                body=body,
                headers={"Content-Type": "text/html; charset=utf-8", **(headers or {})},
                request=request,
            )

        return make

    def binary(request: Request) -> Response:
        return Response(
            request.url,
            body=b"\x89PNG" + BODY,
            headers={"Content-Type": "image/png"},
            request=request,
        )

    robots = b'<meta name="robots" content="max-image-preview:large">'
    nofollow = b'<meta name="robots" content="nofollow">'
    return {
        "binary, no header": binary,
        "html, no meta": html(PLAIN_HEAD),
        "html, other meta": html(REAL_HEAD),
        "html, robots meta": html(REAL_HEAD.replace(b"<title>", robots + b"<title>")),
        "html, nofollow meta": html(REAL_HEAD.replace(b"<title>", nofollow + b"<title>")),
        "header noindex": html(REAL_HEAD, {"X-Robots-Tag": "noindex"}),
    }


WORDPRESS_HEAD = (
    b'<!DOCTYPE html>\n<html lang="en-US">\n<head>\n<meta charset="UTF-8">\n'
    b'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    b"<!-- This site is optimized with the Yoast SEO plugin v22.4 -->\n"
    b"<title>Hello world! - My Blog</title>\n"
    b'<meta name="robots" content="index, follow, max-image-preview:large" />\n'
    b'<link rel="canonical" href="https://example.com/hello-world/" />\n'
    + b'<meta property="og:title" content="Hello world!" />\n' * 8
    + b'<script type="application/ld+json">{"@graph":['
    + b'{"@type":"Thing"},' * 40
    + b"{}]}</script>\n"
    + b"<style id='global-styles-inline-css'>"
    + b"body{--wp--preset--color--black:#000}" * 60
    + b"</style>\n"
    + b'<link rel="stylesheet" href="/wp-includes/css/dist/block-library/style.min.css" />\n' * 12
    + b'<script>window._wpemojiSettings = {};</script>\n</head>\n<body class="post">'
)


def scan_pages() -> dict[str, bytes]:
    rule = b".c{color:red;margin:0 auto}\n"
    pages = {
        "no meta": PLAIN_HEAD + BODY,
        "wordpress head": WORDPRESS_HEAD + BODY * 20,
    }
    for megabytes in (1.5, 7.5, 15.0):
        css = rule * int(megabytes * 1_000_000 / len(rule))
        pages[f"{megabytes:g} MB head"] = (
            b"<head><style>" + css + b'</style><meta name="robots" content="noindex"></head>'
        )
    return pages


def measure_scan(args: argparse.Namespace) -> None:
    from scrapy_googlerobots.pagedirectives import from_headers_and_body

    readers: dict[str, Callable[..., Any]] = {"ours": from_headers_and_body}
    if args.baseline:
        load_baseline(args.baseline)
        readers["before"] = importlib.import_module(
            f"{BASELINE}.pagedirectives"
        ).from_headers_and_body
    print("a page's directives read as the middleware reads them (X-Robots-Tag none, the")
    print("head's robots meta): microseconds per call, best of --repeat; what each found")
    for name, body in scan_pages().items():
        calls = max(1, min(2_000, 5_000_000 // len(body)))
        best = dict.fromkeys(readers, float("inf"))
        found: dict[str, Any] = {}
        for _ in range(args.repeat):
            for kind, reader in readers.items():
                start = time.process_time()
                for _ in range(calls):
                    found[kind] = reader(None, body, AGENT, content_type_is_html=True)
                best[kind] = min(best[kind], (time.process_time() - start) / calls)
        shown = "  ".join(
            f"{kind} {best[kind] * 1e6:>9.1f} us ({(found[kind].noindex and 'noindex') or '-'})"
            for kind in readers
        )
        print(f"  {name:<16}{len(body):>11,} bytes  {shown}")


BASELINE = "scrapy_googlerobots_baseline"


def load_baseline(ref: str) -> Any:
    """The package as of git ``ref``, importable as ``scrapy_googlerobots_baseline``."""
    root = Path(__file__).resolve().parents[1]
    target = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", ref, "scrapy_googlerobots"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    package = target / BASELINE
    (target / "scrapy_googlerobots").rename(package)
    for path in package.rglob("*.py"):
        text = path.read_text("utf-8")
        path.write_text(text.replace("scrapy_googlerobots", BASELINE), "utf-8")
    sys.path.insert(0, str(target))
    return importlib.import_module(BASELINE)


def build(middleware: Any = PageDirectivesMiddleware) -> tuple[Any, DepthMiddleware]:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "USER_AGENT": AGENT})
    ours = middleware.from_crawler(crawler)
    depth = DepthMiddleware.from_crawler(crawler)
    return ours, depth


def outputs(count: int) -> list[Any]:
    return [Request(f"https://example.com/next/{n}") for n in range(count)] + [{"item": 1}]


def _drive(generator: Any) -> int:
    """Run an async generator that never suspends to its end; how many it yielded."""
    yielded = 0
    while True:
        step = generator.__anext__()
        try:
            step.send(None)
        except StopIteration:
            yielded += 1
        except StopAsyncIteration:
            return yielded


async def _source(items: Sequence[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def time_pass(
    kind: str, mw: Any, responses: Sequence[Response], out: Sequence[Any], mode: str
) -> float:
    """Seconds for one pass over ``responses`` (``kind``: none / ours / depth)."""
    start = time.process_time()
    if kind == "none":
        for _ in responses:
            if mode == "sync":
                for _ in out:
                    pass
            else:
                _drive(_source(out))
    elif mode == "sync":
        for response in responses:
            if kind == "ours":
                mw.process_spider_input(response)
            for _ in mw.process_spider_output(response, out):
                pass
    else:
        for response in responses:
            if kind == "ours":
                mw.process_spider_input(response)
            _drive(mw.process_spider_output_async(response, _source(out)))
    return time.process_time() - start


def measure(args: argparse.Namespace) -> None:
    out = outputs(args.outputs)
    # As they reach the spider: UserAgentMiddleware has set the header.
    requests = [
        Request(f"https://example.com/page/{n}", headers={"User-Agent": AGENT})
        for n in range(args.responses)
    ]
    print(
        f"{args.responses} fresh responses per pass, {args.outputs} requests + 1 item each, "
        f"best of {args.repeat}; microseconds per response\n"
    )
    baseline = load_baseline(args.baseline).PageDirectivesMiddleware if args.baseline else None
    kinds = ("none", "depth", "before", "ours") if baseline else ("none", "depth", "ours")
    header = f"{'page':<22}{'mode':<7}{'none':>8}{'depth':>8}{'ours':>8}{'+ours':>8}"
    if baseline:
        header += f"{'before':>8}{'+before':>8}"
    print(header + f"{'+ours/+depth':>14}")
    for name, make in pages().items():
        if args.page and args.page not in name:
            continue
        for mode in ("sync", "async"):
            times: dict[str, list[float]] = {kind: [] for kind in kinds}
            for _ in range(args.repeat):
                for kind in kinds:
                    ours, depth = build(baseline if kind == "before" else PageDirectivesMiddleware)
                    mw = depth if kind == "depth" else ours
                    responses = [make(request) for request in requests]
                    timed = "ours" if kind == "before" else kind
                    times[kind].append(time_pass(timed, mw, responses, out, mode))
            best = {kind: min(found) / args.responses * 1e6 for kind, found in times.items()}
            added, depth_added = best["ours"] - best["none"], best["depth"] - best["none"]
            ratio = added / depth_added if depth_added > 0 else float("nan")
            line = (
                f"{name:<22}{mode:<7}{best['none']:>8.2f}{best['depth']:>8.2f}"
                f"{best['ours']:>8.2f}{added:>8.2f}"
            )
            if baseline:
                line += f"{best['before']:>8.2f}{best['before'] - best['none']:>8.2f}"
            print(line + f"{ratio:>14.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=2_000)
    parser.add_argument("--outputs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scan", action="store_true", help="time head_meta alone (issue 33)")
    parser.add_argument("--baseline", metavar="REF", help="also time the package as of git REF")
    parser.add_argument("--page", metavar="TEXT", help="only the pages whose name contains TEXT")
    args = parser.parse_args(argv)
    if args.scan:
        measure_scan(args)
    else:
        measure(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
