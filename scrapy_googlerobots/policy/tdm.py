"""TDMRep around the core: which declared uses a reservation refuses, its store key, and
what a request does from what is known of the origin's ``tdmrep.json``.

Pure: the declared use in, whether TDMRep applies out (:func:`tdm_applies`); a
record of the origin's ``tdmrep.json`` (or None) and the clock in, a
:class:`~scrapy_googlerobots.policy.decision.Decision` out (:func:`decide_tdm`).
The core (:mod:`scrapy_googlerobots.tdmrep`) reads the file, the header fields
and the meta tags.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from scrapy_googlerobots.policy.decision import Action, Decision
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import FileKind
from scrapy_googlerobots.tdmrep import WELL_KNOWN_PATH

if TYPE_CHECKING:
    from scrapy_googlerobots.policy.record import PolicyRecord

__all__ = [
    "TDMREP_JSON",
    "TDM_STORE_PREFIX",
    "TDM_USES",
    "decide_tdm",
    "tdm_applies",
    "tdm_store_key",
]

TDM_USES: tuple[str, ...] = ("train-ai", "ai-use")
"""The declared uses (IETF names) a TDM reservation refuses.

Text and data mining (EU Directive 2019/790 Art. 2(2): "any automated
analytical technique aimed at analysing text and data in digital form in
order to generate information") covers collecting content to train a model
(``train-ai``) and to feed one at inference time (``ai-use``: grounding,
retrieval-augmented generation). Indexing for search (``search``) is not
mining in the sense of Art. 4, and a crawl declaring nothing has stated no use
a reservation could refuse.
"""

TDMREP_JSON = FileKind(
    "tdmrep.json",
    "robotstxt/tdmrep/",
    "tdmrep|",
    WELL_KNOWN_PATH,
    frozenset(("http", "https")),
)
"""``/.well-known/tdmrep.json``: http(s) origins only; stats under ``robotstxt/tdmrep/``."""

TDM_STORE_PREFIX = TDMREP_JSON.store_prefix
"""Store keys of ``tdmrep.json`` records: ``tdmrep|<origin key>``, beside robots.txt's
``<origin key>`` in the same store."""

_APPLY = Decision(Action.APPLY, fetch=False)
_APPLY_REFRESH = Decision(Action.APPLY, fetch=True)
_UNSET = Decision(Action.APPLY, fetch=False, rules=False)
_UNSET_RETRY = Decision(Action.APPLY, fetch=True, rules=False)
_FETCH_AND_WAIT = Decision(Action.WAIT, fetch=True)


def tdm_applies(declared: Iterable[str]) -> bool:
    """Whether a request declaring ``declared`` (IETF names) is subject to TDMRep."""
    return any(use in TDM_USES for use in declared)


def tdm_store_key(origin_key: str) -> str:
    """The store key of an origin's ``tdmrep.json`` record."""
    return TDM_STORE_PREFIX + origin_key


def decide_tdm(record: PolicyRecord | None, now: float) -> Decision:
    """What a request does, from the record of its origin's ``tdmrep.json`` at ``now``.

    Never fetched, or a copy past its lifetime: wait for the one fetch (as for
    robots.txt). A good copy (``RULES``: the file; ``ALLOW_ALL``: a 4xx, no
    file) applies; past its lifetime with the refresh failing, the stale copy
    keeps applying. Unreachable with no good copy: the origin does not use the
    protocol ("unset", never a wait: the spec reads a file it cannot get as
    no file), and the next request after the backoff retries in the background.
    ``APPLY`` with ``rules=False`` means "no file".
    """
    if record is None:
        return _FETCH_AND_WAIT
    due = record.retry_at is None or now >= record.retry_at
    if record.outcome is not FetchOutcome.UNREACHABLE:
        if now < record.expires_at:
            return _APPLY if record.outcome is FetchOutcome.RULES else _UNSET
        if record.unreachable_since is None:
            return _FETCH_AND_WAIT
        if record.outcome is not FetchOutcome.RULES:
            return _UNSET_RETRY if due else _UNSET
        return _APPLY_REFRESH if due else _APPLY
    return _UNSET_RETRY if due else _UNSET
