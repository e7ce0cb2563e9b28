"""Unreachable (the network's) vs the crawl's own exceptions, and the component named."""

from __future__ import annotations

import socket
from pathlib import Path

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


def test_an_exception_a_deferred_held_is_named_where_it_was_raised(tmp_path: Path) -> None:
    # A Deferred that failed before anything waited on it holds a cleaned
    # Failure; awaiting it raises the exception again from Twisted's code, and
    # Twisted 24 cuts its traceback there: where it was raised is in the Failure
    # Twisted attaches (Scrapy 2.11, classic reactor: a middleware's bug is not
    # "unreachable"). Run without pytest-twisted, which turns the cleaning off.
    import subprocess
    import sys

    code = """
from twisted.internet.defer import Deferred, maybeDeferred
from scrapy_googlerobots.fetching.failures import component_of, is_unreachable

class Broken:
    def process_request(self, request):
        1 / 0

held = maybeDeferred(Broken().process_request, None)
held.addErrback(lambda failure: failure)  # ends its callbacks: Twisted cleans it
caught = []

async def wait():
    try:
        await held
    except ZeroDivisionError as exc:
        caught.append(exc)

Deferred.fromCoroutine(wait())
[exc] = caught
print(is_unreachable(exc), component_of(exc))
"""
    probe = tmp_path / "probe.py"
    probe.write_text(code, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(probe)], check=True, capture_output=True, text=True
    ).stdout.split()
    assert out[0] == "False"
    assert out[1].startswith("__main__.") and out[1].endswith(".process_request")
