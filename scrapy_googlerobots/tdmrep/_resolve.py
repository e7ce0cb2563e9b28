"""Put the three steps in the spec's order and say which one decided.

"The values of `tdm-reservation` and `tdm-policy` found in this header
supercede any value inferred from a TDM file"; those of HTML meta tags
"supercede previous values"; "At every step, the absence of
`tdm-reservation` and `tdm-policy` MUST not reset current values." Each
property is carried on its own: a step that sets only ``tdm-policy`` keeps
the earlier reservation. An invalid value is unset at its step, so it too
keeps the earlier one. A policy is reported only when the final answer is
"reserved": the spec gives it a meaning only then and says not to process it
beside ``tdm-reservation: 0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._diagnostics import TdmDiagnostic
from ._sources import TdmSource

if TYPE_CHECKING:
    from ._rule import TdmRule
    from ._signals import TdmSignal

__all__ = ["TdmVerdict", "resolve"]


@dataclass(frozen=True, slots=True)
class TdmVerdict:
    """The protocol's answer for one resource, with where it came from."""

    reserved: bool | None
    """True: TDM rights reserved; False: not reserved; None: unset (no step set
    a valid value -- the origin does not use the protocol for this resource)."""
    policy: str | None
    """The TDM Policy URL; only ever set when ``reserved`` is True."""
    source: TdmSource | None
    """The step whose ``tdm-reservation`` decided; None when unset."""
    policy_source: TdmSource | None = None
    file_rule: TdmRule | None = None
    """The matching tdmrep.json rule, whether or not it decided."""
    diagnostics: tuple[TdmDiagnostic, ...] = ()
    """Problems with the header and meta values that were looked at."""

    @property
    def explanation(self) -> str:
        """Where the answer comes from: ``rule 2 of ... (location "/a/*"), policy https://...``."""
        if self.source is None:
            rule = self.file_rule
            if rule is not None:
                return f"{rule.source.describe()} matches but sets no valid tdm-reservation"
            return "no tdmrep.json rule, header field or meta tag sets tdm-reservation"
        text = self.source.describe()
        if self.policy is not None:
            text += f", policy {self.policy}"
            if self.policy_source is not None and self.policy_source.step != self.source.step:
                text += f" (from {self.policy_source.describe()})"
        return text

    def describe(self) -> str:
        """One log line: ``TDM rights reserved: <explanation>``."""
        if self.reserved is None:
            return f"TDM reservation unset: {self.explanation}"
        state = "reserved" if self.reserved else "not reserved"
        return f"TDM rights {state}: {self.explanation}"


def resolve(
    file_rule: TdmRule | None,
    header: TdmSignal | None = None,
    meta: TdmSignal | None = None,
) -> TdmVerdict:
    """Combine the file rule, then the header, then the meta tags, each superseding the last.

    Pass None for a step that is absent (no tdmrep.json or no matching rule,
    a response without the fields, a document that is not HTML).
    """
    reservation: int | None = None
    source: TdmSource | None = None
    policy: str | None = None
    policy_source: TdmSource | None = None
    if file_rule is not None:
        if file_rule.reservation is not None:
            reservation, source = file_rule.reservation, file_rule.source
        if file_rule.policy is not None:
            policy, policy_source = file_rule.policy, file_rule.source
    diagnostics: list[TdmDiagnostic] = []
    for signal in (header, meta):
        if signal is None:
            continue
        diagnostics.extend(signal.diagnostics)
        if signal.reservation is not None:
            reservation, source = signal.reservation, signal.reservation_source
        if signal.policy is not None:
            policy, policy_source = signal.policy, signal.policy_source
    reserved = None if reservation is None else reservation == 1
    if not reserved:
        policy = policy_source = None
    return TdmVerdict(reserved, policy, source, policy_source, file_rule, tuple(diagnostics))
