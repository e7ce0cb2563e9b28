"""build_store: which store the settings select, and clear errors for unusable values."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_googlerobots.runtime.config import DEFAULTS
from scrapy_googlerobots.stores.base import PolicyStore
from scrapy_googlerobots.stores.factory import build_store
from scrapy_googlerobots.stores.layered import LayeredPolicyStore
from scrapy_googlerobots.stores.memory import MemoryPolicyStore
from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

from store_support import Stats


def build(values: dict[str, Any], stats: Stats | None = None) -> PolicyStore:
    return build_store(Settings(values), stats)


def sqlite_path(store: PolicyStore) -> Path:
    assert isinstance(store, LayeredPolicyStore)
    assert isinstance(store.shared, SqlitePolicyStore)
    return store.shared.path


def test_default_is_memory_within_a_budget_not_a_count() -> None:
    store = build({})
    assert isinstance(store, MemoryPolicyStore)
    assert store.max_size is None
    assert store.memory == DEFAULTS["ROBOTSTXT_CACHE_MEMORY"] == 1536 * 2**20


def test_cache_memory_applies_and_zero_means_no_cap() -> None:
    store = build({"ROBOTSTXT_CACHE_MEMORY": 64 * 2**20, "ROBOTSTXT_MAX_SIZE": 1000})
    assert isinstance(store, MemoryPolicyStore)
    assert (store.memory, store.body_limit) == (64 * 2**20, 1000)
    unlimited = build({"ROBOTSTXT_CACHE_MEMORY": 0})
    assert isinstance(unlimited, MemoryPolicyStore) and unlimited.memory is None


def test_cache_size_applies_to_memory() -> None:
    store = build({"ROBOTSTXT_CACHE_SIZE": 7})
    assert isinstance(store, MemoryPolicyStore) and store.max_size == 7


def test_jobdir_persists_into_the_job_directory(tmp_path: Path) -> None:
    assert sqlite_path(build({"JOBDIR": str(tmp_path)})) == tmp_path / "robotstxt.sqlite"


def test_jobdir_that_does_not_exist_yet_is_created(tmp_path: Path) -> None:
    jobdir = tmp_path / "crawls" / "job-1"
    assert sqlite_path(build({"JOBDIR": str(jobdir)})) == jobdir / "robotstxt.sqlite"
    assert (jobdir / "robotstxt.sqlite").exists()


@pytest.mark.parametrize(
    ("value", "expected"),
    [("memory", "memory"), ("{tmp}/elsewhere.sqlite", "{tmp}/elsewhere.sqlite")],
    ids=["memory_wins_over_jobdir", "path_wins_over_jobdir"],
)
def test_explicit_store_wins_over_jobdir(tmp_path: Path, value: str, expected: str) -> None:
    store = build(
        {"JOBDIR": str(tmp_path / "job"), "ROBOTSTXT_CACHE_STORE": value.format(tmp=tmp_path)}
    )
    if expected == "memory":
        assert isinstance(store, MemoryPolicyStore)
    else:
        assert sqlite_path(store) == Path(expected.format(tmp=tmp_path))


def test_path_object_and_directory(tmp_path: Path) -> None:
    assert sqlite_path(build({"ROBOTSTXT_CACHE_STORE": tmp_path})) == tmp_path / "robotstxt.sqlite"


def test_settings_reach_the_layers(tmp_path: Path) -> None:
    store = build(
        {
            "ROBOTSTXT_CACHE_STORE": str(tmp_path / "r.sqlite"),
            "ROBOTSTXT_CACHE_STORE_TIMEOUT": 0.25,
            "ROBOTSTXT_LOCAL_CACHE_TTL": 5,
            "ROBOTSTXT_CACHE_SIZE": 11,
            "ROBOTSTXT_UNREACHABLE_ALLOW_AFTER": 99,
        }
    )
    assert isinstance(store, LayeredPolicyStore) and isinstance(store.shared, SqlitePolicyStore)
    assert (store.timeout, store.local_ttl, store.local.max_size) == (0.25, 5.0, 11)
    assert store.local.memory == DEFAULTS["ROBOTSTXT_CACHE_MEMORY"]
    assert (store.shared.timeout, store.shared.max_size, store.shared.allow_after) == (
        0.25,
        11,
        99.0,
    )


def test_unusable_location_falls_back_to_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    stats = Stats()
    with caplog.at_level(logging.WARNING):
        store = build({"ROBOTSTXT_CACHE_STORE": str(blocker / "robots.sqlite")}, stats)
    assert isinstance(store, MemoryPolicyStore)
    assert stats["robotstxt/store/errors"] == 1
    [warning] = caplog.records
    assert "writable location" in warning.getMessage()


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "rediss://user:pw@cache.internal:6380/2",
        "unix:///run/redis.sock?db=1",
    ],
    ids=["redis", "rediss_with_password", "unix_socket"],
)
def test_redis_urls(url: str) -> None:
    pytest.importorskip("redis")
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    store = build(
        {
            "ROBOTSTXT_CACHE_STORE": url,
            "ROBOTSTXT_CACHE_KEY_PREFIX": "p:",
            "ROBOTSTXT_CACHE_STORE_TIMEOUT": 0.3,
        }
    )
    assert isinstance(store, LayeredPolicyStore)
    assert isinstance(store.shared, RedisPolicyStore)
    assert store.shared.prefix == "p:"
    assert "pw" not in store.description
    kwargs = store.shared.client.connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 0.3


def test_redis_url_without_the_redis_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.delitem(sys.modules, "scrapy_googlerobots.stores.redis", raising=False)
    with pytest.raises(ValueError, match=r"pip install scrapy-googlerobots\[redis\]"):
        build({"ROBOTSTXT_CACHE_STORE": "redis://localhost:6379/0"})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"ROBOTSTXT_CACHE_STORE": "mongodb://x/y"}, "use 'memory', a file path"),
        (
            {"ROBOTSTXT_CACHE_STORE": "/tmp/x.sqlite", "ROBOTSTXT_CACHE_STORE_TIMEOUT": 0},
            "ROBOTSTXT_CACHE_STORE_TIMEOUT must be a positive",
        ),
        (
            {"ROBOTSTXT_CACHE_STORE": "/tmp/x.sqlite", "ROBOTSTXT_LOCAL_CACHE_TTL": -1},
            "ROBOTSTXT_LOCAL_CACHE_TTL must be 0 or more",
        ),
        ({"ROBOTSTXT_CACHE_STORE": "redis://h:notaport/0"}, "not a usable Redis URL"),
    ],
    ids=["unknown_scheme", "zero_timeout", "negative_local_ttl", "bad_redis_url"],
)
def test_unusable_values_name_the_fix(values: dict[str, Any], message: str) -> None:
    if str(values["ROBOTSTXT_CACHE_STORE"]).startswith("redis"):
        pytest.importorskip("redis")
    with pytest.raises(ValueError, match=message):
        build(values)
