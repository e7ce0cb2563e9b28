"""One ``/.well-known/tdmrep.json`` fetch, exactly as a robots.txt fetch.

:class:`TdmRepFetcher` is :class:`~.fetcher.RobotsFetcher` pointed at the
TDMRep well-known file: through Scrapy's engine (user agent, proxies,
download handlers and middlewares), redirects followed here with
``ROBOTSTXT_MAX_REDIRECTS``, the body cut at ``ROBOTSTXT_MAX_SIZE``. Its stats
live under ``robotstxt/tdmrep/`` (``robotstxt/tdmrep/response_count`` ...).
The outcome by status is robots.txt's (2xx: the file; 4xx or an unfollowable
redirect: no file; 5xx, 429 or a network error: unreachable); what an
outcome means for requests is :func:`~scrapy_googlerobots.policy.tdm.decide_tdm`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_googlerobots.fetching.fetcher import RobotsFetcher
from scrapy_googlerobots.tdmrep import WELL_KNOWN_PATH

if TYPE_CHECKING:
    from scrapy_googlerobots.policy.origin import Origin

__all__ = ["TdmRepFetcher", "tdmrep_url"]


def tdmrep_url(origin: Origin) -> str:
    """``origin``'s ``/.well-known/tdmrep.json`` URL (default port omitted)."""
    return origin.robots_url[: -len("/robots.txt")] + WELL_KNOWN_PATH


class TdmRepFetcher(RobotsFetcher):
    """Fetches ``tdmrep.json`` files for the middleware (one call of ``fetch`` per fetch)."""

    FILE = "tdmrep.json"

    def url_of(self, origin: Origin) -> str:
        return tdmrep_url(origin)

    def _inc(self, stat: str) -> None:
        # robotstxt/redirect/hops -> robotstxt/tdmrep/redirect/hops
        self._stats.inc_value(f"robotstxt/tdmrep/{stat.removeprefix('robotstxt/')}")
