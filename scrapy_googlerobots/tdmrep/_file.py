"""``/.well-known/tdmrep.json``: parse once, then find the rule for each URL.

The file is a JSON array of rules ``{"location": pattern, "tdm-reservation":
0|1, "tdm-policy": url}``; the first rule whose ``location`` matches a URL's
path decides ("The most specific match is the first in sequence"), unlike
robots.txt where the longest pattern wins.

Diagnostic codes (see :class:`TdmDiagnostic`):

=======================  ========  ==============================================
code                     severity  meaning
=======================  ========  ==============================================
``not-json``             error     not valid JSON: the origin does not use the file
``not-array``            error     JSON, but not an array: same
``too-large``            warning   cut at ``max_size``; rules past the cut unread
``encoding``             warning   not valid UTF-8 (read byte for byte anyway)
``bom``                  info      a UTF-8 byte order mark (ignored)
``no-rules``             info      an empty array: every URL is unset
``rule-not-object``      error     an array entry is not an object (skipped)
``missing-location``     error     no ``location``: the rule never applies
``bad-location``         error     ``location`` is not a string: same
``location-never-matches`` warning   does not start with ``/`` or ``*``: same
``unreachable-rule``     warning   an earlier rule matches every path this one does
``missing-reservation``  error     no ``tdm-reservation``: unset where it matches
``bad-reservation``      error     not the number 0 or 1: unset where it matches
``bad-policy``           error     ``tdm-policy`` not an absolute http(s) URL: unset
``policy-ignored``       warning   ``tdm-policy`` with ``tdm-reservation: 0``
``duplicate-key``        warning   a key twice in one rule (the last one is used)
``unknown-key``          info      a key the spec does not define (ignored)
=======================  ========  ==============================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE

from ._diagnostics import Severity, TdmDiagnostic
from ._pattern import compile_location, literal_head, location_matches, normalise_path
from ._resolve import TdmVerdict, resolve
from ._rule import WELL_KNOWN_PATH, TdmRule
from ._values import check_policy_url

__all__ = ["WELL_KNOWN_PATH", "TdmRepFile", "TdmRule", "parse_tdmrep_json"]

#: Where the spec puts the file; also the name rules are described with until
#: the caller passes the URL it fetched.

_KEYS = ("location", "tdm-reservation", "tdm-policy")
_BOM = b"\xef\xbb\xbf"
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, pos: int = 0) -> int:
    """The position of the first non-whitespace character at or after ``pos``."""
    found = _WS.match(text, pos)
    return found.end() if found is not None else pos


# Reports one problem of the rule being read: (severity, code, message).
_Add = Callable[[Severity, str, str], None]


@dataclass(frozen=True, slots=True)
class TdmRepFile:
    """A parsed tdmrep.json: its rules in file order and what was wrong with it."""

    rules: tuple[TdmRule, ...]
    """Every array entry that is an object, in order (``index`` skips the others)."""
    diagnostics: tuple[TdmDiagnostic, ...]
    valid: bool
    """Whether the body was a JSON array at all; False means the origin does not
    use the file ("Failure to provide access to such a representation implies
    that the origin server does not implement this protocol")."""
    url: str = WELL_KNOWN_PATH
    truncated: bool = False
    """Whether the body was longer than ``max_size`` (rules past the cut unread)."""

    def match(self, url_or_path: str | bytes) -> TdmRule | None:
        """The first rule whose ``location`` matches; None: ``tdm-reservation`` is unset."""
        path = normalise_path(url_or_path)
        for rule in self.rules:
            if rule.pattern is not None and location_matches(rule.pattern, path):
                return rule
        return None

    def explain(self, url_or_path: str | bytes) -> TdmVerdict:
        """The verdict of this file alone for a URL (no header, no meta tag)."""
        return resolve(self.match(url_or_path))


class _Object(dict[str, object]):
    """A JSON object that remembers which keys it saw more than once."""

    duplicates: tuple[str, ...] = ()

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, object]]) -> _Object:
        obj = cls(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            repeated: dict[str, None] = {}
            for key, _ in pairs:
                if key in seen:
                    repeated[key] = None
                seen.add(key)
            obj.duplicates = tuple(repeated)
        return obj


def _kind(value: object) -> str:
    """The JSON name of a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _show(value: object, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Syntax(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


class _Builder:
    """Collects rules and diagnostics while the array is read."""

    def __init__(self, text: str, url: str) -> None:
        self.text = text
        self.url = url
        self.rules: list[TdmRule] = []
        self.entries = 0
        # Heads of the earlier rules that match every path starting with them.
        self._prefix_rules: dict[bytes, TdmRule] = {}
        self.diagnostics: list[TdmDiagnostic] = []
        self._line_pos = 0
        self._line = 1

    def line_of(self, pos: int) -> int:
        # Positions only grow while the array is read: count newlines once.
        if pos >= self._line_pos:
            self._line += self.text.count("\n", self._line_pos, pos)
        else:
            self._line = self.text.count("\n", 0, pos) + 1
        self._line_pos = pos
        return self._line

    def add(
        self,
        severity: Severity,
        code: str,
        message: str,
        rule: int | None = None,
        line: int | None = None,
    ) -> None:
        self.diagnostics.append(TdmDiagnostic(severity, code, message, rule, line))

    def rule(self, index: int, line: int, entry: object) -> None:
        def add(severity: Severity, code: str, message: str) -> None:
            self.add(severity, code, f"rule {index}: {message}", index, line)

        if not isinstance(entry, dict):
            add("error", "rule-not-object", f"{_kind(entry)}, not an object; skipped")
            return
        for key in getattr(entry, "duplicates", ()):
            add("warning", "duplicate-key", f'"{key}" appears more than once; the last is used')
        for key in entry:
            if key not in _KEYS:
                add("info", "unknown-key", f"unknown key {_show(key)} ignored{_hint(key)}")

        location, pattern = self._location(entry, add)
        reservation = self._reservation(entry, add)
        policy = self._policy(entry, reservation, add)
        self.rules.append(TdmRule(index, line, location, reservation, policy, self.url, pattern))
        if pattern is not None:
            self._check_reachable(pattern, add)

    @staticmethod
    def _location(entry: dict[str, object], add: _Add) -> tuple[str | None, bytes | None]:
        if "location" not in entry:
            add("error", "missing-location", 'no "location"; the rule never applies')
            return None, None
        location = entry["location"]
        if not isinstance(location, str):
            add(
                "error",
                "bad-location",
                f'"location" is {_kind(location)}, not a string; the rule never applies',
            )
            return None, None
        pattern = compile_location(location)
        if pattern is None:
            why = (
                "a pattern, not a URL: write the path"
                if "://" in location
                else "paths start with /"
            )
            add(
                "warning",
                "location-never-matches",
                f'"location" {_show(location)} does not start with / or *, so it matches '
                f"no URL ({why})",
            )
        return location, pattern

    @staticmethod
    def _reservation(entry: dict[str, object], add: _Add) -> int | None:
        if "tdm-reservation" not in entry:
            add(
                "error",
                "missing-reservation",
                'no "tdm-reservation"; unset for the URLs this rule matches',
            )
            return None
        value = entry["tdm-reservation"]
        # JSON true is Python True, which == 1: test the type first.
        if type(value) is int and value in (0, 1):
            return value
        hint = ""
        if isinstance(value, str) and value.strip() in ("0", "1"):
            hint = f" (write the number {value.strip()}, not a string)"
        elif isinstance(value, bool):
            hint = f" (write {int(value)}, not {_show(value)})"
        elif isinstance(value, float) and value in (0, 1):
            hint = f" (write {int(value)})"
        add(
            "error",
            "bad-reservation",
            f'"tdm-reservation" is {_show(value)}, not 0 or 1{hint}; unset for the URLs '
            "this rule matches",
        )
        return None

    @staticmethod
    def _policy(entry: dict[str, object], reservation: int | None, add: _Add) -> str | None:
        if "tdm-policy" not in entry:
            return None
        value = entry["tdm-policy"]
        if not isinstance(value, str):
            add("error", "bad-policy", f'"tdm-policy" is {_kind(value)}, not a URL; ignored')
            return None
        url, why = check_policy_url(value)
        if url is None:
            add("error", "bad-policy", f'"tdm-policy" {_show(value)} {why}; ignored')
            return None
        if reservation == 0:
            add(
                "warning",
                "policy-ignored",
                '"tdm-policy" beside "tdm-reservation": 0 is not processed',
            )
            return None
        return url

    def _check_reachable(self, pattern: bytes, add: _Add) -> None:
        # Looks up every prefix of this rule's head among the earlier
        # prefix-only heads: linear in the pattern, not in the rule count.
        head, prefix_only = literal_head(pattern)
        shadows = self._prefix_rules
        for end in range(len(head) + 1):
            earlier = shadows.get(head[:end])
            if earlier is not None:
                add(
                    "warning",
                    "unreachable-rule",
                    f"never decides: rule {earlier.index} (location "
                    f"{_show(earlier.location)}) matches every path it matches, and the "
                    "first matching rule wins",
                )
                return
        if prefix_only:
            shadows[head] = self.rules[-1]

    def array(self, decoder: json.JSONDecoder, pos: int) -> None:
        """Read the array whose ``[`` is at ``pos``; raises :class:`_Syntax`."""
        text = self.text
        pos = _skip_ws(text, pos + 1)
        if text.startswith("]", pos):
            return self._after(pos + 1)
        index = 0
        while True:
            index += 1
            try:
                entry, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                message = exc.msg
                if text.startswith("]", pos) and index > 1:
                    message = "a comma before ]"
                raise _Syntax(message, exc.pos) from None
            except (ValueError, RecursionError) as exc:
                # Too deeply nested, or an integer too long to convert.
                raise _Syntax(str(exc) or type(exc).__name__, pos) from None
            self.entries = index
            self.rule(index, self.line_of(pos), entry)
            pos = _skip_ws(text, end)
            if text.startswith(",", pos):
                pos = _skip_ws(text, pos + 1)
            elif text.startswith("]", pos):
                return self._after(pos + 1)
            else:
                raise _Syntax("expecting , or ] after a rule", pos)

    def _after(self, pos: int) -> None:
        pos = _skip_ws(self.text, pos)
        if pos != len(self.text):
            raise _Syntax("extra data after the array", pos)


def _hint(key: str) -> str:
    folded = key.strip().lower().replace("_", "-").replace(" ", "-")
    for known in _KEYS:
        if folded in (known, known + "s", known.replace("-", "")):
            return f' (did you mean "{known}"?)'
    if folded in ("tdmreservation", "reservation"):
        return ' (did you mean "tdm-reservation"?)'
    if folded in ("tdmpolicy", "policy"):
        return ' (did you mean "tdm-policy"?)'
    return ""


def parse_tdmrep_json(
    body: bytes | str,
    *,
    url: str = WELL_KNOWN_PATH,
    max_size: int | None = GOOGLE_MAX_SIZE,
) -> TdmRepFile:
    """Parse a tdmrep.json body. Never raises.

    ``url`` names the file in explanations. ``max_size`` keeps that many
    leading bytes (robots.txt's 500 KiB by default); the rules complete within
    them are kept, as Google keeps the lines of a robots.txt's first 500 KiB --
    with the first match deciding, a URL gets the same verdict from them as
    from the whole file unless no kept rule matches it.
    """
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)
    notes: list[TdmDiagnostic] = []
    truncated = max_size is not None and len(data) > max(max_size, 0)
    if truncated:
        assert max_size is not None
        data = data[: max(max_size, 0)]
    if data.startswith(_BOM):
        # RFC 8259: parsers "MAY ignore the presence of a byte order mark".
        data = data[len(_BOM) :]
        notes.append(TdmDiagnostic("info", "bom", "a UTF-8 byte order mark (ignored)", line=1))
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        # Read on byte for byte: a stray Latin-1 byte in one pattern should not
        # cost the whole file, and surrogateescape gives the byte back for matching.
        text = data.decode("utf-8", "surrogateescape")
        if not (truncated and exc.start >= len(data) - 3):  # not just a character cut in two
            line = data.count(b"\n", 0, exc.start) + 1
            notes.append(
                TdmDiagnostic(
                    "warning", "encoding", f"not UTF-8 at byte {exc.start}: {exc.reason}", line=line
                )
            )
    builder = _Builder(text, url)
    builder.diagnostics.extend(notes)
    valid = _read(builder, truncated)
    if truncated:
        kept = len(builder.rules)
        builder.add(
            "warning",
            "too-large",
            f"the body is longer than {max_size} bytes; only its first {max_size} bytes "
            f"were read ({kept} rule{'s' if kept != 1 else ''})",
        )
    if valid and not builder.entries and not truncated:
        builder.add("info", "no-rules", "the file has no rules: every URL is unset")
    rules = tuple(builder.rules) if valid else ()
    return TdmRepFile(rules, tuple(builder.diagnostics), valid, url, truncated)


def _read(builder: _Builder, truncated: bool) -> bool:
    """Read the whole body into ``builder``; whether it was a JSON array."""
    text = builder.text
    decoder = json.JSONDecoder(object_pairs_hook=_Object.from_pairs)
    pos = _skip_ws(text)
    if pos == len(text):
        builder.add("error", "not-json", "the body is empty, not a JSON array")
        return False
    if text[pos] != "[":
        try:
            value = decoder.decode(text)
        except (ValueError, RecursionError):
            builder.add(
                "error",
                "not-json",
                f"not JSON (line {builder.line_of(pos)}): a tdmrep.json is a JSON array",
                line=builder.line_of(pos),
            )
            return False
        hint = " (put it in [ ])" if isinstance(value, dict) else ""
        builder.add("error", "not-array", f"the JSON is {_kind(value)}, not an array{hint}")
        return False
    try:
        builder.array(decoder, pos)
    except _Syntax as exc:
        if truncated:
            return True  # the cut, most likely: keep the rules read before it
        line = builder.line_of(exc.pos)
        column = exc.pos - text.rfind("\n", 0, exc.pos)
        builder.add(
            "error",
            "not-json",
            f"not JSON at line {line} column {column}: {exc.message}; no rule applies",
            line=line,
        )
        return False
    return True
