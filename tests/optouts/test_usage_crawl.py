"""AI usage preferences in real crawls (issue 20): robots.txt ``Content-Usage`` /
``Content-Signal`` rules and the ``Content-Usage`` response header against the use a
crawl declares (``ROBOTSTXT_USAGE``, meta ``robotstxt_usage``).

Every test crawls loopback sites and asserts what the site served, what reached
the spider (with ``response.meta["usage_preferences"]``), the errbacks, the
decisions ``forbidden_by`` gives, the ``robotstxt/usage/`` stats and the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response

from scrapy_googlerobots import RobotsDecision, forbidden_by
from scrapy_googlerobots.reporting.explain import UsagePreference

from middleware_support import (
    MovableClock,
    clocked,
    our_middleware,
    robots_settings,
    robots_stats,
    spider_with_signals,
    then,
)
from servers import CrawlResult, RecordingSpider, Reply, Site, run_crawl

MODULE = "scrapy_googlerobots"
UNSEEN: Any = "unseen"


class PreferencesSpider(RecordingSpider):
    """Records ``response.meta.get("usage_preferences")`` per URL in ``seen``."""

    name = "preferences"
    seen: dict[str, Any]

    def parse(self, response: Response, **kwargs: Any) -> Any:
        self.seen[response.url] = response.meta.get("usage_preferences")
        action = response.meta.get("then")
        for request in (action(response) or ()) if action else ():
            yield request.replace(callback=self.parse, errback=self.on_error)


async def crawl(
    start: Sequence[str | Request],
    *,
    usage: Sequence[str] | None = None,
    middleware: object | None = None,
    spider: type[PreferencesSpider] = PreferencesSpider,
    **settings: Any,
) -> tuple[CrawlResult, dict[str, Any]]:
    """One crawl with ``ROBOTSTXT_USAGE = usage``; the result and the preferences seen."""
    if usage is not None:
        settings["ROBOTSTXT_USAGE"] = list(usage)
    if middleware is not None:
        settings["middleware"] = middleware
    seen: dict[str, Any] = {}
    result = await run_crawl(robots_settings(**settings), start, spider_cls=spider, seen=seen)
    return result, seen


def refusal(result: CrawlResult, url: str) -> str | None:
    """The message of ``url``'s one errback when it is a usage refusal, else None."""
    failures = result.failed(url)
    if len(failures) != 1 or failures[0].check(IgnoreRequest) is None:
        return None
    message = str(failures[0].value)
    return message if message.startswith("Forbidden by usage preference: ") else None


def decision_of(result: CrawlResult, url: str) -> RobotsDecision:
    [failure] = result.failed(url)
    decision = forbidden_by(failure)
    assert decision is not None
    return decision


def usage_stats(result: CrawlResult) -> dict[str, Any]:
    return {k: v for k, v in robots_stats(result).items() if k.startswith("robotstxt/usage/")}


def robots(*lines: str) -> Reply:
    return Reply(200, ("\n".join(lines) + "\n").encode())


def page(usage: str | Sequence[str] | None = None) -> Reply:
    """A page, with ``Content-Usage`` header line(s) when given."""
    headers: Mapping[str, str | Sequence[str]] = {} if usage is None else {"Content-Usage": usage}
    return Reply(200, b"page", {"Content-Type": "text/html", **headers})


# --------------------------------------------------------------------------
# robots.txt: both syntaxes


@pytest.mark.parametrize(
    ("rule", "declared", "line_text"),
    [
        pytest.param(
            "Content-Usage: train-ai=n", "train-ai", "Content-Usage: train-ai=n", id="ietf"
        ),
        pytest.param(
            "Content-Signal: search=yes, ai-train=no",
            "train-ai",
            "Content-Signal: ai-train=no",
            id="content_signal",
        ),
        pytest.param(
            "Content-Usage: train-ai=n", "ai-train", "Content-Usage: train-ai=n", id="declared_cs"
        ),
        pytest.param(
            "content-signal: ai-input=no", "ai-use", "Content-Signal: ai-input=no", id="ai_input"
        ),
    ],
)
@pytest_twisted.ensureDeferred
async def test_a_no_in_either_syntax_stops_the_request(
    site: Site, rule: str, declared: str, line_text: str
) -> None:
    site.script("/robots.txt", robots("User-agent: *", "Allow: /", rule))
    url = site.url("/article")
    result, seen = await crawl([url], usage=[declared])
    assert site.hits("/article") == 0 and seen == {}
    category = "ai-use" if declared in ("ai-use", "ai-input") else "train-ai"
    robots_url = site.url("/robots.txt")
    assert refusal(result, url) == (
        f"Forbidden by usage preference: {category}=n ({robots_url} line 3)"
    )
    decision = decision_of(result, url)
    assert decision.usage_refused == UsagePreference(
        category, False, 3, line_text.split(":")[0], "", robots_url
    )
    assert decision.usage_refused.rule == line_text
    # robots.txt itself allows the URL (Allow: / on line 2).
    assert (decision.allowed, decision.line, decision.directive) == (True, 2, "Allow: /")
    assert str(decision) == f'{robots_url} line 3: "{line_text}", group "*"'
    assert usage_stats(result) == {f"robotstxt/usage/forbidden/{category}": 1}
    assert "robotstxt/forbidden" not in result.stats
    debug = result.messages(logging.DEBUG, logger=MODULE)
    assert (
        f'Forbidden by usage preference: <GET {url}> ({robots_url} line 3: "{line_text}", '
        'group "*")' in debug
    )


@pytest_twisted.ensureDeferred
async def test_nothing_declared_nothing_enforced_but_preferences_reported(site: Site) -> None:
    site.script(
        "/robots.txt",
        robots(
            "User-agent: *", "Content-Usage: train-ai=n, search=y", "Content-Signal: ai-input=yes"
        ),
    )
    url = site.url("/a")
    result, seen = await crawl([url])
    assert seen == {url: {"train-ai": False, "search": True, "ai-use": True}}
    assert usage_stats(result) == {"robotstxt/usage/responses": 1}


@pytest_twisted.ensureDeferred
async def test_unknown_is_not_no(site: Site) -> None:
    # Only search is stated: a crawl declaring train-ai goes ahead.
    site.script("/robots.txt", robots("User-agent: *", "Content-Usage: search=n"))
    url = site.url("/a")
    result, seen = await crawl([url], usage=["train-ai"])
    assert result.downloaded == [url]
    assert seen == {url: {"search": False}}


# --------------------------------------------------------------------------
# robots.txt: which rule a URL gets


PATH_RULES = (
    "User-agent: *",
    "Allow: /",
    "Content-Usage: train-ai=n",  # line 3: pathless, as long as "/"
    "Content-Usage: /ai-ok/ train-ai=y",  # line 4
    "Content-Usage: /ai-ok/private/ train-ai=n",  # line 5
    "Content-Signal: /*.pdf$ ai-train=yes",  # line 6
    "Content-Usage: /docs/*/draft train-ai=n, search=n",  # line 7
    "Content-Usage: /docs/ search=y",  # line 8
    "Content-Usage: /käyttäjä/ train-ai=y",  # line 9
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/", {"train-ai": False}, id="pathless_applies_everywhere"),
        pytest.param("/ai-ok/x", {"train-ai": True}, id="longer_path_wins"),
        pytest.param("/ai-ok/private/x", {"train-ai": False}, id="longest_path_wins"),
        pytest.param("/files/a.pdf", {"train-ai": True}, id="wildcard_dollar"),
        pytest.param("/files/a.pdf?x=1", {"train-ai": False}, id="dollar_anchors_before_query"),
        pytest.param(
            "/docs/v1/draft", {"train-ai": False, "search": False}, id="wildcard_in_middle"
        ),
        pytest.param("/docs/v1/final", {"train-ai": False, "search": True}, id="per_category"),
        pytest.param("/AI-OK/x", {"train-ai": False}, id="paths_are_case_sensitive"),
        pytest.param(
            "/k%C3%A4ytt%C3%A4j%C3%A4/x", {"train-ai": True}, id="non_ascii_path_canonicalised"
        ),
        pytest.param("/käyttäjä/x", {"train-ai": True}, id="non_ascii_url_canonicalised"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_longest_matching_path_per_category(
    site: Site, path: str, expected: dict[str, bool]
) -> None:
    site.script("/robots.txt", Reply(200, ("\n".join(PATH_RULES) + "\n").encode()))
    url = Request(site.url(path)).url  # as Scrapy escapes it
    result, seen = await crawl([url])
    assert result.downloaded == [url]
    assert seen == {url: expected}


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(
            ("Content-Usage: train-ai=n", "Content-Usage: / train-ai=y"),
            False,
            id="pathless_ties_with_slash_no_wins",
        ),
        pytest.param(
            ("Content-Usage: /a train-ai=y", "Content-Signal: /a ai-train=no"),
            False,
            id="both_syntaxes_same_path_no_wins",
        ),
        pytest.param(
            ("Content-Usage: /a train-ai=n", "Content-Usage: /a train-ai=y"),
            False,
            id="order_does_not_matter",
        ),
        pytest.param(
            ("Content-Usage: /a* train-ai=n", "Content-Usage: /a train-ai=y"),
            False,
            id="equal_byte_length_ties",
        ),
        pytest.param(
            ("Content-Usage: /a train-ai=y", "Content-Usage: /ab train-ai=n"),
            True,
            id="no_tie_longer_yes_wins",
        ),
    ],
)
@pytest_twisted.ensureDeferred
async def test_no_wins_on_ties(site: Site, lines: tuple[str, str], expected: bool) -> None:
    site.script("/robots.txt", robots("User-agent: *", *lines))
    url = site.url("/a")
    result, seen = await crawl([url], usage=["train-ai"])
    if expected:
        assert result.downloaded == [url] and seen == {url: {"train-ai": True}}
    else:
        assert refusal(result, url) is not None and site.hits("/a") == 0


GROUPS = (
    "User-agent: *",
    "Content-Usage: train-ai=n",
    # A rule ends the run of user-agent lines (a usage line does not: without it, both
    # user-agent lines would name one group, as Google groups them).
    "Allow: /",
    "",
    "User-agent: testbot",
    "Allow: /",
    "Content-Usage: /only-us/ train-ai=n",
)


@pytest.mark.parametrize(
    ("agent", "path", "refused"),
    [
        pytest.param("TestBot/1.0", "/a", False, id="named_group_shadows_star"),
        pytest.param("TestBot/1.0", "/only-us/a", True, id="named_group_rule"),
        pytest.param("OtherBot/1.0", "/a", True, id="star_group_for_others"),
        pytest.param("OtherBot/1.0", "/only-us/a", True, id="star_pathless_for_others"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_the_group_google_chooses(site: Site, agent: str, path: str, refused: bool) -> None:
    site.script("/robots.txt", robots(*GROUPS))
    url = site.url(path)
    result, _ = await crawl([url], usage=["train-ai"], ROBOTSTXT_USER_AGENT=agent)
    assert (refusal(result, url) is not None) is refused
    assert (result.downloaded == [url]) is not refused
    if refused:
        assert decision_of(result, url).group == ("testbot" if agent.startswith("Test") else "*")


@pytest_twisted.ensureDeferred
async def test_a_usage_line_does_not_end_the_run_of_user_agent_lines(site: Site) -> None:
    # Google's grouping: only allow/disallow ends a run of user-agent lines, so
    # "*" and testbot share one group and its rules (Protego would see two groups).
    site.script(
        "/robots.txt",
        robots("User-agent: *", "Content-Usage: train-ai=n", "User-agent: testbot", "Allow: /"),
    )
    url = site.url("/a")
    result, _ = await crawl([url], usage=["train-ai"])
    assert refusal(result, url) is not None
    assert decision_of(result, url).group == "testbot"


@pytest_twisted.ensureDeferred
async def test_a_disallowed_url_has_no_usage_preference(site: Site) -> None:
    site.script(
        "/robots.txt",
        robots("User-agent: *", "Disallow: /private", "Content-Usage: /private train-ai=n"),
    )
    url = site.url("/private/x")
    result, _ = await crawl([url], usage=["train-ai"])
    [failure] = result.failed(url)
    assert str(failure.value) == "Forbidden by robots.txt"
    decision = forbidden_by(failure)
    assert decision is not None
    assert (decision.allowed, decision.usage, decision.usage_refused) == (False, (), None)
    assert usage_stats(result) == {}
    assert robots_stats(result)["robotstxt/forbidden"] == 1


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param("Content-Usage: train-ai=maybe", id="value_not_y_n"),
        pytest.param("Content-Usage: Train-AI=n", id="uppercase_key_not_a_dictionary"),
        pytest.param("Content-Usage: train-ai=n,,search=n", id="not_a_dictionary"),
        pytest.param("Content-Usage: train-ai=(n)", id="inner_list_value"),
        pytest.param("Content-Usage: genai=n", id="unknown_category"),
        pytest.param("Content-Signal: ai-train=maybe", id="signal_value_not_yes_no"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_malformed_robots_txt_values_are_unknown(site: Site, rule: str) -> None:
    site.script("/robots.txt", robots("User-agent: *", rule))
    url = site.url("/a")
    result, seen = await crawl([url], usage=["train-ai", "search"])
    assert result.downloaded == [url] and seen == {url: None}
    assert usage_stats(result) == {}


# --------------------------------------------------------------------------
# The response header


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param("train-ai=n, search=y", {"train-ai": False, "search": True}, id="dictionary"),
        pytest.param(["train-ai=n", "search=y"], {"train-ai": False, "search": True}, id="lines"),
        pytest.param("train-ai=y;q=1", {"train-ai": True}, id="parameters_ignored"),
        # vocab -08 section 6.5: how a malformed value reads
        pytest.param("train-ai=n, ,", None, id="not_a_dictionary_all_unknown"),
        pytest.param("Train-AI=n", None, id="uppercase_key_not_a_dictionary"),
        pytest.param("train-ai=maybe, search=n", {"search": False}, id="value_not_y_n"),
        pytest.param('train-ai="n"', None, id="string_value_unknown"),
        pytest.param("train-ai=?0", None, id="boolean_value_unknown"),
        pytest.param("train-ai", None, id="bare_key_true_is_unknown"),
        pytest.param("foo=n, train-ai=y", {"train-ai": True}, id="unknown_key_ignored"),
        pytest.param("train-ai=n, train-ai=y", {"train-ai": True}, id="repeated_key_last_wins"),
        pytest.param("ai-train=no", None, id="content_signal_words_not_a_header"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_header_only_preferences(
    site: Site, header: str | list[str], expected: dict[str, bool] | None
) -> None:
    site.script("/a", page(header))
    url = site.url("/a")
    result, seen = await crawl([url])
    assert result.downloaded == [url]
    assert seen == {url: expected}
    assert usage_stats(result) == ({"robotstxt/usage/responses": 1} if expected else {})


@pytest_twisted.ensureDeferred
async def test_a_header_no_drops_the_response(site: Site) -> None:
    site.script("/robots.txt", robots("User-agent: *", "Disallow: /private"))
    site.script("/a", page("search=y, train-ai=n"))
    site.script("/b", page("train-ai=y"))
    a, b = site.url("/a"), site.url("/b")
    result, seen = await crawl([a, b], usage=["train-ai"])
    assert site.hits("/a") == 1  # downloaded, then dropped
    assert result.downloaded == [b] and seen == {b: {"train-ai": True}}
    assert (
        refusal(result, a)
        == f"Forbidden by usage preference: train-ai=n (Content-Usage header of {a})"
    )
    [failure] = result.failed(a)
    # The errback still sees what the response said.
    assert failure.request.meta["usage_preferences"] == {"search": True, "train-ai": False}
    decision = decision_of(result, a)
    assert decision.usage_refused == UsagePreference.of_header("train-ai", False, a)
    assert (decision.allowed, decision.line, decision.robots_url) == (
        True,
        0,
        site.url("/robots.txt"),
    )
    assert str(decision) == f"Content-Usage header of {a}: train-ai=n"
    assert usage_stats(result) == {
        "robotstxt/usage/header_forbidden/train-ai": 1,
        "robotstxt/usage/responses": 2,
    }
    debug = result.messages(logging.DEBUG, logger=MODULE)
    assert (
        f"Forbidden by usage preference: <GET {a}> (Content-Usage header of {a}: train-ai=n)"
        in debug
    )


@pytest.mark.parametrize(
    ("rule", "header", "declared", "outcome", "expected"),
    [
        pytest.param(
            "train-ai=y", "train-ai=n", ["train-ai"], "header", None, id="robots_y_header_n"
        ),
        pytest.param(
            "train-ai=n", "train-ai=y", ["train-ai"], "robots", None, id="robots_n_header_y"
        ),
        pytest.param(
            "train-ai=y", "train-ai=n", [], "fetched", {"train-ai": False}, id="n_wins_in_meta"
        ),
        pytest.param(
            "train-ai=n", "train-ai=y", [], "fetched", {"train-ai": False}, id="n_wins_too"
        ),
        pytest.param(
            "search=y",
            "train-ai=y",
            ["train-ai", "search"],
            "fetched",
            {"search": True, "train-ai": True},
            id="sources_merge",
        ),
        pytest.param(
            "train-ai=n",
            "search=n",
            ["search"],
            "header",
            None,
            id="header_no_for_another_declared_category",
        ),
    ],
)
@pytest_twisted.ensureDeferred
async def test_robots_txt_and_header_combine_no_wins(
    site: Site,
    rule: str,
    header: str,
    declared: list[str],
    outcome: str,
    expected: dict[str, bool] | None,
) -> None:
    site.script("/robots.txt", robots("User-agent: *", f"Content-Usage: {rule}"))
    site.script("/a", page(header))
    url = site.url("/a")
    result, seen = await crawl([url], usage=declared)
    message = refusal(result, url)
    assert site.hits("/a") == (0 if outcome == "robots" else 1)
    if outcome == "fetched":
        assert message is None and seen == {url: expected}
    else:
        assert message is not None and seen == {}
        where = "Content-Usage header of" if outcome == "header" else "robots.txt line 2"
        assert where in message


@pytest_twisted.ensureDeferred
async def test_robots_txt_responses_are_not_judged(site: Site) -> None:
    # The robots.txt fetch itself carries a refusing header: it is still read.
    site.script(
        "/robots.txt",
        Reply(200, b"User-agent: *\nDisallow: /x\n", {"Content-Usage": "train-ai=n"}),
    )
    result, seen = await crawl([site.url("/a"), site.url("/x")], usage=["train-ai"])
    assert result.downloaded == [site.url("/a")] and seen == {site.url("/a"): None}
    assert robots_stats(result)["robotstxt/forbidden"] == 1
    assert usage_stats(result) == {}


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_skips_usage_preferences(site: Site) -> None:
    site.script("/robots.txt", robots("User-agent: *", "Content-Usage: train-ai=n"))
    site.script("/a", page("train-ai=n"))
    url = site.url("/a")
    request = Request(url, meta={"dont_obey_robotstxt": True})
    result, seen = await crawl([request], usage=["train-ai"])
    assert result.downloaded == [url] and seen == {url: None}
    assert usage_stats(result) == {}


@pytest_twisted.ensureDeferred
async def test_stale_preferences_copied_from_another_response_are_removed(site: Site) -> None:
    # A spider passing response.meta on: the next page's meta must not keep the
    # first page's preferences when it states none.
    site.script("/a", page("train-ai=y"))

    def follow(response: Response) -> list[Request]:
        return [Request(site.url("/b"), meta=dict(response.meta))]

    _result, seen = await crawl([Request(site.url("/a"), meta=then(follow))])
    assert seen == {site.url("/a"): {"train-ai": True}, site.url("/b"): None}


# --------------------------------------------------------------------------
# Declaring the use: setting and per-request meta


@pytest.mark.parametrize(
    ("setting", "meta", "refused"),
    [
        pytest.param(["train-ai"], [], False, id="empty_meta_declares_nothing"),
        pytest.param(["train-ai"], ["search"], False, id="meta_replaces_setting"),
        pytest.param([], ["ai-train"], True, id="meta_declares_without_setting"),
        pytest.param(["search"], ["search", "ai-train"], True, id="meta_list_any_no"),
        pytest.param(["train-ai"], None, True, id="no_meta_setting_applies"),
        pytest.param([], "train-ai,search", True, id="meta_string_comma_separated"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_per_request_meta(
    site: Site, setting: list[str], meta: list[str] | str | None, refused: bool
) -> None:
    site.script("/robots.txt", robots("User-agent: *", "Content-Usage: train-ai=n, search=y"))
    url = site.url("/a")
    request = Request(url) if meta is None else Request(url, meta={"robotstxt_usage": meta})
    result, _ = await crawl([request], usage=setting)
    assert (refusal(result, url) is not None) is refused
    assert site.hits("/a") == (0 if refused else 1)


@pytest_twisted.ensureDeferred
async def test_meta_header_check_uses_the_request_declaration(site: Site) -> None:
    site.script("/a", page("search=n"))
    site.script("/b", page("search=n"))
    a, b = site.url("/a"), site.url("/b")
    start = [Request(a, meta={"robotstxt_usage": ["search"]}), Request(b)]
    result, seen = await crawl(start, usage=["train-ai"])
    assert refusal(result, a) is not None
    assert seen == {b: {"search": False}}


@pytest_twisted.ensureDeferred
async def test_unknown_category_in_meta_is_a_clear_error(site: Site) -> None:
    site.script("/robots.txt", robots("User-agent: *", "Content-Usage: train-ai=n"))
    url = site.url("/a")
    result, _ = await crawl([Request(url, meta={"robotstxt_usage": ["train-llm"]})])
    [failure] = result.failed(url)
    assert failure.check(ValueError) is not None
    assert "unknown usage category 'train-llm'" in str(failure.value)
    assert "robotstxt_usage" in str(failure.value)
    assert site.hits("/a") == 0


@pytest.mark.parametrize(
    ("value", "named"),
    [
        pytest.param(["train-ai", "train-llm"], "'train-llm'", id="unknown_category"),
        pytest.param("search,genai", "'genai'", id="unknown_in_string"),
        pytest.param(5, "must be a list of usage categories", id="not_a_list"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_an_unknown_category_in_the_setting_stops_the_crawl_at_start(
    site: Site, value: object, named: str
) -> None:
    result = await run_crawl(robots_settings(ROBOTSTXT_USAGE=value), [site.url("/a")])
    assert result.stats["finish_reason"] == "robotstxt_bad_setting"
    [error] = result.messages(logging.ERROR)
    assert error.startswith("ROBOTSTXT_USAGE") and named in error
    assert error.endswith(
        ". Not crawling: every request is refused and the spider closed "
        "(finish reason robotstxt_bad_setting)"
    )
    [(url, failure)] = result.failures
    assert url == site.url("/a") and failure.check(IgnoreRequest)
    assert site.hits("/robots.txt") == site.hits("/a") == 0


# --------------------------------------------------------------------------
# Refresh, explain, stats and summary


@pytest_twisted.ensureDeferred
async def test_a_refreshed_robots_txt_changes_the_preference(site: Site) -> None:
    clock = MovableClock()
    site.script(
        "/robots.txt",
        robots("User-agent: *", "Content-Usage: train-ai=y"),
        robots("User-agent: *", "Content-Usage: train-ai=n"),
    )

    def later(response: Response) -> list[Request]:
        clock.advance(86_400 + 1)
        return [Request(site.url("/later"))]

    start = [Request(site.url("/first"), meta=then(later))]
    result, seen = await crawl(start, usage=["train-ai"], middleware=clocked(clock))
    assert site.hits("/robots.txt") == 2
    assert seen == {site.url("/first"): {"train-ai": True}}
    assert refusal(result, site.url("/later")) is not None
    assert site.hits("/later") == 0


@pytest_twisted.ensureDeferred
async def test_explain_includes_the_usage_decision(site: Site) -> None:
    site.script(
        "/robots.txt",
        robots(
            "User-agent: *", "Allow: /", "Content-Signal: ai-train=no", "Content-Usage: /a search=y"
        ),
    )
    explained: dict[str, RobotsDecision | None] = {}

    def on_response(response: Any, request: Any, spider: Any) -> None:
        explained[request.url] = our_middleware(spider.crawler).explain(request)

    spider = spider_with_signals(PreferencesSpider, response_received=on_response)
    url = site.url("/a")
    await crawl([url], spider=spider)  # type: ignore[arg-type]
    decision = explained[url]
    robots_url = site.url("/robots.txt")
    assert decision is not None
    assert decision.usage == (
        UsagePreference("train-ai", False, 3, "Content-Signal", "", robots_url),
        UsagePreference("search", True, 4, "Content-Usage", "/a", robots_url),
    )
    assert decision.preferences == {"train-ai": False, "search": True}
    assert decision.usage_refused is None
    assert [p.rule for p in decision.usage] == [
        "Content-Signal: ai-train=no",
        "Content-Usage: /a search=y",
    ]


@pytest_twisted.ensureDeferred
async def test_stats_and_summary(make_site: Callable[..., Site]) -> None:
    one, two, plain = make_site(), make_site(), make_site()
    one.script(
        "/robots.txt",
        robots(
            "User-agent: *",
            "Disallow: /private",
            "Content-Usage: train-ai=n",
            "Content-Usage: /ok/ train-ai=y",
        ),
    )
    two.script("/robots.txt", robots("User-agent: *", "Content-Signal: ai-input=no"))
    plain.script("/robots.txt", robots("User-agent: *", "Disallow: /x"))
    plain.script("/h", page("train-ai=n"))
    urls = [
        *(one.url(f"/p{n}") for n in range(3)),
        one.url("/ok/1"),
        one.url("/private/1"),
        two.url("/q"),
        plain.url("/h"),
        plain.url("/fine"),
    ]
    result, seen = await crawl(urls, usage=["ai-train", "ai-input"])
    assert sorted(result.downloaded) == sorted([one.url("/ok/1"), plain.url("/fine")])
    assert seen == {one.url("/ok/1"): {"train-ai": True}, plain.url("/fine"): None}
    assert usage_stats(result) == {
        "robotstxt/usage/forbidden/train-ai": 3,
        "robotstxt/usage/forbidden/ai-use": 1,
        "robotstxt/usage/header_forbidden/train-ai": 1,
        "robotstxt/usage/responses": 2,
    }
    assert robots_stats(result)["robotstxt/forbidden"] == 1
    [block] = [m for m in result.messages(logging.INFO) if m.startswith("robots.txt summary:")]
    lines = block.splitlines()
    assert lines[1] == "  requests: 1 forbidden, 0 deferred, 0 released, 0 dropped"
    at = lines.index(
        "  usage preferences (declared use: train-ai, ai-use): 4 forbidden by robots.txt, "
        "1 dropped by their Content-Usage header, 2 responses with preferences"
    )
    assert lines[at + 1] == "  usage rules that forbade the most requests:"
    assert lines[at + 2].split() == [
        "3",
        one.url("/robots.txt"),
        "line",
        "3:",
        "Content-Usage:",
        "train-ai=n",
    ]
    assert lines[at + 3].split() == [
        "1",
        two.url("/robots.txt"),
        "line",
        "2:",
        "Content-Signal:",
        "ai-input=no",
    ]
    # The declared use is one TDMRep covers: each origin's tdmrep.json was asked for
    # (this test's servers answer any path with a page, which is no TDMRep file).
    assert lines[at + 4] == (
        "  TDMRep: 3 tdmrep.json fetched (3 invalid); requests refused: 0 by tdmrep.json, "
        "0 by tdm-reservation header, 0 by meta tag; 0 responses with a reservation value"
    )
    assert len(lines) == at + 5
    summary = our_middleware(result.crawler).summary
    assert summary.usage_forbidden_by[(f"http://127.0.0.1:{one.port}", 3, "train-ai")] == 3


@pytest_twisted.ensureDeferred
async def test_summary_without_usage_is_unchanged(site: Site) -> None:
    site.script("/robots.txt", robots("User-agent: *", "Disallow: /x"))
    result, _ = await crawl([site.url("/a"), site.url("/x")])
    [block] = [m for m in result.messages(logging.INFO) if m.startswith("robots.txt summary:")]
    assert "usage" not in block


@pytest_twisted.ensureDeferred
async def test_many_requests_of_one_usage_origin(site: Site) -> None:
    # The per-request path for an origin with usage rules, under concurrency:
    # every request judged once, the preferences reach the right response.
    site.script(
        "/robots.txt",
        robots(
            "User-agent: *",
            "Content-Usage: /open/ train-ai=y",
            "Content-Usage: /closed/ train-ai=n",
        ),
    )
    open_urls = [site.url(f"/open/{n}") for n in range(40)]
    closed_urls = [site.url(f"/closed/{n}") for n in range(40)]
    result, seen = await crawl(open_urls + closed_urls, usage=["train-ai"], CONCURRENT_REQUESTS=16)
    assert sorted(result.downloaded) == sorted(open_urls)
    assert seen == {key: {"train-ai": True} for key in open_urls}
    assert all(refusal(result, url) is not None for url in closed_urls)
    assert usage_stats(result)["robotstxt/usage/forbidden/train-ai"] == 40
