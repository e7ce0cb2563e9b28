"""``unavailable_after`` dates in the formats Google accepts.

Google asks for "a widely adopted format including, but not limited to
RFC 822, RFC 850, and ISO 8601" and its own examples use
``25 Jun 2010 15:00:00 PST`` and ``2020-09-21``. Every pattern here is
anchored and free of nested repetition, so parsing is linear in the input.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

__all__ = ["parse_date"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}

# RFC 822's named zones (the US ones and universal time); anything else named
# is refused rather than guessed.
_ZONES = {
    "z": 0,
    "ut": 0,
    "utc": 0,
    "gmt": 0,
    "est": -5,
    "edt": -4,
    "cst": -6,
    "cdt": -5,
    "mst": -7,
    "mdt": -6,
    "pst": -8,
    "pdt": -7,
}

_ZONE = r"(?P<zone>[A-Za-z]{1,5}|[+-]\d{2}(?::?\d{2})?)"
_TIME = r"(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,]\d{1,9})?)?"

# 2020-09-21, 2020-09-21T15:00, 2020-09-21 15:00:00.5+02:00, ...Z
_ISO = re.compile(
    r"(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[Tt ]\s*" + _TIME + r")?\s*" + _ZONE + r"?",
)

# RFC 822/1123 (Fri, 25 Jun 2010 15:00:00 PST), RFC 850 (Friday, 25-Jun-10
# 15:00:00 PST) and Google's own 25 Jun 2010 15:00:00 PST.
_DAY_FIRST = re.compile(
    r"(?:[A-Za-z]+\s*,?\s*)?(?P<d>\d{1,2})(?:\s+|\s*-\s*)(?P<mon>[A-Za-z]+)\.?"
    r"(?:\s+|\s*-\s*)(?P<y>\d{4}|\d{2})(?:\s*,?\s+" + _TIME + r")?\s*" + _ZONE + r"?",
)

# Month first: asctime (Fri Jun 25 15:00:00 2010) and June 25, 2010 [15:00 PST].
_MONTH_FIRST = re.compile(
    r"(?:[A-Za-z]+\s*,?\s+)?(?P<mon>[A-Za-z]+)\.?\s+(?P<d>\d{1,2}),?\s+"
    r"(?:(?P<t1>\d{1,2}:\d{2}(?::\d{2})?)\s+(?P<y1>\d{4})|(?P<y>\d{4})"
    r"(?:\s*,?\s+" + _TIME + r")?)\s*" + _ZONE + r"?",
)


def _zone(text: str | None) -> timezone | None:
    if text is None:
        # Google names no default; universal time is the only neutral one.
        return timezone.utc
    lowered = text.lower()
    if lowered in _ZONES:
        return timezone(timedelta(hours=_ZONES[lowered]))
    if text[0] in "+-":
        digits = text[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 23 or minutes > 59:
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        return timezone(-offset if text[0] == "-" else offset)
    return None


def _year(text: str) -> int:
    year = int(text)
    if len(text) == 2:
        # RFC 850's two-digit years, the POSIX strptime convention.
        year += 2000 if year < 69 else 1900
    return year


def parse_date(text: str) -> datetime | None:
    """The instant ``text`` names, timezone-aware, or None if it is not a date we read.

    Without a zone the time is taken as UTC; without a time, as midnight.
    """
    text = text.strip()
    if len(text) > 64:
        return None
    iso = _ISO.fullmatch(text)
    if iso is not None:
        year, month, day = int(iso["y"]), int(iso["mo"]), int(iso["d"])
        match = iso
    else:
        match_ = _DAY_FIRST.fullmatch(text) or _MONTH_FIRST.fullmatch(text)
        if match_ is None:
            return None
        match = match_
        month_number = _MONTHS.get(match["mon"].lower())
        if month_number is None:
            return None
        month, day = month_number, int(match["d"])
        groups = match.groupdict()
        year = _year(groups.get("y1") or match["y"])
        if groups.get("t1"):
            parts = [int(part) for part in groups["t1"].split(":")]
            hour, minute, second = parts[0], parts[1], parts[2] if len(parts) > 2 else 0
            return _build(year, month, day, hour, minute, second, match["zone"])
    hour = int(match["h"]) if match["h"] else 0
    minute = int(match["mi"]) if match["mi"] else 0
    second = int(match["s"]) if match["s"] else 0
    return _build(year, month, day, hour, minute, second, match["zone"])


def _build(
    year: int, month: int, day: int, hour: int, minute: int, second: int, zone: str | None
) -> datetime | None:
    tz = _zone(zone)
    if tz is None:
        return None
    # A leap second (23:59:60) is the next instant, as RFC 822 allows it.
    leap = second == 60
    try:
        moment = datetime(year, month, day, hour, minute, 59 if leap else second, tzinfo=tz)
    except ValueError:
        return None
    return moment + timedelta(seconds=1) if leap else moment
