"""Page-level robots directives (X-Robots-Tag headers, robots meta tags), read as Google does.

:func:`parse_page_directives` combines header values and meta pairs into the
immutable :class:`PageDirectives` in effect for one crawler, recording the
:class:`Source` of each directive and what was ignored or malformed;
:func:`from_headers_and_body` reads the meta tags from an HTML body first.
This package imports only the standard library (and its sibling ``htmlmeta``).
"""

from __future__ import annotations

from ._dates import parse_date
from ._model import EMPTY, PageDirectives, Rejected, Source, SourceKind
from ._parse import (
    FLAG_DIRECTIVES,
    IMAGE_PREVIEW_SIZES,
    VALUE_DIRECTIVES,
    from_headers_and_body,
    parse_page_directives,
)

__all__ = [
    "EMPTY",
    "FLAG_DIRECTIVES",
    "IMAGE_PREVIEW_SIZES",
    "VALUE_DIRECTIVES",
    "PageDirectives",
    "Rejected",
    "Source",
    "SourceKind",
    "from_headers_and_body",
    "parse_date",
    "parse_page_directives",
]
