"""The two later steps: ``tdm-*`` response header fields and HTML ``<meta>`` tags.

Both give the same pair of values as a file rule; :func:`resolve` puts the
three in the spec's order. Neither reads a response: the caller hands over
header fields, or the ``(name, content)`` pairs of the document head (as
``scrapy_googlerobots.htmlmeta.head_meta(body, META_NAMES.__contains__)``
returns them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ._diagnostics import TdmDiagnostic
from ._sources import HeaderSource, MetaSource
from ._values import check_policy_url, reservation_from_text

__all__ = [
    "HEADER_NAMES",
    "META_NAMES",
    "HeaderValue",
    "TdmSignal",
    "from_header_values",
    "from_headers",
    "from_meta",
]

RESERVATION = "tdm-reservation"
POLICY = "tdm-policy"
#: Header field names (lower case) and meta names the protocol defines.
HEADER_NAMES = frozenset((RESERVATION, POLICY))
META_NAMES = HEADER_NAMES

HeaderValue: TypeAlias = "str | bytes | Sequence[str | bytes]"
"""One header value, or every value of a repeated field (Scrapy's ``getlist``)."""


@dataclass(frozen=True, slots=True)
class TdmSignal:
    """What one step (the response header or the HTML meta tags) says."""

    step: Literal["header", "meta"]
    reservation: int | None
    """``1``, ``0``, or None: absent or invalid here (the earlier value stays)."""
    policy: str | None
    """The policy URL; None when absent, invalid, or beside ``tdm-reservation: 0``."""
    reservation_text: str | None = None
    """The value(s) as received, joined with ", "; None when absent."""
    policy_text: str | None = None
    diagnostics: tuple[TdmDiagnostic, ...] = ()

    @property
    def present(self) -> bool:
        """Whether either property appears at this step at all."""
        return self.reservation_text is not None or self.policy_text is not None

    @property
    def reservation_source(self) -> HeaderSource | MetaSource | None:
        """This step as the source of its reservation (None when it gives none)."""
        if self.reservation is None or self.reservation_text is None:
            return None
        return self._source(RESERVATION, self.reservation_text)

    @property
    def policy_source(self) -> HeaderSource | MetaSource | None:
        """This step as the source of its policy (None when it gives none)."""
        if self.policy is None or self.policy_text is None:
            return None
        return self._source(POLICY, self.policy_text)

    def _source(self, name: str, text: str) -> HeaderSource | MetaSource:
        if self.step == "header":
            return HeaderSource(name, text)
        return MetaSource(name, text)


def _text(value: str | bytes) -> str:
    if isinstance(value, str):
        return value
    try:
        return value.decode()
    except UnicodeDecodeError:
        return value.decode("latin-1")  # HTTP's historical charset; never fails


def _values(value: HeaderValue) -> list[str]:
    if isinstance(value, (str, bytes)):
        return [_text(value)]
    return [_text(item) for item in value]


def from_headers(
    headers: Mapping[str, HeaderValue]
    | Mapping[bytes, HeaderValue]
    | Iterable[tuple[str | bytes, HeaderValue]],
) -> TdmSignal:
    """The ``tdm-reservation`` / ``tdm-policy`` fields of a response (names case-insensitive).

    Takes a mapping (Scrapy ``Headers`` included) or ``(name, value)`` pairs;
    a value may be a list of the field's values.
    """
    items: Iterable[tuple[str | bytes, HeaderValue]] = (
        headers.items() if isinstance(headers, Mapping) else headers
    )
    found: dict[str, list[str]] = {RESERVATION: [], POLICY: []}
    for name, value in items:
        key = _text(name).strip().lower()
        if key in found:
            found[key].extend(_values(value))
    return from_header_values(found[RESERVATION] or None, found[POLICY] or None)


def from_header_values(
    reservation: HeaderValue | None, policy: HeaderValue | None = None
) -> TdmSignal:
    """The header step from the raw ``tdm-reservation`` and ``tdm-policy`` values (None: absent).

    Several ``tdm-reservation`` values (repeated fields, or one field with a
    comma-separated list) must agree; otherwise the step is unset.
    """
    members: list[str] | None = None
    if reservation is not None:
        # A repeated field is the same as one field with a comma-separated
        # list (RFC 9110, 5.3); empty list elements are ignored there.
        members = [m for v in _values(reservation) for m in v.split(",") if m.strip(" \t")]
        members = members or [""]
    return _signal("header", members, _values(policy) if policy is not None else None)


def from_meta(pairs: Iterable[tuple[str, str]]) -> TdmSignal:
    """The meta step from a document head's ``(name, content)`` pairs (names case-insensitive)."""
    found: dict[str, list[str]] = {RESERVATION: [], POLICY: []}
    for name, content in pairs:
        key = name.strip().lower()
        if key in found:
            found[key].append(content)
    return _signal("meta", found[RESERVATION] or None, found[POLICY] or None)


def _signal(
    step: Literal["header", "meta"], reservations: list[str] | None, policies: list[str] | None
) -> TdmSignal:
    where = "header field" if step == "header" else "meta tag"
    problems: list[TdmDiagnostic] = []
    reservation: int | None = None
    reservation_text: str | None = None
    if reservations is not None:
        reservation_text = ", ".join(reservations)
        values = {reservation_from_text(text) for text in reservations}
        if None in values:
            bad = next(t for t in reservations if reservation_from_text(t) is None)
            problems.append(
                TdmDiagnostic(
                    "error",
                    "bad-reservation",
                    f"{RESERVATION} {where} {bad!r} is not 0 or 1; unset at this step",
                )
            )
        elif len(values) > 1:
            problems.append(
                TdmDiagnostic(
                    "error",
                    "conflicting-values",
                    f"{RESERVATION} {where}s disagree ({reservation_text}); unset at this step",
                )
            )
        else:
            reservation = values.pop()
    policy: str | None = None
    policy_text: str | None = None
    if policies is not None:
        policy_text = ", ".join(policies)
        checked = {check_policy_url(text) for text in policies}
        urls = {url for url, _ in checked}
        if None in urls:
            why = next(why for _, why in checked if why is not None)
            problems.append(
                TdmDiagnostic(
                    "error", "bad-policy", f"{POLICY} {where} {policy_text!r} {why}; ignored"
                )
            )
        elif len(urls) > 1:
            problems.append(
                TdmDiagnostic(
                    "error",
                    "conflicting-values",
                    f"{POLICY} {where}s disagree ({policy_text}); ignored",
                )
            )
        elif reservation == 0:
            problems.append(
                TdmDiagnostic(
                    "warning",
                    "policy-ignored",
                    f"{POLICY} beside {RESERVATION}: 0 is not processed",
                )
            )
        else:
            policy = urls.pop()
    return TdmSignal(step, reservation, policy, reservation_text, policy_text, tuple(problems))
