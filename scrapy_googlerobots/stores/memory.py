"""The default store: an in-process LRU of policy records."""

from __future__ import annotations

from collections import OrderedDict

from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["MemoryPolicyStore"]


class MemoryPolicyStore:
    """In-process store keeping at most ``max_size`` origins, least recently used evicted."""

    def __init__(self, max_size: int = 10_000) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, got {max_size!r}")
        self.max_size = max_size
        self._records: OrderedDict[str, PolicyRecord] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def get(self, origin: str) -> PolicyRecord | None:
        record = self._records.get(origin)
        if record is not None:
            self._records.move_to_end(origin)
        return record

    def put(self, record: PolicyRecord) -> None:
        self._records[record.origin] = record
        self._records.move_to_end(record.origin)
        while len(self._records) > self.max_size:
            self._records.popitem(last=False)

    def acquire_fetch_lease(self, origin: str, ttl: float) -> bool:
        # One process: the middleware's own in-flight map already
        # guarantees a single fetch per origin.
        return True

    def release_fetch_lease(self, origin: str) -> None:
        pass

    def close(self) -> None:
        self._records.clear()
