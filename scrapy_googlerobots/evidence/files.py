"""Evidence files: named once per process and run, appended to one whole record at a time.

A record reaches the operating system in one ``write`` as soon as it is made,
so a process killed outright (SIGKILL) loses at most the record being
written, and every file stays readable up to its last whole record. Syncing
to the disk (``fsync``) is left to a schedule (:meth:`AppendFile.sync`), never
done per record.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

__all__ = ["AppendFile", "run_id"]


def run_id(now: float | None = None) -> str:
    """A name no other process or run gets: UTC time, process id, random bits
    (``20261128T101502Z-4242-9f3a1c``)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}"


class AppendFile:
    """A file of ``directory`` created on the first record (never over an existing one)."""

    __slots__ = ("_fd", "_made", "bytes", "path", "records")

    def __init__(self, directory: Path, name: str) -> None:
        self.path = directory / name
        self._fd: int | None = None
        self._made = False
        self.records = 0
        self.bytes = 0

    def write(self, data: bytes) -> None:
        """Hand one whole record to the operating system (no disk sync)."""
        fd = self._fd
        if fd is None:
            if self._made:
                # A record after the close (a request refused as the crawl stops): our file.
                fd = self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # O_EXCL: a name taken (another process, an earlier run) is never overwritten.
                fd = self._fd = os.open(
                    self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644
                )
                self._made = True
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        self.records += 1
        self.bytes += len(data)

    def sync(self) -> None:
        """Make what was written durable (``fsync``): on a schedule or at close, not per record."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    @property
    def opened(self) -> bool:
        """Whether the file is made (its first record written)."""
        return self._made
