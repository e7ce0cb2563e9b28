"""Reading X-Robots-Tag values and robots meta tags the way Google documents it.

Reference: Google Search Central, "Robots meta tag, data-nosnippet, and
X-Robots-Tag specifications". Where it is silent, the choice made is noted
next to the code that makes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import lru_cache

from ..htmlmeta import DEFAULT_LIMIT, named_meta
from ._dates import parse_date
from ._model import EMPTY, HEADER, META, PageDirectives, Rejected, Source

__all__ = [
    "FLAG_DIRECTIVES",
    "IMAGE_PREVIEW_SIZES",
    "VALUE_DIRECTIVES",
    "from_headers_and_body",
    "parse_page_directives",
]

FLAG_DIRECTIVES = (
    "noindex",
    "nofollow",
    "nosnippet",
    "noarchive",
    "notranslate",
    "noimageindex",
    "indexifembedded",
    # Not Google's: the DeviantArt-born AI opt-outs, and noml, seen beside
    # them on pages that opt out of machine learning.
    "noai",
    "noimageai",
    "noml",
)
"""Directives without a value; each sets the attribute of the same name."""

VALUE_DIRECTIVES = ("max-snippet", "max-image-preview", "max-video-preview", "unavailable_after")
"""Directives written ``name: value``; the colon is what an agent prefix also uses."""

IMAGE_PREVIEW_SIZES = ("none", "standard", "large")
"""``max-image-preview`` values, least permissive first."""

# No restriction at all: accepted, never recorded ("all" is Google's; index
# and follow are the defaults pages spell out anyway).
_NO_OPS = frozenset({"all", "index", "follow"})

# Recognised, but Google does not read them (retired, or other engines' own).
_NOT_GOOGLE = frozenset(
    {"noodp", "noydir", "nositelinkssearchbox", "nocache", "noyaca", "noimageclick", "nopin"}
)

_FLAGS = frozenset(FLAG_DIRECTIVES)
_KNOWN = _FLAGS | _NO_OPS | _NOT_GOOGLE | {"none"} | frozenset(VALUE_DIRECTIVES)

# An agent prefix is one token; product tokens are [A-Za-z_-], and meta
# names in use add digits and dots (googlebot-news, bingbot2, ia_archiver).
_AGENT = re.compile(r"[a-z0-9_.-]+")
# Wider than int() would take on purpose: no sign but "-", no spaces, no
# underscores, and few enough digits that int() stays cheap.
_INT = re.compile(r"-?\d{1,18}")
_DAY_NAMES = frozenset(
    {"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
    | {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
)
_WORDS = re.compile(r"[\s;]+")
_BARE = _FLAGS | _NO_OPS | {"none"}


def _continues_date(date_so_far: str, piece: str) -> bool:
    """Whether the comma before ``piece`` is inside an ``unavailable_after`` date.

    RFC 822/850 put one after the weekday (``Friday, 25-Jun-10``), US style
    after the day (``June 25, 2010``). No directive and no agent token starts
    with a digit, so a piece that does is still the date.
    """
    piece = piece.strip()
    return date_so_far.strip().lower() in _DAY_NAMES or (piece[:1].isdigit())


def _items(value: str, agents: bool) -> Iterable[tuple[str, str]]:
    """(agent prefix or "", directive text) for each comma-separated directive."""
    pieces = value.split(",")
    agent = ""
    index = 0
    while index < len(pieces):
        piece = pieces[index].strip()
        index += 1
        if not piece:
            continue
        head, colon, tail = piece.partition(":")
        key = head.strip().lower()
        if agents and colon and key not in _KNOWN and _AGENT.fullmatch(key):
            # "otherbot: noindex, nofollow": the prefix scopes every directive
            # after it in this value, up to the next prefix.
            agent = key
            piece = tail.strip()
            if not piece:
                continue
            head, colon, tail = piece.partition(":")
            key = head.strip().lower()
        if colon and key == "unavailable_after":
            while index < len(pieces) and _continues_date(tail, pieces[index]):
                tail += "," + pieces[index]
                piece += "," + pieces[index]
                index += 1
        yield agent, piece.strip()


def _number(text: str) -> int | None:
    text = text.strip()
    if _INT.fullmatch(text) is None:
        return None
    number = int(text)
    return number if number >= -1 else None


def _unlimited_last(number: int) -> float:
    # -1 is "no limit": the least restrictive, whatever the other values.
    return float("inf") if number == -1 else float(number)


class _Builder:
    """The directives seen so far for one crawler (mutable; parsing only)."""

    __slots__ = ("flags", "ignored", "image", "malformed", "snippet", "sources", "until", "video")

    def __init__(self) -> None:
        self.flags: set[str] = set()
        self.snippet: int | None = None
        self.image: str | None = None
        self.video: int | None = None
        self.until: datetime | None = None
        self.sources: dict[str, Source] = {}
        self.ignored: list[Rejected] = []
        self.malformed: list[Rejected] = []

    def flag(self, name: str, source: Source) -> None:
        if name not in self.flags:
            self.flags.add(name)
            self.sources[name] = source

    def reject(self, source: Source, reason: str) -> None:
        self.malformed.append(Rejected(source, reason))

    def apply(self, source: Source) -> None:
        text = source.directive
        name, colon, arg = text.partition(":")
        key = name.strip().lower()
        if not colon:
            if key in _FLAGS:
                self.flag(key, source)
            elif key == "none":
                self.flag("noindex", source)
                self.flag("nofollow", source)
            elif key in _NO_OPS:
                pass
            elif key in _NOT_GOOGLE:
                self.reject(source, "is not a directive Google reads")
            elif key in VALUE_DIRECTIVES:
                self.reject(source, f"is malformed: {key} needs a value after ':'")
            else:
                words = [word for word in _WORDS.split(key) if word]
                # Lenient on purpose: "noindex nofollow" and "noindex;nofollow"
                # are common typos whose intent is plain; obey the restriction.
                if len(words) > 1 and all(word in _BARE for word in words):
                    for word in words:
                        self.apply(Source(source.kind, source.value, word, source.name))
                else:
                    self.reject(source, "is not a known directive")
            return
        if key == "max-snippet" or key == "max-video-preview":
            number = _number(arg)
            if number is None:
                self.reject(source, f"is malformed: {key} needs an integer >= -1")
                return
            if key == "max-snippet":
                if self.snippet is None or _unlimited_last(number) < _unlimited_last(self.snippet):
                    self.snippet = number
                    self.sources[key] = source
                if number == 0:
                    # Google: max-snippet:0 is equivalent to nosnippet.
                    self.flag("nosnippet", source)
            elif self.video is None or _unlimited_last(number) < _unlimited_last(self.video):
                self.video = number
                self.sources[key] = source
        elif key == "max-image-preview":
            size = arg.strip().lower()
            if size not in IMAGE_PREVIEW_SIZES:
                self.reject(source, "is malformed: max-image-preview is none, standard or large")
                return
            order = IMAGE_PREVIEW_SIZES.index
            if self.image is None or order(size) < order(self.image):
                self.image = size
                self.sources[key] = source
        elif key == "unavailable_after":
            moment = parse_date(arg)
            if moment is None:
                self.reject(source, "is malformed: unreadable date, ignored")
                return
            # Competing dates: the earliest is the most restrictive.
            if self.until is None or moment < self.until:
                self.until = moment
                self.sources[key] = source
        elif key in _KNOWN:
            self.reject(source, f"is malformed: {key} takes no value")
        else:
            self.reject(source, "is not a known directive")

    def build(self) -> PageDirectives:
        if not self.sources and not self.ignored and not self.malformed:
            return EMPTY
        flags = self.flags
        return PageDirectives(
            noindex="noindex" in flags,
            nofollow="nofollow" in flags,
            nosnippet="nosnippet" in flags,
            noarchive="noarchive" in flags,
            notranslate="notranslate" in flags,
            noimageindex="noimageindex" in flags,
            indexifembedded="indexifembedded" in flags,
            noai="noai" in flags,
            noimageai="noimageai" in flags,
            noml="noml" in flags,
            max_snippet=self.snippet,
            max_image_preview=self.image,
            max_video_preview=self.video,
            unavailable_after=self.until,
            sources=tuple(self.sources.items()),
            ignored=tuple(self.ignored),
            malformed=tuple(self.malformed),
        )


def _token(agent: str) -> str:
    return agent.strip().lower()


def parse_page_directives(
    headers: Iterable[str | bytes], meta: Iterable[tuple[str, str]], agent: str
) -> PageDirectives:
    """The page-level directives in effect for the crawler whose product token is ``agent``.

    ``headers`` holds the X-Robots-Tag values, one per header line (bytes are
    read as Latin-1); ``meta`` holds (name, content) pairs as
    :func:`~scrapy_googlerobots.htmlmeta.head_meta` gives them. A value's
    ``agent:`` prefix, and a meta name other than ``robots``, scope the
    directives to that crawler (compared case-insensitively with ``agent``);
    the others are kept in ``ignored``. Never raises on odd input: what cannot
    be read is kept in ``malformed`` with the reason.
    """
    token = _token(agent)
    builder = _Builder()
    for raw in headers:
        value = (raw.decode("latin-1") if isinstance(raw, bytes) else raw).strip()
        for scope, text in _items(value, agents=True):
            source = Source(HEADER, value, text, scope)
            if scope and scope != token:
                builder.ignored.append(Rejected(source, f"ignored for {agent}"))
            else:
                builder.apply(source)
    for meta_name, content in meta:
        name = meta_name.strip().lower()
        content = content.strip()
        applies = name == "robots" or name == token
        for _, text in _items(content, agents=False):
            source = Source(META, content, text, name)
            if applies:
                builder.apply(source)
            else:
                builder.ignored.append(Rejected(source, f"ignored for {agent}"))
    return builder.build()


def from_headers_and_body(
    x_robots_tag_values: Iterable[str | bytes] | None,
    body: bytes | None,
    agent: str | Callable[[], str],
    *,
    content_type_is_html: bool,
    limit: int = DEFAULT_LIMIT,
    encoding: str | Callable[[], str | None] | None = None,
) -> PageDirectives:
    """The directives of one response: its X-Robots-Tag values and, for HTML, its head's meta.

    Only meta tags named ``robots`` or ``agent`` are read, from the head as an
    HTML5 parser builds it (:func:`~scrapy_googlerobots.htmlmeta.head_meta`;
    ``encoding`` is the body's, or a function giving it when needed; UTF-8 when
    None). ``agent`` may be a function giving it, called only when needed (a
    header, or a ``<meta``). The body is read only as far as its head goes; a
    response with no directives gives the shared :data:`EMPTY`.
    """
    headers = tuple(x_robots_tag_values) if x_robots_tag_values is not None else ()
    meta: list[tuple[str, str]] | None = None
    asked: str | None = None  # the agent, once asked of a function
    if body and content_type_is_html:
        if callable(agent):
            lazy = agent

            def names() -> tuple[str, ...]:
                nonlocal asked
                asked = lazy()
                return _names(asked)

            meta = named_meta(body, names, limit, encoding=encoding)
        else:
            meta = named_meta(body, _names(agent), limit, encoding=encoding)
    if not headers and not meta:
        return EMPTY
    if asked is None:
        asked = agent() if callable(agent) else agent
    return _parsed(headers, tuple(meta or ()), asked)


def _names(agent: str) -> tuple[str, ...]:
    names = _NAMES.get(agent)
    if names is None:
        if len(_NAMES) >= 64:
            _NAMES.clear()  # a rotating User-Agent, without ROBOTSTXT_USER_AGENT
        token = _token(agent)
        names = _NAMES[agent] = ("robots", token) if token else ("robots",)
    return names


# Agent -> the meta names read for it (a plain dict: asked for on every HTML response).
_NAMES: dict[str, tuple[str, ...]] = {}


@lru_cache(maxsize=1024)
def _parsed(
    headers: tuple[str | bytes, ...], meta: tuple[tuple[str, str], ...], agent: str
) -> PageDirectives:
    # A site repeats its directives on every page: each set is parsed once.
    return parse_page_directives(headers, meta, agent)
