"""Retry-After read as RFC 9110 says, the pause's cap, and the slow-down's rise and recovery."""

from __future__ import annotations

import email.utils

import pytest

from scrapy_googlerobots.policy.slowdown import (
    RECOVER_AFTER,
    SLOW_DOWN_FIRST,
    SLOW_DOWN_MAX,
    PauseKind,
    RetryAfter,
    SlowDown,
    parse_retry_after,
    pause_decision,
)

NOW = 784_111_777.0  # Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (b"0", 0.0),
        (" 6 ", 6.0),
        ("Sun, 06 Nov 1994 08:49:43 GMT", 6.0),  # IMF-fixdate
        ("Sunday, 06-Nov-94 08:50:37 GMT", 60.0),  # obsolete RFC 850
        ("Sun Nov  6 08:59:37 1994", 600.0),  # obsolete asctime, GMT implied
        ("Sun, 06 Nov 1994 08:00:00 GMT", 0.0),  # in the past: at once
    ],
)
def test_usable_values(value: str | bytes, seconds: float) -> None:
    assert parse_retry_after(value, NOW) == RetryAfter(seconds)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "an empty Retry-After"),
        ("-5", "not a whole number"),
        ("1.5", "not a whole number"),
        ("+3", "not a whole number"),
        ("soon", "not an HTTP-date"),
        ("Sun, 32 Nov 1994 08:49:37 GMT", "not an HTTP-date"),
    ],
)
def test_bad_values_are_a_problem_not_a_pause(value: str, problem: str) -> None:
    read = parse_retry_after(value, NOW)
    assert read is not None and read.seconds is None
    assert read.problem is not None and problem in read.problem


def test_no_header_is_none() -> None:
    assert parse_retry_after(None, NOW) is None


def test_date_round_trip_from_now() -> None:
    when = email.utils.formatdate(NOW + 42, usegmt=True)
    assert parse_retry_after(when, NOW) == RetryAfter(42.0)


def test_pause_within_the_cap_is_held_beyond_it_dropped() -> None:
    assert pause_decision(6.0, 3600.0).kind is PauseKind.PAUSE
    assert pause_decision(3600.0, 3600.0).kind is PauseKind.PAUSE
    beyond = pause_decision(86_400.0, 3600.0)
    # The site still gets its whole pause; the crawl just does not hold its requests.
    assert beyond.kind is PauseKind.DROP and beyond.seconds == 86_400.0


def test_slow_down_doubles_to_its_ceiling() -> None:
    state = SlowDown.after_answer(None)
    assert state.delay == SLOW_DOWN_FIRST
    delays = []
    now = 0.0
    for _ in range(10):
        now += 100.0
        state = SlowDown.after_answer(state, now)
        delays.append(state.delay)
    assert delays[:3] == [SLOW_DOWN_FIRST * 2, SLOW_DOWN_FIRST * 4, SLOW_DOWN_FIRST * 8]
    assert delays[-1] == SLOW_DOWN_MAX


def test_answers_already_on_their_way_do_not_raise_it_again() -> None:
    state = SlowDown.after_answer(None, 10.0)
    # Three more 429s within the 2 s: answers to requests sent before the first.
    for at in (10.1, 10.5, 11.9):
        assert SlowDown.after_answer(state, at) is state
    assert SlowDown.after_answer(state, 12.0).delay == 2 * SLOW_DOWN_FIRST


def test_slow_down_recovers_after_successes() -> None:
    state: SlowDown | None = SlowDown.after_answer(SlowDown.after_answer(None), 100.0)  # 4 s
    answers = 0
    while state is not None:
        previous = state.delay
        state = state.after_success()
        answers += 1
        if state is not None and state.delay != previous:
            assert state.delay == previous / 2
    # 4 s -> 2 s after RECOVER_AFTER successes, then off after as many again.
    assert answers == 2 * RECOVER_AFTER


def test_another_answer_during_recovery_restarts_the_count() -> None:
    state = SlowDown.after_answer(None)
    for _ in range(RECOVER_AFTER - 1):
        recovered = state.after_success()
        assert recovered is not None
        state = recovered
    state = SlowDown.after_answer(state, 100.0)
    assert state.successes == 0 and state.delay == SLOW_DOWN_FIRST * 2
