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

from bisect import bisect_right
from collections.abc import Sequence

from ._lines import escape_pattern
from ._match import NO_MATCH, RuleIndex, match_pieces

__all__ = ["Policy"]

_LINE_BITS = 41
_LINE_MASK = (1 << _LINE_BITS) - 1
# The walk down the sorted heads (see Policy.decide) takes one or two steps
# on real paths; a path built to make it long goes to the full index instead.
_WALK_MAX = 8
# From this many special rules on, they are matched through a RuleIndex
# (head chains, needle prefilters) rather than one by one -- once a few
# lookups have shown that the index will be used (building it costs about as
# much as a dozen one-by-one scans).
_SPECIAL_INDEX_MIN = 16
_SPECIAL_INDEX_AFTER = 32


def _rank_key(length: int, allow: bool, line: int) -> int:
    return (length << (_LINE_BITS + 1)) | (allow << _LINE_BITS) | (_LINE_MASK - line)


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


def _special(pattern: bytes, line: int) -> _Special:
    """A rule with ``*`` or a final ``$``, ready for matching."""
    end_anchored = pattern[-1:] == b"$"
    body = pattern[:-1] if end_anchored else pattern
    key = (len(pattern) << (_LINE_BITS + 1)) | ((line > 0) << _LINE_BITS) | (_LINE_MASK - abs(line))
    if b"*" not in body:
        return (key, _EQUAL, body, b"", None, line, pattern)
    # "**" is "*", and a final "*" adds nothing to what matches (only to the
    # priority, which the key already holds).
    pieces = body.split(b"*")
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
    from lazily built helpers that racing threads build alike.
    """

    __slots__ = (
        "_empty",
        "_empty_key",
        "_fallback",
        "_heads",
        "_lines",
        "_outranked_from",
        "_parents",
        "_special_index",
        "_special_scans",
        "_specials",
        "_table",
        "_values",
        "_written",
        "no_rules",
    )

    def __init__(self, lines: Sequence[int], values: Sequence[bytes]) -> None:
        self._lines = lines
        self._values = values
        self._written: dict[int, bytes] | None = None
        self._fallback: tuple[RuleIndex, list[bytes]] | None = None
        self.no_rules = not values
        joined = b"\n".join(values)
        patterns: Sequence[bytes] = values
        if not joined.isascii() or b"%" in joined:
            patterns = [escape_pattern(value) for value in values]
        # Pattern -> signed line of its best rule. Reversed, the earliest line
        # is the one kept; a pattern written twice needs allow before disallow.
        table = dict(zip(reversed(patterns), reversed(lines), strict=True))
        if len(table) < len(patterns):
            for line, pattern in zip(lines, patterns, strict=True):
                if line > 0 > table[pattern]:
                    table[pattern] = line
        specials: list[_Special] = []
        if b"*" in joined or b"$" in joined:
            for pattern in [p for p in table if b"*" in p or p.endswith(b"$")]:
                specials.append(_special(pattern, table.pop(pattern)))
        if b"/index.htm" in joined:
            # Google-specific: "allow: /a/index.html" also allows the directory
            # "/a/" itself, as "/a/$" would (with that pattern's priority).
            for line, pattern in zip(lines, patterns, strict=True):
                slash = pattern.rfind(b"/")
                if line > 0 and slash >= 0 and pattern.startswith(b"/index.htm", slash):
                    specials.append(_special(pattern[: slash + 1] + b"$", line))
        # The empty pattern matches every path with priority 0: it never
        # disallows, but it is the deciding line when nothing longer matched.
        empty = table.pop(b"", None)
        self._empty = 0 if empty is None else abs(empty)
        self._empty_key = -1 if empty is None else _rank_key(0, empty > 0, abs(empty))
        self._table = table
        self._heads = sorted(table)
        specials.sort(reverse=True)
        self._specials: tuple[_Special, ...] | None = tuple(specials) if specials else None
        # A plain pattern this long or longer outranks every special one.
        self._outranked_from = (specials[0][0] >> (_LINE_BITS + 1)) + 1 if specials else -1
        # Head -> the longest other head that is a prefix of it (None: none),
        # filled as lookups need it.
        self._parents: dict[bytes, bytes | None] = {}
        self._special_index: RuleIndex | None = None
        self._special_scans = 0 if len(specials) >= _SPECIAL_INDEX_MIN else -1

    def decide(self, path: bytes) -> int:
        """The signed deciding line for ``path`` (its path, params and query)."""
        heads = self._heads
        position = bisect_right(heads, path)
        head: bytes | None = None
        if position:
            # heads[position - 1] is the largest head <= path. Every head that
            # is a prefix of the path is a prefix of it too (it sorts between
            # them), so when it is no prefix itself, its own longest prefix
            # head (memoised) is the next candidate, and usually the answer.
            head = heads[position - 1]
            if not path.startswith(head):
                parents = self._parents
                parent = parents.get(head, head)
                if parent is head:
                    parent = parents[head] = self._longest_prefix(head[:-1], position - 1)
                if parent is None or path.startswith(parent):
                    head = parent
                else:
                    head = self._longest_prefix(path, position - 1)
        if head is None:
            if self._specials is None:
                return self._empty
            return self._with_specials(path, self._empty, -1)
        line = self._table[head]
        if len(head) >= self._outranked_from:
            return line
        return self._with_specials(path, line, len(head))

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
        best = self._empty_key if length < 0 else _rank_key(length, line > 0, abs(line))
        specials = self._specials
        assert specials is not None
        index = self._special_index
        if index is None and self._special_scans >= 0:
            self._special_scans += 1
            if self._special_scans > _SPECIAL_INDEX_AFTER:
                index = self._special_index = RuleIndex([special[6] for special in specials])
        if index is not None:
            rank = index.first_match(path)
            if rank != NO_MATCH and specials[rank][0] > best:
                return specials[rank][5]
            return line
        for key, kind, head, tail, pieces, special_line, _ in specials:
            if key <= best:
                break
            if kind == _HEAD_TAIL:
                if path.startswith(head) and path.find(tail, len(head)) >= 0:
                    return special_line
            elif kind == _HEAD_TAIL_END:
                if (
                    path.endswith(tail)
                    and path.startswith(head)
                    and len(path) >= len(head) + len(tail)
                ):
                    return special_line
            elif kind == _EQUAL:
                if path == head:
                    return special_line
            elif tail in path and match_pieces(path, pieces, kind == _GENERAL_END):  # type: ignore[arg-type]
                return special_line
        return line

    def _prefix_by_index(self, path: bytes) -> bytes | None:
        """The longest head that is a prefix of ``path``, through a head-chain
        index: for heads and paths built to make the walk long."""
        fallback = self._fallback
        if fallback is None:
            longest_first = sorted(self._heads, key=len, reverse=True)
            fallback = self._fallback = (RuleIndex(longest_first), longest_first)
        rank = fallback[0].first_match(path)
        return None if rank == NO_MATCH else fallback[1][rank]

    def written(self, line: int) -> str | None:
        """The rule at ``line`` as written; None for 0."""
        if not line:
            return None
        written = self._written
        if written is None:
            written = self._written = dict(zip(map(abs, self._lines), self._values, strict=True))
        return written[abs(line)].decode("utf-8", "replace")
