"""What differs between the Scrapy versions we support, decided once, from the installed Scrapy.

Everything here looks at Scrapy's *classes* and version, never at attributes of
the crawler or engine a caller handed us: those may be test doubles
(``MagicMock`` answers every ``getattr`` with a truthy object), and a drop-in
middleware must behave under the doubles other people's tests build.

Scrapy has no public signal for "the spider has begun closing"
(``spider_closed`` comes only after in-progress downloads have finished and
the scheduler has closed). Two functions stand in for it, and they are the
only places that read Scrapy internals, checking what they read by type:
:func:`engine_is_closing` (polled while requests wait) and
:func:`call_before_scheduler_close` (the last moment requests can still go to
the scheduler; it reaches the scheduler through the public
``engine.scheduler`` from Scrapy 2.19, through the engine's slot before).
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.core.downloader import Slot
from scrapy.core.engine import ExecutionEngine
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.signalmanager import SignalManager
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scrapy import Request
    from scrapy.http import Response

__all__ = [
    "ENGINE_HAS_DOWNLOAD_ASYNC",
    "PROCESS_REQUEST_IS_COROUTINE",
    "REQUEST_SCHEDULED_CAN_DROP",
    "SCRAPY_VERSION",
    "call_before_scheduler_close",
    "close_spider",
    "crawler_engine",
    "downloader_full",
    "downloader_slot",
    "duplicate_filter",
    "engine_download",
    "engine_is_closing",
    "engine_is_running",
    "engine_takes_requests_back",
    "limit_slot_jitter",
    "seen_by_filter",
    "send_signal",
    "slot_jitter",
]


logger = logging.getLogger(__name__)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


SCRAPY_VERSION: tuple[int, ...] = _version(scrapy.__version__)
"""The installed Scrapy's (major, minor, patch)."""

PROCESS_REQUEST_IS_COROUTINE: bool = inspect.iscoroutinefunction(
    RobotsTxtMiddleware.process_request
)
"""The stock middleware's ``process_request`` is ``async def`` (Scrapy >= 2.14).

Otherwise it returns a Deferred for every request it checks. Ours follows the
same convention, so code written against the stock class works unchanged.
"""

ENGINE_HAS_DOWNLOAD_ASYNC: bool = inspect.iscoroutinefunction(
    getattr(ExecutionEngine, "download_async", None)
)
"""``ExecutionEngine.download_async`` exists (Scrapy >= 2.14); before, ``download`` (a Deferred)."""

_SLOT_HAS_JITTER: bool = "jitter" in inspect.signature(Slot).parameters
"""``Slot.jitter`` exists (Scrapy 2.19, ``DOWNLOAD_DELAY_JITTER``); before, ``randomize_delay``."""

_ENGINE_HAS_CLOSE_SPIDER_ASYNC: bool = inspect.iscoroutinefunction(
    getattr(ExecutionEngine, "close_spider_async", None)
)
"""``ExecutionEngine.close_spider_async`` (Scrapy >= 2.14), else ``close_spider(spider, why)``."""

_SIGNALS_HAVE_SEND_ASYNC: bool = inspect.iscoroutinefunction(
    getattr(SignalManager, "send_catch_log_async", None)
)
"""``SignalManager.send_catch_log_async`` exists (Scrapy >= 2.14), else the Deferred one."""

REQUEST_SCHEDULED_CAN_DROP: bool = SCRAPY_VERSION >= (2, 11, 2)
"""A ``request_scheduled`` handler may drop a request by raising ``IgnoreRequest`` (2.11.2+)."""


def engine_download(engine: Any, request: Request) -> Awaitable[Response]:
    """Start downloading ``request`` through ``engine`` outside the scheduler; await the result.

    The engine is called here, synchronously, as the stock middleware calls it
    (before Scrapy 2.14 the download starts at once), with this Scrapy's API.
    """
    if ENGINE_HAS_DOWNLOAD_ASYNC:
        return engine.download_async(request)  # type: ignore[no-any-return]
    return maybe_deferred_to_future(engine.download(request))  # type: ignore[no-any-return]


async def send_signal(manager: Any, signal: object, **kwargs: Any) -> None:
    """Send ``signal`` through the crawler's signal ``manager`` as Scrapy sends its own:
    every receiver called, asynchronous ones (coroutines, Deferreds) awaited, and
    their errors caught and logged."""
    if _SIGNALS_HAVE_SEND_ASYNC:
        await manager.send_catch_log_async(signal=signal, **kwargs)
    else:  # Scrapy < 2.14: receivers may return Deferreds (or coroutines, wrapped)
        await maybe_deferred_to_future(manager.send_catch_log_deferred(signal=signal, **kwargs))


def close_spider(engine: Any, spider: Any, reason: str) -> None:
    """Begin closing ``spider`` with the finish reason ``reason``, with this Scrapy's API."""
    if _ENGINE_HAS_CLOSE_SPIDER_ASYNC:
        deferred_from_coro(engine.close_spider_async(reason=reason))
    else:
        engine.close_spider(spider, reason)


def engine_is_running(engine: Any) -> bool:
    """False while a real engine has not started yet (``spider_opened`` runs before it does).

    Reads the public ``running`` attribute; only a real bool counts, so a test
    double's engine is taken as running.
    """
    try:
        running = vars(engine).get("running")
    except TypeError:  # None, or no __dict__
        return engine is not None
    return running if isinstance(running, bool) else True


def engine_takes_requests_back(engine: Any) -> bool:
    """True when ``engine`` is a running Scrapy engine, which acts on a Request
    that ``process_request`` returns (scheduled again, or downloaded again for
    ``engine.download``).

    A test double's engine (``MagicMock``, even with ``spec``) is not: code
    calling ``process_request`` directly expects the stock answer, after a wait.
    """
    if not isinstance(engine, ExecutionEngine):
        return False
    try:
        return vars(engine).get("running") is True
    except TypeError:
        return False


def downloader_full(engine: Any, holds: Callable[[Request], bool]) -> bool:
    """True when ``engine``'s downloader takes no more requests (``CONCURRENT_REQUESTS``)
    counting only the requests in progress that ``holds`` says keep their place.
    False for anything but a running Scrapy engine."""
    if not engine_takes_requests_back(engine):
        return False
    downloader = getattr(engine, "downloader", None)
    total = getattr(downloader, "total_concurrency", 0)
    active = getattr(downloader, "active", ())
    if not isinstance(total, int) or total <= 0 or len(active) < total:
        return False
    return sum(1 for request in active if holds(request)) >= total


def engine_is_closing(engine: Any) -> bool:
    """True once ``engine`` has begun closing its spider (Ctrl-C, ``CLOSESPIDER_*``, ``stop()``).

    Reads the engine's slot (``_slot`` from Scrapy 2.13, ``slot`` before): its
    ``closing`` is a Deferred from the first moment of the close. Only a real
    Deferred counts, so a test double's engine never looks closing.
    """
    if engine is None:
        return False
    try:
        attributes = vars(engine)
    except TypeError:  # no __dict__: not an engine we know how to read
        return False
    slot = attributes.get("_slot", attributes.get("slot"))
    return isinstance(getattr(slot, "closing", None), Deferred)


def crawler_engine(crawler: Any) -> ExecutionEngine | None:
    """``crawler``'s engine when it is a real Scrapy engine; None before it exists, or a double."""
    try:
        engine = crawler.engine
    except (AttributeError, RuntimeError):  # Scrapy 2.19 raises before the crawl starts
        return None
    return engine if isinstance(engine, ExecutionEngine) else None


def _engine_scheduler(engine: ExecutionEngine) -> Any:
    """The scheduler of ``engine``'s open spider, or None."""
    if isinstance(getattr(type(engine), "scheduler", None), property):
        return engine.scheduler  # public from Scrapy 2.19
    # Before 2.19 the scheduler hangs off the engine's slot: the public
    # ``slot`` up to 2.12, ``_slot`` from 2.13 (no public way to reach it).
    attributes = vars(engine)
    slot = attributes.get("slot", attributes.get("_slot"))
    return getattr(slot, "scheduler", None)


def seen_by_filter(df: Any, request: Request) -> bool:
    """Whether duplicate filter ``df`` has seen ``request``, asked without recording it.

    Scrapy's ``RFPDupeFilter`` (its fingerprint set: bytes from 2.13, hex strings
    before) and scrapy-redis's (its Redis set); False for a filter it cannot ask.
    """
    own = getattr(df, "_fingerprints", None)
    if isinstance(own, set) and callable(getattr(df, "_fingerprint", None)):
        return df._fingerprint(request) in own  # Scrapy >= 2.13
    if callable(getattr(df, "request_fingerprint", None)):
        server, key = getattr(df, "server", None), getattr(df, "key", None)
        if server is not None and isinstance(key, str):  # scrapy-redis
            return bool(server.sismember(key, df.request_fingerprint(request)))
        fingerprints = df.__dict__.get("fingerprints")
        if isinstance(fingerprints, set):  # Scrapy < 2.13
            return df.request_fingerprint(request) in fingerprints
    return False


def duplicate_filter(engine: Any) -> Any:
    """The duplicate filter of ``engine``'s scheduler (``scheduler.df``: Scrapy's and
    scrapy-redis's), or None when there is none that answers ``request_seen``."""
    scheduler = _engine_scheduler(engine) if engine is not None else None
    df = getattr(scheduler, "df", None)
    return df if callable(getattr(df, "request_seen", None)) else None


def call_before_scheduler_close(engine: Any, callback: Callable[[], None]) -> bool:
    """Run ``callback`` when ``engine`` is about to close its scheduler; False if it cannot.

    Scrapy sends no signal when a spider begins closing, and ``spider_closed``
    comes after the scheduler has closed (a ``JOBDIR`` queue is written, a
    scrapy-redis queue flushed unless persisted). The last moment at which
    requests can still go to the scheduler, on every supported Scrapy, is
    the engine's call to ``scheduler.close(reason)``: this wraps that method
    on the scheduler instance (a test double's engine is left alone). An
    error in ``callback`` is logged; the scheduler closes regardless.
    """
    if not isinstance(engine, ExecutionEngine):
        return False
    scheduler = _engine_scheduler(engine)
    close = getattr(scheduler, "close", None)
    if scheduler is None or not callable(close):
        return False

    def closing(*args: Any, **kwargs: Any) -> Any:
        try:
            callback()
        except Exception:
            logger.exception("Error while handing over the requests waiting for robots.txt")
        return close(*args, **kwargs)

    try:
        scheduler.close = closing
    except (AttributeError, TypeError):  # __slots__, a read-only attribute
        return False
    return True


def downloader_slot(engine: Any, key: object) -> Any:
    """The download slot ``key`` names (``engine.downloader.slots``), or None.

    ``Downloader.slots`` is public (AutoThrottle adjusts slots through it);
    only a real dict counts, so a test double's engine has no slots.
    """
    slots = getattr(getattr(engine, "downloader", None), "slots", None)
    if not isinstance(slots, dict) or not isinstance(key, str):
        return None
    return slots.get(key)


def slot_jitter(slot: Any) -> float:
    """How far this Scrapy may randomise ``slot``'s delay, as a fraction (0.5: +-50 %).

    ``Slot.jitter`` from Scrapy 2.19 (``DOWNLOAD_DELAY_JITTER``), the boolean
    ``randomize_delay`` (+-50 %) before.
    """
    if _SLOT_HAS_JITTER:
        jitter = getattr(slot, "jitter", 0.0)
        valid = isinstance(jitter, (int, float)) and not isinstance(jitter, bool)
        return max(float(jitter), 0.0) if valid else 0.0
    return 0.5 if getattr(slot, "randomize_delay", False) is True else 0.0


def limit_slot_jitter(slot: Any, jitter: float) -> None:
    """Lower ``slot``'s randomisation to ``jitter`` (a fraction) with this Scrapy's API."""
    if _SLOT_HAS_JITTER:
        slot.jitter = jitter
    elif jitter <= 0:
        slot.randomize_delay = False
