"""SiteSlowDown: pauses from Retry-After, slow-downs without it, recovery, pauses read back
from a store another worker wrote (memory and a real Redis); PauseRoom giving requests back
for their send slots."""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Callable

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.utils.test import get_crawler

from scrapy_googlerobots.policy.slowdown import RECOVER_AFTER, SLOW_DOWN_FIRST
from scrapy_googlerobots.reporting.slow_down_report import SlowDownReport
from scrapy_googlerobots.stores.base import PaceStore
from scrapy_googlerobots.stores.memory import MemoryPolicyStore
from scrapy_googlerobots.waiting.parked_records import NO_RECORDS
from scrapy_googlerobots.waiting.pause_room import SLOT_META, PauseRoom, back_from_slot
from scrapy_googlerobots.waiting.slow_down import SiteSlowDown

from middleware_support import MovableClock
from redis_server import RedisServer, redis_server

__all__ = ["redis_server"]

KEY = "http://busy.example:80"
URL = "http://busy.example/p/3"


def make(
    store: PaceStore | None = None,
    *,
    max_pause: float = 3600.0,
    clock: Callable[[], float] = time.monotonic,
) -> SiteSlowDown:
    crawler = get_crawler()
    return SiteSlowDown(
        store or MemoryPolicyStore(),
        SlowDownReport(crawler),
        max_pause=max_pause,
        shared=lambda: False,
        clock=clock,
    )


def stats(slow: SiteSlowDown) -> dict[str, object]:
    return dict(slow.report.stats.get_stats())


def test_429_with_retry_after_pauses_then_slows(caplog: pytest.LogCaptureFixture) -> None:
    slow = make()
    with caplog.at_level(logging.INFO):
        pause = slow.on_answer(KEY, URL, 429, b"6")
    assert pause is not None and not pause.drop
    assert pause.reason == f"Retry-After: 6 from <429 {URL}>"
    assert slow.pause_of(KEY) is pause
    # 429s answering requests that were on their way: the same pause, one line.
    assert slow.on_answer(KEY, "http://busy.example/p/4", 429, b"6") is pause
    assert pause.until - time.monotonic() == pytest.approx(6.0, abs=0.5)
    # After the pause the origin resumes slowly.
    assert slow.gap(KEY) == SLOW_DOWN_FIRST
    described = slow.describe(KEY)
    assert described is not None and described.startswith(("paused for 5.", "paused for 6.0"))
    assert described.endswith(f"s more (Retry-After: 6 from <429 {URL}>)")
    assert stats(slow)["robotstxt/slow_down/paused/429"] == 1
    assert stats(slow)["robotstxt/slow_down/seconds_paused"] == 6
    assert sum("Pausing http://busy.example:80 for 6 s" in m for m in caplog.messages) == 1


def test_an_http_date_pauses_too() -> None:
    slow = make()
    when = email.utils.formatdate(time.time() + 30, usegmt=True).encode()
    pause = slow.on_answer(KEY, URL, 503, when)
    assert pause is not None
    assert pause.until - time.monotonic() == pytest.approx(30.0, abs=1.1)


def test_beyond_the_cap_the_pause_holds_and_requests_drop() -> None:
    slow = make(max_pause=60.0)
    pause = slow.on_answer(KEY, URL, 429, b"86400")
    assert pause is not None and pause.drop
    # The site still gets its whole pause.
    assert pause.until - time.monotonic() == pytest.approx(86_400.0, abs=1.0)


def test_no_retry_after_slows_down_and_successes_recover() -> None:
    now = [1_000.0]
    slow = make(clock=lambda: now[0])
    assert slow.on_answer(KEY, URL, 503, None) is None
    assert slow.pause_of(KEY) is None
    assert slow.gap(KEY) == SLOW_DOWN_FIRST
    # Answers to requests already on their way: not a second raise.
    slow.on_answer(KEY, URL, 429, None)
    assert slow.gap(KEY) == SLOW_DOWN_FIRST
    now[0] += SLOW_DOWN_FIRST
    slow.on_answer(KEY, URL, 429, None)
    assert slow.gap(KEY) == 2 * SLOW_DOWN_FIRST
    for _ in range(2 * RECOVER_AFTER):
        slow.on_answer(KEY, URL, 200, None)
    assert slow.gap(KEY) == 0.0
    counted = stats(slow)
    assert counted["robotstxt/slow_down/slowed/503"] == 1
    assert counted["robotstxt/slow_down/slowed/429"] == 1
    assert counted["robotstxt/slow_down/recovered"] == 1


def test_a_bad_retry_after_is_counted_and_slows_down(caplog: pytest.LogCaptureFixture) -> None:
    slow = make()
    with caplog.at_level(logging.INFO):
        assert slow.on_answer(KEY, URL, 429, b"soon") is None
    assert slow.gap(KEY) == SLOW_DOWN_FIRST
    assert stats(slow)["robotstxt/slow_down/bad_retry_after"] == 1
    assert any("Ignoring Retry-After 'soon'" in m for m in caplog.messages)


def test_other_statuses_change_nothing() -> None:
    slow = make()
    for status in (200, 404, 500, 502):
        assert slow.on_answer(KEY, URL, status, b"6") is None
    assert slow.gap(KEY) == 0.0 and slow.pause_of(KEY) is None


def test_another_workers_pause_is_read_back_from_redis(redis_server: RedisServer) -> None:
    from scrapy_googlerobots.stores.redis import RedisPolicyStore

    first = make(RedisPolicyStore.from_url(redis_server.url))
    second = make(RedisPolicyStore.from_url(redis_server.url))
    first.on_answer(KEY, URL, 429, b"6")
    assert second.pause_of(KEY) is None
    assert second.poll() == [KEY]
    pause = second.pause_of(KEY)
    assert pause is not None and pause.reason == f"Retry-After: 6 from <429 {URL}>"
    assert pause.until - time.monotonic() == pytest.approx(6.0, abs=0.2)
    assert second.poll() == [], "a pause already known is not news"
    assert stats(second)["robotstxt/slow_down/paused/from_store"] == 1
    # The second worker's slots for the origin come after the pause too.
    assert second.slot(KEY, 2.0) == pytest.approx(6.0, abs=0.2)


@pytest_twisted.ensureDeferred
async def test_the_room_gives_requests_back_for_their_slots_in_order_ahead_of_the_queue() -> None:
    clock = MovableClock(100.0)
    slow = make(clock=clock)
    crawled: list[tuple[str, int]] = []
    room = PauseRoom(
        slow,
        slow.report,
        records=lambda: NO_RECORDS,
        crawl=lambda request: crawled.append((request.url, request.priority)),
        idle=lambda: None,
        clock=clock,
        wall=lambda: clock() + 1000.0,
    )
    first, second = (Request(f"{URL}?n={n}", priority=3) for n in (1, 2))
    for n, request in enumerate((first, second), 1):
        request.meta[SLOT_META] = 1000.0 + 100.0 + 2.0 * n + 0.5
        room.hold_for_slot(KEY, request, 100.0 + 2.0 * n)
    [waiting] = room.waiting()
    assert (waiting.requests, waiting.what, waiting.until) == (2, "send slots", 1104.0)
    assert waiting.setting == "ROBOTSTXT_CRAWL_DELAY_MAX"

    clock.advance(2.0)
    room.release(KEY)
    # Out of the scheduler before what it holds; its own priority back once it is back.
    assert crawled == [(first.url, 1_000_000)]
    assert first.priority == 3
    assert back_from_slot(first) == 1102.5 and SLOT_META not in first.meta
    assert first.priority == 3
    assert room.parked_requests() == [second]
    assert stats(slow)["robotstxt/pace/parked"] == 2
    assert stats(slow)["robotstxt/pace/released"] == 1

    [(why, key, entry)] = room.shutdown()
    assert (why, key, entry.request) == (f"its send slot for {KEY} had not come", KEY, second)
    assert not room.busy
