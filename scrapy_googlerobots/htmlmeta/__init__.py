"""The ``<meta name=... content=...>`` tags of an HTML document's head, as a browser builds it.

:func:`head_meta` reads a document as an HTML5 tree builder with scripting on
does until the head ends, and gives the metas that builder puts in ``<head>``:
those after ``</head>`` but before any content go back into it; those after an
element that is not valid in the head (``<img>``, ``<div>``, text, ...) do not.
It is linear in the bytes it reads and reads at most Google's 15 MB.
This package imports only the standard library.
"""

from __future__ import annotations

from ._scan import DEFAULT_LIMIT, head_meta, may_name, named_meta

__all__ = ["DEFAULT_LIMIT", "head_meta", "may_name", "named_meta"]
