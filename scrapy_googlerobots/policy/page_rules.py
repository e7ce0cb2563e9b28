"""What page-level robots directives mean for a crawl (pure: directives in, decisions out).

The core (:mod:`scrapy_googlerobots.pagedirectives`) reads the directives as
Google does; this module says which of them a crawl acts on: the AI opt-outs
read as a "no" for ``train-ai`` (:func:`ai_opt_out`), and the effect of each in
words, for the commands (:func:`crawl_effects`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from scrapy_googlerobots.pagedirectives import PageDirectives, Source

__all__ = ["AI_DIRECTIVES", "ai_opt_out", "crawl_effects", "page_usage_refusal"]

AI_DIRECTIVES = ("noai", "noimageai", "noml")
"""Read as a "no" for ``train-ai``: ``noai`` (DeviantArt's, now widespread),
``noimageai`` (the page's images), ``noml`` (no machine learning at all)."""


def ai_opt_out(directives: PageDirectives) -> Source | None:
    """The source of the first AI opt-out in effect (``noai``, ``noimageai``, ``noml``)."""
    if directives.noai or directives.noimageai or directives.noml:
        for name in AI_DIRECTIVES:
            source = directives.source(name)
            if source is not None:
                return source
    return None


def page_usage_refusal(
    declared: Iterable[str], header: Mapping[str, bool], directives: PageDirectives
) -> tuple[str, str] | None:
    """The first declared use a page says "no" to, and what said it, as a crawl that
    declares those uses judges the page (its ``Content-Usage`` header first, then an
    AI opt-out directive, a "no" for ``train-ai``): ``("train-ai", "Content-Usage:
    train-ai=n")``, ``("train-ai", '<meta name="robots" content="noai">')``; None: no "no"."""
    declared = tuple(declared)
    for category in declared:
        if header.get(category) is False:
            return category, f"Content-Usage: {category}=n"
    if "train-ai" in declared:
        source = ai_opt_out(directives)
        if source is not None:
            return "train-ai", str(source)
    return None


def _written(source: Source) -> str:
    """The directive and the header or tag as the page wrote it."""
    if source.directive == source.value.strip():
        return str(source)
    return f"{source.directive} in {source}"


def crawl_effects(directives: PageDirectives, now: datetime) -> list[str]:
    """One line per thing a crawl with the default settings does because of ``directives``
    at ``now`` (empty: nothing changes)."""
    effects: list[str] = []
    nofollow = directives.source("nofollow") if directives.nofollow else None
    if nofollow is not None:
        effects.append(
            f"requests yielded from this page are not followed ({_written(nofollow)}; "
            "ROBOTSTXT_PAGE_NOFOLLOW)"
        )
    noindex = directives.noindex_source(now)
    if noindex is not None:
        effects.append(
            f"items of this page are kept and counted as from a noindex page "
            f"({_written(noindex)}; ROBOTSTXT_PAGE_NOINDEX_ITEMS = 'drop' drops them)"
        )
    elif directives.unavailable_after is not None:
        effects.append(
            f"items are kept: unavailable_after {directives.unavailable_after.isoformat()} "
            "has not passed yet"
        )
    ai = ai_opt_out(directives)
    if ai is not None:
        effects.append(
            f"train-ai is 'no': a crawl that declares it (ROBOTSTXT_USAGE) does not get "
            f"this page ({_written(ai)})"
        )
    return effects
