"""Where a verdict's answer came from: a tdmrep.json rule, a header field or a meta tag."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["FileSource", "HeaderSource", "MetaSource", "TdmSource"]


@dataclass(frozen=True, slots=True)
class FileSource:
    """A value taken from a tdmrep.json rule."""

    rule: int
    """1-based index of the rule in the array."""
    location: str
    file_url: str
    line: int

    @property
    def step(self) -> Literal["file"]:
        return "file"

    def describe(self) -> str:
        """``rule 2 of /.well-known/tdmrep.json (location "/articles/*")``."""
        location = json.dumps(self.location, ensure_ascii=False)
        return f"rule {self.rule} of {self.file_url} (location {location})"


@dataclass(frozen=True, slots=True)
class HeaderSource:
    """A value taken from a response header field."""

    name: str
    value: str
    """The field value(s) as received."""

    @property
    def step(self) -> Literal["header"]:
        return "header"

    @property
    def text(self) -> str:
        """The header line, ``tdm-reservation: 1``."""
        return f"{self.name}: {self.value}"

    def describe(self) -> str:
        """``header "tdm-reservation: 1"``."""
        return f'header "{self.text}"'


@dataclass(frozen=True, slots=True)
class MetaSource:
    """A value taken from an HTML ``<meta name=... content=...>`` tag."""

    name: str
    content: str

    @property
    def step(self) -> Literal["meta"]:
        return "meta"

    @property
    def tag(self) -> str:
        """The tag, rebuilt: ``<meta name="tdm-reservation" content="1">``."""
        return f'<meta name="{self.name}" content="{html.escape(self.content)}">'

    def describe(self) -> str:
        """``meta tag <meta name="tdm-reservation" content="1">``."""
        return f"meta tag {self.tag}"


TdmSource: TypeAlias = "FileSource | HeaderSource | MetaSource"
