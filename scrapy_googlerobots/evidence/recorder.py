"""The crawl's evidence recorder: both logs of one process and run, synced on a schedule.

:meth:`EvidenceRecorder.open` reads ``ROBOTSTXT_EVIDENCE`` (None when it is
unset: nothing is made, nothing is written) and fails at start-up, with the
fix, when warcio is missing. The crawl hands it:

- every policy-file exchange (:meth:`~EvidenceRecorder.fetched`), written to
  the WARC log at once;
- every decision (:meth:`~EvidenceRecorder.decided`), written to the decision
  log at once; the record ID it returns goes into ``response.meta``.

Each record reaches the operating system in one ``write`` as it is made (a
killed process loses at most the record being written); the files are synced
to the disk (``fsync``) every :data:`SYNC_INTERVAL` seconds in a thread of
the reactor's pool, and at :meth:`~EvidenceRecorder.close`: never a disk flush
per request on the reactor.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.evidence.files import run_id
from scrapy_googlerobots.evidence.records import Decision, DecisionLog, PolicyRef
from scrapy_googlerobots.evidence.warc import (
    Exchange,
    WarcLog,
    WarcRef,
    payload_digest,
    policy_record_id,
    warcio_missing,
)
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome, outcome_for_status

if TYPE_CHECKING:
    from collections.abc import Callable

    from twisted.internet.defer import Deferred

    from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = ["EVIDENCE_META", "SYNC_INTERVAL", "EvidenceRecorder", "check_evidence"]

logger = logging.getLogger(__name__)

EVIDENCE_META = "robotstxt_evidence"
"""Response meta: the ID of the decision record of the response (``<run>-<n>``)."""
SYNC_INTERVAL = 5.0
"""Seconds between two syncs of the evidence files to the disk."""
# Digests of stored copies remembered (per store key and fetch time), and the
# last failed fetch of each origin without a good copy.
_MEMO_SIZE = 4_096


def _software() -> str:
    """``scrapy-googlerobots/<version>`` for the WARC files' ``warcinfo``."""
    # (From the installed metadata: the package's root imports the crawl, which uses this.)
    try:
        return f"scrapy-googlerobots/{metadata.version('scrapy-googlerobots')}"
    except metadata.PackageNotFoundError:
        return "scrapy-googlerobots"


def check_evidence(value: str) -> Path:
    """The directory ``ROBOTSTXT_EVIDENCE`` names, made if missing; ValueError naming the
    setting and the fix when warcio is missing or the directory cannot be made."""
    missing = warcio_missing()
    if missing is not None:
        raise ValueError(missing)
    directory = Path(str(value)).expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"ROBOTSTXT_EVIDENCE: cannot make the directory {directory}: {exc}"
        ) from None
    return directory


class EvidenceRecorder:
    """Writes one process's evidence into ``directory`` (see the module doc)."""

    def __init__(self, directory: Path, settings: dict[str, Any]) -> None:
        self.directory = directory
        self.run = run_id()
        self.settings = settings
        self.warc = WarcLog(
            directory,
            self.run,
            software=_software(),
            settings=settings,
        )
        self.decisions = DecisionLog(directory, self.run)
        self._digests: OrderedDict[str, str | None] = OrderedDict()
        self._refs: OrderedDict[tuple[str, float], PolicyRef] = OrderedDict()
        self._failures: OrderedDict[str, tuple[WarcRef, str, float]] = OrderedDict()
        self._loop: Any = None
        self._syncing = False

    @classmethod
    def open(cls, value: str | None, recorded: dict[str, Any]) -> EvidenceRecorder | None:
        """The recorder ``ROBOTSTXT_EVIDENCE`` (``value``) asks for; None when it is unset.

        ``recorded``: the settings written into the WARC files' ``warcinfo``
        and each decision record's ``settings``. ValueError naming the setting
        when warcio is missing or the directory cannot be made.
        """
        if not value:
            return None
        return cls(check_evidence(value), recorded)

    # -- the schedule ---------------------------------------------------------

    def start(self) -> None:
        """Sync the files every :data:`SYNC_INTERVAL` seconds (on the running reactor)."""
        from twisted.internet.task import LoopingCall

        if self._loop is None:
            self._loop = LoopingCall(self._sync_soon)
            self._loop.start(SYNC_INTERVAL, now=False)

    def _sync_soon(self) -> None:
        if self._syncing:
            return  # the last sync is still running (a slow disk)
        from twisted.internet import threads

        # Typed through a variable: Twisted before 24.7 ships deferToThread unannotated.
        to_thread: Callable[[Callable[[], None]], Deferred[None]] = threads.deferToThread
        self._syncing = True
        done = to_thread(self.sync)
        done.addBoth(self._synced)

    def _synced(self, result: Any) -> None:
        self._syncing = False
        if hasattr(result, "getErrorMessage"):
            logger.warning("Evidence files could not be synced: %s", result.getErrorMessage())

    def sync(self) -> None:
        """Sync both files to the disk (either may be closed meanwhile: then nothing to do)."""
        for file in (self.warc.file, self.decisions.file):
            # Closed meanwhile: close synced it.
            with contextlib.suppress(OSError, ValueError):
                file.sync()

    def close(self) -> None:
        """Stop the schedule; sync and close both files."""
        loop, self._loop = self._loop, None
        if loop is not None and loop.running:
            loop.stop()
        self.warc.file.close()
        self.decisions.file.close()

    # -- what the crawl hands over --------------------------------------------

    def fetched(self, exchange: Exchange, store_key: str | None = None) -> WarcRef:
        """Write one policy-file exchange. ``store_key``: its origin's key, for a failed
        fetch (remembered for the decisions that drop requests for it)."""
        ref = self.warc.write(exchange)
        if exchange.record_id is not None:
            self._remember(self._digests, exchange.record_id, ref.digest)
        elif store_key is not None and (
            exchange.status is None
            or outcome_for_status(exchange.status) is FetchOutcome.UNREACHABLE
        ):
            self._remember(self._failures, store_key, (ref, exchange.url, exchange.at))
        return ref

    def policy_ref(self, file: str, store_key: str, url: str, record: PolicyRecord) -> PolicyRef:
        """The :class:`PolicyRef` of the copy ``record`` (of ``store_key``, at ``url``)."""
        if record.outcome is FetchOutcome.UNREACHABLE:
            failed = self._failures.get(store_key)
            if failed is None:
                return PolicyRef(file, url, record.status, 0.0, "", None)
            ref, failed_url, at = failed
            return PolicyRef(file, failed_url, record.status, at, ref.record_id, ref.digest)
        # Every decision names its origin's copies: one made per copy, then remembered.
        memo = (store_key, record.fetched_at)
        refs = self._refs
        found = refs.get(memo)
        if found is not None and found.url == url:
            refs.move_to_end(memo)
            return found
        record_id = policy_record_id(store_key, record.fetched_at)
        digests = self._digests
        if record_id in digests:
            digest = digests[record_id]
        else:
            # Another worker's fetch (a shared store) or an earlier run's: the body kept
            # is the recorded payload (a 4xx answer's body is not kept: unknown here).
            digest = payload_digest(record.body) if record.body is not None else None
        found = PolicyRef(file, url, record.status, record.fetched_at, record_id, digest)
        self._remember(refs, memo, found)
        return found

    def decided(self, decision: Decision) -> str:
        """Write one decision record; its ID."""
        return self.decisions.write(decision)

    @staticmethod
    def _remember(memo: OrderedDict[Any, Any], key: Any, value: Any) -> None:
        memo[key] = value
        memo.move_to_end(key)
        if len(memo) > _MEMO_SIZE:
            memo.popitem(last=False)
