"""Counterparts of Scrapy's own tests for its robots.txt middleware, as real crawls.

One test (or more) per scenario of Scrapy's
``tests/test_downloadermiddleware_robotstxt.py``. Where Google's rules give a
different outcome on purpose, the test asserts ours and says ``DIFFERENCE``:

- a robots.txt download error (DNS, …): Scrapy allows everything and logs an
  ERROR; we treat the origin as unreachable (SPEC B3: full disallow for now,
  fetched again with backoff) and log a WARNING;
- of many requests waiting for the same first fetch, Scrapy 2.19 judges only
  the first; every one is judged here.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.test import get_crawler
from twisted.internet.error import DNSLookupError

from scrapy_googlerobots import GoogleRobotsTxtMiddleware
from scrapy_googlerobots.crawl.bad_setting import RefuseEverything

from middleware_support import CAN_PARK, OURS, robots_settings, robots_stats, spider_with_signals
from servers import UNRESOLVABLE_HOST, RecordingSpider, Reply, Site, run_crawl

MODULE = "scrapy_googlerobots"

# The robots.txt of Scrapy's test, byte for byte.
SCRAPY_ROBOTS = """
User-Agent: *
Disallow: /admin/
Disallow: /static/
# taken from https://en.wikipedia.org/robots.txt
Disallow: /wiki/K%C3%A4ytt%C3%A4j%C3%A4:
Disallow: /wiki/Käyttäjä:
User-Agent: UnicödeBöt
Disallow: /some/randome/page.html
""".encode()


# test_robotstxt_settings


def test_not_configured_without_robotstxt_obey() -> None:
    crawler = get_crawler(settings_dict={"USER_AGENT": "CustomAgent"})
    with pytest.raises(NotConfigured):
        GoogleRobotsTxtMiddleware.from_crawler(crawler)


def test_bad_settings_stop_the_crawl_at_start_up() -> None:
    # One ERROR line and a stand-in refusing every request (crawled in test_usage_crawl.py).
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "ROBOTSTXT_CACHE_MIN_TTL": 10**9})
    refusing = GoogleRobotsTxtMiddleware.from_crawler(crawler)
    assert isinstance(refusing, RefuseEverything)
    assert "ROBOTSTXT_CACHE_MIN_TTL" in refusing.problem
    off = {"ROBOTSTXT_OBEY": False, "ROBOTSTXT_CACHE_MIN_TTL": 10**9}
    with pytest.raises(NotConfigured):  # robots.txt not obeyed: the setting is not used
        GoogleRobotsTxtMiddleware.from_crawler(get_crawler(settings_dict=off))


# test_robotstxt, test_robotstxt_ready_parser, test_robotstxt_multiple_reqs


@pytest_twisted.ensureDeferred
async def test_robotstxt(site: Site) -> None:
    site.script("/robots.txt", Reply(200, SCRAPY_ROBOTS, {"Content-Type": "text/plain"}))
    allowed = site.url("/allowed")
    ignored = [
        site.url("/admin/main"),
        site.url("/static/"),
        site.url("/wiki/K%C3%A4ytt%C3%A4j%C3%A4:"),
        site.url("/wiki/Käyttäjä:"),
    ]
    # Scrapy escapes the non-ASCII URL itself, making the last two the same
    # request: dont_filter keeps both.
    requests = [Request(url, dont_filter=True) for url in [allowed, *ignored]]
    result = await run_crawl(robots_settings(), requests)
    assert result.downloaded == [allowed]
    for url in {request.url for request in requests[1:]}:
        failures = result.failed(url)
        assert failures and all(f.check(IgnoreRequest) for f in failures)
        assert all(str(f.value) == "Forbidden by robots.txt" for f in failures)
    assert len(result.failures) == 4
    [robots] = site.requests("/robots.txt")
    assert robots.method == "GET"
    assert robots_stats(result)["robotstxt/forbidden"] == 4


@pytest_twisted.ensureDeferred
async def test_robotstxt_requested_with_no_callback(site: Site) -> None:
    requests: list[Request] = []

    def on_reached(request: Request, **_: Any) -> None:
        requests.append(request)

    site.script("/robots.txt", Reply(200, SCRAPY_ROBOTS))
    spider = spider_with_signals(request_reached_downloader=on_reached)
    await run_crawl(robots_settings(), [site.url("/allowed")], spider_cls=spider)
    robots = requests[0]
    assert robots.url == site.url("/robots.txt")
    assert robots.callback is NO_CALLBACK


@pytest_twisted.ensureDeferred
async def test_ready_parser_serves_later_requests(site: Site) -> None:
    from middleware_support import ChainSpider, then

    site.script("/robots.txt", Reply(200, SCRAPY_ROBOTS))
    start = [Request(site.url("/allowed"), meta=then(lambda _: [Request(site.url("/allowed2"))]))]
    result = await run_crawl(robots_settings(), start, spider_cls=ChainSpider)
    assert result.downloaded == [site.url("/allowed"), site.url("/allowed2")]
    assert site.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_multiple_requests_during_the_first_fetch(site: Site) -> None:
    # DIFFERENCE: Scrapy 2.19 judges only the first of the waiting requests.
    site.script("/robots.txt", Reply(200, SCRAPY_ROBOTS, delay=0.2))
    urls = [
        site.url("/allowed1"),
        site.url("/admin/1"),
        site.url("/allowed2"),
        site.url("/admin/2"),
    ]
    result = await run_crawl(robots_settings(), urls)
    assert sorted(result.downloaded) == [site.url("/allowed1"), site.url("/allowed2")]
    assert site.hits("/robots.txt") == 1
    assert robots_stats(result)["robotstxt/forbidden"] == 2


# test_robotstxt_meta


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_meta(site: Site) -> None:
    site.script("/robots.txt", Reply(200, SCRAPY_ROBOTS))
    meta = {"dont_obey_robotstxt": True}
    urls = [site.url(path) for path in ("/allowed", "/admin/main", "/static/")]
    result = await run_crawl(robots_settings(), [Request(url, meta=meta) for url in urls])
    assert sorted(result.downloaded) == sorted(urls)
    assert site.hits("/robots.txt") == 0  # nothing asked for it
    assert "robotstxt/request_count" not in robots_stats(result)


# test_robotstxt_garbage, test_robotstxt_empty_response


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"GIF89a\xd3\x00\xfe\x00\xa2", id="garbage"),
        pytest.param(b"", id="empty"),
        pytest.param(b"<html><body>User-agent: * Disallow: /</body></html>", id="html_page"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_body_without_rules_allows_all(site: Site, body: bytes) -> None:
    site.script("/robots.txt", Reply(200, body))
    urls = [site.url(path) for path in ("", "/allowed", "/admin/main", "/static/")]
    result = await run_crawl(robots_settings(), urls)
    assert sorted(result.downloaded) == sorted(urls)
    assert robots_stats(result)["robotstxt/outcome/rules"] == 1


# test_robotstxt_error, test_robotstxt_immediate_error


@pytest_twisted.ensureDeferred
async def test_download_error_makes_the_origin_unreachable() -> None:
    # DIFFERENCE: Scrapy allows everything after a robots.txt download error.
    url = f"http://{UNRESOLVABLE_HOST}/page"
    settings = robots_settings(RETRY_ENABLED=False, ROBOTSTXT_UNREACHABLE="disallow")
    result = await run_crawl(settings, [url])
    [failure] = result.failed(url)
    assert "robots.txt unreachable" in str(failure.value)
    warnings = result.messages(logging.WARNING, logger=MODULE)
    assert any(f"http://{UNRESOLVABLE_HOST}:80 unreachable" in message for message in warnings)
    assert any(key.startswith("robotstxt/exception_count/") for key in robots_stats(result))


@pytest.mark.parametrize(
    ("exception", "traceback_logged"),
    [
        pytest.param(DNSLookupError("Robotstxt address not found"), False, id="network_error"),
        pytest.param(ZeroDivisionError("bug in a middleware"), True, id="unexpected_error"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_immediate_error_makes_the_origin_unreachable(
    site: Site, exception: Exception, traceback_logged: bool
) -> None:
    class FailAtOnce:
        def process_request(self, request: Request, spider: Any = None) -> None:
            if request.url.endswith("/robots.txt"):
                raise exception

    settings = robots_settings(
        extra={FailAtOnce: 50}, RETRY_ENABLED=False, ROBOTSTXT_UNREACHABLE="disallow"
    )
    result = await run_crawl(settings, [site.url("/page")])
    assert result.downloaded == []
    assert robots_stats(result)[f"robotstxt/exception_count/{type(exception)}"] == 1
    # A network failure is expected; anything else is a bug worth a traceback.
    errors = [r for r in result.logs if r.levelno == logging.ERROR and r.name.startswith(MODULE)]
    assert [r.exc_info is not None for r in errors] == ([True] if traceback_logged else [])


# test_ignore_robotstxt_request


@pytest_twisted.ensureDeferred
async def test_ignore_request_for_robots_txt_allows_all_without_error(site: Site) -> None:
    class IgnoreRobots:
        def process_request(self, request: Request, spider: Any = None) -> None:
            if request.url.endswith("/robots.txt"):
                raise IgnoreRequest

    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /\n"))
    result = await run_crawl(robots_settings(extra={IgnoreRobots: 50}), [site.url("/allowed")])
    assert result.downloaded == [site.url("/allowed")]
    assert site.hits("/robots.txt") == 0
    assert result.messages(logging.ERROR) == []
    stats = robots_stats(result)
    assert stats["robotstxt/request_ignored"] == 1
    assert stats["robotstxt/outcome/allow_all"] == 1


# test_robotstxt_user_agent_setting


@pytest_twisted.ensureDeferred
async def test_robotstxt_user_agent_setting(site: Site) -> None:
    site.script(
        "/robots.txt",
        Reply(200, b"User-agent: examplebot\nDisallow: /allowed\n\nUser-agent: *\nDisallow: /\n"),
    )
    settings = robots_settings(
        ROBOTSTXT_USER_AGENT="Examplebot", USER_AGENT="Mozilla/5.0 (X11; Linux x86_64)"
    )
    result = await run_crawl(settings, [site.url("/allowed"), site.url("/other")])
    assert result.downloaded == [site.url("/other")]
    # No browser-agent warning: ROBOTSTXT_USER_AGENT names the crawler.
    assert not any(
        "ROBOTSTXT_USER_AGENT" in m for m in result.messages(logging.WARNING, logger=MODULE)
    )


# test_robotstxt_local_file


@pytest_twisted.ensureDeferred
async def test_local_files_and_data_urls_are_never_checked(tmp_path: Path, site: Site) -> None:
    page = tmp_path / "nothinghere.html"
    page.write_bytes(b"<html></html>")
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /\n"))
    urls = ["data:text/plain,Hello World data", page.as_uri(), site.url("/allowed")]
    result = await run_crawl(robots_settings(), urls)
    assert sorted(result.downloaded) == sorted(Request(url).url for url in urls[:2])
    assert robots_stats(result)["robotstxt/request_count"] == 1  # for the http origin only


# the robots_parsed signal (Scrapy >= 2.18; ours on every version: test_sitemaps_crawl.py)


@pytest.mark.skipif(not hasattr(signals, "robots_parsed"), reason="Scrapy without robots_parsed")
@pytest_twisted.ensureDeferred
async def test_robots_parsed_signal(make_site: Any) -> None:
    from scrapy.robotstxt import RobotParser

    ok, gone, broken = make_site(), make_site(), make_site()
    ok.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"))
    gone.script("/robots.txt", Reply(404))
    broken.script("/robots.txt", Reply(503))
    received: list[tuple[Any, Request]] = []

    def on_parsed(robotparser: Any, request: Request, **_: Any) -> None:
        received.append((robotparser, request))

    settings = robots_settings(RETRY_ENABLED=False, ROBOTSTXT_UNREACHABLE="disallow")
    spider = spider_with_signals(robots_parsed=on_parsed)
    urls = [ok.url("/page"), gone.url("/page"), broken.url("/page")]
    await run_crawl(settings, urls, spider_cls=spider)
    by_request = {request.url: parser for parser, request in received}
    assert sorted(by_request) == sorted([ok.url("/page"), gone.url("/page")])  # not unreachable
    assert all(isinstance(parser, RobotParser) for parser in by_request.values())
    ok_parser = by_request[ok.url("/page")]
    assert ok_parser.allowed(ok.url("/x"), "AnyBot") is False
    assert ok_parser.allowed(ok.url("/y"), b"AnyBot/1.0") is True
    assert by_request[gone.url("/page")].allowed(gone.url("/x"), "AnyBot") is True


# requests that bypass the scheduler (engine.download from user code)


class _DirectSpider(RecordingSpider):
    """Downloads ``direct_urls`` with ``engine.download_async`` from its first callback."""

    name = "direct"

    async def parse(self, response: Any, **kwargs: Any) -> Any:
        engine = self.crawler.engine
        for url in self.direct_urls:  # type: ignore[attr-defined]
            request = Request(url, callback=NO_CALLBACK)
            try:
                if hasattr(engine, "download_async"):
                    got = await engine.download_async(request)
                else:  # pragma: no cover - Scrapy < 2.14
                    from scrapy.utils.defer import maybe_deferred_to_future

                    got = await maybe_deferred_to_future(engine.download(request))
            except IgnoreRequest as exc:
                self.outcomes.append((url, str(exc)))  # type: ignore[attr-defined]
            else:
                self.outcomes.append((url, got.status))  # type: ignore[attr-defined]
        return None


@pytest_twisted.ensureDeferred
async def test_engine_download_waits_inline_and_is_judged(make_site: Any) -> None:
    first, other = make_site(), make_site()
    other.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /no\n", delay=0.2))
    outcomes: list[tuple[str, object]] = []
    direct = [other.url("/yes"), other.url("/no")]
    result = await run_crawl(
        robots_settings(),
        [first.url("/start")],
        spider_cls=_DirectSpider,
        direct_urls=direct,
        outcomes=outcomes,
    )
    assert outcomes == [(other.url("/yes"), 200), (other.url("/no"), "Forbidden by robots.txt")]
    assert other.hits("/robots.txt") == 1
    # Without parking (Scrapy < 2.11.2) the scheduled /start waited inline too.
    stats = robots_stats(result)
    assert stats["robotstxt/inline_waits"] == (1 if CAN_PARK else 2)
    if CAN_PARK:
        # /start (nothing pending yet) was handed back and parked; /yes was
        # handed back too, and engine.download brought it straight back to wait.
        assert stats["robotstxt/handed_back"] == 2


def test_middleware_path_is_importable() -> None:
    from scrapy.utils.misc import load_object

    assert load_object(OURS) is GoogleRobotsTxtMiddleware
