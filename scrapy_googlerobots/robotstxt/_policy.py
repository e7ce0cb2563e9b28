"""The rules that apply to one crawler, compiled for matching -- cheaply.

A crawler usually asks a robots.txt one or a few questions, so compiling must
cost little more than reading the rules: nearly every rule is a *plain*
prefix (no ``*``, no final ``$``), and plain rules go into one dict and one
sorted list, both built in C. Only the few *special* rules (``*``, ``$``, the
``index.htm`` case) get per-rule work.

Precedence is the reference's: the longest (normalised) pattern wins, allow
before disallow on equal length, then the earlier line. A *rank key* packs
that order into one int, larger is better.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import partial

from ._lines import escape_pattern
from ._match import match_pieces

__all__ = ["Policy"]

# Single bytes are looked for as ints: "b'*' in data" goes through the buffer
# protocol and costs several times more.
_STAR, _DOLLAR, _PERCENT = b"*$%"

_LINE_BITS = 41
_LINE_MASK = (1 << _LINE_BITS) - 1
_ALLOW_BIT = 1 << _LINE_BITS
_LENGTH_SHIFT = _LINE_BITS + 1
# Walks over the heads (up a chain of prefix heads, then down the sorted list
# by shared prefixes) take one or two steps on real paths; one built to be
# long stops after this many steps and goes on the next way (the last is a
# head-chain index over all heads).
_WALK_MAX = 8
# Up to this many heads, the first lookup that needs a chain of prefix heads
# links them all (one pass, ~150 ns a head); more, and each such lookup
# searches for its own (about 1.5 us).
_CHAINED_MAX = 4096


def _rank_key(length: int, allow: bool, line: int) -> int:
    return (length << _LENGTH_SHIFT) | (allow << _LINE_BITS) | (_LINE_MASK - line)


# A rule with "*" or a final "$", ready for matching: (rank key, kind, head,
# tail, pieces, signed line, pattern). The head is the literal text before
# the first "*"; by kind:
_EQUAL = 0  # "head$": the path must equal the head
_HEAD_TAIL = 1  # "head*tail": starts with head, tail after it ("" for "head*")
_HEAD_TAIL_END = 2  # "head*tail$": starts with head, ends with tail, no overlap
_GENERAL = 3  # more pieces; tail: the longest piece, which must occur
_GENERAL_END = 4  # the same, ending with "$"
# (pieces: the pattern split on "*", for the general kinds only). A plain
# tuple: cheaper to build than a named one, and specials are built for every
# compiled policy that has them.
_Special = tuple[int, int, bytes, bytes, "tuple[bytes, ...] | None", int, bytes]
# Special rules filed together: as (pattern, signed line) until a lookup first
# needs them, then a function (path, rank key to beat) -> the best that
# matches and beats it, or None.
_Match = Callable[[bytes, int], "_Special | None"]
_Filed = list[tuple[bytes, int]] | _Match
# Lists with at least _INDEX_MIN special rules whose tail (longest piece after
# the head) has _GRAM bytes or more are looked up through a _TailIndex.
_INDEX_MIN = 12
_GRAM = 3
# Bytes a "*tail" rule is looked up by (see _TailIndex): the ones a URL holds few of.
_SEPARATORS = b"/?=&;.,:+%!~@_-"
_SEPARATOR = re.compile(b"[" + re.escape(_SEPARATORS) + b"]")


def _special(pattern: bytes, line: int) -> _Special:
    """A rule with ``*`` or a final ``$``, ready for matching."""
    end_anchored = pattern[-1:] == b"$"
    body = pattern[:-1] if end_anchored else pattern
    key = _rank_key(len(pattern), line > 0, abs(line))
    if _STAR not in body:
        return (key, _EQUAL, body, b"", None, line, pattern)
    # "**" is "*", and a final "*" adds nothing to what matches (only to the
    # priority, which the key already holds).
    pieces = body.split(b"*")
    if len(pieces) == 2:  # the usual "head*tail" or "head*"
        kind = _HEAD_TAIL_END if end_anchored else _HEAD_TAIL
        return (key, kind, pieces[0], pieces[1], None, line, pattern)
    inner = [piece for piece in pieces[1:-1] if piece]
    if end_anchored or pieces[-1]:
        inner.append(pieces[-1])
    if len(inner) <= 1:
        tail = inner[0] if inner else b""
        kind = _HEAD_TAIL_END if end_anchored else _HEAD_TAIL
        return (key, kind, pieces[0], tail, None, line, pattern)
    split = (pieces[0], *inner)
    kind = _GENERAL_END if end_anchored else _GENERAL
    return (key, kind, pieces[0], max(inner, key=len), split, line, pattern)


class Policy:
    """The merged rules of the groups that apply to one crawler.

    :meth:`decide` gives the deciding line of a path: signed (negative when
    the rule disallows), 0 when no rule matched. Immutable once built, apart
    from lazily built helpers that racing threads build alike. ``index_htm``
    applies Google's "allow /a/index.html also allows /a/" (allow rules only).
    """

    __slots__ = (
        "_anywhere",
        "_by_start",
        "_empty",
        "_empty_key",
        "_heads",
        "_outranked_from",
        "_parents",
        "_table",
        "no_rules",
    )

    def __init__(
        self, lines: Sequence[int], values: Sequence[bytes], *, index_htm: bool = True
    ) -> None:
        self.no_rules = not values
        joined = b"\n".join(values)
        patterns: Sequence[bytes] = values
        if not joined.isascii() or _PERCENT in joined:
            patterns = [escape_pattern(value) for value in values]
        # Pattern -> signed line of its best rule. Reversed, the earliest line
        # is the one kept; a pattern written twice needs allow before disallow.
        table = dict(zip(reversed(patterns), reversed(lines), strict=True))
        if len(table) < len(patterns):
            for line, pattern in zip(lines, patterns, strict=True):
                if line > 0 > table[pattern]:
                    table[pattern] = line
        # Rules with "*" or a final "$" ("special"), as (pattern, signed line).
        special: list[tuple[bytes, int]] = []
        if _STAR in joined or _DOLLAR in joined:
            for pattern in [p for p in table if _STAR in p or p[-1:] == b"$"]:
                special.append((pattern, table.pop(pattern)))
        if index_htm and b"/index.htm" in joined:
            # Google-specific: "allow: /a/index.html" also allows the directory
            # "/a/" itself, as "/a/$" would (with that pattern's priority).
            for line, pattern in zip(lines, patterns, strict=True):
                slash = pattern.rfind(b"/")
                if line > 0 and slash >= 0 and pattern.startswith(b"/index.htm", slash):
                    special.append((pattern[: slash + 1] + b"$", line))
        # The empty pattern matches every path with priority 0: it never
        # disallows, but it is the deciding line when nothing longer matched.
        empty = table.pop(b"", None)
        self._empty = 0 if empty is None else abs(empty)
        self._empty_key = -1 if empty is None else _rank_key(0, empty > 0, abs(empty))
        self._table = table
        self._heads = sorted(table)
        # By head position: the position of the longest other head that is a
        # prefix of it (-1: none). Built by the first lookup that needs it.
        self._parents: array[int] | None = None
        self._by_start: dict[bytes, _Filed] | None = None
        self._anywhere: _Filed | None = None
        # A plain pattern this long or longer outranks every special one.
        self._outranked_from = -1
        if special:
            self._outranked_from = max([len(pattern) for pattern, _ in special]) + 1
            # Specials filed by the first two bytes of their head (a path can
            # only match those filed under its own first two bytes), and those
            # whose head is shorter, which any path can match. Each list is
            # made ready for matching when a lookup first needs it.
            by_start: dict[bytes, _Filed] = {}
            anywhere: list[tuple[bytes, int]] = []
            for pair in special:
                start = pair[0][:2]
                if len(start) < 2 or _STAR in start or start == b"/$":
                    anywhere.append(pair)
                else:
                    by_start.setdefault(start, []).append(pair)  # type: ignore[union-attr]
            self._by_start = by_start or None
            self._anywhere = anywhere or None

    def decide(self, path: bytes) -> int:
        """The signed deciding line for ``path`` (its path, params and query)."""
        heads = self._heads
        position = bisect_right(heads, path)
        head: bytes | None = None
        if position:
            # heads[position - 1] is the largest head <= path. Every head that
            # is a prefix of the path is a prefix of it too (it sorts between
            # them), so when it is no prefix itself, the answer is on its chain
            # of prefix heads, usually one or two steps up.
            head = heads[position - 1]
            if not path.startswith(head):
                head = self._prefix_up_chain(path, position - 1)
        if head is None:
            if self._outranked_from < 0:  # no special rules
                return self._empty
            return self._with_specials(path, self._empty, -1)
        line = self._table[head]
        if len(head) >= self._outranked_from:
            return line
        return self._with_specials(path, line, len(head))

    def _prefix_up_chain(self, path: bytes, below: int) -> bytes | None:
        """The longest head that is a prefix of ``path``, ``heads[below]``
        being the largest head <= path and no prefix of it."""
        heads = self._heads
        parents = self._parents
        if parents is None:
            if len(heads) > _CHAINED_MAX:
                return self._longest_prefix(path, below)
            parents = self._parents = _parent_positions(heads)
        at = parents[below]
        for _ in range(_WALK_MAX):
            if at < 0:
                return None
            head = heads[at]
            if path.startswith(head):
                return head
            at = parents[at]
        # A chain built to be long: search the heads up to where the walk stopped.
        return None if at < 0 else self._longest_prefix(path, at + 1)

    def _longest_prefix(self, path: bytes, end: int) -> bytes | None:
        """The longest head among ``heads[:end]`` that is a prefix of ``path``."""
        heads = self._heads
        position = bisect_right(heads, path, 0, end)
        steps = 0
        while position:
            head = heads[position - 1]
            if path.startswith(head):
                return head
            steps += 1
            if steps > _WALK_MAX:
                return self._prefix_by_index(path)
            # Any head that is a prefix of the path sorts at or below the part
            # of the path it shares with this head.
            size = min(len(head), len(path))
            differ = int.from_bytes(head[:size], "big") ^ int.from_bytes(path[:size], "big")
            shared = size - ((differ.bit_length() + 7) >> 3)
            position = bisect_right(heads, path[:shared], 0, position - 1)
        return None

    def _with_specials(self, path: bytes, line: int, length: int) -> int:
        """``line`` (the best plain rule's, of that pattern length), or a special
        rule's that outranks it."""
        if length < 0:
            best = self._empty_key
        elif line > 0:  # (_rank_key, inlined)
            best = (length << _LENGTH_SHIFT) | _ALLOW_BIT | (_LINE_MASK - line)
        else:
            best = (length << _LENGTH_SHIFT) | (_LINE_MASK + line)
        by_start = self._by_start
        if by_start is not None:
            start = path[:2]
            filed = by_start.get(start)
            if filed is not None:
                if filed.__class__ is list:
                    filed = by_start[start] = _matcher(filed)  # type: ignore[arg-type]
                found = filed(path, best)  # type: ignore[operator]
                if found is not None:
                    best, line = found[0], found[5]
        anywhere = self._anywhere
        if anywhere is not None:
            if anywhere.__class__ is list:
                anywhere = self._anywhere = _matcher(anywhere)  # type: ignore[arg-type]
            found = anywhere(path, best)  # type: ignore[operator]
            if found is not None:
                return found[5]
        return line

    def _prefix_by_index(self, path: bytes) -> bytes | None:
        """The longest head that is a prefix of ``path``, up the chain of prefix
        heads to its end: for heads and paths built to make every walk long.

        Such a chain has at most about sqrt(2 * total head length) links (each
        head is longer than the one it extends), so linking every head once
        and walking without a cut-off stays bounded."""
        heads = self._heads
        parents = self._parents
        if parents is None:
            parents = self._parents = _parent_positions(heads)
        at = bisect_right(heads, path) - 1
        while at >= 0:
            head = heads[at]
            if path.startswith(head):
                return head
            at = parents[at]
        return None


def _parent_positions(heads: list[bytes]) -> array[int]:
    """For each of the sorted ``heads``, the position of the longest other head
    that is a prefix of it; -1 for none. One pass: the heads that are prefixes
    of the current one are a stack."""
    parents = array("i")
    append = parents.append
    chain: list[bytes] = []
    positions: list[int] = []
    for position, head in enumerate(heads):
        while chain and not head.startswith(chain[-1]):
            chain.pop()
            positions.pop()
        append(positions[-1] if positions else -1)
        chain.append(head)
        positions.append(position)
    return parents


def _matcher(pairs: list[tuple[bytes, int]]) -> _Match:
    """A lookup over special rules given as (pattern, signed line)."""
    specials = sorted([_special(pattern, line) for pattern, line in pairs], reverse=True)
    indexable = sum(1 for special in specials if len(special[3]) >= _GRAM)
    if indexable >= _INDEX_MIN:
        return _TailIndex(specials).first_match
    return partial(_first_match, tuple(specials))


class _TailIndex:
    """Special rules filed by what must occur in a matching path, for lists
    too long to test one by one.

    A "head*tail$" rule is filed under the last _GRAM bytes of its tail,
    looked up once per path. A "head*tail" rule, or one with more pieces, is
    filed under an *anchor* in its tail (its longest piece): the first
    separator byte such as ``/``, ``=`` or ``?`` (else the tail's first byte)
    with the _GRAM bytes around it, looked up at each place where the path
    holds that byte -- a URL has few separators. Only the rules found that
    way get the real test. Rules with shorter tails, and "head$", are tested
    one by one.
    """

    __slots__ = ("_anchors", "_ends", "_scanned")

    def __init__(self, specials: list[_Special]) -> None:
        ends: dict[bytes, list[_Special]] = {}
        scanned: list[_Special] = []
        # Separator and the gram's offset before it -> gram -> (special, the
        # separator's offset in its needle), best first.
        anchors: dict[tuple[int, int], dict[bytes, list[tuple[_Special, int]]]] = {}
        for special in specials:
            kind, needle = special[1], special[3]
            last = len(needle) - _GRAM
            if last < 0 or kind == _EQUAL:
                scanned.append(special)
            elif kind == _HEAD_TAIL_END:
                ends.setdefault(needle[-_GRAM:], []).append(special)
            else:
                at = 0
                if needle[0] not in _SEPARATORS:
                    separator = _SEPARATOR.search(needle)
                    if separator is not None:
                        at = separator.start()
                start = min(at, last)
                group = anchors.setdefault((needle[at], at - start), {})
                group.setdefault(needle[start : start + _GRAM], []).append((special, at))
        self._anchors = tuple((byte, before, grams) for (byte, before), grams in anchors.items())
        self._ends = ends
        self._scanned = tuple(scanned)

    def first_match(self, path: bytes, best: int) -> _Special | None:
        """The best special that matches ``path`` and outranks ``best``; None if none."""
        found = None
        for byte, before, grams in self._anchors:
            at = path.find(byte, before)
            while at >= 0:
                filed = grams.get(path[at - before : at - before + _GRAM])
                if filed is not None:
                    for special, offset in filed:
                        if special[0] <= best:
                            break
                        if special[1] == _HEAD_TAIL:
                            # The tail starts here; not inside the head.
                            start = at - offset
                            if (
                                start < len(special[2])
                                or not path.startswith(special[3], start)
                                or not path.startswith(special[2])
                            ):
                                continue
                        elif not match_pieces(path, special[4], special[1] == _GENERAL_END):  # type: ignore[arg-type]
                            continue
                        best = special[0]
                        found = special
                        break
                at = path.find(byte, at + 1)
        filed_ends = self._ends.get(path[-_GRAM:])
        if filed_ends is not None:
            for special in filed_ends:
                if special[0] <= best:
                    break
                if (
                    path.endswith(special[3])
                    and path.startswith(special[2])
                    and len(path) >= len(special[2]) + len(special[3])
                ):
                    best = special[0]
                    found = special
                    break
        if self._scanned:
            return _first_match(self._scanned, path, best) or found
        return found


def _first_match(specials: Sequence[_Special], path: bytes, best: int) -> _Special | None:
    """The first of ``specials`` (in precedence order) that matches ``path`` and
    outranks ``best``; None if none does."""
    for special in specials:
        key, kind, head, tail, pieces, _, _ = special
        if key <= best:
            return None
        if kind == _HEAD_TAIL:
            if path.startswith(head) and path.find(tail, len(head)) >= 0:
                return special
        elif kind == _HEAD_TAIL_END:
            if path.endswith(tail) and path.startswith(head) and len(path) >= len(head) + len(tail):
                return special
        elif kind == _EQUAL:
            if path == head:
                return special
        elif path.find(tail) >= 0 and match_pieces(path, pieces, kind == _GENERAL_END):  # type: ignore[arg-type]
            return special
    return None
