"""Counts and log lines of one policy file's fetches, for any file.

:class:`FileReports` is the fetch coordinator's
:class:`~scrapy_googlerobots.fetching.policy_file.FetchReports` for a file
whose fetch says only what it found (``tdmrep.json``, or a file a project
adds): ``<prefix>request_count``, ``<prefix>fetch_lease/waits`` and
``<prefix>outcome/<outcome>`` (the prefix is the file's ``stats``), one DEBUG
line per fetch. robots.txt's :class:`~.reporter.Reporter` counts its fetches
the same way (through a :class:`FileReports`) and words its outages itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING

from scrapy.utils.log import failure_to_exc_info

from scrapy_googlerobots.fetching.failures import component_of
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.runtime.wording import counted

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.python.failure import Failure

    from scrapy_googlerobots.fetching.fetcher import FetchResult
    from scrapy_googlerobots.policy.origin import FileKind
    from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["FileReports", "shows_debug", "stat_counter"]

logger = logging.getLogger(__name__)


def shows_debug(log: logging.Logger) -> bool:
    """Whether a DEBUG line of ``log`` (ours) would reach a handler that keeps it.

    Scrapy leaves the root logger at NOTSET and applies ``LOG_LEVEL`` in its
    handlers, so ``logger.isEnabledFor(DEBUG)`` holds at any ``LOG_LEVEL``
    and each DEBUG call builds a record that every handler then discards.
    Lines made per request ask this first (walking a few loggers' handlers
    costs far less than the record).
    """
    if not log.isEnabledFor(logging.DEBUG):
        return False
    current: logging.Logger | None = log
    while current is not None:
        for handler in current.handlers:  # (a loop: a generator per logger costs more)
            if handler.level <= logging.DEBUG:
                return True
        current = current.parent if current.propagate else None
    return False  # only logging.lastResort (WARNING) would see it


def stat_counter(stats: StatsCollector) -> Callable[..., None]:
    """``stats.inc_value``, bound once past the wrapper Scrapy >= 2.13 puts around it on
    every call (it only warns about a ``spider`` argument, which is never passed here);
    the collector's own ``inc_value`` still runs, overridden or not."""
    method = getattr(type(stats), "inc_value", None)
    if method is None:
        return stats.inc_value  # type: ignore[no-any-return]
    return MethodType(method, stats)


class FileReports:
    """Log lines and stats of one file's fetches in one crawl.

    ``absent`` says what a missing file means (``" (TDM reservation unset)"``);
    ``answered(key, result)`` notes each fetch's answer (for the summary);
    ``log``: the logger of its lines (this module's unless said).
    """

    def __init__(
        self,
        crawler: Crawler,
        kind: FileKind,
        *,
        absent: str = "",
        answered: Callable[[str, FetchResult], None] | None = None,
        log: logging.Logger = logger,
    ) -> None:
        self.crawler = crawler
        self.kind = kind
        self._log = log
        self._inc_value = stat_counter(crawler.stats)
        self._absent = f"no {kind.name}{absent}"
        self._answered = answered
        # Components whose exception broke a fetch (one ERROR each).
        self._own_failures: set[str] = set()

    def fetch_started(self) -> None:
        self._inc_value(self.kind.stat("robotstxt/request_count"))

    def lease_wait(self) -> None:
        self._inc_value(self.kind.stat("robotstxt/fetch_lease/waits"))

    def fetch_bug(self, failure: Failure, key: str) -> None:
        self._log.error(
            "Unexpected error fetching %(file)s of %(origin)s",
            {"file": self.kind.name, "origin": key},
            exc_info=failure_to_exc_info(failure),
            extra={"spider": self.crawler.spider},
        )

    def own_failure(self, key: str, exc: BaseException, *, waiting: int) -> None:
        """The fetch failed with the crawl's own exception: one ERROR per component."""
        self._inc_value(self.kind.stat("robotstxt/own_failure"))
        component = component_of(exc)
        if component in self._own_failures:
            return
        self._own_failures.add(component)
        self._log.error(
            "%(file)s of %(origin)s was not fetched: %(component)s raised %(error)s. Not the "
            "site's doing (a bug in that component): the %(waiting)d request(s) waiting for it "
            "fail with it, and so does any request whose fetch it breaks",
            {
                "file": self.kind.name,
                "origin": key,
                "component": component,
                "error": f"{type(exc).__name__}: {exc}".rstrip(": "),
                "waiting": waiting,
            },
            exc_info=(type(exc), exc, exc.__traceback__),
            extra={"spider": self.crawler.spider},
        )

    def outcome(self, key: str, result: FetchResult) -> None:
        """Count a fetch's outcome (and note its answer)."""
        self._inc_value(self.kind.stat(f"robotstxt/outcome/{result.outcome.value}"))
        if self._answered is not None:
            self._answered(key, result)

    def fetched(
        self,
        key: str,
        result: FetchResult,
        record: PolicyRecord,
        previous: PolicyRecord | None,
        *,
        waiting: int,
        now: float,
    ) -> None:
        """Count one fetch's outcome; DEBUG line (an unreachable file means "no file")."""
        self.outcome(key, result)
        if not shows_debug(self._log):
            return
        if result.outcome is FetchOutcome.UNREACHABLE:
            what = (
                "keeping the copy fetched %.0f s ago" % (now - record.fetched_at)
                if record.outcome is not FetchOutcome.UNREACHABLE
                else f"read as {self._absent}"
            )
            when = f"; next attempt in {(record.retry_at or now) - now:.3g} s"
        elif result.outcome is FetchOutcome.RULES:
            what = f"{len(record.body or b'')} bytes"
            when = f", fresh for {record.expires_at - record.fetched_at:.0f} s"
        else:
            what = self._absent
            when = f", fresh for {record.expires_at - record.fetched_at:.0f} s"
        self._log.debug(
            "%(file)s of %(origin)s: %(reason)s%(via)s, %(what)s%(when)s; %(waiting)s released",
            {
                "file": self.kind.name,
                "origin": self.kind.origin_key(key),
                "reason": result.reason,
                "via": f" via {result.redirects[-1]}" if result.redirects else "",
                "what": what,
                "when": when,
                "waiting": counted(waiting, "waiting request"),
            },
            extra={"spider": self.crawler.spider},
        )
