"""The TDM Reservation Protocol (TDMRep, W3C CG final report 2024-05-10), standard library only.

``parse_tdmrep_json`` reads ``/.well-known/tdmrep.json`` and finds the first
rule matching a URL; ``from_headers`` / ``from_meta`` read the response header
fields and the HTML meta tags; ``resolve`` orders the three steps and explains
the verdict. This package imports only the standard library and the robots.txt
core (:mod:`scrapy_googlerobots.robotstxt`, for path matching).
"""

from __future__ import annotations

from ._diagnostics import Severity, TdmDiagnostic
from ._file import TdmRepFile, parse_tdmrep_json
from ._resolve import TdmVerdict, resolve
from ._rule import WELL_KNOWN_PATH, TdmRule
from ._signals import (
    HEADER_NAMES,
    META_NAMES,
    HeaderValue,
    TdmSignal,
    from_header_values,
    from_headers,
    from_meta,
)
from ._sources import FileSource, HeaderSource, MetaSource, TdmSource

__all__ = [
    "HEADER_NAMES",
    "META_NAMES",
    "WELL_KNOWN_PATH",
    "FileSource",
    "HeaderSource",
    "HeaderValue",
    "MetaSource",
    "Severity",
    "TdmDiagnostic",
    "TdmRepFile",
    "TdmRule",
    "TdmSignal",
    "TdmSource",
    "TdmVerdict",
    "from_header_values",
    "from_headers",
    "from_meta",
    "parse_tdmrep_json",
    "resolve",
]
