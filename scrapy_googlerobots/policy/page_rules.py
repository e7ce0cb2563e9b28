"""What page-level robots directives mean for a crawl (pure: directives in, decisions out).

The core (:mod:`scrapy_googlerobots.pagedirectives`) reads the directives as
Google does; this module says which of them a crawl acts on: the AI opt-outs
read as a "no" for ``train-ai`` (:func:`ai_opt_out`), and the effect of each in
words, for the commands (:func:`crawl_effects`).
"""

from __future__ import annotations

from datetime import datetime

from scrapy_googlerobots.pagedirectives import PageDirectives, Source

__all__ = ["AI_DIRECTIVES", "ai_opt_out", "crawl_effects"]

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


def crawl_effects(directives: PageDirectives, now: datetime) -> list[str]:
    """One line per thing a crawl with the default settings does because of ``directives``
    at ``now`` (empty: nothing changes)."""
    effects: list[str] = []
    nofollow = directives.source("nofollow") if directives.nofollow else None
    if nofollow is not None:
        effects.append(
            f"requests yielded from this page are not followed ({nofollow.short()}; "
            "ROBOTSTXT_PAGE_NOFOLLOW)"
        )
    noindex = directives.noindex_source(now)
    if noindex is not None:
        effects.append(
            f"items of this page are kept and counted as from a noindex page "
            f"({noindex.short()}; ROBOTSTXT_PAGE_NOINDEX_ITEMS = 'drop' drops them)"
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
            f"this page ({ai.short()})"
        )
    return effects
