"""What the middleware tells the user about TDMRep: log lines and ``robotstxt/tdmrep/`` stats.

:class:`TdmReports` words and counts the ``tdmrep.json`` fetches (it is the
fetch coordinator's :class:`~scrapy_googlerobots.fetching.coordinator.FetchReports`
for them) and the requests a reservation refuses; the end-of-crawl summary
(:class:`~scrapy_googlerobots.reporting.summary.CrawlSummary`) gets its TDMRep lines
from the counts kept here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.log import failure_to_exc_info

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.tdm import TDM_STORE_PREFIX, tdm_store_key
from scrapy_googlerobots.reporting.explain import forbidden_by, tdm_forbidden
from scrapy_googlerobots.reporting.reporter import debug_shown, logger
from scrapy_googlerobots.runtime.wording import counted

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.exceptions import IgnoreRequest
    from twisted.python.failure import Failure

    from scrapy_googlerobots.fetching.fetcher import FetchResult
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.reporting.explain import RobotsDecision
    from scrapy_googlerobots.reporting.summary import CrawlSummary
    from scrapy_googlerobots.robotstxt import RobotsTxt
    from scrapy_googlerobots.tdmrep import TdmRepFile, TdmVerdict

__all__ = ["TdmReports"]


class TdmReports:
    """Log lines and stats of one crawl's TDMRep fetches and refusals."""

    def __init__(self, crawler: Crawler, summary: CrawlSummary) -> None:
        self.crawler = crawler
        self.summary = summary
        self._inc_value = crawler.stats.inc_value
        # Responses given tdm_reservation, not yet added to the stats (see flush_counts).
        self._responses = 0
        self.on_file: Callable[[PolicyRecord], object] | None = None
        """Called with each record a fetch stored with a file (the gate parses it now,
        so an invalid file is reported at its fetch)."""

    @property
    def _extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider}

    # -- fetches (FetchReports) ---------------------------------------------

    def fetch_started(self) -> None:
        self._inc_value("robotstxt/tdmrep/request_count")

    def lease_wait(self) -> None:
        self._inc_value("robotstxt/tdmrep/fetch_lease/waits")

    def fetch_bug(self, failure: Failure, key: str) -> None:
        logger.error(
            "Unexpected error fetching tdmrep.json of %(origin)s",
            {"origin": key},
            exc_info=failure_to_exc_info(failure),
            extra=self._extra,
        )

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
        self._inc_value(f"robotstxt/tdmrep/outcome/{result.outcome.value}")
        self.summary.tdm_fetched(key, result)
        if result.outcome is FetchOutcome.RULES and self.on_file is not None:
            self.on_file(record)
        if not debug_shown():
            return
        if result.outcome is FetchOutcome.UNREACHABLE:
            what = (
                "keeping the copy fetched %.0f s ago" % (now - record.fetched_at)
                if record.outcome is not FetchOutcome.UNREACHABLE
                else "read as no tdmrep.json (TDM reservation unset)"
            )
            when = f"; next attempt in {(record.retry_at or now) - now:.3g} s"
        elif result.outcome is FetchOutcome.RULES:
            what = f"{len(record.body or b'')} bytes"
            when = f", fresh for {record.expires_at - record.fetched_at:.0f} s"
        else:
            what = "no tdmrep.json (TDM reservation unset)"
            when = f", fresh for {record.expires_at - record.fetched_at:.0f} s"
        logger.debug(
            "tdmrep.json of %(origin)s: %(reason)s%(via)s, %(what)s%(when)s; %(waiting)s released",
            {
                "origin": key.removeprefix(TDM_STORE_PREFIX),
                "reason": result.reason,
                "via": f" via {result.redirects[-1]}" if result.redirects else "",
                "what": what,
                "when": when,
                "waiting": counted(waiting, "waiting request"),
            },
            extra=self._extra,
        )

    async def robots_parsed(
        self, record: PolicyRecord, rules: RobotsTxt, request: Request | None
    ) -> None:
        """Not sent for tdmrep.json (the coordinator skips it; here for the protocol)."""

    def invalid_file(self, origin: str, parsed: TdmRepFile) -> None:
        """A ``tdmrep.json`` that is not a JSON array (first use of each fetched copy)."""
        self._inc_value("robotstxt/tdmrep/invalid")
        self.summary.tdm_invalid(tdm_store_key(origin))
        problem = next((d.message for d in parsed.diagnostics if d.severity == "error"), "")
        logger.info(
            "tdmrep.json %(url)s is not a valid TDMRep file (%(problem)s): "
            "read as no tdmrep.json (TDM reservation unset) for %(origin)s",
            {"url": parsed.url, "problem": problem, "origin": origin},
            extra=self._extra,
        )

    # -- refusals and responses --------------------------------------------

    def forbidden(
        self,
        request: Request,
        verdict: TdmVerdict,
        where: str,
        explain: Callable[[], RobotsDecision],
    ) -> IgnoreRequest:
        """Count and log a request a TDM reservation refuses; the exception to raise.

        ``where``: the response URL when a header or meta tag decided (``""``: a file rule).
        """
        source = verdict.source
        step = source.step if source is not None else "file"
        self._inc_value(f"robotstxt/tdmrep/forbidden/{step}")
        self.summary.count_tdm_forbidden(step, verdict.explanation if step == "file" else "")
        error = tdm_forbidden(verdict, where, explain)
        if debug_shown():
            logger.debug(
                "Forbidden by TDM reservation: %(request)s (%(decision)s)",
                {"request": request, "decision": forbidden_by(error)},
                extra=self._extra,
            )
        return error

    def gave_up(self) -> None:
        """A request's wait for a tdmrep.json ran out: it goes on as "unset"."""
        self._inc_value("robotstxt/tdmrep/gave_up")

    def response(self) -> None:
        """A response was given ``tdm_reservation``."""
        self._responses += 1

    def flush_counts(self) -> None:
        """Add the per-response count kept here to the stats (at close; any time is fine)."""
        if self._responses:
            self._inc_value("robotstxt/tdmrep/responses", self._responses)
            self._responses = 0
