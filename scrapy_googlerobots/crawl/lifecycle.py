"""Noticing that the spider has begun closing (Ctrl-C, ``CLOSESPIDER_*``, ``crawler.stop()``).

Scrapy sends no signal when a close begins: ``spider_closed`` comes only after
the downloads in progress have ended. Waiting requests must not hold a
stopping crawl open, so while anything waits, :class:`CloseWatch` looks at the
engine every :data:`WATCH_INTERVAL` seconds (and whenever a unit asks), and
calls ``on_close`` once, the first time the close is seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy_googlerobots.runtime.scrapy_compat import engine_is_closing
from scrapy_googlerobots.runtime.timers import Timer

__all__ = ["WATCH_INTERVAL", "CloseWatch"]

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
