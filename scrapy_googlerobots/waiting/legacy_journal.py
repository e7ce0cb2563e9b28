"""Upgrade path from 0.1.0: the waiting requests its ``JOBDIR`` journal kept, given back once.

scrapy_googlerobots 0.1.0 kept the requests waiting for robots.txt across a
paused crawl in ``JOBDIR/robotstxt.parked``: a pickled list whose entries are
each one pickled ``Request.to_dict(spider=...)``. Later versions record them
in the store instead (:mod:`.parked_records`) and write no such file, so a
crawl paused with 0.1.0 and resumed with this version finds its requests only
there. :func:`take_up_legacy_journal` reads the file once, when the spider
opens, gives each request back to the middleware (it waits for robots.txt
again, recorded in the store like any parked request, or goes on to the
engine), then renames the file ``robotstxt.parked.migrated`` so it is never
replayed. It runs before anything could write the file's requests elsewhere,
and the rename comes last: a crash in between replays them at the next
resume (crawled twice at worst, never lost).

This module exists only for crawls paused with 0.1.0: it can go, with its one
call in the middleware, in a later major release.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.runtime.wording import counted
from scrapy_googlerobots.stores.base import STORE_ERRORS_STAT
from scrapy_googlerobots.waiting.parked_records import deserialize_request

if TYPE_CHECKING:
    from scrapy import Request, Spider

__all__ = ["LEGACY_JOURNAL_NAME", "MIGRATED_STAT", "take_up_legacy_journal"]

logger = logging.getLogger(__name__)

LEGACY_JOURNAL_NAME = "robotstxt.parked"
"""The 0.1.0 journal's file name inside ``JOBDIR``."""

MIGRATED_STAT = "robotstxt/parked/migrated"


def take_up_legacy_journal(
    jobdir: str | os.PathLike[str],
    spider: Spider,
    stats: Any,
    give_back: Callable[[Request], None],
) -> int:
    """Give back (``give_back`` each) the requests of ``jobdir``'s 0.1.0 journal; rename it.

    Returns how many requests were given back (0 without a journal). A file
    that cannot be read or no longer makes requests (corrupt, or the spider's
    callbacks changed since the pause) gives back none: it is moved aside with
    one WARNING and counted in ``robotstxt/store/errors``.
    """
    path = Path(jobdir) / LEGACY_JOURNAL_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    except OSError as exc:
        _set_aside(path, exc, spider, stats)
        return 0
    try:
        requests = _requests(data, spider)
    except Exception as exc:  # corrupt, truncated, a spider changed since the pause
        _set_aside(path, exc, spider, stats)
        return 0
    for request in requests:
        give_back(request)
    if requests:
        stats.inc_value(MIGRATED_STAT, len(requests))
    migrated = path.with_name(path.name + ".migrated")
    try:
        os.replace(path, migrated)
    except OSError as exc:
        stats.inc_value(STORE_ERRORS_STAT)
        logger.warning(
            "Took %(requests)s waiting for robots.txt from %(path)s (written by "
            "scrapy_googlerobots 0.1.0) but cannot rename it (%(error)s): delete it, or the "
            "next resume crawls them again",
            {"requests": counted(len(requests), "request"), "path": path, "error": exc},
            extra={"spider": spider},
        )
        return len(requests)
    logger.info(
        "Took %(requests)s waiting for robots.txt from %(path)s, written by "
        "scrapy_googlerobots 0.1.0 when the crawl was paused; renamed it %(migrated)s",
        {"requests": counted(len(requests), "request"), "path": path, "migrated": migrated.name},
        extra={"spider": spider},
    )
    return len(requests)


def _requests(data: bytes, spider: Spider) -> list[Request]:
    """The journal's requests, as 0.1.0's ``ParkedJournal.load`` read them; raises if any fails."""
    # Pickle, as Scrapy's own JOBDIR disk queues: the file is the crawl's own state.
    entries = pickle.loads(data)
    if not isinstance(entries, list) or not all(isinstance(entry, bytes) for entry in entries):
        raise ValueError("not a list of serialized requests")
    # deserialize_request drops the middleware's own meta but the first-park time,
    # which 0.1.0 set by the wall clock too: the wait goes on counting from it.
    return [deserialize_request(entry, spider) for entry in entries]


def _set_aside(path: Path, error: Exception, spider: Spider, stats: Any) -> None:
    aside = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
    try:
        os.replace(path, aside)
        where = f"moved it to {aside}"
    except OSError as exc:  # left in place: the next resume reports it again
        where = f"could not move it aside ({exc})"
    stats.inc_value(STORE_ERRORS_STAT)
    logger.warning(
        "Cannot read %(path)s, the requests scrapy_googlerobots 0.1.0 kept waiting for "
        "robots.txt when the crawl was paused (%(error)s); %(where)s and crawling on "
        "without them. If the spider's callbacks changed since the pause, move it back and "
        "resume once with the spider that paused; else delete it",
        {"path": path, "error": f"{type(error).__name__}: {error}", "where": where},
        extra={"spider": spider},
    )
