"""Fetch leases never stall a worker: store outages, dead holders, crashed JOBDIR runs.

"Another worker" is played by a lease written straight into the shared store
(Redis, or the SQLite file), as that worker's store would have written it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest_twisted

from scrapy_googlerobots.policy.origin import origin_of
from scrapy_googlerobots.stores.sqlite import SqlitePolicyStore

from middleware_support import robots_settings, robots_stats, spider_with_signals
from redis_server import RedisServer, redis_server
from servers import Reply, Site, run_crawl

__all__ = ["redis_server"]  # the fixture, imported for the tests below

ROBOTS = b"User-agent: *\nDisallow: /private\n"


def _lease_key(site: Site) -> str:
    origin = origin_of(site.url("/"))
    assert origin is not None
    return f"robotstxt:lease:{origin.key}"


def _urls(site: Site) -> list[str]:
    return [site.url("/a"), site.url("/b"), site.url("/private/x")]


@pytest_twisted.ensureDeferred
async def test_redis_dying_ends_the_wait_on_another_workers_lease(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS))
    # The other worker holds the lease for ten minutes and never finishes.
    redis_server.client().set(_lease_key(site), b"other-worker", px=600_000)  # type: ignore[attr-defined]
    killed: list[float] = []

    def on_idle(spider: Any) -> None:
        # Idle: our only request waits, and our fetch waits on the other's lease.
        if not killed and spider.crawler.stats.get_value("robotstxt/fetch_lease/waits"):
            killed.append(time.monotonic())
            redis_server.kill()

    result = await run_crawl(
        robots_settings(ROBOTSTXT_CACHE_STORE=redis_server.url),
        _urls(site),
        spider_with_signals(spider_idle=on_idle),
        timeout=60,
    )
    assert killed, "the crawl never waited on the other worker's lease"
    [fetch] = site.requests("/robots.txt")
    print(
        "figure: Redis killed during a lease wait; "
        f"fetched locally {fetch.at - killed[0]:.2f} s later"
    )
    # Against the other worker's ten-minute lease: "soon" has room for a busy machine.
    assert fetch.at - killed[0] < 30, "fetched locally soon after the store died"
    assert sorted(result.downloaded) == [site.url("/a"), site.url("/b")]
    stats = robots_stats(result)
    assert stats["robotstxt/forbidden"] == 1
    assert "robotstxt/parked/at_close" not in stats
    assert result.stats["finish_reason"] == "finished"


@pytest_twisted.ensureDeferred
async def test_a_dead_workers_lease_delays_the_others_at_most_its_ttl(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS))
    # The holder was SIGKILLed mid-fetch: its 1.5 s lease is never renewed.
    redis_server.client().set(_lease_key(site), b"dead-worker", px=1_500)  # type: ignore[attr-defined]
    started = time.monotonic()
    result = await run_crawl(
        robots_settings(ROBOTSTXT_CACHE_STORE=redis_server.url), _urls(site), timeout=60
    )
    [fetch] = site.requests("/robots.txt")
    print(f"figure: dead worker's 1.5 s lease; fetched {fetch.at - started:.2f} s after the start")
    # The upper bound tells "about its TTL" from "until the crawl's 60 s timeout",
    # with room for a busy machine.
    assert 1.0 <= fetch.at - started < 1.5 + 10, (
        "waited for the lease, not much longer than its TTL"
    )
    assert sorted(result.downloaded) == [site.url("/a"), site.url("/b")]


@pytest_twisted.ensureDeferred
async def test_the_holder_renews_its_lease_while_its_fetch_runs(
    redis_server: RedisServer, site: Site
) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS, delay=2.0))
    client: Any = redis_server.client()
    seen: list[bytes | None] = []

    def look_later(spider: Any) -> None:
        from twisted.internet import reactor

        # Well past the 0.6 s TTL, while the 2 s robots.txt download still runs.
        reactor.callLater(1.5, lambda: seen.append(client.get(_lease_key(site))))  # type: ignore[attr-defined]

    result = await run_crawl(
        robots_settings(ROBOTSTXT_CACHE_STORE=redis_server.url, ROBOTSTXT_FETCH_LEASE_TTL=0.6),
        _urls(site),
        spider_with_signals(spider_opened=look_later),
        timeout=60,
    )
    assert seen and seen[0] is not None, "the lease lapsed while its fetch ran"
    assert client.get(_lease_key(site)) is None, "released when the fetch ended"
    assert sorted(result.downloaded) == [site.url("/a"), site.url("/b")]


def test_a_resumed_jobdir_crawl_ignores_the_leases_of_the_run_that_crashed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "robotstxt.sqlite"
    origin = "http://example.com:80"
    # The crashed run: takes a ten-minute lease, then dies by SIGKILL mid-fetch.
    crashed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys; from scrapy_googlerobots.stores.sqlite import "
            "SqlitePolicyStore as S; s = S(sys.argv[1]); assert s.acquire_fetch_lease("
            "sys.argv[2], 600); os.kill(os.getpid(), signal.SIGKILL)",
            str(path),
            origin,
        ],
        timeout=60,
    )
    assert crashed.returncode == -9
    # A busy timeout far longer than the bound below: waiting on a lock the dead
    # run left (or on its lease) fails the test however busy the machine.
    resumed = SqlitePolicyStore(path, timeout=30.0)
    started = time.monotonic()
    assert resumed.acquire_fetch_lease(origin, 15), "the dead run's lease is void"
    print(
        "figure: JOBDIR crash: the resumed run took the lease in "
        f"{time.monotonic() - started:.3f} s"
    )
    assert time.monotonic() - started < 10
    # A live holder's lease still excludes: this process holds it, another handle asks.
    other = SqlitePolicyStore(path)
    assert not other.acquire_fetch_lease(origin, 15)
    resumed.close()
    other.close()
