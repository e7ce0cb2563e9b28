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

__all__ = ["DEFAULT_CACHE_MEMORY", "HOT_SHARE", "cold_cost", "hot_cost", "hot_memory"]

DEFAULT_CACHE_MEMORY = 1536 * 1024 * 1024
"""``ROBOTSTXT_CACHE_MEMORY``'s default, bytes: a million origins of the corpus mix
(~1 KB each once quiet) plus a full hot set fit with room to spare."""

HOT_SHARE = 8
"""The most recently used origins keep their parsed rules (the *hot set*) in up
to ``1/HOT_SHARE`` of the budget: 192 MiB by default, ~12,000 origins of the
corpus mix at ~16 KB each (body, parsed rules, matchers compiled by queries),
far more origins than a crawl has downloads in flight, so a busy origin's
requests stay on the hot path."""

# A quiet origin: the packed bytes object (33 bytes of header), its key (a
# str, 49 bytes of header) and one OrderedDict slot with its linked-list node.
_COLD_BASE = 33 + 49 + 140
# A hot origin: the record (slots dataclass, floats), its key and dict slot,
# the body, the parsed rules and what queries compile in them, which grow
# with the number of lines (a least-squares fit over the corpus).
_HOT_BASE = 4_400
_HOT_PER_LINE = 67
# A hot record without parsed rules (as a shared store returns it): record,
# key, dict slot and the raw body.
_UNPARSED_BASE = 400
# A bytes object's own header (the response headers kept for serving robots.txt).
_BYTES_HEADER = 33


def hot_memory(memory: int | None) -> int:
    """Bytes the hot set may use under a budget of ``memory`` bytes (None: the default's share)."""
    return (DEFAULT_CACHE_MEMORY if memory is None else memory) // HOT_SHARE


def cold_cost(origin: str, packed: bytes) -> int:
    """Bytes a quiet origin holds: its key and its packed record."""
    return _COLD_BASE + len(origin) + len(packed)


def hot_cost(record: PolicyRecord) -> int:
    """Bytes a hot origin holds: record, body, response headers, parsed rules (with
    compiled matchers).

    Deterministic in the record, so the store subtracts what it added.
    """
    body = record.body
    if not body:
        size = lines = 0
    else:
        size = len(body)
        lines = body.count(b"\n")
    headers = record.headers
    if headers is not None:
        size += _BYTES_HEADER + len(headers)
    if record.rules is None:
        return _UNPARSED_BASE + len(record.origin) + size
    return _HOT_BASE + len(record.origin) + size + _HOT_PER_LINE * lines
