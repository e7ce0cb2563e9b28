"""Policy's ways of finding the special rules (``*``, final ``$``) that match a path.

Special rules are filed by the first two bytes of their head, or as rules any
path can match (head ``""`` or ``"/"``); each list is tested one by one when
short and through a tail index when long. Each way is checked here against Google's
reference on generated groups long enough to switch it on, with paths built
to match, extend and just miss the rules.
"""

from __future__ import annotations

import os
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.robotstxt import _policy, parse
from scrapy_googlerobots.robotstxt._policy import Policy

settings.register_profile(
    "robotstxt-policy-ci", max_examples=150, derandomize=True, database=None, deadline=None
)
settings.register_profile("robotstxt-policy-dev", max_examples=150, deadline=None)
PROFILE = settings.get_profile(
    "robotstxt-policy-ci" if os.environ.get("CI") else "robotstxt-policy-dev"
)

googlebot: Any = pytest.importorskip(
    "jwm.robotstxt.googlebot",
    reason="jwm.robotstxt (Google's C++ reference, test extra) is not installed",
)

_WORDS = st.sampled_from(["a", "ab", "b=", "id=", "/x", "/x/", ".pdf", "?", "&s=", "/ab/c", "="])
_TAILS = st.lists(_WORDS, min_size=1, max_size=3).map("".join)
_INDEXED = st.one_of(
    st.builds(lambda t: "/*" + t, _TAILS),  # the tail index's "*tail"
    st.builds(lambda t: "/*" + t + "$", _TAILS),  # ... and "*tail$"
    st.builds(lambda t: "*" + t, _TAILS),  # head "" rather than "/"
)
# ... and the same under one shared head, looked up through a tail index too
_HEADED = st.builds(lambda t, end: "/ab/c*" + t + end, _TAILS, st.sampled_from(["", "$"]))
_OTHERS = st.one_of(
    st.builds(lambda t, u: "/*" + t + "*" + u, _TAILS, _TAILS),  # general, tested one by one
    st.builds(lambda h, t: "/" + h + "*" + t, _TAILS, _TAILS),  # filed by head
    st.builds(lambda h: "/" + h, _TAILS),  # plain
    st.builds(lambda h: "/" + h + "$", _TAILS),
)


def reference(body: bytes, url: str) -> tuple[bool, int]:
    matcher = googlebot.RobotsMatcher()
    allowed = matcher.AllowedByRobots(body, ["bot"], url)
    return bool(allowed), int(matcher.matching_line())


@st.composite
def _paths(draw: st.DrawFn, rules: list[str]) -> str:
    """A path made from one rule: wildcards filled, then cut, extended or changed."""
    rule = draw(st.sampled_from(rules)).removesuffix("$")
    fill = st.sampled_from(["", "a", "/x/", "q=1&", "ab"])
    path = "".join(piece + draw(fill) for piece in rule.split("*"))
    how = draw(st.sampled_from(["as is", "cut", "longer", "changed", "tail alone"]))
    if how == "tail alone":  # "/*/x$" against "/x": the tail may not overlap the head
        path = rule.split("*")[-1]
    elif how == "cut":
        path = path[: draw(st.integers(1, max(1, len(path))))]
    elif how == "longer":
        path += draw(_WORDS)
    elif how == "changed" and len(path) > 1:
        path = path[:-1] + "z"
    return "/" + path.lstrip("/")


@settings(parent=PROFILE)
@given(st.data())
def test_long_groups_of_special_rules_agree_with_the_reference(data: st.DataObject) -> None:
    rules = data.draw(st.lists(_INDEXED, min_size=_policy._INDEX_MIN, max_size=40))
    rules += data.draw(st.lists(_HEADED, min_size=_policy._INDEX_MIN, max_size=30))
    rules += data.draw(st.lists(_OTHERS, max_size=20))
    rules = data.draw(st.permutations(rules))
    kinds = data.draw(st.lists(st.booleans(), min_size=len(rules), max_size=len(rules)))
    body = "user-agent: *\n" + "".join(
        f"{'allow' if allow else 'disallow'}: {rule}\n"
        for rule, allow in zip(rules, kinds, strict=True)
    )
    robots = parse(body)
    paths = data.draw(st.lists(_paths(rules), min_size=1, max_size=12))
    for path in paths:
        url = "http://example.com" + path
        line = robots.deciding_line(url, "bot")
        assert (line >= 0, abs(line)) == reference(body.encode(), url), (path, body)


def test_each_way_of_looking_up_specials_is_used() -> None:
    """The generated groups above reach all three ways; so does this fixed one."""
    tails = [b"/section-%d/" % i for i in range(_policy._INDEX_MIN)]
    values = [b"/*" + tail for tail in tails]
    values += [b"/*.pdf$", b"/*?", b"/*a*b", b"/private*", b"/p*x$"]
    lines = [-(number + 2) for number in range(len(values))]
    policy = Policy(lines, values)
    assert policy.decide(b"/en/section-3/page") == -5
    assert policy.decide(b"/en/section-3/doc.pdf") == -5  # longer pattern wins
    assert policy.decide(b"/doc.pdf") == -(len(tails) + 2)
    assert policy.decide(b"/private/x") == -(len(tails) + 5)
    assert policy.decide(b"/pax") == -(len(tails) + 6)
    assert policy.decide(b"/nothing") == 0
    anywhere = policy._anywhere
    assert getattr(anywhere, "__self__", None).__class__ is _policy._TailIndex
    filed = policy._by_start
    assert filed is not None
    assert all(callable(entry) for entry in filed.values() if not isinstance(entry, list))
    short = Policy([-2, -3], [b"/*.pdf$", b"/*?"])
    assert short.decide(b"/a?b") == -3
    assert getattr(short._anywhere, "func", None) is _policy._first_match


def _longest_plain(values: list[bytes], path: bytes) -> int:
    """The deciding line by brute force, for plain rules all disallowing."""
    best = max(
        ((len(value), -number) for number, value in enumerate(values, 1) if path.startswith(value)),
        default=None,
    )
    return 0 if best is None else best[1]


@settings(parent=PROFILE)
@given(
    values=st.lists(st.text("ab/", max_size=12).map(lambda t: ("/" + t).encode()), max_size=80),
    paths=st.lists(st.text("ab/z", max_size=16).map(lambda t: ("/" + t).encode()), max_size=20),
    chained=st.booleans(),
)
# The answer three steps up the chain from "/abaaa", past the walk's cut-off.
@example(values=[b"/a", b"/ab", b"/aba", b"/abaa", b"/abaaa"], paths=[b"/abb"], chained=True)
def test_plain_rules_find_the_longest_prefix(
    values: list[bytes], paths: list[bytes], chained: bool
) -> None:
    """Heads over a two-letter alphabet make deep chains of prefixes: the walk
    up the chain, its cut-off and the search without a chain all answer alike."""
    with (
        patch.object(_policy, "_WALK_MAX", 2),
        patch.object(_policy, "_CHAINED_MAX", 10_000 if chained else 0),
    ):
        policy = Policy([-n for n in range(1, len(values) + 1)], values)
        for path in paths:
            assert policy.decide(path) == _longest_plain(values, path), path
