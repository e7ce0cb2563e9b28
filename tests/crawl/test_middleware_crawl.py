"""Real crawls against local servers: rules, scope, status codes, redirects, size and encodings.

Every test runs a Scrapy crawl (servers.run_crawl) with GoogleRobotsTxtMiddleware
in place of the stock middleware and asserts what was downloaded, what the
sites saw, and the ``robotstxt/`` stats.
"""

from __future__ import annotations

import gzip
import itertools
import logging
import zlib
from collections.abc import Callable
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.exceptions import IgnoreRequest

from scrapy_googlerobots import RobotsDecision, forbidden_by

from middleware_support import (
    CAN_PARK,
    our_middleware,
    robots_settings,
    robots_stats,
    spider_with_signals,
)
from servers import UNRESOLVABLE_HOST, FtpServer, RefusedPort, Reply, Site, gzip_bytes, run_crawl

MODULE = "scrapy_googlerobots"


def _forbidden(result: Any, url: str) -> bool:
    """``url`` got exactly one errback: IgnoreRequest("Forbidden by robots.txt")."""
    failures = result.failed(url)
    return (
        len(failures) == 1
        and failures[0].check(IgnoreRequest) is not None
        and str(failures[0].value) == "Forbidden by robots.txt"
    )


# --------------------------------------------------------------------------
# Rules (SPEC A via the core; C: worked examples)

RULES = b"""\
User-agent: *
Disallow: /
Allow: /$
Allow: /public
Disallow: /public/secret
Allow: /*.php$
Allow: /fold
Disallow: /fold
Disallow: /*/private/
"""


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        pytest.param("/", True, id="C_allow_dollar_root_tie_allows"),
        pytest.param("/page.htm", False, id="C_disallow_root_blocks_other_paths"),
        pytest.param("/public/page", True, id="longest_match_allow_wins"),
        pytest.param("/public/secret/page", False, id="longer_disallow_wins"),
        pytest.param("/a.php", True, id="C_wildcard_dollar_matches"),
        pytest.param("/a.php?x=1", False, id="C_dollar_anchors_before_query"),
        pytest.param("/a.php5", False, id="C_dollar_anchors_end"),
        pytest.param("/folder/page", True, id="C_tie_allows"),
        pytest.param("/public/x/private/y", False, id="wildcard_in_middle"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_rules_with_wildcards_dollar_and_ties(site: Site, path: str, allowed: bool) -> None:
    site.script("/robots.txt", Reply(200, RULES))
    result = await run_crawl(robots_settings(), [site.url(path)])
    assert (result.downloaded == [site.url(path)]) is allowed
    assert _forbidden(result, site.url(path)) is not allowed
    assert site.hits("/robots.txt") == 1
    assert robots_stats(result).get("robotstxt/forbidden", 0) == (0 if allowed else 1)


@pytest_twisted.ensureDeferred
async def test_one_crawl_many_verdicts_and_forbidden_log(site: Site) -> None:
    site.script("/robots.txt", Reply(200, RULES))
    urls = [site.url(path) for path in ("/", "/page", "/public/a", "/public/secret/b")]
    result = await run_crawl(robots_settings(), urls)
    assert sorted(result.downloaded) == sorted([site.url("/"), site.url("/public/a")])
    assert site.hits("/page") == site.hits("/public/secret/b") == 0
    assert _forbidden(result, site.url("/page")) and _forbidden(
        result, site.url("/public/secret/b")
    )
    stats = robots_stats(result)
    assert stats["robotstxt/forbidden"] == 2
    assert stats["robotstxt/request_count"] == 1
    assert stats["robotstxt/response_count"] == 1
    assert stats["robotstxt/response_status_count/200"] == 1
    assert stats["robotstxt/outcome/rules"] == 1
    debug = result.messages(logging.DEBUG, logger=MODULE)
    # Scrapy's line, then (issue 12) the deciding line and the product token.
    assert any(m.startswith(f"Forbidden by robots.txt: <GET {site.url('/page')}> (") for m in debug)


@pytest_twisted.ensureDeferred
async def test_percent_encoding_canonicalized_before_matching(site: Site) -> None:
    # SPEC B7: /Käyttäjä:, /K%c3%a4... and /K%C3%A4... meet the same rule.
    site.script("/robots.txt", Reply(200, "User-agent: *\nDisallow: /wiki/Käyttäjä:\n".encode()))
    urls = [
        site.url("/wiki/Käyttäjä:Alice"),
        site.url("/wiki/K%c3%a4ytt%c3%a4j%c3%a4:Bob"),
        site.url("/wiki/K%C3%A4ytt%C3%A4j%C3%A4:Carol"),
        site.url("/wiki/Other"),
    ]
    result = await run_crawl(robots_settings(), urls)
    assert result.downloaded == [site.url("/wiki/Other")]
    assert robots_stats(result)["robotstxt/forbidden"] == 3


# --------------------------------------------------------------------------
# Product token (SPEC B7)

AGENT_RULES = b"""\
User-agent: *
Disallow: /star

User-agent: foobot
Disallow: /foo

User-agent: mozilla
Disallow: /moz
"""


@pytest.mark.parametrize(
    ("settings", "headers", "blocked"),
    [
        pytest.param(
            {"ROBOTSTXT_USER_AGENT": "FooBot/1.2 (+http://x)", "USER_AGENT": "Other/1"},
            {},
            "/foo",
            id="B7_setting_first_product",
        ),
        pytest.param(
            {"USER_AGENT": "Mozilla/5.0 (compatible; FooBot/1.0; +http://x)"},
            {},
            "/foo",
            id="B7_compatible_token_wins",
        ),
        pytest.param({"USER_AGENT": "FooBot/3"}, {}, "/foo", id="B7_user_agent_setting"),
        pytest.param(
            {"USER_AGENT": "Other/1"},
            {"User-Agent": "FooBot/2 (+http://x)"},
            "/foo",
            id="B7_request_header_before_user_agent_setting",
        ),
        pytest.param(
            {"ROBOTSTXT_USER_AGENT": "FooBot", "USER_AGENT": "Other/1"},
            {"User-Agent": "Mozilla/5.0 (X11)"},
            "/foo",
            id="B7_robotstxt_user_agent_before_request_header",
        ),
        pytest.param({"USER_AGENT": "Otherbot/1"}, {}, "/star", id="unnamed_crawler_gets_star"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_product_token(
    site: Site, settings: dict[str, Any], headers: dict[str, str], blocked: str
) -> None:
    site.script("/robots.txt", Reply(200, AGENT_RULES))
    paths = ["/star", "/foo", "/moz"]
    requests = [Request(site.url(path), headers=headers) for path in paths]
    result = await run_crawl(robots_settings(**settings), requests)
    assert sorted(result.downloaded) == sorted(site.url(p) for p in paths if p != blocked)


@pytest_twisted.ensureDeferred
async def test_browser_user_agent_matches_mozilla_and_warns_once(site: Site) -> None:
    site.script("/robots.txt", Reply(200, AGENT_RULES))
    agent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)"
    paths = ["/star", "/foo", "/moz", "/moz/2"]
    result = await run_crawl(robots_settings(USER_AGENT=agent), [site.url(p) for p in paths])
    assert sorted(result.downloaded) == sorted([site.url("/star"), site.url("/foo")])
    warnings = [
        message
        for message in result.messages(logging.WARNING, logger=MODULE)
        if "ROBOTSTXT_USER_AGENT" in message
    ]
    assert len(warnings) == 1
    assert "'Mozilla'" in warnings[0]


# --------------------------------------------------------------------------
# HTTP status of robots.txt (SPEC B3)


@pytest.mark.parametrize("status", [401, 403, 404, 410])
@pytest_twisted.ensureDeferred
async def test_4xx_allows_everything(site: Site, status: int) -> None:
    # The body of an error page is never read as rules.
    site.script("/robots.txt", Reply(status, b"User-agent: *\nDisallow: /\n"))
    result = await run_crawl(robots_settings(), [site.url("/a"), site.url("/b")])
    assert sorted(result.downloaded) == [site.url("/a"), site.url("/b")]
    stats = robots_stats(result)
    assert stats["robotstxt/outcome/allow_all"] == 1
    assert stats[f"robotstxt/response_status_count/{status}"] == 1
    assert "robotstxt/forbidden" not in stats


@pytest.mark.parametrize("status", [429, 500, 503])
@pytest_twisted.ensureDeferred
async def test_429_and_5xx_disallow_everything(site: Site, status: int) -> None:
    site.script("/robots.txt", Reply(status, b"User-agent: *\nAllow: /\n"))
    settings = robots_settings(RETRY_ENABLED=False, ROBOTSTXT_UNREACHABLE="disallow")
    result = await run_crawl(settings, [site.url("/a"), site.url("/b")])
    assert result.downloaded == []
    assert site.hits("/a") == site.hits("/b") == 0
    for url in (site.url("/a"), site.url("/b")):
        [failure] = result.failed(url)
        assert failure.check(IgnoreRequest)
        assert "robots.txt unreachable" in str(failure.value)
    stats = robots_stats(result)
    assert stats["robotstxt/outcome/unreachable"] == 1
    assert stats["robotstxt/unreachable/dropped"] == 2
    assert stats[f"robotstxt/response_status_count/{status}"] == 1


@pytest_twisted.ensureDeferred
async def test_robots_request_is_retried_by_the_backoff_only(site: Site) -> None:
    # RetryMiddleware on (RETRY_TIMES=2) does not re-send robots.txt: each
    # attempt is one download, the plugin's backoff spaces them.
    site.script("/robots.txt", Reply(503), Reply(503), Reply(200, b"User-agent: *\nDisallow: /x"))
    settings = robots_settings(
        RETRY_TIMES=2, ROBOTSTXT_RETRY_DELAY=0.1, ROBOTSTXT_RETRY_MAX_DELAY=0.2
    )
    result = await run_crawl(settings, [site.url("/x"), site.url("/y")])
    assert result.downloaded == [site.url("/y")]
    assert site.hits("/robots.txt") == 3
    stats = robots_stats(result)
    assert stats["robotstxt/request_count"] == 3
    assert stats["robotstxt/outcome/unreachable"] == 2
    assert stats["robotstxt/outcome/rules"] == 1
    assert "retry/count" not in result.stats
    assert result.messages(logging.ERROR) == []


async def _unreachable_crawl(url: str, **settings: Any) -> Any:
    """Crawl ``url`` whose robots.txt cannot be fetched; "disallow" mode ends it at once."""
    settings = {"RETRY_ENABLED": False, "ROBOTSTXT_UNREACHABLE": "disallow", **settings}
    result = await run_crawl(robots_settings(**settings), [url])
    assert result.downloaded == []
    [failure] = result.failed(url)
    assert failure.check(IgnoreRequest)
    assert "robots.txt unreachable" in str(failure.value)
    return result


def _exception_stat(result: Any) -> str:
    [key] = [k for k in robots_stats(result) if k.startswith("robotstxt/exception_count/")]
    return key


@pytest_twisted.ensureDeferred
async def test_timeout_is_unreachable(site: Site) -> None:
    site.script("/robots.txt", Reply.hang())
    result = await _unreachable_crawl(site.url("/page"), DOWNLOAD_TIMEOUT=0.5)
    assert "Timeout" in _exception_stat(result)
    assert site.hits("/page") == 0
    warnings = result.messages(logging.WARNING, logger=MODULE)
    assert any(
        "unreachable" in message and "its requests are dropped" in message for message in warnings
    )
    # A network failure is not a bug: no ERROR with a traceback.
    assert result.messages(logging.ERROR, logger=MODULE) == []


@pytest_twisted.ensureDeferred
async def test_refused_connection_is_unreachable(refused_port: RefusedPort) -> None:
    result = await _unreachable_crawl(refused_port.url("/page"))
    assert "Refused" in _exception_stat(result)


@pytest_twisted.ensureDeferred
async def test_unresolvable_host_is_unreachable() -> None:
    result = await _unreachable_crawl(f"http://{UNRESOLVABLE_HOST}/page")
    key = _exception_stat(result)
    assert "DNS" in key or "Resolve" in key


@pytest_twisted.ensureDeferred
async def test_connection_reset_is_unreachable(site: Site) -> None:
    site.script("/robots.txt", Reply.abort())
    await _unreachable_crawl(site.url("/page"))


@pytest_twisted.ensureDeferred
async def test_truncated_body_is_unreachable(site: Site) -> None:
    # Fewer bytes than Content-Length announced (DOWNLOAD_FAIL_ON_DATALOSS).
    site.script("/robots.txt", Reply.truncate(b"User-agent: *\nDisallow: /\n" * 10, after=20))
    await _unreachable_crawl(site.url("/page"))


# --------------------------------------------------------------------------
# Redirects (SPEC B3)


def _chain(site: Site, hops: int, final: Reply) -> None:
    targets = ["/robots.txt"] + [f"/hop{n}" for n in range(1, hops + 1)]
    for source, target in itertools.pairwise(targets):
        site.script(source, Reply.redirect(target))
    site.script(targets[-1], final)


@pytest_twisted.ensureDeferred
async def test_redirect_chain_of_five_hops_is_followed(site: Site) -> None:
    _chain(site, 5, Reply(200, b"User-agent: *\nDisallow: /x\n"))
    # Scrapy's own redirect settings do not limit robots.txt redirects.
    settings = robots_settings(REDIRECT_MAX_TIMES=1)
    result = await run_crawl(settings, [site.url("/x"), site.url("/y")])
    assert result.downloaded == [site.url("/y")]
    assert all(site.hits(f"/hop{n}") == 1 for n in range(1, 6))
    stats = robots_stats(result)
    assert stats["robotstxt/request_count"] == 1  # hops are not fetches
    assert stats["robotstxt/redirect/hops"] == 5
    assert stats["robotstxt/response_status_count/301"] == 5
    assert stats["robotstxt/outcome/rules"] == 1


@pytest_twisted.ensureDeferred
async def test_redirect_chain_of_six_hops_is_as_404(site: Site) -> None:
    _chain(site, 6, Reply(200, b"User-agent: *\nDisallow: /x\n"))
    result = await run_crawl(robots_settings(), [site.url("/x")])
    assert result.downloaded == [site.url("/x")]
    assert site.hits("/hop6") == 0  # the sixth hop is never taken
    stats = robots_stats(result)
    assert stats["robotstxt/redirect/too_many"] == 1
    assert stats["robotstxt/outcome/allow_all"] == 1


@pytest_twisted.ensureDeferred
async def test_redirect_limit_setting(site: Site) -> None:
    _chain(site, 2, Reply(200, b"User-agent: *\nDisallow: /x\n"))
    result = await run_crawl(robots_settings(ROBOTSTXT_MAX_REDIRECTS=1), [site.url("/x")])
    assert result.downloaded == [site.url("/x")]
    assert robots_stats(result)["robotstxt/redirect/too_many"] == 1


@pytest_twisted.ensureDeferred
async def test_redirect_loop_is_as_404(site: Site) -> None:
    site.script("/robots.txt", Reply.redirect("/a"))
    site.script("/a", Reply.redirect(site.url("/robots.txt")))
    result = await run_crawl(robots_settings(), [site.url("/x")])
    assert result.downloaded == [site.url("/x")]
    assert site.hits("/robots.txt") == 1 and site.hits("/a") == 1
    assert robots_stats(result)["robotstxt/redirect/loop"] == 1


@pytest_twisted.ensureDeferred
async def test_cross_origin_redirect_rules_apply_to_the_original_origin(
    make_site: Callable[..., Site],
) -> None:
    first, second = make_site(), make_site()
    first.script("/robots.txt", Reply.redirect(second.url("/shared-robots.txt"), status=302))
    second.script("/shared-robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"))
    second.script("/robots.txt", Reply(404))
    result = await run_crawl(robots_settings(), [first.url("/x"), second.url("/x")])
    assert result.downloaded == [second.url("/x")]
    assert _forbidden(result, first.url("/x"))
    assert second.hits("/shared-robots.txt") == 1
    assert second.hits("/robots.txt") == 1  # its own robots.txt still governs it


@pytest_twisted.ensureDeferred
async def test_redirects_followed_with_redirect_middleware_disabled(site: Site) -> None:
    _chain(site, 3, Reply(200, b"User-agent: *\nDisallow: /x\n"))
    result = await run_crawl(robots_settings(REDIRECT_ENABLED=False), [site.url("/x")])
    assert result.downloaded == []
    assert _forbidden(result, site.url("/x"))


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(Reply(302), id="redirect_without_location"),
        pytest.param(Reply.redirect("data:text/plain,nope"), id="redirect_to_other_scheme"),
        pytest.param(Reply(300, headers={"Location": "/elsewhere"}), id="300_not_followed"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_unfollowable_redirects_are_as_404(site: Site, reply: Reply) -> None:
    site.script("/robots.txt", reply)
    site.script("/elsewhere", Reply(200, b"User-agent: *\nDisallow: /\n"))
    result = await run_crawl(robots_settings(), [site.url("/x")])
    assert result.downloaded == [site.url("/x")]
    assert robots_stats(result)["robotstxt/outcome/allow_all"] == 1
    assert site.hits("/elsewhere") == 0


# --------------------------------------------------------------------------
# Size (SPEC B6) and encodings

EARLY = b"User-agent: *\nDisallow: /early\n"
PADDING = b"# padding to push the next rule past 512,000 bytes\n" * 12_000  # 612,000 bytes
LATE = b"Disallow: /late\n"


@pytest.mark.parametrize(
    "total",
    [pytest.param(10_000_000, id="10MB_with_content_length"), pytest.param(None, id="endless")],
)
@pytest_twisted.ensureDeferred
async def test_huge_robots_txt_only_first_512000_bytes_used(site: Site, total: int | None) -> None:
    site.script("/robots.txt", Reply.stream(EARLY + PADDING + LATE, total=total))
    # DOWNLOAD_MAXSIZE below the announced size must not fail the robots.txt download.
    settings = robots_settings(DOWNLOAD_MAXSIZE=2_000_000)
    result = await run_crawl(settings, [site.url("/early"), site.url("/late")], timeout=30)
    assert result.downloaded == [site.url("/late")]
    [record] = site.requests("/robots.txt")
    await record.done
    # Stopped early: a few socket buffers past the limit, nowhere near 10 MB.
    assert record.body_bytes_sent < 4_000_000
    assert record.disconnected
    stats = robots_stats(result)
    assert stats["robotstxt/truncated"] == 1
    assert stats["robotstxt/outcome/rules"] == 1


@pytest_twisted.ensureDeferred
async def test_max_size_setting(site: Site) -> None:
    site.script("/robots.txt", Reply(200, EARLY + b"Disallow: /beyond\n"))
    settings = robots_settings(ROBOTSTXT_MAX_SIZE=len(EARLY))
    result = await run_crawl(settings, [site.url("/early"), site.url("/beyond")])
    assert result.downloaded == [site.url("/beyond")]


@pytest.mark.parametrize("compression", [True, False], ids=["httpcompression_on", "off"])
@pytest_twisted.ensureDeferred
async def test_gzip_encoded_robots_txt(site: Site, compression: bool) -> None:
    site.script("/robots.txt", Reply(200, EARLY, gzip=True))
    settings = robots_settings(COMPRESSION_ENABLED=compression)
    result = await run_crawl(settings, [site.url("/early"), site.url("/other")])
    assert result.downloaded == [site.url("/other")]
    assert site.requests("/robots.txt")[0].header("Accept-Encoding") == "gzip, deflate"


@pytest.mark.parametrize("compression", [True, False], ids=["httpcompression_on", "off"])
@pytest_twisted.ensureDeferred
async def test_gzip_bomb_costs_no_more_than_a_plain_file(site: Site, compression: bool) -> None:
    # An endless gzip stream: each MiB of content is a few hundred bytes on the wire.
    site.script("/robots.txt", Reply.stream(EARLY + PADDING + LATE, gzip=True, total=None))
    settings = robots_settings(COMPRESSION_ENABLED=compression)
    result = await run_crawl(settings, [site.url("/early"), site.url("/late")], timeout=30)
    assert result.downloaded == [site.url("/late")]
    [record] = site.requests("/robots.txt")
    await record.done
    assert record.disconnected
    assert record.body_bytes_sent < 4_000_000
    assert robots_stats(result)["robotstxt/truncated"] == 1
    # HttpCompressionMiddleware never saw the stopped stream.
    assert not any("DOWNLOAD_MAXSIZE" in m for m in result.messages(logging.WARNING))


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        pytest.param("deflate", zlib.compress(EARLY), id="deflate_zlib"),
        pytest.param("deflate", _raw_deflate(EARLY), id="deflate_raw"),
        pytest.param("x-gzip", gzip.compress(EARLY), id="x_gzip"),
        pytest.param(
            "gzip", gzip_bytes(EARLY[:15]) + gzip_bytes(EARLY[15:]), id="gzip_two_members"
        ),
        pytest.param("gzip", gzip_bytes(EARLY) + b"JUNK AFTER THE MEMBER", id="gzip_trailing_junk"),
        pytest.param("gzip", gzip_bytes(EARLY)[:-8], id="gzip_truncated_trailer"),
        pytest.param("identity", EARLY, id="identity"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_content_encodings(site: Site, encoding: str, body: bytes) -> None:
    site.script("/robots.txt", Reply(200, body, headers={"Content-Encoding": encoding}))
    result = await run_crawl(robots_settings(), [site.url("/early"), site.url("/other")])
    assert result.downloaded == [site.url("/other")]


@pytest_twisted.ensureDeferred
async def test_unasked_encoding_read_as_empty(site: Site) -> None:
    site.script(
        "/robots.txt", Reply(200, b"\x8b\x03\x80garbage", headers={"Content-Encoding": "br"})
    )
    result = await run_crawl(robots_settings(), [site.url("/early")])
    assert result.downloaded == [site.url("/early")]
    assert robots_stats(result)["robotstxt/unsupported_encoding"] == 1
    assert any("not asked for (br)" in m for m in result.messages(logging.WARNING, logger=MODULE))


@pytest.mark.parametrize("compression", [True, False], ids=["httpcompression_on", "off"])
@pytest_twisted.ensureDeferred
async def test_robots_txt_served_from_scrapy_http_cache(
    site: Site, tmp_path: Any, compression: bool
) -> None:
    # HttpCacheMiddleware answers the second crawl's robots.txt request: the
    # cached (gzip) response never streams through bytes_received, yet its
    # rules apply.
    site.script("/robots.txt", Reply(200, EARLY, gzip=True))
    settings = robots_settings(
        HTTPCACHE_ENABLED=True,
        HTTPCACHE_DIR=str(tmp_path / "httpcache"),
        COMPRESSION_ENABLED=compression,
    )
    first = await run_crawl(settings, [site.url("/early"), site.url("/one")])
    second = await run_crawl(settings, [site.url("/early"), site.url("/two")])
    assert first.downloaded == [site.url("/one")]
    assert second.downloaded == [site.url("/two")]
    assert site.hits("/robots.txt") == 1
    assert second.stats.get("httpcache/hit", 0) >= 1
    assert robots_stats(second)["robotstxt/forbidden"] == 1


# --------------------------------------------------------------------------
# Scope (SPEC B1)


@pytest_twisted.ensureDeferred
async def test_http_and_https_are_different_origins(
    site: Site, make_site: Callable[..., Site]
) -> None:
    secure = make_site(tls=True)
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /plain-only\n"))
    secure.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /tls-only\n"))
    urls = [s.url(p) for s in (site, secure) for p in ("/plain-only", "/tls-only")]
    result = await run_crawl(robots_settings(), urls)
    assert sorted(result.downloaded) == sorted([site.url("/tls-only"), secure.url("/plain-only")])
    assert site.hits("/robots.txt") == secure.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_ports_are_different_origins(make_site: Callable[..., Site]) -> None:
    first, second = make_site(), make_site()
    first.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"))
    result = await run_crawl(robots_settings(), [first.url("/x"), second.url("/x")])
    assert result.downloaded == [second.url("/x")]


@pytest_twisted.ensureDeferred
async def test_hosts_compare_case_insensitively(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"))
    urls = [site.url("/x", host="LOCALHOST"), site.url("/y", host="localhost")]
    result = await run_crawl(robots_settings(), urls)
    assert result.downloaded == [site.url("/y", host="localhost")]
    assert site.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_default_port_and_idna_host_are_one_origin(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The site acts as the HTTP proxy (from the environment, as for any
    # request): it sees absolute URLs, so origins can use real names and port 80.
    monkeypatch.setenv("http_proxy", site.url())
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    robots = "http://www.xn--mller-kva.eu/robots.txt"
    site.script(robots, Reply(200, b"User-agent: *\nDisallow: /x\n"))
    urls = [
        "http://www.müller.eu:80/x/1",
        "http://www.xn--mller-kva.eu/x/2",
        "http://WWW.MÜLLER.EU/x/3",
        "http://www.xn--mller-kva.eu:80/y",
    ]
    result = await run_crawl(robots_settings(), urls)
    assert [url.rsplit("/", 1)[-1] for url in result.downloaded] == ["y"]
    assert [record.uri for record in site.requests() if "robots" in record.uri] == [robots]
    assert robots_stats(result)["robotstxt/forbidden"] == 3


@pytest_twisted.ensureDeferred
async def test_ftp_origin_fetches_robots_txt_anonymously(ftp_server: FtpServer) -> None:
    urls = [ftp_server.url("/page.txt"), ftp_server.url("/private/secret.txt")]
    result = await run_crawl(robots_settings(), urls)
    assert result.downloaded == [ftp_server.url("/page.txt")]
    assert ftp_server.hits("/robots.txt") == 1
    assert ftp_server.hits("/private/secret.txt") == 0


# --------------------------------------------------------------------------
# One fetch per origin, every request judged


@pytest_twisted.ensureDeferred
async def test_200_concurrent_first_requests_one_fetch_all_judged(site: Site) -> None:
    # A slow robots.txt, so that every request arrives while the fetch runs.
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /blocked/\n", delay=1.0))
    urls = [site.url(f"/{kind}/{n}") for n in range(100) for kind in ("open", "blocked")]
    result = await run_crawl(robots_settings(CONCURRENT_REQUESTS=32), urls, timeout=30)
    assert site.hits("/robots.txt") == 1
    assert sorted(result.downloaded) == sorted(url for url in urls if "/open/" in url)
    assert all(_forbidden(result, url) for url in urls if "/blocked/" in url)
    stats = robots_stats(result)
    assert stats["robotstxt/forbidden"] == 100
    assert stats["robotstxt/request_count"] == 1
    if CAN_PARK:  # else the first 32 waited in the downloader, the rest came later
        assert stats["robotstxt/parked"] == 200


@pytest_twisted.ensureDeferred
async def test_robots_request_goes_through_other_middlewares(site: Site) -> None:
    seen: list[Request] = []

    class Recorder:
        def process_request(self, request: Request, spider: Any = None) -> None:
            request.headers[b"X-Seen-By"] = b"recorder"
            seen.append(request)

    settings = robots_settings(extra={Recorder: 50})
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"))
    result = await run_crawl(settings, [site.url("/x")])
    assert result.downloaded == []
    [robots] = [request for request in seen if request.url.endswith("/robots.txt")]
    from scrapy.http.request import NO_CALLBACK

    assert robots.priority == 1000
    assert robots.callback is NO_CALLBACK
    assert robots.meta["dont_obey_robotstxt"] is True
    assert robots.meta["robotstxt_origin"] == f"http://127.0.0.1:{site.port}"
    assert site.requests("/robots.txt")[0].header("X-Seen-By") == "recorder"


@pytest.mark.parametrize(
    ("encoded", "counted"),
    [
        # Content-Length within the limit: the body needs no counting as it arrives.
        pytest.param(False, False, id="plain"),
        # Compressed: inflated (and capped) as it arrives.
        pytest.param(True, True, id="gzip"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_size_handlers_listen_only_while_a_robots_txt_download_needs_them(
    site: Site, encoded: bool, counted: bool
) -> None:
    # Issue 11: the headers_received / bytes_received handlers that cap
    # robots.txt are connected only while a robots.txt download needs them,
    # so page downloads pay nothing for them.
    from pydispatch import dispatcher
    from scrapy import signals

    from scrapy_googlerobots.fetching.fetcher import RobotsFetcher

    body = b"User-agent: *\nDisallow: /no\n"
    if encoded:
        site.script("/robots.txt", Reply(200, gzip_bytes(body), {"Content-Encoding": "gzip"}))
    else:
        site.script("/robots.txt", Reply(200, body))
    listening: dict[str, tuple[bool, bool]] = {}

    def ours(signal: Any, crawler: Any) -> bool:
        receivers = dispatcher.liveReceivers(
            dispatcher.getAllReceivers(crawler.signals.sender, signal)
        )
        return any(isinstance(getattr(r, "__self__", None), RobotsFetcher) for r in receivers)

    def on_response(response: Any, request: Any, spider: Any) -> None:
        listening[response.url.rsplit("/", 1)[-1]] = (
            ours(signals.headers_received, spider.crawler),
            ours(signals.bytes_received, spider.crawler),
        )

    spider = spider_with_signals(response_received=on_response)
    urls = [site.url("/a"), site.url("/b"), site.url("/no/x")]
    result = await run_crawl(robots_settings(), urls, spider_cls=spider, timeout=30)
    assert sorted(result.downloaded) == urls[:2]
    assert listening == {"robots.txt": (True, counted), "a": (False, False), "b": (False, False)}


@pytest_twisted.ensureDeferred
async def test_forbidden_line_names_the_deciding_rule_and_the_summary_counts_it(
    make_site: Callable[..., Site],
) -> None:
    # Issue 12: every decision traceable; one INFO block at the end of the crawl.
    rules, missing, down = make_site(), make_site(), make_site()
    rules.script(
        "/robots.txt",
        Reply(
            200,
            b"User-agent: *\nAllow: /\n\nUser-agent: mybot\nDisallow: /private/\nDisallow: /tmp\n",
        ),
    )
    missing.script("/robots.txt", Reply(404))
    down.script("/robots.txt", Reply(503))
    urls = [
        *(rules.url(f"/private/{n}") for n in range(3)),
        rules.url("/tmp/x"),
        rules.url("/open"),
        missing.url("/private/y"),
        down.url("/z"),
    ]
    settings = robots_settings(
        ROBOTSTXT_USER_AGENT="MyBot/1.0", ROBOTSTXT_UNREACHABLE="disallow", RETRY_ENABLED=False
    )
    result = await run_crawl(settings, urls, timeout=30)
    assert sorted(result.downloaded) == sorted([rules.url("/open"), missing.url("/private/y")])
    assert all(
        failure.value.args == ("Forbidden by robots.txt",)
        for url in urls[:4]
        for failure in result.failed(url)
    )
    forbidden = [
        m for m in result.messages(logging.DEBUG) if m.startswith("Forbidden by robots.txt")
    ]
    robots = rules.url("/robots.txt")
    expected = f'({robots} line 5: "Disallow: /private/", group "mybot")'
    assert f"<GET {rules.url('/private/0')}> {expected}" in "\n".join(forbidden)
    # A drop for an unreachable robots.txt says what it answered and since when.
    [drop] = [m for m in result.messages(logging.INFO) if m.startswith("Dropped")]
    assert drop.startswith(f"Dropped <GET {down.url('/z')}>: robots.txt unreachable for ")
    assert "[robots.txt: HTTP 503; unreachable since 20" in drop
    assert drop.endswith(" UTC, 1 attempt(s)]")
    [block] = [m for m in result.messages(logging.INFO) if m.startswith("robots.txt summary:")]
    lines = block.splitlines()
    assert (
        lines[0] == "robots.txt summary: 3 origins checked (1 2xx, 1 allow-all 4xx, 1 unreachable)"
    )
    assert lines[1] == "  requests: 4 forbidden, 0 deferred, 0 released, 1 dropped"
    assert lines[3].split() == [
        "3",
        rules.url("/robots.txt"),
        "line",
        "5:",
        "Disallow:",
        "/private/",
    ]
    assert lines[4].split() == ["1", rules.url("/robots.txt"), "line", "6:", "Disallow:", "/tmp"]
    summary = our_middleware(result.crawler).summary
    assert summary.answers[f"http://127.0.0.1:{down.port}"] == "unreachable"
    assert summary.answer_for(down.url("/any/page")) == "unreachable"
    assert summary.answer_for(missing.url("/")) == "allow-all 4xx"
    assert summary.answer_for("data:,x") is None


@pytest_twisted.ensureDeferred
async def test_errbacks_and_explain_name_the_deciding_rule(
    make_site: Callable[..., Site],
) -> None:
    # Issue 12: code (the example project's report) reads the decision from the
    # product instead of parsing robots.txt again.
    rules, missing = make_site(), make_site()
    rules.script(
        "/robots.txt",
        Reply(200, b"User-agent: *\nDisallow: /\n\nUser-agent: mybot\nAllow: /ok\nDisallow: /no\n"),
    )
    missing.script("/robots.txt", Reply(404))
    urls = [rules.url("/no/1"), rules.url("/ok/2"), rules.url("/other"), missing.url("/x")]
    explained: dict[str, RobotsDecision | None] = {}
    not_fetched: list[RobotsDecision | None] = []
    explained_data = None

    def on_response(response: Any, request: Any, spider: Any) -> None:
        # While the crawl runs: the store is emptied when the spider closes.
        nonlocal explained_data
        middleware = our_middleware(spider.crawler)
        explained[request.url] = middleware.explain(request)
        if not not_fetched:
            not_fetched.append(middleware.explain(Request(make_site().url("/a"))))
            explained_data = middleware.explain(Request("data:,hello"))

    settings = robots_settings(ROBOTSTXT_USER_AGENT="MyBot/1.0", RETRY_ENABLED=False)
    spider = spider_with_signals(response_received=on_response)
    result = await run_crawl(settings, urls, spider_cls=spider, timeout=30)
    assert sorted(result.downloaded) == sorted([rules.url("/ok/2"), rules.url("/other"), urls[3]])
    [failure] = result.failed(urls[0])
    # Scrapy's own exception and message: stats and code written for the stock class agree.
    assert type(failure.value) is IgnoreRequest
    assert str(failure.value) == "Forbidden by robots.txt"
    stat = "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest"
    assert result.stats[stat] == 1
    robots = rules.url("/robots.txt")
    decision = forbidden_by(failure)
    assert decision == RobotsDecision(urls[0], robots, False, 6, "/no", "mybot", "MyBot")
    assert forbidden_by(failure.value) is decision
    assert str(decision) == f'{robots} line 6: "Disallow: /no", group "mybot"'
    assert forbidden_by(IgnoreRequest("Forbidden by robots.txt")) is None

    ok, other, none = (explained[url] for url in urls[1:])
    assert ok is not None and (ok.allowed, ok.line, ok.directive) == (True, 5, "Allow: /ok")
    assert other is not None and (other.allowed, other.line, other.rule) == (True, 0, None)
    assert str(other) == f"{robots}: no rule matched"
    assert none is not None and (none.allowed, none.has_rules) == (True, False)
    assert not_fetched == [None]
    assert explained_data is None


@pytest_twisted.ensureDeferred
async def test_robotstxt_summary_false_logs_no_block(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"))
    result = await run_crawl(robots_settings(ROBOTSTXT_SUMMARY=False), [site.url("/x")])
    assert not [m for m in result.messages(logging.INFO) if m.startswith("robots.txt summary:")]
