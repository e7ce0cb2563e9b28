"""The add-on: ``ADDONS = {"scrapy_googlerobots.Addon": 0}``.

A table of initial settings → expected effective settings, checked under both
ways Scrapy versions merge ``DOWNLOADER_MIDDLEWARES`` with its ``_BASE``
(by key, Scrapy < 2.13; by the object a key names, Scrapy >= 2.13), with and
without Scrapy's ``replace_in_component_priority_dict``; then one real crawl.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import pytest_twisted
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.settings import BaseSettings, Settings
from scrapy.utils.misc import load_object

from scrapy_googlerobots import Addon, GoogleRobotsTxtMiddleware

from servers import Reply, Site, run_crawl

STOCK = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
OURS = "scrapy_googlerobots.GoogleRobotsTxtMiddleware"
OURS_PRIVATE = "scrapy_googlerobots.crawl.middleware.GoogleRobotsTxtMiddleware"
OTHER = "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware"


def _merged_by_key(settings: BaseSettings) -> dict[Any, Any]:
    """How Scrapy < 2.13 merges the dicts: the user's keys override equal base keys."""
    return dict(settings.getwithbase("DOWNLOADER_MIDDLEWARES"))


def _merged_by_object(settings: BaseSettings) -> dict[Any, Any]:
    """How Scrapy >= 2.13 merges them (falls back to by-key where that does not exist)."""
    merge = getattr(settings, "get_component_priority_dict_with_base", None)
    return dict(merge("DOWNLOADER_MIDDLEWARES")) if merge else _merged_by_key(settings)


def _enabled(merged: dict[Any, Any], *, strict: bool = True) -> dict[type, Any]:
    """Enabled component class → order; fails if a class would be built twice."""
    enabled: dict[type, Any] = {}
    for key, order in merged.items():
        if order is None:
            continue
        cls = load_object(key)
        assert not strict or cls not in enabled, f"{cls} enabled twice: {merged!r}"
        enabled[cls] = order
    return enabled


def _apply(initial: dict[str, Any], priority: str = "project", times: int = 1) -> Settings:
    settings = Settings()
    settings.setdict(initial, priority=priority)
    for _ in range(times):
        Addon().update_settings(settings)
    return settings


@pytest.fixture(params=["scrapy-method", "fallback"])
def replace_method(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each case with Scrapy's replace_in_component_priority_dict and with our fallback."""
    if request.param == "fallback":
        monkeypatch.delattr(BaseSettings, "replace_in_component_priority_dict", raising=False)
    elif not hasattr(BaseSettings, "replace_in_component_priority_dict"):
        pytest.skip("this Scrapy has no replace_in_component_priority_dict")
    return str(request.param)


# (initial project settings, expected order of ours, of the stock one, ROBOTSTXT_OBEY)
CASES = {
    "defaults-swap-at-stock-position": ({}, 100, None, True),
    "obey-false-in-project-wins": ({"ROBOTSTXT_OBEY": False}, 100, None, False),
    "obey-true-in-project-kept": ({"ROBOTSTXT_OBEY": True}, 100, None, True),
    "stock-moved-by-path-ours-takes-position": (
        {"DOWNLOADER_MIDDLEWARES": {STOCK: 543}},
        543,
        None,
        True,
    ),
    "stock-moved-by-class-ours-takes-position": (
        {"DOWNLOADER_MIDDLEWARES": {RobotsTxtMiddleware: 543}},
        543,
        None,
        True,
    ),
    "stock-disabled-by-path-respected": (
        {"DOWNLOADER_MIDDLEWARES": {STOCK: None}},
        None,
        None,
        True,
    ),
    "stock-disabled-by-class-respected": (
        {"DOWNLOADER_MIDDLEWARES": {RobotsTxtMiddleware: None}},
        None,
        None,
        True,
    ),
    "readme-manual-swap-left-alone": (
        {"DOWNLOADER_MIDDLEWARES": {STOCK: None, OURS: 100}},
        100,
        None,
        True,
    ),
    "ours-placed-by-public-path-stock-switched-off": (
        {"DOWNLOADER_MIDDLEWARES": {OURS: 200}},
        200,
        None,
        True,
    ),
    "ours-placed-by-private-path-stock-switched-off": (
        {"DOWNLOADER_MIDDLEWARES": {OURS_PRIVATE: 200}},
        200,
        None,
        True,
    ),
    "ours-placed-by-class-stock-switched-off": (
        {"DOWNLOADER_MIDDLEWARES": {GoogleRobotsTxtMiddleware: 200}},
        200,
        None,
        True,
    ),
    "both-listed-by-user-left-alone": (
        {"DOWNLOADER_MIDDLEWARES": {STOCK: 50, OURS: 200}},
        200,
        50,
        True,
    ),
    "ours-disabled-by-user-left-alone": ({"DOWNLOADER_MIDDLEWARES": {OURS: None}}, None, 100, True),
    "other-user-middlewares-untouched": (
        {
            "DOWNLOADER_MIDDLEWARES": {
                OTHER: None,
                "scrapy.downloadermiddlewares.stats.DownloaderStats": 10,
            }
        },
        100,
        None,
        True,
    ),
}


@pytest.mark.parametrize(("initial", "ours", "stock", "obey"), CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("merge", [_merged_by_key, _merged_by_object], ids=["by-key", "by-object"])
def test_settings_table(
    replace_method: str, merge: Any, initial: dict[str, Any], ours: Any, stock: Any, obey: bool
) -> None:
    settings = _apply(initial)
    enabled = _enabled(merge(settings))
    assert enabled.get(GoogleRobotsTxtMiddleware) == ours
    assert enabled.get(RobotsTxtMiddleware) == stock
    assert settings.getbool("ROBOTSTXT_OBEY") is obey
    # Every other component keeps its place.
    # (Without the add-on, a class key next to the base's path enables the stock
    # middleware twice on by-key merges: the add-on fixes that, not the baseline.)
    without_addon = _enabled(merge(_settings_without_addon(initial)), strict=False)
    for cls in (GoogleRobotsTxtMiddleware, RobotsTxtMiddleware):
        enabled.pop(cls, None)
        without_addon.pop(cls, None)
    assert enabled == without_addon


def _settings_without_addon(initial: dict[str, Any]) -> Settings:
    settings = Settings()
    settings.setdict(initial, priority="project")
    return settings


@pytest.mark.parametrize(
    ("priority", "obey"),
    [("default", True), ("project", False), ("spider", False), ("cmdline", False)],
    ids=["below-addon-overridden", "project-wins", "spider-wins", "cmdline-wins"],
)
def test_obey_set_at_addon_priority(priority: str, obey: bool) -> None:
    settings = _apply({"ROBOTSTXT_OBEY": False}, priority=priority)
    assert settings.getbool("ROBOTSTXT_OBEY") is obey


@pytest.mark.parametrize("merge", [_merged_by_key, _merged_by_object], ids=["by-key", "by-object"])
def test_applying_twice_changes_nothing_more(replace_method: str, merge: Any) -> None:
    for initial in ({}, {"DOWNLOADER_MIDDLEWARES": {STOCK: 543}}):
        once = _enabled(merge(_apply(initial)))
        assert _enabled(merge(_apply(initial, times=2))) == once


def test_disabled_stock_middleware_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scrapy_googlerobots.crawl.addon"):
        _apply({"DOWNLOADER_MIDDLEWARES": {STOCK: None}})
    assert any("does not enable" in message for message in caplog.messages)


@pytest_twisted.ensureDeferred
async def test_real_crawl_with_addon(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /private\n"))
    result = await run_crawl(
        {"ADDONS": {"scrapy_googlerobots.Addon": 0}},
        [site.url("/public"), site.url("/private/page")],
    )
    assert result.downloaded == [site.url("/public")]
    assert site.hits("/private/page") == 0
    assert site.hits("/robots.txt") == 1
    assert result.stats.get("robotstxt/forbidden") == 1
    middlewares = result.crawler.engine.downloader.middleware.middlewares
    kinds = {type(mw) for mw in middlewares}
    assert GoogleRobotsTxtMiddleware in kinds
    assert RobotsTxtMiddleware not in kinds


# -- the page directives' spider middleware (issue 26) ------------------------

PAGE = "scrapy_googlerobots.PageDirectivesMiddleware"
PAGE_PRIVATE = "scrapy_googlerobots.optouts.page_directives.PageDirectivesMiddleware"
DEPTH = "scrapy.spidermiddlewares.depth.DepthMiddleware"


def _spider_enabled(settings: BaseSettings, merge_by_object: bool) -> dict[type, Any]:
    merge = getattr(settings, "get_component_priority_dict_with_base", None)
    if merge_by_object and merge is not None:
        merged = dict(merge("SPIDER_MIDDLEWARES"))
    else:
        merged = dict(settings.getwithbase("SPIDER_MIDDLEWARES"))
    return _enabled(merged)


# (initial project settings, expected order of the page middleware: None = not enabled)
PAGE_CASES = {
    "defaults-added-next-to-the-spider": ({}, 950),
    "user-position-by-public-path-kept": ({"SPIDER_MIDDLEWARES": {PAGE: 100}}, 100),
    "user-position-by-private-path-kept": ({"SPIDER_MIDDLEWARES": {PAGE_PRIVATE: 100}}, 100),
    "user-disabled-by-path-kept-off": ({"SPIDER_MIDDLEWARES": {PAGE: None}}, None),
    "other-spider-middlewares-untouched": ({"SPIDER_MIDDLEWARES": {DEPTH: 10}}, 950),
    "stock-robots-disabled-no-page-either": ({"DOWNLOADER_MIDDLEWARES": {STOCK: None}}, None),
    "ours-disabled-no-page-either": ({"DOWNLOADER_MIDDLEWARES": {OURS: None}}, None),
    "ours-placed-by-user-page-added": ({"DOWNLOADER_MIDDLEWARES": {OURS: 200}}, 950),
    "obey-off-still-listed-it-turns-itself-off": ({"ROBOTSTXT_OBEY": False}, 950),
}


@pytest.mark.parametrize(("initial", "order"), PAGE_CASES.values(), ids=PAGE_CASES.keys())
@pytest.mark.parametrize("by_object", [False, True], ids=["by-key", "by-object"])
def test_page_middleware_table(
    replace_method: str, initial: dict[str, Any], order: Any, by_object: bool
) -> None:
    from scrapy_googlerobots import PageDirectivesMiddleware

    for times in (1, 2):  # a second run changes nothing
        settings = _apply(initial, times=times)
        enabled = _spider_enabled(settings, by_object)
        assert enabled.get(PageDirectivesMiddleware) == order
        # Scrapy's own spider middlewares (and the user's) keep their places.
        without = _spider_enabled(_settings_without_addon(initial), by_object)
        enabled.pop(PageDirectivesMiddleware, None)
        without.pop(PageDirectivesMiddleware, None)
        assert enabled == without


@pytest_twisted.ensureDeferred
async def test_real_crawl_installs_the_page_middleware(site: Site) -> None:
    from scrapy_googlerobots import PageDirectivesMiddleware

    site.script("/robots.txt", Reply(200, b"User-agent: *\nAllow: /\n"))
    result = await run_crawl({"ADDONS": {"scrapy_googlerobots.Addon": 0}}, [site.url("/a")])
    middlewares = result.crawler.engine.scraper.spidermw.middlewares
    assert PageDirectivesMiddleware in {type(mw) for mw in middlewares}
