"""Why a policy file's download failed: the site unreachable, or a bug in the crawler.

Google calls a robots.txt *unreachable* when the server answers 5xx or 429 or
cannot be reached: network and DNS errors, timeouts, connections lost or
refused, TLS failures. Only that defers the origin's requests (backoff,
``ROBOTSTXT_UNREACHABLE_MAX_WAIT``). Any other exception comes from the crawl
itself — a downloader middleware, an extension or a handler raising
``ZeroDivisionError`` for every request — and waiting would never end it:
:func:`is_unreachable` tells the two apart, :func:`component_of` names the
code that raised it, for the one ERROR line and the requests' errbacks.
"""

from __future__ import annotations

import sys
from types import TracebackType

__all__ = ["component_of", "is_unreachable"]

# The network's failures, by name (matched against the exception's classes, so
# nothing is imported: some exist only on some Scrapy / Twisted versions, and
# importing Scrapy's HTTP handler would install a reactor).
_NETWORK_NAMES = frozenset(
    (
        "scrapy.exceptions.CannotResolveHostError",
        "scrapy.exceptions.DownloadCancelledError",
        "scrapy.exceptions.DownloadConnectionRefusedError",
        "scrapy.exceptions.DownloadFailedError",
        "scrapy.exceptions.DownloadTimeoutError",
        "scrapy.exceptions.ResponseDataLossError",
        "scrapy.exceptions.UnsupportedURLSchemeError",
        "scrapy.exceptions.NotSupported",
        "scrapy.core.downloader.handlers.http11.TunnelError",
        "twisted.internet.error.ConnectError",
        "twisted.internet.error.ConnectionLost",
        "twisted.internet.error.ConnectionDone",
        "twisted.internet.error.DNSLookupError",
        "twisted.internet.error.TimeoutError",
        "twisted.internet.error.TCPTimedOutError",
        "twisted.internet.error.SSLError",
        "twisted.internet.defer.TimeoutError",
        "twisted.internet.defer.CancelledError",
        "twisted.web._newclient.ResponseFailed",
        "twisted.web._newclient.ResponseNeverReceived",
        "twisted.web._newclient.RequestTransmissionFailed",
        "twisted.web.error.Error",
        "twisted.protocols.ftp.FTPError",
        "twisted.protocols.ftp.CommandFailed",
        "OpenSSL.SSL.Error",
    )
)

# Code that raises only what the network did: an exception from deeper in
# these is the site's (or the network's), whatever its type.
_NETWORK_MODULES = (
    "twisted.",
    "scrapy.core.downloader.",
    "scrapy.core.http2.",
    "h2.",
    "OpenSSL.",
    "ssl",
    "socket",
    "asyncio.",
)


# Where Twisted raises again an exception a Deferred carried (awaiting it): its
# traceback was cut there (Failure.cleanFailure); where it was first raised is
# in the frames of the Failure Twisted attaches to it (``__failure__``).
_RERAISERS = frozenset(("twisted.internet.defer", "twisted.python.failure"))


def _innermost(tb: TracebackType | None) -> TracebackType | None:
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def _raised_at(exc: BaseException) -> tuple[str, str] | None:
    """Where ``exc`` was raised: its module and ``Class.method`` (or function), or None."""
    last = _innermost(exc.__traceback__)
    if last is not None:
        frame = last.tb_frame
        module = str(frame.f_globals.get("__name__", "?"))
        if module not in _RERAISERS:
            code = frame.f_code
            owner = frame.f_locals.get("self")
            if owner is not None:
                kind = type(owner)
                return kind.__module__, f"{kind.__qualname__}.{code.co_name}"
            return module, getattr(code, "co_qualname", code.co_name)
    frames = getattr(getattr(exc, "__failure__", None), "frames", None)
    if frames:
        name, path = str(frames[-1][0]), str(frames[-1][1])
        return _module_of(path), name
    if last is None:
        return None
    return str(last.tb_frame.f_globals.get("__name__", "?")), last.tb_frame.f_code.co_name


def _module_of(path: str) -> str:
    """The name of the loaded module whose file is ``path`` ("?" if none is)."""
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) == path:
            return name
    return "?"


def is_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` says the site could not be reached (Google's "unreachable")."""
    if isinstance(exc, (OSError, TimeoutError)) or any(
        f"{kind.__module__}.{kind.__qualname__}" in _NETWORK_NAMES for kind in type(exc).__mro__
    ):
        return True
    raised = _raised_at(exc)
    return raised is not None and raised[0].startswith(_NETWORK_MODULES)


def component_of(exc: BaseException) -> str:
    """The code that raised ``exc``: ``module.Class.method`` (or ``module.function``)."""
    raised = _raised_at(exc)
    if raised is None:
        return "an unknown component"
    return f"{raised[0]}.{raised[1]}"
