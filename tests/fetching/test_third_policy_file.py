"""A third per-origin policy file, defined here only (not shipped): what adding one takes.

``deny.txt`` (``/.well-known/deny.txt``, lines ``Deny: <path prefix>``) is one
Scrapy-side class (:class:`DenyListFile`, a
:class:`~scrapy_googlerobots.fetching.policy_file.PolicyFile`) plus its core
parser (:func:`parse_deny_list`), added to the crawl by a middleware subclass's
``_policy_files``. Real crawls then show that the crawl handles it exactly as
robots.txt and tdmrep.json: fetched once per origin through the engine (the
crawl's user agent, its downloader middlewares), its requests parked while it
is fetched, its record kept in SQLite and Redis (one fetch for two workers),
and its waiting requests handed over at a stop and adopted by the next worker.
Also: a subclass's ``DOWNLOAD_PRIORITY`` is the priority of every policy file's
request (issue 31).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import pytest_twisted
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from twisted.internet import defer

from scrapy_googlerobots import GoogleRobotsTxtMiddleware
from scrapy_googlerobots.fetching.policy_file import record_of, unparsed
from scrapy_googlerobots.policy.decision import decide
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import FileKind
from scrapy_googlerobots.reporting.file_reports import FileReports

from middleware_support import robots_settings, robots_stats
from redis_server import RedisServer, redis_server
from servers import CrawlResult, Reply, Site, run_crawl

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_googlerobots.crawl.factory import Parts
    from scrapy_googlerobots.fetching.fetcher import FetchResult
    from scrapy_googlerobots.fetching.policy_file import PolicyFile
    from scrapy_googlerobots.policy.decision import Decision
    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.policy.record import FetchTimings, PolicyRecord

__all__ = ["redis_server"]  # the fixture, imported for the tests below

DENY = "/.well-known/deny.txt"
ROBOTS = b"User-agent: *\nDisallow: /robots-no/\n"


# -- the core parser (standard library only) ----------------------------------


def parse_deny_list(body: bytes) -> tuple[str, ...]:
    """The path prefixes of ``Deny:`` lines (case-insensitive name, other lines ignored)."""
    prefixes = []
    for line in body.decode("utf-8", "replace").splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "deny" and value.strip().startswith("/"):
            prefixes.append(value.strip())
    return tuple(prefixes)


# -- the Scrapy side: one class --------------------------------------------------

DENY_LIST = FileKind(
    "deny.txt", "robotstxt/denylist/", "denylist|", DENY, frozenset(("http", "https"))
)


class DenyListFile:
    """``deny.txt`` as a policy file: every request needs it; a ``Deny:`` prefix refuses."""

    kind = DENY_LIST
    released_meta = "_denylist_released"
    gave_up_meta = "_denylist_gave_up"
    always = True
    trigger_meta = ""

    def __init__(self, crawler: Crawler, max_wait_allow_after: float) -> None:
        self.reports = FileReports(crawler, DENY_LIST)
        self._stats = crawler.stats
        self._allow_after = max_wait_allow_after

    def needs(self, request: Request) -> bool:
        return True

    def record(
        self,
        ref: OriginRef,
        result: FetchResult,
        previous: PolicyRecord | None,
        now: float,
        timings: FetchTimings,
    ) -> PolicyRecord:
        return record_of(ref.key, result, previous, now, timings, parse=unparsed)

    def decide(self, record: PolicyRecord | None, now: float) -> Decision:
        return decide(record, now, disallow_mode=False, allow_after=self._allow_after)

    def judge(self, request: Request, record: PolicyRecord | None) -> None:
        if record is None or record.outcome is not FetchOutcome.RULES:
            return
        path = urlsplit(request.url).path or "/"
        if any(path.startswith(prefix) for prefix in parse_deny_list(record.body or b"")):
            self._stats.inc_value("robotstxt/denylist/forbidden")
            raise IgnoreRequest("Forbidden by deny.txt")

    def gave_up(self, request: Request, reason: str) -> None:
        raise IgnoreRequest(reason)

    async def fetched(
        self, result: FetchResult, record: PolicyRecord, trigger: Request | None
    ) -> None:
        self._stats.inc_value("robotstxt/denylist/fetched_hook")


class ThreeFiles(GoogleRobotsTxtMiddleware):
    """The middleware with deny.txt after robots.txt and tdmrep.json."""

    DOWNLOAD_PRIORITY = 7

    def _policy_files(self, parts: Parts) -> list[PolicyFile]:
        allow_after = parts.config.unreachable_allow_after
        return [*super()._policy_files(parts), DenyListFile(parts.crawler, allow_after)]


class PriorityLog:
    """A downloader middleware noting (url, priority) of every request it sees."""

    seen: ClassVar[list[tuple[str, int]]] = []

    def process_request(self, request: Request, spider: Any = None) -> None:
        PriorityLog.seen.append((request.url, request.priority))


# -- the crawls ----------------------------------------------------------------------


async def crawl(start: Sequence[str], **settings: Any) -> CrawlResult:
    return await run_crawl(robots_settings(ThreeFiles, **settings), start)


def refused(result: CrawlResult) -> dict[str, str]:
    return {url: str(failure.value) for url, failure in result.failures}


def origin_site(site: Site, deny: Reply) -> Site:
    site.script("/robots.txt", Reply(200, ROBOTS))
    site.script(DENY, deny)
    return site


@pytest_twisted.ensureDeferred
async def test_fetched_once_per_origin_through_the_engine_requests_wait_and_are_judged(
    make_site: Any,
) -> None:
    # Slow deny.txt: the requests of each origin wait for it, parked.
    sites = [origin_site(make_site(), Reply(200, b"Deny: /no/\n", delay=0.3)) for _ in range(2)]
    urls = [s.url(p) for s in sites for p in ("/ok/1", "/ok/2", "/no/1", "/robots-no/1")]
    PriorityLog.seen = []
    result = await crawl(
        urls, extra={f"{__name__}.PriorityLog": 50}, USER_AGENT="ThirdBot/1.0 (+http://t.example)"
    )
    for site in sites:
        assert site.hits(DENY) == 1, "one fetch per origin"
        assert site.hits("/no/1") == site.hits("/robots-no/1") == 0
        [fetch] = site.requests(DENY)
        assert fetch.header("User-Agent") == "ThirdBot/1.0 (+http://t.example)"
    assert sorted(result.downloaded) == sorted(u for u in urls if "/ok/" in u)
    assert set(refused(result).values()) == {"Forbidden by deny.txt", "Forbidden by robots.txt"}
    stats = robots_stats(result)
    assert stats["robotstxt/denylist/request_count"] == 2
    assert stats["robotstxt/denylist/outcome/rules"] == 2
    assert stats["robotstxt/denylist/response_status_count/200"] == 2
    assert stats["robotstxt/denylist/forbidden"] == 2
    assert stats["robotstxt/denylist/fetched_hook"] == 2
    assert stats["robotstxt/parked"] >= 4, "the requests waited for deny.txt"
    # Every policy file's request went through the downloader middlewares with
    # the subclass's DOWNLOAD_PRIORITY.
    files = {url: priority for url, priority in PriorityLog.seen if url.endswith((DENY, ".txt"))}
    assert {s.url(DENY) for s in sites} | {s.url("/robots.txt") for s in sites} <= set(files)
    assert set(files.values()) == {7}


@pytest_twisted.ensureDeferred
async def test_kept_in_sqlite_one_fetch_for_two_workers(site: Site, tmp_path: Path) -> None:
    origin_site(site, Reply(200, b"Deny: /no/\n", delay=0.5))
    store = str(tmp_path / "shared.sqlite")
    urls = [site.url("/no/1"), site.url("/ok")]
    runs = [crawl(urls, ROBOTSTXT_CACHE_STORE=store) for _ in range(2)]
    results = await defer.gatherResults([defer.ensureDeferred(run) for run in runs])
    assert site.hits(DENY) == 1, "one fetch for both workers"
    for result in results:
        assert refused(result) == {site.url("/no/1"): "Forbidden by deny.txt"}
        assert result.downloaded == [site.url("/ok")]
    # A third worker later: the record is in the store, under the file's own key.
    later = await crawl([site.url("/no/2")], ROBOTSTXT_CACHE_STORE=store)
    assert site.hits(DENY) == 1 and refused(later) == {site.url("/no/2"): "Forbidden by deny.txt"}


async def handed_over_and_adopted(site: Site, store: str) -> None:
    """A stop while requests wait for deny.txt; the next worker adopts them."""
    # The first worker's fetch is slow: it stops while its requests wait for it.
    origin_site(site, Reply(200, b"Deny: /no/\n", delay=3))
    site.script(DENY, Reply(200, b"Deny: /no/\n", delay=3), Reply(200, b"Deny: /no/\n"))
    urls = [site.url("/no/1"), site.url("/a"), site.url("/b")]
    common = {"ROBOTSTXT_CACHE_STORE": store, "DOWNLOAD_TIMEOUT": 10}
    stopped = await crawl(urls, CLOSESPIDER_TIMEOUT=1, **common)
    assert stopped.stats["finish_reason"] == "closespider_timeout"
    assert stopped.downloaded == [] and stopped.failures == [], "nothing crawled, nothing dropped"
    assert stopped.stats["robotstxt/parked/handed_over/store"] == 3
    # The next worker adopts them, waits for the file, judges.
    later = await crawl([], **common)
    assert later.stats["robotstxt/parked/adopted"] == 3
    assert sorted(later.downloaded) == [site.url("/a"), site.url("/b")]
    assert refused(later) == {site.url("/no/1"): "Forbidden by deny.txt"}
    assert site.hits("/a") == site.hits("/b") == 1 and site.hits("/no/1") == 0


@pytest_twisted.ensureDeferred
async def test_waiting_requests_are_handed_over_through_sqlite(site: Site, tmp_path: Path) -> None:
    await handed_over_and_adopted(site, str(tmp_path / "shared.sqlite"))


@pytest_twisted.ensureDeferred
async def test_waiting_requests_are_handed_over_through_redis(
    redis_server: RedisServer, site: Site
) -> None:
    await handed_over_and_adopted(site, redis_server.url)
