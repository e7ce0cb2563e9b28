"""PageDirectivesMiddleware as a unit, built the way Scrapy's own tests build components
(``get_crawler`` + ``from_crawler``): its hooks called directly, sync and async."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.test import get_crawler
from twisted.internet import reactor
from twisted.internet.defer import Deferred

from scrapy_googlerobots import PageDirectivesMiddleware, PageRefusal
from scrapy_googlerobots.pagedirectives import EMPTY
from scrapy_googlerobots.runtime.scrapy_compat import send_signal

AGENT = "TestBot/1.0 (+http://test.example/bot)"
URL = "http://example.com/a"


def middleware(**settings: Any) -> PageDirectivesMiddleware:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "USER_AGENT": AGENT, **settings})
    return PageDirectivesMiddleware.from_crawler(crawler)


def html_response(
    head: str = "",
    *,
    headers: dict[str, Any] | None = None,
    body: str = "",
    request: Request | None = None,
    url: str = URL,
) -> HtmlResponse:
    content = f"<html><head>{head}</head><body>{body}</body></html>".encode()
    return HtmlResponse(
        url,
        body=content,
        headers=headers or {},
        request=request or Request(url),
    )


def stats(mw: PageDirectivesMiddleware) -> dict[str, Any]:
    found = mw.crawler.stats.get_stats()  # type: ignore[union-attr]
    return {k: v for k, v in found.items() if k.startswith("robotstxt/")}


def sync_output(mw: PageDirectivesMiddleware, response: Response, outputs: list[Any]) -> list[Any]:
    mw.process_spider_input(response)
    return list(mw.process_spider_output(response, outputs))


def async_output(mw: PageDirectivesMiddleware, response: Response, outputs: list[Any]) -> list[Any]:
    async def source() -> AsyncIterator[Any]:
        for output in outputs:
            yield output

    mw.process_spider_input(response)
    generator = mw.process_spider_output_async(response, source())
    collected: list[Any] = []
    # Stepped by hand (the test's reactor owns the event loop): nothing here suspends.
    while True:
        step = generator.__anext__()
        try:
            step.send(None)  # type: ignore[attr-defined]
        except StopIteration as done:
            collected.append(done.value)
        except StopAsyncIteration:
            return collected


BOTH = pytest.mark.parametrize("run", [sync_output, async_output], ids=["sync", "async"])


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({"ROBOTSTXT_OBEY": False}, id="obey_off"),
        pytest.param({"ROBOTSTXT_PAGE_DIRECTIVES": False}, id="directives_off"),
    ],
)
def test_not_configured(settings: dict[str, Any]) -> None:
    with pytest.raises(NotConfigured):
        middleware(**settings)


def test_bad_setting_disables_it_with_the_reason() -> None:
    # The robots.txt middleware reports it as an ERROR and crawls nothing.
    with pytest.raises(NotConfigured, match="ROBOTSTXT_PAGE_NOINDEX_ITEMS"):
        middleware(ROBOTSTXT_PAGE_NOINDEX_ITEMS="maybe")


def test_nothing_to_enforce_returns_the_output_untouched() -> None:
    mw = middleware()
    response = html_response("<title>x</title>")
    outputs = [Request("http://example.com/b"), {"a": 1}]
    mw.process_spider_input(response)
    # The very iterable: no generator layer for a page without directives.
    assert mw.process_spider_output(response, outputs) is outputs
    assert "page_directives" not in response.meta
    assert stats(mw) == {}


def test_non_html_without_header_is_not_read() -> None:
    mw = middleware()
    response = TextResponse(URL, body=b'<meta name="robots" content="nofollow">')
    assert mw._reader.of(response) is EMPTY
    response = Response(URL, headers={"X-Robots-Tag": "nofollow"}, request=Request(URL))
    assert sync_output(mw, response, [Request("http://example.com/b")]) == []


@BOTH
def test_nofollow_drops_requests_keeps_items(run: Any, caplog: pytest.LogCaptureFixture) -> None:
    mw = middleware()
    response = html_response('<meta name="robots" content="nofollow">')
    item = {"a": 1}
    caplog.set_level(logging.DEBUG, "scrapy_googlerobots")
    assert run(mw, response, [Request("http://example.com/b"), item]) == [item]
    assert item == {"a": 1}
    directives = response.meta["page_directives"]
    assert directives.nofollow and str(directives.source("nofollow")) == (
        '<meta name="robots" content="nofollow">'
    )
    assert stats(mw) == {
        "robotstxt/page/responses": 1,
        "robotstxt/page/directive/nofollow": 1,
        "robotstxt/page/requests_dropped/nofollow": 1,
    }
    assert (
        f'Not following <GET http://example.com/b> from <200 {URL}>: <meta name="robots" '
        'content="nofollow">'
    ) in caplog.messages


@BOTH
def test_none_counts_as_none(run: Any) -> None:
    mw = middleware(ROBOTSTXT_PAGE_NOINDEX_FIELD="noindex")
    response = html_response(headers={"X-Robots-Tag": "NONE"})
    out = run(mw, response, [Request("http://example.com/b"), {"a": 1}])
    assert out == [{"a": 1, "noindex": "X-Robots-Tag: NONE"}]
    assert stats(mw)["robotstxt/page/requests_dropped/none"] == 1
    assert stats(mw)["robotstxt/page/items_kept/none"] == 1


class DeclaredItem(scrapy.Item):
    url = scrapy.Field()
    robots_noindex = scrapy.Field()


class PlainItem(scrapy.Item):
    url = scrapy.Field()


@dataclasses.dataclass
class DataItem:
    url: str
    robots_noindex: str | None = None


def test_marking_through_itemadapter(caplog: pytest.LogCaptureFixture) -> None:
    mw = middleware(ROBOTSTXT_PAGE_NOINDEX_FIELD="robots_noindex")
    response = html_response('<meta name="robots" content="noindex">')
    items = [DeclaredItem(url="u"), DataItem("u"), PlainItem(url="u"), PlainItem(url="v"), "str"]
    caplog.set_level(logging.WARNING, "scrapy_googlerobots")
    out = sync_output(mw, response, items)
    assert out == items  # kept, the same objects
    source = '<meta name="robots" content="noindex">'
    assert out[0]["robots_noindex"] == source and out[1].robots_noindex == source
    assert dict(out[2]) == {"url": "u"}
    assert stats(mw)["robotstxt/page/items_unmarked"] == 3
    assert stats(mw)["robotstxt/page/items_kept/noindex"] == 5
    [warning] = caplog.messages
    assert warning.startswith(
        "Items of noindex pages are kept but cannot be marked: a PlainItem has no field "
        "'robots_noindex'"
    )


async def _collect(outputs: AsyncIterator[Any]) -> list[Any]:
    return [output async for output in outputs]


async def _aiter(outputs: list[Any]) -> AsyncIterator[Any]:
    for output in outputs:
        yield output


@pytest.mark.parametrize("callback", ["sync", "async"])
@pytest_twisted.ensureDeferred
async def test_drop_sends_item_dropped_with_an_explainable_drop_item(callback: str) -> None:
    mw = middleware(ROBOTSTXT_PAGE_NOINDEX_ITEMS="drop")
    seen: list[tuple[Any, Any, BaseException]] = []
    finished: Deferred[None] = Deferred()

    def dropped(item: Any, response: Any, exception: BaseException, **_: Any) -> None:
        seen.append((item, response, exception))

    async def dropped_later(**_: Any) -> None:
        # An asynchronous receiver: done a turn of the reactor later, if awaited at all.
        turn: Deferred[None] = Deferred()
        reactor.callLater(0, turn.callback, None)
        await maybe_deferred_to_future(turn)
        finished.callback(None)

    mw.crawler.signals.connect(dropped, signal=signals.item_dropped, weak=False)
    mw.crawler.signals.connect(dropped_later, signal=signals.item_dropped, weak=False)
    response = html_response(headers={"X-Robots-Tag": "unavailable_after: 2001-01-01"})
    request = Request("http://example.com/b")
    if callback == "sync":
        assert sync_output(mw, response, [{"a": 1}, request]) == [request]
        # A sync callback's output cannot wait for the receivers; the crawl's close does.
        close = send_signal(mw.crawler.signals, signals.spider_closed, spider=None, reason="x")
        await deferred_from_coro(close)
    else:
        mw.process_spider_input(response)
        outputs = mw.process_spider_output_async(response, _aiter([{"a": 1}, request]))
        assert await deferred_from_coro(_collect(outputs)) == [request]
    assert finished.called
    [(item, got, error)] = seen
    assert item == {"a": 1} and got is response
    from scrapy_googlerobots import forbidden_by

    decision = forbidden_by(error)
    assert decision is not None
    assert decision.page_refused == PageRefusal(
        "unavailable_after", "X-Robots-Tag: unavailable_after: 2001-01-01", URL
    )
    assert str(error) == (
        "Forbidden by page directive: unavailable_after (X-Robots-Tag: unavailable_after: "
        f"2001-01-01 of {URL})"
    )
    assert mw.explain(response) == decision


def test_future_unavailable_after_is_reported_only() -> None:
    mw = middleware(ROBOTSTXT_PAGE_NOINDEX_ITEMS="drop")
    response = html_response('<meta name="robots" content="unavailable_after: 2999-12-31">')
    assert sync_output(mw, response, [{"a": 1}]) == [{"a": 1}]
    assert response.meta["page_directives"].unavailable_after.year == 2999
    assert mw.explain(response) is None


def test_the_request_user_agent_picks_the_scoped_directives() -> None:
    mw = middleware()
    other = Request(URL, headers={"User-Agent": "OtherBot/2"})
    ours = html_response(headers={"X-Robots-Tag": "otherbot: nofollow"})
    theirs = html_response(headers={"X-Robots-Tag": "otherbot: nofollow"}, request=other)
    follow = Request("http://example.com/b")
    assert sync_output(mw, ours, [follow]) == [follow]
    assert [str(r) for r in ours.meta["page_directives"].ignored] == [
        "X-Robots-Tag: otherbot: nofollow ignored for TestBot"
    ]
    assert sync_output(mw, theirs, [follow]) == []


def test_robotstxt_user_agent_wins() -> None:
    mw = middleware(ROBOTSTXT_USER_AGENT="OtherBot")
    response = html_response('<meta name="OtherBot" content="nofollow">')
    assert sync_output(mw, response, [Request("http://example.com/b")]) == []


def test_copied_meta_is_removed_and_dont_obey_is_reported_only() -> None:
    mw = middleware()
    request = Request(URL, meta={"page_directives": "stale", "dont_obey_robotstxt": True})
    plain = html_response(request=request)
    sync_output(mw, plain, [])
    assert "page_directives" not in plain.meta
    request = Request(URL, meta={"dont_obey_robotstxt": True})
    response = html_response(headers={"X-Robots-Tag": "nofollow"}, request=request)
    follow = Request("http://example.com/b")
    assert sync_output(mw, response, [follow]) == [follow]
    assert response.meta["page_directives"].nofollow


def test_noai_sets_train_ai_no_in_usage_preferences() -> None:
    mw = middleware()
    request = Request(URL, meta={"usage_preferences": {"search": True}})
    response = html_response('<meta name="robots" content="noimageai">', request=request)
    sync_output(mw, response, [])
    assert response.meta["usage_preferences"] == {"search": True, "train-ai": False}


def test_a_response_built_by_hand_has_no_meta() -> None:
    mw = middleware()
    response = HtmlResponse(URL, body=b'<head><meta name="robots" content="nofollow"></head>')
    assert list(mw.process_spider_output(response, [Request("http://example.com/b")])) == []
    assert list(mw.process_spider_output(None, [1])) == [1]  # type: ignore[arg-type]


REL_BODY = (
    '<base href="http://example.com/dir/">'
    '<a rel="nofollow" href="x">x</a><a rel="UGC" href="/y#frag">y</a>'
    '<a rel="sponsored" href="z">z</a><a rel="nofollow" href="w">w</a><a href="w">w</a>'
    '<area rel="ugc" href="/map">'
)


@BOTH
def test_rel_hints_when_asked(run: Any) -> None:
    mw = middleware(ROBOTSTXT_PAGE_REL_NOFOLLOW=["nofollow", "ugc"])
    response = html_response(body=REL_BODY)
    urls = ["dir/x", "y", "dir/z", "dir/w", "map", "elsewhere"]
    requests = [Request(f"http://example.com/{path}") for path in urls]
    kept = run(mw, response, requests)
    assert [r.url for r in kept] == [
        "http://example.com/dir/z",
        "http://example.com/dir/w",
        "http://example.com/elsewhere",
    ]
    assert stats(mw) == {
        "robotstxt/page/links_dropped/nofollow": 1,
        "robotstxt/page/links_dropped/ugc": 2,
    }
    decision = mw.explain(response, requests[1])
    assert decision is not None and decision.page_refused == PageRefusal(
        "rel=ugc", '<a rel="ugc">', URL
    )
    assert mw.explain(response, requests[2]) is None


def test_rel_hints_off_by_default() -> None:
    mw = middleware()
    response = html_response(body=REL_BODY)
    requests = [Request("http://example.com/dir/x")]
    assert sync_output(mw, response, requests) == requests


def test_nofollow_off_reports_only() -> None:
    mw = middleware(ROBOTSTXT_PAGE_NOFOLLOW=False)
    response = html_response(headers={"X-Robots-Tag": "nofollow"})
    follow = Request("http://example.com/b")
    assert sync_output(mw, response, [follow]) == [follow]
    assert mw.explain(response, follow) is None
    assert stats(mw)["robotstxt/page/directive/nofollow"] == 1


def test_explain_names_the_nofollow_source() -> None:
    mw = middleware()
    response = html_response(headers={"X-Robots-Tag": ["noarchive", "testbot: nofollow"]})
    decision = mw.explain(response, Request("http://example.com/b"))
    assert decision is not None
    assert str(decision) == f"X-Robots-Tag: testbot: nofollow of {URL}"
    assert decision.url == "http://example.com/b" and decision.token == "TestBot"
    assert mw.explain(response) is None  # items: kept
