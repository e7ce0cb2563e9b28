"""Where requests wait for their origin's ``tdmrep.json``: the robots.txt waiting room, reused.

A request whose crawl declares a use TDMRep covers (``train-ai``, ``ai-use``)
and whose origin's ``tdmrep.json`` is not known yet waits in a
:class:`TdmWaitingRoom`, keyed by ``tdmrep|<origin key>``: parked outside the
scheduler and the downloader, recorded in the shared store (handed over at a
stop, adopted by another worker, counted against
``ROBOTSTXT_UNREACHABLE_MAX_WAIT`` like any parked request), released when the
origin's one fetch ends. Only the decision differs
(:func:`~scrapy_googlerobots.policy.tdm.decide_tdm`): a ``tdmrep.json`` that
cannot be fetched means "no file", so a wait never outlasts one fetch attempt.

A request whose wait runs out anyway (a single attempt longer than
``ROBOTSTXT_UNREACHABLE_MAX_WAIT``) goes on as "unset" rather than being
dropped: the spec reads a file it cannot get as no file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.policy.record import ParsedRulesCache
from scrapy_googlerobots.policy.tdm import decide_tdm
from scrapy_googlerobots.waiting.origin_state import DROP_META, RELEASED_META
from scrapy_googlerobots.waiting.waiting_room import WaitingRoom

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_googlerobots.policy.decision import Decision
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.robotstxt import RobotsTxt

__all__ = ["TDM_GAVE_UP_META", "TDM_RELEASED_META", "TdmWaitingRoom", "no_rules"]

TDM_RELEASED_META = "_robotstxt_tdm_released"
"""``fetched_at`` of the ``tdmrep.json`` record a released request waited for: it is
judged by that copy even if it has expired since (a tiny TTL)."""
TDM_GAVE_UP_META = "_robotstxt_tdm_gave_up"
"""Set on a request whose wait for ``tdmrep.json`` ran out: it goes on as "unset" once."""


class _NoRules(ParsedRulesCache):
    """A tdmrep.json record has no robots.txt rules: never parse its body as one."""

    def rules_of(self, record: PolicyRecord) -> RobotsTxt:
        return self.empty


def no_rules() -> ParsedRulesCache:
    """The rules cache of the TDM room (its records' bodies are not robots.txt)."""
    return _NoRules(1, 1)


class TdmWaitingRoom(WaitingRoom):
    """The waiting room of ``tdmrep.json`` fetches (see the module doc)."""

    def __init__(self, *, crawl: Callable[[Request], None], **kwargs: Any) -> None:
        self._crawl_on = crawl
        super().__init__(crawl=self._on_its_way, **kwargs)

    def decide(self, record: PolicyRecord | None, now: float) -> Decision:
        return decide_tdm(record, now)

    def _on_its_way(self, request: Request) -> None:
        """A request leaves the room: released by a fetch, or its wait ran out."""
        meta = request.meta
        fetched = meta.pop(RELEASED_META, None)
        if fetched is not None:
            meta[TDM_RELEASED_META] = fetched
        if meta.pop(DROP_META, None) is not None:
            meta[TDM_GAVE_UP_META] = True
        self._crawl_on(request)
