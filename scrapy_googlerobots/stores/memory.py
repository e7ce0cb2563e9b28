"""The default store: an in-process LRU of policy records, within a memory budget.

The most recently used origins (the *hot set*, within an eighth of the
budget: see :data:`~.memory_cost.HOT_SHARE`) keep their records as they are,
parsed rules included: a request of a hot origin costs one dict lookup. An
origin that falls out of the hot set keeps a compact form
(:mod:`~scrapy_googlerobots.stores.compact`: its body deflated, about 1 KB on
average) and is parsed again on its next use, which gives the same rules.
Origins are forgotten (least recently used first) only when the estimated
memory reaches ``memory`` bytes or their number ``max_size``; before it
forgets any, the store shrinks the hot set (down to a floor), which frees ten
times as much per origin.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE, parse
from scrapy_googlerobots.stores.base import StatsLike
from scrapy_googlerobots.stores.compact import pack, unpack
from scrapy_googlerobots.stores.memory_cost import (
    DEFAULT_CACHE_MEMORY,
    cold_cost,
    hot_cost,
    hot_memory,
)
from scrapy_googlerobots.stores.pace import LocalPace

__all__ = ["EVICTED_STAT", "MemoryPolicyStore"]

logger = logging.getLogger(__name__)

EVICTED_STAT = "robotstxt/cache/evicted"
"""Origins the local cache forgot to stay within its budget (their robots.txt is fetched again)."""

# Under memory pressure the hot set shrinks to this many origins before any
# origin is forgotten.
_HOT_FLOOR = 256


class MemoryPolicyStore:
    """In-process store: LRU over origins, hot ones parsed, quiet ones compact (see module doc).

    ``max_size`` caps the number of origins (None: no cap), ``memory`` their
    estimated bytes (None: no cap). The hot set may use ``hot_bytes`` (default:
    an eighth of ``memory``) and, if given, hold at most ``hot_size`` origins.
    ``body_limit`` is the size limit bodies are parsed with (``ROBOTSTXT_MAX_SIZE``).
    ``stats`` receives ``robotstxt/cache/evicted``.
    """

    def __init__(
        self,
        max_size: int | None = None,
        *,
        memory: int | None = DEFAULT_CACHE_MEMORY,
        hot_bytes: int | None = None,
        hot_size: int | None = None,
        body_limit: int = GOOGLE_MAX_SIZE,
        stats: StatsLike | None = None,
    ) -> None:
        if max_size is not None and max_size < 1:
            raise ValueError(f"max_size must be at least 1, got {max_size!r}")
        if memory is not None and memory < 1:
            raise ValueError(f"memory must be at least 1 byte, got {memory!r}")
        if hot_size is not None and hot_size < 1:
            raise ValueError(f"hot_size must be at least 1, got {hot_size!r}")
        self.max_size = max_size
        self.memory = memory
        self.hot_bytes = hot_memory(memory) if hot_bytes is None else hot_bytes
        self.hot_size = hot_size
        self.body_limit = body_limit
        self._stats = stats
        # LRU order runs through cold (oldest) then hot (newest): a record
        # demoted from the hot set is newer than every cold one.
        self._hot: OrderedDict[str, PolicyRecord] = OrderedDict()
        self._cold: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._hot_used = 0
        self._evicting = False
        self._empty = parse(b"")
        self._pace = LocalPace()

    def __len__(self) -> int:
        return len(self._hot) + len(self._cold)

    @property
    def estimated_bytes(self) -> int:
        """The memory the store holds by its estimate (what the budget is checked against)."""
        return self._bytes

    @property
    def hot_count(self) -> int:
        """Origins currently kept with parsed rules."""
        return len(self._hot)

    def get(self, origin: str) -> PolicyRecord | None:
        record = self._hot.get(origin)
        if record is not None:
            self._hot.move_to_end(origin)
            return record
        return self._wake(origin)

    def put(self, record: PolicyRecord) -> None:
        origin = record.origin
        old = self._hot.pop(origin, None)
        if old is not None:
            cost = hot_cost(old)
            self._bytes -= cost
            self._hot_used -= cost
        else:
            packed = self._cold.pop(origin, None)
            if packed is not None:
                self._bytes -= cold_cost(origin, packed)
        self._admit(record)

    def acquire_fetch_lease(self, origin: str, ttl: float) -> bool:
        # One process: the middleware's own in-flight map already
        # guarantees a single fetch per origin.
        return True

    def release_fetch_lease(self, origin: str) -> None:
        pass

    # -- PaceStore: one process, so this process's own slots and pauses ------

    def reserve_send(self, origin: str, gap: float) -> float:
        return self._pace.reserve_send(origin, gap)

    def pause_origin(self, origin: str, seconds: float, reason: str) -> float:
        return self._pace.pause_origin(origin, seconds, reason)

    def paused_origins(self) -> dict[str, tuple[float, str]]:
        return self._pace.paused_origins()

    def close(self) -> None:
        self._hot.clear()
        self._cold.clear()
        self._bytes = self._hot_used = 0

    # -- hot and cold ------------------------------------------------------

    def _wake(self, origin: str) -> PolicyRecord | None:
        """A quiet origin's record, parsed again and back in the hot set; None if unknown."""
        packed = self._cold.pop(origin, None)
        if packed is None:
            return None
        self._bytes -= cold_cost(origin, packed)
        record = unpack(origin, packed)
        if record.outcome is FetchOutcome.RULES and record.body:
            rules = parse(record.body, max_size=self.body_limit)
        elif record.outcome is FetchOutcome.UNREACHABLE:
            rules = None
        else:
            rules = self._empty
        record = dataclasses.replace(record, rules=rules)
        self._admit(record)
        return record

    def _admit(self, record: PolicyRecord) -> None:
        self._hot[record.origin] = record
        cost = hot_cost(record)
        self._bytes += cost
        self._hot_used += cost
        hot_size = self.hot_size
        while len(self._hot) > 1 and (
            self._hot_used > self.hot_bytes or (hot_size is not None and len(self._hot) > hot_size)
        ):
            self._demote()
        memory = self.memory
        if memory is not None and self._bytes > memory:
            while self._bytes > memory and len(self._hot) > _HOT_FLOOR:
                self._demote()
            while self._bytes > memory and len(self) > 1:
                self._evict("ROBOTSTXT_CACHE_MEMORY", f"{memory} bytes, {memory / 2**20:.1f} MiB")
        max_size = self.max_size
        while max_size is not None and len(self) > max_size:
            self._evict("ROBOTSTXT_CACHE_SIZE", f"{max_size} origins")

    def _demote(self) -> None:
        origin, record = self._hot.popitem(last=False)
        packed = pack(record)
        self._cold[origin] = packed
        cost = hot_cost(record)
        self._hot_used -= cost
        self._bytes += cold_cost(origin, packed) - cost

    def _evict(self, setting: str, limit: str) -> None:
        if self._cold:
            origin, packed = self._cold.popitem(last=False)
            self._bytes -= cold_cost(origin, packed)
        else:
            origin, record = self._hot.popitem(last=False)
            cost = hot_cost(record)
            self._bytes -= cost
            self._hot_used -= cost
        if self._stats is not None:
            self._stats.inc_value(EVICTED_STAT)
        if not self._evicting:
            self._evicting = True
            logger.info(
                "robots.txt cache is full (%s = %s, %d origins kept): forgetting the least "
                "recently used origins from now on; one that comes back has its robots.txt "
                "fetched again. Raise %s to keep more (see robotstxt/cache/evicted in the stats)",
                setting,
                limit,
                len(self),
                setting,
            )
