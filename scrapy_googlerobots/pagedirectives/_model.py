"""The result types: where a directive came from, and the effective set for one crawler."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal

__all__ = ["EMPTY", "HEADER", "META", "PageDirectives", "Rejected", "Source", "SourceKind"]

SourceKind = Literal["header", "meta"]
HEADER: SourceKind = "header"
META: SourceKind = "meta"


@dataclass(frozen=True, slots=True)
class Source:
    """One directive as written, and the header value or meta tag it was written in."""

    kind: SourceKind
    #: The whole X-Robots-Tag value, or the whole meta ``content``.
    value: str
    #: The directive as written (stripped), e.g. ``NONE`` or ``unavailable_after: 25 Jun 2010``.
    directive: str
    #: The meta ``name`` (lowercased); for a header, its agent prefix ("" when none).
    name: str = ""

    @property
    def agent(self) -> str | None:
        """The crawler the directive is scoped to, or None when it is for all crawlers."""
        if self.kind == META:
            return None if self.name == "robots" else self.name
        return self.name or None

    def __str__(self) -> str:
        if self.kind == HEADER:
            return f"X-Robots-Tag: {self.value}"
        return f'<meta name="{self.name}" content="{self.value}">'

    def short(self) -> str:
        """Just this directive, in its own syntax: ``X-Robots-Tag: otherbot: noindex``."""
        if self.kind == HEADER:
            prefix = f"{self.name}: " if self.name else ""
            return f"X-Robots-Tag: {prefix}{self.directive}"
        return f'<meta name="{self.name}" content="{self.directive}">'


@dataclass(frozen=True, slots=True)
class Rejected:
    """A directive that does not apply: scoped to another crawler, unknown, or malformed."""

    source: Source
    reason: str

    def __str__(self) -> str:
        return f"{self.source.short()} {self.reason}"


@dataclass(frozen=True, slots=True)
class PageDirectives:
    """The page-level directives in effect for one crawler (immutable).

    Several headers and tags combine; where they compete, the most restrictive
    wins. ``sources`` says, for each directive in effect, which header value
    or meta tag set it (the first one, or the one whose value won).
    """

    noindex: bool = False
    nofollow: bool = False
    nosnippet: bool = False
    noarchive: bool = False
    notranslate: bool = False
    noimageindex: bool = False
    indexifembedded: bool = False
    noai: bool = False
    noimageai: bool = False
    noml: bool = False
    #: Characters of text snippet; -1 for no limit, 0 for none (then ``nosnippet`` too).
    max_snippet: int | None = None
    #: ``"none"``, ``"standard"`` or ``"large"``.
    max_image_preview: str | None = None
    #: Seconds of video preview; -1 for no limit, 0 for a static image at most.
    max_video_preview: int | None = None
    #: After this instant the page is to be treated as noindex.
    unavailable_after: datetime | None = None
    #: (directive, source) for each directive in effect, keyed by canonical name.
    sources: tuple[tuple[str, Source], ...] = ()
    #: Directives scoped to another crawler.
    ignored: tuple[Rejected, ...] = ()
    #: Unknown directives and unreadable values.
    malformed: tuple[Rejected, ...] = field(default=())

    @property
    def empty(self) -> bool:
        """True when no directive is in effect (ignored or malformed ones aside)."""
        return not self.sources

    def source(self, directive: str) -> Source | None:
        """The source of ``directive`` (canonical name, e.g. ``max-snippet``), if in effect."""
        for name, source in self.sources:
            if name == directive:
                return source
        return None

    def noindex_source(self, now: datetime | None = None) -> Source | None:
        """Why the page must not be indexed at ``now``, or None if it may be.

        ``noindex`` or ``none``, or an ``unavailable_after`` at or before ``now``
        (a naive ``now`` is taken as UTC; the default is the current time).
        The source's ``directive`` says which.
        """
        if self.noindex:
            return self.source("noindex")
        if self.unavailable_after is None:
            return None
        if now is None:
            now = datetime.now(timezone.utc)
        elif now.tzinfo is None:
            now = now.replace(tzinfo=timezone.utc)
        if now >= self.unavailable_after:
            return self.source("unavailable_after")
        return None

    def is_noindex(self, now: datetime | None = None) -> bool:
        """True for noindex, none, or an ``unavailable_after`` that has passed at ``now``."""
        return self.noindex_source(now) is not None

    def explain(self) -> list[tuple[str, str]]:
        """(directive, source text) for each directive in effect, for reports and logs.

        The directive is canonical (``noindex``, ``max-snippet:10``); the source
        text is the header or tag as written, e.g. ``X-Robots-Tag: none``.
        """
        rows: list[tuple[str, str]] = []
        for name, source in self.sources:
            value: object = None
            if name == "max-snippet":
                value = self.max_snippet
            elif name == "max-image-preview":
                value = self.max_image_preview
            elif name == "max-video-preview":
                value = self.max_video_preview
            elif name == "unavailable_after":
                assert self.unavailable_after is not None
                value = self.unavailable_after.isoformat()
            rows.append((name if value is None else f"{name}:{value}", str(source)))
        return rows

    def notes(self) -> list[str]:
        """One line per ignored or malformed directive, for reports and logs."""
        return [str(rejected) for rejected in self.ignored + self.malformed]


EMPTY = PageDirectives()
"""The result for a page with no directive at all (shared, never copied)."""
