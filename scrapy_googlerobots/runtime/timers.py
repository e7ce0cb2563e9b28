"""Timers on the running reactor (asyncio or classic), as the middleware's units need them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

__all__ = ["Timer", "fire", "sleep"]


class Timer:
    """A cancellable one-shot timer (Scrapy's ``call_later`` where it exists, 2.14+)."""

    __slots__ = ("_handle",)

    def __init__(self, delay: float, function: Callable[[], None]) -> None:
        try:
            from scrapy.utils.asyncio import call_later
        except ImportError:  # Scrapy < 2.14
            from twisted.internet import reactor

            reactor_time: Any = reactor
            self._handle: Any = reactor_time.callLater(max(delay, 0.0), function)
        else:
            self._handle = call_later(max(delay, 0.0), function)

    def cancel(self) -> None:
        handle = self._handle
        active = getattr(handle, "active", None)
        if active is None or active():
            handle.cancel()


def fire(waiter: Deferred[None]) -> None:
    """Fire ``waiter`` unless it has fired already."""
    if not waiter.called:
        waiter.callback(None)


async def sleep(seconds: float) -> None:
    """Wait ``seconds`` on the reactor, from a coroutine on either reactor."""
    waiter: Deferred[None] = Deferred()
    Timer(seconds, lambda: fire(waiter))
    await maybe_deferred_to_future(waiter)
