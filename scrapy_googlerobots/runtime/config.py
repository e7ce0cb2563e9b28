"""The middleware's settings, read and checked once at start-up.

:meth:`RobotsConfig.from_settings` turns every ``ROBOTSTXT_*`` setting the
middleware uses into one frozen object. A value that cannot work (negative,
not a number, an unknown mode) or two that contradict each other
(``ROBOTSTXT_CACHE_MIN_TTL`` above ``ROBOTSTXT_CACHE_MAX_TTL``) raise
:class:`ValueError` naming the setting and the fix, so a crawl stops at
start-up (one ERROR line, nothing crawled: ``crawl/bad_setting.py``) instead of
misbehaving hours later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from scrapy.settings import BaseSettings

from scrapy_googlerobots.policy.usage import declared_use
from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE
from scrapy_googlerobots.stores.memory_cost import DEFAULT_CACHE_MEMORY

__all__ = ["DEFAULTS", "REL_HINTS", "NoindexItems", "RobotsConfig", "UnreachableMode"]

UnreachableMode = Literal["defer", "disallow"]
NoindexItems = Literal["keep", "drop"]

#: Every setting this module reads, with its default.
DEFAULTS: dict[str, object] = {
    "ROBOTSTXT_USER_AGENT": None,
    "ROBOTSTXT_MAX_REDIRECTS": 5,
    "ROBOTSTXT_MAX_SIZE": GOOGLE_MAX_SIZE,
    "ROBOTSTXT_CACHE_TTL": 86_400.0,
    "ROBOTSTXT_CACHE_MIN_TTL": 60.0,
    "ROBOTSTXT_CACHE_MAX_TTL": 604_800.0,
    "ROBOTSTXT_CACHE_SIZE": None,
    "ROBOTSTXT_CACHE_MEMORY": DEFAULT_CACHE_MEMORY,
    "ROBOTSTXT_UNREACHABLE": "defer",
    "ROBOTSTXT_UNREACHABLE_ALLOW_AFTER": 2_592_000.0,
    "ROBOTSTXT_UNREACHABLE_MAX_WAIT": 1_800.0,
    "ROBOTSTXT_RETRY_DELAY": 30.0,
    "ROBOTSTXT_RETRY_MAX_DELAY": 600.0,
    "ROBOTSTXT_FETCH_LEASE_TTL": 15.0,
    "ROBOTSTXT_PARKED_LEASE_TTL": 15.0,
    "ROBOTSTXT_SUMMARY": True,
    "ROBOTSTXT_CRAWL_DELAY": False,
    "ROBOTSTXT_CRAWL_DELAY_MAX": 60.0,
    "ROBOTSTXT_SLOW_DOWN": True,
    "ROBOTSTXT_SLOW_DOWN_MAX_PAUSE": 3600.0,
    "ROBOTSTXT_USAGE": [],
    "ROBOTSTXT_PAGE_DIRECTIVES": True,
    "ROBOTSTXT_PAGE_NOFOLLOW": True,
    "ROBOTSTXT_PAGE_NOINDEX_ITEMS": "keep",
    "ROBOTSTXT_PAGE_NOINDEX_FIELD": None,
    "ROBOTSTXT_PAGE_REL_NOFOLLOW": [],
    "ROBOTSTXT_EVIDENCE": None,
}

_MODES: tuple[UnreachableMode, ...] = ("defer", "disallow")
_NOINDEX_ITEMS: tuple[NoindexItems, ...] = ("keep", "drop")
REL_HINTS = ("nofollow", "ugc", "sponsored")
"""The link ``rel`` values Google reads as "do not follow" hints."""


@dataclass(frozen=True, slots=True)
class RobotsConfig:
    """The checked ``ROBOTSTXT_*`` settings (docs/reference/settings.rst documents each one)."""

    obey: bool = False
    user_agent: str | None = None
    """``ROBOTSTXT_USER_AGENT``; None when unset or blank."""
    default_user_agent: str = ""
    """``USER_AGENT``: the agent when neither the setting nor the request names one."""
    max_redirects: int = 5
    max_size: int = GOOGLE_MAX_SIZE
    cache_ttl: float = 86_400.0
    cache_min_ttl: float = 60.0
    cache_max_ttl: float = 604_800.0
    cache_size: int | None = None
    """``ROBOTSTXT_CACHE_SIZE``: most origins the local cache keeps; None: no count cap."""
    cache_memory: int | None = DEFAULT_CACHE_MEMORY
    """``ROBOTSTXT_CACHE_MEMORY``: bytes the local cache may use; None (setting 0): no cap."""
    unreachable: UnreachableMode = "defer"
    unreachable_allow_after: float = 2_592_000.0
    unreachable_max_wait: float = 1_800.0
    retry_delay: float = 30.0
    retry_max_delay: float = 600.0
    fetch_lease_ttl: float = 15.0
    """Seconds a worker's claim to fetch an origin lasts unless renewed (shared stores)."""
    parked_lease_ttl: float = 15.0
    """Seconds a worker's claim on its parked requests in a shared store lasts unless
    renewed; then another worker adopts them. 0: parked requests are not kept there."""
    summary: bool = True
    """``ROBOTSTXT_SUMMARY``: log what robots.txt did when the spider closes."""
    crawl_delay: bool = False
    """``ROBOTSTXT_CRAWL_DELAY``: pace each origin by its Crawl-delay / Request-rate."""
    crawl_delay_max: float = 60.0
    """``ROBOTSTXT_CRAWL_DELAY_MAX``: the largest delay applied (larger ones are capped)."""
    slow_down: bool = True
    """``ROBOTSTXT_SLOW_DOWN``: a site's 429/503 (with or without ``Retry-After``) pauses or
    slows down its origin, for every worker sharing the store."""
    slow_down_max_pause: float = 3600.0
    """``ROBOTSTXT_SLOW_DOWN_MAX_PAUSE``: the longest pause requests are held for; during a
    longer one they are dropped."""
    usage: tuple[str, ...] = ()
    """``ROBOTSTXT_USAGE``: the AI uses the crawl collects content for (IETF category
    names); a "no" for one of them stops the request. Empty: nothing is enforced."""
    page_directives: bool = True
    """``ROBOTSTXT_PAGE_DIRECTIVES``: read X-Robots-Tag headers and robots meta tags."""
    page_nofollow: bool = True
    """``ROBOTSTXT_PAGE_NOFOLLOW``: do not follow the links of a ``nofollow`` page."""
    page_noindex_items: NoindexItems = "keep"
    """``ROBOTSTXT_PAGE_NOINDEX_ITEMS``: what happens to items of a ``noindex`` page."""
    page_noindex_field: str | None = None
    """``ROBOTSTXT_PAGE_NOINDEX_FIELD``: the item field that marks an item of a
    ``noindex`` page (None: items are not changed)."""
    page_rel_nofollow: tuple[str, ...] = ()
    """``ROBOTSTXT_PAGE_REL_NOFOLLOW``: link ``rel`` values whose targets are not followed."""
    evidence: str | None = None
    """``ROBOTSTXT_EVIDENCE``: the directory of the crawl's evidence (policy files as WARC,
    decision records); None: none is kept."""

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RobotsConfig:
        """Read and check the settings; ValueError naming the setting and the fix otherwise."""
        reader = _Reader(settings)
        agent = settings.get("ROBOTSTXT_USER_AGENT")
        if agent is not None and not isinstance(agent, str):
            raise ValueError(
                f"ROBOTSTXT_USER_AGENT must be a string naming your crawler, got {agent!r}"
            )
        mode = settings.get("ROBOTSTXT_UNREACHABLE", DEFAULTS["ROBOTSTXT_UNREACHABLE"])
        normalized = mode.strip().lower() if isinstance(mode, str) else mode
        if normalized not in _MODES:
            raise ValueError(
                f"ROBOTSTXT_UNREACHABLE must be 'defer' (wait for robots.txt) or 'disallow' "
                f"(drop at once), got {mode!r}"
            )
        config = cls(
            obey=settings.getbool("ROBOTSTXT_OBEY"),
            user_agent=(agent.strip() or None) if agent else None,
            default_user_agent=str(settings.get("USER_AGENT") or ""),
            max_redirects=reader.integer("ROBOTSTXT_MAX_REDIRECTS", minimum=0),
            max_size=reader.integer("ROBOTSTXT_MAX_SIZE", minimum=1),
            cache_ttl=reader.seconds("ROBOTSTXT_CACHE_TTL"),
            cache_min_ttl=reader.seconds("ROBOTSTXT_CACHE_MIN_TTL"),
            cache_max_ttl=reader.seconds("ROBOTSTXT_CACHE_MAX_TTL"),
            cache_size=reader.optional_integer("ROBOTSTXT_CACHE_SIZE", minimum=1),
            cache_memory=reader.integer("ROBOTSTXT_CACHE_MEMORY", minimum=0) or None,
            unreachable=normalized,
            unreachable_allow_after=reader.seconds("ROBOTSTXT_UNREACHABLE_ALLOW_AFTER"),
            unreachable_max_wait=reader.seconds("ROBOTSTXT_UNREACHABLE_MAX_WAIT", positive=True),
            retry_delay=reader.seconds("ROBOTSTXT_RETRY_DELAY", positive=True),
            retry_max_delay=reader.seconds("ROBOTSTXT_RETRY_MAX_DELAY", positive=True),
            fetch_lease_ttl=reader.seconds("ROBOTSTXT_FETCH_LEASE_TTL", positive=True),
            parked_lease_ttl=reader.seconds("ROBOTSTXT_PARKED_LEASE_TTL"),
            summary=settings.getbool("ROBOTSTXT_SUMMARY", True),
            crawl_delay=settings.getbool("ROBOTSTXT_CRAWL_DELAY", False),
            crawl_delay_max=reader.seconds("ROBOTSTXT_CRAWL_DELAY_MAX"),
            slow_down=settings.getbool("ROBOTSTXT_SLOW_DOWN", True),
            slow_down_max_pause=reader.seconds("ROBOTSTXT_SLOW_DOWN_MAX_PAUSE"),
            usage=declared_use(settings.get("ROBOTSTXT_USAGE"), "ROBOTSTXT_USAGE"),
            evidence=_evidence_directory(settings.get("ROBOTSTXT_EVIDENCE")),
            **_page_settings(settings),
        )
        config._check_consistency()
        return config

    def _check_consistency(self) -> None:
        if self.cache_min_ttl > self.cache_max_ttl:
            raise ValueError(
                f"ROBOTSTXT_CACHE_MIN_TTL ({self.cache_min_ttl:g}) is above "
                f"ROBOTSTXT_CACHE_MAX_TTL ({self.cache_max_ttl:g}); lower the minimum or "
                "raise the maximum"
            )
        if not self.cache_min_ttl <= self.cache_ttl <= self.cache_max_ttl:
            raise ValueError(
                f"ROBOTSTXT_CACHE_TTL ({self.cache_ttl:g}) must lie between "
                f"ROBOTSTXT_CACHE_MIN_TTL ({self.cache_min_ttl:g}) and "
                f"ROBOTSTXT_CACHE_MAX_TTL ({self.cache_max_ttl:g}); change the TTL or the bounds"
            )
        if self.retry_delay > self.retry_max_delay:
            raise ValueError(
                f"ROBOTSTXT_RETRY_DELAY ({self.retry_delay:g}) is above "
                f"ROBOTSTXT_RETRY_MAX_DELAY ({self.retry_max_delay:g}); lower the delay or "
                "raise the maximum"
            )


def _evidence_directory(value: object) -> str | None:
    """``ROBOTSTXT_EVIDENCE`` checked: a directory path (str or path-like), or None / empty."""
    if value is None or value == "":
        return None
    if isinstance(value, str) or hasattr(value, "__fspath__"):
        return str(value)
    raise ValueError(
        f"ROBOTSTXT_EVIDENCE must be the path of a directory for the crawl's evidence, "
        f"got {value!r}"
    )


class _PageSettings(TypedDict):
    page_directives: bool
    page_nofollow: bool
    page_noindex_items: NoindexItems
    page_noindex_field: str | None
    page_rel_nofollow: tuple[str, ...]


def _page_settings(settings: BaseSettings) -> _PageSettings:
    """The ``ROBOTSTXT_PAGE_*`` settings, checked (ValueError naming the setting otherwise)."""
    items = settings.get("ROBOTSTXT_PAGE_NOINDEX_ITEMS", DEFAULTS["ROBOTSTXT_PAGE_NOINDEX_ITEMS"])
    normalized = items.strip().lower() if isinstance(items, str) else items
    if normalized not in _NOINDEX_ITEMS:
        raise ValueError(
            f"ROBOTSTXT_PAGE_NOINDEX_ITEMS must be 'keep' (items of noindex pages are kept and "
            f"counted) or 'drop', got {items!r}"
        )
    field = settings.get("ROBOTSTXT_PAGE_NOINDEX_FIELD")
    if field is not None and (not isinstance(field, str) or not field.strip()):
        raise ValueError(
            f"ROBOTSTXT_PAGE_NOINDEX_FIELD must be an item field name (e.g. 'robots_noindex') "
            f"or None, got {field!r}"
        )
    rel = settings.get("ROBOTSTXT_PAGE_REL_NOFOLLOW")
    names = rel.split(",") if isinstance(rel, str) else rel
    if names is None:
        names = []
    if not isinstance(names, (list, tuple, set, frozenset)) or not all(
        isinstance(name, str) for name in names
    ):
        raise ValueError(
            f"ROBOTSTXT_PAGE_REL_NOFOLLOW must be a list of link rel values (e.g. "
            f"{list(REL_HINTS)!r}), got {rel!r}"
        )
    hints: list[str] = []
    for name in names:
        value = name.strip().lower()
        if not value:
            continue
        if value not in REL_HINTS:
            raise ValueError(
                f"ROBOTSTXT_PAGE_REL_NOFOLLOW: unknown rel value {name.strip()!r}; use "
                f"{', '.join(REL_HINTS)}"
            )
        if value not in hints:
            hints.append(value)
    return {
        "page_directives": settings.getbool("ROBOTSTXT_PAGE_DIRECTIVES", True),
        "page_nofollow": settings.getbool("ROBOTSTXT_PAGE_NOFOLLOW", True),
        "page_noindex_items": normalized,
        "page_noindex_field": field.strip() if field is not None else None,
        "page_rel_nofollow": tuple(hints),
    }


class _Reader:
    """Typed access to settings with error messages that name the setting."""

    def __init__(self, settings: BaseSettings) -> None:
        self._settings = settings

    def _raw(self, name: str) -> object:
        value = self._settings.get(name)
        return DEFAULTS[name] if value is None else value

    def integer(self, name: str, *, minimum: int) -> int:
        raw = self._raw(name)
        try:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value: int = int(raw)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a whole number, got {raw!r}") from None
        if value < minimum:
            raise ValueError(f"{name} must be at least {minimum}, got {value}")
        return value

    def optional_integer(self, name: str, *, minimum: int) -> int | None:
        """:meth:`integer`, or None when the setting is unset (None)."""
        return None if self._raw(name) is None else self.integer(name, minimum=minimum)

    def seconds(self, name: str, *, positive: bool = False) -> float:
        raw = self._raw(name)
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{name} must be a finite number of seconds, got {raw!r}")
        if positive and value <= 0:
            raise ValueError(f"{name} must be more than 0 seconds, got {raw!r}")
        if value < 0:
            raise ValueError(f"{name} must be 0 or more seconds, got {raw!r}")
        return value
