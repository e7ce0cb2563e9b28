"""Pauses pushed to every worker the moment one sets them: a Redis pub/sub subscriber.

:meth:`RedisPolicyStore.pause_origin
<scrapy_googlerobots.stores.redis.RedisPolicyStore.pause_origin>` publishes a new
or longer pause, in the same script that records it, on the channel
``<prefix>pauses@<db>`` (pub/sub ignores Redis's database numbers: the number
keeps crawls on other databases of the same server apart) as
``"<ms left> <origin> <reason>"`` (:func:`pause_message`). Every worker's
:class:`PauseFeed` receives it and records the pause at once, instead of at its
next read of the store's pauses (which stays, less often, as the safety net:
pub/sub keeps no messages for a subscriber that is away).

Why a thread: redis-py's ``PubSub`` reads blockingly, and it brings what a
reader needs (TLS, Unix sockets, AUTH, the protocol); a reader on the reactor
would need its private socket and would connect, on a reconnect, on the
reactor. The thread only reads (a blocking read of at most :data:`READ_WAIT`
seconds, so it sees :meth:`PauseFeed.stop` soon) and hands every event to
``deliver`` (``reactor.callFromThread``): the callbacks run where the crawl
runs. A lost connection is handed over as ``on_lost`` once, then the thread
subscribes again with a growing pause and hands over ``on_back`` (read the
store's pauses now: any set meanwhile were not pushed).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

__all__ = ["READ_WAIT", "FeedHandlers", "PauseFeed", "pause_message", "read_pause_message"]

logger = logging.getLogger(__name__)

#: Seconds the thread's read waits for a message before it looks at :meth:`PauseFeed.stop`.
READ_WAIT = 0.1

# Subscribing again after a lost connection: first after this many seconds,
# doubling up to the maximum (the layered store's probe pauses).
_AGAIN_FIRST = 1.0
_AGAIN_MAX = 30.0


def pause_message(origin: str, ms_left: int, reason: str) -> str:
    """The message published for a pause of ``origin`` (what the Redis script builds)."""
    return f"{ms_left} {origin} {reason}"


def read_pause_message(data: bytes) -> tuple[str, float, str] | None:
    """(origin, seconds left, reason) of a published pause; None if ``data`` is not one."""
    parts = data.decode("utf-8", "replace").split(" ", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1]:
        return None
    return parts[1], int(parts[0]) / 1000.0, parts[2]


@dataclass(frozen=True)
class FeedHandlers:
    """Where a :class:`PauseFeed`'s news goes.

    ``deliver(fn)`` runs ``fn`` where the crawl runs (from the feed's thread:
    ``reactor.callFromThread``); through it come ``on_pause(origin, seconds
    left, reason)``, ``on_lost(exception)`` and ``on_back()``.
    """

    deliver: Callable[[Callable[[], None]], None]
    on_pause: Callable[[str, float, str], None]
    on_lost: Callable[[BaseException], None]
    on_back: Callable[[], None]


class PauseFeed:
    """A subscription to ``channel`` in a thread of its own (see the module doc).

    ``pubsub()`` gives a fresh redis-py ``PubSub`` (one connection, with the
    store's timeouts, ``timeout`` s); ``handlers`` take what it hears.
    """

    def __init__(
        self,
        pubsub: Callable[[], Any],
        channel: str,
        handlers: FeedHandlers,
        *,
        timeout: float = 1.0,
    ) -> None:
        self._pubsub = pubsub
        self.channel = channel
        self._deliver = handlers.deliver
        self._on_pause = handlers.on_pause
        self._on_lost = handlers.on_lost
        self._on_back = handlers.on_back
        self._timeout = timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._subscribed: Any = None

    @property
    def running(self) -> bool:
        """The thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> bool:
        """Subscribe now (one round trip, before the caller reads the store's pauses: a pause
        set after that read is pushed), then read in the thread; False when Redis did not
        answer (the thread keeps trying, and ``on_back`` says when it did)."""
        try:
            self._subscribed = self._subscribe()
        except Exception as exc:  # any failure leaves it to the thread, never to the crawl
            self._on_lost(exc)
        subscribed = self._subscribed is not None
        self._thread = threading.Thread(
            target=self._run, name=f"robotstxt-pause-feed {self.channel}", daemon=True
        )
        self._thread.start()
        return subscribed

    def stop(self) -> None:
        """End the thread: it sees the request within :data:`READ_WAIT` s, or once a
        connection attempt in progress times out (it is a daemon: never holds up an exit)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(READ_WAIT + self._timeout + 1.0)

    def _subscribe(self) -> Any:
        pubsub = self._pubsub()
        try:
            pubsub.subscribe(self.channel)
            # Redis confirms: from now on every publication reaches us.
            confirmed = pubsub.get_message(timeout=self._timeout)
            if confirmed is None or confirmed.get("type") != "subscribe":
                raise TimeoutError(f"no confirmation of SUBSCRIBE {self.channel}")
        except BaseException:
            _close(pubsub)
            raise
        return pubsub

    def _run(self) -> None:
        pubsub, self._subscribed = self._subscribed, None
        again = _AGAIN_FIRST
        try:
            while not self._stop.is_set():
                if pubsub is None:
                    if self._stop.wait(again):
                        break
                    try:
                        pubsub = self._subscribe()
                    except Exception:  # still away: try again later
                        again = min(again * 2, _AGAIN_MAX)
                        continue
                    again = _AGAIN_FIRST
                    self._deliver(self._on_back)
                try:
                    message = pubsub.get_message(timeout=READ_WAIT)
                except Exception as exc:  # a lost connection: said once, then subscribe again
                    _close(pubsub)
                    pubsub = None
                    self._deliver(partial(self._on_lost, exc))
                    continue
                if message is not None and message.get("type") == "message":
                    self._received(message.get("data"))
        finally:
            if pubsub is not None:
                _close(pubsub)

    def _received(self, data: Any) -> None:
        pause = read_pause_message(data) if isinstance(data, bytes) else None
        if pause is None:
            logger.debug("Ignoring a message on %s that is not a pause: %r", self.channel, data)
            return
        self._deliver(partial(self._on_pause, *pause))


def _close(pubsub: Any) -> None:
    try:
        pubsub.close()
    except Exception:  # the connection is gone already
        logger.debug("Closing a pause feed's connection failed", exc_info=True)
