"""The rule index answers exactly what trying every pattern in precedence order answers.

``RuleIndex`` finds the first matching pattern without looking at most of
them (head chains, needle prefilters, a gram index for long lists); here it
is checked against the obvious loop over ``pattern_matches``, with lists long
enough to switch every one of those mechanisms on.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_googlerobots.robotstxt import _match
from scrapy_googlerobots.robotstxt._match import NO_MATCH, RuleIndex, pattern_matches

settings.register_profile("robotstxt-index-ci", max_examples=200, derandomize=True, database=None)
settings.register_profile("robotstxt-index-dev", max_examples=200)
PROFILE = settings.get_profile(
    "robotstxt-index-ci" if os.environ.get("CI") else "robotstxt-index-dev"
)

_PIECES = st.sampled_from(
    [b"/", b"/a", b"/b", b"a", b"b", b"ab", b"/ab/", b".php", b"?", b"*", b"*"]
)
_ENDS = st.sampled_from([b"", b"", b"$"])
_PATTERNS = st.one_of(
    st.builds(lambda pieces, end: b"".join(pieces) + end, st.lists(_PIECES, max_size=5), _ENDS),
    # the shape with the subtle cases: "head*tail$", the tail overlapping the head
    st.builds(lambda h, t, end: h + b"*" + t + end, _PIECES, _PIECES, _ENDS),
    st.builds(lambda h, m, end: h + b"*" + m + b"*" + end, _PIECES, _PIECES, _ENDS),
)
_PATHS = st.lists(st.sampled_from([b"/", b"a", b"b", b"ab", b".php", b"?", b"$"]), max_size=8).map(
    lambda pieces: b"/" + b"".join(pieces)
)


def position_set_matches(path: bytes, pattern: bytes) -> bool:
    """The reference's own algorithm (robots.cc ``Matches``), as an independent oracle."""
    positions = [0]
    for index, char in enumerate(pattern):
        if char == ord("$") and index == len(pattern) - 1:
            return positions[-1] == len(path)
        if char == ord("*"):
            positions = list(range(positions[0], len(path) + 1))
        else:
            positions = [p + 1 for p in positions if p < len(path) and path[p] == char]
            if not positions:
                return False
    return True


def brute_force(patterns: list[bytes], path: bytes) -> int:
    return next(
        (rank for rank, p in enumerate(patterns) if position_set_matches(path, p)), NO_MATCH
    )


@st.composite
def _near_paths(draw: st.DrawFn, patterns: list[bytes]) -> bytes:
    """A path built from one of the patterns (so that it matches, or nearly does)."""
    if not patterns:
        return draw(_PATHS)
    pattern = draw(st.sampled_from(patterns)).removesuffix(b"$")
    fillers = st.sampled_from([b"", b"", b"a", b"b", b"ab", b"/"])
    pieces = pattern.split(b"*")
    path = b"".join(piece + draw(fillers) for piece in pieces)
    how = draw(st.sampled_from(["whole", "cut", "overlap"]))
    if how == "cut":
        path = path[: draw(st.integers(0, len(path)))]
    elif how == "overlap":  # the last piece overlapping the first: "/a*a$" vs "/a"
        head = pieces[0]
        path = head[: len(head) - draw(st.integers(0, len(head)))] + pieces[-1]
    return b"/" + path.lstrip(b"/")


@settings(parent=PROFILE, deadline=None)
@given(st.data())
def test_pattern_matches_agrees_with_position_set_walk(data: st.DataObject) -> None:
    pattern = data.draw(_PATTERNS)
    for path in data.draw(st.lists(_near_paths([pattern]), min_size=1, max_size=8)):
        assert pattern_matches(path, pattern) == position_set_matches(path, pattern)


@settings(parent=PROFILE, deadline=None)
@given(st.data())
def test_first_match_is_the_first_matching_pattern(data: st.DataObject) -> None:
    patterns = data.draw(st.lists(_PATTERNS, max_size=150))
    index = RuleIndex(patterns)
    for path in data.draw(st.lists(_near_paths(patterns) | _PATHS, min_size=1, max_size=10)):
        assert index.first_match(path) == brute_force(patterns, path), path


@pytest.mark.parametrize(
    ("count", "mechanism"),
    [(3, "loop"), (20, "needle prefilter"), (200, "gram index")],
)
def test_long_lists_of_wildcard_patterns(count: int, mechanism: str) -> None:
    patterns = [b"/*/section-%d/page-%d*" % (i, i * 7) for i in range(count)]
    patterns += [b"/*?session=", b"/*.pdf$", b"/"]
    index = RuleIndex(patterns)
    paths = [b"/en/section-%d/page-%d.html" % (i, i * 7) for i in range(0, count, 3)]
    paths += [b"/x/section-1/page-8", b"/doc.pdf", b"/a?session=1", b"/nothing"]
    paths.append(b"/" + b"x" * (_match._PREFILTER_PATH_MAX + 1) + b"/section-0/page-0")
    # Prefilters are built lazily, on a list's _PREFILTER_AFTER-th lookup:
    # the first rounds answer without one, the later ones with it.
    rounds = _match._PREFILTER_AFTER // len(paths) + 2
    for _ in range(rounds):
        for path in paths:
            assert index.first_match(path) == brute_force(patterns, path), (mechanism, path[:60])
    prefilters = [entry[0] for entry in index._specials.values()]
    kinds = {
        "loop": type(None),
        "needle prefilter": type(re.compile(b"").search),
        "gram index": tuple,
    }
    assert [type(prefilter) for prefilter in prefilters] == [kinds[mechanism]]
    for path in paths:
        assert index.first_match(path) == brute_force(patterns, path), (mechanism, path[:60])
