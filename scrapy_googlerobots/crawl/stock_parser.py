"""``ROBOTSTXT_PARSER`` backend for people who keep Scrapy's stock middleware.

``ROBOTSTXT_PARSER = "scrapy_googlerobots.GoogleRobotParser"`` gives the stock
``RobotsTxtMiddleware`` Google's parsing and matching (SPEC part A), the 500 KiB
cap (A8) and Google's reduction of the User-Agent to a product token (B7). The
fetching policy (scope, status codes, caching) stays the stock middleware's;
for Google's, use :class:`~scrapy_googlerobots.GoogleRobotsTxtMiddleware`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.robotstxt import RobotParser

from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.useragent import crawler_token
from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE, RobotsTxt, Verdict, parse

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["GoogleRobotParser"]


def _text(value: str | bytes) -> str:
    # URLs and User-Agent headers are ASCII on the wire; surrogateescape keeps
    # any stray byte instead of failing, and canonicalisation escapes it back.
    return value if isinstance(value, str) else value.decode("utf-8", "surrogateescape")


class GoogleRobotParser(RobotParser):
    """A :class:`scrapy.robotstxt.RobotParser` that reads and applies robots.txt like Google.

    Only the first ``max_size`` bytes of the body are used (Google reads
    500 KiB); a body that is not robots.txt at all parses to "no rules". The
    ``user_agent`` given to :meth:`allowed` and :meth:`crawl_delay` may be a
    full User-Agent value: it is reduced to the crawler's product token first.
    """

    def __init__(self, robotstxt_body: bytes | str, *, max_size: int = GOOGLE_MAX_SIZE) -> None:
        self.robotstxt: RobotsTxt = parse(robotstxt_body, max_size=max_size)

    @classmethod
    def from_crawler(cls, crawler: Crawler | None, robotstxt_body: bytes | str) -> Self:
        """Parse ``robotstxt_body``, honouring ``ROBOTSTXT_MAX_SIZE`` when it is set."""
        max_size = GOOGLE_MAX_SIZE
        if crawler is not None:
            max_size = crawler.settings.getint("ROBOTSTXT_MAX_SIZE", GOOGLE_MAX_SIZE)
            if max_size < 1:
                # The stock middleware builds a parser at start-up: fail there.
                raise ValueError(f"ROBOTSTXT_MAX_SIZE must be at least 1, got {max_size}")
        return cls(robotstxt_body, max_size=max_size)

    @classmethod
    def from_robotstxt(cls, robotstxt: RobotsTxt) -> Self:
        """Wrap rules already parsed (the middleware's, for its ``robots_parsed`` signal)."""
        parser = cls.__new__(cls)
        parser.robotstxt = robotstxt
        return parser

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        """Whether the crawler named by ``user_agent`` may fetch ``url``."""
        return self.explain(url, user_agent).allowed

    def explain(self, url: str | bytes, user_agent: str | bytes) -> Verdict:
        """The verdict for ``url`` with the deciding line (0 when no rule matched)."""
        return self.robotstxt.explain(
            canonicalize_url(_text(url)), crawler_token(_text(user_agent))
        )

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        """``crawl-delay`` of the group Google would pick for ``user_agent``, else None.

        Google itself ignores ``crawl-delay``; Scrapy can honour it.
        """
        return self.robotstxt.crawl_delay(crawler_token(_text(user_agent)))

    @property
    def sitemaps(self) -> list[str]:
        """The ``sitemap:`` values, in file order, as written."""
        return list(self.robotstxt.sitemaps)
