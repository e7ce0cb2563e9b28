"""Problems found in a tdmrep.json, a header or a meta tag, for a linter to show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Severity", "TdmDiagnostic"]

Severity = Literal["error", "warning", "info"]
"""``error``: the protocol ignores what was written (the value is unset or the
rule never applies); ``warning``: it is read, but probably not as meant;
``info``: worth knowing, harmless."""


@dataclass(frozen=True, slots=True)
class TdmDiagnostic:
    """One problem: how bad, a stable code, a message, and where."""

    severity: Severity
    code: str
    message: str
    rule: int | None = None
    """1-based index of the rule in the tdmrep.json array; None for the file or a signal."""
    line: int | None = None
    """1-based line in the tdmrep.json body; None when not known."""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "rule": self.rule,
            "line": self.line,
        }
