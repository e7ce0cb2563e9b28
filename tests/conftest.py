"""Fixtures for real crawls: local sites, an FTP server, a refused port (see servers.py).

Servers start synchronously (binding is immediate) and are stopped at
teardown, waiting on the reactor until their ports and connections are closed.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import pytest
import pytest_twisted

from servers import FtpServer, RefusedPort, Site, run_crawl

__all__ = ["crawl", "ftp_server", "https_site", "make_ftp", "make_site", "refused_port", "site"]

# The test folders of the Scrapy side (they mirror the package's folders of the
# same names): their tests run again on the classic reactor in CI, selected
# with ``-m scrapy_side``. A test elsewhere that crawls marks itself.
SCRAPY_SIDE_FOLDERS = frozenset(
    {"runtime", "evidence", "fetching", "reporting", "waiting", "pacing", "optouts", "crawl"}
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "scrapy_side: a test of the Scrapy side (rerun on the classic reactor in CI)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.parts
        if "tests" in parts:
            below = parts[len(parts) - 1 - parts[::-1].index("tests") + 1 :]
            if below and below[0] in SCRAPY_SIDE_FOLDERS:
                item.add_marker(pytest.mark.scrapy_side)


# How long the test process may take to exit after its last test.
EXIT_GRACE = 60.0


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Fail, naming it, if a test left a thread that keeps the process from exiting.

    Python waits for non-daemon threads before it exits, so such a thread would
    hang the run after its summary until CI's time limit, with no failure to
    read. A watchdog (a daemon: it ends with a process that exits) prints every
    thread's stack and exits 1 if the process is still there after
    ``EXIT_GRACE`` s. It does not judge threads itself: the standard library's
    own (asyncio's executor, for one) are joined at exit and must not count.
    """

    def watchdog() -> None:
        time.sleep(EXIT_GRACE)
        names = [
            thread.name
            for thread in threading.enumerate()
            if thread is not threading.main_thread() and not thread.daemon
        ]
        stderr = sys.__stderr__ or sys.stderr
        print(
            f"\nThe test process is still running {EXIT_GRACE:.0f} s after its last test; "
            f"threads that keep it alive: {', '.join(names) or 'none found'}. A test left "
            "them running: end them in the test (or make them daemons). Every thread's "
            "stack follows; exiting with status 1.",
            file=stderr,
            flush=True,
        )
        faulthandler.dump_traceback(file=stderr, all_threads=True)
        os._exit(1)

    threading.Thread(target=watchdog, name="test-exit-watchdog", daemon=True).start()


FTP_FILES: Mapping[str, bytes] = {
    "/robots.txt": b"User-agent: *\nDisallow: /private\n",
    "/page.txt": b"page",
    "/private/secret.txt": b"secret",
}


@contextmanager
def _stopped_at_exit() -> Iterator[list[Site | FtpServer]]:
    """A list to put started servers in; each is stopped (and waited for) at exit."""
    started: list[Site | FtpServer] = []
    try:
        yield started
    finally:
        for server in started:
            pytest_twisted.blockon(server.stop())


@pytest.fixture
def make_site() -> Iterator[Callable[..., Site]]:
    """Factory: ``make_site(tls=False)`` starts one more Site (one more origin)."""
    with _stopped_at_exit() as started:

        def make(*, tls: bool = False) -> Site:
            new_site = Site(tls=tls).start()
            started.append(new_site)
            return new_site

        yield make


@pytest.fixture
def site(make_site: Callable[..., Site]) -> Site:
    """One started HTTP site on 127.0.0.1."""
    return make_site()


@pytest.fixture
def https_site(make_site: Callable[..., Site]) -> Site:
    """One started HTTPS site with a self-signed certificate made for this test."""
    return make_site(tls=True)


@pytest.fixture
def make_ftp() -> Iterator[Callable[[Mapping[str, bytes]], FtpServer]]:
    """Factory: ``make_ftp({"/robots.txt": b"..."})`` starts an anonymous FTP server."""
    with _stopped_at_exit() as started:

        def make(files: Mapping[str, bytes]) -> FtpServer:
            server = FtpServer(files).start()
            started.append(server)
            return server

        yield make


@pytest.fixture
def ftp_server(make_ftp: Callable[[Mapping[str, bytes]], FtpServer]) -> FtpServer:
    """An FTP server with ``FTP_FILES`` (robots.txt disallowing /private)."""
    return make_ftp(FTP_FILES)


@pytest.fixture
def refused_port() -> Iterator[RefusedPort]:
    """A loopback port that refuses connections for the whole test."""
    port = RefusedPort()
    yield port
    port.close()


@pytest.fixture
def crawl() -> Callable[..., object]:
    """:func:`servers.run_crawl`, for tests that prefer a fixture to an import."""
    return run_crawl
