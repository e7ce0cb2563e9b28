"""The ``<meta name=... content=...>`` tags of an HTML document's head, read cheaply.

:func:`head_meta` scans only the head (up to ``</head>``, ``<body`` or a byte
limit) with a linear-time tokenizer that skips comments, scripts and styles.
This package imports only the standard library.
"""

from __future__ import annotations

from ._scan import DEFAULT_LIMIT, head_meta

__all__ = ["DEFAULT_LIMIT", "head_meta"]
