"""An origin's send slots and pauses in one process (:class:`LocalPace`).

The :class:`~scrapy_googlerobots.stores.base.PaceStore` of the memory store,
and the per-worker fallback of a shared store that does not answer. Shared
stores keep the same two facts per origin where every worker sees them: the
*next allowed send* (SQLite: ``robotstxt_pace``; Redis: a Lua script, one
round trip per reservation) and the *pause-until* a site's ``Retry-After``
asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["LocalPace", "slot_after"]

# Forget past entries once per this many reservations.
_PRUNE_EVERY = 1024


def slot_after(now: float, next_at: float, pause_until: float) -> float:
    """The earliest send: now, unless the origin's next slot or pause is later."""
    return max(now, next_at, pause_until)


class LocalPace:
    """Send slots and pauses of origins, for this process only; ``clock`` is monotonic."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # origin -> [next allowed send, pause until, the pause's reason]
        self._origins: dict[str, list[float | str]] = {}
        self._reservations = 0

    def reserve_send(self, origin: str, gap: float) -> float:
        now = self._clock()
        entry = self._origins.get(origin)
        if entry is None:
            entry = self._origins[origin] = [0.0, 0.0, ""]
        slot = slot_after(now, float(entry[0]), float(entry[1]))
        entry[0] = slot + gap
        self._reservations += 1
        if self._reservations % _PRUNE_EVERY == 0:
            self._prune(now)
        return slot - now

    def pause_origin(self, origin: str, seconds: float, reason: str) -> float:
        now = self._clock()
        entry = self._origins.get(origin)
        if entry is None:
            entry = self._origins[origin] = [0.0, 0.0, ""]
        until = now + seconds
        if until > float(entry[1]):
            entry[1], entry[2] = until, reason
        return float(entry[1]) - now

    def paused_origins(self) -> dict[str, tuple[float, str]]:
        now = self._clock()
        return {
            origin: (float(until) - now, str(reason))
            for origin, (_, until, reason) in self._origins.items()
            if float(until) > now
        }

    def _prune(self, now: float) -> None:
        past = [o for o, (n, p, _) in self._origins.items() if float(n) <= now and float(p) <= now]
        for origin in past:
            del self._origins[origin]
