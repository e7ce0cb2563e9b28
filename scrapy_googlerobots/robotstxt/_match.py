"""The URL side and the pattern side of matching (google/robotstxt ``robots.cc``).

Like the reference, everything here works on bytes: the URL's UTF-8 bytes on
one side, normalised patterns (see ``escape_pattern``) on the other.
"""

from __future__ import annotations

import re

__all__ = ["HTTP_AUTHORITY", "match_pieces", "path_params_query", "pattern_matches"]

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
