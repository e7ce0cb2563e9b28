"""Crawl-delay and Request-rate, applied through Scrapy's download slots (opt-in).

Google ignores both directives, so this runs only with
``ROBOTSTXT_CRAWL_DELAY = True``. Scrapy paces requests per *download slot*
(the host by default; ``download_slot`` meta, ``DOWNLOAD_SLOTS`` or
``CONCURRENT_REQUESTS_PER_IP`` can make it anything): the slot's ``delay``
is the minimum gap between two requests it sends, randomised by the slot's
jitter. So the pacer works on the slot each request actually uses:

- when a request reaches the downloader (``request_reached_downloader``: its
  slot exists and holds the key, the request is not sent yet), the delay
  its origin's robots.txt asks (the larger of ``Crawl-delay`` and
  ``Request-rate``'s seconds per request, capped at
  ``ROBOTSTXT_CRAWL_DELAY_MAX``) is recorded for that slot, and the slot's
  delay is raised so that even the lowest jittered draw keeps that gap;
- several origins on one slot: the largest delay wins;
- a delay the user configured that is larger is never lowered;
- AutoThrottle lowers slot delays after every response (on
  ``response_downloaded``, before the slot sends its next request): the
  pacer's handler, connected after it, raises them back;
- a refresh of robots.txt that changes the directive changes the delay, up
  or down (never below the configured one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import signals

from scrapy_googlerobots.runtime.scrapy_compat import (
    downloader_slot,
    limit_slot_jitter,
    slot_jitter,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_googlerobots.reporting.reporter import Reporter

__all__ = ["CrawlPacer", "DelayLookup", "applied_delay"]

# What the middleware answers for a request: (origin key, a stamp of the
# robots.txt copy in force, a function giving its delay in seconds or None),
# or None when no copy is known (yet): the slot is left as it is.
DelayLookup = tuple[str, object, "Callable[[], float | None]"]

# With a jitter this close to 100 % a draw can come near 0 s: no delay is
# safe, so a paced slot's jitter is brought down to this.
_MAX_SAFE_JITTER = 0.5


def applied_delay(asked: float | None, maximum: float) -> float | None:
    """The delay paced for an origin whose robots.txt asks ``asked`` seconds.

    None when it asks none (or 0); ``maximum`` (``ROBOTSTXT_CRAWL_DELAY_MAX``)
    when it asks more, or None if that is 0. ``scrapy robots`` prints this too.
    """
    if not asked or asked <= 0:
        return None
    if asked > maximum:
        return maximum if maximum > 0 else None
    return asked


class CrawlPacer:
    """Keeps every download slot's delay at or above its origins' robots.txt delay."""

    def __init__(
        self,
        crawler: Crawler,
        reporter: Reporter,
        lookup: Callable[[Request], DelayLookup | None],
        *,
        maximum: float,
    ) -> None:
        self._crawler = crawler
        self._reporter = reporter
        self._lookup = lookup
        self._maximum = maximum
        settings = crawler.settings
        self._default_delay = settings.getfloat("DOWNLOAD_DELAY")
        self._slot_settings: dict[str, Any] = settings.getdict("DOWNLOAD_SLOTS")
        # origin key -> (stamp of the robots.txt copy, its delay after the cap)
        self._delays: dict[str, tuple[object, float | None]] = {}
        # slot key -> origin key -> delay, for origins with a delay
        self._slots: dict[str, dict[str, float]] = {}
        # slot key -> the delay the pacer last set on it
        self._applied: dict[str, float] = {}
        self._paced: set[str] = set()
        self._capped: set[str] = set()
        manager = crawler.signals
        manager.connect(self._on_request_reached, signal=signals.request_reached_downloader)
        if settings.getbool("AUTOTHROTTLE_ENABLED"):
            manager.connect(self._on_response_downloaded, signal=signals.response_downloaded)

    def _on_request_reached(self, request: Request, **_: Any) -> None:
        found = self._lookup(request)
        if found is None:
            return
        origin, stamp, delay_of = found
        known = self._delays.get(origin)
        if known is None or known[0] != stamp:
            known = (stamp, self._capped_delay(origin, delay_of()))
            self._delays[origin] = known
        delay = known[1]
        key = request.meta.get("download_slot")
        if not isinstance(key, str):
            return
        origins = self._slots.get(key)
        if delay is None:
            if origins is None or origin not in origins:
                return  # nothing asked, nothing applied: the common case, kept cheap
            del origins[origin]  # a refresh dropped the directive
        else:
            if origins is None:
                origins = self._slots[key] = {}
            if origins.get(origin) != delay:
                origins[origin] = delay
                self._count(origin)
        self._apply(key, downloader_slot(self._crawler.engine, key))

    def _on_response_downloaded(self, request: Request, **_: Any) -> None:
        key = request.meta.get("download_slot")
        if isinstance(key, str) and key in self._slots:
            self._apply(key, downloader_slot(self._crawler.engine, key))

    def _capped_delay(self, origin: str, delay: float | None) -> float | None:
        if delay is not None and delay > self._maximum and origin not in self._capped:
            self._capped.add(origin)  # one line per origin, refreshes included
            self._reporter.crawl_delay_capped(origin, delay, self._maximum)
        return applied_delay(delay, self._maximum)

    def _count(self, origin: str) -> None:
        if origin not in self._paced:
            self._paced.add(origin)
            self._reporter.crawl_delay_origin(origin, self._delays[origin][1] or 0.0)

    def _apply(self, key: str, slot: Any) -> None:
        """Bring ``slot``'s delay to what its origins ask, with the jitter taken into account."""
        if slot is None:
            return
        origins = self._slots.get(key)
        wanted = max(origins.values()) if origins else 0.0
        jitter = slot_jitter(slot)
        if wanted and jitter > _MAX_SAFE_JITTER:
            limit_slot_jitter(slot, _MAX_SAFE_JITTER)
            jitter = slot_jitter(slot)
        # Scrapy draws each gap from delay * (1 - jitter) to delay * (1 + jitter).
        needed = wanted / (1.0 - jitter) if wanted else 0.0
        current = float(slot.delay)
        applied = self._applied.get(key)
        if current < needed:
            slot.delay = needed
            self._applied[key] = needed
        elif applied is not None and current == applied and needed < applied:
            # Our own value, and robots.txt asks less now: back down, never
            # below what the user configured for the slot.
            slot.delay = max(needed, self._configured_delay(key))
            self._applied[key] = slot.delay
            if not origins:
                del self._applied[key]

    def _configured_delay(self, key: str) -> float:
        per_slot = self._slot_settings.get(key)
        if isinstance(per_slot, dict) and "delay" in per_slot:
            return float(per_slot["delay"])
        return self._default_delay
