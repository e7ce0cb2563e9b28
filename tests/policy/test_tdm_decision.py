"""TDMRep's per-origin decision and the declared uses it covers (policy/tdm.py)."""

from __future__ import annotations

import pytest

from scrapy_googlerobots.policy.decision import Action
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import FetchTimings, PolicyRecord, record_after_fetch
from scrapy_googlerobots.policy.tdm import TDM_USES, decide_tdm, tdm_applies, tdm_store_key

TIMINGS = FetchTimings(
    cache_ttl=100.0,
    cache_min_ttl=10.0,
    cache_max_ttl=1_000.0,
    retry_delay=5.0,
    retry_max_delay=60.0,
    max_size=1_000,
)
KEY = tdm_store_key("https://example.com:443")


def fetched(
    outcome: FetchOutcome, now: float, previous: PolicyRecord | None = None, body: bytes = b"[]"
) -> PolicyRecord:
    return record_after_fetch(
        KEY,
        outcome,
        status=200,
        body=body,
        cache_control=None,
        previous=previous,
        now=now,
        timings=TIMINGS,
        parse=lambda _body: None,
    )


def test_uses_and_key() -> None:
    assert TDM_USES == ("train-ai", "ai-use")
    assert tdm_applies(["search", "train-ai"]) and tdm_applies(("ai-use",))
    assert not tdm_applies(()) and not tdm_applies(["search"])
    assert KEY == "tdmrep|https://example.com:443"


def test_never_fetched_waits_for_the_one_fetch() -> None:
    decision = decide_tdm(None, 0.0)
    assert (decision.action, decision.fetch) == (Action.WAIT, True)


@pytest.mark.parametrize(
    ("outcome", "rules"), [(FetchOutcome.RULES, True), (FetchOutcome.ALLOW_ALL, False)]
)
def test_a_good_copy_applies_for_its_lifetime_then_is_waited_for(
    outcome: FetchOutcome, rules: bool
) -> None:
    record = fetched(outcome, 1_000.0)
    fresh = decide_tdm(record, 1_050.0)
    assert (fresh.action, fresh.fetch, fresh.rules) == (Action.APPLY, False, rules)
    assert record.rules is None  # never parsed as robots.txt
    expired = decide_tdm(record, 1_100.0)
    assert (expired.action, expired.fetch) == (Action.WAIT, True)


def test_unreachable_is_unset_at_once_and_retried_after_the_backoff() -> None:
    record = fetched(FetchOutcome.UNREACHABLE, 1_000.0)
    now = decide_tdm(record, 1_001.0)
    assert (now.action, now.fetch, now.rules) == (Action.APPLY, False, False)
    due = decide_tdm(record, 1_005.0)
    assert (due.action, due.fetch, due.rules) == (Action.APPLY, True, False)


def test_a_failed_refresh_keeps_the_copy_in_hand() -> None:
    good = fetched(FetchOutcome.RULES, 1_000.0)
    failed = fetched(FetchOutcome.UNREACHABLE, 1_200.0, previous=good)
    kept = decide_tdm(failed, 1_201.0)
    assert (kept.action, kept.fetch, kept.rules) == (Action.APPLY, False, True)
    retry = decide_tdm(failed, 1_210.0)
    assert (retry.action, retry.fetch, retry.rules) == (Action.APPLY, True, True)
    no_file = fetched(FetchOutcome.ALLOW_ALL, 1_000.0)
    failed_404 = fetched(FetchOutcome.UNREACHABLE, 1_200.0, previous=no_file)
    unset = decide_tdm(failed_404, 1_201.0)
    assert (unset.action, unset.rules) == (Action.APPLY, False)
