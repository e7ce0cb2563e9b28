"""ParkedRecords on a real SQLite store: what is counted, what a stalled owner must not crawl."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.settings import Settings

from scrapy_googlerobots.stores.factory import build_store
from scrapy_googlerobots.stores.layered import LayeredPolicyStore
from scrapy_googlerobots.waiting.origin_state import (
    WAITING_SINCE_META,
    WAITING_URL_META,
    Parked,
    clear_bookkeeping,
    first_parked,
)
from scrapy_googlerobots.waiting.parked_records import ParkedRecords

from store_support import Clock, Stats


class PagesSpider(Spider):
    name = "pages"

    def parse(self, response: Response) -> None:
        return None


def records(path: Path, clock: Clock, stats: Stats, adopted: list[Any] | None = None) -> Any:
    store = build_store(Settings({"ROBOTSTXT_CACHE_STORE": str(path)}), stats, clock=clock)
    assert isinstance(store, LayeredPolicyStore)
    spider = PagesSpider()
    sink = adopted if adopted is not None else []
    return ParkedRecords(
        store,
        ttl=15.0,
        stats=stats,
        spider=lambda: spider,
        adopt=lambda request, rid: sink.append((request, rid)),
    )


def test_a_parked_request_is_recorded_and_forgotten(tmp_path: Path) -> None:
    stats = Stats()
    mine = records(tmp_path / "s.sqlite", Clock(), stats)
    entry = Parked(Request("http://a.example/1", callback=PagesSpider().parse), 0.0)
    mine.record(entry)
    assert entry.rid is not None and stats["robotstxt/parked/recorded"] == 1
    assert mine.forget([entry]) == [entry]
    assert entry.rid is None


def test_an_unserializable_request_stays_local_and_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stats = Stats()
    mine = records(tmp_path / "s.sqlite", Clock(), stats)
    entry = Parked(Request("http://a.example/1", callback=lambda response: None), 0.0)
    with caplog.at_level(logging.WARNING):
        mine.record(entry)
    assert entry.rid is None and entry.unserializable
    assert stats["robotstxt/parked/unserializable"] == 1
    assert "robotstxt/parked/recorded" not in stats
    assert "http://a.example/1" in caplog.records[0].getMessage()
    assert mine.forget([entry]) == [entry], "a local request is always ours"


def test_a_stalled_owner_does_not_crawl_what_another_worker_adopted(tmp_path: Path) -> None:
    clock, stats, adopted = Clock(), Stats(), []
    stalled = records(tmp_path / "s.sqlite", clock, stats)
    entry = Parked(Request("http://a.example/1", callback=PagesSpider().parse), 0.0)
    stalled.record(entry)
    clock.now += 16  # its lease lapsed: it did not beat for longer than the TTL
    records(tmp_path / "s.sqlite", clock, Stats(), adopted).adopt_now()
    assert [request.url for request, _ in adopted] == ["http://a.example/1"]
    assert stalled.forget([entry]) == [], "the adopter crawls it, not the stalled owner"
    assert stats["robotstxt/parked/taken_over"] == 1


def test_a_record_that_cannot_be_restored_is_counted_and_deleted(tmp_path: Path) -> None:
    clock, stats, adopted = Clock(), Stats(), []
    store = build_store(
        Settings({"ROBOTSTXT_CACHE_STORE": str(tmp_path / "s.sqlite")}), Stats(), clock=clock
    )
    assert isinstance(store, LayeredPolicyStore)
    store.keep_parked("pages", "broken", b"not a pickle", 15.0)
    store.release_parked_lease("pages")
    adopter = records(tmp_path / "s.sqlite", clock, stats, adopted)
    adopter.adopt_now()
    assert adopted == []
    assert stats["robotstxt/parked/unrestorable"] == 1
    adopter.stop()
    assert (
        records(tmp_path / "s.sqlite", clock, Stats(), adopted).store.adopt_parked("pages", 15.0)
        == []
    ), "deleted, not left for the next adopter"


def test_a_record_the_store_could_not_delete_is_deleted_at_the_next_beat(tmp_path: Path) -> None:
    import sqlite3

    from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

    path, clock, stats, adopted = tmp_path / "s.sqlite", Clock(), Stats(), []
    # The layered store's monotonic clock times its pauses before probing a failed store.
    monotonic = Clock(0.0)
    store = LayeredPolicyStore(
        SqlitePolicyStore(path, timeout=0.2, clock=clock),
        description=str(path),
        timeout=0.2,
        stats=stats,
        clock=clock,
        monotonic=monotonic,
    )
    spider = PagesSpider()
    mine = ParkedRecords(store, ttl=15.0, stats=stats, spider=lambda: spider, adopt=print)
    entry = Parked(Request("http://a.example/1", callback=spider.parse), 0.0)
    mine.record(entry)
    blocker = sqlite3.connect(path)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    assert mine.forget([entry]) == [entry], "released: the store cannot say otherwise"
    assert stats["robotstxt/store/errors"] >= 1
    blocker.rollback()
    monotonic.now += 1.2  # the layered store probes a failed store again after 1 s
    mine.adopt_now()  # the next beat
    mine.stop()
    # Past the lease's 15 s: a record still there would be adopted, released or not.
    records(path, Clock(clock.now + 60), Stats(), adopted).adopt_now()
    assert adopted == [], "already crawled: deleted at the next beat, never adopted again"


URL = "http://a.example/1"


@pytest.mark.parametrize(
    ("carried", "url", "expected"),
    [
        (None, URL, (100.0, 0.0)),  # never parked: from now
        (40.0, URL, (40.0, 0.0)),  # parked before, by this worker or another
        (40, URL, (40.0, 0.0)),
        (40.0, None, (40.0, 0.0)),  # a 0.1.0 journal's request: no URL kept
        (40.0, "http://a.example/2", (100.0, 0.0)),  # meta copied to another request
        (130.5, URL, (100.0, 30.5)),  # in this worker's future: its clock lags
        (float("nan"), URL, (100.0, 0.0)),
        (float("inf"), URL, (100.0, 0.0)),
        (True, URL, (100.0, 0.0)),
        ("40", URL, (100.0, 0.0)),
    ],
)
def test_the_first_park_time_counts_from_the_carried_one(
    carried: Any, url: str | None, expected: tuple[float, float]
) -> None:
    meta: dict[str, Any] = {} if carried is None else {WAITING_SINCE_META: carried}
    if url is not None:
        meta[WAITING_URL_META] = url
    assert first_parked(meta, URL, 100.0) == expected


def test_a_request_moving_on_keeps_only_its_first_park_time() -> None:
    meta = {
        WAITING_SINCE_META: 40.0,
        WAITING_URL_META: URL,
        "_robotstxt_handed_back": True,
        "_robotstxt_released": 3.0,
        "_robotstxt_own_dont_filter": True,
        "depth": 2,
    }
    clear_bookkeeping(meta)
    assert meta == {WAITING_SINCE_META: 40.0, WAITING_URL_META: URL, "depth": 2}
