"""What the middleware tells the user: log lines, ``robotstxt/`` stats, ``robots_parsed``.

One :class:`Reporter` per crawler. The other units decide; this one words and
counts their decisions: the per-request lines and stats, and robots.txt's
fetches (counted as any policy file's, :mod:`~.file_reports`). Units that count
their own machinery count it where it happens (download events in
``fetching/fetcher.py``, parked records in ``waiting/``, the stores' health).
"""

from __future__ import annotations

import inspect
import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.log import failure_to_exc_info
from twisted.python.failure import Failure

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import ROBOTS_TXT
from scrapy_googlerobots.reporting.explain import (
    FORBIDDEN_MESSAGE,
    RobotsDecision,
    UsagePreference,
    forbidden,
    forbidden_by,
    usage_forbidden,
)
from scrapy_googlerobots.reporting.file_reports import FileReports, shows_debug, stat_counter
from scrapy_googlerobots.reporting.summary import CrawlSummary
from scrapy_googlerobots.runtime.scrapy_compat import send_signal
from scrapy_googlerobots.runtime.signals import robots_parsed
from scrapy_googlerobots.runtime.wording import counted

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_googlerobots.fetching.fetcher import FetchResult
    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.policy.record import FetchTimings, PolicyRecord
    from scrapy_googlerobots.robotstxt import RobotsTxt
    from scrapy_googlerobots.runtime.config import RobotsConfig

__all__ = ["FORBIDDEN_MESSAGE", "Reporter"]

logger = logging.getLogger(__name__)


def debug_shown() -> bool:
    """Whether a DEBUG line of ours would reach a handler that keeps it (:func:`shows_debug`)."""
    return shows_debug(logger)


class Reporter:
    """Log lines and stats of one crawl's robots.txt decisions and fetches."""

    def __init__(
        self,
        crawler: Crawler,
        config: RobotsConfig,
        timings: FetchTimings,
        robot_parser: Callable[[RobotsTxt], object],
    ) -> None:
        """``robot_parser`` makes the ``robotparser`` argument of ``robots_parsed``."""
        self.crawler = crawler
        self.robot_parser = robot_parser
        self.config = config
        self.timings = timings
        self.stats = crawler.stats
        # Bound once: Scrapy's stats collector wraps attribute access (a cost per request).
        self._inc_value = stat_counter(crawler.stats)
        self.summary = CrawlSummary(declared_use=config.usage)
        self.fetches = FileReports(crawler, ROBOTS_TXT, answered=self.summary.fetched, log=logger)
        """robots.txt's fetch counts, as any file's; :meth:`fetched` words its outages."""
        # Responses given usage preferences, not yet added to the stats: a stats call
        # per response costs more than the rest of the usage check (see flush_counts).
        self._usage_responses = 0
        # Origin key -> (last failure, unreachable since, attempts) of origins
        # unreachable now, for the drop lines; a good fetch removes the entry.
        self._outages: dict[str, tuple[str, float, int]] = {}
        # The clocks-disagree WARNING is logged once per crawl.
        self._clock_ahead_warned = False

    @property
    def _extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider}

    # -- per request ----------------------------------------------------------

    def forbidden(
        self,
        request: Request,
        rules: RobotsTxt,
        url: str,
        token: str,
        origin: OriginRef,
        line: int,
    ) -> IgnoreRequest:
        """Count and log a request robots.txt disallows (``line`` decided), naming the rule.

        ``url`` is the canonical URL the rules were asked about, ``token`` the
        product token. Returns the exception to raise (its message is Scrapy's).
        """
        self._inc_value("robotstxt/forbidden")
        key = (origin.key, line)
        error = forbidden(rules, url, token, origin.origin)
        if not self.summary.count_forbidden(key):
            self.summary.name_rule(key, origin.origin.robots_url, rules.rule_at(line))
        if debug_shown():
            logger.debug(
                "Forbidden by robots.txt: %(request)s (%(decision)s)",
                # worked out once, kept on the exception
                {"request": request, "decision": forbidden_by(error)},
                extra=self._extra,
            )
        return error

    def usage_forbidden(
        self,
        request: Request,
        refused: UsagePreference,
        explain: Callable[[], RobotsDecision],
        origin: str,
    ) -> IgnoreRequest:
        """Count and log a request a usage preference refuses (``refused``: the "no" for a
        declared category, from ``origin``'s robots.txt or the response header); the exception.

        ``explain`` makes the robots.txt decision for the URL when it is first asked for.
        """
        error = usage_forbidden(refused, explain)
        if refused.from_page:
            self._inc_value(f"robotstxt/usage/page_forbidden/{refused.category}")
        elif refused.from_header:
            self._inc_value(f"robotstxt/usage/header_forbidden/{refused.category}")
        else:
            self._inc_value(f"robotstxt/usage/forbidden/{refused.category}")
            key = (origin, refused.line, refused.category)
            self.summary.count_usage_forbidden(key, refused.source, refused.rule)
        if debug_shown():
            logger.debug(
                "Forbidden by usage preference: %(request)s (%(decision)s)",
                {"request": request, "decision": forbidden_by(error)},
                extra=self._extra,
            )
        return error

    def usage_response(self) -> None:
        """A response was given ``usage_preferences`` (robots.txt or its header stated some)."""
        self._usage_responses += 1

    def flush_counts(self) -> None:
        """Add the per-response counts kept here to the stats (at close; any time is fine)."""
        if self._usage_responses:
            self._inc_value("robotstxt/usage/responses", self._usage_responses)
            self._usage_responses = 0

    def crawl_summary(self) -> None:
        """Log the end-of-crawl INFO block."""
        self.flush_counts()
        logger.info(self.summary.render(self.stats.get_stats()), extra=self._extra)

    def not_checked(self, url: str, problem: Exception) -> None:
        if debug_shown():
            logger.debug("Not checking %s against robots.txt: %s", url, problem, extra=self._extra)

    def dropped(
        self,
        request: Request,
        reason: str,
        level: int = logging.INFO,
        *,
        origin: str | None = None,
    ) -> IgnoreRequest:
        """Count and log a request dropped because robots.txt is unreachable; the exception.

        The log line adds what ``origin``'s robots.txt last answered and since
        when it is unreachable; the exception's message is ``reason`` alone.
        """
        self.stats.inc_value("robotstxt/unreachable/dropped")
        outage = self._outages.get(origin) if origin is not None else None
        detail = ""
        if outage is not None:
            last, since, attempts = outage
            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
            detail = f" [robots.txt: {last}; unreachable since {when}, {attempts} attempt(s)]"
        logger.log(
            level,
            "Dropped %(request)s: %(reason)s%(detail)s",
            {"request": request, "reason": reason, "detail": detail},
            extra=self._extra,
        )
        return IgnoreRequest(reason)

    # -- the spider's own robots.txt requests (one fetch per origin) ------------

    def robots_served(self, request: Request, origin: str, age: float) -> None:
        """The spider's request of ``origin``'s robots.txt was answered from the copy
        fetched ``age`` seconds ago (no second download)."""
        self._inc_value("robotstxt/spider_request/served")
        if debug_shown():
            logger.debug(
                "Served %(request)s from the robots.txt of %(origin)s fetched %(age).0f s ago "
                "(not downloaded again)",
                {"request": request, "origin": origin, "age": age},
                extra=self._extra,
            )

    def robots_not_served(self, reason: str) -> None:
        """The spider's request of a robots.txt is downloaded: the copy cannot stand for it
        (``reason``: ``copy``, ``expired`` or ``request``)."""
        self._inc_value(f"robotstxt/spider_request/downloaded/{reason}")

    # -- pacing (ROBOTSTXT_CRAWL_DELAY) -------------------------------------------

    def crawl_delay_origin(self, origin: str, delay: float) -> None:
        """An origin is paced for the first time."""
        self.stats.inc_value("robotstxt/crawl_delay/origins")
        logger.debug(
            "Pacing %(origin)s: at least %(delay)g s between requests (its robots.txt "
            "Crawl-delay / Request-rate)",
            {"origin": origin, "delay": delay},
            extra=self._extra,
        )

    def crawl_delay_capped(self, origin: str, asked: float, applied: float) -> None:
        """An origin asks for more than ROBOTSTXT_CRAWL_DELAY_MAX (once per origin)."""
        self.stats.inc_value("robotstxt/crawl_delay/capped")
        logger.info(
            "robots.txt of %(origin)s asks for %(asked)g s between requests; applying "
            "%(applied)g s (ROBOTSTXT_CRAWL_DELAY_MAX; raise it to honour more)",
            {"origin": origin, "asked": asked, "applied": applied},
            extra=self._extra,
        )

    def deferred(self, count: int = 1) -> None:
        self.stats.inc_value("robotstxt/unreachable/deferred", count)

    def released(self, count: int = 1) -> None:
        self.stats.inc_value("robotstxt/unreachable/released", count)

    def parked(self) -> None:
        self.stats.inc_value("robotstxt/parked")

    def handed_back(self) -> None:
        """A request met its origin's first wait in the downloader: back to the engine, to park."""
        self.stats.inc_value("robotstxt/handed_back")

    def inline_wait(self) -> None:
        self.stats.inc_value("robotstxt/inline_waits")

    def clock_ahead(self, request: Request, lead: float) -> None:
        """``request`` was first parked by a clock ``lead`` seconds ahead of this worker's."""
        self.stats.inc_value("robotstxt/parked/clock_ahead")
        if self._clock_ahead_warned:
            return
        self._clock_ahead_warned = True
        logger.warning(
            "%(request)s was first parked %(lead).1f s in this worker's future: the clocks of "
            "the workers sharing the robots.txt store disagree (keep them in sync, e.g. NTP). "
            "Its wait counts from now; a clock behind lets handed-over requests wait longer "
            "than ROBOTSTXT_UNREACHABLE_MAX_WAIT, one ahead drops them sooner",
            {"request": request, "lead": lead},
            extra=self._extra,
        )

    # -- the close ------------------------------------------------------------

    def errback_dropped(self, request: Request, reason: str, origin: str | None = None) -> None:
        """Drop a parked request outside Scrapy's flow (spider closing): count, errback once."""
        # DEBUG: the close logs one INFO line with the total instead.
        ignored = self.dropped(request, reason, logging.DEBUG, origin=origin)
        errback = request.errback
        if errback is None:
            return
        try:
            failure = Failure(ignored)  # type: ignore[no-untyped-call]
            failure.request = request  # type: ignore[attr-defined]  # as Scrapy sets it
            output = errback(failure)
            if inspect.iscoroutine(output):
                deferred_from_coro(output).addErrback(self._errback_error, request)
            elif inspect.isasyncgen(output):
                deferred_from_coro(_drain_async(output)).addErrback(self._errback_error, request)
            elif inspect.isgenerator(output):
                # Run the errback's body; what it yields cannot be scheduled any more.
                for _ in output:
                    pass
        except Exception:
            self._errback_error(Failure(), request)  # type: ignore[no-untyped-call]

    def _errback_error(self, failure: Failure, request: Request) -> None:
        logger.error(
            "Error in the errback of %(request)s (dropped: the spider is closing)",
            {"request": request},
            exc_info=failure_to_exc_info(failure),
            extra=self._extra,
        )

    def closing_dropped(self, count: int) -> None:
        logger.info(
            "Spider closing: dropped %(requests)s waiting for robots.txt",
            {"requests": counted(count, "request that was", "requests that were")},
            extra=self._extra,
        )

    def handed_over(self, kept: int, requeued: int, *, store: Any, fetch_leases: int) -> None:
        """Parked requests kept for the rest of the crawl at a stop (waiting.handover)."""
        if fetch_leases:
            self.stats.inc_value("robotstxt/fetch_lease/released_at_close", fetch_leases)
        if not kept and not requeued:
            return
        self.stats.inc_value("robotstxt/parked/handed_over", kept + requeued)
        if kept:
            self.stats.inc_value("robotstxt/parked/handed_over/store", kept)
        if requeued:
            self.stats.inc_value("robotstxt/parked/handed_over/scheduler", requeued)
        where = []
        if kept:
            description = getattr(store, "description", "the robots.txt store")
            where.append(
                f"{kept} left in {description} for another worker or the resumed crawl to adopt"
            )
        if requeued:
            where.append(f"{requeued} put back into the scheduler, which keeps its queue")
        logger.info(
            "Spider closing: handed over %(requests)s waiting for robots.txt: %(where)s",
            {
                "requests": counted(kept + requeued, "request that was", "requests that were"),
                "where": "; ".join(where),
            },
            extra=self._extra,
        )

    def requeue_failed(self, request: Request, error: Exception) -> None:
        logger.warning(
            "Spider closing: the scheduler did not take back %(request)s, which was waiting for "
            "robots.txt (%(error)s); it is dropped",
            {"request": request, "error": error},
            extra=self._extra,
        )

    # -- fetches --------------------------------------------------------------

    def fetch_started(self) -> None:
        self.fetches.fetch_started()

    def lease_wait(self) -> None:
        self.fetches.lease_wait()

    def fetch_bug(self, failure: Failure, key: str) -> None:
        self.fetches.fetch_bug(failure, key)

    def own_failure(self, key: str, exc: BaseException, *, waiting: int) -> None:
        self.fetches.own_failure(key, exc, waiting=waiting)

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
        """Log and count one fetch's outcome (``waiting``: requests waiting for it)."""
        self.fetches.outcome(key, result)
        if result.outcome is not FetchOutcome.UNREACHABLE:
            self._outages.pop(key, None)
            self._good_fetch(key, result, record, previous, waiting)
            return
        if len(self._outages) >= 100_000:  # bounded, like the summary
            self._outages.clear()
        self._outages[key] = (result.reason, record.unreachable_since or now, record.failures)
        extra = self._extra
        args = {
            "origin": key,
            "reason": result.reason,
            "next": (record.retry_at or 0.0) - now,
            "failures": record.failures,
            "waiting": counted(waiting, "request waits", "requests wait"),
        }
        if _is_unexpected(result.exception):
            logger.error(
                "Error downloading robots.txt of %(origin)s: %(reason)s",
                args,
                exc_info=result.exception,
                extra=extra,
            )
        if record.outcome is not FetchOutcome.UNREACHABLE:
            self.stats.inc_value("robotstxt/unreachable/stale_kept")
            logger.log(
                logging.WARNING if record.failures == 1 else logging.DEBUG,
                "robots.txt of %(origin)s could not be refreshed (%(reason)s); keeping the copy "
                "fetched %(age).0f s ago; next attempt in %(next).3g s",
                {**args, "age": now - record.fetched_at},
                extra=extra,
            )
            return
        self._unreachable(record, previous, args, now)

    def _good_fetch(
        self,
        key: str,
        result: FetchResult,
        record: PolicyRecord,
        previous: PolicyRecord | None,
        waiting: int,
    ) -> None:
        if previous is not None and previous.unreachable_since is not None:
            logger.info(
                "robots.txt of %(origin)s is reachable again after %(outage).0f s "
                "(%(reason)s); %(waiting)s released",
                {
                    "origin": key,
                    "outage": record.fetched_at - previous.unreachable_since,
                    "reason": result.reason,
                    "waiting": counted(waiting, "waiting request"),
                },
                extra=self._extra,
            )
        if not debug_shown():
            return
        logger.debug(
            "robots.txt of %(origin)s: %(reason)s%(via)s, %(what)s, fresh for %(ttl).0f s",
            {
                "origin": key,
                "reason": result.reason,
                "via": f" via {result.redirects[-1]}" if result.redirects else "",
                "what": (
                    f"{len(record.body or b'')} bytes of rules"
                    if record.outcome is FetchOutcome.RULES
                    else "no rules (everything allowed)"
                ),
                "ttl": record.expires_at - record.fetched_at,
            },
            extra=self._extra,
        )

    def _unreachable(
        self,
        record: PolicyRecord,
        previous: PolicyRecord | None,
        args: dict[str, Any],
        now: float,
    ) -> None:
        since = record.unreachable_since or 0.0
        allow_after = self.config.unreachable_allow_after
        if now - since >= allow_after:
            self.stats.inc_value("robotstxt/unreachable/allow_after")
            # WARNING when the limit is first crossed, DEBUG at later attempts.
            first_time = True
            if previous is not None and previous.retry_at is not None:
                last_attempt = previous.retry_at - self.timings.backoff(previous.failures)
                first_time = last_attempt - since < allow_after
            logger.log(
                logging.WARNING if first_time else logging.DEBUG,
                "robots.txt of %(origin)s unreachable for more than "
                "ROBOTSTXT_UNREACHABLE_ALLOW_AFTER (%(limit).0f s) with no copy ever fetched: "
                "everything allowed; next attempt in %(next).3g s",
                {**args, "limit": allow_after},
                extra=self._extra,
            )
            return
        if self.config.unreachable == "disallow":
            what = "its requests are dropped"
        else:
            what = "%(waiting)s for it"
        logger.log(
            logging.WARNING if record.failures == 1 else logging.INFO,
            "robots.txt of %(origin)s unreachable (%(reason)s, attempt %(failures)d): "
            + what
            + "; next attempt in %(next).3g s",
            args,
            extra=self._extra,
        )

    async def robots_parsed(
        self, record: PolicyRecord, rules: RobotsTxt, request: Request | None
    ) -> None:
        """Send ``robots_parsed`` for a fetch that yielded a policy: Scrapy's signal on
        Scrapy 2.18+, :data:`scrapy_googlerobots.signals.robots_parsed` (the same object
        there) on every version."""
        parser = self.robot_parser(rules)
        await send_signal(self.crawler.signals, robots_parsed, robotparser=parser, request=request)


async def _drain_async(output: Any) -> None:
    async for _ in output:
        pass


def _is_unexpected(exc: BaseException | None) -> bool:
    """True for a download failure that is not a network problem (a bug worth a traceback)."""
    """True for a download failure that is not a network problem (a bug worth a traceback)."""
    if exc is None:
        return False
    import scrapy.exceptions as scrapy_exceptions
    from twisted.internet import error as internet_error
    from twisted.internet.defer import CancelledError
    from twisted.internet.defer import TimeoutError as DeferredTimeoutError
    from twisted.web._newclient import ResponseFailed, ResponseNeverReceived

    expected: tuple[type[BaseException], ...] = (
        OSError,
        internet_error.ConnectError,
        internet_error.ConnectionLost,
        internet_error.ConnectionDone,
        internet_error.DNSLookupError,
        internet_error.TimeoutError,
        DeferredTimeoutError,
        CancelledError,
        ResponseFailed,
        ResponseNeverReceived,
    )
    for name in (
        "CannotResolveHostError",
        "DownloadConnectionRefusedError",
        "DownloadTimeoutError",
        "DownloadCancelledError",
        "DownloadFailedError",
        "ResponseDataLossError",
        "UnsupportedURLSchemeError",
        "NotSupported",
    ):
        found = getattr(scrapy_exceptions, name, None)
        if isinstance(found, type):
            expected += (found,)
    return not isinstance(exc, expected)
