"""The hand-over at a stop: every waiting request goes where the crawl will find it again.

When the spider begins closing (Ctrl-C, ``CLOSESPIDER_*``, ``crawler.stop()``),
no fetch starts and every wait ends; :meth:`HandOver.at_close` then moves each
parked request of both waiting rooms (robots.txt's, tdmrep.json's) on, so that
it is crawled or judged later exactly once:

- recorded in the shared store (SQLite, Redis; the default store with
  ``JOBDIR``): it stays there, and this worker's lease on it is released, so
  another worker (or the resumed crawl) adopts it at once. Leaving it there,
  rather than moving it to the scheduler, makes the hand-over one atomic step
  of the store's adoption: a request is never both re-queued and adopted.
- else, with a scheduler that persists its queue (``JOBDIR``, scrapy-redis
  with ``SCHEDULER_PERSIST``): back to the scheduler, before it closes (its
  duplicate filter sees a request parked before it for the first time; one
  handed back from the downloader carries ``dont_filter``, as when it was
  handed back);
- else (or if it cannot be serialized): dropped with its errback.

In every case the request keeps the time it was first parked, so that
``ROBOTSTXT_UNREACHABLE_MAX_WAIT`` counts from it wherever it waits next.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from scrapy_googlerobots.policy.tdm import TDM_STORE_PREFIX
from scrapy_googlerobots.runtime.scrapy_compat import crawler_engine
from scrapy_googlerobots.waiting.origin_state import Parked, clear_bookkeeping
from scrapy_googlerobots.waiting.parked_records import ParkedRecords, Records, serialize_request
from scrapy_googlerobots.waiting.slow_down import PAUSE_KEY_PREFIX

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_googlerobots.reporting.reporter import Reporter
    from scrapy_googlerobots.stores.base import PolicyStore

__all__ = ["HandOver"]


class _Room(Protocol):
    """What the hand-over needs of a room: its fetches (None: none) and its requests."""

    @property
    def fetches(self) -> Any: ...

    def shutdown(self) -> list[tuple[str, Parked]]: ...


class HandOver:
    """Hands the parked requests of ``rooms`` over when the spider closes."""

    def __init__(
        self,
        crawler: Crawler,
        rooms: Sequence[_Room],
        records: Records,
        reporter: Reporter,
        store: PolicyStore,
    ) -> None:
        self.crawler = crawler
        self.rooms = rooms
        self.records = records
        self.reporter = reporter
        self.store = store
        settings = crawler.settings
        # A scheduler that keeps its queue across a stop: JOBDIR's disk queue,
        # scrapy-redis with SCHEDULER_PERSIST.
        self.scheduler_keeps = bool(settings.get("JOBDIR")) or settings.getbool("SCHEDULER_PERSIST")

    def at_close(self) -> None:
        """The spider has begun closing: fetch leases released, parked requests moved on."""
        leases = sum(room.fetches.release_leases() for room in self.rooms if room.fetches)
        entries = [entry for room in self.rooms for entry in room.shutdown()]
        kept = requeued = 0
        dropped: list[tuple[str, Parked]] = []
        engine = crawler_engine(self.crawler)
        for key, entry in entries:
            if entry.rid is not None:
                kept += 1
            elif self._requeue(engine, entry):
                requeued += 1
            else:
                dropped.append((key, entry))
        if isinstance(self.records, ParkedRecords):
            self.records.stop()
        for key, entry in dropped:
            if key.startswith(PAUSE_KEY_PREFIX):
                origin = key.removeprefix(PAUSE_KEY_PREFIX)
                reason = f"{origin} asked for a pause that had not ended: the spider is closing"
            else:
                what = "tdmrep.json" if key.startswith(TDM_STORE_PREFIX) else "robots.txt"
                origin = key.removeprefix(TDM_STORE_PREFIX)
                reason = f"{what} of {origin} not known yet: the spider is closing"
            self.reporter.errback_dropped(entry.request, reason, key)
        self.reporter.handed_over(kept, requeued, store=self.store, fetch_leases=leases)
        if dropped:
            self.reporter.closing_dropped(len(dropped))

    def _requeue(self, engine: Any, entry: Parked) -> bool:
        """Put ``entry``'s request back into a persisting scheduler; False if it cannot go."""
        spider = self.crawler.spider
        if not self.scheduler_keeps or entry.unserializable or engine is None or spider is None:
            return False
        request = entry.request
        try:
            serialize_request(request, spider)  # the scheduler's disk queue would fail the same way
        except Exception:
            return False
        # Where it is taken up again, its wait goes on from its first park.
        clear_bookkeeping(request.meta)
        try:
            # Our request_scheduled handler lets it pass: the close has begun.
            engine.crawl(request)
        except Exception as exc:  # a scheduler that cannot take it any more
            self.reporter.requeue_failed(request, exc)
            return False
        return True
