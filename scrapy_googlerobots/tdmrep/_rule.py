"""One rule of a tdmrep.json: its location pattern, reservation and policy."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._pattern import location_matches, normalise_path
from ._sources import FileSource

__all__ = ["WELL_KNOWN_PATH", "TdmRule"]

WELL_KNOWN_PATH = "/.well-known/tdmrep.json"


@dataclass(frozen=True, slots=True)
class TdmRule:
    """One rule of a tdmrep.json, as the protocol reads it."""

    index: int
    """1-based position in the array ("rule N")."""
    line: int
    """1-based line of the body where the rule starts."""
    location: str | None
    """The pattern as written; None when missing or not a string."""
    reservation: int | None
    """``1`` reserved, ``0`` not reserved, None unset (missing or invalid)."""
    policy: str | None
    """The TDM Policy URL; None when absent, invalid, or beside ``tdm-reservation: 0``."""
    file_url: str = WELL_KNOWN_PATH
    """The file the rule comes from, for explanations."""
    pattern: bytes | None = field(default=None, repr=False, compare=False)
    """The normalised pattern; None when the rule can never match."""

    def matches(self, url_or_path: str | bytes) -> bool:
        """Whether this rule's ``location`` matches the URL's path (and query)."""
        return self.pattern is not None and location_matches(
            self.pattern, normalise_path(url_or_path)
        )

    @property
    def source(self) -> FileSource:
        """This rule as the step of a verdict."""
        return FileSource(self.index, self.location or "", self.file_url, self.line)
