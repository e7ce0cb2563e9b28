"""The Scrapy-version seam: calling convention, engine API, closing probe, under test doubles.

Scrapy's own tests, and many projects' tests, build the crawler with
``scrapy.utils.test.get_crawler`` and a ``MagicMock`` engine. A ``MagicMock``
answers every attribute with a truthy mock, so nothing here may decide by
``getattr`` on the engine.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
import pytest_twisted
from scrapy import Request, Spider
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import TextResponse
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from scrapy_googlerobots import GoogleRobotsTxtMiddleware
from scrapy_googlerobots.runtime.scrapy_compat import (
    ENGINE_HAS_DOWNLOAD_ASYNC,
    PROCESS_REQUEST_IS_COROUTINE,
    engine_is_closing,
    engine_is_running,
)

ROBOTS = b"User-agent: *\nDisallow: /private/\n"


def test_the_convention_is_the_stock_classes() -> None:
    ours = inspect.iscoroutinefunction(GoogleRobotsTxtMiddleware.process_request)
    assert ours == inspect.iscoroutinefunction(RobotsTxtMiddleware.process_request)
    assert ours == PROCESS_REQUEST_IS_COROUTINE


@pytest.mark.parametrize(
    "engine",
    [
        pytest.param(mock.MagicMock(), id="magicmock"),
        pytest.param(mock.MagicMock(running=mock.MagicMock()), id="magicmock-running-mock"),
        pytest.param(None, id="no-engine"),
        pytest.param(SimpleNamespace(_slot=SimpleNamespace(closing=None)), id="open-slot"),
        pytest.param(SimpleNamespace(_slot=None), id="no-slot-yet"),
        pytest.param(object(), id="no-dict"),
    ],
)
def test_an_engine_that_is_not_closing(engine: Any) -> None:
    assert engine_is_closing(engine) is False


@pytest.mark.parametrize("name", ["_slot", "slot"], ids=["scrapy>=2.13", "scrapy<2.13"])
def test_an_engine_whose_slot_is_closing(name: str) -> None:
    engine = SimpleNamespace(**{name: SimpleNamespace(closing=Deferred())})
    assert engine_is_closing(engine) is True


def _mock_crawler(**settings: Any) -> Any:
    """A crawler as Scrapy's test utilities build it, with a MagicMock engine serving ROBOTS."""
    crawler = get_crawler(Spider, {"ROBOTSTXT_OBEY": True, **settings})
    crawler.engine = mock.MagicMock()
    fetched: list[str] = []

    async def download_async(request: Request) -> TextResponse:
        fetched.append(request.url)
        return TextResponse(request.url, body=ROBOTS)

    def download(request: Request) -> Deferred[TextResponse]:
        fetched.append(request.url)
        deferred: Deferred[TextResponse] = Deferred()
        deferred.callback(TextResponse(request.url, body=ROBOTS))
        return deferred

    crawler.engine.download_async = mock.AsyncMock(side_effect=download_async)
    crawler.engine.download = mock.MagicMock(side_effect=download)
    crawler.fetched = fetched
    return crawler


async def _call(middleware: GoogleRobotsTxtMiddleware, request: Request) -> Any:
    """``process_request`` called the way code written for the stock class calls it."""
    result = middleware.process_request(request)
    if PROCESS_REQUEST_IS_COROUTINE:
        assert inspect.iscoroutine(result)
        # This test runs as a Twisted coroutine: await the coroutine as a Deferred.
        return await deferred_from_coro(result)
    assert isinstance(result, Deferred)
    return await result


@pytest_twisted.ensureDeferred
async def test_a_magicmock_engine_is_not_taken_for_a_closing_one() -> None:
    crawler = _mock_crawler()
    middleware = GoogleRobotsTxtMiddleware.from_crawler(crawler)
    assert await _call(middleware, Request("http://site.local/page")) is None
    with pytest.raises(IgnoreRequest, match=r"Forbidden by robots\.txt"):
        await _call(middleware, Request("http://site.local/private/x"))
    # One fetch, through the download API this Scrapy has (not whatever the mock offers).
    assert crawler.fetched == ["http://site.local/robots.txt"]
    used = crawler.engine.download_async if ENGINE_HAS_DOWNLOAD_ASYNC else crawler.engine.download
    unused = crawler.engine.download if ENGINE_HAS_DOWNLOAD_ASYNC else crawler.engine.download_async
    assert used.call_count == 1
    assert unused.call_count == 0


def test_non_http_urls_are_not_checked_in_either_convention() -> None:
    middleware = GoogleRobotsTxtMiddleware.from_crawler(_mock_crawler())
    for url in ("data:text/plain,hello", "file:///etc/hostname"):
        result = middleware.process_request(Request(url))
        if PROCESS_REQUEST_IS_COROUTINE:
            result.close()  # an un-awaited coroutine: nothing ran
        else:
            assert result is None


def test_a_browser_like_robotstxt_user_agent_starts_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = _mock_crawler(ROBOTSTXT_USER_AGENT="Mozilla/5.0 (X11; Linux x86_64)")
    with caplog.at_level("WARNING", logger="scrapy_googlerobots"):
        GoogleRobotsTxtMiddleware.from_crawler(crawler)
    warnings = [r for r in caplog.records if "names no crawler" in r.getMessage()]
    assert len(warnings) == 1
    assert "'Mozilla'" in warnings[0].getMessage()


@pytest.mark.parametrize(
    ("engine", "running"),
    [
        pytest.param(mock.MagicMock(), True, id="magicmock-is-taken-as-running"),
        pytest.param(SimpleNamespace(running=False), False, id="not-started-yet"),
        pytest.param(SimpleNamespace(running=True), True, id="started"),
        pytest.param(None, False, id="no-engine"),
    ],
)
def test_engine_is_running_only_a_real_bool_says_no(engine: Any, running: bool) -> None:
    assert engine_is_running(engine) is running
