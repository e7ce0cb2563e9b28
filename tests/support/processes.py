"""A test module run as a crawler process (its ``__main__`` part), with a JSON report at the end."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from twisted.internet import defer, protocol

SUPPORT = Path(__file__).resolve().parent


class ScriptProcess(protocol.ProcessProtocol):
    """``script config`` in a subprocess; ``ended`` fires with the last stdout line as JSON.

    The report gets ``exit`` (the exit code), ``ended_at`` (time.monotonic())
    and ``stderr`` (its tail) added. Lines ``{"event": kind, "url": url, ...}``
    the script prints before are events: ``when(kind, url)`` fires at the first.
    """

    def __init__(self, script: Path, config: dict[str, Any]) -> None:
        self.out = bytearray()
        self.err = bytearray()
        self.ended: defer.Deferred[dict[str, Any]] = defer.Deferred()
        self.events: list[dict[str, Any]] = []
        self._read = 0
        self._waiting: list[tuple[str, str, defer.Deferred[Any]]] = []
        from twisted.internet import reactor

        env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
        # The script imports the shared test helpers, as pytest does (setup.cfg pythonpath).
        env["PYTHONPATH"] = os.pathsep.join([str(SUPPORT), env.get("PYTHONPATH", "")])
        self.transport_ = reactor.spawnProcess(  # type: ignore[attr-defined]
            self, sys.executable, [sys.executable, str(script), json.dumps(config)], env=env
        )

    def outReceived(self, data: bytes) -> None:
        self.out += data
        end = self.out.rfind(b"\n") + 1
        for line in self.out[self._read : end].decode().splitlines():
            event = json.loads(line) if line.startswith("{") else {}
            if "event" in event:  # not the final report
                self._seen(event)
        self._read = end

    def _seen(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        for waiting in list(self._waiting):
            kind, url, waiter = waiting
            if kind == event["event"] and url in ("", event["url"]):
                self._waiting.remove(waiting)
                waiter.callback(self)

    def _has(self, kind: str, url: str) -> bool:
        return any(e["event"] == kind and url in ("", e["url"]) for e in self.events)

    def when(self, kind: str, url: str = "") -> defer.Deferred[Any]:
        """Fires (with this process) at its first event ``kind`` for ``url`` ("": any)."""
        waiter: defer.Deferred[Any] = defer.Deferred()
        if self._has(kind, url):
            waiter.callback(self)
        else:
            self._waiting.append((kind, url, waiter))
        return waiter

    def errReceived(self, data: bytes) -> None:
        self.err += data

    def kill(self) -> None:
        self.transport_.signalProcess("KILL")

    def interrupt(self) -> None:
        self.transport_.signalProcess("INT")

    def processEnded(self, reason: Any) -> None:
        lines = self.out.decode().strip().splitlines()
        report = json.loads(lines[-1]) if lines else {}
        report["ended_at"] = time.monotonic()
        report["exit"] = reason.value.exitCode
        report["stderr"] = self.err.decode(errors="replace")[-4000:]
        self.ended.callback(report)
