"""Status → outcome, cache lifetime and backoff: the pure policy functions (SPEC B3, B5)."""

from __future__ import annotations

import pytest

from scrapy_googlerobots.policy.fetch_policy import (
    FetchOutcome,
    backoff_delay,
    is_redirect,
    outcome_for_status,
    ttl_from_cache_control,
)

RULES, ALLOW_ALL, UNREACHABLE = FetchOutcome.RULES, FetchOutcome.ALLOW_ALL, FetchOutcome.UNREACHABLE


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        pytest.param(200, RULES, id="B3_2xx_ok_parsed"),
        pytest.param(203, RULES, id="B3_2xx_non_authoritative_parsed"),
        pytest.param(204, RULES, id="B3_2xx_no_content_parsed_empty"),
        pytest.param(206, RULES, id="B3_2xx_partial_parsed"),
        pytest.param(299, RULES, id="B3_2xx_upper_bound"),
        pytest.param(300, ALLOW_ALL, id="3xx_multiple_choices_not_followed_as_404"),
        pytest.param(304, ALLOW_ALL, id="3xx_not_modified_not_followed_as_404"),
        pytest.param(301, ALLOW_ALL, id="B3_redirect_left_unfollowed_as_404"),
        pytest.param(400, ALLOW_ALL, id="B3_4xx_bad_request_full_allow"),
        pytest.param(401, ALLOW_ALL, id="B3_4xx_unauthorized_full_allow"),
        pytest.param(403, ALLOW_ALL, id="B3_4xx_forbidden_full_allow"),
        pytest.param(404, ALLOW_ALL, id="B3_4xx_not_found_full_allow"),
        pytest.param(410, ALLOW_ALL, id="B3_4xx_gone_full_allow"),
        pytest.param(451, ALLOW_ALL, id="B3_4xx_legal_full_allow"),
        pytest.param(499, ALLOW_ALL, id="B3_4xx_upper_bound_full_allow"),
        pytest.param(429, UNREACHABLE, id="B3_429_too_many_requests_full_disallow"),
        pytest.param(500, UNREACHABLE, id="B3_5xx_internal_error_full_disallow"),
        pytest.param(503, UNREACHABLE, id="B3_5xx_unavailable_full_disallow"),
        pytest.param(599, UNREACHABLE, id="B3_5xx_upper_bound_full_disallow"),
        pytest.param(100, UNREACHABLE, id="invalid_1xx_final_status_as_server_error"),
        pytest.param(199, UNREACHABLE, id="invalid_1xx_upper_as_server_error"),
        pytest.param(600, UNREACHABLE, id="invalid_6xx_as_server_error"),
        pytest.param(99, UNREACHABLE, id="invalid_below_100_as_server_error"),
        pytest.param(0, UNREACHABLE, id="invalid_zero_as_server_error"),
    ],
)
def test_outcome_for_status(status: int, outcome: FetchOutcome) -> None:
    assert outcome_for_status(status) is outcome


@pytest.mark.parametrize(
    ("status", "followed"),
    [
        pytest.param(301, True, id="moved_permanently"),
        pytest.param(302, True, id="found"),
        pytest.param(303, True, id="see_other"),
        pytest.param(307, True, id="temporary_redirect"),
        pytest.param(308, True, id="permanent_redirect"),
        pytest.param(300, False, id="multiple_choices"),
        pytest.param(304, False, id="not_modified"),
        pytest.param(305, False, id="use_proxy"),
        pytest.param(200, False, id="ok"),
        pytest.param(404, False, id="not_found"),
    ],
)
def test_is_redirect(status: int, followed: bool) -> None:
    assert is_redirect(status) is followed


DAY, MIN, MAX = 86_400.0, 60.0, 604_800.0


@pytest.mark.parametrize(
    ("values", "ttl"),
    [
        pytest.param(None, DAY, id="B5_no_header_default_24h"),
        pytest.param([], DAY, id="B5_empty_header_list_default"),
        pytest.param([b"max-age=3600"], 3600.0, id="B5_max_age_shortens"),
        pytest.param([b"max-age=172800"], 172_800.0, id="B5_max_age_lengthens"),
        pytest.param(["max-age=3600"], 3600.0, id="str_values_accepted"),
        pytest.param([b"public, max-age=7200"], 7200.0, id="max_age_after_other_directive"),
        pytest.param([b"Max-Age=7200"], 7200.0, id="directive_names_case_insensitive"),
        pytest.param([b'max-age="7200"'], 7200.0, id="quoted_argument"),
        pytest.param([b"max-age = 7200"], 7200.0, id="spaces_around_equals"),
        pytest.param([b"public", b"max-age=7200"], 7200.0, id="directive_in_second_header_line"),
        pytest.param([b"max-age=10"], MIN, id="clamped_to_min_ttl"),
        pytest.param([b"max-age=0"], MIN, id="zero_clamped_to_min_ttl"),
        pytest.param([b"max-age=99999999999"], MAX, id="clamped_to_max_ttl"),
        pytest.param([b"max-age=3600, max-age=7200"], 3600.0, id="first_max_age_wins"),
        pytest.param([b"max-age=-5"], DAY, id="negative_ignored"),
        pytest.param([b"max-age=1.5"], DAY, id="fraction_ignored"),
        pytest.param([b"max-age=soon"], DAY, id="garbage_ignored"),
        pytest.param([b"max-age="], DAY, id="empty_argument_ignored"),
        pytest.param([b"max-age=\xd9\xa3"], DAY, id="non_ascii_digits_ignored"),
        pytest.param([b"s-maxage=100"], DAY, id="s_maxage_ignored_not_a_shared_cache"),
        pytest.param([b"no-cache"], MIN, id="no_cache_means_min_ttl"),
        pytest.param([b"no-store, max-age=9999"], MIN, id="no_store_wins_over_max_age"),
        pytest.param([b'private="x, max-age=5", max-age=7200'], 7200.0, id="quoted_commas_skipped"),
    ],
)
def test_ttl_from_cache_control(values: list[bytes | str] | None, ttl: float) -> None:
    assert ttl_from_cache_control(values, default=DAY, minimum=MIN, maximum=MAX) == ttl


def test_default_is_clamped_too() -> None:
    assert ttl_from_cache_control(None, default=10.0, minimum=60.0, maximum=100.0) == 60.0


@pytest.mark.parametrize(
    ("failures", "delay"),
    [
        pytest.param(0, 0.0, id="no_failure_no_delay"),
        pytest.param(1, 30.0, id="first_retry_after_base"),
        pytest.param(2, 60.0, id="doubles"),
        pytest.param(3, 120.0, id="doubles_again"),
        pytest.param(5, 480.0, id="fifth"),
        pytest.param(6, 600.0, id="capped_at_max"),
        pytest.param(40, 600.0, id="stays_capped"),
        pytest.param(10_000, 600.0, id="huge_count_no_overflow"),
    ],
)
def test_backoff_delay(failures: int, delay: float) -> None:
    assert backoff_delay(failures, base=30.0, maximum=600.0) == delay
