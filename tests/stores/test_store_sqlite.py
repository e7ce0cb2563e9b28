"""The SQLite policy store: round trip, persistence, leases, concurrent processes, bad files."""

from __future__ import annotations

import logging
import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.stores.base import PolicyStore
from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

from store_support import (
    RECORDS,
    Clock,
    Stats,
    at_once,
    check_lease_exclusive_until_released,
    write_first_layout,
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "robots.sqlite"


def test_implements_the_protocol(db: Path) -> None:
    assert isinstance(SqlitePolicyStore(db), PolicyStore)


@pytest.mark.parametrize("record", RECORDS.values(), ids=RECORDS.keys())
def test_round_trip_survives_reopen(db: Path, record: PolicyRecord) -> None:
    store = SqlitePolicyStore(db, clock=Clock(0.0))
    store.put(record)
    assert store.get(record.origin) == record
    store.close()
    reopened = SqlitePolicyStore(db, clock=Clock(0.0))
    assert reopened.get(record.origin) == record
    reopened.close()


def test_unknown_origin_is_none(db: Path) -> None:
    assert SqlitePolicyStore(db).get("http://nothing.example:80") is None


def test_put_replaces_the_whole_record(db: Path) -> None:
    store = SqlitePolicyStore(db, clock=Clock(0.0))
    old = RECORDS["stale_good_copy_during_outage"]
    new = PolicyRecord(origin=old.origin, outcome=FetchOutcome.ALLOW_ALL, status=410)
    store.put(old)
    store.put(new)
    assert store.get(old.origin) == new


def test_expiry_is_the_middlewares_business(db: Path) -> None:
    """The store keeps an expired record: a stale good copy is what a failed refresh needs."""
    record = RECORDS["rules"]
    store = SqlitePolicyStore(db, clock=Clock(record.expires_at + 3_600))
    store.put(record)
    assert store.get(record.origin) == record


def test_records_that_can_no_longer_matter_are_pruned_at_open(db: Path) -> None:
    record = RECORDS["allow_all_404"]
    SqlitePolicyStore(db, allow_after=100.0, clock=Clock(0.0)).put(record)
    # Past expires_at and past fetched_at + allow_after: forgotten.
    later = SqlitePolicyStore(db, allow_after=100.0, clock=Clock(record.expires_at + 1))
    assert later.get(record.origin) is None


def test_size_limit_keeps_the_longest_relevant(db: Path) -> None:
    store = SqlitePolicyStore(db, max_size=3, allow_after=0.0, clock=Clock(0.0))
    for i in range(5):
        store.put(
            PolicyRecord(
                origin=f"http://h{i}:80", outcome=FetchOutcome.ALLOW_ALL, expires_at=100.0 + i
            )
        )
    store.close()
    reopened = SqlitePolicyStore(db, max_size=3, allow_after=0.0, clock=Clock(0.0))
    assert [reopened.get(f"http://h{i}:80") is not None for i in range(5)] == [
        False,
        False,
        True,
        True,
        True,
    ]


def test_wal_mode(db: Path) -> None:
    SqlitePolicyStore(db).close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_workers_opening_a_new_file_together_all_open_it(tmp_path: Path) -> None:
    # Switching a new file to WAL needs it to itself: SQLite answers "locked"
    # at once, without the busy timeout, to the others opening it then.
    for trial in range(40):
        db = tmp_path / f"new-{trial}.sqlite"
        at_once(8, lambda db=db: SqlitePolicyStore(db).close())  # type: ignore[misc]
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_workers_opening_an_earlier_layout_together_migrate_it_once(tmp_path: Path) -> None:
    for trial in range(10):
        db = tmp_path / f"earlier-{trial}.sqlite"
        write_first_layout(db, "https://old:443", b"Disallow: /old\n")
        at_once(8, lambda db=db: SqlitePolicyStore(db, clock=Clock(0.0)).close())  # type: ignore[misc]
        store = SqlitePolicyStore(db, clock=Clock(0.0))
        old = store.get("https://old:443")
        assert old is not None and old.body == b"Disallow: /old\n"
        store.close()


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_new_file_is_private_and_an_existing_one_keeps_its_mode(db: Path) -> None:
    # Workers unpickle the parked requests it holds: only its owner may write it.
    store = SqlitePolicyStore(db)
    store.keep_parked("spider", "r1", b"request", 15.0)
    store.put(RECORDS["rules"])
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        assert path.stat().st_mode & 0o777 == 0o600, path.name
    store.close()

    shared = db.with_name("shared.sqlite")
    shared.touch(mode=0o660)
    shared.chmod(0o660)
    SqlitePolicyStore(shared).close()
    assert shared.stat().st_mode & 0o777 == 0o660, "the owner's choice is kept"


# -- leases -----------------------------------------------------------------


def test_lease_is_exclusive_until_released(db: Path) -> None:
    clock = Clock()
    check_lease_exclusive_until_released(
        SqlitePolicyStore(db, clock=clock), SqlitePolicyStore(db, clock=clock)
    )


def test_expired_lease_goes_to_the_next_worker(db: Path) -> None:
    clock = Clock()
    holder, waiter = SqlitePolicyStore(db, clock=clock), SqlitePolicyStore(db, clock=clock)
    origin = "http://example.com:80"
    assert holder.acquire_fetch_lease(origin, 30)
    clock.now += 29.9
    assert not waiter.acquire_fetch_lease(origin, 30)
    clock.now += 0.1
    assert waiter.acquire_fetch_lease(origin, 30)
    holder.release_fetch_lease(origin)  # late release of a lost lease: no effect
    assert not holder.acquire_fetch_lease(origin, 30)


# -- several processes on one file -----------------------------------------

_WRITERS = 4
_OWN = 150
_CONTENDED = 20


def _writer(path: str, index: int) -> list[str]:
    """Write own and contended records, race for leases; return the leases won."""
    store = SqlitePolicyStore(path, timeout=10.0, clock=Clock(0.0))
    won = []
    for i in range(_OWN):
        store.put(
            PolicyRecord(
                origin=f"http://w{index}-{i}:80",
                outcome=FetchOutcome.RULES,
                body=f"writer {index} record {i}".encode(),
                status=200,
                expires_at=1e9,
            )
        )
        contended = f"http://shared-{i % _CONTENDED}:80"
        store.put(
            PolicyRecord(
                origin=contended,
                outcome=FetchOutcome.RULES,
                body=f"writer {index}".encode(),
                status=200 + index,
                failures=index,
                expires_at=1e9,
            )
        )
        if store.acquire_fetch_lease(f"http://lease-{i}:80", 3_600):
            won.append(f"http://lease-{i}:80")
    store.close()
    return won


def test_concurrent_writer_processes_lose_nothing(db: Path) -> None:
    SqlitePolicyStore(db).close()
    with multiprocessing.get_context("spawn").Pool(_WRITERS) as pool:
        won = pool.starmap(_writer, [(str(db), i) for i in range(_WRITERS)])
    store = SqlitePolicyStore(db, clock=Clock(0.0))
    for index in range(_WRITERS):
        for i in range(_OWN):
            record = store.get(f"http://w{index}-{i}:80")
            assert record is not None
            assert record.body == f"writer {index} record {i}".encode()
    for i in range(_CONTENDED):
        record = store.get(f"http://shared-{i}:80")
        assert record is not None
        writer = record.failures
        # Whole rows, never a mix of two writers' fields.
        assert (record.body, record.status) == (f"writer {writer}".encode(), 200 + writer)
    all_won = [origin for won_by_one in won for origin in won_by_one]
    assert sorted(all_won) == sorted(f"http://lease-{i}:80" for i in range(_OWN)), (
        "every lease granted exactly once"
    )
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# -- bad files and locations ------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\x00" * 100 + b"\xff" * 4000],
    ids=["not_sqlite", "truncated_header"],
)
def test_corrupt_file_is_moved_aside_and_replaced(
    db: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    db.write_bytes(content)
    stats = Stats()
    with caplog.at_level(logging.WARNING):
        store = SqlitePolicyStore(db, stats=stats)
    assert stats["robotstxt/store/errors"] == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "unreadable" in warnings[0].getMessage()
    aside = [p for p in db.parent.iterdir() if p.name.startswith(db.name + ".corrupt-")]
    assert len(aside) == 1
    assert aside[0].read_bytes() == content
    store.put(RECORDS["rules"])
    assert store.get(RECORDS["rules"].origin) == RECORDS["rules"]


def test_unwritable_location_raises_for_the_factory_to_report(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(OSError):
        SqlitePolicyStore(blocker / "sub" / "robots.sqlite")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_read_only_directory_raises(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(sqlite3.OperationalError):
            SqlitePolicyStore(ro / "robots.sqlite")
    finally:
        ro.chmod(0o700)
