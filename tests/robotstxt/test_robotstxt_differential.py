"""Differential tests: our core against Google's own C++ parser and matcher.

The oracle is google/robotstxt as wrapped by ``jwm.robotstxt``. For every file
of the shared corpus and for generated bodies, verdict AND deciding line must
agree with ``RobotsMatcher.AllowedByRobots`` / ``matching_line()``; the line
scanner must report the same directives and line metadata as
``ParseRobotsTxt``.
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.robotstxt import LineKind, parse, product_token, scan_lines
from scrapy_googlerobots.robotstxt._lines import escape_pattern

from corpus import CORPUS_FILES, MISSING

# CI runs must be reproducible: a fixed seed sequence and no example database.
settings.register_profile(
    "robotstxt-ci", max_examples=300, derandomize=True, database=None, deadline=None
)
settings.register_profile("robotstxt-dev", max_examples=300, deadline=None)
PROFILE = settings.get_profile("robotstxt-ci" if os.environ.get("CI") else "robotstxt-dev")

googlebot: Any = pytest.importorskip(
    "jwm.robotstxt.googlebot",
    reason="jwm.robotstxt (Google's C++ reference, test extra) is not installed",
)


UNKNOWN_AGENT = "zz-unknown-bot"
AGENTS: list[list[str]] = [
    ["googlebot"],
    ["bingbot"],
    [UNKNOWN_AGENT],
    ["googlebot-news", "googlebot"],
]


# --- the oracle -----------------------------------------------------------


def reference(body: bytes, agents: list[str], url: str) -> tuple[bool, int]:
    matcher = googlebot.RobotsMatcher()
    allowed = matcher.AllowedByRobots(body, agents, url)
    return bool(allowed), int(matcher.matching_line())


def mismatches(body: bytes, queries: list[tuple[list[str], str]]) -> list[str]:
    robots = parse(body)
    report = []
    for agents, url in queries:
        expected = reference(body, agents, url)
        verdict = robots.explain(url, agents)
        # allowed() has its own fast path (and a per-instance cache): check it too.
        allowed = robots.allowed(url, agents if len(agents) > 1 else agents[0])
        if (verdict.allowed, verdict.line) != expected or allowed is not expected[0]:
            report.append(
                f"{agents} {url!r}: ours {(verdict.allowed, verdict.line)} / {allowed},"
                f" reference {expected}"
            )
        # Usage preferences ride on the same grouping: a disallowed URL has none.
        usage = robots.usage(url, agents)
        if not expected[0] and usage:
            report.append(f"{agents} {url!r}: disallowed but usage {usage}")
    return report


# --- queries derived from a file's own rules --------------------------------


def _variants(pattern: str, rng: random.Random) -> Iterator[str]:
    """Paths that exercise one rule: itself, its wildcards filled, `$`, case, escapes."""
    core = pattern[:-1] if pattern.endswith("$") else pattern
    yield pattern
    for filler in ("", "x", "/a/b", rng.choice(["é", "%C3%A9", "ツ", "-_.~"])):
        filled = core.replace("*", filler)
        yield filled
        yield filled + rng.choice(["x", "/", "?q=1", ".html", "$"])
    yield core.upper()
    yield core.swapcase()
    yield core.replace("%", "%25") if "%" in core else core + "%2f"
    yield core.lower() + "?" + core  # the rule again, in the query string
    pieces = core.split("*")
    if len(pieces) > 1:  # the last piece overlapping the first: "/a*a$" vs "/a"
        yield pieces[0][: rng.randrange(len(pieces[0]) + 1)] + pieces[-1]
    slash = core.rfind("/")
    if slash >= 0:
        yield core[: slash + 1]  # the directory (index.htm rule)
        yield core[: slash + 1] + "index.html"
    if len(core) > 2:
        cut = rng.randrange(1, len(core))
        yield core[:cut]


GENERIC_URLS = [
    "http://example.com/",
    "http://example.com",
    "http://example.com?x=1",
    "http://example.com/index.html",
    "http://example.com/robots.txt",
    "http://example.com/search?q=test&page=2",
    "http://example.com/a;params?q#frag/x",
    "https://example.com:8080/wp-admin/admin-ajax.php",
    "http://example.com/%E3%83%84/",
    "http://example.com/ツ/é",
    "//example.com/a/b",
    "example.com/private/",
    "/cgi-bin/test.cgi",
    "http://example.com#/private/",
]


def corpus_queries(body: bytes, name: str, budget: int) -> list[tuple[list[str], str]]:
    rng = random.Random(zlib.crc32(name.encode()))
    patterns: list[str] = []
    named: list[str] = []
    for line in scan_lines(body):
        if line.kind in (LineKind.ALLOW, LineKind.DISALLOW):
            patterns.append(line.value.decode("utf-8", "replace"))
        elif line.kind is LineKind.USER_AGENT:
            token = product_token(line.value.decode("ascii", "replace"))
            if token and token.lower() not in ("googlebot", "bingbot"):
                named.append(token)
    paths: list[str] = []
    for pattern in patterns:
        paths.extend(_variants(pattern, rng))
    urls = [
        "http://example.com" + (p if p.startswith("/") else "/" + p)
        for p in paths
        if "\ufffd" not in p
    ]
    urls = rng.sample(urls, min(len(urls), budget)) + GENERIC_URLS
    agent_sets = [*AGENTS, [rng.choice(named)]] if named else AGENTS
    # Every URL for googlebot (the crawler that matters most), a share for the rest.
    queries = [(["googlebot"], url) for url in urls]
    for agents in agent_sets[1:]:
        queries += [(agents, url) for url in rng.sample(urls, max(len(urls) // 3, 1))]
    return queries


def _budget(size: int) -> int:
    # The reference re-parses the body for every query (~17 MB/s through the
    # wrapper), so big files get fewer queries; the whole corpus stays ~30 s.
    return max(8, min(120, 300_000 // (size + 2_500)))


@pytest.mark.skipif(not CORPUS_FILES, reason=MISSING)
@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.name for p in CORPUS_FILES])
def test_corpus_verdicts_and_lines_match_reference(path: Path) -> None:
    body = path.read_bytes()
    queries = corpus_queries(body, path.name, _budget(len(body)))
    assert mismatches(body, queries) == []


# --- the line scanner against ParseRobotsTxt -------------------------------


class _Recorder(googlebot.RobotsParseHandler):  # type: ignore[misc]
    """Collects what the reference parser reports, in its own words."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[Any, ...]] = []

    def HandleRobotsStart(self) -> None:
        pass

    def HandleRobotsEnd(self) -> None:
        pass

    def HandleUserAgent(self, line: int, value: str) -> None:
        self.events.append((line, LineKind.USER_AGENT, value))

    def HandleAllow(self, line: int, value: str) -> None:
        self.events.append((line, LineKind.ALLOW, value))

    def HandleDisallow(self, line: int, value: str) -> None:
        self.events.append((line, LineKind.DISALLOW, value))

    def HandleSitemap(self, line: int, value: str) -> None:
        self.events.append((line, LineKind.SITEMAP, value))

    def HandleUnknownAction(self, line: int, action: str, value: str) -> None:
        self.events.append((line, LineKind.OTHER, action, value))

    def ReportLineMetadata(self, line: int, meta: Any) -> None:
        self.events.append(
            (
                line,
                "meta",
                meta.is_empty,
                meta.has_comment,
                meta.is_comment,
                meta.has_directive,
                meta.is_acceptable_typo,
                meta.is_line_too_long,
                meta.is_missing_colon_separator,
            )
        )


def reference_scan(body: bytes) -> list[tuple[Any, ...]] | None:
    """The reference's parse events, or None when the wrapper cannot decode them."""
    recorder = _Recorder()
    try:
        googlebot.ParseRobotsTxt(body, recorder)
    except UnicodeDecodeError:  # the wrapper hands values over as UTF-8 str
        return None
    return recorder.events


def our_scan(body: bytes) -> list[tuple[Any, ...]]:
    events: list[tuple[Any, ...]] = []
    for line in scan_lines(body):
        if line.kind is not None:
            # The reference reports rule and unknown values escaped.
            value = (
                line.value
                if line.kind in (LineKind.USER_AGENT, LineKind.SITEMAP)
                else (escape_pattern(line.value))
            )
            text = value.decode("utf-8")
            if line.kind is LineKind.OTHER:
                events.append((line.number, line.kind, line.key.decode("utf-8"), text))
            else:
                events.append((line.number, line.kind, text))
        events.append(
            (
                line.number,
                "meta",
                line.is_empty,
                line.has_comment,
                line.is_comment,
                line.kind is not None,
                line.acceptable_typo,
                line.too_long,
                line.missing_colon,
            )
        )
    return events


def test_scan_matches_reference_on_corpus() -> None:
    if not CORPUS_FILES:
        pytest.skip(MISSING)
    compared = 0
    for path in CORPUS_FILES:
        body = path.read_bytes()
        expected = reference_scan(body)
        if expected is None:
            continue
        assert our_scan(body) == expected, path.name
        compared += 1
    assert compared > len(CORPUS_FILES) // 2  # most files are valid UTF-8


# --- generated bodies ---------------------------------------------------------

_AGENT_KEYS = st.sampled_from(
    ["user-agent", "User-Agent", "USER-AGENT", "useragent", "user agent", "user-agents"]
)
_RULE_KEYS = st.sampled_from(
    [
        "allow", "Allow", "allowed", "disallow", "DisAllow", "disallowed", "disalow",
        "dissallow", "dissalow", "diasllow", "disallaw", "allow", "disallow", "disallow",
    ]
)  # fmt: skip
_OTHER_KEYS = st.sampled_from(
    ["sitemap", "site-map", "crawl-delay", "host", "noindex", "x", "", "disallow /a", "allo"]
)
_SEPARATORS = st.sampled_from(
    [":", ":", ":", ": ", " : ", ":\t", "\t:", " ", "\t", " \t ", "", "::", ":\x0b"]
)
_AGENT_VALUES = st.sampled_from(
    [
        "*", "*", "* ", "*\tfoo", "* foo", "*\x0bfoo", "*foo", "**", "foobot", "FooBot/1.0",
        "foobot*", "foo bot", "googlebot", "Googlebot-News", "googlebot-image", "bar", "BAR",
        "123", "", "ツbot",
    ]
)  # fmt: skip
_PIECES = st.sampled_from(
    [
        "/", "/", "/a", "/a", "/b", "a", "b", "/a/", "*", "*", "$", "$", ".php", "/index.htm",
        "/index.html", "index.html5", "?", "?q=1", ";p", "%2f", "%2F", "%aa", "%A", "%",
        "é", "ツ", "\x00", "#", "=", " ", "\t", ":",
    ]
)  # fmt: skip
_ENDS = st.sampled_from(["", "", "$"])
_PATTERNS = st.one_of(
    st.lists(_PIECES, max_size=6).map("".join),
    # the shapes with the subtle cases: a tail overlapping the head, "*$"
    st.builds(lambda h, t, end: h + "*" + t + end, _PIECES, _PIECES, _ENDS),
    st.builds(lambda h, m, end: h + "*" + m + "*" + end, _PIECES, _PIECES, _ENDS),
)
_RAW_BYTES = st.sampled_from(
    [b"\xff", b"\xc3", b"\xef\xbb\xbf", b"\x0b", b"\x0c", b"\x85", b"\x00"]
)
_EOLS = st.sampled_from([b"\n", b"\n", b"\n", b"\r\n", b"\r", b"\n\r", b"\r\r\n"])
_BOMS = st.sampled_from([b"", b"", b"", b"\xef", b"\xef\xbb", b"\xef\xbb\xbf", b"\xef\x11\xbf"])
_PADDING = st.sampled_from([16600, 16650, 16655, 16661, 16662, 16663, 16664, 16700])


@st.composite
def _line(draw: st.DrawFn, keys: st.SearchStrategy[str], values: st.SearchStrategy[str]) -> bytes:
    line = draw(st.sampled_from(["", "", " ", "\t"])) + draw(keys) + draw(_SEPARATORS)
    data = (line + draw(values)).encode()
    extra = draw(st.integers(0, 11))
    if extra == 0:
        data += draw(_RAW_BYTES)  # raw non-ASCII / control bytes
    elif extra == 1:
        data += b" # comment"
    elif extra == 2:
        data = b"disallow: /" + b"x" * (draw(_PADDING) - 11) + draw(_PATTERNS).encode()
    elif extra == 3:
        data += b" " + draw(_PATTERNS).encode()  # a third word
    elif extra == 4:
        data += b"   "
    return data


_AGENT_LINES = _line(_AGENT_KEYS, _AGENT_VALUES)
_RULE_LINES = _line(_RULE_KEYS, _PATTERNS)
# Usage lines (issue 20): keys Google knows and ignores; they must not change
# its grouping or verdicts.
_USAGE_KEYS = st.sampled_from(
    ["content-usage", "Content-Usage", "CONTENT-SIGNAL", "content-signal", "content-usages"]
)
_USAGE_VALUES = st.builds(
    lambda path, prefs: path + prefs,
    st.one_of(st.just(""), _PATTERNS.map(lambda p: p + " ")),
    st.sampled_from(
        [
            "train-ai=n", "train-ai=y, search=n", "ai-use=n", "search=yes, ai-train=no",
            "ai-input=yes", "train-ai=n,", "Train-AI=n", "train-ai", "x=1;p", "",
        ]
    ),
)  # fmt: skip
_OTHER_LINES = st.one_of(
    _line(_OTHER_KEYS, _PATTERNS),
    _line(_USAGE_KEYS, _USAGE_VALUES),
    st.sampled_from([b"", b"# comment", b"junk", b"  "]),
)


@st.composite
def _groups(draw: st.DrawFn) -> list[bytes]:
    """One or more user-agent lines, then rules; other lines may sit anywhere."""
    lines = draw(st.lists(_AGENT_LINES, min_size=1, max_size=3))
    if draw(st.integers(0, 3)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(_OTHER_LINES))
    lines += draw(st.lists(st.one_of(_RULE_LINES, _RULE_LINES, _OTHER_LINES), max_size=6))
    if draw(st.integers(0, 2)) == 0:
        # The same pattern allowed and disallowed (a tie), in either order.
        pattern = draw(_PATTERNS).encode()
        pair = [b"allow: " + pattern, b"disallow: " + pattern]
        lines += pair if draw(st.booleans()) else pair[::-1]
    return lines


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.one_of(_RULE_LINES, _OTHER_LINES), max_size=2))
    for group in draw(st.lists(_groups(), max_size=4)):
        lines += group
    out = draw(_BOMS)
    for line in lines:
        out += line + draw(_EOLS)
    if draw(st.integers(0, 3)) == 0 and out:
        out = out[: draw(st.integers(0, len(out)))]  # no final line break, partial line
    return out


_URLS = st.builds(
    lambda prefix, pieces: prefix + "".join(pieces),
    st.sampled_from(["http://x.com", "https://x.com:8080", "//x.com", "x.com", "", "ftp://a@x"]),
    st.lists(
        st.sampled_from(
            [
                "/", "/a", "/b", "a", "b", ".php", "index.htm", "index.html", "?", "q=1", ";p",
                "#", "%2f", "%2F", "%aa", "%AA", "é", "ツ", "$", "*", "\x00", "//", "://",
            ]
        ),
        max_size=8,
    ),
)  # fmt: skip


def derived_queries(body: bytes, rng: random.Random, limit: int) -> list[tuple[list[str], str]]:
    """Queries aimed at the body's own rules (random URLs rarely hit a rule)."""
    paths: list[str] = []
    for line in scan_lines(body):
        if line.kind in (LineKind.ALLOW, LineKind.DISALLOW):
            pattern = line.value.decode("utf-8", "replace").replace("\ufffd", "%FF")
            paths.extend(_variants(pattern, rng))
            paths.append(pattern.rstrip("$") + "\x00x")  # NUL ends the URL's path
    paths = rng.sample(paths, min(len(paths), limit))
    return [
        (rng.choice(GENERATED_AGENTS), "http://x.com" + ("" if p.startswith("/") else "/") + p)
        for p in paths
    ]


GENERATED_AGENTS = [["foobot"], ["googlebot"], ["bar"], ["googlebot-news", "googlebot"], ["zz"]]


@settings(parent=PROFILE, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    body=_bodies(),
    queries=st.lists(st.tuples(st.sampled_from(GENERATED_AGENTS), _URLS), max_size=4),
    rng=st.randoms(use_true_random=False),
)
def test_generated_bodies_match_reference(
    body: bytes, queries: list[tuple[list[str], str]], rng: random.Random
) -> None:
    queries = queries + derived_queries(body, rng, limit=24)
    assert mismatches(body, queries) == []
    expected = reference_scan(body)
    if expected is not None:
        assert our_scan(body) == expected
