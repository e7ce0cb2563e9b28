"""The hand-over at a stop: every waiting request goes where the crawl will find it again.

When the spider begins closing (Ctrl-C, ``CLOSESPIDER_*``, ``crawler.stop()``),
no fetch starts and every wait ends; :meth:`HandOver.at_close` then moves each
parked request of every waiting room (one per policy file) on, so that
it is crawled or judged later exactly once (whichever policy file it waits for):

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
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.runtime.scrapy_compat import crawler_engine
from scrapy_googlerobots.waiting.origin_state import Parked, clear_bookkeeping
from scrapy_googlerobots.waiting.parked_records import ParkedRecords, Records, serialize_request

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_googlerobots.policy.origin import FileKind
    from scrapy_googlerobots.reporting.reporter import Reporter
    from scrapy_googlerobots.stores.base import PolicyStore
    from scrapy_googlerobots.waiting.slow_down import PauseRoom
    from scrapy_googlerobots.waiting.waiting_room import WaitingRoom

__all__ = ["HandOver"]


class HandOver:
    """Hands the parked requests of ``rooms`` over when the spider closes."""

    def __init__(
        self,
        crawler: Crawler,
        rooms: Sequence[WaitingRoom],
        records: Records,
        reporter: Reporter,
        store: PolicyStore,
        pauses: PauseRoom | None = None,
    ) -> None:
        self.crawler = crawler
        self.rooms = rooms
        self.pauses = pauses
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
        entries = [
            (_waiting_for(room.file.kind, key), key, entry)
            for room in self.rooms
            for key, entry in room.shutdown()
        ]
        if self.pauses is not None:
            entries += self.pauses.shutdown()
        kept = requeued = 0
        dropped: list[tuple[str, str, Parked]] = []
        engine = crawler_engine(self.crawler)
        for why, key, entry in entries:
            if entry.rid is not None:
                kept += 1
            elif self._requeue(engine, entry):
                requeued += 1
            else:
                dropped.append((why, key, entry))
        if isinstance(self.records, ParkedRecords):
            self.records.stop()
        for why, key, entry in dropped:
            self.reporter.errback_dropped(entry.request, f"{why}: the spider is closing", key)
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


def _waiting_for(kind: FileKind, key: str) -> str:
    return f"{kind.name} of {kind.origin_key(key)} not known yet"
