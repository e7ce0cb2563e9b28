"""Units of the per-origin policy file: FileKind, FileRefs, record_of, the fetcher's URL and
stat names, and RobotsServer answering the spider's own robots.txt request."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request
from scrapy.http import TextResponse
from scrapy.utils.test import get_crawler

from scrapy_googlerobots.crawl.stock_parser import GoogleRobotParser
from scrapy_googlerobots.fetching.fetcher import FetchResult, RobotsFetcher
from scrapy_googlerobots.fetching.policy_file import FileRefs, record_of, unparsed
from scrapy_googlerobots.fetching.robots_copy import SERVED_FLAG, kept_headers
from scrapy_googlerobots.fetching.robots_serve import RobotsServer
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import ROBOTS_TXT, FileKind, OriginRef, origin_of
from scrapy_googlerobots.policy.record import FetchTimings
from scrapy_googlerobots.policy.tdm import TDMREP_JSON
from scrapy_googlerobots.reporting.reporter import Reporter
from scrapy_googlerobots.runtime.config import RobotsConfig

TIMINGS = FetchTimings(
    cache_ttl=3600,
    cache_min_ttl=60,
    cache_max_ttl=86400,
    retry_delay=1,
    retry_max_delay=60,
    max_size=500_000,
)
ROBOTS = b"User-agent: *\nDisallow: /private/\n"


def ref_of(url: str) -> OriginRef:
    origin = origin_of(url)
    assert origin is not None
    return OriginRef(origin)


class _Holder:
    """What FileRefs reads of a file: its kind."""

    def __init__(self, kind: FileKind) -> None:
        self.kind = kind


def test_a_kind_gives_its_url_stat_names_and_origin_keys() -> None:
    https = ref_of("https://Example.com/a").origin
    odd_port = ref_of("http://example.com:8080/a").origin
    ftp = ref_of("ftp://example.com/a").origin
    assert ROBOTS_TXT.url_for(https) == "https://example.com/robots.txt"
    assert ROBOTS_TXT.url_for(ftp) == "ftp://example.com/robots.txt"
    assert TDMREP_JSON.url_for(https) == "https://example.com/.well-known/tdmrep.json"
    assert TDMREP_JSON.url_for(odd_port) == "http://example.com:8080/.well-known/tdmrep.json"
    assert TDMREP_JSON.url_for(ftp) is None, "tdmrep.json is for http(s) origins only"
    assert ROBOTS_TXT.stat("robotstxt/redirect/hops") == "robotstxt/redirect/hops"
    assert TDMREP_JSON.stat("robotstxt/redirect/hops") == "robotstxt/tdmrep/redirect/hops"
    assert TDMREP_JSON.origin_key("tdmrep|https://example.com:443") == "https://example.com:443"
    assert ROBOTS_TXT.origin_key("https://example.com:443") == "https://example.com:443"


def test_file_refs_key_each_file_by_its_prefix_and_remember_them() -> None:
    ref = ref_of("https://example.com/a")
    robots, tdm = FileRefs(_Holder(ROBOTS_TXT)), FileRefs(_Holder(TDMREP_JSON))  # type: ignore[arg-type]
    assert robots.of(ref) is ref, "robots.txt is keyed by the origin key itself"
    first = tdm.of(ref)
    assert first is not None and first.key == "tdmrep|https://example.com:443"
    assert first.origin == ref.origin
    assert tdm.of(ref) is first, "remembered"
    assert tdm.of(ref_of("ftp://example.com/a")) is None
    assert tdm.of(ref_of("ftp://example.com/b")) is None, "remembered as none too"


def result(outcome: FetchOutcome, body: bytes = b"", **kwargs: Any) -> FetchResult:
    return FetchResult(outcome, "HTTP 200", body=body, **kwargs)


def test_record_of_parses_as_the_file_says() -> None:
    key = "https://example.com:443"
    parsed = record_of(key, result(FetchOutcome.RULES, ROBOTS), None, 100.0, TIMINGS)
    assert parsed.rules is not None and parsed.rules.deciding_line("/private/x", "Bot") < 0
    assert parsed.body == ROBOTS and parsed.expires_at == 100.0 + 3600
    kept = record_of(key, result(FetchOutcome.RULES, b"[]"), None, 100.0, TIMINGS, parse=unparsed)
    assert kept.rules is None and kept.body == b"[]"
    # An unreachable fetch keeps the good copy, notes the outage and backs off.
    later = record_of(key, result(FetchOutcome.UNREACHABLE), parsed, 200.0, TIMINGS)
    assert later.body == ROBOTS and later.unreachable_since == 200.0 and later.retry_at == 201.0


def test_the_fetcher_fetches_its_kind_at_its_priority() -> None:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    config = RobotsConfig.from_settings(crawler.settings)
    fetcher = RobotsFetcher(crawler, config, TDMREP_JSON, priority=7)
    origin = ref_of("https://example.com/").origin
    assert fetcher.url_of(origin) == "https://example.com/.well-known/tdmrep.json"
    request = fetcher._request(fetcher.url_of(origin), origin)
    assert request.priority == 7 and request.meta["dont_obey_robotstxt"]
    with pytest.raises(ValueError, match=r"has no tdmrep\.json"):
        fetcher.url_of(ref_of("ftp://example.com/").origin)
    fetcher._inc("robotstxt/redirect/hops")
    assert crawler.stats.get_value("robotstxt/tdmrep/redirect/hops") == 1


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_server_answers_the_spiders_robots_request_from_a_whole_fresh_copy() -> None:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    crawler.stats.open_spider(None)
    config = RobotsConfig.from_settings(crawler.settings)
    reporter = Reporter(crawler, config, TIMINGS, GoogleRobotParser.from_robotstxt)
    clock = _Clock(100.0)
    server = RobotsServer(reporter, clock, 0)
    ref = ref_of("https://example.com/")
    url = ref.origin.robots_url
    response = TextResponse(url, body=ROBOTS, headers={"Content-Type": "text/plain"})
    fetched = result(FetchOutcome.RULES, ROBOTS, response=response, whole=True)
    headers = kept_headers(FetchOutcome.RULES, response, url=url, whole=True)
    record = record_of(ref.key, fetched, None, 100.0, TIMINGS, headers=headers)
    served = server.answer(Request(url), ref, record)
    assert served is not None and served.body == ROBOTS and SERVED_FLAG in served.flags
    assert server.answer(Request("https://example.com/a/robots.txt"), ref, record) is None
    assert server.answer(Request(url, headers={"Cookie": "a=1"}), ref, record) is None
    unkept = record_of(ref.key, fetched, None, 100.0, TIMINGS)  # no headers: cannot stand
    assert server.answer(Request(url), ref, unkept) is None
    clock.now = record.expires_at
    assert server.answer(Request(url), ref, record) is None
    stats = crawler.stats.get_stats()
    assert stats["robotstxt/spider_request/served"] == 1
    assert stats["robotstxt/spider_request/downloaded/request"] == 1
    assert stats["robotstxt/spider_request/downloaded/copy"] == 1
    assert stats["robotstxt/spider_request/downloaded/expired"] == 1
