"""What a worker holds, written down as it goes: the chaos check's view into each worker.

Off unless the setting ``SNAPSHOT_FILE`` names a file (``run_cluster.py --chaos``
sets it per worker). The extension then appends JSON lines to that file, each
written with one unbuffered ``write`` so that a SIGKILLed worker's file is
complete up to the moment it died:

- ``{"t": ..., "event": "scheduled", "url": ...}``: the request was given to the
  engine (``request_scheduled``): a start URL taken from Redis, a link, or a
  request the robots.txt middleware hands back to be parked;
- ``{"t": ..., "event": "downloading", "url": ...}``: it reached the downloader;
- ``{"t": ..., "event": "crawled", "url": ...}``: its response came back;
- ``{"t": ..., "event": "snapshot", "parked": [...], "active": [...]}`` every
  ``SNAPSHOT_INTERVAL`` seconds (default 0.2): the requests waiting for
  robots.txt (``GoogleRobotsTxtMiddleware.parked_requests()``) and those in the
  downloader (``engine.downloader.active``);
- ``{"t": ..., "event": "stats", "stats": {...}}`` when the spider closes: its
  ``robotstxt/`` stats.

``t`` is ``time.time()``: the files of all workers on one machine share a clock.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from scrapy_googlerobots import GoogleRobotsTxtMiddleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class WorkerSnapshots:
    """Appends the worker's requests and periodic snapshots to ``SNAPSHOT_FILE``."""

    def __init__(self, crawler: Crawler, path: str, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._loop = task.LoopingCall(self.snapshot)
        self._robots: GoogleRobotsTxtMiddleware | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WorkerSnapshots:
        path = crawler.settings.get("SNAPSHOT_FILE")
        if not path:
            raise NotConfigured("SNAPSHOT_FILE is not set")
        extension = cls(crawler, path, crawler.settings.getfloat("SNAPSHOT_INTERVAL", 0.2))
        connect = crawler.signals.connect
        connect(extension.spider_opened, signal=signals.spider_opened)
        connect(extension.spider_closed, signal=signals.spider_closed)
        connect(extension.request_scheduled, signal=signals.request_scheduled)
        connect(extension.request_reached_downloader, signal=signals.request_reached_downloader)
        connect(extension.response_received, signal=signals.response_received)
        return extension

    def _write(self, event: str, **fields: Any) -> None:
        line = json.dumps({"t": time.time(), "event": event, **fields}) + "\n"
        os.write(self._fd, line.encode())

    def _middleware(self) -> GoogleRobotsTxtMiddleware | None:
        if self._robots is None:
            if hasattr(self.crawler, "get_downloader_middleware"):  # Scrapy >= 2.12
                self._robots = self.crawler.get_downloader_middleware(GoogleRobotsTxtMiddleware)
            elif self.crawler.engine is not None:
                middlewares = self.crawler.engine.downloader.middleware.middlewares
                self._robots = next(
                    (m for m in middlewares if isinstance(m, GoogleRobotsTxtMiddleware)), None
                )
        return self._robots

    def spider_opened(self, spider: Spider) -> None:
        self._loop.start(self.interval, now=True)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self._loop.running:
            self._loop.stop()
        self.snapshot()
        assert self.crawler.stats is not None
        stats = {
            key: value
            for key, value in self.crawler.stats.get_stats().items()
            if key.startswith("robotstxt/")
        }
        self._write("stats", stats=stats, reason=reason)
        os.close(self._fd)

    def snapshot(self) -> None:
        robots = self._middleware()
        engine = self.crawler.engine
        parked = [request.url for request in robots.parked_requests()] if robots else []
        active = [request.url for request in engine.downloader.active] if engine else []
        self._write("snapshot", parked=parked, active=active)

    def request_scheduled(self, request: Request, spider: Spider) -> None:
        self._write("scheduled", url=request.url)

    def request_reached_downloader(self, request: Request, spider: Spider) -> None:
        self._write("downloading", url=request.url)

    def response_received(self, response: Response, request: Request, spider: Spider) -> None:
        self._write("crawled", url=request.url)
