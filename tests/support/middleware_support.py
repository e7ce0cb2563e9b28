"""Shared helpers of the middleware crawl tests (tests/test_middleware_*.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import Response

from scrapy_googlerobots import GoogleRobotsTxtMiddleware
from scrapy_googlerobots.runtime.scrapy_compat import REQUEST_SCHEDULED_CAN_DROP

from servers import CrawlResult, RecordingSpider

STOCK = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
OURS = "scrapy_googlerobots.GoogleRobotsTxtMiddleware"


def robots_settings(
    middleware: object = OURS, *, extra: Mapping[Any, int] | None = None, **overrides: Any
) -> dict[str, Any]:
    """Crawl settings with our middleware in the stock one's place, plus ``overrides``.

    ``extra`` adds downloader middlewares (class -> priority; ours is at 100).
    """
    settings: dict[str, Any] = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {STOCK: None, middleware: 100, **(extra or {})},
        "DOWNLOAD_TIMEOUT": 5,
        "USER_AGENT": "TestBot/1.0 (+http://test.example/bot)",
    }
    settings.update(overrides)
    return settings


class MovableClock:
    """A clock tests move by hand: ``clock()`` reads it, ``clock.advance(s)`` moves it."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def clocked(clock: Callable[[], float]) -> type[GoogleRobotsTxtMiddleware]:
    """Our middleware, reading time from ``clock`` (put the class in DOWNLOADER_MIDDLEWARES)."""

    class ClockedMiddleware(GoogleRobotsTxtMiddleware):
        def __init__(self, crawler: Any) -> None:
            super().__init__(crawler, clock=clock)

    return ClockedMiddleware


def robots_stats(result: CrawlResult) -> dict[str, Any]:
    """The ``robotstxt/`` stats of a crawl."""
    return {key: value for key, value in result.stats.items() if key.startswith("robotstxt/")}


def then(action: Callable[[Response], Iterable[Request] | None]) -> dict[str, Any]:
    """Request meta for :class:`ChainSpider`: run ``action`` on the response, crawl its requests."""
    return {"then": action}


class ChainSpider(RecordingSpider):
    """RecordingSpider whose callback runs the request's ``meta["then"]`` (see :func:`then`)."""

    name = "chain"

    def parse(self, response: Response, **kwargs: Any) -> Any:
        action = response.meta.get("then")
        if action is None:
            return
        for request in action(response) or ():
            yield request.replace(
                callback=request.callback or self.parse,
                errback=request.errback or self.on_error,
            )


def spider_with_signals(
    base: type[RecordingSpider] = RecordingSpider, **handlers: Callable[..., Any]
) -> type[RecordingSpider]:
    """``base`` whose crawler has ``handlers`` connected (``spider_opened=fn`` …)."""
    from scrapy import signals

    class SignalledSpider(base):  # type: ignore[valid-type,misc]
        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
            spider = super().from_crawler(crawler, *args, **kwargs)
            for name, handler in handlers.items():
                crawler.signals.connect(handler, signal=getattr(signals, name), weak=False)
            return spider

    return SignalledSpider


def our_middleware(crawler: Any) -> GoogleRobotsTxtMiddleware:
    """The crawler's GoogleRobotsTxtMiddleware instance."""
    [middleware] = [
        mw
        for mw in crawler.engine.downloader.middleware.middlewares
        if isinstance(mw, GoogleRobotsTxtMiddleware)
    ]
    return middleware


#: Scrapy >= 2.11.2: waiting requests are parked outside the downloader.
CAN_PARK = REQUEST_SCHEDULED_CAN_DROP
requires_parking = pytest.mark.skipif(
    not CAN_PARK, reason="Scrapy < 2.11.2: waiting requests wait in the downloader instead"
)
