"""What is known about one origin's robots.txt: the record stores keep and decisions read."""

from __future__ import annotations

from dataclasses import dataclass, field

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.robotstxt import RobotsTxt

__all__ = ["PolicyRecord"]


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    """Everything known about one origin's robots.txt.

    ``outcome``/``body``/``status``/``fetched_at`` describe the last *good*
    fetch (RULES or ALLOW_ALL); ``outcome`` is UNREACHABLE when there has never
    been one. ``unreachable_since``/``failures``/``retry_at`` describe the
    current outage, if any. Times are seconds from the middleware's clock.
    """

    origin: str
    outcome: FetchOutcome
    body: bytes | None = None
    status: int | None = None
    fetched_at: float = 0.0
    expires_at: float = 0.0
    unreachable_since: float | None = None
    failures: int = 0
    retry_at: float | None = None
    # Parsed form of ``body``; runtime only, never serialised by stores.
    rules: RobotsTxt | None = field(default=None, compare=False, repr=False)
