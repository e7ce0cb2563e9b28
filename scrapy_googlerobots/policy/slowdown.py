"""A site asking a crawler to slow down: ``Retry-After`` and the slow-down rate (pure).

Google's crawler "reduces the crawl rate" of a site that answers 429, 500 or
503, and raises it again as the site recovers. The plugin does the same for
the answers that say it most plainly:

- **A pause.** ``429 Too Many Requests`` or ``503 Service Unavailable`` with a
  usable ``Retry-After`` (delta-seconds or an HTTP-date, RFC 9110 §10.2.3)
  pauses the origin until then: :func:`parse_retry_after` reads the header,
  :func:`pause_decision` applies the longest pause a crawl honours
  (``ROBOTSTXT_SLOW_DOWN_MAX_PAUSE``). A pause beyond it is not shortened —
  the site asked for it — the origin's requests are dropped instead, their
  errback naming the pause, so the crawl is not held open for hours.
- **A slow-down.** 429 or 503 *without* a usable ``Retry-After``: the origin's
  requests are spaced by a raised delay (:class:`SlowDown`), starting at
  :data:`SLOW_DOWN_FIRST` seconds and doubling with each further such answer
  up to :data:`SLOW_DOWN_MAX` (answers arriving within one delay of the last
  raise do not raise it again: they answer requests already on their way);
  every :data:`RECOVER_AFTER` successful answers in a row halve it, and
  under :data:`SLOW_DOWN_FIRST` it ends. After a pause the origin resumes at
  :data:`SLOW_DOWN_FIRST` seconds between requests and recovers the same way.

Bad ``Retry-After`` values (a negative number, a fraction, an unparsable
date) are not a pause: the caller logs and counts them, and the answer is
a slow-down as if the header were absent.
"""

from __future__ import annotations

import datetime
import email.utils
import enum
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "DEFAULT_MAX_PAUSE",
    "RECOVER_AFTER",
    "SLOW_DOWN_FIRST",
    "SLOW_DOWN_MAX",
    "SLOW_DOWN_STATUSES",
    "PauseDecision",
    "PauseKind",
    "RetryAfter",
    "SlowDown",
    "parse_retry_after",
    "pause_decision",
    "retry_after_of",
]

#: The statuses that ask a crawler to slow down (with or without ``Retry-After``).
SLOW_DOWN_STATUSES = frozenset({429, 503})

#: ``ROBOTSTXT_SLOW_DOWN_MAX_PAUSE``'s default: the longest pause honoured, one hour.
DEFAULT_MAX_PAUSE = 3600.0

#: Seconds between two requests to an origin after its first 429/503 without Retry-After.
SLOW_DOWN_FIRST = 2.0
#: The slow-down's ceiling: each further 429/503 doubles the delay up to this.
SLOW_DOWN_MAX = 60.0
#: Successful answers in a row after which the slow-down delay is halved.
RECOVER_AFTER = 5


@dataclass(frozen=True, slots=True)
class RetryAfter:
    """What a ``Retry-After`` value says: ``seconds`` from now, or a ``problem`` with it."""

    seconds: float | None
    problem: str | None = None


def parse_retry_after(value: bytes | str | None, now: float) -> RetryAfter | None:
    """``Retry-After`` ``value`` read at ``now`` (a Unix time); None when there is none.

    Delta-seconds (``"120"``) or an HTTP-date (IMF-fixdate, and the obsolete
    RFC 850 and asctime forms). A date in the past means 0 seconds. Anything
    else comes back with ``seconds=None`` and the ``problem`` to report.
    """
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if not text:
        return RetryAfter(None, "an empty Retry-After")
    if text.isascii() and text.isdigit():
        return RetryAfter(float(int(text)))
    if text[0] in "+-." or text[0].isdigit():
        return RetryAfter(None, f"Retry-After {text[:40]!r} is not a whole number of seconds")
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        when = None
    if when is None:
        return RetryAfter(None, f"Retry-After {text[:40]!r} is not an HTTP-date")
    if when.tzinfo is None:
        # HTTP-dates are GMT (RFC 9110 §5.6.7), the asctime form without saying so.
        when = when.replace(tzinfo=datetime.timezone.utc)
    return RetryAfter(max(0.0, when.timestamp() - now))


class _HasHeaders(Protocol):
    @property
    def headers(self) -> Any: ...


def retry_after_of(response: _HasHeaders | None, now: float) -> float | None:
    """The seconds a response's usable ``Retry-After`` asks for (None: none or unusable);
    for a policy file's fetch, whose next attempt is no earlier than that."""
    if response is None:
        return None
    read = parse_retry_after(response.headers.get(b"Retry-After"), now)
    return None if read is None else read.seconds


class PauseKind(enum.Enum):
    """What a crawl does with an origin that asked for a pause."""

    PAUSE = "pause"
    """Hold the origin's requests until the pause ends, then send them."""
    DROP = "drop"
    """The pause is longer than the crawl honours: drop the origin's requests meanwhile."""


@dataclass(frozen=True, slots=True)
class PauseDecision:
    """A pause of ``seconds`` and what the crawl does during it."""

    kind: PauseKind
    seconds: float


def pause_decision(seconds: float, maximum: float) -> PauseDecision:
    """The decision for a ``Retry-After`` of ``seconds`` with ``ROBOTSTXT_SLOW_DOWN_MAX_PAUSE``.

    Up to ``maximum``: pause. Beyond it: the origin still gets its whole pause
    (no request is sent before it ends), but its requests are dropped rather
    than held.
    """
    kind = PauseKind.PAUSE if seconds <= maximum else PauseKind.DROP
    return PauseDecision(kind, max(0.0, seconds))


@dataclass(frozen=True, slots=True)
class SlowDown:
    """An origin's slow-down after 429/503 answers without ``Retry-After``.

    ``delay`` is the gap kept between two of its requests; ``successes``
    counts successful answers since the delay last changed; ``raised_at`` is
    when it was last raised (any clock, the caller's).
    """

    delay: float = SLOW_DOWN_FIRST
    successes: int = 0
    raised_at: float = 0.0

    @classmethod
    def after_answer(cls, current: SlowDown | None, now: float = 0.0) -> SlowDown:
        """The slow-down after another 429/503 without ``Retry-After`` at ``now``: doubled,
        capped. Answers within one ``delay`` of the last raise answer requests sent before
        it took effect (several in flight at once): they do not raise it again."""
        if current is None:
            return cls(raised_at=now)
        if now - current.raised_at < current.delay:
            return current
        return cls(min(current.delay * 2.0, SLOW_DOWN_MAX), 0, now)

    def after_success(self) -> SlowDown | None:
        """The slow-down after a successful answer; None once it has recovered."""
        successes = self.successes + 1
        if successes < RECOVER_AFTER:
            return SlowDown(self.delay, successes, self.raised_at)
        delay = self.delay / 2.0
        return SlowDown(delay, 0, self.raised_at) if delay >= SLOW_DOWN_FIRST else None
