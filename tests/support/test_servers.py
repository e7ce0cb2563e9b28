"""The test servers themselves: every feature other tests rely on, proven over real sockets.

Raw HTTP features are checked with Twisted's Agent (no Scrapy in between);
https, ftp, refused and unresolvable hosts, and run_crawl with small Scrapy
crawls (the stock robots middleware is off by default: ROBOTSTXT_OBEY=False).
"""

from __future__ import annotations

import gzip
import logging
import socket
import zlib
from collections.abc import Callable
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from twisted.internet import defer, protocol, ssl
from twisted.python.failure import Failure
from twisted.web.client import Agent, BrowserLikePolicyForHTTPS, Response, ResponseDone
from twisted.web.http_headers import Headers

from servers import UNRESOLVABLE_HOST, FtpServer, RefusedPort, Reply, Site, run_crawl

# --------------------------------------------------------------------------
# helpers


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


async def _get(url: str, headers: dict[str, str] | None = None, agent: Any = None) -> Response:
    agent = agent or Agent(_reactor())
    raw = Headers({name: [value] for name, value in (headers or {}).items()})
    response: Response = await agent.request(b"GET", url.encode(), raw)
    return response


async def _fetch(url: str, **kwargs: Any) -> tuple[Response, bytes]:
    response = await _get(url, **kwargs)
    return response, await _read(response)


class _BodyReader(protocol.Protocol):
    """Collects a response body; with ``limit``, drops the connection once that much arrived."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.data = bytearray()
        self.finished: defer.Deferred[bytes] = defer.Deferred()

    def dataReceived(self, data: bytes) -> None:
        self.data += data
        if self.limit is not None and len(self.data) >= self.limit and self.transport:
            self.transport.stopProducing()

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        if self.limit is None and not reason.check(ResponseDone):
            self.finished.errback(reason)  # truncated or reset: the download failed
        else:
            self.finished.callback(bytes(self.data))


async def _read(response: Response, limit: int | None = None) -> bytes:
    reader = _BodyReader(limit)
    response.deliverBody(reader)
    return await reader.finished


async def _take(url: str, limit: int) -> bytes:
    return await _read(await _get(url), limit)


def _header(response: Response, name: str) -> list[str]:
    return [value.decode() for value in response.headers.getRawHeaders(name.encode(), [])]


# --------------------------------------------------------------------------
# Site: plain replies, scripts, records


@pytest_twisted.ensureDeferred
async def test_unscripted_path_gets_default_page(site: Site) -> None:
    response, body = await _fetch(site.url("/anything?q=1"), headers={"X-Probe": "yes"})
    assert (response.code, body) == (200, b"page")
    [record] = site.requests("/anything")
    assert (record.method, record.uri, record.path) == ("GET", "/anything?q=1", "/anything")
    assert record.header("x-probe") == "yes"
    assert record.header("X-PROBE") == "yes"
    assert record.header("missing") is None
    assert record.done.called and not record.disconnected
    assert record.body_bytes_sent == len(b"page")


@pytest_twisted.ensureDeferred
async def test_script_queue_last_reply_repeats(site: Site) -> None:
    site.script("/robots.txt", Reply(503), Reply(429), Reply(200, b"user-agent: *"))
    seen = [(await _fetch(site.url("/robots.txt"))) for _ in range(5)]
    assert [response.code for response, _ in seen] == [503, 429, 200, 200, 200]
    assert seen[-1][1] == b"user-agent: *"
    assert site.hits("/robots.txt") == 5
    assert site.hits("/other") == 0


@pytest_twisted.ensureDeferred
async def test_script_with_query_wins_over_path(site: Site) -> None:
    site.script("/a", Reply(200, b"path"))
    site.script("/a?x=1", Reply(200, b"query"))
    assert (await _fetch(site.url("/a?x=1")))[1] == b"query"
    assert (await _fetch(site.url("/a?x=2")))[1] == b"path"
    assert site.hits("/a") == 2


@pytest_twisted.ensureDeferred
async def test_reply_headers_single_and_multi_valued(site: Site) -> None:
    site.script(
        "/h",
        Reply(
            200,
            b"x",
            {
                "Cache-Control": "max-age=120",
                "Set-Cookie": ["a=1", "b=2"],
                "Content-Type": "text/plain",
            },
        ),
    )
    response, _ = await _fetch(site.url("/h"))
    assert _header(response, "Cache-Control") == ["max-age=120"]
    assert _header(response, "Set-Cookie") == ["a=1", "b=2"]
    assert _header(response, "Content-Type") == ["text/plain"]


@pytest.mark.parametrize("status", [200, 401, 403, 404, 410, 429, 500, 503])
@pytest_twisted.ensureDeferred
async def test_any_status(site: Site, status: int) -> None:
    site.script("/robots.txt", Reply(status, b"body"))
    response, body = await _fetch(site.url("/robots.txt"))
    assert (response.code, body) == (status, b"body")


@pytest_twisted.ensureDeferred
async def test_delay_uses_a_timer(site: Site) -> None:
    site.script("/slow", Reply(200, b"late", delay=0.3))
    reactor = _reactor()
    started = reactor.seconds()
    _, body = await _fetch(site.url("/slow"))
    # A reactor timer never fires early: a lower bound, not a threshold.
    assert reactor.seconds() - started >= 0.3
    assert body == b"late"


@pytest_twisted.ensureDeferred
async def test_redirect_reply(site: Site, make_site: Callable[..., Site]) -> None:
    other = make_site()
    site.script("/robots.txt", Reply.redirect(other.url("/robots.txt"), status=302))
    response, body = await _fetch(site.url("/robots.txt"))
    assert response.code == 302
    assert _header(response, "Location") == [other.url("/robots.txt")]
    assert body == b""


@pytest_twisted.ensureDeferred
async def test_wait_for_hits(site: Site) -> None:
    waiting = site.wait_for_hits("/x", 2, timeout=10)
    await _fetch(site.url("/x"))
    assert not waiting.called
    await _fetch(site.url("/x"))
    assert waiting.called
    # Already reached: fires at once.
    await site.wait_for_hits("/x", 1)


@pytest_twisted.ensureDeferred
async def test_wait_for_hits_times_out(site: Site) -> None:
    with pytest.raises(defer.TimeoutError):
        await site.wait_for_hits("/never", 1, timeout=0.05)


@pytest_twisted.ensureDeferred
async def test_several_sites_are_several_origins(make_site: Callable[..., Site]) -> None:
    sites = [make_site() for _ in range(3)]
    assert len({each.port for each in sites}) == 3
    for index, each in enumerate(sites):
        each.script("/id", Reply(200, str(index).encode()))
    bodies = [(await _fetch(each.url("/id")))[1] for each in sites]
    assert bodies == [b"0", b"1", b"2"]
    assert [each.hits("/id") for each in sites] == [1, 1, 1]


# --------------------------------------------------------------------------
# Site: bodies (gzip, streams)


@pytest_twisted.ensureDeferred
async def test_gzip_reply(site: Site) -> None:
    content = b"user-agent: *\ndisallow: /private\n" * 100
    site.script("/robots.txt", Reply(200, content, gzip=True))
    response, raw = await _fetch(site.url("/robots.txt"))
    assert _header(response, "Content-Encoding") == ["gzip"]
    assert len(raw) < len(content)
    assert gzip.decompress(raw) == content


@pytest_twisted.ensureDeferred
async def test_finite_stream_sends_everything(site: Site) -> None:
    total = 3_000_000
    site.script("/big", Reply.stream(b"user-agent: *\n", fill=b"#", total=total))
    response, body = await _fetch(site.url("/big"))
    assert response.length == total  # sent as Content-Length
    assert len(body) == total
    assert body.startswith(b"user-agent: *\n#")
    assert body.count(b"#") == total - len(b"user-agent: *\n")
    [record] = site.requests("/big")
    assert record.body_bytes_sent == total and not record.disconnected


@pytest_twisted.ensureDeferred
async def test_endless_stream_stops_when_client_leaves(site: Site) -> None:
    site.script("/endless", Reply.stream(b"start\n"))
    data = await _take(site.url("/endless"), 1_000_000)
    assert data.startswith(b"start\n\n\n")
    [record] = site.requests("/endless")
    await record.done
    assert record.disconnected
    # The producer only writes as the client reads: what was sent is what the
    # client took plus what socket buffers hold, nowhere near "endless".
    assert 1_000_000 <= record.body_bytes_sent < 64_000_000


@pytest_twisted.ensureDeferred
async def test_huge_stream_counts_bytes_sent_before_disconnect(site: Site) -> None:
    total = 1_000_000_000
    site.script("/huge", Reply.stream(fill=b"x", total=total))
    await _take(site.url("/huge"), 512_000)
    [record] = site.requests("/huge")
    await record.done
    assert record.disconnected
    assert 512_000 <= record.body_bytes_sent < total // 10


@pytest_twisted.ensureDeferred
async def test_gzip_bomb_finite(site: Site) -> None:
    total = 5_000_000
    prefix = b"user-agent: *\ndisallow: /a\n"
    site.script("/robots.txt", Reply.stream(prefix, total=total, gzip=True))
    response, raw = await _fetch(site.url("/robots.txt"))
    assert _header(response, "Content-Encoding") == ["gzip"]
    assert len(raw) < total // 100  # a bomb: tiny on the wire
    plain = gzip.decompress(raw)  # checks the CRC and length trailer too
    assert len(plain) == total
    assert plain.startswith(prefix + b"\n\n")
    assert plain.count(b"\n") == total - len(prefix) + prefix.count(b"\n")


@pytest_twisted.ensureDeferred
async def test_gzip_bomb_endless(site: Site) -> None:
    site.script("/robots.txt", Reply.stream(b"user-agent: *\n", gzip=True))
    raw = await _take(site.url("/robots.txt"), 20_000)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    plain = inflater.decompress(raw, 10_000_000)
    assert plain.startswith(b"user-agent: *\n\n\n")
    assert len(plain) > 100 * len(raw)
    [record] = site.requests("/robots.txt")
    await record.done
    assert record.disconnected


# --------------------------------------------------------------------------
# Site: misbehaviour (hang, abort, reset, truncate)


@pytest_twisted.ensureDeferred
async def test_hang_until_teardown(site: Site) -> None:
    site.script("/hang", Reply.hang())
    pending = defer.ensureDeferred(_get(site.url("/hang")))
    await site.wait_for_hits("/hang", 1)
    [record] = site.requests("/hang")
    assert not pending.called and not record.done.called
    await site.stop()  # what the fixture does at teardown
    with pytest.raises(Exception, match=r"ResponseNeverReceived|ConnectionLost|ConnectionDone"):
        await pending
    assert record.done.called and record.disconnected


@pytest.mark.parametrize(
    ("reply", "sent"),
    [
        pytest.param(Reply.abort(), 0, id="abort_before_response"),
        pytest.param(Reply.reset(b"x" * 100_000, after=10_000), 10_000, id="reset_mid_body"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_connection_reset_fails_download(site: Site, reply: Reply, sent: int) -> None:
    site.script("/drop", reply)
    with pytest.raises(Exception):  # noqa: B017 - before or after headers, both fail
        await _fetch(site.url("/drop"))
    [record] = site.requests("/drop")
    await record.done
    assert record.disconnected and record.body_bytes_sent == sent


@pytest_twisted.ensureDeferred
async def test_truncate_mid_body_is_data_loss(site: Site) -> None:
    site.script("/cut", Reply.truncate(b"y" * 50_000, after=1_000))
    response = await _get(site.url("/cut"))
    assert response.length == 50_000  # the full size was announced
    with pytest.raises(Exception, match=r"DataLoss"):
        await _read(response)
    [record] = site.requests("/cut")
    await record.done
    assert record.disconnected and record.body_bytes_sent == 1_000


@pytest_twisted.ensureDeferred
async def test_stop_closes_keep_alive_connections(site: Site) -> None:
    from twisted.web.client import HTTPConnectionPool

    pool = HTTPConnectionPool(_reactor(), persistent=True)
    agent = Agent(_reactor(), pool=pool)
    await _fetch(site.url("/a"), agent=agent)
    assert site._channels  # the pooled connection is still open
    await site.stop()
    assert not site._channels
    await pool.closeCachedConnections()


# --------------------------------------------------------------------------
# https, ftp, refused, unresolvable


@pytest_twisted.ensureDeferred
async def test_https_certificate_valid_for_localhost_and_ip(https_site: Site) -> None:
    assert https_site.certificate_pem is not None
    trust = ssl.Certificate.loadPEM(https_site.certificate_pem)
    agent = Agent(_reactor(), contextFactory=BrowserLikePolicyForHTTPS(trustRoot=trust))
    https_site.script("/robots.txt", Reply(200, b"secure"))
    for host in ("localhost", "127.0.0.1"):
        response, body = await _fetch(https_site.url("/robots.txt", host=host), agent=agent)
        assert (response.code, body) == (200, b"secure")


@pytest_twisted.ensureDeferred
async def test_https_untrusted_by_strict_client(https_site: Site) -> None:
    # Proves TLS really is on: a verifying client without the trust root refuses.
    with pytest.raises(Exception, match=r"SSL|certificate|ResponseNeverReceived"):
        await _get(https_site.url("/"))


@pytest_twisted.ensureDeferred
async def test_scrapy_accepts_self_signed_https(site: Site, https_site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"plain"))
    https_site.script("/robots.txt", Reply(200, b"tls"))
    assert site.url("/").startswith("http://") and https_site.url("/").startswith("https://")
    result = await run_crawl({}, [site.url("/robots.txt"), https_site.url("/robots.txt")])
    assert sorted(result.downloaded) == sorted(
        [site.url("/robots.txt"), https_site.url("/robots.txt")]
    )
    assert https_site.hits("/robots.txt") == 1 and site.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_ftp_anonymous_download(ftp_server: FtpServer) -> None:
    result = await run_crawl(
        {},
        [ftp_server.url("/robots.txt"), ftp_server.url("/page.txt"), ftp_server.url("/nope.txt")],
    )
    assert sorted(result.downloaded) == sorted(
        [ftp_server.url("/robots.txt"), ftp_server.url("/page.txt"), ftp_server.url("/nope.txt")]
    )
    assert (ftp_server.url("/nope.txt"), 404) in result.responses  # Scrapy maps 550 to 404
    assert ftp_server.hits("/robots.txt") == 1
    assert ftp_server.hits("/page.txt") == 1


@pytest_twisted.ensureDeferred
async def test_ftp_serves_given_files(make_ftp: Callable[..., FtpServer]) -> None:
    server = make_ftp({"/robots.txt": b"User-agent: *\nDisallow: /\n", "/deep/dir/f.txt": b"f"})
    assert (server.root / "deep" / "dir" / "f.txt").read_bytes() == b"f"
    bodies: list[bytes] = []

    def keep(response: Any) -> None:
        bodies.append(response.body)

    result = await run_crawl({}, [Request(server.url("/robots.txt"), callback=keep)])
    assert result.downloaded == [server.url("/robots.txt")]
    assert bodies == [b"User-agent: *\nDisallow: /\n"]


def test_refused_port_refuses(refused_port: RefusedPort) -> None:
    with socket.socket() as client:
        client.settimeout(5)
        with pytest.raises(ConnectionRefusedError):
            client.connect(("127.0.0.1", refused_port.port))


def test_refused_port_stays_taken(refused_port: RefusedPort) -> None:
    with socket.socket() as other, pytest.raises(OSError):
        other.bind(("127.0.0.1", refused_port.port))


@pytest_twisted.ensureDeferred
async def test_scrapy_sees_refused_and_unresolvable(refused_port: RefusedPort) -> None:
    unresolvable = f"http://{UNRESOLVABLE_HOST}/robots.txt"
    result = await run_crawl(
        {"RETRY_ENABLED": False}, [refused_port.url("/robots.txt"), unresolvable]
    )
    assert result.downloaded == []
    [refused] = result.failed(refused_port.url("/robots.txt"))
    assert "refused" in str(refused.value).lower()
    [dns] = result.failed(unresolvable)
    assert "dns" in str(dns.value).lower() or "resolve" in str(dns.value).lower()


# --------------------------------------------------------------------------
# run_crawl


@pytest_twisted.ensureDeferred
async def test_run_crawl_result(site: Site) -> None:
    site.script("/gone", Reply(404))
    result = await run_crawl({"LOG_LEVEL": "INFO"}, [site.url("/a"), site.url("/gone")])
    assert sorted(result.downloaded) == sorted([site.url("/a"), site.url("/gone")])
    assert sorted(result.responses) == sorted([(site.url("/a"), 200), (site.url("/gone"), 404)])
    # HttpErrorMiddleware turns the 404 into an errback call.
    assert [failure.type.__name__ for failure in result.failed(site.url("/gone"))] == ["HttpError"]
    assert result.stats["downloader/response_count"] == 2
    assert result.stats["downloader/response_status_count/404"] == 1
    assert any("Spider opened" in message for message in result.messages(logging.INFO))
    assert result.messages(logging.DEBUG, logger="scrapy.core.engine")
    assert result.messages(logging.CRITICAL) == []


@pytest_twisted.inlineCallbacks
def test_run_crawl_with_inline_callbacks(site: Site) -> Any:
    result = yield run_crawl({}, [site.url("/x")])
    assert result.downloaded == [site.url("/x")]


@pytest_twisted.ensureDeferred
async def test_run_crawl_records_ignore_request_and_drops(site: Site) -> None:
    class Refuse:
        def process_request(self, request: Request, spider: Any = None) -> None:
            if request.url.endswith("/blocked"):
                raise IgnoreRequest("blocked by test")

    result = await run_crawl(
        {"DOWNLOADER_MIDDLEWARES": {Refuse: 50}},
        [site.url("/blocked"), site.url("/ok"), site.url("/ok")],
    )
    assert result.downloaded == [site.url("/ok")]
    assert result.dropped == [site.url("/ok")]  # duplicate filter
    [failure] = result.failed(site.url("/blocked"))
    assert failure.check(IgnoreRequest)
    assert site.hits("/blocked") == 0


@pytest_twisted.ensureDeferred
async def test_run_crawl_timeout_stops_a_stuck_crawl(site: Site) -> None:
    site.script("/hang", Reply.hang())
    reactor = _reactor()
    started = reactor.seconds()
    with pytest.raises(defer.TimeoutError, match=r"still running after 0\.5 s"):
        # The graceful stop ends once the hanging download times out (1 s).
        await run_crawl({"DOWNLOAD_TIMEOUT": 1}, [site.url("/hang")], timeout=0.5)
    assert reactor.seconds() - started >= 0.5


@pytest_twisted.ensureDeferred
async def test_run_crawl_custom_spider(site: Site) -> None:
    from scrapy import Spider

    class Follow(Spider):
        name = "follow"

        def parse(self, response: Any) -> Any:
            if response.url.endswith("/first"):
                yield response.follow("/second")

    result = await run_crawl({}, [site.url("/first")], spider_cls=Follow)
    assert result.downloaded == [site.url("/first"), site.url("/second")]
