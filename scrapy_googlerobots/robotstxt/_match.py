"""The URL side and the pattern side of matching (google/robotstxt ``robots.cc``).

Like the reference, everything here works on bytes: the URL's UTF-8 bytes on
one side, normalised patterns (see ``escape_pattern``) on the other.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

__all__ = ["NO_MATCH", "RuleIndex", "path_params_query", "pattern_matches"]

_PATH_START = re.compile(rb"[/?;]")

# The shape of nearly every URL a crawler asks about: "http(s)://", an
# authority free of "/?;#", then a path that starts with "/". For it the
# general code below comes down to "everything after the authority, up to the
# first # or NUL"; this finds the authority in one short C call.
HTTP_AUTHORITY = re.compile(rb"https?://[^/?;#]*(?=/)").match


def path_params_query(url: bytes) -> bytes:
    """Path, params and query of ``url`` like the reference's ``GetPathParamsQuery``.

    Scheme, authority and ``#fragment`` are dropped; the result starts with ``/``
    (``/`` when there is no path). A NUL ends the path (the reference hands it
    on as a C string).
    """
    authority = HTTP_AUTHORITY(url)
    if authority is not None:
        path = url[authority.end() :]
        return _cut(path) if 35 in path or 0 in path else path  # 35: "#"
    start = 2 if url.startswith(b"//") else 0  # initial two slashes are ignored
    early = _PATH_START.search(url, start)
    scheme_end = url.find(b"://", start)
    if scheme_end < 0 or (early is not None and early.start() < scheme_end):
        # No "://", or a /?; comes before it: the "://" does not end a scheme.
        path_from = start
    else:
        path_from = scheme_end + 3
    found = early if early is not None and early.start() >= path_from else None
    if found is None:
        found = _PATH_START.search(url, path_from)
        if found is None:
            return b"/"
    path_start = found.start()
    hash_pos = url.find(b"#", start)
    if 0 <= hash_pos < path_start:
        return b"/"
    path = _cut(url[path_start:hash_pos] if hash_pos >= 0 else url[path_start:])
    return path if path[:1] == b"/" else b"/" + path


def _cut(path: bytes) -> bytes:
    """``path`` up to its first ``#`` (the fragment) or NUL (the C string's end)."""
    for stop in b"#\0":
        end = path.find(stop)
        if end >= 0:
            path = path[:end]
    return path


def match_pieces(path: bytes, pieces: tuple[bytes, ...], end_anchored: bool) -> bool:
    """Whether ``path`` matches a pattern split on ``*`` into ``pieces`` (two or more).

    Worst case O(len(path) * len(pattern)), whatever the input: the first piece
    is a prefix test, every later piece one leftmost ``find`` from where the
    previous one ended (leftmost is always the best choice: it leaves the most
    room for the rest), and with ``$`` the last piece must end the path. There
    is no backtracking, so ``/*a*a*a*a*b`` against ``/aaaa…`` stays linear.
    """
    head = pieces[0]
    if not path.startswith(head):
        return False
    pos = len(head)
    last = len(pieces) - 1
    for index in range(1, last):
        piece = pieces[index]
        if piece:
            pos = path.find(piece, pos)
            if pos < 0:
                return False
            pos += len(piece)
    tail = pieces[last]
    if end_anchored:
        return len(path) - len(tail) >= pos and path.endswith(tail)
    return not tail or path.find(tail, pos) >= 0


def pattern_matches(path: bytes, pattern: bytes) -> bool:
    """Whether a normalised robots.txt ``pattern`` matches ``path``.

    The pattern is anchored at the start; ``*`` matches any run of bytes;
    ``$`` means end-of-path only as the pattern's last byte.
    """
    end_anchored = pattern.endswith(b"$")
    if end_anchored:
        pattern = pattern[:-1]
    if 0x2A not in pattern:  # 0x2A: "*" (an int test is cheaper)
        return path == pattern if end_anchored else path.startswith(pattern)
    return match_pieces(path, tuple(pattern.split(b"*")), end_anchored)


# Lists of at least this many special patterns get a one-pass needle prefilter.
_PREFILTER_MIN = 8
# ... built on the list's this-many-th lookup (compiling one costs about as
# much as a few dozen lookups without it).
_PREFILTER_AFTER = 16
# ... and those of at least this many, a needle index instead: each needle is
# filed under one of its _GRAM-byte substrings (the rarest in the list), so a
# path needs only the needles filed under its own substrings checked.
_GRAM_INDEX_MIN = 64
_GRAM = 4
# Both pay off for URL-sized paths only; a longer path gets the plain loop,
# whose every step is a linear-time substring search.
_PREFILTER_PATH_MAX = 4096

#: What :meth:`RuleIndex.first_match` returns when no pattern matches.
NO_MATCH = 1 << 62

# What is filed under a head: plain patterns -- no "*", no final "$", they match
# whenever the head does -- by rank alone; the others as "special" candidates
# (rank, needle, pieces, end_anchored): for "body$" without "*", pieces is None
# and the needle is the body (the path must equal it); with "*", the needle is
# the longest piece after the head. Either way the needle must occur in the
# path: a cheap filter before the real test.
_Special = tuple[int, bytes, tuple[bytes, ...] | None, bool]


class RuleIndex:
    """Patterns in precedence order, answering "which is the first to match this path?".

    Each pattern is filed under its *head*, the literal text before its first
    ``*`` (a pattern can only match a path that starts with its head). The
    heads that are prefixes of a path are found without looking at the
    others: in the sorted list of heads, the last head <= path has every head
    that is a prefix of the path among its own prefixes, and those are linked
    from it (``_parents``: the longest other head that is a prefix of it).
    Once the longest head that is a prefix of the path is known, the best
    *plain* pattern -- one that matches whenever its head does -- is known
    too (``_chain_best``); only the other, "special" patterns filed up the
    chain need a look, and only those ranked before that best one.

    A lookup is a bisection, a short walk up the chain and a look at a few
    special patterns; worst case O(len(path) * total length of the special
    patterns). Immutable once built; a plain prefix rule costs a few machine
    words.
    """

    __slots__ = ("_chain_best", "_heads", "_next_special", "_parents", "_specials")

    def __init__(self, patterns: Sequence[bytes]) -> None:
        plain: dict[bytes, int] = {}
        specials: dict[bytes, list[_Special]] = {}
        seen: set[bytes] = set()
        for rank, pattern in enumerate(patterns):
            if pattern in seen:
                continue  # the same pattern ranked earlier always wins
            seen.add(pattern)
            end_anchored = pattern.endswith(b"$")
            body = pattern[:-1] if end_anchored else pattern
            if 0x2A not in body and not end_anchored:  # 0x2A: "*"
                plain[pattern] = rank
                continue
            special: _Special
            if 0x2A in body:
                # "**" is "*", and a final "*" adds nothing to what matches
                # (only to the priority, which the rank already reflects).
                pieces = tuple(body.split(b"*"))
                inner = [piece for piece in pieces[1:-1] if piece]
                if end_anchored or pieces[-1]:
                    inner.append(pieces[-1])
                pieces = (pieces[0], *inner) if inner else (pieces[0], b"")
                special = (rank, max(pieces[1:], key=len), pieces, end_anchored)
                head = pieces[0]
            else:
                special = (rank, body, None, True)
                head = body
            if rank < plain.get(head, NO_MATCH):  # else the plain pattern outranks it
                specials.setdefault(head, []).append(special)
        heads = sorted(plain.keys() | specials.keys())
        parents = array("i")
        # By head position, over the head and all heads that are prefixes of
        # it: the best plain rank, and the nearest one with special patterns.
        chain_best = array("q")
        next_special = array("i")
        # Head position -> [prefilter (None: not built yet, False: none),
        # the specials filed there, lookups so far (-1: too few for a prefilter)].
        self._specials: dict[int, list[Any]] = {}
        stack: list[int] = []  # the chain of heads that are prefixes of the current one
        for position, head in enumerate(heads):
            while stack and not head.startswith(heads[stack[-1]]):
                stack.pop()
            parent = stack[-1] if stack else -1
            parents.append(parent)
            best = plain.get(head, NO_MATCH)
            chain_best.append(best if parent < 0 else min(best, chain_best[parent]))
            if head in specials:
                filed = tuple(s for s in specials[head] if s[0] < best)
                # The prefilter is built on the list's _PREFILTER_AFTER-th
                # lookup: most lists are never looked at that often.
                uses = 0 if len(filed) >= _PREFILTER_MIN else -1
                self._specials[position] = [None, filed, uses]
                next_special.append(position)
            else:
                next_special.append(-1 if parent < 0 else next_special[parent])
            stack.append(position)
        self._heads = heads
        self._parents = parents
        self._chain_best = chain_best
        self._next_special = next_special

    def first_match(self, path: bytes) -> int:
        """The rank of the first pattern (in precedence order) that matches, or NO_MATCH."""
        heads = self._heads
        position = bisect_right(heads, path) - 1
        if position < 0:
            return NO_MATCH
        parents = self._parents
        while not path.startswith(heads[position]):
            position = parents[position]
            if position < 0:
                return NO_MATCH
        # Every head up the chain from here is a prefix of the path.
        best: int = self._chain_best[position]
        position = self._next_special[position]
        while position >= 0:
            entry = self._specials[position]
            prefilter, specials, uses = entry
            if prefilter is None and uses >= 0:
                entry[2] = uses = uses + 1
                if uses >= _PREFILTER_AFTER:
                    prefilter = entry[0] = _prefilter(specials)
            if prefilter and len(path) <= _PREFILTER_PATH_MAX:
                if isinstance(prefilter, tuple):
                    always, grams = prefilter
                    hits = set(always)
                    for gram in grams.keys() & {
                        path[i : i + _GRAM] for i in range(len(path) - _GRAM + 1)
                    }:
                        hits.update(grams[gram])
                    specials = tuple(specials[i] for i in sorted(hits))
                elif prefilter(path) is None:
                    specials = ()
            for rank, needle, pieces, end_anchored in specials:
                if rank >= best:
                    break
                if path.find(needle) >= 0 and (
                    path == needle if pieces is None else match_pieces(path, pieces, end_anchored)
                ):
                    best = rank
                    break
            position = parents[position]
            if position >= 0:
                position = self._next_special[position]
        return best


def _prefilter(specials: tuple[_Special, ...]) -> Any:
    """A gram index for a long list, a needle regex for a shorter one; False for none."""
    if len(specials) >= _GRAM_INDEX_MIN:
        return _gram_index(specials)
    needles = sorted({s[1] for s in specials}, key=len, reverse=True)
    if not all(needles):
        return False
    return re.compile(b"|".join(map(re.escape, needles))).search


def _gram_index(
    specials: tuple[_Special, ...],
) -> tuple[tuple[int, ...], dict[bytes, tuple[int, ...]]]:
    """(specials whose needle is too short to index, gram -> specials filed under it)."""

    def grams(needle: bytes) -> set[bytes]:
        return {needle[i : i + _GRAM] for i in range(len(needle) - _GRAM + 1)}

    frequency: dict[bytes, int] = {}
    for special in specials:
        for gram in grams(special[1]):
            frequency[gram] = frequency.get(gram, 0) + 1
    always: list[int] = []
    filed: dict[bytes, list[int]] = {}
    for index, special in enumerate(specials):
        candidates = grams(special[1])
        if candidates:
            filed.setdefault(min(candidates, key=frequency.__getitem__), []).append(index)
        else:
            always.append(index)
    return tuple(always), {gram: tuple(indexes) for gram, indexes in filed.items()}
