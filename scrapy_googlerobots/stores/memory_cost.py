"""What a record costs the memory store, estimated from sizes known without walking objects.

The memory store keeps a running total of these estimates to enforce
``ROBOTSTXT_CACHE_MEMORY``; computing them must be cheap (a few additions per
put, never ``sys.getsizeof`` walks). The constants are calibrated against
``tracemalloc`` over the shared corpus (1,301 real robots.txt files) on
CPython 3.11, 64-bit, and slightly above what it measured, so the budget errs on
the safe side; ``tests/stores/test_memory_cost.py`` checks them against
``tracemalloc`` again.
"""

from __future__ import annotations

from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["DEFAULT_CACHE_MEMORY", "DEFAULT_HOT_SIZE", "cold_cost", "hot_cost"]

DEFAULT_CACHE_MEMORY = 1536 * 1024 * 1024
"""``ROBOTSTXT_CACHE_MEMORY``'s default, bytes: a million origins of the corpus mix
(~1 KB each once quiet) plus a full hot set fit with room to spare."""

DEFAULT_HOT_SIZE = 4096
"""Origins that keep their parsed rules (the most recently used ones): far more
than a crawl has downloads in flight, so a busy origin's requests stay on the
hot path; each costs up to ~11 KB (mean over the corpus, parsed and queried)."""

# A quiet origin: the packed bytes object (33 bytes of header), its key (a
# str, 49 bytes of header) and one OrderedDict slot with its linked-list node.
_COLD_BASE = 33 + 49 + 140
# A hot origin: the record (slots dataclass, floats), its key and dict slot,
# the parsed rules and what queries compile in them, which grow with the body.
_HOT_BASE = 3_000
_HOT_PER_BODY_BYTE = 2.0


def cold_cost(origin: str, packed: bytes) -> int:
    """Bytes a quiet origin holds: its key and its packed record."""
    return _COLD_BASE + len(origin) + len(packed)


def hot_cost(record: PolicyRecord) -> int:
    """Bytes a hot origin holds: record, body, parsed rules (with compiled matchers)."""
    body = record.body
    return _HOT_BASE + len(record.origin) + int(_HOT_PER_BODY_BYTE * len(body) if body else 0)
