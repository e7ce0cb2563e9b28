"""What a site's "slow down" did to the crawl: its log lines, ``robotstxt/slow_down/`` and
``robotstxt/pace/`` stats, and the end-of-crawl line naming the origins that asked.

The pause, slow-down and cluster pacing units (``waiting/slow_down.py``) decide;
this one words and counts.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.reporting.reporter import debug_shown

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["OnlyWaiting", "OriginSlowDown", "SlowDownReport", "Waiting", "waiting_line"]

logger = logging.getLogger(__name__)

# Origins named in the end-of-crawl line and the waiting line (the rest are counted).
_SUMMARY_ORIGINS = 10


@dataclass(frozen=True, slots=True)
class Waiting:
    """Requests of one origin that wait, for the "only waiting work remains" line."""

    origin: str
    requests: int
    what: str
    """What they wait for: ``"robots.txt"``, ``"tdmrep.json"``, ``"a pause"``, ``"send slots"``."""
    until: float | None
    """Wall-clock time they wait until at the latest (None: not known)."""
    setting: str
    """The setting that shortens the wait."""


@dataclass(slots=True)
class OriginSlowDown:
    """One origin's "slow down" answers in this crawl, for the summary."""

    pauses: int = 0
    paused_seconds: float = 0.0
    slow_downs: int = 0
    statuses: str = ""


class SlowDownReport:
    """Log lines and stats of pauses, slow-downs and cluster send slots (one per crawler)."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats: Any = crawler.stats
        self.origins: dict[str, OriginSlowDown] = {}
        self._shared: set[str] = set()

    def _origin(self, origin: str, status: int) -> OriginSlowDown:
        entry = self.origins.get(origin)
        if entry is None:
            entry = self.origins[origin] = OriginSlowDown()
        if str(status) not in entry.statuses.split(","):
            entry.statuses = f"{entry.statuses},{status}".lstrip(",")
        return entry

    # -- pauses -----------------------------------------------------------------

    def paused(self, origin: str, status: int, seconds: float, reason: str, *, drop: bool) -> None:
        """This worker's response asked ``origin`` to pause ``seconds`` (``Retry-After``)."""
        self.stats.inc_value(f"robotstxt/slow_down/paused/{status}")
        self.stats.inc_value("robotstxt/slow_down/seconds_paused", round(seconds))
        entry = self._origin(origin, status)
        entry.pauses += 1
        entry.paused_seconds += seconds
        if drop:
            logger.warning(
                "%(origin)s asks for a pause of %(seconds).0f s (%(reason)s), longer than "
                "ROBOTSTXT_SLOW_DOWN_MAX_PAUSE: nothing is sent to it meanwhile and its requests "
                "are dropped until then (raise the setting to hold them instead)",
                {"origin": origin, "seconds": seconds, "reason": reason},
            )
        else:
            logger.info(
                "Pausing %(origin)s for %(seconds).0f s, for every worker sharing the store "
                "(%(reason)s); its requests wait meanwhile",
                {"origin": origin, "seconds": seconds, "reason": reason},
            )

    def learned_pause(
        self, origin: str, seconds: float, reason: str, *, pushed: bool = False
    ) -> None:
        """Another worker paused ``origin`` (read from the shared store, or ``pushed`` by its
        feed the moment it was set)."""
        self.stats.inc_value("robotstxt/slow_down/paused/from_store")
        if pushed:
            self.stats.inc_value("robotstxt/slow_down/paused/pushed")
        if debug_shown():
            logger.debug(
                "%(origin)s is paused for %(seconds).1f s more by another worker (%(reason)s; "
                "%(how)s)",
                {
                    "origin": origin,
                    "seconds": seconds,
                    "reason": reason,
                    "how": "pushed by the store" if pushed else "read from the store",
                },
            )

    def bad_retry_after(self, origin: str, problem: str) -> None:
        self.stats.inc_value("robotstxt/slow_down/bad_retry_after")
        logger.info(
            "Ignoring %(problem)s from %(origin)s: slowing it down instead",
            {"problem": problem, "origin": origin},
        )

    def held(self, request: Request, reason: str, seconds: float) -> None:
        """``request`` waits ``seconds`` for its origin's pause to end."""
        self.stats.inc_value("robotstxt/slow_down/held")
        if debug_shown():
            logger.debug(
                "Holding %(request)s for %(seconds).1f s: its origin is paused (%(reason)s)",
                {"request": request, "seconds": seconds, "reason": reason},
            )

    def released(self, count: int) -> None:
        self.stats.inc_value("robotstxt/slow_down/released", count)

    def dropped(self, request: Request, reason: str) -> str:
        """``request`` is dropped during a pause beyond the cap; the message its errback gets."""
        self.stats.inc_value("robotstxt/slow_down/dropped")
        message = f"its origin asked for a pause beyond ROBOTSTXT_SLOW_DOWN_MAX_PAUSE ({reason})"
        if debug_shown():
            logger.debug(
                "Dropped %(request)s: %(message)s", {"request": request, "message": message}
            )
        return message

    # -- slow-downs and send slots ------------------------------------------------

    def slowed(self, origin: str, status: int, delay: float) -> None:
        """``origin`` answered ``status`` without ``Retry-After``: ``delay`` s between requests."""
        self.stats.inc_value(f"robotstxt/slow_down/slowed/{status}")
        self._origin(origin, status).slow_downs += 1
        logger.info(
            "%(origin)s answered %(status)d without Retry-After: at least %(delay)g s between "
            "its requests until it recovers",
            {"origin": origin, "status": status, "delay": delay},
        )

    def recovered(self, origin: str) -> None:
        self.stats.inc_value("robotstxt/slow_down/recovered")
        if debug_shown():
            logger.debug("%(origin)s recovered: no slow-down any more", {"origin": origin})

    def slot(self, origin: str, wait: float, *, shared: bool) -> None:
        """A send slot was reserved for ``origin`` (``wait`` s ahead; ``shared``: in the store)."""
        self.stats.inc_value("robotstxt/pace/reservations")
        if shared and origin not in self._shared:
            self._shared.add(origin)
            self.stats.inc_value("robotstxt/pace/shared_origins")
        if wait > 0:
            self.stats.inc_value("robotstxt/pace/held")

    def slot_held(self, request: Request, seconds: float) -> None:
        """``request`` waits ``seconds`` outside the scheduler and the downloader for its slot."""
        self.stats.inc_value("robotstxt/pace/parked")
        if debug_shown():
            logger.debug(
                "Holding %(request)s for %(seconds).1f s: its send slot is not due yet",
                {"request": request, "seconds": seconds},
            )

    def slots_released(self, count: int) -> None:
        self.stats.inc_value("robotstxt/pace/released", count)

    def slot_missed(self, request: Request, late: float) -> None:
        """``request`` came back ``late`` s after its slot: it reserves another."""
        self.stats.inc_value("robotstxt/pace/missed")
        if debug_shown():
            logger.debug(
                "%(request)s came back %(late).1f s after its send slot: reserving another",
                {"request": request, "late": late},
            )

    # -- the close ----------------------------------------------------------------

    def summary_line(self) -> str | None:
        """The end-of-crawl line naming the origins that asked to slow down, or None."""
        if not self.origins:
            return None
        parts = []
        for origin, entry in sorted(self.origins.items(), key=lambda item: -item[1].paused_seconds)[
            :_SUMMARY_ORIGINS
        ]:
            said = []
            if entry.pauses:
                said.append(f"{entry.pauses} pause(s), {entry.paused_seconds:.0f} s in all")
            if entry.slow_downs:
                said.append(f"{entry.slow_downs} slow-down(s)")
            parts.append(f"{origin} ({entry.statuses}: {', '.join(said)})")
        more = len(self.origins) - _SUMMARY_ORIGINS
        tail = f" and {more} more" if more > 0 else ""
        return f"Sites that asked to slow down: {'; '.join(parts)}{tail}"

    def log_summary(self) -> None:
        line = self.summary_line()
        if line is not None:
            logger.info(line)


class OnlyWaiting:
    """The crawl is idle but for requests that wait: one INFO line saying so (again only
    when the origins waited for change), instead of minutes of "Crawled N pages (at 0
    pages/min)"."""

    def __init__(self) -> None:
        self._noted: frozenset[str] = frozenset()

    def note(self, waiting: list[Waiting], spider: Any = None) -> None:
        origins = frozenset(entry.origin for entry in waiting)
        if not waiting or origins == self._noted:
            return
        self._noted = origins
        logger.info(waiting_line(waiting), extra={"spider": spider})


def waiting_line(waiting: list[Waiting]) -> str:
    """``Only waiting requests remain: 12 requests for 2 origins: http://a.example:80 (5,
    robots.txt, until 10:52:00 UTC at the latest; ROBOTSTXT_UNREACHABLE_MAX_WAIT shortens
    it), …``."""
    total = sum(entry.requests for entry in waiting)
    parts = []
    for entry in sorted(waiting, key=lambda e: -e.requests)[:_SUMMARY_ORIGINS]:
        until = (
            ""
            if entry.until is None
            else time.strftime(", until %H:%M:%S UTC at the latest", time.gmtime(entry.until))
        )
        parts.append(
            f"{entry.origin} ({entry.requests}, {entry.what}{until}; {entry.setting} shortens it)"
        )
    more = len(waiting) - _SUMMARY_ORIGINS
    tail = f" and {more} more origins" if more > 0 else ""
    return (
        f"Only waiting requests remain: {total} request(s) for {len(waiting)} origin(s): "
        f"{'; '.join(parts)}{tail}"
    )
