"""A real, throw-away ``redis-server`` for tests: loopback, a free port, stopped at the end.

Redis cannot be told to pick a free port itself (``--port 0`` means "no TCP"),
so :class:`RedisServer` lets the server bind a random high port and tries
another when it reports the address in use — the server does the binding, so
there is no close-and-reopen race. Readiness is the server's own "Ready to
accept connections" line, not a sleep.

Tests that need it take the ``redis_server`` fixture (import it into the test
module); without a ``redis-server`` binary they are skipped, saying so.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["FEED_THREAD", "RedisServer", "feed_threads", "redis_server", "require_redis"]

_READY = "ready to accept connections"
_IN_USE = "Address already in use"


def require_redis() -> str:
    """The redis-server binary and the redis package, or skip the calling test."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    pytest.importorskip("redis", reason="the redis package is not installed (the [redis] extra)")
    return binary


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1, without persistence."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.log: list[str] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, port: int | None = None) -> None:
        """Start on ``port`` (a restart), or on a random free high port."""
        if port is not None:
            if not self._try(port):
                raise RuntimeError(f"redis-server could not listen on {port}: {self.log[-3:]}")
            return
        for _ in range(50):
            if self._try(random.randint(20_000, 60_000)):
                return
        raise RuntimeError(f"redis-server found no free port: {self.log[-3:]}")

    def _try(self, port: int) -> bool:
        process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--loglevel",
                "notice",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        # A server that neither starts nor fails is killed, ending the read below.
        watchdog = threading.Timer(15, process.kill)
        watchdog.start()
        ready = False
        assert process.stdout is not None
        try:
            for line in process.stdout:
                self.log.append(line.rstrip())
                if _READY in line.lower():
                    ready = True
                    break
        finally:
            watchdog.cancel()
        if not ready:
            process.kill()
            process.wait()
            if any(_IN_USE in line for line in self.log[-5:]):
                return False
            raise RuntimeError(f"redis-server did not start: {self.log[-5:]}")
        self.port = port
        self.process = process
        # Keep draining its output so the pipe never fills and blocks it.
        threading.Thread(target=self._drain, args=(process,), daemon=True).start()
        return True

    def _drain(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.log.append(line.rstrip())

    def kill(self) -> None:
        """Stop the server abruptly (SIGKILL), as a crash would."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def restart(self) -> None:
        """Start again on the same port after :meth:`kill`."""
        self.start(self.port)

    def client(self) -> object:
        import redis

        return redis.Redis.from_url(self.url)


#: The name every pause feed's thread starts with (stores/pause_feed.py).
FEED_THREAD = "robotstxt-pause-feed"


def feed_threads() -> list[threading.Thread]:
    """Pause feed threads still alive."""
    return [t for t in threading.enumerate() if t.name.startswith(FEED_THREAD)]


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh ``redis-server`` for one test; no pause feed's thread outlives the test."""
    server = RedisServer(require_redis(), tmp_path)
    server.start()
    try:
        yield server
        assert feed_threads() == [], "a pause feed's thread outlived its crawl or test"
    finally:
        server.kill()
