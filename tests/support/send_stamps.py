"""When Scrapy's download slot sent each request: what pacing tests measure.

A slot sends a request only once its ``delay`` has passed since it sent the
one before, by its own stamp (``Slot.lastseen``, set as it hands the request
to the download handler). That gap is all a crawler controls. The times a
:class:`~servers.Site` records add the way to the server, and client and
server share one process and one reactor here: if the process stalls right
after a send (a garbage collection in a long test session, a process left
without a CPU on a loaded machine), that request arrives late and the next
one, sent on time, arrives early by as much. A full-suite run on a loaded
2-core machine once measured 0.53 s at the server between two requests the
slot sent 0.8 s apart.

:data:`HANDLERS` (``DOWNLOAD_HANDLERS``) puts, in headers the site records,
the slot's stamp and the order of each send (:func:`sent`), and the slot's
stamp of its last send when the request reached the downloader
(``request_reached_downloader``, the moment the pacer adjusts the slot): a
send stamped later left after that moment.
``SEND_STAMPS_STALL`` (``{url: seconds}``) blocks the process for that long
just after the slot stamps that URL, before it is written: the stall above,
on demand.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, NamedTuple

from scrapy import Request, signals
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

from scrapy_googlerobots.runtime.scrapy_compat import downloader_slot

SENT_HEADER = "X-Test-Sent"
REACHED_HEADER = "X-Test-Reached-After"
HANDLERS = {"http": "send_stamps.SendStampingHandler"}
_REACHED_META = "_test_last_send_when_reaching"

# Newer Scrapy awaits download_request(request); older calls
# download_request(request, spider) for a Deferred.
_ASYNC = inspect.iscoroutinefunction(HTTP11DownloadHandler.download_request)


class Sent(NamedTuple):
    """One request as its slot sent it."""

    order: int  # 1 for the crawl's first send
    at: float  # the slot's stamp (its own clock: compare only with other stamps)
    reached_after: float  # the slot's last send stamp when it reached the downloader
    path: str


def sent(record: Any) -> Sent:
    """The send of a request a Site recorded (a crawl run with :data:`HANDLERS`)."""
    stamp = record.header(SENT_HEADER)
    reached = record.header(REACHED_HEADER)
    assert stamp is not None and reached is not None, f"{record.path}: not sent by send_stamps"
    order, at = stamp.split()
    return Sent(int(order), float(at), float(reached), record.path)


class SendStampingHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler, writing the slot's send stamp into each request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (crawler) on newer Scrapy, (settings, crawler) on older.
        self._stamp_crawler = kwargs.get("crawler") or args[-1]
        self._sends = 0
        self._stalls: dict[str, float] = dict(
            self._stamp_crawler.settings.getdict("SEND_STAMPS_STALL")
        )
        # Built, at the latest, for the crawl's first send: a request that reached
        # the downloader before is taken as reaching it before any send (0).
        self._stamp_crawler.signals.connect(
            self._reached, signal=signals.request_reached_downloader
        )

    def _reached(self, request: Request, **_: Any) -> None:
        request.meta[_REACHED_META] = self._slot(request).lastseen

    def _slot(self, request: Request) -> Any:
        slot = downloader_slot(self._stamp_crawler.engine, request.meta.get("download_slot"))
        assert slot is not None, f"{request.url}: no download slot"
        return slot

    def _stamp(self, request: Request) -> None:
        self._sends += 1
        request.headers[SENT_HEADER] = f"{self._sends} {self._slot(request).lastseen!r}"
        request.headers[REACHED_HEADER] = repr(request.meta.get(_REACHED_META, 0.0))
        stall = self._stalls.pop(request.url, None)
        if stall:
            time.sleep(stall)  # the stall itself: nothing else may run meanwhile

    if _ASYNC:

        async def download_request(self, request: Request, *args: Any) -> Any:
            self._stamp(request)
            return await super().download_request(request, *args)

    else:

        def download_request(self, request: Request, spider: Any) -> Any:  # type: ignore[override]
            self._stamp(request)
            return super().download_request(request, spider)
