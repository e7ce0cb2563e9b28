"""The one INFO line of a crawl whose only work left is waiting."""

from __future__ import annotations

import calendar
import logging

import pytest

from scrapy_googlerobots.reporting.slow_down_report import OnlyWaiting, Waiting, waiting_line

UNTIL = calendar.timegm((2026, 11, 28, 10, 52, 0))


def test_the_line_says_how_many_for_which_origins_until_when_and_what_shortens_it() -> None:
    line = waiting_line(
        [
            Waiting(
                "http://a.example:80", 5, "robots.txt", UNTIL, "ROBOTSTXT_UNREACHABLE_MAX_WAIT"
            ),
            Waiting("http://b.example:80", 7, "a pause", None, "ROBOTSTXT_SLOW_DOWN_MAX_PAUSE"),
        ]
    )
    assert line == (
        "Only waiting requests remain: 12 request(s) for 2 origin(s): "
        "http://b.example:80 (7, a pause; ROBOTSTXT_SLOW_DOWN_MAX_PAUSE shortens it); "
        "http://a.example:80 (5, robots.txt, until 10:52:00 UTC at the latest; "
        "ROBOTSTXT_UNREACHABLE_MAX_WAIT shortens it)"
    )


def test_said_once_until_the_origins_change(caplog: pytest.LogCaptureFixture) -> None:
    notice = OnlyWaiting()
    waiting = [Waiting("http://a.example:80", 5, "robots.txt", UNTIL, "X")]
    more = [*waiting, Waiting("http://b.example:80", 1, "a pause", None, "Y")]
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            notice.note(waiting)
        notice.note(more)
        notice.note(more)
        notice.note([])
    assert sum(m.startswith("Only waiting requests remain") for m in caplog.messages) == 2
