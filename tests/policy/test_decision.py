"""The decision on a cached record (SPEC B5), as a table: record + clock -> apply / wait / drop."""

from __future__ import annotations

from typing import Any

import pytest

from scrapy_googlerobots.policy.decision import Action, decide, is_the_copy_waited_for
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import PolicyRecord

ALLOW_AFTER = 1_000.0
NOW = 500.0


def record(**fields: Any) -> PolicyRecord:
    return PolicyRecord(origin="http://example.com:80", **fields)


GOOD = {"outcome": FetchOutcome.RULES, "body": b"", "fetched_at": 100.0}
DOWN = {"outcome": FetchOutcome.UNREACHABLE, "failures": 1}

# (id, record, disallow mode, expected action, fetch due, rules apply, unreachable)
CASES = [
    ("B5_never_fetched_waits_for_the_fetch", None, False, Action.WAIT, True, True, False),
    (
        "fresh_copy_applies",
        record(**GOOD, expires_at=NOW + 1),
        False,
        Action.APPLY,
        False,
        True,
        False,
    ),
    (
        "expired_copy_waits_for_the_refresh",
        record(**GOOD, expires_at=NOW),
        False,
        Action.WAIT,
        True,
        True,
        False,
    ),
    (
        "B5_failed_refresh_keeps_the_stale_copy_retry_due",
        record(**GOOD, expires_at=NOW - 1, unreachable_since=NOW - 10, retry_at=NOW),
        False,
        Action.APPLY,
        True,
        True,
        False,
    ),
    (
        "B5_failed_refresh_keeps_the_stale_copy_before_retry",
        record(**GOOD, expires_at=NOW - 1, unreachable_since=NOW - 10, retry_at=NOW + 1),
        False,
        Action.APPLY,
        False,
        True,
        False,
    ),
    (
        "B5_unreachable_defer_waits_until_the_retry",
        record(**DOWN, unreachable_since=NOW - 10, retry_at=NOW + 1),
        False,
        Action.WAIT,
        False,
        True,
        True,
    ),
    (
        "B5_unreachable_defer_retry_due",
        record(**DOWN, unreachable_since=NOW - 10, retry_at=NOW),
        False,
        Action.WAIT,
        True,
        True,
        True,
    ),
    (
        "B5_unreachable_disallow_drops",
        record(**DOWN, unreachable_since=NOW - 10, retry_at=NOW + 1),
        True,
        Action.DROP,
        False,
        True,
        True,
    ),
    (
        "unreachable_disallow_retry_due_waits_for_that_fetch",
        record(**DOWN, unreachable_since=NOW - 10, retry_at=NOW),
        True,
        Action.WAIT,
        True,
        True,
        False,
    ),
    (
        "B5_unreachable_past_allow_after_allows_all",
        record(**DOWN, unreachable_since=NOW - ALLOW_AFTER, retry_at=NOW + 1),
        True,
        Action.APPLY,
        False,
        False,
        False,
    ),
    (
        "B5_unreachable_past_allow_after_still_retries",
        record(**DOWN, unreachable_since=NOW - ALLOW_AFTER, retry_at=NOW),
        False,
        Action.APPLY,
        True,
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("record_", "disallow", "action", "fetch", "rules", "unreachable"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decide(
    record_: PolicyRecord | None,
    disallow: bool,
    action: Action,
    fetch: bool,
    rules: bool,
    unreachable: bool,
) -> None:
    decision = decide(record_, NOW, disallow_mode=disallow, allow_after=ALLOW_AFTER)
    assert (decision.action, decision.fetch, decision.rules, decision.unreachable) == (
        action,
        fetch,
        rules,
        unreachable,
    )


def test_a_released_request_is_judged_by_the_copy_it_waited_for_even_expired() -> None:
    waited = record(**GOOD, expires_at=NOW - 1)
    assert is_the_copy_waited_for(100.0, waited)
    assert not is_the_copy_waited_for(99.0, waited), "a newer or older copy is not it"
    assert not is_the_copy_waited_for(None, waited), "not a released request"
    assert not is_the_copy_waited_for(100.0, None)
    assert not is_the_copy_waited_for(0.0, record(**DOWN)), "an unreachable record is no copy"
