"""Sphinx configuration of the scrapy-googlerobots documentation.

Built offline and nitpicky (``sphinx-build -W --keep-going -n -b html docs
docs/_build/html``): every reference to the package's own objects must
resolve; references to Scrapy, Twisted and the standard library are not
linked (no intersphinx: the build fetches nothing) and listed below.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy_googlerobots import __version__  # noqa: E402  (the path above first)

project = "scrapy-googlerobots"
author = "scrapy-googlerobots developers"
copyright = "scrapy-googlerobots developers"
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = ["sphinx.ext.autodoc"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"scrapy-googlerobots {release}"
pygments_style = "sphinx"

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True

nitpicky = True
# Objects of other projects, which would need an intersphinx inventory
# fetched from the network to link. The package's own objects are never
# listed here: a reference to one of them must resolve.
nitpick_ignore_regex = [
    (r"py:.*", r"(scrapy|twisted|w3lib)(\..*)?"),
    (r"py:.*", r"(collections\.abc|typing|typing_extensions|enum|logging)\..*"),
    (r"py:class", r"(Crawler|Request|Response|Spider|BaseSettings|Settings|Failure|Deferred)"),
    (r"py:class", r"(Callable|Coroutine|Iterator|Iterable|Mapping|Self|Any|NamedTuple)"),
    (r"py:.*", r"(time\.time|ValueError|NoneType|object)"),
    (r"py:.*", r"datetime\..*"),
]


class _UsageGlobMayBeEmpty(logging.Filter):
    """The usage pages of features still on their way join by glob (index.rst).

    Until one exists, ``usage/*`` matches nothing more than the pages listed
    before it, which is not an error. (Sphinx logs this warning without a
    type, so ``suppress_warnings`` cannot name it.)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("toctree glob pattern 'usage/*'")


def setup(app: Any) -> None:
    logging.getLogger("sphinx.sphinx.directives.other").addFilter(_UsageGlobMayBeEmpty())
    # Cross-referenceable settings and request meta keys, as Scrapy and
    # scrapy-zyte-api declare them: ``.. setting:: NAME`` is a link target
    # (the section title below it shows the name), ``:setting:`NAME``` links.
    app.add_crossref_type("setting", "setting", indextemplate="pair: %s; setting")
    app.add_crossref_type("reqmeta", "reqmeta", indextemplate="pair: %s; request meta key")
    # A stat is an object of its own: ``.. stat:: NAME`` shows the name and
    # its description (no section per stat).
    app.add_object_type("stat", "stat", indextemplate="pair: %s; stat")
