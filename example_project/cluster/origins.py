"""The loopback web of the cluster demo and its chaos check: origins counting their requests.

Shared by ``run_cluster.py`` (the demo) and ``chaos.py`` (the chaos check),
so neither imports the other's internals.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROBOTS = b"User-agent: *\nDisallow: /private/\n"
# path -> links on that page; every origin of the demo web serves the same site.
# (No links back to "/": scrapy-redis start requests bypass the duplicate
# filter, so a link to a start URL would be crawled a second time.)
SITE = {
    "/": ["/a", "/b", "/private/report"],
    "/a": ["/b", "/c"],
    "/b": ["/a", "/private/drafts"],
    "/c": ["/a"],
}
# Each page takes this long to serve, like a real site, so that both workers
# get a share of the queue.
PAGE_DELAY = 0.2
ALLOWED = sorted(SITE)


class _Server(ThreadingHTTPServer):
    # The default backlog (5) drops connections when several workers open
    # dozens at once; the retransmits then cost whole seconds.
    request_queue_size = 256
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A worker killed mid-download (the chaos check) leaves a broken pipe: not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Origin:
    """One origin of the demo web (its own port on 127.0.0.1), counting requests per path.

    ``site`` maps each page's path to its links (``/private/...`` pages are
    served too); ``robots_status`` is asked at each robots.txt request (the
    chaos check answers 503 until the origin recovers); ``tdmrep``, when given,
    is served as ``/.well-known/tdmrep.json`` (404 otherwise).
    """

    def __init__(
        self,
        delay: float = PAGE_DELAY,
        site: Mapping[str, list[str]] = SITE,
        robots_status: Callable[[], int] = lambda: 200,
        tdmrep: bytes | None = None,
    ) -> None:
        self.hits: Counter[str] = Counter()
        origin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                origin.hits[self.path] += 1
                if self.path != "/robots.txt" and delay:
                    time.sleep(delay)
                if self.path == "/robots.txt":
                    status = robots_status()
                    if status != 200:
                        self.send_error(status)
                        return
                    body, kind = ROBOTS, "text/plain"
                elif self.path == "/.well-known/tdmrep.json" and tdmrep is not None:
                    body, kind = tdmrep, "application/json"
                elif self.path in site or self.path.startswith("/private/"):
                    links = "".join(f'<a href="{p}">{p}</a> ' for p in site.get(self.path, []))
                    body, kind = f"<html><body>{links}</body></html>".encode(), "text/html"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
