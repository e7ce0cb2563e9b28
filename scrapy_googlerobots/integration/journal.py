"""Requests parked for robots.txt, kept in ``JOBDIR`` across a paused crawl.

A request waiting for its origin's robots.txt sits in the middleware, in
neither the scheduler nor its disk queue, so Scrapy's own ``JOBDIR`` state
does not hold it. :class:`ParkedJournal` writes those requests to
``JOBDIR/robotstxt.parked`` when the spider closes (Scrapy's request
serialisation, as its disk queues do); when the resumed spider opens they go
back to the engine (``engine.crawl``) like new requests: the middleware parks
them again, or lets them through if robots.txt is known by then. They never
reached the duplicate filter before the pause (parking happens before it), so
they pass it now, and the copy a restarted ``start_requests`` yields again is
filtered as a duplicate.

The file is replaced atomically at every close and left in place after a
restore, so a crawl killed before it could save again replays its waiting
requests rather than losing them.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils.request import request_from_dict

from scrapy_googlerobots.stores.layered import STORE_ERRORS_STAT

__all__ = ["JOURNAL_NAME", "ParkedJournal", "attach_parked_journal"]

logger = logging.getLogger(__name__)

JOURNAL_NAME = "robotstxt.parked"
"""The journal's file name inside ``JOBDIR``."""


# Meta keys the middleware keeps on a parked request (waiting since, ...):
# bookkeeping of the run that parked it, cleared so its wait starts afresh.
_MIDDLEWARE_META_PREFIX = "_robotstxt_"


class _Parking(Protocol):
    """The middleware's side: the requests parked now."""

    def parked_requests(self) -> list[Request]: ...


class ParkedJournal:
    """Saves and restores the requests a middleware has parked, in one file."""

    def __init__(self, path: str | os.PathLike[str], stats: Any = None) -> None:
        self.path = Path(path)
        self._stats = stats

    def save(self, requests: Iterable[Request], spider: Spider) -> int:
        """Replace the journal with ``requests``; return how many were saved."""
        entries = []
        skipped = 0
        for request in requests:
            try:
                entries.append(pickle.dumps(request.to_dict(spider=spider), protocol=4))
            except Exception as exc:  # a callback that is not a spider method, unpicklable meta
                skipped += 1
                logger.warning(
                    "Cannot keep %(request)s waiting for robots.txt across the pause: %(error)s",
                    {"request": request, "error": exc},
                    extra={"spider": spider},
                )
        if skipped:
            self._inc("robotstxt/jobdir/unserializable", skipped)
        if not entries:
            self.path.unlink(missing_ok=True)
            return 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".tmp")
        partial.write_bytes(pickle.dumps(entries, protocol=4))
        os.replace(partial, self.path)
        self._inc("robotstxt/jobdir/saved", len(entries))
        logger.info(
            "Saved %(count)d requests waiting for robots.txt to %(path)s",
            {"count": len(entries), "path": self.path},
            extra={"spider": spider},
        )
        return len(entries)

    def load(self, spider: Spider) -> list[Request]:
        """The requests saved by the last :meth:`save` (the file stays until the next one)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            entries = pickle.loads(data)
            requests = [request_from_dict(pickle.loads(entry), spider=spider) for entry in entries]
            for request in requests:
                for key in [k for k in request.meta if k.startswith(_MIDDLEWARE_META_PREFIX)]:
                    del request.meta[key]
        except Exception as exc:  # corrupt file, a spider changed between runs
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            logger.warning(
                "Cannot restore the requests waiting for robots.txt from %(path)s "
                "(%(error)s); moved it to %(aside)s",
                {"path": self.path, "error": exc, "aside": aside},
                extra={"spider": spider},
            )
            self._inc(STORE_ERRORS_STAT)
            os.replace(self.path, aside)
            return []
        self._inc("robotstxt/jobdir/restored", len(requests))
        logger.info(
            "Restored %(count)d requests waiting for robots.txt from %(path)s",
            {"count": len(requests), "path": self.path},
            extra={"spider": spider},
        )
        return requests

    def _inc(self, key: str, count: int = 1) -> None:
        if self._stats is not None:
            self._stats.inc_value(key, count)


def attach_parked_journal(crawler: Crawler, middleware: _Parking) -> ParkedJournal | None:
    """With ``JOBDIR`` set, keep ``middleware``'s parked requests across pauses.

    Connects to ``spider_opened`` (restore: each request to ``engine.crawl``)
    and ``spider_closed`` (save ``middleware.parked_requests()``); call it
    from the middleware's constructor. Returns None, connecting nothing,
    without JOBDIR.
    """
    jobdir = crawler.settings.get("JOBDIR")
    if not jobdir:
        return None
    journal = ParkedJournal(Path(jobdir) / JOURNAL_NAME, crawler.stats)

    def restore(spider: Spider) -> None:
        engine = crawler.engine
        assert engine is not None
        for request in journal.load(spider):
            engine.crawl(request)

    def save(spider: Spider) -> None:
        journal.save(middleware.parked_requests(), spider)

    crawler.signals.connect(restore, signal=signals.spider_opened, weak=False)
    crawler.signals.connect(save, signal=signals.spider_closed, weak=False)
    return journal
