"""Hostile input stays cheap and never raises.

Cheap means linear: each check times the same work at two sizes, a quarter of
the full size and all of it, in CPU time (see tests/support/growth.py), so a
quadratic or exponential blow-up fails whatever the machine's speed or load.
The correctness assertions run inside the timed work, at both sizes.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from growth import assert_constant, assert_linear

from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE, parse, scan_lines

HOST = "http://example.com"

Work = Callable[[], object]


def test_many_wildcards_against_long_path() -> None:
    robots = parse(
        "user-agent: *\ndisallow: /*a*a*a*a*a*a*a*a*a*a*a*b\nallow: /*a*a*a*a*a*a*a*a*a*a*a*b$"
    )

    def work(n: int) -> Work:
        path = "/" + "a" * n

        def run() -> None:
            for _ in range(100):
                assert robots.explain(HOST + path, "bot") == (True, 0, None)
            assert robots.explain(HOST + path + "b", "bot")[:2] == (True, 3)  # tie -> allow
            assert robots.explain(HOST + path + "bc", "bot")[:2] == (False, 2)

        return run

    assert_linear(work, 8_000 // 4)


def test_many_wildcards_in_a_long_line_against_long_path() -> None:
    pattern = "/" + "*a" * 8000 + "*b$"  # cut to MAX_LINE_LENGTH, still thousands of '*'
    robots = parse(f"user-agent: *\ndisallow: {pattern}")

    def work(n: int) -> Work:
        url = HOST + "/" + "a" * n
        return lambda: robots.allowed(url, "bot") or pytest.fail("disallowed")

    assert_linear(work, 50_000 // 4)


def test_long_needles_against_long_path() -> None:
    piece = "a" * 4000 + "b"
    robots = parse(f"user-agent: *\ndisallow: /*{piece}*{piece}$")

    def work(n: int) -> Work:
        url = HOST + "/" + "a" * n
        return lambda: robots.allowed(url, "bot") or pytest.fail("disallowed")

    assert_linear(work, 500_000 // 4)


def test_group_of_many_rules() -> None:
    def work(n: int) -> Work:
        lines = ["user-agent: *"]
        lines += [f"disallow: /p{i}/" for i in range(n)]
        lines += [f"allow: /*q{i}*x$" for i in range(n)]
        body = "\n".join(lines)

        def run() -> None:
            robots = parse(body)
            assert robots.explain(HOST + f"/p{n - 1}/x", "bot")[:2] == (False, n + 1)
            assert robots.explain(HOST + "/p1/q77/x", "bot")[:2] == (True, n + 79)
            for i in range(20):
                assert robots.allowed(HOST + f"/nothing/{i}", "bot")

        return run

    # 6,250 then 25,000 rules of each kind.
    assert_linear(work, 25_000 // 4)


def test_many_groups() -> None:
    def work(n: int) -> Work:
        body = "".join(f"user-agent: bot{chr(97 + i % 26)}{i}\ndisallow: /{i}\n" for i in range(n))

        def run() -> None:
            robots = parse(body)
            for agent in ("bota", "zzz", "botb", "*"):
                assert robots.allowed(HOST + "/5", agent)

        return run

    assert_linear(work, 25_000 // 4)


def test_many_groups_naming_one_crawler() -> None:
    """One product token in every group: the token -> groups index grows by
    appending (it once copied a tuple per group: quadratic, 4.65 s for 40,000
    groups against 0.4 s now)."""

    def work(n: int) -> Work:
        body = "".join(f"user-agent: bot\ndisallow: /{i}/\n" for i in range(n))

        def run() -> None:
            robots = parse(body)
            assert robots.explain(HOST + f"/{n - 1}/x", "bot")[:2] == (False, 2 * n)
            assert robots.allowed(HOST + "/x", "other")

        return run

    assert_linear(work, 40_000 // 4)


def test_single_500_kib_line() -> None:
    def work(n: int) -> Work:
        body = b"user-agent: *\ndisallow: /" + b"a" * n + b"\nallow: /x"

        def run() -> None:
            robots = parse(body)
            assert not robots.allowed(HOST + "/" + "a" * 20_000, "bot")
            assert robots.explain(HOST + "/x", "bot")[:2] == (True, 3)
            assert sum(1 for _ in scan_lines(body)) == 3

        return run

    assert_linear(work, 500 * 1024 // 4)


def test_500_kib_url() -> None:
    robots = parse("user-agent: *\ndisallow: /*.php$\ndisallow: /*?*&*=")

    def work(n: int) -> Work:
        url = HOST + "/" + "x" * n

        def run() -> None:
            assert robots.allowed(url, "bot")
            assert not robots.allowed(url + ".php", "bot")

        return run

    assert_linear(work, 512_000 // 4)


def _huge(size: int) -> bytes:
    """About ``size`` bytes of comments and groups, then the global group."""
    chunk = b"# " + b"filler " * 140 + b"\nuser-agent: x\ndisallow: /private\n"
    return chunk * (size // len(chunk)) + b"user-agent: *\ndisallow: /end"


def test_huge_file() -> None:
    def work(n: int) -> Work:
        body = _huge(n)

        def run() -> None:
            robots = parse(body)
            assert not robots.allowed(HOST + "/end", "bot")
            assert not robots.allowed(HOST + "/private", "x")

        return run

    # 3 MB then 12.5 MB (25 times Google's cap).
    assert_linear(work, 12_500_000 // 4)


def test_50_mb_file_behind_googles_cap() -> None:
    def work(n: int) -> Work:
        body = _huge(n)
        assert len(body) > n - 1_000

        def run() -> None:
            capped = parse(body, max_size=GOOGLE_MAX_SIZE)
            assert capped.allowed(HOST + "/end", "bot")

        return run

    # 12.5 MB then 50 MB: what is past the cap costs nothing.
    assert_constant(work, 50_000_000 // 4)


def _garbage(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


# Each shape at a size of ``n`` (bytes, about), and its full size.
GARBAGE: list[tuple[str, Callable[[int], bytes | str], int]] = [
    ("random-bytes", lambda n: _garbage(n, 1), 1_000_000),
    ("repeated-random", lambda n: _garbage(1_000, 2) * (n // 1_000), 1_000_000),
    ("nul", lambda n: b"\0" * n, 1_000_000),
    ("line-breaks", lambda n: b"\r" * (n // 2) + b"\n" * (n // 2), 200_000),
    ("boms", lambda n: b"\xef\xbb\xbf" * (n // 3), 300_000),
    (
        "html",
        lambda n: b"<html><body>" + b"<p>Not found</p>\n" * (n // 17) + b"</body></html>",
        400_000,
    ),
    ("colons", lambda n: b":" * n, 1_000_000),
    ("star-words", lambda n: b"user-agent:" + b" *" * (n // 2), 1_000_000),
    ("emoji", lambda n: ("user-agent: *\ndisallow: /" + "\U0001f600" * (n // 4)).encode(), 400_000),
    # Lone surrogates in a str.
    (
        "lone-surrogates",
        lambda n: "user-agent: *\ndisallow: /" + "\udc80\ud800" * (n // 2),
        100_000,
    ),
]


@pytest.mark.parametrize(
    ("make", "full"), [pytest.param(make, full, id=name) for name, make, full in GARBAGE]
)
def test_garbage_never_raises(make: Callable[[int], bytes | str], full: int) -> None:
    def work(n: int) -> Work:
        body = make(n)

        def run() -> None:
            robots = parse(body)
            for url in (HOST + "/", HOST + "/x?y#z", "\0", "", "ツ", HOST + "/\udc80"):
                assert isinstance(robots.allowed(url, "bot"), bool)
                assert isinstance(robots.explain(url, ["bot", "*", ""]).line, int)
            assert isinstance(robots.sitemaps, list)
            robots.crawl_delay("bot")
            for _ in scan_lines(body):
                pass

        return run

    assert_linear(work, full // 4)
