"""The crawl report: per origin, what robots.txt did, and per URL, crawled or blocked and why.

The robots.txt middleware stays a black box. :class:`RobotsTxtRecorder`, a
downloader middleware placed next to the downloader, sees every robots.txt
exchange on the wire (retries and redirect hops included) and announces it
with the :data:`robots_exchange` signal; the report re-reads the robots.txt
that was served with the package's public parser to name the deciding line.
"""

from __future__ import annotations

import gzip
import io
import textwrap
import time
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from scrapy_googlerobots import GoogleRobotParser
from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE, scan_lines

#: Signal sent with ``exchange=`` an :class:`Exchange` for each robots.txt request.
robots_exchange = object()


@dataclass(frozen=True)
class Exchange:
    """One robots.txt request on the wire and what came back."""

    url: str
    at: float
    status: int | None = None
    location: str | None = None
    body: bytes | None = None
    error: str | None = None


def _decoded(response: Response) -> bytes:
    # The recorder sits before HttpCompressionMiddleware in the response chain.
    encoding = (response.headers.get(b"Content-Encoding") or b"").lower()
    if encoding in (b"gzip", b"x-gzip"):
        return gzip.GzipFile(fileobj=io.BytesIO(response.body)).read(GOOGLE_MAX_SIZE)
    if encoding == b"deflate":
        return zlib.decompressobj().decompress(response.body, GOOGLE_MAX_SIZE)
    return bytes(response.body[:GOOGLE_MAX_SIZE])


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
            body = None
            if 200 <= response.status < 300:
                try:
                    body = _decoded(response)
                except (OSError, EOFError, zlib.error):
                    body = None
            self._send(
                Exchange(
                    request.url,
                    time.monotonic(),
                    response.status,
                    location.decode("latin-1") if location else None,
                    body,
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


def _meaning(final: Exchange | None) -> str:
    if final is None or (final.status is None and final.error is None):
        return ""
    if _unreachable(final):
        return "unreachable: everything waits"
    assert final.status is not None
    if 200 <= final.status < 300:
        return "rules apply"
    if 400 <= final.status < 500:
        return "no robots.txt: everything allowed"
    return "redirects not followed: everything allowed"


def render(
    user_agent: str,
    origins: list[tuple[str, str, list[PageOutcome]]],
    exchanges: list[Exchange],
    stats: dict[str, Any],
) -> str:
    """The report text. ``origins`` is ``(title, origin URL, page outcomes)`` in crawl order."""
    out = [f"robots.txt report for User-Agent {user_agent!r}", ""]
    for title, origin, pages in origins:
        history, final = robots_history(origin, exchanges)
        meaning = _meaning(final)
        out.append(f"{title} — {origin}")
        out.append(f"  robots.txt: {history}" + (f" — {meaning}" if meaning else ""))
        parser = lines = None
        if final is not None and final.body is not None:
            parser = GoogleRobotParser(final.body)
            lines = {
                line.number: line.raw.decode("utf-8", "replace").strip()
                for line in scan_lines(final.body)
            }
        first = next((e for e in exchanges if e.url == f"{origin}/robots.txt"), None)
        waited_from = first if first is not None and _unreachable(first) else None
        for page in pages:
            parts = urlsplit(page.url)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            why = page.detail
            if parser is not None and lines is not None:
                verdict = parser.explain(page.url, user_agent)
                why = (
                    f"line {verdict.line}: {lines[verdict.line]}"
                    if verdict.line
                    else ("no matching rule")
                )
                if page.outcome in ("crawled", "blocked") and verdict.allowed != (
                    page.outcome == "crawled"
                ):
                    why += "  (!) differs from what these rules say"
            elif meaning.startswith("no robots.txt"):
                why = why or "no robots.txt"
            if waited_from is not None and page.outcome == "crawled":
                why += f"  (after waiting {page.at - waited_from.at:.1f} s)"
            out.append(f"  {page.outcome:<8} {path:<26} {why}".rstrip())
        out.append("")
    counts: dict[str, int] = {}
    for _, _, pages in origins:
        for page in pages:
            counts[page.outcome] = counts.get(page.outcome, 0) + 1
    out.append("Total: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
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
