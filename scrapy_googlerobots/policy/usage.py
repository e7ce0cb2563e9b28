"""AI usage preferences around the core: the use a crawl declares, and how sources combine.

Pure: category names in, IETF names out (:func:`declared_use`); the values of
robots.txt and of a ``Content-Usage`` response header in, the effective values
out (:func:`combine`, "no wins"). The core
(:mod:`scrapy_googlerobots.robotstxt`) reads the rules and the header.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scrapy_googlerobots.robotstxt import USAGE_CATEGORIES, usage_category

__all__ = ["combine", "declared_use", "written_as"]

# Content Signals (contentsignals.org) names of the IETF categories, to show a
# Content-Signal line in its own words.
_SIGNAL_NAMES = {"train-ai": "ai-train", "ai-use": "ai-input", "search": "search"}


def declared_use(value: object, where: str) -> tuple[str, ...]:
    """The IETF names of the categories ``value`` declares, in its order, each once.

    ``value`` lists names in either vocabulary (``["ai-train", "search"]``); a
    string is a comma-separated list (as ``-s ROBOTSTXT_USAGE=train-ai,search``
    gives it); None or empty declares nothing. ValueError naming ``where`` and
    the fix for anything else.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        names: Iterable[object] = value.split(",")
    elif isinstance(value, (list, tuple, set, frozenset)):
        names = value
    else:
        raise ValueError(
            f"{where} must be a list of usage categories (e.g. ['train-ai']), got {value!r}"
        )
    declared: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"{where}: a usage category is a string, got {name!r}")
        if not name.strip():
            continue
        category = usage_category(name.strip().lower())
        if category is None:
            raise ValueError(
                f"{where}: unknown usage category {name.strip()!r}; use "
                f"{', '.join(USAGE_CATEGORIES)} (IETF AI Preferences) or "
                f"{', '.join(_SIGNAL_NAMES[c] for c in USAGE_CATEGORIES)} (Content Signals)"
            )
        if category not in declared:
            declared.append(category)
    return tuple(declared)


def combine(*sources: Mapping[str, bool]) -> dict[str, bool]:
    """The effective preference per category over ``sources``: any "no" wins, then any
    "yes"; a category no source mentions stays absent (unknown)."""
    effective: dict[str, bool] = {}
    for source in sources:
        for category, allowed in source.items():
            effective[category] = effective.get(category, True) and allowed
    return effective


def written_as(directive: str, category: str, allowed: bool) -> str:
    """``category=value`` in the words of ``directive``: ``train-ai=n`` for Content-Usage,
    ``ai-train=no`` for Content-Signal."""
    if directive.lower() == "content-signal":
        return f"{_SIGNAL_NAMES.get(category, category)}={'yes' if allowed else 'no'}"
    return f"{category}={'y' if allowed else 'n'}"
