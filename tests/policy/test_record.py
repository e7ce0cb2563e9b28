"""The record after a fetch (lifetime, outage bookkeeping, backoff) and parsed-rules caching."""

from __future__ import annotations

import pytest

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import (
    FetchTimings,
    ParsedRulesCache,
    PolicyRecord,
    record_after_fetch,
)

KEY = "http://example.com:80"
TIMINGS = FetchTimings(
    cache_ttl=86_400,
    cache_min_ttl=60,
    cache_max_ttl=604_800,
    retry_delay=30,
    retry_max_delay=600,
    max_size=512_000,
)
ROBOTS = b"User-agent: *\nDisallow: /private\n"


def after(
    outcome: FetchOutcome, previous: PolicyRecord | None = None, **kwargs: object
) -> PolicyRecord:
    fields: dict[str, object] = {"status": 200, "body": b"", "cache_control": None}
    fields.update(kwargs)
    return record_after_fetch(
        KEY,
        outcome,
        previous=previous,
        now=1_000.0,
        timings=TIMINGS,
        **fields,  # type: ignore[arg-type]
    )


def test_rules_fetched_are_parsed_and_fresh_for_the_default_ttl() -> None:
    fetched = after(FetchOutcome.RULES, body=ROBOTS)
    assert (fetched.fetched_at, fetched.expires_at, fetched.body) == (1_000.0, 87_400.0, ROBOTS)
    assert fetched.rules is not None
    assert not fetched.rules.allowed("http://example.com/private", "bot")


@pytest.mark.parametrize(
    ("cache_control", "ttl"),
    [([b"max-age=120"], 120), ([b"max-age=1"], 60), ([b"max-age=99999999"], 604_800)],
    ids=["B4_max_age", "B4_clamped_to_min", "B4_clamped_to_max"],
)
def test_lifetime_from_cache_control(cache_control: list[bytes], ttl: float) -> None:
    fetched = after(FetchOutcome.RULES, body=ROBOTS, cache_control=cache_control)
    assert fetched.expires_at - fetched.fetched_at == ttl


def test_allow_all_keeps_no_body_and_allows_everything() -> None:
    fetched = after(FetchOutcome.ALLOW_ALL, status=404, body=b"User-agent: *\nDisallow: /\n")
    assert fetched.body is None
    assert fetched.rules is not None and fetched.rules.allowed("http://example.com/x", "bot")


def test_first_failure_starts_an_outage_with_backoff() -> None:
    down = after(FetchOutcome.UNREACHABLE, status=503)
    assert down.outcome is FetchOutcome.UNREACHABLE
    assert (down.unreachable_since, down.failures, down.retry_at) == (1_000.0, 1, 1_030.0)


def test_failures_double_the_wait_and_keep_since() -> None:
    first = after(FetchOutcome.UNREACHABLE, status=503)
    second = record_after_fetch(
        KEY,
        FetchOutcome.UNREACHABLE,
        status=503,
        body=b"",
        cache_control=None,
        previous=first,
        now=1_030.0,
        timings=TIMINGS,
    )
    assert (second.unreachable_since, second.failures, second.retry_at) == (1_000.0, 2, 1_090.0)


def test_B5_a_failed_refresh_keeps_the_good_copy_and_notes_the_outage() -> None:
    good = after(FetchOutcome.RULES, body=ROBOTS)
    kept = record_after_fetch(
        KEY,
        FetchOutcome.UNREACHABLE,
        status=500,
        body=b"",
        cache_control=None,
        previous=good,
        now=90_000.0,
        timings=TIMINGS,
    )
    assert (kept.outcome, kept.body, kept.rules) == (FetchOutcome.RULES, ROBOTS, good.rules)
    assert (kept.unreachable_since, kept.failures) == (90_000.0, 1)


def test_parsed_rules_cache_parses_a_stores_record_once_and_evicts_the_oldest() -> None:
    cache = ParsedRulesCache(max_entries=1, max_size=512_000)
    stored = PolicyRecord(origin=KEY, outcome=FetchOutcome.RULES, body=ROBOTS)
    first = cache.rules_of(stored)
    assert cache.rules_of(stored) is first
    cache.rules_of(PolicyRecord(origin="http://other:80", outcome=FetchOutcome.RULES, body=ROBOTS))
    assert cache.rules_of(stored) is not first, "evicted, parsed again"
    changed = PolicyRecord(origin=KEY, outcome=FetchOutcome.RULES, body=b"User-agent: *\n")
    assert cache.rules_of(changed).allowed("http://example.com/private", "bot")
    assert cache.rules_of(PolicyRecord(origin=KEY, outcome=FetchOutcome.ALLOW_ALL)) is cache.empty


def test_retry_after_puts_the_next_attempt_no_earlier_than_it() -> None:
    # The backoff says 30 s; the answer asked for 120 s: 120 s it is.
    asked = after(FetchOutcome.UNREACHABLE, status=503, retry_after=120.0)
    assert asked.retry_at == 1_120.0
    # A Retry-After shorter than the backoff does not hurry it.
    short = after(FetchOutcome.UNREACHABLE, status=503, retry_after=5.0)
    assert short.retry_at == 1_030.0
