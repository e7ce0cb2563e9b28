"""Unreachable (the network's) vs the crawl's own exceptions, and the component named."""

from __future__ import annotations

import socket

import pytest
from twisted.internet import error
from twisted.internet.defer import TimeoutError as DeferTimeout

from scrapy_googlerobots.fetching.failures import component_of, is_unreachable


class RaisingMiddleware:
    def process_request(self, request: object) -> None:
        1 / 0  # noqa: B018 - the bug under test


def raised(call: object) -> BaseException:
    try:
        call()  # type: ignore[operator]
    except BaseException as exc:
        return exc
    raise AssertionError("nothing raised")


@pytest.mark.parametrize(
    "exc",
    [
        error.DNSLookupError("no such host"),
        error.ConnectionRefusedError(),
        error.TCPTimedOutError(),
        error.ConnectionLost(),
        DeferTimeout(),
        ConnectionResetError(),
        socket.gaierror(),
        TimeoutError(),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_the_networks_failures_are_unreachable(exc: BaseException) -> None:
    assert is_unreachable(exc)


def test_a_component_raising_is_the_crawls_own() -> None:
    exc = raised(lambda: RaisingMiddleware().process_request(None))
    assert isinstance(exc, ZeroDivisionError)
    assert not is_unreachable(exc)
    assert component_of(exc) == f"{__name__}.RaisingMiddleware.process_request"


def test_a_plain_function_is_named_too() -> None:
    def broken() -> None:
        raise KeyError("x")

    exc = raised(broken)
    assert not is_unreachable(exc)
    assert component_of(exc).endswith("test_a_plain_function_is_named_too.<locals>.broken")


def test_an_exception_never_raised_names_nobody() -> None:
    assert component_of(ValueError()) == "an unknown component"
    assert not is_unreachable(ValueError())


def test_importing_it_installs_no_reactor() -> None:
    # A module that imported Scrapy's HTTP handler (to name TunnelError) would
    # install Twisted's default reactor before CrawlerProcess picks its own.
    import subprocess
    import sys

    code = (
        "import sys, scrapy_googlerobots.fetching.failures, scrapy_googlerobots.crawl.middleware;"
        "assert 'twisted.internet.reactor' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
