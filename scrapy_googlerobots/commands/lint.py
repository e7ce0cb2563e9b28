"""Lint a robots.txt the way Google reads it: one diagnostic per problem line.

A consumer of the core's line scanner (:func:`~scrapy_googlerobots.robotstxt.scan_lines`),
like the rule compiler: it sees the same keys, values and per-line flags
(accepted typo, missing colon, line too long) the matcher sees.

Errors are lines Google ignores or reads differently from what they seem to
say; everything else worth knowing is a warning. Standard library only.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

from scrapy_googlerobots.robotstxt import (
    GOOGLE_MAX_SIZE,
    MAX_LINE_LENGTH,
    USAGE_DIRECTIVES,
    USAGE_VOCABULARIES,
    LineKind,
    RobotsLine,
    parse_usage_line,
    product_token,
    scan_lines,
)

__all__ = ["Diagnostic", "lint"]

Severity = Literal["error", "warning"]

_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\n\v\f\r"
_CANONICAL_KEYS = {
    LineKind.USER_AGENT: b"user-agent",
    LineKind.ALLOW: b"allow",
    LineKind.DISALLOW: b"disallow",
    LineKind.SITEMAP: b"sitemap",
}
# Keys other crawlers act on; Google ignores them (SPEC A7), which is worth a
# warning but does not make the line a mistake.
_OTHER_CRAWLERS_KEYS = frozenset(
    [
        b"crawl-delay",
        b"host",
        b"clean-param",
        b"request-rate",
        b"visit-time",
    ]
)
# Keys that look like instructions to Google but are not (Google dropped its
# unofficial noindex support in 2019): errors, since the line seems to do something.
_UNSUPPORTED_KEYS = frozenset([b"noindex", b"nofollow", b"noarchive"])
_KNOWN_KEYS = [
    "user-agent", "allow", "disallow", "sitemap", "crawl-delay", "content-usage", "content-signal"
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a line."""

    severity: Severity
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Everything wrong with one line; ``severity``/``code`` are those of the worst problem."""

    line: int
    problems: tuple[Problem, ...]

    @property
    def severity(self) -> Severity:
        return self.problems[0].severity

    @property
    def code(self) -> str:
        return self.problems[0].code

    @property
    def codes(self) -> list[str]:
        return [p.code for p in self.problems]

    @property
    def message(self) -> str:
        return "; ".join(p.message for p in self.problems)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "line": self.line,
            "severity": self.severity,
            "code": self.code,
            "codes": self.codes,
            "message": self.message,
        }


def _show(value: bytes, limit: int = 60) -> str:
    text = value.decode("utf-8", "backslashreplace")
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _error(code: str, message: str) -> Problem:
    return Problem("error", code, message)


def _warning(code: str, message: str) -> Problem:
    return Problem("warning", code, message)


def _key_problems(line: RobotsLine) -> list[Problem]:
    """Keys Google does not know, or knows under another spelling."""
    key = line.key.lower()
    if line.kind is LineKind.OTHER:
        if key.startswith(_BOM):
            return [
                _error(
                    "unknown-key",
                    "the line starts with a byte-order mark (files joined together?), "
                    "so Google does not recognise its key and ignores it",
                )
            ]
        if key in USAGE_DIRECTIVES:
            return []  # Google ignores it; the crawler honours it (see _usage_problems)
        if key in _OTHER_CRAWLERS_KEYS:
            return [
                _warning(
                    "ignored-by-google",
                    f"{_show(line.key)} is ignored by Google (other crawlers may follow it)",
                )
            ]
        if key in _UNSUPPORTED_KEYS:
            return [
                _error(
                    "unknown-key",
                    f"Google does not support {_show(line.key)} in robots.txt "
                    "and ignores the line (use a robots meta tag or X-Robots-Tag header)",
                )
            ]
        close = difflib.get_close_matches(key.decode("latin-1"), _KNOWN_KEYS, n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return [
            _error("unknown-key", f"unknown key {_show(line.key)}{hint}: Google ignores the line")
        ]
    assert line.kind is not None
    canonical = _CANONICAL_KEYS[line.kind]
    # "user agent" (a typo Google accepts) has a space of its own; after it, or
    # in any other key, a space means the key swallowed a word.
    words = key[len(b"user agent") :] if key.startswith(b"user agent") else key
    if any(byte in words for byte in b" \t"):
        # "disallow /a:/b": the first ':' splits, so the key swallowed a word.
        return [
            _error(
                "misread-key",
                f"Google splits at the first ':' and reads key {_show(line.key)} as "
                f"{canonical.decode()!r} with value {_show(line.value)}",
            )
        ]
    if line.missing_colon:
        return [
            _warning(
                "missing-colon",
                f"no ':' after {_show(line.key)}; Google accepts the space "
                "but other crawlers may not",
            )
        ]
    if key != canonical:
        kind = "a typo Google accepts" if line.acceptable_typo else "Google matches keys by prefix"
        return [
            _warning(
                "accepted-typo",
                f"{_show(line.key)} is read as {canonical.decode()!r} "
                f"({kind}; other crawlers may not)",
            )
        ]
    return []


def _value_problems(line: RobotsLine) -> list[Problem]:
    """Values Google reads differently from what they seem to say."""
    value = line.value
    if line.kind in (LineKind.ALLOW, LineKind.DISALLOW):
        name = "allow" if line.kind is LineKind.ALLOW else "disallow"
        if not value:
            effect = "disallows nothing" if name == "disallow" else "has no effect"
            return [_warning("empty-rule", f"{name!r} without a path {effect}")]
        if value[:1] not in (b"/", b"*"):
            return [
                _warning(
                    "pattern-start",
                    f"pattern {_show(value)} does not start with '/' or '*', so it matches no URL",
                )
            ]
    elif line.kind is LineKind.USER_AGENT:
        return _user_agent_problems(value)
    elif line.kind is LineKind.OTHER and line.key.lower() in USAGE_DIRECTIVES:
        return _usage_problems(USAGE_DIRECTIVES[line.key.lower()], value)
    elif line.kind is LineKind.SITEMAP and not value.lower().startswith((b"http://", b"https://")):
        if not value:
            return [_warning("empty-sitemap", "'sitemap' without a URL is ignored")]
        return [_warning("sitemap-url", f"sitemap {_show(value)} is not an absolute http(s) URL")]
    return []


# A Dictionary member's key as written, upper case included (where a key can start).
_KEY_AS_WRITTEN = re.compile(r"(?:^|,)[ \t]*([A-Za-z*][A-Za-z0-9_.*-]*)")


def _usage_problems(directive: str, value: bytes) -> list[Problem]:
    """``Content-Usage`` / ``Content-Signal`` values that do not say what they seem to."""
    parsed = parse_usage_line(directive, value)
    problems: list[Problem] = []
    if parsed.path and parsed.path[:1] not in (b"/", b"*"):
        problems.append(
            _warning(
                "usage-path",
                f"path {_show(parsed.path)} does not start with '/' or '*', "
                "so the rule matches no URL",
            )
        )
    keys, tokens = USAGE_VOCABULARIES[directive]
    other = next(name for name in USAGE_VOCABULARIES if name != directive)
    other_keys, other_tokens = USAGE_VOCABULARIES[other]
    if parsed.members is None:
        text = parsed.preferences.decode("utf-8", "backslashreplace")
        upper = [k for k in _KEY_AS_WRITTEN.findall(text) if k != k.lower()]
        if upper:
            problems.append(
                _error(
                    "usage-key-case",
                    f"key {upper[0]!r} has upper-case letters: keys are lower case "
                    f"({upper[0].lower()!r}), so the value is not a valid Dictionary "
                    "and every category of the line is unknown",
                )
            )
        else:
            problems.append(
                _error(
                    "usage-syntax",
                    f"{_show(parsed.preferences)} is not a structured-field Dictionary "
                    "(RFC 9651: 'key=token, key=token'), so every category of the line "
                    "is unknown",
                )
            )
        return problems
    if not parsed.members:
        problems.append(_warning("usage-empty", f"{directive!r} without a preference"))
    for key, (bare, _) in parsed.members.items():
        if key not in keys:
            if key in other_keys:
                problems.append(
                    _error(
                        "usage-category",
                        f"{key!r} is a {other} category; {directive} calls it "
                        f"{next(k for k, c in keys.items() if c == other_keys[key])!r} "
                        "(the line is ignored for it)",
                    )
                )
            else:
                known = ", ".join(repr(k) for k in keys)
                problems.append(
                    _warning(
                        "usage-category",
                        f"unknown category {key!r} is ignored ({directive} knows {known})",
                    )
                )
            continue
        if isinstance(bare, str) and bare in tokens and bare.__class__ is not str:
            continue  # a Token y / n (yes / no)
        written = str(bare) if isinstance(bare, str) else None
        expected = " or ".join(repr(t) for t in tokens)
        if written is not None and written in other_tokens and bare.__class__ is not str:
            meaning = "y" if other_tokens[written] else "n"
            hint = next(t for t in tokens if t.startswith(meaning))
            message = f"{directive} takes {expected}, not {written!r} (did you mean {hint!r}?)"
        else:
            message = f"the value of {key!r} is not the token {expected}"
        problems.append(_error("usage-value", f"{message}: {key!r} stays unknown"))
    return problems


def _user_agent_problems(value: bytes) -> list[Problem]:
    if value.startswith(b"*"):
        rest = value[1:]
        if not rest:
            return []
        if rest[:1] in _WHITESPACE:
            return [_warning("user-agent-token", f"{_show(value)} is read as '*'")]
        return [
            _warning(
                "user-agent-token", f"{_show(value)} matches no crawler (only a lone '*' is global)"
            )
        ]
    token = product_token(value.decode("latin-1"))
    if not token:
        return [
            _warning(
                "user-agent-token",
                f"{_show(value)} matches no crawler: a product token is letters, '_' and '-'",
            )
        ]
    if token.encode("latin-1") != value:
        return [
            _warning(
                "user-agent-token",
                f"{_show(value)} is read as {token!r}: Google keeps the leading "
                "letters, '_' and '-' only",
            )
        ]
    return []


def _encoding_problems(line: RobotsLine) -> list[Problem]:
    problems = []
    if b"\0" in line.raw:
        problems.append(
            _warning("nul-byte", "a NUL byte ends the line for Google; what follows it is ignored")
        )
    try:
        line.raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(
            _warning(
                "invalid-utf8",
                "not valid UTF-8: Google matches the bytes as they are "
                "(percent-encoded), which is not what a UTF-8 URL contains",
            )
        )
    return problems


def _bom_problem(body: bytes) -> Problem | None:
    if body.startswith(_BOM):
        return _warning(
            "bom",
            "the file starts with a UTF-8 byte-order mark: Google skips it, "
            "other crawlers may read it as part of the first key",
        )
    if body[:1] == _BOM[:1]:  # "EF", "EF BB", "EF x…": Google skips what matches the BOM
        return _warning(
            "bom", "the file starts with an incomplete byte-order mark, which Google skips"
        )
    return None


def _line_at_end(body: bytes) -> int:
    """Number of the line that the end of ``body`` falls in (CR, LF and CRLF each end a line)."""
    return body.count(b"\r") + body.count(b"\n") - body.count(b"\r\n") + 1


def lint(body: bytes, *, truncated: bool = False) -> list[Diagnostic]:
    """Diagnostics for ``body``, in line order, at most one per line.

    ``body`` is what was read (up to Google's limit); ``truncated`` says the
    content went on past it.
    """
    body = body[:GOOGLE_MAX_SIZE]
    found: dict[int, list[Problem]] = {}
    in_group = False
    for line in scan_lines(body):
        problems: list[Problem] = []
        if line.too_long:
            problems.append(
                _error(
                    "line-too-long",
                    f"the line is cut after {MAX_LINE_LENGTH:,} bytes; "
                    "Google ignores the rest of it",
                )
            )
        if line.kind is None:
            if not (line.is_empty or line.is_comment):
                problems.append(
                    _error(
                        "unparsable-line",
                        "Google cannot read this line (it needs 'key: value') and ignores it",
                    )
                )
        else:
            if line.kind in (LineKind.ALLOW, LineKind.DISALLOW) and not in_group:
                problems.append(
                    _error(
                        "rule-outside-group", "rule before any 'user-agent' line: Google ignores it"
                    )
                )
            elif not in_group and line.key.lower() in USAGE_DIRECTIVES:
                problems.append(
                    _error(
                        "rule-outside-group",
                        "usage rule before any 'user-agent' line: it applies to no crawler",
                    )
                )
            in_group = in_group or line.kind is LineKind.USER_AGENT
            problems += _key_problems(line)
            problems += _value_problems(line)
        problems += _encoding_problems(line)
        if problems:
            found[line.number] = problems
    bom = _bom_problem(body)
    if bom is not None:
        found.setdefault(1, []).append(bom)
    if truncated:
        # First on its line: it is why the line reads as it does.
        found.setdefault(_line_at_end(body), []).insert(
            0,
            _error(
                "past-size-limit",
                f"content past {GOOGLE_MAX_SIZE:,} bytes (500 KiB) is ignored by Google: "
                + (
                    "this line and the lines after it are not read"
                    if body.endswith((b"\n", b"\r"))
                    else "this line is cut there and the lines after it are not read"
                ),
            ),
        )
    return [
        Diagnostic(number, tuple(sorted(problems, key=lambda p: p.severity != "error")))
        for number, problems in sorted(found.items())
    ]
