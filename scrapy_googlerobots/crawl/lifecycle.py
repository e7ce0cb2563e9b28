"""The spider's life as the middleware sees it: opening, idling, closing.

:class:`Lifecycle` holds the middleware's spider signal handlers.
:class:`CloseWatch` notices that the spider has begun closing (Ctrl-C,
``CLOSESPIDER_*``, ``crawler.stop()``).

Scrapy sends no signal when a close begins: ``spider_closed`` comes only after
the downloads in progress have ended. Waiting requests must not hold a
stopping crawl open, so while anything waits, :class:`CloseWatch` looks at the
engine every :data:`WATCH_INTERVAL` seconds (and whenever a unit asks), and
calls ``on_close`` once, the first time the close is seen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider

from scrapy_googlerobots.reporting.slow_down_report import OnlyWaiting
from scrapy_googlerobots.runtime.scrapy_compat import (
    call_before_scheduler_close,
    crawler_engine,
    engine_is_closing,
)
from scrapy_googlerobots.runtime.timers import Timer
from scrapy_googlerobots.waiting.legacy_journal import take_up_legacy_journal
from scrapy_googlerobots.waiting.parked_records import ParkedRecords

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_googlerobots.reporting.reporter import Reporter
    from scrapy_googlerobots.stores.base import PolicyStore
    from scrapy_googlerobots.waiting.parked_records import Records
    from scrapy_googlerobots.waiting.parking import Parking
    from scrapy_googlerobots.waiting.slow_down import SlowDownGate

__all__ = ["WATCH_INTERVAL", "CloseWatch", "Lifecycle"]

WATCH_INTERVAL = 0.5
"""Seconds between looks at the engine while requests wait."""


class CloseWatch:
    """Tells whether the spider is closing; runs ``on_close`` once when it starts to."""

    __slots__ = ("_busy", "_engine", "_on_close", "_timer", "closing")

    def __init__(
        self,
        engine: Callable[[], Any],
        on_close: Callable[[], None],
        busy: Callable[[], bool],
    ) -> None:
        self._engine = engine
        self._on_close = on_close
        self._busy = busy
        self._timer: Timer | None = None
        self.closing = False

    def stopping(self) -> bool:
        """True once the spider has begun closing (the first call to see it runs ``on_close``)."""
        if not self.closing and engine_is_closing(self._engine()):
            self.close()
        return self.closing

    def close(self) -> None:
        """The close has begun (seen here, or ``spider_closed`` came first)."""
        if self.closing:
            return
        self.closing = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._on_close()

    def watch(self) -> None:
        """Something started waiting: look at the engine until nothing waits."""
        if self._timer is None and not self.closing:
            self._timer = Timer(WATCH_INTERVAL, self._look)

    def unwatch(self) -> None:
        """Nothing waits any more: stop looking (no timer outlives the wait)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _look(self) -> None:
        self._timer = None
        if not self.stopping() and self._busy():
            self.watch()


class Lifecycle:
    """The middleware's spider signals: open (adoption starts), idle (stay open while
    requests wait), closed (counts flushed, summary, the store closed).

    ``flush``: what adds counts kept in memory to the stats at close.
    """

    def __init__(
        self,
        crawler: Crawler,
        *,
        close_watch: CloseWatch,
        parking: Parking,
        records: Records,
        reporter: Reporter,
        flush: Sequence[Callable[[], None]],
        store: PolicyStore,
        summary: bool,
        gate: SlowDownGate | None = None,
    ) -> None:
        self.crawler = crawler
        self._close_watch = close_watch
        self._parking = parking
        self._records = records if isinstance(records, ParkedRecords) else None
        self._reporter = reporter
        self._flush = flush
        self._store = store
        self._summary = summary
        self._gate = gate
        self._only_waiting = OnlyWaiting()
        manager = crawler.signals
        manager.connect(self.spider_opened, signal=signals.spider_opened)
        manager.connect(self.spider_idle, signal=signals.spider_idle)
        manager.connect(self.spider_closed, signal=signals.spider_closed)

    def spider_opened(self, **_: Any) -> None:
        # The moment requests can still go to the scheduler, at any close.
        call_before_scheduler_close(crawler_engine(self.crawler), self._close_watch.close)
        if self._gate is not None:
            self._gate.start()  # pauses known before adopted requests go anywhere
        if self._records is not None:
            self._records.start()
        jobdir, spider = self.crawler.settings.get("JOBDIR"), self.crawler.spider
        if jobdir and spider is not None:
            # Upgrade path from 0.1.0 (its JOBDIR/robotstxt.parked journal); goes with it.
            take_up_legacy_journal(jobdir, spider, self.crawler.stats, self._parking.adopt)

    def spider_idle(self, **_: Any) -> None:
        if self._close_watch.closing:
            return
        if self._parking.busy:
            # Nothing left but waiting requests: said once, not at every idle beat.
            self._only_waiting.note(self._parking.waiting(), self.crawler.spider)
            raise DontCloseSpider
        # About to close: take over what stopped workers handed over since the
        # last beat, rather than leave it for the next crawl.
        if self._records is not None and self._records.adopt_now():
            raise DontCloseSpider

    def spider_closed(self, **_: Any) -> None:
        self._close_watch.close()
        for flush in self._flush:
            flush()
        self._parking.unlisten(closing=True)
        if self._gate is not None:
            self._gate.close()
        if self._summary:
            self._reporter.crawl_summary()
            if self._gate is not None:
                self._gate.site.report.log_summary()
        # Nothing is parked any more: the close handed every waiting request over or dropped it.
        self._store.close()
