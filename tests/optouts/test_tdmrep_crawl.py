"""TDMRep in real crawls (issue 27): ``/.well-known/tdmrep.json``, the ``tdm-reservation`` /
``tdm-policy`` header fields and ``<meta name="tdm-*">`` tags against the use a crawl
declares.

Every test crawls loopback sites and asserts what the sites served (tdmrep.json hit
counts), what reached the spider (with ``response.meta["tdm_reservation"]``), the
errbacks and their ``forbidden_by`` decisions, the ``robotstxt/tdmrep/`` stats, the
summary and the log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from twisted.internet import defer

from scrapy_googlerobots import forbidden_by

from middleware_support import MovableClock, clocked, robots_settings, robots_stats, then
from redis_server import RedisServer, redis_server
from servers import CrawlResult, RecordingSpider, Reply, Site, run_crawl

__all__ = ["redis_server"]  # the fixture, imported for the tests below

TDMREP = "/.well-known/tdmrep.json"
UNSEEN: Any = "unseen"


class TdmSpider(RecordingSpider):
    """Records ``response.meta.get("tdm_reservation")`` per URL in ``seen``."""

    name = "tdm"
    seen: dict[str, Any]

    def parse(self, response: Response, **kwargs: Any) -> Any:
        self.seen[response.url] = response.meta.get("tdm_reservation")
        action = response.meta.get("then")
        for request in (action(response) or ()) if action else ():
            yield request.replace(callback=self.parse, errback=self.on_error)


async def crawl(
    start: Sequence[str | Request], *, usage: Sequence[str] | None = ("train-ai",), **settings: Any
) -> tuple[CrawlResult, dict[str, Any]]:
    if usage is not None:
        settings["ROBOTSTXT_USAGE"] = list(usage)
    seen: dict[str, Any] = {}
    result = await run_crawl(robots_settings(**settings), start, spider_cls=TdmSpider, seen=seen)
    return result, seen


def tdm_file(*rules: dict[str, Any], **headers: str) -> Reply:
    return Reply(
        200, json.dumps(list(rules)).encode(), {"Content-Type": "application/json", **headers}
    )


def html(head: str = "", **headers: str) -> Reply:
    body = f"<!doctype html><html><head>{head}<title>t</title></head><body>page</body></html>"
    return Reply(200, body.encode(), {"Content-Type": "text/html; charset=utf-8", **headers})


def refusal(result: CrawlResult, url: str) -> str:
    [failure] = result.failed(url)
    assert failure.check(IgnoreRequest) is not None
    return str(failure.value)


def tdm_stats(result: CrawlResult) -> dict[str, Any]:
    return {k: v for k, v in robots_stats(result).items() if k.startswith("robotstxt/tdmrep/")}


@pytest_twisted.ensureDeferred
async def test_file_header_and_meta_refusals(make_site: Callable[..., Site]) -> None:
    files, headers, garbage, down, moved = (make_site() for _ in range(5))
    policy = "https://publisher.example/tdm-policy.json"
    files.script(
        TDMREP,
        tdm_file(
            {"location": "/articles/*", "tdm-reservation": 1, "tdm-policy": policy},
            {"location": "/open/", "tdm-reservation": 0},
        ),
    )
    # The header supersedes the file's 0; the meta tag supersedes an absent header.
    files.script("/open/header", html(**{"tdm-reservation": "1"}))
    files.script("/open/ok", html())
    files.script("/meta", html('<meta name="tdm-reservation" content="1">'))
    files.script("/plain", html())
    headers.script(TDMREP, Reply(404))
    headers.script("/h", html(**{"tdm-reservation": "1", "tdm-policy": policy}))
    headers.script(
        "/lifted", html('<meta name="TDM-Reservation" content="0">', **{"tdm-reservation": "1"})
    )
    headers.script("/bad", html(**{"tdm-reservation": "yes"}))
    garbage.script(TDMREP, Reply(200, b"<html>not json</html>", {"Content-Type": "text/html"}))
    garbage.script("/g", html())
    down.script(TDMREP, Reply(503))
    down.script("/d", html())
    moved.script(TDMREP, Reply.redirect("/tdm/rules.json"))
    moved.script("/tdm/rules.json", tdm_file({"location": "/", "tdm-reservation": 1}))
    urls = [
        files.url("/articles/1"),
        files.url("/open/header"),
        files.url("/open/ok"),
        files.url("/meta"),
        files.url("/plain"),
        headers.url("/h"),
        headers.url("/lifted"),
        headers.url("/bad"),
        garbage.url("/g"),
        down.url("/d"),
        moved.url("/m"),
    ]
    result, seen = await crawl(urls, RETRY_ENABLED=False, ROBOTSTXT_SUMMARY=True)

    # What reached the spider, with the effective reservation.
    assert seen == {
        files.url("/open/ok"): {
            "reserved": False,
            "policy": None,
            "source": "file",
            "explanation": f'rule 2 of {files.url(TDMREP)} (location "/open/")',
        },
        files.url("/plain"): None,
        headers.url("/lifted"): {
            "reserved": False,
            "policy": None,
            "source": "meta",
            "explanation": 'meta tag <meta name="tdm-reservation" content="0">',
        },
        headers.url("/bad"): None,  # not 0 or 1: a protocol error, unset
        garbage.url("/g"): None,
        down.url("/d"): None,
    }
    # File refusals are decided before the download; header and meta after it.
    assert files.hits("/articles/1") == 0
    assert moved.hits("/m") == 0
    assert files.hits("/open/header") == files.hits("/meta") == headers.hits("/h") == 1
    assert refusal(result, files.url("/articles/1")) == (
        f'Forbidden by TDM reservation: rule 1 of {files.url(TDMREP)} (location "/articles/*"), '
        f"policy {policy}"
    )
    assert refusal(result, files.url("/open/header")) == (
        'Forbidden by TDM reservation: header "tdm-reservation: 1" '
        f"(response of {files.url('/open/header')})"
    )
    assert refusal(result, files.url("/meta")) == (
        'Forbidden by TDM reservation: meta tag <meta name="tdm-reservation" content="1"> '
        f"(response of {files.url('/meta')})"
    )
    assert refusal(result, headers.url("/h")) == (
        f'Forbidden by TDM reservation: header "tdm-reservation: 1", policy {policy} '
        f"(response of {headers.url('/h')})"
    )
    # The redirect was followed as for robots.txt; the rule names the file it came from.
    assert refusal(result, moved.url("/m")).startswith(
        f'Forbidden by TDM reservation: rule 1 of {moved.url(TDMREP)} (location "/")'
    )
    # forbidden_by names the source.
    decision = forbidden_by(result.failed(files.url("/articles/1"))[0])
    assert decision is not None and decision.tdm_refused is not None
    assert decision.tdm_refused.source is not None
    assert decision.tdm_refused.source.step == "file"
    assert decision.tdm_refused.policy == policy
    assert decision.allowed and decision.usage_refused is None  # robots.txt allowed it
    assert str(decision).startswith("TDM reservation: rule 1 of ")
    steps = {
        url: forbidden_by(result.failed(url)[0]).tdm_refused.source.step  # type: ignore[union-attr]
        for url in (files.url("/open/header"), files.url("/meta"), headers.url("/h"))
    }
    assert steps == {
        files.url("/open/header"): "header",
        files.url("/meta"): "meta",
        headers.url("/h"): "header",
    }
    # One tdmrep.json fetch per origin, whatever it answered; nothing stalled.
    for site in (files, headers, garbage, down, moved):
        assert site.hits(TDMREP) == 1
    assert moved.hits("/tdm/rules.json") == 1
    assert result.stats["finish_reason"] == "finished"
    stats = tdm_stats(result)
    assert stats["robotstxt/tdmrep/forbidden/file"] == 2
    assert stats["robotstxt/tdmrep/forbidden/header"] == 2
    assert stats["robotstxt/tdmrep/forbidden/meta"] == 1
    assert stats["robotstxt/tdmrep/request_count"] == 5
    assert stats["robotstxt/tdmrep/outcome/rules"] == 3
    assert stats["robotstxt/tdmrep/outcome/allow_all"] == 1
    assert stats["robotstxt/tdmrep/outcome/unreachable"] == 1
    assert stats["robotstxt/tdmrep/invalid"] == 1
    assert stats["robotstxt/tdmrep/redirect/hops"] == 1
    assert stats["robotstxt/tdmrep/responses"] == 5
    assert "robotstxt/forbidden" not in robots_stats(result)
    # The log: one line per refusal, the summary's TDMRep block.
    lines = [m for m in result.messages() if m.startswith("Forbidden by TDM reservation: ")]
    assert len(lines) == 5
    [block] = [m for m in result.messages(logging.INFO) if m.startswith("robots.txt summary:")]
    assert (
        "  TDMRep: 5 tdmrep.json fetched (1 2xx, 1 allow-all 4xx, 1 redirected, 1 unreachable, "
        "1 invalid); requests refused: 2 by tdmrep.json, 2 by tdm-reservation header, "
        "1 by meta tag; 5 responses with a reservation value"
    ) in block.splitlines()
    assert any(
        m.startswith(f"tdmrep.json {garbage.url(TDMREP)} is not a valid TDMRep file")
        for m in result.messages(logging.INFO)
    )
    for message in result.messages():
        if message.startswith("Forbidden by TDM reservation") or message.startswith("tdmrep.json"):
            print("log:", message)
    print("summary:", block)


@pytest_twisted.ensureDeferred
async def test_only_a_declared_tdm_use_asks_for_tdmrep_json(make_site: Callable[..., Site]) -> None:
    quiet, asked = make_site(), make_site()
    for site in (quiet, asked):
        site.script(TDMREP, tdm_file({"location": "/", "tdm-reservation": 1}))
        site.script("/p", html(**{"tdm-reservation": "1"}))
    # The crawl declares nothing; one request declares search, one train-ai (meta).
    start = [
        quiet.url("/p"),
        Request(quiet.url("/p?search"), meta={"robotstxt_usage": ["search"]}),
        Request(asked.url("/p"), meta={"robotstxt_usage": ["ai-train"]}),
        Request(asked.url("/p?none"), meta={"robotstxt_usage": []}),
    ]
    result, seen = await crawl(start, usage=None)
    assert quiet.hits(TDMREP) == 0, "no declared TDM use: tdmrep.json is never requested"
    assert asked.hits(TDMREP) == 1
    assert seen == {quiet.url("/p"): None, quiet.url("/p?search"): None, asked.url("/p?none"): None}
    assert refusal(result, asked.url("/p")).startswith("Forbidden by TDM reservation: rule 1 of ")
    assert [r.uri for r in asked.requests("/p")] == ["/p?none"], "refused before download"


@pytest_twisted.ensureDeferred
async def test_a_tdmrep_json_lives_its_ttl_then_is_fetched_again(site: Site) -> None:
    site.script(
        TDMREP,
        tdm_file({"location": "/x", "tdm-reservation": 0}, **{"Cache-Control": "max-age=3600"}),
        tdm_file({"location": "/", "tdm-reservation": 1}),
    )
    clock = MovableClock()

    def later(response: Response) -> list[Request]:
        clock.advance(3_601)
        return [Request(site.url("/after"))]

    start = [
        Request(
            site.url("/first"),
            meta=then(lambda r: [Request(site.url("/second"), meta=then(later))]),
        ),
    ]
    result, seen = await crawl(start, middleware=clocked(clock))
    assert set(seen) == {site.url("/first"), site.url("/second")}
    assert site.hits(TDMREP) == 2, "fresh for its max-age, fetched again after it"
    assert refusal(result, site.url("/after")).startswith("Forbidden by TDM reservation: rule 1 ")


@pytest_twisted.ensureDeferred
async def test_one_fetch_per_origin_across_two_workers_sharing_a_store(
    site: Site, tmp_path: Path
) -> None:
    # Slow enough that both workers want it while it is in flight.
    site.script(
        TDMREP,
        Reply(200, json.dumps([{"location": "/r/", "tdm-reservation": 1}]).encode(), delay=0.5),
    )
    store = str(tmp_path / "shared.sqlite")
    urls = [site.url("/r/1"), site.url("/ok")]
    runs = [crawl(urls, ROBOTSTXT_CACHE_STORE=store) for _ in range(2)]
    outcomes = await defer.gatherResults([defer.ensureDeferred(run) for run in runs])
    assert site.hits(TDMREP) == 1, "one fetch for both workers"
    for result, seen in outcomes:
        assert refusal(result, site.url("/r/1")).startswith("Forbidden by TDM reservation: ")
        assert set(seen) == {site.url("/ok")}
    waits = sum(r.stats.get("robotstxt/tdmrep/fetch_lease/waits", 0) for r, _ in outcomes)
    assert waits >= 1, "the second worker waited on the first one's lease"


@pytest_twisted.ensureDeferred
async def test_a_hanging_tdmrep_json_holds_requests_no_longer_than_the_max_wait(
    site: Site,
) -> None:
    site.script(TDMREP, Reply.hang())
    site.script("/p", html(**{"tdm-reservation": "0"}))
    result, seen = await crawl(
        [site.url("/p")],
        ROBOTSTXT_UNREACHABLE_MAX_WAIT=0.3,
        DOWNLOAD_TIMEOUT=1,
        RETRY_ENABLED=False,
    )
    # The wait ran out: the request went on with the file step unset; the header still counts.
    assert seen == {
        site.url("/p"): {
            "reserved": False,
            "policy": None,
            "source": "header",
            "explanation": 'header "tdm-reservation: 0"',
        }
    }
    stats = tdm_stats(result)
    assert stats["robotstxt/tdmrep/gave_up"] == 1
    assert stats["robotstxt/tdmrep/outcome/unreachable"] == 1
    assert "robotstxt/unreachable/dropped" not in robots_stats(result)


@pytest_twisted.ensureDeferred
async def test_requests_waiting_for_tdmrep_json_are_handed_over_through_redis(
    redis_server: RedisServer, site: Site
) -> None:
    reserving = json.dumps([{"location": "/r/", "tdm-reservation": 1}]).encode()
    # The first worker's fetch is slow: it stops while its requests wait for it.
    site.script(TDMREP, Reply(200, reserving, delay=3), Reply(200, reserving))
    urls = [site.url("/r/1"), site.url("/a"), site.url("/b")]
    common = {"ROBOTSTXT_CACHE_STORE": redis_server.url, "DOWNLOAD_TIMEOUT": 10}
    stopped, seen = await crawl(urls, CLOSESPIDER_TIMEOUT=1, **common)
    assert stopped.stats["finish_reason"] == "closespider_timeout"
    assert seen == {} and stopped.failures == [], "nothing crawled, nothing dropped"
    assert stopped.stats["robotstxt/parked/handed_over/store"] == 3
    [line] = [m for m in stopped.messages() if "handed over" in m]
    assert "3 left in redis://" in line
    # The next worker adopts them, waits for the file (fetched once more at most), judges.
    later, seen = await crawl([], **common)
    assert later.stats["robotstxt/parked/adopted"] == 3
    assert set(seen) == {site.url("/a"), site.url("/b")}
    assert refusal(later, site.url("/r/1")).startswith("Forbidden by TDM reservation: rule 1 ")
    assert site.hits("/a") == site.hits("/b") == 1 and site.hits("/r/1") == 0
