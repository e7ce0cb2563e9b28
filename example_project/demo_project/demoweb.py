"""A small web of several origins on 127.0.0.1, served in-process with twisted.web.

Each origin is its own port, hence its own robots.txt (scheme + host + port).
Together they show the robots.txt behaviours that matter when crawling.

``scrapy crawl demo`` starts it inside the crawl. ``python -m demo_project.demoweb
[--port N]`` serves it on its own until Ctrl-C (ports N, N+1, ... or free ones),
printing each origin, e.g. to try ``scrapy robots`` on it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

LONGEST_MATCH = b"""\
# The longest matching pattern decides; on a tie, allow wins.
User-agent: *
Disallow: /shop/
Allow: /shop/sale/
Allow: /guides
Disallow: /guides
"""

WILDCARDS = b"""\
User-agent: *
# '*' matches any run of characters, '$' anchors the end of the URL.
Disallow: /*.pdf$
Disallow: /*?sessionid=
Allow: /private/*/public
Disallow: /private/
"""

OWN_GROUP = b"""\
User-agent: *
Disallow: /

# A group naming the crawler replaces '*' entirely: DemoBot may fetch
# everything except /admin/.
User-agent: DemoBot
Disallow: /admin/
"""

RECOVERS = b"""\
User-agent: *
Disallow: /drafts/
"""

MOVED = b"""\
# Served after a redirect from another origin: the rules apply to that origin.
User-agent: *
Disallow: /members/
"""


@dataclass
class DemoOrigin:
    """One origin of the demo web: what its robots.txt does and which pages to crawl."""

    title: str
    robots: str
    paths: tuple[str, ...]
    url: str = ""
    crawl: bool = True
    port: Any = field(default=None, repr=False)


class _OriginResource(Resource):
    """Serves ``*robots.txt`` through ``robots`` and a small HTML page for any other path."""

    isLeaf = True

    def __init__(self, title: str, robots: Callable[[Request], bytes]) -> None:
        super().__init__()
        self.title = title
        self.robots = robots

    def render_GET(self, request: Request) -> bytes:
        if request.path.endswith(b"robots.txt"):
            return self.robots(request)
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        path = request.uri.decode("ascii", "replace")
        return f"<html><body><h1>{self.title}</h1><p>{path}</p></body></html>".encode()


def _serve(body: bytes) -> Callable[[Request], bytes]:
    def robots(request: Request) -> bytes:
        request.setHeader(b"content-type", b"text/plain")
        return body

    return robots


def _not_found(request: Request) -> bytes:
    request.setResponseCode(404)
    return b"Not found"


def _unavailable_then(body: bytes, failures: int) -> Callable[[Request], bytes]:
    served = 0

    def robots(request: Request) -> bytes:
        nonlocal served
        served += 1
        if served <= failures:
            request.setResponseCode(503)
            request.setHeader(b"retry-after", b"1")
            return b"Service unavailable"
        return _serve(body)(request)

    return robots


def _redirect_to(location: str) -> Callable[[Request], bytes]:
    def robots(request: Request) -> bytes:
        request.setResponseCode(301)
        request.setHeader(b"location", location.encode("ascii"))
        return b""

    return robots


class DemoWeb:
    """Start with :meth:`start` (the reactor must be installed), stop with :meth:`stop`.

    ``failures`` is how many times the recovering origin answers 503 before
    serving its robots.txt: Scrapy's RetryMiddleware spends its retries on the
    first fetch, then the middleware waits ``ROBOTSTXT_RETRY_DELAY`` and tries
    again.
    """

    def __init__(self, failures: int = 3, base_port: int = 0) -> None:
        self.failures = failures
        # 0: free ports chosen by the OS; else origin i listens on base_port + i.
        self.base_port = base_port
        self.origins: list[DemoOrigin] = []

    def _listen(self, origin: DemoOrigin, robots: Callable[[Request], bytes]) -> DemoOrigin:
        from twisted.internet import reactor

        number = self.base_port + len(self.origins) if self.base_port else 0
        port = reactor.listenTCP(  # type: ignore[attr-defined]
            number, Site(_OriginResource(origin.title, robots)), interface="127.0.0.1"
        )
        origin.port = port
        origin.url = f"http://127.0.0.1:{port.getHost().port}"
        self.origins.append(origin)
        return origin

    def start(self) -> list[DemoOrigin]:
        """Open every origin on a free port; returns the origins to crawl."""
        self._listen(
            DemoOrigin(
                "Longest match and ties",
                "200",
                ("/shop/cart", "/shop/sale/boots", "/guides/setup", "/about"),
            ),
            _serve(LONGEST_MATCH),
        )
        self._listen(
            DemoOrigin(
                "Wildcards: * and $",
                "200",
                (
                    "/files/manual.pdf",
                    "/files/manual.pdf?page=2",
                    "/cart?sessionid=42",
                    "/private/data",
                    "/private/team/public",
                ),
            ),
            _serve(WILDCARDS),
        )
        self._listen(
            DemoOrigin("A group for DemoBot shadows *", "200", ("/articles/1", "/admin/panel")),
            _serve(OWN_GROUP),
        )
        self._listen(
            DemoOrigin("No robots.txt (404)", "404", ("/anything", "/admin/")),
            _not_found,
        )
        self._listen(
            DemoOrigin(
                "robots.txt answers 503, then recovers",
                "503 then 200",
                ("/news/today", "/drafts/tomorrow"),
            ),
            _unavailable_then(RECOVERS, self.failures),
        )
        shared = self._listen(
            DemoOrigin("Redirect target (not crawled)", "200", (), crawl=False),
            _serve(MOVED),
        )
        self._listen(
            DemoOrigin(
                "robots.txt redirects to another origin", "301", ("/welcome", "/members/list")
            ),
            _redirect_to(f"{shared.url}/shared/robots.txt"),
        )
        return [origin for origin in self.origins if origin.crawl]

    def stop(self) -> defer.Deferred[Any]:
        """Close every port; fires when they are closed."""
        return defer.DeferredList(
            [defer.maybeDeferred(origin.port.stopListening) for origin in self.origins]
        )


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the demo web until interrupted, printing each origin and its demo paths."""
    parser = argparse.ArgumentParser(prog="python -m demo_project.demoweb")
    parser.add_argument(
        "--port", type=int, default=0, help="first port, the others follow (default: free ports)"
    )
    args = parser.parse_args(argv)
    from twisted.internet import reactor

    web = DemoWeb(base_port=args.port)
    web.start()
    for origin in web.origins:
        print(f"{origin.url}  {origin.title}: {' '.join(origin.paths) or '-'}", flush=True)
    reactor.run()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
