"""CrawlPacer on real download slots: what it sets, and when it backs down.

The crawls in ``test_pacing_crawl.py`` measure the gaps; these check the
rules behind them one at a time, on Scrapy's own ``Slot`` objects in a
downloader stand-in (the pacer only reads ``engine.downloader.slots``).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from scrapy import Request, signals
from scrapy.core.downloader import Slot
from scrapy.utils.test import get_crawler

from scrapy_googlerobots.pacing.crawl_delay import CrawlPacer, DelayLookup, applied_delay
from scrapy_googlerobots.runtime.scrapy_compat import slot_jitter

ORIGIN = "https://example.com:443"


def make_slot(delay: float = 0.0, jittered: bool = False) -> Slot:
    import inspect

    if "jitter" in inspect.signature(Slot).parameters:
        return Slot(8, delay, 0.5 if jittered else 0.0)
    return Slot(8, delay, jittered)


class Rig:
    """A pacer with a settable robots.txt answer and a dict of real slots."""

    def __init__(self, **settings: Any) -> None:
        self.crawler = get_crawler(settings_dict=settings)
        self.slots: dict[str, Slot] = {}
        self.crawler.engine = SimpleNamespace(downloader=SimpleNamespace(slots=self.slots))  # type: ignore[assignment]
        self.reporter = mock.Mock()
        self.answer: tuple[object, float | None] | None = ("copy-1", 1.0)
        self.pacer = CrawlPacer(self.crawler, self.reporter, self.lookup, maximum=10.0)

    def lookup(self, request: Request) -> DelayLookup | None:
        if self.answer is None:
            return None
        stamp, delay = self.answer
        return ORIGIN, stamp, lambda: delay

    def reach(self, slot: str = "example.com") -> Request:
        request = Request("https://example.com/x", meta={"download_slot": slot})
        self.crawler.signals.send_catch_log(
            signals.request_reached_downloader, request=request, spider=None
        )
        return request


def test_raises_the_slot_delay_to_the_asked_one() -> None:
    rig = Rig()
    rig.slots["example.com"] = make_slot()
    rig.reach()
    assert rig.slots["example.com"].delay == 1.0
    rig.reporter.crawl_delay_origin.assert_called_once_with(ORIGIN, 1.0)


def test_jitter_is_taken_into_account() -> None:
    rig = Rig()
    slot = rig.slots["example.com"] = make_slot(jittered=True)
    rig.reach()
    # The lowest draw is delay * (1 - 0.5): it must still be 1 s.
    assert slot.delay == pytest.approx(2.0)


def test_never_lowers_a_larger_configured_delay() -> None:
    rig = Rig()
    slot = rig.slots["example.com"] = make_slot(delay=3.0)
    rig.reach()
    assert slot.delay == 3.0


def test_a_refresh_backs_down_but_not_below_the_configured_delay() -> None:
    rig = Rig(DOWNLOAD_DELAY=0.25)
    slot = rig.slots["example.com"] = make_slot(delay=0.25)
    rig.reach()
    assert slot.delay == 1.0
    rig.answer = ("copy-2", 0.5)
    rig.reach()
    assert slot.delay == 0.5
    rig.answer = ("copy-3", None)  # the directive is gone
    rig.reach()
    assert slot.delay == 0.25


def test_unknown_copy_leaves_the_slot_alone() -> None:
    rig = Rig()
    slot = rig.slots["example.com"] = make_slot(delay=0.1)
    rig.answer = None
    rig.reach()
    assert slot.delay == 0.1


def test_autothrottle_lowering_is_undone_after_each_response() -> None:
    rig = Rig(AUTOTHROTTLE_ENABLED=True)
    slot = rig.slots["example.com"] = make_slot()
    request = rig.reach()
    slot.delay = 0.05  # what AutoThrottle does on response_downloaded
    rig.crawler.signals.send_catch_log(
        signals.response_downloaded, response=mock.Mock(), request=request, spider=None
    )
    assert slot.delay == 1.0


def test_a_recreated_slot_is_paced_again() -> None:
    rig = Rig()
    rig.slots["example.com"] = make_slot()
    rig.reach()
    rig.slots["example.com"] = make_slot()  # Scrapy's slot GC dropped and rebuilt it
    rig.reach()
    assert rig.slots["example.com"].delay == 1.0


def test_a_jitter_near_100_percent_is_brought_down() -> None:
    import inspect

    if "jitter" not in inspect.signature(Slot).parameters:
        pytest.skip("Scrapy < 2.19: the jitter is +-50 % or none")
    rig = Rig()
    slot = rig.slots["example.com"] = Slot(8, 0.0, 1.0)
    rig.reach()
    assert slot_jitter(slot) == 0.5
    assert slot.delay == pytest.approx(2.0)


def test_the_largest_delay_of_a_shared_slot_wins() -> None:
    rig = Rig()
    slot = rig.slots["shared"] = make_slot()
    rig.reach("shared")
    other = "https://other.example:443"
    rig.pacer._lookup = lambda request: (other, "c", lambda: 4.0)
    rig.reach("shared")
    assert slot.delay == 4.0
    rig.pacer._lookup = rig.lookup
    rig.reach("shared")
    assert slot.delay == 4.0  # still the largest of the two


def test_a_magicmock_engine_is_harmless() -> None:
    rig = Rig()
    rig.crawler.engine = mock.MagicMock()
    rig.reach()  # no slots to read: nothing happens, nothing raises


@pytest.mark.parametrize(
    ("asked", "maximum", "applied"),
    [
        (None, 60.0, None),
        (0.0, 60.0, None),
        (-1.0, 60.0, None),
        (9.0, 60.0, 9.0),
        (9.0, 5.0, 5.0),
        (5.0, 5.0, 5.0),
        (9.0, 0.0, None),
    ],
)
def test_applied_delay_is_the_asked_one_capped(
    asked: float | None, maximum: float, applied: float | None
) -> None:
    # The pacer and `scrapy robots` both go by this.
    assert applied_delay(asked, maximum) == applied
