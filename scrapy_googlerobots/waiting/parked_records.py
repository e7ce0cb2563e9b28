"""Parked requests kept in the shared store, so that a stopped or killed worker loses none.

A request parked in the waiting room is in neither the scheduler nor the
downloader: if its worker dies, nothing else knows of it. With a store shared
between processes (Redis; SQLite, also the one ``JOBDIR`` brings), each
parked request is recorded there when it is parked, serialized as Scrapy's
disk queues serialize requests (``Request.to_dict(spider=...)``, pickled),
and its record is deleted when the request is released or dropped. Only
parked requests touch the store: the hot path of a request whose origin has
a usable robots.txt is unchanged.

The records of one process are held under one lease (``ROBOTSTXT_PARKED_LEASE_TTL``),
renewed every third of it by :class:`ParkedRecords`' heartbeat. The same
heartbeat adopts the records of every owner whose lease has lapsed (it was
killed) or was released (it stopped and handed them over): the store moves
them to this process atomically, so two survivors never both take one; each
adopted request waits for its origin's robots.txt here like our own, until
the deadline of its first park (``ROBOTSTXT_UNREACHABLE_MAX_WAIT`` counts
from it, across any number of hand-overs).

A request that cannot be serialized (a callback that is not a spider method,
unpicklable meta) is counted in ``robotstxt/parked/unserializable`` and stays
local: a stop drops it with its errback, a kill loses it.
"""

from __future__ import annotations

import logging
import pickle
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from scrapy.utils.request import request_from_dict

from scrapy_googlerobots.runtime.timers import Timer
from scrapy_googlerobots.runtime.wording import counted
from scrapy_googlerobots.waiting.origin_state import OWN_DONT_FILTER_META, clear_bookkeeping

if TYPE_CHECKING:
    from scrapy import Request, Spider

    from scrapy_googlerobots.stores.layered import LayeredPolicyStore
    from scrapy_googlerobots.waiting.origin_state import Parked

__all__ = ["NO_RECORDS", "ParkedRecords", "Records", "deserialize_request", "serialize_request"]

logger = logging.getLogger(__name__)


def serialize_request(request: Request, spider: Spider) -> bytes:
    """``request`` as Scrapy's disk queues keep it; raises if it cannot be kept."""
    return pickle.dumps(request.to_dict(spider=spider), protocol=4)


def deserialize_request(data: bytes, spider: Spider, *, fresh_filter: bool = False) -> Request:
    """The request :func:`serialize_request` wrote, without our bookkeeping meta
    but its first-park time (:data:`~.origin_state.WAITING_SINCE_META`): the
    adopter's wait goes on counting from it.

    ``fresh_filter``: the adopting process's duplicate filter has seen nothing
    of the other process's, so ``dont_filter`` set by the middleware when it
    handed the request back is cleared (the request meets this filter).

    ``data`` is unpickled: it must come from a store only the crawl's own
    workers can write (docs/usage/persistence.rst, "Who may write the stores").
    """
    request = request_from_dict(pickle.loads(data), spider=spider)
    if fresh_filter and request.meta.get(OWN_DONT_FILTER_META):
        request.dont_filter = False
    clear_bookkeeping(request.meta)
    return request


class _NoRecords:
    """No store to keep parked requests in: every call is free."""

    enabled = False

    def record(self, entry: Parked) -> None:
        pass

    def forget(self, entries: list[Parked]) -> list[Parked]:
        return entries

    def rewrite(self, entry: Parked) -> None:
        pass


NO_RECORDS = _NoRecords()
"""The waiting room's records when the store keeps no parked requests."""


class ParkedRecords:
    """One process's parked requests in ``store``, its lease on them, and adoption.

    ``adopt(request, rid)`` receives each request taken over from a stopped
    or dead worker (already recorded as ours under ``rid``).
    """

    enabled = True

    def __init__(
        self,
        store: LayeredPolicyStore,
        *,
        ttl: float,
        stats: Any,
        spider: Callable[[], Spider | None],
        adopt: Callable[[Request, str], None],
        fresh_filter: bool = False,
    ) -> None:
        self.store = store
        self.fresh_filter = fresh_filter
        self.ttl = ttl
        self.stats = stats
        self._spider = spider
        self._adopt = adopt
        self._timer: Timer | None = None
        # Records of requests already sent on while the store could not delete them.
        self._unforgotten: list[str] = []
        self.stopped = False

    @property
    def scope(self) -> str:
        spider = self._spider()
        return spider.name if spider is not None else "default"

    # -- per parked request ------------------------------------------------------

    def record(self, entry: Parked) -> None:
        """Keep ``entry``'s request in the store (sets ``entry.rid``), or count why not."""
        if entry.rid is not None or self.stopped:
            return
        spider = self._spider()
        if spider is None:
            return
        try:
            data = serialize_request(entry.request, spider)
        except Exception as exc:  # a callback that is not a spider method, unpicklable meta
            entry.unserializable = True
            self.stats.inc_value("robotstxt/parked/unserializable")
            logger.warning(
                "%(request)s waits for robots.txt in this process only: it cannot be kept in "
                "the robots.txt store (%(error)s), so a stop drops it and a crash loses it. "
                "Fix: use spider methods as callbacks and picklable meta",
                {"request": entry.request, "error": exc},
                extra={"spider": spider},
            )
            return
        rid = uuid.uuid4().hex
        if self.store.keep_parked(self.scope, rid, data, self.ttl):
            entry.rid = rid
            self.stats.inc_value("robotstxt/parked/recorded")

    def rewrite(self, entry: Parked) -> None:
        """Write ``entry``'s record again, under its id: its first-park time was re-based.

        Called right after its adoption (the record is ours). Without it, the
        next adopter would read the first park the rewritten one replaced.
        """
        spider = self._spider()
        if entry.rid is None or self.stopped or spider is None:
            return
        try:
            data = serialize_request(entry.request, spider)
        except Exception:  # it was serialized before: only a meta changed since can fail
            return
        self.store.keep_parked(self.scope, entry.rid, data, self.ttl)

    def forget(self, entries: list[Parked]) -> list[Parked]:
        """Delete the records of ``entries`` (leaving the waiting room); return those still ours.

        A record gone from the store was adopted by another worker (this
        process's lease lapsed: stalled longer than the TTL): that worker
        crawls it, so this one must not. When the store cannot answer, the
        request is taken as ours (nobody can adopt from an unreachable store
        either).
        """
        rids = [entry.rid for entry in entries if entry.rid is not None]
        if not rids:
            return entries
        ours = self.store.forget_parked(self.scope, rids)
        if ours is None:
            # Deleted at the next beat, before the lease that guards them can lapse.
            self._unforgotten += rids
        for entry in entries:
            entry.rid = None if ours is None or entry.rid in ours else entry.rid
        kept = [entry for entry in entries if entry.rid is None]
        lost = len(entries) - len(kept)
        if lost:
            self.stats.inc_value("robotstxt/parked/taken_over", lost)
            logger.warning(
                "%(requests)s adopted by another worker meanwhile (this worker's lease on them "
                "lapsed: it was stalled for more than ROBOTSTXT_PARKED_LEASE_TTL = %(ttl)g s); "
                "that worker crawls them",
                {
                    "requests": counted(
                        lost,
                        "request that waited for robots.txt here was",
                        "requests that waited for robots.txt here were",
                    ),
                    "ttl": self.ttl,
                },
                extra={"spider": self._spider()},
            )
        return kept

    # -- the heartbeat -------------------------------------------------------------

    def start(self) -> None:
        """Renew the lease and adopt orphaned records now and every third of the TTL.

        Called at ``spider_opened``: the first adoption happens before the
        engine can find the crawl idle and close it.
        """
        if self._timer is None and not self.stopped:
            self._beat()

    def _beat(self) -> None:
        self._timer = Timer(self.ttl / 3, self._beat)
        self.adopt_now()

    def adopt_now(self) -> int:
        """Renew the lease; adopt the records of stopped or dead owners (``adopt`` each).

        Returns how many requests were adopted.
        """
        spider = self._spider()
        if spider is None or self.stopped:
            return 0
        self._forget_late()
        taken = self.store.adopt_parked(self.scope, self.ttl)
        if not taken:
            return 0
        adopted = 0
        broken: list[str] = []
        for rid, data in taken:
            try:
                request = deserialize_request(data, spider, fresh_filter=self.fresh_filter)
            except Exception as exc:  # a spider changed between runs, a corrupt record
                broken.append(rid)
                logger.warning(
                    "Cannot restore a request another worker left waiting for robots.txt "
                    "(%(error)s); its record is deleted",
                    {"error": exc},
                    extra={"spider": spider},
                )
                continue
            adopted += 1
            self._adopt(request, rid)
        if broken:
            self.store.forget_parked(self.scope, broken)
            self.stats.inc_value("robotstxt/parked/unrestorable", len(broken))
        if adopted:
            self.stats.inc_value("robotstxt/parked/adopted", adopted)
            logger.info(
                "Adopted %(requests)s that a stopped or dead worker left waiting for "
                "robots.txt in %(store)s",
                {"requests": counted(adopted, "request"), "store": self.store.description},
                extra={"spider": spider},
            )
        return adopted

    def _forget_late(self) -> None:
        if self._unforgotten:
            rids, self._unforgotten = self._unforgotten, []
            if self.store.forget_parked(self.scope, rids) is None:
                self._unforgotten = rids

    def stop(self) -> None:
        """This process stops: no more beats; what is left in the store may be adopted at once."""
        if self.stopped:
            return
        self._forget_late()
        self.stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.store.release_parked_lease(self.scope)

    def kept(self, entries: Iterable[Parked]) -> int:
        """How many of ``entries`` have a record in the store."""
        return sum(1 for entry in entries if entry.rid is not None)


Records = ParkedRecords | _NoRecords
"""What the waiting room records parked requests with."""
