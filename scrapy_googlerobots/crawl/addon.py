"""Scrapy add-on (Scrapy >= 2.11, as the package): ``ADDONS = {"scrapy_googlerobots.Addon": 0}``.

It turns ``ROBOTSTXT_OBEY`` on at ``"addon"`` priority (a value the user set
in the project, a spider or the command line wins) and puts
:class:`~scrapy_googlerobots.GoogleRobotsTxtMiddleware` where Scrapy's stock
``RobotsTxtMiddleware`` is, leaving explicit choices alone:

- ours already in ``DOWNLOADER_MIDDLEWARES``: it keeps the user's position,
  and the stock one is switched off unless the user listed it too; ours
  disabled there (``None``): nothing changes;
- the stock middleware moved in ``DOWNLOADER_MIDDLEWARES``: ours takes that
  position;
- the stock middleware disabled there (``None``): it stays off (on every
  Scrapy version) and ours is not added, with a warning, since the user
  switched robots.txt handling off on purpose.

Next to it, in ``SPIDER_MIDDLEWARES``, it adds
:class:`~scrapy_googlerobots.PageDirectivesMiddleware` (page-level robots
directives) at :data:`PAGE_ORDER`, unless the user lists it there already (at
any position, or disabled with ``None``) or our downloader middleware ends up
disabled.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

__all__ = ["Addon"]

logger = logging.getLogger(__name__)

STOCK_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
GOOGLE_MIDDLEWARE = "scrapy_googlerobots.GoogleRobotsTxtMiddleware"
PAGE_MIDDLEWARE = "scrapy_googlerobots.PageDirectivesMiddleware"
PAGE_ORDER = 950
"""Its ``SPIDER_MIDDLEWARES`` order: next to the spider (after Scrapy's DepthMiddleware,
900), so it sees exactly what the callback yields and what it drops is never counted
or scheduled further."""
_SETTING = "DOWNLOADER_MIDDLEWARES"
_BASE_SETTING = "DOWNLOADER_MIDDLEWARES_BASE"
_SPIDER_SETTING = "SPIDER_MIDDLEWARES"
_SPIDER_BASE_SETTING = "SPIDER_MIDDLEWARES_BASE"


class Addon:
    """Enable robots.txt obedience the way Googlebot does it, in one line of settings."""

    def update_settings(self, settings: BaseSettings) -> None:
        """Set ``ROBOTSTXT_OBEY`` and swap the stock middleware for ours (see the module doc)."""
        settings.set("ROBOTSTXT_OBEY", True, priority="addon")
        swap_middleware(settings)
        add_page_middleware(settings)


def _resolve(key: Any) -> Any:
    """The object a component key names; an unloadable path stands for itself."""
    if not isinstance(key, str):
        return key
    try:
        return load_object(key)
    except (ImportError, AttributeError, NameError, TypeError, ValueError):
        return key


def _entries(components: Mapping[Any, Any] | None, cls: type) -> list[tuple[Any, Any]]:
    """``(key, value)`` pairs of ``components`` whose key (a class or a path) names ``cls``."""
    return [(key, value) for key, value in (components or {}).items() if _resolve(key) is cls]


def swap_middleware(settings: BaseSettings) -> None:
    """Put our middleware where the stock one is (see the module doc for the cases).

    The base and the user dict are both edited so that, whichever way a Scrapy
    version merges them (by key, or by the object a key names), exactly one
    robots.txt middleware ends up enabled.
    """
    stock: type = load_object(STOCK_MIDDLEWARE)
    ours: type = load_object(GOOGLE_MIDDLEWARE)
    user = settings.getdict(_SETTING)
    base = settings.getdict(_BASE_SETTING)
    base_stock = _entries(base, stock)
    user_stock = _entries(user, stock)
    user_ours = _entries(user, ours)
    if _entries(base, ours):
        return  # already swapped (the add-on ran before)
    if user_ours:
        if user_ours[-1][1] is not None and not user_stock:
            # Placed by the user, stock left on by default: switch the stock one off.
            _remove(settings, _BASE_SETTING, base, base_stock)
        return
    if user_stock and user_stock[-1][1] is None:
        logger.warning(
            "%s disables %s, so the scrapy_googlerobots add-on does not enable %s; "
            "add it to %s yourself to use it",
            _SETTING,
            STOCK_MIDDLEWARE,
            GOOGLE_MIDDLEWARE,
            _SETTING,
        )
        # Keep it off on Scrapy < 2.13 too, where a class key in the user dict
        # does not override the base's import path.
        _remove(settings, _BASE_SETTING, base, base_stock)
        return
    replace = getattr(settings, "replace_in_component_priority_dict", None)
    for name, entries in ((_BASE_SETTING, base_stock), (_SETTING, user_stock)):
        if not entries:
            continue
        if replace is not None:  # Scrapy >= 2.13
            replace(name, stock, ours)
        else:
            _replace_in_component_dict(settings, name, entries, ours)


def add_page_middleware(settings: BaseSettings) -> None:
    """Add the page directives' spider middleware (see the module doc for when not)."""
    page: type = load_object(PAGE_MIDDLEWARE)
    user = settings.getdict(_SPIDER_SETTING)
    if _entries(user, page) or _entries(settings.getdict(_SPIDER_BASE_SETTING), page):
        return  # the user's choice, kept (or the add-on ran before)
    ours: type = load_object(GOOGLE_MIDDLEWARE)
    downloader = _entries(settings.getdict(_SETTING), ours) or _entries(
        settings.getdict(_BASE_SETTING), ours
    )
    if not downloader or downloader[-1][1] is None:
        return  # robots.txt handling is off or not ours: page directives too
    user[PAGE_MIDDLEWARE] = PAGE_ORDER
    settings.set(_SPIDER_SETTING, user, priority=settings.getpriority(_SPIDER_SETTING) or 0)


def _remove(
    settings: BaseSettings, name: str, components: dict[Any, Any], entries: list[tuple[Any, Any]]
) -> None:
    if entries:
        for key, _ in entries:
            del components[key]
        settings.set(name, components, priority=settings.getpriority(name) or 0)


def _replace_in_component_dict(
    settings: BaseSettings, name: str, entries: list[tuple[Any, Any]], new: type
) -> None:
    """Older Scrapy's stand-in for ``BaseSettings.replace_in_component_priority_dict``."""
    components = settings.getdict(name)
    for key, _ in entries:
        del components[key]
    # The last entry is the one Scrapy keeps when a class is listed twice.
    components[new] = entries[-1][1]
    settings.set(name, components, priority=settings.getpriority(name) or 0)
