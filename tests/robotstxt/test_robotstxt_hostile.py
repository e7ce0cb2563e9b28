"""Hostile input stays cheap and never raises.

The time bounds are deliberately generous: they exist to catch exponential or
quadratic blow-ups (which would take minutes to hours), not to benchmark.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE, parse, scan_lines

HOST = "http://example.com"


@contextmanager
def within(seconds: float) -> Iterator[None]:
    start = time.perf_counter()
    yield
    elapsed = time.perf_counter() - start
    assert elapsed < seconds, f"took {elapsed:.1f}s (bound {seconds}s)"


def test_many_wildcards_against_long_path() -> None:
    robots = parse(
        "user-agent: *\ndisallow: /*a*a*a*a*a*a*a*a*a*a*a*b\nallow: /*a*a*a*a*a*a*a*a*a*a*a*b$"
    )
    path = "/" + "a" * 2000
    with within(5):
        for _ in range(100):
            assert robots.explain(HOST + path, "bot") == (True, 0, None)
        assert robots.explain(HOST + path + "b", "bot")[:2] == (True, 3)  # tie -> allow
        assert robots.explain(HOST + path + "bc", "bot")[:2] == (False, 2)


def test_many_wildcards_in_a_long_line_against_long_path() -> None:
    pattern = "/" + "*a" * 8000 + "*b$"  # cut to MAX_LINE_LENGTH, still thousands of '*'
    robots = parse(f"user-agent: *\ndisallow: {pattern}")
    with within(5):
        assert robots.allowed(HOST + "/" + "a" * 50_000, "bot")


def test_long_needles_against_long_path() -> None:
    piece = "a" * 4000 + "b"
    robots = parse(f"user-agent: *\ndisallow: /*{piece}*{piece}$")
    with within(5):
        assert robots.allowed(HOST + "/" + "a" * 500_000, "bot")


def test_group_of_100000_rules() -> None:
    lines = ["user-agent: *"]
    lines += [f"disallow: /p{i}/" for i in range(50_000)]
    lines += [f"allow: /*q{i}*x$" for i in range(50_000)]
    body = "\n".join(lines)
    with within(10):
        robots = parse(body)
        assert robots.explain(HOST + "/p49999/x", "bot")[:2] == (False, 50_001)
        assert robots.explain(HOST + "/p1/q77/x", "bot")[:2] == (True, 50_079)
        for i in range(20):
            assert robots.allowed(HOST + f"/nothing/{i}", "bot")


def test_100000_groups() -> None:
    body = "".join(
        f"user-agent: bot{chr(97 + i % 26)}{i}\ndisallow: /{i}\n" for i in range(100_000)
    )
    with within(10):
        robots = parse(body)
        for agent in ("bota", "zzz", "botb", "*"):
            assert robots.allowed(HOST + "/5", agent)


def test_100000_groups_naming_one_crawler() -> None:
    """One product token in every group: the token -> groups index grows by
    appending (it once copied a tuple per group: quadratic)."""
    body = "".join(f"user-agent: bot\ndisallow: /{i}/\n" for i in range(100_000))
    with within(10):
        robots = parse(body)
        assert robots.explain(HOST + "/99999/x", "bot")[:2] == (False, 200_000)
        assert robots.allowed(HOST + "/x", "other")


def test_single_500_kib_line() -> None:
    body = b"user-agent: *\ndisallow: /" + b"a" * (500 * 1024) + b"\nallow: /x"
    with within(5):
        robots = parse(body)
        assert not robots.allowed(HOST + "/" + "a" * 20_000, "bot")
        assert robots.explain(HOST + "/x", "bot")[:2] == (True, 3)
        assert sum(1 for _ in scan_lines(body)) == 3


def test_500_kib_url() -> None:
    robots = parse("user-agent: *\ndisallow: /*.php$\ndisallow: /*?*&*=")
    with within(5):
        assert robots.allowed(HOST + "/" + "x" * 512_000, "bot")
        assert not robots.allowed(HOST + "/" + "x" * 512_000 + ".php", "bot")


def test_50_mb_file() -> None:
    chunk = b"# " + b"filler " * 140 + b"\nuser-agent: x\ndisallow: /private\n"
    body = chunk * (50_000_000 // len(chunk)) + b"user-agent: *\ndisallow: /end"
    assert len(body) > 49_000_000
    with within(20):
        robots = parse(body)
        assert not robots.allowed(HOST + "/end", "bot")
        assert not robots.allowed(HOST + "/private", "x")
    with within(2):
        capped = parse(body, max_size=GOOGLE_MAX_SIZE)
        assert capped.allowed(HOST + "/end", "bot")


def _garbage(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


@pytest.mark.parametrize(
    "make",
    [
        lambda: _garbage(1_000_000, 1),
        lambda: _garbage(1_000, 2) * 1000,
        lambda: b"\0" * 1_000_000,
        lambda: b"\r" * 500_000 + b"\n" * 500_000,
        lambda: b"\xef\xbb\xbf" * 100_000,
        lambda: b"<html><body>" + b"<p>Not found</p>\n" * 50_000 + b"</body></html>",
        lambda: b":" * 1_000_000,
        lambda: b"user-agent:" + b" *" * 500_000,
        lambda: ("user-agent: *\ndisallow: /" + "\U0001f600" * 100_000).encode(),
        lambda: "user-agent: *\ndisallow: /\udc80\ud800",  # lone surrogates in a str
    ],
    ids=[
        "random-bytes",
        "repeated-random",
        "nul",
        "line-breaks",
        "boms",
        "html",
        "colons",
        "star-words",
        "emoji",
        "lone-surrogates",
    ],
)
def test_garbage_never_raises(make: Callable[[], bytes | str]) -> None:
    body = make()
    with within(10):
        robots = parse(body)
        for url in (HOST + "/", HOST + "/x?y#z", "\0", "", "ツ", HOST + "/\udc80"):
            assert isinstance(robots.allowed(url, "bot"), bool)
            assert isinstance(robots.explain(url, ["bot", "*", ""]).line, int)
        assert isinstance(robots.sitemaps, list)
        robots.crawl_delay("bot")
        for _ in scan_lines(body):
            pass
