"""A policy store in one SQLite file (stdlib ``sqlite3``): survives restarts, shared on one host.

Used for ``JOBDIR/robotstxt.sqlite`` and for ``ROBOTSTXT_CACHE_STORE = "/some/path"``.
Several processes may share one file: WAL mode lets readers run beside the
writer, ``busy_timeout`` makes a writer wait for the lock instead of failing,
and every operation is one autocommitted statement, so there is no
read-modify-write window in which an update could be lost. A put replaces the
whole row (upsert); bodies are stored deflated (rows of files written
before that are read as they are); leases live in their own table and are taken with one
conditional upsert. A lease whose holder process no longer runs on this host is
void (a crawl killed mid-fetch and resumed does not wait for its own old leases).

Parked requests (:class:`~scrapy_googlerobots.stores.base.ParkedStore`) live
in ``robotstxt_parked`` (scope, request id, owner, serialized request) and the
owners' leases in ``robotstxt_parked_owner``. An owner's records may be
adopted once its lease row has expired or is gone, or its process no longer
runs on this host (a ``JOBDIR`` crawl SIGKILLed and restarted adopts its own
waiting requests at once). Adoption is one ``BEGIN IMMEDIATE`` transaction:
SQLite lets one writer in at a time, so two adopters never both take a record.

Origins' send slots and pauses
(:class:`~scrapy_googlerobots.stores.base.PaceStore`) are rows of
``robotstxt_pace`` (next allowed send, pause-until and its reason, in this
host's wall-clock time); a reservation is one upsert with ``RETURNING``.

A new file is created readable and writable by its owner only (``0600``;
SQLite gives its ``-wal`` and ``-shm`` files the same permissions): workers
unpickle the parked requests it holds, so whoever can write it can run code
in them. An existing file keeps its permissions.

A file that is not a usable database (corrupt, truncated, another format) is
moved aside as ``<name>.corrupt-<timestamp>``, reported once (WARNING and
``robotstxt/store/errors``), and replaced by an empty store.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import struct
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord
from scrapy_googlerobots.stores.base import STORE_ERRORS_STAT, StatsLike
from scrapy_googlerobots.stores.compact import deflate, inflate
from scrapy_googlerobots.stores.layered import relevant_until

__all__ = ["SqlitePolicyStore"]

logger = logging.getLogger(__name__)

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS robotstxt_policy (
        origin TEXT PRIMARY KEY,
        outcome TEXT NOT NULL,
        body_blob BLOB,
        status INTEGER,
        fetched_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        unreachable_since REAL,
        failures INTEGER NOT NULL,
        retry_at REAL,
        keep_until REAL NOT NULL,
        body_codec INTEGER NOT NULL DEFAULT 0,
        headers_blob BLOB
    )""",
    "CREATE INDEX IF NOT EXISTS robotstxt_policy_keep ON robotstxt_policy (keep_until)",
    """CREATE TABLE IF NOT EXISTS robotstxt_lease (
        origin TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS robotstxt_parked (
        scope TEXT NOT NULL,
        rid TEXT NOT NULL,
        owner TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (scope, rid)
    )""",
    "CREATE INDEX IF NOT EXISTS robotstxt_parked_by_owner ON robotstxt_parked (scope, owner)",
    """CREATE TABLE IF NOT EXISTS robotstxt_parked_owner (
        scope TEXT NOT NULL,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL,
        PRIMARY KEY (scope, owner)
    )""",
    """CREATE TABLE IF NOT EXISTS robotstxt_pace (
        origin TEXT PRIMARY KEY,
        next_at REAL NOT NULL,
        pause_until REAL NOT NULL,
        reason TEXT NOT NULL DEFAULT ''
    )""",
)
# One statement: two processes reserving at once get two slots ``gap`` apart.
_RESERVE = (
    "INSERT INTO robotstxt_pace (origin, next_at, pause_until) VALUES (:origin, :now + :gap, 0) "
    "ON CONFLICT (origin) DO UPDATE SET next_at = max(:now, next_at, pause_until) + :gap "
    "RETURNING next_at - :gap"
)
_PAUSE = (
    "INSERT INTO robotstxt_pace (origin, next_at, pause_until, reason) VALUES (?, 0, ?, ?) "
    "ON CONFLICT (origin) DO UPDATE SET pause_until = excluded.pause_until, "
    "reason = excluded.reason WHERE excluded.pause_until > robotstxt_pace.pause_until"
)
_RENEW_PARKED = (
    "INSERT INTO robotstxt_parked_owner (scope, owner, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (scope, owner) DO UPDATE SET expires_at = excluded.expires_at"
)
_COLUMNS = (
    "outcome, body_blob, status, fetched_at, expires_at, unreachable_since, failures, retry_at"
)
# body_codec: how ``body_blob`` is stored. 0 = raw (rows of files written
# before bodies were compressed), 1 = raw deflate (compact.deflate), what is
# written now. The column is not called ``body`` any more, so that an earlier
# version given this file fails to read it (and falls back to memory) instead
# of taking a deflated body for robots.txt text.
_RAW, _DEFLATE = 0, 1
# headers_blob: the response headers kept for serving robots.txt itself, as
# the record's fetched_at (f64) then the header block deflated. A row written
# by a version that does not know the column keeps the old value there: the
# date tells that it belongs to another fetch, and it is ignored.
_HEADERS_STAMP = struct.Struct("<d")
_PUT_COLUMNS = [*_COLUMNS.split(", "), "keep_until", "body_codec", "headers_blob"]
_PUT = (
    f"INSERT INTO robotstxt_policy (origin, {', '.join(_PUT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(_PUT_COLUMNS) + 1))}) ON CONFLICT (origin) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _PUT_COLUMNS)
)
# Granted when nobody holds the lease, it has expired, or we hold it already;
# one statement, so two processes can never both see it free.
_ACQUIRE = (
    "INSERT INTO robotstxt_lease (origin, holder, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (origin) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at "
    "WHERE robotstxt_lease.expires_at <= ? OR robotstxt_lease.holder = excluded.holder"
)
# Prune forgotten records and dead leases once per this many puts.
_PRUNE_EVERY = 512


class SqlitePolicyStore:
    """A :class:`~scrapy_googlerobots.stores.base.PolicyStore` in the SQLite file at ``path``.

    Raises ``sqlite3.OperationalError`` when the file can neither be opened nor
    created (read-only location, missing parent that cannot be made); the
    factory reports that and falls back to memory.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 1.0,
        max_size: int = 10_000,
        allow_after: float = 2_592_000.0,
        stats: StatsLike | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.max_size = max_size
        self.allow_after = allow_after
        self._stats = stats
        self._clock = clock
        self._holder = f"{os.getpid()}-{uuid.uuid4().hex}"
        self._puts = 0
        self._conn = self._open_or_replace()

    @property
    def description(self) -> str:
        return f"sqlite:{self.path}"

    # -- opening ---------------------------------------------------------

    def _open_or_replace(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._open()
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as exc:
            # Not a database we can read (corrupt, truncated, something else):
            # keep it for inspection, start empty.
            self._report_corrupt(exc)
            return self._open()

    def _open(self) -> sqlite3.Connection:
        _create_private(self.path)
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            check = conn.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {check[0] if check else 'no answer'}")
            _use_wal(conn, deadline=time.monotonic() + self.timeout)
            # WAL + NORMAL: durable across process crashes, fsync only at
            # checkpoints; a robots cache can afford losing the last
            # transactions on power loss.
            conn.execute("PRAGMA synchronous = NORMAL")
            # One writer at a time lays out (or migrates) the file: workers
            # starting together would otherwise each add the same column. On
            # failure, closing the connection below rolls the transaction back.
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                conn.execute(statement)
            _migrate_body(conn)
            conn.execute("COMMIT")
            self._prune(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _report_corrupt(self, exc: BaseException) -> None:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        logger.warning(
            "robots.txt store %s is unreadable (%s: %s); moved it to %s and started an empty one",
            self.path,
            type(exc).__name__,
            exc,
            aside,
        )
        if self._stats is not None:
            self._stats.inc_value(STORE_ERRORS_STAT)
        os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            companion = self.path.with_name(self.path.name + suffix)
            if companion.exists():
                os.replace(companion, aside.with_name(aside.name + suffix))

    def _run(self, sql: str, params: tuple[object, ...] | dict[str, object] = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except sqlite3.OperationalError:
            # Locked past busy_timeout, disk full, I/O: the caller (the
            # layered store) degrades to its local cache.
            raise
        except sqlite3.ProgrammingError as exc:
            # Used after close() (a fetch that ended after the spider closed, as
            # Scrapy 2.11 lets one): the file is fine, leave it as it is.
            raise sqlite3.OperationalError(f"the store is closed ({exc})") from exc
        except sqlite3.DatabaseError as exc:
            # The file went bad under us: replace it, as at start-up.
            self._conn.close()
            self._report_corrupt(exc)
            self._conn = self._open()
            return self._conn.execute(sql, params)

    def _prune(self, conn: sqlite3.Connection) -> None:
        now = self._clock()
        conn.execute("DELETE FROM robotstxt_policy WHERE keep_until < ?", (now,))
        conn.execute("DELETE FROM robotstxt_lease WHERE expires_at < ?", (now,))
        conn.execute("DELETE FROM robotstxt_pace WHERE next_at < ? AND pause_until < ?", (now, now))
        # Lapsed owners' leases only: their records wait for an adopter.
        conn.execute("DELETE FROM robotstxt_parked_owner WHERE expires_at < ?", (now,))
        # Over the size limit: drop the records that stop mattering soonest.
        conn.execute(
            "DELETE FROM robotstxt_policy WHERE origin IN (SELECT origin FROM robotstxt_policy "
            "ORDER BY keep_until DESC LIMIT -1 OFFSET ?)",
            (self.max_size,),
        )

    # -- PolicyStore -----------------------------------------------------

    def get(self, origin: str) -> PolicyRecord | None:
        row = self._run(
            f"SELECT {_COLUMNS}, body_codec, headers_blob FROM robotstxt_policy WHERE origin = ?",
            (origin,),
        ).fetchone()
        if row is None:
            return None
        outcome, body, status, fetched_at, expires_at, since, failures, retry_at, codec, kept = row
        if body is not None:
            try:
                body = inflate(body) if codec == _DEFLATE else bytes(body)
            except ValueError:
                return None  # unreadable: as if unknown, the next fetch replaces it
        headers = _headers_of(kept, fetched_at)
        return PolicyRecord(
            origin=origin,
            outcome=FetchOutcome(outcome),
            body=body,
            status=status,
            fetched_at=fetched_at,
            expires_at=expires_at,
            unreachable_since=since,
            failures=failures,
            retry_at=retry_at,
            headers=headers,
        )

    def put(self, record: PolicyRecord) -> None:
        self._run(
            _PUT,
            (
                record.origin,
                record.outcome.value,
                None if record.body is None else deflate(record.body),
                record.status,
                record.fetched_at,
                record.expires_at,
                record.unreachable_since,
                record.failures,
                record.retry_at,
                relevant_until(record, self.allow_after),
                _DEFLATE,
                None
                if record.headers is None
                else _HEADERS_STAMP.pack(record.fetched_at) + deflate(record.headers),
            ),
        )
        self._puts += 1
        if self._puts % _PRUNE_EVERY == 0:
            self._prune(self._conn)

    def acquire_fetch_lease(self, origin: str, ttl: float) -> bool:
        now = self._clock()
        if self._run(_ACQUIRE, (origin, self._holder, now + ttl, now)).rowcount == 1:
            return True
        # The file lives on this host, so is its holder: a lease left by a
        # process that is gone (a crawl killed mid-fetch, then resumed) is void.
        row = self._run("SELECT holder FROM robotstxt_lease WHERE origin = ?", (origin,)).fetchone()
        if row is None or _process_alive(row[0]):
            return False
        self._run("DELETE FROM robotstxt_lease WHERE origin = ? AND holder = ?", (origin, row[0]))
        return self._run(_ACQUIRE, (origin, self._holder, now + ttl, now)).rowcount == 1

    def release_fetch_lease(self, origin: str) -> None:
        self._run(
            "DELETE FROM robotstxt_lease WHERE origin = ? AND holder = ?", (origin, self._holder)
        )

    # -- PaceStore ----------------------------------------------------------

    def reserve_send(self, origin: str, gap: float) -> float:
        now = self._clock()
        row = self._run(_RESERVE, {"origin": origin, "now": now, "gap": gap}).fetchone()
        return max(0.0, float(row[0]) - now)

    def pause_origin(self, origin: str, seconds: float, reason: str) -> float:
        now = self._clock()
        self._run(_PAUSE, (origin, now + seconds, reason))
        row = self._run(
            "SELECT pause_until FROM robotstxt_pace WHERE origin = ?", (origin,)
        ).fetchone()
        return max(0.0, float(row[0]) - now)

    def paused_origins(self) -> dict[str, tuple[float, str]]:
        now = self._clock()
        rows = self._run(
            "SELECT origin, pause_until, reason FROM robotstxt_pace WHERE pause_until > ?", (now,)
        ).fetchall()
        return {origin: (until - now, reason) for origin, until, reason in rows}

    # -- ParkedStore -------------------------------------------------------

    def keep_parked(self, scope: str, rid: str, data: bytes, ttl: float) -> None:
        self._run(_RENEW_PARKED, (scope, self._holder, self._clock() + ttl))
        self._run(
            "INSERT OR REPLACE INTO robotstxt_parked (scope, rid, owner, data) VALUES (?, ?, ?, ?)",
            (scope, rid, self._holder, data),
        )

    def forget_parked(self, scope: str, rids: Sequence[str]) -> list[str]:
        ours = []
        for rid in rids:
            deleted = self._run(
                "DELETE FROM robotstxt_parked WHERE scope = ? AND rid = ? AND owner = ?",
                (scope, rid, self._holder),
            ).rowcount
            if deleted:
                ours.append(rid)
        return ours

    def renew_parked_lease(self, scope: str, ttl: float) -> None:
        self._run(_RENEW_PARKED, (scope, self._holder, self._clock() + ttl))

    def release_parked_lease(self, scope: str) -> None:
        self._run(
            "DELETE FROM robotstxt_parked_owner WHERE scope = ? AND owner = ?",
            (scope, self._holder),
        )

    def adopt_parked(self, scope: str, ttl: float) -> list[tuple[str, bytes]]:
        now = self._clock()
        self._run("BEGIN IMMEDIATE")
        try:
            self._run(_RENEW_PARKED, (scope, self._holder, now + ttl))
            live = {
                owner
                for owner, expires_at in self._run(
                    "SELECT owner, expires_at FROM robotstxt_parked_owner WHERE scope = ?",
                    (scope,),
                ).fetchall()
                if expires_at > now and _process_alive(owner)
            }
            owners = [
                owner
                for (owner,) in self._run(
                    "SELECT DISTINCT owner FROM robotstxt_parked WHERE scope = ?", (scope,)
                ).fetchall()
                if owner not in live and owner != self._holder
            ]
            taken: list[tuple[str, bytes]] = []
            for owner in owners:
                rows = self._run(
                    "SELECT rid, data FROM robotstxt_parked WHERE scope = ? AND owner = ?",
                    (scope, owner),
                ).fetchall()
                taken += [(rid, bytes(data)) for rid, data in rows]
                self._run(
                    "UPDATE robotstxt_parked SET owner = ? WHERE scope = ? AND owner = ?",
                    (self._holder, scope, owner),
                )
                self._run(
                    "DELETE FROM robotstxt_parked_owner WHERE scope = ? AND owner = ?",
                    (scope, owner),
                )
            self._run("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        return taken

    def close(self) -> None:
        self._conn.close()


def _use_wal(conn: sqlite3.Connection, *, deadline: float) -> None:
    """Switch the file to write-ahead logging, once for all its users.

    The switch needs the file to itself. When workers open a new file at the
    same moment, SQLite answers "locked" at once to all but one of them (it
    would deadlock otherwise, so the busy timeout does not apply): those wait
    a little and look again, until one has switched it or ``deadline`` passes.
    """
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()
            if mode is not None and str(mode[0]).lower() == "wal":
                return
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _is_locked(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(random.uniform(0.005, 0.025))


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    # By its message: Python 3.10's exceptions carry no SQLite error code.
    text = str(exc)
    return "locked" in text or "busy" in text


def _migrate_body(conn: sqlite3.Connection) -> None:
    """Bring a file written by an earlier version to this layout (rows without
    compressed bodies: codec 0; rows without response headers: none kept)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(robotstxt_policy)")}
    if "body_codec" not in columns:
        conn.execute(
            "ALTER TABLE robotstxt_policy ADD COLUMN body_codec INTEGER NOT NULL DEFAULT 0"
        )
    if "body" in columns:
        conn.execute("ALTER TABLE robotstxt_policy RENAME COLUMN body TO body_blob")
    if "headers_blob" not in columns:
        # Files written before response headers were kept: their rows have none.
        conn.execute("ALTER TABLE robotstxt_policy ADD COLUMN headers_blob BLOB")


def _headers_of(kept: bytes | None, fetched_at: float) -> bytes | None:
    """The header block in ``headers_blob``, if it was written with this row's fetch."""
    if kept is None or len(kept) < _HEADERS_STAMP.size:
        return None
    (stamp,) = _HEADERS_STAMP.unpack_from(kept)
    if stamp != fetched_at:
        return None
    try:
        return inflate(bytes(kept[_HEADERS_STAMP.size :]))
    except ValueError:
        return None


def _create_private(path: Path) -> None:
    """Create ``path`` empty (SQLite's new database), readable and writable by its owner only.

    Nothing happens if it exists; if it cannot be created, SQLite's own open
    reports why.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return
    os.close(fd)


def _process_alive(holder: str) -> bool:
    """Whether the process named in a lease holder (``<pid>-<token>``) still runs here."""
    try:
        pid = int(holder.split("-", 1)[0])
    except ValueError:
        return True  # not ours to judge
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True
