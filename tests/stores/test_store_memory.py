"""MemoryPolicyStore: the default in-process store (LRU, leases always granted)."""

from __future__ import annotations

import dataclasses

import pytest

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.robotstxt import parse
from scrapy_googlerobots.stores.base import PolicyStore
from scrapy_googlerobots.stores.memory import MemoryPolicyStore


def _record(origin: str, **fields: object) -> PolicyRecord:
    return PolicyRecord(origin=origin, outcome=FetchOutcome.ALLOW_ALL, **fields)  # type: ignore[arg-type]


def test_implements_the_protocol() -> None:
    assert isinstance(MemoryPolicyStore(), PolicyStore)


def test_get_unknown_is_none() -> None:
    assert MemoryPolicyStore().get("http://a:80") is None


def test_put_then_get_returns_the_same_record_with_rules() -> None:
    store = MemoryPolicyStore()
    rules = parse(b"user-agent: *\ndisallow: /x\n")
    record = PolicyRecord(
        origin="http://a:80", outcome=FetchOutcome.RULES, body=b"...", rules=rules
    )
    store.put(record)
    assert store.get("http://a:80") is record
    assert store.get("http://a:80").rules is rules  # type: ignore[union-attr]


def test_put_replaces() -> None:
    store = MemoryPolicyStore()
    store.put(_record("http://a:80", status=404))
    store.put(_record("http://a:80", status=410))
    assert store.get("http://a:80").status == 410  # type: ignore[union-attr]
    assert len(store) == 1


def test_least_recently_used_is_evicted() -> None:
    store = MemoryPolicyStore(max_size=2)
    store.put(_record("http://a:80"))
    store.put(_record("http://b:80"))
    store.get("http://a:80")  # a is now the most recently used
    store.put(_record("http://c:80"))
    assert store.get("http://b:80") is None
    assert store.get("http://a:80") is not None
    assert store.get("http://c:80") is not None
    assert len(store) == 2


def test_put_refreshes_recency() -> None:
    store = MemoryPolicyStore(max_size=2)
    store.put(_record("http://a:80"))
    store.put(_record("http://b:80"))
    store.put(_record("http://a:80", status=404))
    store.put(_record("http://c:80"))
    assert store.get("http://b:80") is None
    assert store.get("http://a:80") is not None


@pytest.mark.parametrize("size", [0, -1], ids=["zero", "negative"])
def test_max_size_must_be_positive(size: int) -> None:
    with pytest.raises(ValueError, match="max_size must be at least 1"):
        MemoryPolicyStore(max_size=size)


def test_lease_is_always_granted_and_release_is_harmless() -> None:
    store = MemoryPolicyStore()
    assert store.acquire_fetch_lease("http://a:80", 10.0) is True
    assert store.acquire_fetch_lease("http://a:80", 10.0) is True
    store.release_fetch_lease("http://a:80")
    store.release_fetch_lease("http://never-leased:80")


def test_close_forgets_everything() -> None:
    store = MemoryPolicyStore()
    store.put(_record("http://a:80"))
    store.close()
    assert store.get("http://a:80") is None
    assert len(store) == 0


def test_records_are_frozen_and_rules_do_not_count_in_equality() -> None:
    record = _record("http://a:80", body=b"x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.status = 200  # type: ignore[misc]
    with_rules = dataclasses.replace(record, rules=parse(b""))
    assert with_rules == record
