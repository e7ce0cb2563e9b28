"""Builds the policy store that ``ROBOTSTXT_CACHE_STORE`` (and ``JOBDIR``) select.

- ``"memory"`` (the default without ``JOBDIR``): one process, forgotten at exit.
- a file path (default with ``JOBDIR``: ``JOBDIR/robotstxt.sqlite``; an
  existing directory means ``<dir>/robotstxt.sqlite``): SQLite, survives a
  pause and can be shared by the processes of one machine.
- ``redis://``, ``rediss://`` or ``unix://`` URL: Redis, shared by a cluster
  (needs the ``redis`` extra).

Persistent and shared stores come wrapped in a
:class:`~scrapy_googlerobots.stores.layered.LayeredPolicyStore`, so the hot
path reads memory and a failing store degrades to it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from scrapy.settings import BaseSettings

from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE
from scrapy_googlerobots.stores.base import STORE_ERRORS_STAT, PolicyStore, StatsLike
from scrapy_googlerobots.stores.layered import LayeredPolicyStore
from scrapy_googlerobots.stores.memory import MemoryPolicyStore
from scrapy_googlerobots.stores.memory_cost import DEFAULT_CACHE_MEMORY

__all__ = ["JOBDIR_STORE_NAME", "build_store"]

logger = logging.getLogger(__name__)

JOBDIR_STORE_NAME = "robotstxt.sqlite"
"""The store's file name inside ``JOBDIR`` (and inside a directory given as the store)."""

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
# SQLite's row cap when ROBOTSTXT_CACHE_SIZE is unset: none (rows go when they
# stop mattering, see relevant_until).
_SQLITE_UNBOUNDED = 2**62


def build_store(
    settings: BaseSettings,
    stats: StatsLike | None = None,
    *,
    clock: Callable[[], float] | None = None,
) -> PolicyStore:
    """Return the store the settings ask for; raise ValueError naming the fix if unusable.

    ``stats`` (the crawler's stats collector) receives ``robotstxt/store/errors``;
    ``clock`` is the middleware's clock, the one record times are read from
    (default ``time.time``: persistent and shared stores need wall-clock times).
    """
    clock = clock or time.time
    spec = _store_spec(settings)
    max_size = _local_size(settings)
    local = _local_store(settings, max_size, stats)
    if spec == "memory":
        return local
    timeout = _positive(settings, "ROBOTSTXT_CACHE_STORE_TIMEOUT", 1.0)
    local_ttl = settings.getfloat("ROBOTSTXT_LOCAL_CACHE_TTL", 60.0)
    if local_ttl < 0:
        raise ValueError(f"ROBOTSTXT_LOCAL_CACHE_TTL must be 0 or more seconds, got {local_ttl!r}")
    allow_after = settings.getfloat("ROBOTSTXT_UNREACHABLE_ALLOW_AFTER", 2_592_000.0)

    shared: PolicyStore
    if spec.startswith(_REDIS_SCHEMES):
        shared = _redis_store(settings, spec, timeout, allow_after, clock)
    elif "://" in spec:
        raise ValueError(
            f"ROBOTSTXT_CACHE_STORE={spec!r} is not supported; use 'memory', a file path "
            "for SQLite, or a redis://host:port/db URL."
        )
    else:
        rows = _SQLITE_UNBOUNDED if max_size is None else max_size
        sqlite = _sqlite_store(spec, timeout, rows, allow_after, stats, clock)
        if sqlite is None:
            return local
        shared = sqlite
    return LayeredPolicyStore(
        shared,
        description=str(getattr(shared, "description", spec)),
        local=local,
        local_ttl=local_ttl,
        timeout=timeout,
        stats=stats,
        clock=clock,
    )


def _local_size(settings: BaseSettings) -> int | None:
    """``ROBOTSTXT_CACHE_SIZE``: most origins kept in memory; None (unset) for no count cap."""
    value = settings.get("ROBOTSTXT_CACHE_SIZE")
    return None if value is None else settings.getint("ROBOTSTXT_CACHE_SIZE")


def _local_store(
    settings: BaseSettings, max_size: int | None, stats: StatsLike | None
) -> MemoryPolicyStore:
    """The in-process cache: ``ROBOTSTXT_CACHE_SIZE`` origins, ``ROBOTSTXT_CACHE_MEMORY`` bytes."""
    memory = settings.getint("ROBOTSTXT_CACHE_MEMORY", DEFAULT_CACHE_MEMORY)
    return MemoryPolicyStore(
        max_size=max_size,
        memory=memory or None,
        body_limit=settings.getint("ROBOTSTXT_MAX_SIZE", GOOGLE_MAX_SIZE),
        stats=stats,
    )


def _store_spec(settings: BaseSettings) -> str:
    """The store setting as a string; the explicit setting wins over ``JOBDIR``."""
    value = settings.get("ROBOTSTXT_CACHE_STORE")
    if value:
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    jobdir = settings.get("JOBDIR")
    if jobdir:
        return os.path.join(jobdir, JOBDIR_STORE_NAME)
    return "memory"


def _positive(settings: BaseSettings, name: str, default: float) -> float:
    value = settings.getfloat(name, default)
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return value


def _redis_store(
    settings: BaseSettings,
    url: str,
    timeout: float,
    allow_after: float,
    clock: Callable[[], float],
) -> PolicyStore:
    try:
        import redis  # noqa: F401 - fail here, at start-up, not mid-crawl

        from scrapy_googlerobots.stores.redis import RedisPolicyStore
    except ImportError as exc:
        raise ValueError(
            f"ROBOTSTXT_CACHE_STORE={url!r} needs the redis package: "
            "pip install scrapy-googlerobots[redis]"
        ) from exc
    prefix = settings.get("ROBOTSTXT_CACHE_KEY_PREFIX", "robotstxt:")
    if not isinstance(prefix, str):
        raise ValueError(f"ROBOTSTXT_CACHE_KEY_PREFIX must be a string, got {prefix!r}")
    try:
        return RedisPolicyStore.from_url(
            url, timeout=timeout, prefix=prefix, allow_after=allow_after, clock=clock
        )
    except ValueError as exc:
        raise ValueError(f"ROBOTSTXT_CACHE_STORE={url!r} is not a usable Redis URL: {exc}") from exc


def _sqlite_store(
    spec: str,
    timeout: float,
    max_size: int,
    allow_after: float,
    stats: StatsLike | None,
    clock: Callable[[], float],
) -> PolicyStore | None:
    """The SQLite store at ``spec``, or None (reported) when the location is unusable."""
    from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / JOBDIR_STORE_NAME
    try:
        return SqlitePolicyStore(
            path,
            timeout=timeout,
            max_size=max_size,
            allow_after=allow_after,
            stats=stats,
            clock=clock,
        )
    except (OSError, sqlite3.Error) as exc:
        # Read-only location, a path through a file, ...: the crawl goes on
        # with what one process can remember.
        logger.warning(
            "robots.txt store %s cannot be used (%s: %s); robots.txt knowledge will not "
            "outlive this process. Fix: set ROBOTSTXT_CACHE_STORE (or JOBDIR) to a "
            "writable location",
            path,
            type(exc).__name__,
            exc,
        )
        if stats is not None:
            stats.inc_value(STORE_ERRORS_STAT)
        return None
