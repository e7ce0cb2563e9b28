"""The crawl report: per origin, what robots.txt did, and per URL, crawled or blocked and why.

Every "why" comes from the middleware itself: a forbidden request's errback
gets a :class:`~scrapy_googlerobots.RobotsTxtForbidden` naming the deciding
line, a crawled page is explained with
:meth:`GoogleRobotsTxtMiddleware.explain`, and how each origin's robots.txt
answered, with the rules that forbade the most, comes from its end-of-crawl
summary. :class:`RobotsTxtRecorder`, a downloader middleware placed next to the
downloader, adds what the middleware does not log in detail: each robots.txt
exchange on the wire (retries and redirect hops included), announced with the
:data:`robots_exchange` signal.
"""

from __future__ import annotations

import textwrap
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from scrapy_googlerobots import RobotsDecision
from scrapy_googlerobots.reporting.summary import CrawlSummary

#: Signal sent with ``exchange=`` an :class:`Exchange` for each robots.txt request.
robots_exchange = object()


@dataclass(frozen=True)
class Exchange:
    """One robots.txt request on the wire and what came back."""

    url: str
    at: float
    status: int | None = None
    location: str | None = None
    error: str | None = None


class RobotsTxtRecorder:
    """Downloader middleware announcing each robots.txt exchange (see the module doc)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtRecorder:
        return cls(crawler)

    def _send(self, exchange: Exchange) -> None:
        self.crawler.signals.send_catch_log(signal=robots_exchange, exchange=exchange)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        # Only the robots.txt middleware's own requests carry this flag here.
        if request.meta.get("dont_obey_robotstxt"):
            location = response.headers.get(b"Location")
            self._send(
                Exchange(
                    request.url,
                    time.monotonic(),
                    response.status,
                    location.decode("latin-1") if location else None,
                )
            )
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        if request.meta.get("dont_obey_robotstxt"):
            self._send(Exchange(request.url, time.monotonic(), error=type(exception).__name__))


@dataclass
class PageOutcome:
    """What happened to one page request."""

    url: str
    outcome: str = "pending"
    detail: str = ""
    at: float = 0.0
    decision: RobotsDecision | None = None
    """The middleware's explanation (None: it had none, e.g. the request was dropped)."""


def _status_word(exchange: Exchange) -> str:
    return exchange.error or str(exchange.status)


def robots_history(origin: str, exchanges: list[Exchange]) -> tuple[str, Exchange | None]:
    """A one-line story of ``origin``'s robots.txt, and its final exchange."""
    url = f"{origin}/robots.txt"
    parts: list[str] = []
    final = None
    for _ in range(6):
        mine = [e for e in exchanges if e.url == url]
        if not mine:
            parts.append("not fetched" if not parts else f"{url}: not fetched")
            break
        words: list[str] = []
        for previous, exchange in zip([None, *mine], mine, strict=False):
            word = _status_word(exchange)
            if previous is not None and exchange.at - previous.at >= 0.5:
                word = f"then {word} after {exchange.at - previous.at:.1f} s"
            words.append(word)
        prefix = "" if not parts else f"{url}: "
        parts.append(prefix + ", ".join(words))
        final = mine[-1]
        if final.status is not None and 300 <= final.status < 400 and final.location:
            url = urljoin(url, final.location)
            continue
        break
    return " → ".join(parts), final


def _unreachable(exchange: Exchange) -> bool:
    return exchange.status is None or exchange.status == 429 or exchange.status >= 500


#: What the middleware's summary says an origin's robots.txt answered, in words.
MEANINGS = {
    "2xx": "rules apply",
    "redirected": "rules apply",
    "too big": "rules apply (the first 500 KiB)",
    "allow-all 4xx": "no robots.txt: everything allowed",
    "unreachable": "unreachable: everything waits",
}


def _why(page: PageOutcome) -> str:
    decision = page.decision
    if decision is None:
        return page.detail
    if not decision.has_rules:
        why = "no robots.txt"
    elif decision.line:
        why = f"line {decision.line}: {decision.directive}"
    else:
        why = "no matching rule"
    if page.outcome in ("crawled", "blocked") and decision.allowed != (page.outcome == "crawled"):
        why += "  (!) differs from what the middleware explains"
    return f"{why} {page.detail}".rstrip()


def render(
    user_agent: str,
    origins: list[tuple[str, str, list[PageOutcome]]],
    exchanges: list[Exchange],
    summary: CrawlSummary,
    stats: dict[str, Any],
) -> str:
    """The report text. ``origins`` is ``(title, origin URL, page outcomes)`` in crawl order;
    ``summary`` is the middleware's :attr:`~GoogleRobotsTxtMiddleware.summary`."""
    out = [f"robots.txt report for User-Agent {user_agent!r}", ""]
    for title, origin, pages in origins:
        history, _ = robots_history(origin, exchanges)
        answer = summary.answer_for(origin)
        meaning = MEANINGS.get(answer or "", "")
        if answer == "redirected" and not any(
            page.decision is not None and page.decision.has_rules for page in pages
        ):
            meaning = "redirected, no rules: everything allowed"
        out.append(f"{title} — {origin}")
        out.append(f"  robots.txt: {history}" + (f" — {meaning}" if meaning else ""))
        first = next((e for e in exchanges if e.url == f"{origin}/robots.txt"), None)
        waited_from = first if first is not None and _unreachable(first) else None
        for page in pages:
            parts = urlsplit(page.url)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            why = _why(page)
            if waited_from is not None and page.outcome == "crawled":
                why += f"  (after waiting {page.at - waited_from.at:.1f} s)"
            out.append(f"  {page.outcome:<8} {path:<26} {why}".rstrip())
        out.append("")
    counts: dict[str, int] = {}
    for _, _, pages in origins:
        for page in pages:
            counts[page.outcome] = counts.get(page.outcome, 0) + 1
    out.append("Total: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
    out += ["", "The middleware's own summary:", summary.render(stats), ""]
    robot_stats = {k: v for k, v in sorted(stats.items()) if k.startswith("robotstxt/")}
    if robot_stats:
        out += textwrap.wrap(
            ", ".join(f"{k}={v}" for k, v in robot_stats.items()),
            width=100,
            initial_indent="Stats: ",
            subsequent_indent="  ",
            break_on_hyphens=False,
        )
    return "\n".join(out)
