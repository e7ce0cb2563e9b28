"""How a count reads in a log line or the summary: "1 request", "2 requests"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` and the noun phrase for it: ``singular`` for 1, else ``plural``
    (default: ``singular`` + "s"). A phrase may carry its verb ("request waits",
    "requests wait")."""
    return f"{count} {singular if count == 1 else plural or singular + 's'}"
