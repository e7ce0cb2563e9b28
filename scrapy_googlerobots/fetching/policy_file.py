"""What a per-origin policy file is, for everything that fetches, stores and waits for one.

robots.txt and ``/.well-known/tdmrep.json`` are the two instances the crawl
ships (:class:`~scrapy_googlerobots.crawl.robots_file.RobotsTxtFile`,
:class:`~scrapy_googlerobots.optouts.tdm_gate.TdmGate`). The store,
the fetch coordinator, the waiting rooms, the hand-over, adoption,
``explain()`` and the crawl shell handle any :class:`PolicyFile` the same
way: nothing outside a file's own definition tests which file it is.

A file says

- what it is (its :class:`FileKind`): its name (log lines, reasons), its
  stats prefix, its store key prefix and its URL for an origin;
- which requests need it (``always``, ``trigger_meta``, :meth:`PolicyFile.needs`);
- how an HTTP outcome becomes a record, body parsing included (:meth:`PolicyFile.record`);
- what a request does from a record (:meth:`PolicyFile.decide`), how it is
  judged by one (:meth:`PolicyFile.judge`) and what its expired wait means
  (:meth:`PolicyFile.gave_up`);
- what follows a fetch that stored a record (:meth:`PolicyFile.fetched`) and
  how it reports fetches (``reports``).

Adding a file: its parser in a core folder, one Scrapy-side module defining
its :class:`FileKind` and :class:`PolicyFile`, listed in the middleware's
``_policy_files`` (docs/internals.rst, "Per-origin policy files").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from scrapy_googlerobots.policy.origin import FileKind, OriginRef
from scrapy_googlerobots.policy.record import record_after_fetch
from scrapy_googlerobots.policy.slowdown import retry_after_of

if TYPE_CHECKING:
    from scrapy import Request
    from twisted.python.failure import Failure

    from scrapy_googlerobots.fetching.fetcher import FetchResult
    from scrapy_googlerobots.policy.decision import Decision
    from scrapy_googlerobots.policy.record import FetchTimings, PolicyRecord
    from scrapy_googlerobots.robotstxt import RobotsTxt

__all__ = ["FetchReports", "FileKind", "FileRefs", "PolicyFile", "record_of", "unparsed"]

# Entries of a file's origin -> OriginRef memo (cleared when full).
_REFS_SIZE = 10_000


class FetchReports(Protocol):
    """What the coordinator tells the user about one file's fetches (``reporting`` has them)."""

    def fetch_started(self) -> None: ...

    def lease_wait(self) -> None: ...

    def fetch_bug(self, failure: Failure, key: str) -> None: ...

    def own_failure(self, key: str, exc: BaseException, *, waiting: int) -> None: ...

    def fetched(
        self,
        key: str,
        result: FetchResult,
        record: PolicyRecord,
        previous: PolicyRecord | None,
        *,
        waiting: int,
        now: float,
    ) -> None: ...


class PolicyFile(Protocol):
    """One kind of per-origin policy file in a crawl (see the module doc)."""

    kind: FileKind
    released_meta: str
    """Meta key: ``fetched_at`` of the copy a released request waited for."""
    gave_up_meta: str
    """Meta key set on a request whose wait for this file ran out (its reason)."""
    always: bool
    """Every request of the crawl needs it (then it is fetched beside an earlier file)."""
    trigger_meta: str
    """A meta key that may make a request need it, when ``always`` is false."""

    @property
    def reports(self) -> FetchReports:
        """How its fetches are counted and logged."""

    def needs(self, request: Request) -> bool:
        """Whether ``request`` is judged by this file (ValueError: a bad declaration)."""

    def record(
        self,
        ref: OriginRef,
        result: FetchResult,
        previous: PolicyRecord | None,
        now: float,
        timings: FetchTimings,
    ) -> PolicyRecord:
        """The record a fetch's ``result`` stores under ``ref.key`` (body parsing included)."""

    def decide(self, record: PolicyRecord | None, now: float) -> Decision:
        """What a request does from ``record`` (None: never fetched) at ``now``."""

    def judge(self, request: Request, record: PolicyRecord | None) -> None:
        """Raise ``IgnoreRequest`` if ``record`` (None: nothing applies) refuses ``request``."""

    def gave_up(self, request: Request, reason: str) -> None:
        """``request`` comes back after its wait ran out (``reason``): raise, or let it on."""

    async def fetched(
        self, result: FetchResult, record: PolicyRecord, trigger: Request | None
    ) -> None:
        """A fetch stored ``record`` from ``result`` (after ``reports.fetched``)."""


def record_of(
    key: str,
    result: FetchResult,
    previous: PolicyRecord | None,
    now: float,
    timings: FetchTimings,
    *,
    parse: Callable[[bytes], RobotsTxt | None] | None = None,
    headers: bytes | None = None,
) -> PolicyRecord:
    """The record after a fetch: the body read by ``parse`` (default: as robots.txt), the
    response's ``headers`` kept or not, the next attempt no earlier than its ``Retry-After``."""
    response = result.response
    return record_after_fetch(
        key,
        result.outcome,
        status=result.status,
        body=result.body,
        cache_control=response.headers.getlist(b"Cache-Control") if response else None,
        previous=previous,
        now=now,
        timings=timings,
        headers=headers,
        parse=parse,
        retry_after=retry_after_of(response, now),
    )


def unparsed(_body: bytes) -> None:
    """The parse of a file whose records keep their body as fetched (parsed where judged)."""
    return None


class FileRefs:
    """The :class:`OriginRef` of one file's record for each origin (memoized)."""

    __slots__ = ("_file", "_refs")

    def __init__(self, file: PolicyFile) -> None:
        self._file = file
        self._refs: dict[str, OriginRef | None] = {}

    def of(self, ref: OriginRef) -> OriginRef | None:
        """The ref (store key ``<prefix><origin key>``) of the file of ``ref``'s origin."""
        kind = self._file.kind
        if not kind.store_prefix and kind.schemes is None:
            return ref  # keyed by the origin key itself, every origin has one
        refs = self._refs
        fref = refs.get(ref.key, ref)
        if fref is not ref:
            return fref
        if len(refs) >= _REFS_SIZE:
            refs.clear()
        fref = None
        if kind.url_for(ref.origin) is not None:
            fref = OriginRef(ref.origin)
            fref.key = kind.store_prefix + ref.key
        refs[ref.key] = fref
        return fref
