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

Per response: the best of ``--repeat`` passes over ``--responses`` responses,
sync (``process_spider_output``, Scrapy < 2.13 with sync callbacks) and async
(``process_spider_output_async``, what Scrapy 2.13+ always calls).

``--scan`` (issue 33) times the head reader itself,
:func:`~scrapy_googlerobots.htmlmeta.head_meta`, on the page without meta, a
WordPress (Yoast) head, and pages whose head is 1.5, 7.5 and 15 MB (inline
CSS then a robots meta: Google reads the first 15 MB), microseconds per call.

Before/after a change, on the same machine in one run: run the script once per
tree, e.g. ``PYTHONPATH=../base python benchmarks/bench_page_directives.py``
then without ``PYTHONPATH`` (the script only uses APIs both trees have).

Run from the repository root: ``python benchmarks/bench_page_directives.py``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator, Callable, Sequence
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
    from scrapy_googlerobots.htmlmeta import head_meta

    print("head_meta(body): microseconds per call, best of --repeat")
    for name, body in scan_pages().items():
        calls = max(1, min(2_000, 5_000_000 // len(body)))
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            for _ in range(calls):
                found = head_meta(body, lambda n: n == "robots", len(body))
            best = min(best, (time.perf_counter() - start) / calls)
        print(f"  {name:<16}{len(body):>11,} bytes {best * 1e6:>12.1f} us  {found}")


def build() -> tuple[PageDirectivesMiddleware, DepthMiddleware]:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "USER_AGENT": AGENT})
    ours = PageDirectivesMiddleware.from_crawler(crawler)
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
    start = time.perf_counter()
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
    return time.perf_counter() - start


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
    header = (
        f"{'page':<22}{'mode':<7}{'none':>8}{'depth':>8}{'ours':>8}{'+ours':>8}{'+ours/+depth':>14}"
    )
    print(header)
    for name, make in pages().items():
        for mode in ("sync", "async"):
            best: dict[str, float] = {}
            for kind in ("none", "depth", "ours"):
                times = []
                for _ in range(args.repeat):
                    ours, depth = build()
                    mw = ours if kind == "ours" else depth
                    responses = [make(request) for request in requests]
                    times.append(time_pass(kind, mw, responses, out, mode))
                best[kind] = min(times) / args.responses * 1e6
            added, depth_added = best["ours"] - best["none"], best["depth"] - best["none"]
            ratio = added / depth_added if depth_added > 0 else float("nan")
            print(
                f"{name:<22}{mode:<7}{best['none']:>8.2f}{best['depth']:>8.2f}"
                f"{best['ours']:>8.2f}{added:>8.2f}{ratio:>14.2f}"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=2_000)
    parser.add_argument("--outputs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scan", action="store_true", help="time head_meta alone (issue 33)")
    args = parser.parse_args(argv)
    if args.scan:
        measure_scan(args)
    else:
        measure(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
