"""Local servers for real crawls in tests, all on the reactor the tests run on.

Every server binds 127.0.0.1 port 0 and reports its URL; nothing picks a port
and reopens it. Fixtures in ``conftest.py`` start and stop them; this module
holds the machinery and :func:`run_crawl`.

- :class:`Site`: one HTTP (or, with ``tls=True``, HTTPS) origin whose answers
  are scripted per path with :class:`Reply` objects (a queue; the last one
  repeats). Unscripted paths answer 200 ``page``. Every request is recorded.
- :class:`FtpServer`: Twisted's FTP server, anonymous login, serving files
  from a directory.
- :class:`RefusedPort`: a TCP port on which connections are refused.
- :func:`run_crawl`: one real Scrapy crawl (``CrawlerRunner``) on the running
  reactor, returning a :class:`CrawlResult`.
"""

from __future__ import annotations

import datetime
import gzip
import ipaddress
import logging
import socket
import struct
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import scrapy
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from OpenSSL import SSL
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler, CrawlerRunner
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import deferred_from_coro
from twisted.cred.checkers import AllowAnonymousAccess
from twisted.cred.portal import Portal
from twisted.internet import defer, protocol
from twisted.internet.base import DelayedCall
from twisted.internet.interfaces import IListeningPort, IOpenSSLServerConnectionCreator
from twisted.python.failure import Failure
from twisted.web import http, resource, server
from zope.interface import implementer

__all__ = [
    "UNRESOLVABLE_HOST",
    "CrawlResult",
    "FtpServer",
    "RecordedRequest",
    "RefusedPort",
    "Reply",
    "Site",
    "gzip_bytes",
    "run_crawl",
]

#: A host name that never resolves (RFC 6761 reserves ``.invalid``).
UNRESOLVABLE_HOST = "robots-test.invalid"

LOOPBACK = "127.0.0.1"


def _reactor() -> Any:
    # Imported late: importing it at module level (this module is imported by
    # conftest) would install the default reactor before pytest-twisted
    # installs the one asked for with --reactor.
    from twisted.internet import reactor

    return reactor


# --------------------------------------------------------------------------
# Scripted replies


@dataclass(frozen=True)
class Reply:
    """One scripted answer of a :class:`Site`.

    ``status``/``body``/``headers`` are sent after ``delay`` seconds (a
    reactor timer, never a sleep). ``gzip=True`` gzip-encodes the body and
    sets ``Content-Encoding``. ``mode`` selects special behaviour; build those
    with the class methods rather than by hand.
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    delay: float = 0.0
    gzip: bool = False
    # "send" | "hang" | "stream" | "abort" | "reset" | "truncate"
    mode: str = "send"
    # stream: body = ``body`` then ``fill`` repeated, ``total`` bytes in all
    # (None = endless), written ``chunk_size`` bytes at a time as the client reads.
    fill: bytes = b"\n"
    total: int | None = None
    chunk_size: int = 65_536
    # reset / truncate: body bytes written before the connection goes.
    after: int = 0

    @classmethod
    def redirect(cls, location: str, status: int = 301) -> Reply:
        """A redirect to ``location`` (absolute or relative URL)."""
        return cls(status=status, headers={"Location": location})

    @classmethod
    def hang(cls) -> Reply:
        """Never answer; the connection stays open until the client or teardown closes it."""
        return cls(mode="hang")

    @classmethod
    def stream(
        cls,
        prefix: bytes = b"",
        *,
        fill: bytes = b"\n",
        total: int | None = None,
        status: int = 200,
        headers: Mapping[str, str | Sequence[str]] | None = None,
        gzip: bool = False,
        chunk_size: int = 65_536,
    ) -> Reply:
        """A huge (``total`` bytes) or endless (``total=None``) body, ``prefix`` then ``fill``.

        Chunks are written only as fast as the client reads, so the bytes
        counted in :attr:`RecordedRequest.body_bytes_sent` track what the
        client really took. With ``gzip=True`` the wire carries a gzip member
        of that content (``total`` counts decompressed bytes): a gzip bomb.
        A known plain ``total`` is announced in ``Content-Length``; otherwise
        the body is chunked.
        """
        if not fill:
            raise ValueError("fill must not be empty")
        return cls(
            status=status,
            body=prefix,
            headers=dict(headers or {}),
            gzip=gzip,
            mode="stream",
            fill=fill,
            total=total,
            chunk_size=chunk_size,
        )

    @classmethod
    def abort(cls) -> Reply:
        """Reset the connection (TCP RST) without sending anything."""
        return cls(mode="abort")

    @classmethod
    def reset(cls, body: bytes, after: int, status: int = 200) -> Reply:
        """Send headers (full ``Content-Length``) and ``after`` body bytes, then reset (RST).

        Whether the client saw the headers before the reset is up to the
        network stack; either way its download fails.
        """
        return cls(status=status, body=body, mode="reset", after=after)

    @classmethod
    def truncate(cls, body: bytes, after: int, status: int = 200) -> Reply:
        """Send headers (full ``Content-Length``) and ``after`` body bytes, then close cleanly.

        The client sees a response shorter than announced (data loss).
        """
        return cls(status=status, body=body, mode="truncate", after=after)


DEFAULT_REPLY = Reply(200, b"page", {"Content-Type": "text/html"})


def gzip_bytes(data: bytes) -> bytes:
    """``data`` as a gzip member (for a hand-built ``Content-Encoding: gzip`` reply)."""
    return gzip.compress(data, mtime=0)


@dataclass(eq=False)
class RecordedRequest:
    """One request a :class:`Site` received, and what happened to its answer."""

    method: str
    uri: str
    path: str
    headers: dict[str, list[str]]
    body: bytes
    #: When it arrived (time.monotonic()).
    at: float = field(default_factory=time.monotonic)
    #: Body bytes handed to the connection (streams count as the client reads).
    body_bytes_sent: int = 0
    #: The connection was lost before the response was complete.
    disconnected: bool = False
    #: Fires (with None) once the response is complete or the connection is lost.
    done: defer.Deferred[None] = field(default_factory=defer.Deferred, repr=False)

    def header(self, name: str) -> str | None:
        """The last value of header ``name`` (case-insensitive), or None."""
        values = self.headers.get(name.lower())
        return values[-1] if values else None


# --------------------------------------------------------------------------
# Site


class Site:
    """One scriptable HTTP(S) origin on 127.0.0.1, port chosen by the OS.

    ``site.script("/robots.txt", Reply(503), Reply(200, b"..."))`` queues
    answers for a path (matched on the path, or on path+query when a script
    for that exists); the last one repeats. :meth:`hits` and :meth:`requests`
    tell what came in; :meth:`wait_for_hits` waits for it.
    """

    def __init__(self, *, tls: bool = False) -> None:
        self.tls = tls
        self.certificate_pem: bytes | None = None
        self._scripts: dict[str, list[Reply]] = {}
        self._log: list[RecordedRequest] = []
        self._waiters: list[tuple[str, int, defer.Deferred[None]]] = []
        self._timers: set[DelayedCall] = set()
        self._channels: set[_TrackedChannel] = set()
        self._port: IListeningPort | None = None

    # -- lifecycle --

    def start(self) -> Site:
        """Start listening; returns self."""
        factory = _TrackingSite(_Dispatcher(self), self._channels)
        if self.tls:
            key_pem, self.certificate_pem = self_signed_certificate()
            self._port = _reactor().listenSSL(
                0, _NoAlpn(factory), _ServerTLS(key_pem, self.certificate_pem), interface=LOOPBACK
            )
        else:
            self._port = _reactor().listenTCP(0, factory, interface=LOOPBACK)
        return self

    def stop(self) -> defer.Deferred[Any]:
        """Stop listening, cancel timers, drop open connections; fires when all is closed."""
        for timer in list(self._timers):
            if timer.active():
                timer.cancel()
        self._timers.clear()
        waits: list[defer.Deferred[Any]] = []
        if self._port is not None:
            waits.append(defer.maybeDeferred(self._port.stopListening))
            self._port = None
        for channel in list(self._channels):
            if channel.transport is not None:
                waits.append(channel.lost)
                channel.transport.abortConnection()
        self._channels.clear()
        return defer.DeferredList(waits, consumeErrors=True)

    # -- addresses --

    @property
    def port(self) -> int:
        assert self._port is not None, "site not started"
        return int(self._port.getHost().port)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def url(self, path: str = "/", host: str = LOOPBACK) -> str:
        """Absolute URL of ``path`` on this site (``host`` may be ``localhost``)."""
        return f"{self.scheme}://{host}:{self.port}{path}"

    # -- scripting and inspection --

    def script(self, path: str, *replies: Reply) -> Site:
        """Answer ``path`` with ``replies`` in turn, the last one repeating."""
        if not replies:
            raise ValueError("script() needs at least one Reply")
        self._scripts[path] = list(replies)
        return self

    def hits(self, path: str) -> int:
        """How many requests came in for ``path`` (query ignored)."""
        return sum(1 for record in self._log if record.path == path)

    def requests(self, path: str | None = None) -> list[RecordedRequest]:
        """Recorded requests for ``path`` (query ignored), or all of them, in arrival order."""
        return [record for record in self._log if path is None or record.path == path]

    def wait_for_hits(self, path: str, count: int, timeout: float = 10.0) -> defer.Deferred[None]:
        """Fires once ``path`` has had ``count`` hits; fails with TimeoutError after ``timeout``."""
        waiter: defer.Deferred[None] = defer.Deferred()
        if self.hits(path) >= count:
            waiter.callback(None)
            return waiter
        self._waiters.append((path, count, waiter))
        waiter.addTimeout(timeout, _reactor())
        return waiter

    # -- request handling (called by the resource) --

    def _next_reply(self, record: RecordedRequest) -> Reply:
        replies = self._scripts.get(record.uri) or self._scripts.get(record.path)
        if not replies:
            return DEFAULT_REPLY
        return replies.pop(0) if len(replies) > 1 else replies[0]

    def _record(self, request: server.Request) -> RecordedRequest:
        headers: dict[str, list[str]] = {}
        for name, values in request.requestHeaders.getAllRawHeaders():
            headers.setdefault(name.decode("latin-1").lower(), []).extend(
                value.decode("latin-1") for value in values
            )
        content = request.content.read() if request.content is not None else b""
        record = RecordedRequest(
            method=request.method.decode("ascii"),
            uri=request.uri.decode("latin-1"),
            path=request.path.decode("latin-1"),
            headers=headers,
            body=content,
        )
        self._log.append(record)
        for waiter_entry in list(self._waiters):
            path, count, waiter = waiter_entry
            if self.hits(path) >= count:
                self._waiters.remove(waiter_entry)
                if not waiter.called:
                    waiter.callback(None)
        return record

    def _later(self, delay: float, function: Callable[[], None]) -> DelayedCall:
        def run() -> None:
            self._timers.discard(timer)
            function()

        timer = _reactor().callLater(delay, run)
        self._timers.add(timer)
        return timer


@implementer(IOpenSSLServerConnectionCreator)
class _ServerTLS:
    """Server-side TLS with one certificate.

    A fresh OpenSSL context per connection: older Twisted adjusts the context
    after creating a connection from it, which recent pyOpenSSL forbids.
    """

    def __init__(self, key_pem: bytes, certificate_pem: bytes) -> None:
        self._key = serialization.load_pem_private_key(key_pem, None)
        self._certificate = x509.load_pem_x509_certificate(certificate_pem)

    def serverConnectionForTLS(self, tls_protocol: Any) -> SSL.Connection:
        context = SSL.Context(SSL.TLS_SERVER_METHOD)
        context.use_certificate(self._certificate)
        context.use_privatekey(self._key)
        return SSL.Connection(context, None)


class _NoAlpn(protocol.ServerFactory):
    """Hides the site's ALPN offer (HTTP/1.1 only, as Scrapy speaks by default).

    Twisted < 24 sets ALPN on the context of an already created connection,
    which recent pyOpenSSL refuses; without an offer it does not try.
    """

    def __init__(self, site: server.Site) -> None:
        self.site = site

    def startFactory(self) -> None:
        self.site.doStart()

    def stopFactory(self) -> None:
        self.site.doStop()

    def buildProtocol(self, addr: Any) -> Any:
        return self.site.buildProtocol(addr)


class _TrackedChannel(http.HTTPChannel):
    """An HTTP connection the site can drop at teardown."""

    def __init__(self) -> None:
        super().__init__()
        self.lost: defer.Deferred[None] = defer.Deferred()
        self.tracked_in: set[_TrackedChannel] | None = None

    def connectionLost(self, reason: Failure) -> None:
        super().connectionLost(reason)
        if self.tracked_in is not None:
            self.tracked_in.discard(self)
        if not self.lost.called:
            self.lost.callback(None)


class _TrackingSite(server.Site):
    protocol = _TrackedChannel

    def __init__(self, root: resource.Resource, channels: set[_TrackedChannel]) -> None:
        super().__init__(root)
        self.noisy = False
        self._channels = channels

    def buildProtocol(self, addr: Any) -> Any:
        channel = super().buildProtocol(addr)
        # With TLS the factory hands out a wrapper; track the HTTP channel inside.
        inner = getattr(channel, "wrappedProtocol", channel)
        if isinstance(inner, _TrackedChannel):
            inner.tracked_in = self._channels
            self._channels.add(inner)
        return channel

    def log(self, request: server.Request) -> None:
        pass  # no access log in test output


class _Dispatcher(resource.Resource):
    isLeaf = True

    def __init__(self, site: Site) -> None:
        super().__init__()
        self._site = site

    def render(self, request: server.Request) -> Any:
        site = self._site
        record = site._record(request)
        reply = site._next_reply(record)
        responder = _Responder(site, request, record, reply)
        if reply.delay > 0:
            timer = site._later(reply.delay, responder.start)
            responder.on_lost(timer)
        else:
            responder.start()
        return server.NOT_DONE_YET


class _Responder:
    """Sends one :class:`Reply` on one request, keeping the record up to date."""

    def __init__(
        self, site: Site, request: server.Request, record: RecordedRequest, reply: Reply
    ) -> None:
        self.site = site
        self.request = request
        self.record = record
        self.reply = reply
        self.finished = False
        request.notifyFinish().addBoth(self._finished)

    def on_lost(self, timer: DelayedCall) -> None:
        self.record.done.addBoth(lambda _: timer.cancel() if timer.active() else None)

    def _finished(self, result: Any) -> None:
        self.finished = True
        if isinstance(result, Failure):
            self.record.disconnected = True
        if not self.record.done.called:
            self.record.done.callback(None)

    def start(self) -> None:
        if self.finished:
            return
        reply, request = self.reply, self.request
        if reply.mode == "hang":
            return
        if reply.mode == "abort":
            _reset(request)
            return
        request.setResponseCode(reply.status)
        for name, value in reply.headers.items():
            values = [value] if isinstance(value, str) else list(value)
            request.responseHeaders.setRawHeaders(name, values)
        if reply.mode == "stream":
            self._stream()
            return
        body = gzip_bytes(reply.body) if reply.gzip else reply.body
        if reply.gzip:
            request.setHeader("Content-Encoding", "gzip")
        request.setHeader("Content-Length", str(len(body)))
        if reply.mode in ("reset", "truncate"):
            self._write(body[: reply.after])
            if reply.mode == "truncate":
                request.channel.transport.loseConnection()
            else:
                # Let the partial body reach the socket first, then reset.
                self.site._later(0, lambda: _reset(request))
            return
        self._write(body)
        request.finish()

    def _write(self, data: bytes) -> None:
        if data:
            self.request.write(data)
            self.record.body_bytes_sent += len(data)

    def _stream(self) -> None:
        reply = self.reply
        if reply.gzip:
            self.request.setHeader("Content-Encoding", "gzip")
            chunks: Iterable[bytes] = _gzip_stream(reply.body, reply.fill, reply.total)
        else:
            if reply.total is not None:
                self.request.setHeader("Content-Length", str(reply.total))
            chunks = _plain_stream(reply.body, reply.fill, reply.total, reply.chunk_size)
        producer = _PullProducer(self, iter(chunks), reply.chunk_size)
        self.request.registerProducer(producer, False)


class _PullProducer:
    """Writes the next chunk each time the transport has room (IPullProducer)."""

    def __init__(self, responder: _Responder, chunks: Any, chunk_size: int) -> None:
        self.responder = responder
        self.chunks = chunks
        self.chunk_size = chunk_size
        self.stopped = False

    def resumeProducing(self) -> None:
        if self.stopped or self.responder.finished:
            return
        pending = bytearray()
        for chunk in self.chunks:
            pending += chunk
            if len(pending) >= self.chunk_size:
                break
        else:
            self._write(pending)
            self.stopped = True
            self.responder.request.unregisterProducer()
            self.responder.request.finish()
            return
        self._write(pending)

    def _write(self, data: bytearray) -> None:
        if data and not self.responder.finished:
            self.responder._write(bytes(data))

    def stopProducing(self) -> None:
        self.stopped = True


def _plain_stream(prefix: bytes, fill: bytes, total: int | None, chunk_size: int) -> Any:
    remaining = total
    if prefix:
        piece = prefix if remaining is None else prefix[:remaining]
        yield piece
        if remaining is not None:
            remaining -= len(piece)
    block = fill * max(1, chunk_size // len(fill))
    while remaining is None or remaining > 0:
        piece = block if remaining is None else block[:remaining]
        yield piece
        if remaining is not None:
            remaining -= len(piece)


def _gzip_stream(prefix: bytes, fill: bytes, total: int | None) -> Any:
    # A gzip member whose deflate data is one sync-flushed segment for the
    # prefix, then the same self-contained sync-flushed segment (1 MiB of fill,
    # a few hundred bytes on the wire) repeated: a cheap, valid gzip bomb.
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # header, mtime 0, OS unknown
    crc, size = 0, 0

    def segment(plain: bytes) -> bytes:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        return compressor.compress(plain) + compressor.flush(zlib.Z_SYNC_FLUSH)

    limit = total if total is not None else None
    head = prefix if limit is None else prefix[:limit]
    if head:
        yield segment(head)
        crc, size = zlib.crc32(head, crc), size + len(head)
    block = fill * max(1, (1 << 20) // len(fill))
    packed = segment(block)
    while limit is None or size + len(block) <= limit:
        yield packed
        if limit is not None:
            crc, size = zlib.crc32(block, crc), size + len(block)
    if limit is not None:
        tail = block[: limit - size]
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        yield compressor.compress(tail) + compressor.flush(zlib.Z_FINISH)
        crc, size = zlib.crc32(tail, crc), size + len(tail)
        yield struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)


def _reset(request: server.Request) -> None:
    """Drop the request's connection with a TCP RST (SO_LINGER 0), not a FIN."""
    transport = request.channel.transport
    handle = getattr(transport, "getHandle", lambda: None)()
    if isinstance(handle, socket.socket):
        handle.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abortConnection()


def self_signed_certificate() -> tuple[bytes, bytes]:
    """A fresh key and self-signed certificate (PEM) for ``localhost`` and 127.0.0.1."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LOOPBACK)])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.IPv4Address(LOOPBACK))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return key_pem, certificate.public_bytes(serialization.Encoding.PEM)


# --------------------------------------------------------------------------
# FTP


class FtpServer:
    """Twisted's FTP server on 127.0.0.1 with anonymous login, serving ``files``.

    ``files`` maps paths (``"/robots.txt"``) to contents; they are written
    under a fresh temporary directory. :meth:`hits` counts RETR commands.
    """

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self._tempdir = tempfile.TemporaryDirectory(prefix="ftp-root-")
        self.root = Path(self._tempdir.name)
        for path, content in files.items():
            target = self.root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        self.retrieved: list[str] = []
        self._port: IListeningPort | None = None
        self._factory: Any = None

    def start(self) -> FtpServer:
        """Start listening; returns self."""
        from twisted.protocols import ftp  # imports the reactor: not at module level

        portal = Portal(ftp.FTPRealm(anonymousRoot=str(self.root)), [AllowAnonymousAccess()])
        factory = ftp.FTPFactory(portal)
        factory.protocol = _make_recording_ftp(self.retrieved)
        factory.noisy = False
        self._factory = factory
        self._port = _reactor().listenTCP(0, factory, interface=LOOPBACK)
        return self

    def stop(self) -> defer.Deferred[Any]:
        """Stop listening, drop connections, remove the directory."""
        waits: list[defer.Deferred[Any]] = []
        if self._port is not None:
            waits.append(defer.maybeDeferred(self._port.stopListening))
            self._port = None
        if self._factory is not None:
            for protocol in list(self._factory.instances):
                if protocol.dtpPort is not None:
                    waits.append(defer.maybeDeferred(protocol.dtpPort.stopListening))
                    protocol.dtpPort = None
                if protocol.transport is not None:
                    protocol.transport.abortConnection()
        done = defer.DeferredList(waits, consumeErrors=True)
        done.addBoth(lambda result: (self._tempdir.cleanup(), result)[1])
        return done

    @property
    def port(self) -> int:
        assert self._port is not None, "server not started"
        return int(self._port.getHost().port)

    def url(self, path: str = "/") -> str:
        return f"ftp://{LOOPBACK}:{self.port}{path}"

    def hits(self, path: str) -> int:
        """How many times ``path`` was retrieved (RETR)."""
        wanted = path.lstrip("/")
        return sum(1 for name in self.retrieved if name.lstrip("/") == wanted)


def _make_recording_ftp(retrieved: list[str]) -> Any:
    from twisted.protocols import ftp

    class RecordingFTP(ftp.FTP):
        def listenFactory(self, port: int, factory: Any, interface: str = "") -> Any:
            # Data connections on loopback too, never all interfaces.
            return _reactor().listenTCP(port, factory, interface=LOOPBACK)

        def ftp_RETR(self, path: str) -> Any:
            retrieved.append(path)
            return super().ftp_RETR(path)

    return RecordingFTP


# --------------------------------------------------------------------------
# Refused connections


class RefusedPort:
    """A loopback TCP port that refuses connections while this object is open.

    The socket is bound but never listens, so the port stays ours (no other
    process can take it) and the kernel answers every SYN with a reset.
    """

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind((LOOPBACK, 0))
        self.port: int = self._socket.getsockname()[1]

    def url(self, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://{LOOPBACK}:{self.port}{path}"

    def close(self) -> None:
        self._socket.close()


# --------------------------------------------------------------------------
# Crawls


@dataclass
class CrawlResult:
    """What one :func:`run_crawl` saw."""

    crawler: Crawler
    #: URLs of responses downloaded for the spider's requests (any status; not
    #: robots.txt or other NO_CALLBACK requests), in arrival order.
    downloaded: list[str] = field(default_factory=list)
    #: (url, status) of every response the engine got, robots.txt included.
    responses: list[tuple[str, int]] = field(default_factory=list)
    #: (request url, failure) for every errback call of the default spider.
    failures: list[tuple[str, Failure]] = field(default_factory=list)
    #: URLs the scheduler dropped (e.g. by the duplicate filter).
    dropped: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    logs: list[logging.LogRecord] = field(default_factory=list)

    def failed(self, url: str) -> list[Failure]:
        """The errback failures for ``url``."""
        return [failure for failed_url, failure in self.failures if failed_url == url]

    def messages(self, level: int = logging.DEBUG, logger: str = "") -> list[str]:
        """Formatted log messages at ``level`` or above, from ``logger`` and its children."""
        return [
            record.getMessage()
            for record in self.logs
            if record.levelno >= level
            and (not logger or record.name == logger or record.name.startswith(logger + "."))
        ]


class RecordingSpider(Spider):
    """Requests the given URLs/Requests; failures land in the crawl result."""

    name = "recording"

    def __init__(
        self,
        start_urls: Sequence[str | Request] = (),
        crawl_result: CrawlResult | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self._start = list(start_urls)
        self._result = crawl_result

    async def start(self) -> Any:  # Scrapy >= 2.13
        for request in self.start_requests():
            yield request

    def start_requests(self) -> Any:  # Scrapy < 2.13
        for item in self._start:
            if isinstance(item, str):
                yield Request(item, callback=self.parse, errback=self.on_error)
            else:
                yield item.replace(
                    callback=item.callback or self.parse, errback=item.errback or self.on_error
                )

    def parse(self, response: Response, **kwargs: Any) -> Any:
        return None

    def on_error(self, failure: Failure) -> None:
        if self._result is not None:
            self._result.failures.append((failure.request.url, failure))  # type: ignore[attr-defined]


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _crawl_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    # No telnet console or remote control (Scrapy >= 2.19): they bind ports.
    merged: dict[str, Any] = {
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "LOG_LEVEL": "DEBUG",
    }
    from twisted.internet import asyncioreactor

    if not isinstance(_reactor(), asyncioreactor.AsyncioSelectorReactor):
        # Classic reactor run (--reactor=default): do not ask for asyncio.
        merged["TWISTED_REACTOR"] = None
    if tuple(int(part) for part in scrapy.__version__.split(".")[:2]) < (2, 12):
        merged["REQUEST_FINGERPRINTER_IMPLEMENTATION"] = "2.7"
    merged.update(settings)
    return merged


def run_crawl(
    settings: Mapping[str, Any],
    start: Sequence[str | Request] = (),
    spider_cls: type[Spider] | None = None,
    *,
    timeout: float = 60.0,
    **spider_kwargs: Any,
) -> defer.Deferred[CrawlResult]:
    """Run one crawl on the running reactor; fires with its :class:`CrawlResult`.

    ``start`` (URLs or Requests) feeds the default :class:`RecordingSpider`;
    a ``spider_cls`` gets it as ``start_urls`` and the result as
    ``crawl_result`` keyword arguments (Spider stores unknown ones as
    attributes, so the stock ``start_urls`` handling works for URL strings).
    A crawl still running after ``timeout`` seconds is stopped and the
    Deferred fails with TimeoutError (the stop waits for downloads in
    progress: set DOWNLOAD_TIMEOUT in tests that hang).
    Use ``await run_crawl(...)`` or ``yield run_crawl(...)``.
    """
    return defer.Deferred.fromCoroutine(
        _run_crawl(settings, start, spider_cls or RecordingSpider, timeout, spider_kwargs)
    )


async def _run_crawl(
    settings: Mapping[str, Any],
    start: Sequence[str | Request],
    spider_cls: type[Spider],
    timeout: float,
    spider_kwargs: dict[str, Any],
) -> CrawlResult:
    runner = CrawlerRunner(_crawl_settings(settings))
    crawler = runner.create_crawler(spider_cls)
    result = CrawlResult(crawler=crawler)

    def on_response(response: Response, request: Request, spider: Spider) -> None:
        result.responses.append((response.url, response.status))
        if request.callback is not NO_CALLBACK:
            result.downloaded.append(response.url)

    def on_dropped(request: Request, spider: Spider) -> None:
        result.dropped.append(request.url)

    crawler.signals.connect(on_response, signal=signals.response_received, weak=False)
    crawler.signals.connect(on_dropped, signal=signals.request_dropped, weak=False)

    handler = _ListHandler(result.logs)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    timed_out: list[bool] = []

    def stop_crawl() -> None:
        timed_out.append(True)
        stop_async = getattr(crawler, "stop_async", None)
        if stop_async is not None:
            # deferred_from_coro runs it as an asyncio task under the asyncio
            # reactor, which Scrapy's coroutine needs.
            deferred_from_coro(stop_async())
        else:
            crawler.stop()

    crawling = runner.crawl(crawler, start_urls=list(start), crawl_result=result, **spider_kwargs)
    reactor = _reactor()
    timer = reactor.callLater(timeout, stop_crawl)
    # A graceful stop waits for downloads in progress; if that does not end
    # the crawl either (a hang with DOWNLOAD_TIMEOUT=0), give up a little later.
    finished = crawling.addTimeout(timeout + 10, reactor)
    try:
        await finished
    finally:
        if timer.active():
            timer.cancel()
        root.removeHandler(handler)
        root.setLevel(old_level)
        stats = getattr(crawler, "_stats", None) or getattr(crawler, "stats", None)
        result.stats = dict(stats.get_stats()) if stats is not None else {}
    if timed_out:
        raise defer.TimeoutError(f"crawl still running after {timeout} s (stopped)")
    return result
