"""What the middleware tells the user about TDMRep: log lines and ``robotstxt/tdmrep/`` stats.

:class:`TdmReports` words and counts the requests a reservation refuses and the
invalid files; the ``tdmrep.json`` fetches are counted as any policy file's
(:attr:`TdmReports.fetches`, a :class:`~.file_reports.FileReports`); the end-of-crawl summary
(:class:`~scrapy_googlerobots.reporting.summary.CrawlSummary`) gets its TDMRep lines
from the counts kept here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.policy.tdm import TDMREP_JSON, tdm_store_key
from scrapy_googlerobots.reporting.explain import forbidden_by, tdm_forbidden
from scrapy_googlerobots.reporting.file_reports import FileReports, stat_counter
from scrapy_googlerobots.reporting.reporter import debug_shown, logger

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.exceptions import IgnoreRequest

    from scrapy_googlerobots.reporting.explain import RobotsDecision
    from scrapy_googlerobots.reporting.summary import CrawlSummary
    from scrapy_googlerobots.tdmrep import TdmRepFile, TdmVerdict

__all__ = ["TdmReports"]


class TdmReports:
    """Log lines and stats of one crawl's TDMRep fetches and refusals."""

    def __init__(self, crawler: Crawler, summary: CrawlSummary) -> None:
        self.crawler = crawler
        self.summary = summary
        self._inc_value = stat_counter(crawler.stats)
        # Responses given tdm_reservation, not yet added to the stats (see flush_counts).
        self._responses = 0
        self.fetches = FileReports(
            crawler,
            TDMREP_JSON,
            absent=" (TDM reservation unset)",
            answered=summary.tdm_fetched,
            log=logger,
        )
        """How ``tdmrep.json`` fetches are counted and logged."""

    @property
    def _extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider}

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
