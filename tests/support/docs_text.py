"""Reading the documentation's reStructuredText the way the tests need it.

The docs are the reference (settings, stats, command examples); the tests
read them with these helpers and check them against the code, so the two
cannot drift apart.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DOCS",
    "ROOT",
    "SettingEntry",
    "all_docs_text",
    "code_blocks",
    "documented_settings",
    "documented_stats",
    "section",
]

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def all_docs_text() -> str:
    """Every page of the documentation, concatenated."""
    return "\n".join(
        path.read_text(encoding="utf-8")
        for path in sorted(DOCS.rglob("*.rst"))
        if "_build" not in path.parts
    )


def section(text: str, title: str) -> str:
    """The section titled ``title``, up to the next title with the same underline."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines[:-1]):
        underline = lines[index + 1].rstrip("\n")
        if line.rstrip("\n") == title and _is_underline(underline, title):
            mark = underline[0]
            end = len(lines)
            for later in range(index + 2, len(lines) - 1):
                below = lines[later + 1].rstrip("\n")
                if below[:1] == mark and _is_underline(below, lines[later].rstrip("\n")):
                    end = later
                    break
            return "".join(lines[index:end])
    raise LookupError(f"no section titled {title!r}")


def _is_underline(line: str, title: str) -> bool:
    return bool(title.strip()) and len(set(line)) == 1 and len(line) >= len(title) > 0


def code_blocks(text: str, language: str) -> list[str]:
    """The contents of ``.. code-block:: language`` directives, dedented."""
    pattern = rf"^\.\. code-block:: {re.escape(language)}\n(?:[ ]+:.*\n)*\n((?:(?:[ ]+\S.*)?\n)+)"
    found = []
    for block in re.findall(pattern, text, flags=re.MULTILINE):
        found.append(textwrap.dedent(block).rstrip("\n") + "\n")
    return found


@dataclass(frozen=True)
class SettingEntry:
    """One ``.. setting::`` entry of docs/reference/settings.rst."""

    name: str
    default_text: str
    """The ``Default:`` line after the colon, as written."""
    type_text: str
    """The ``Type:`` line after the colon, as written."""
    examples: tuple[str, ...]
    """The right-hand sides of ``NAME = ...`` lines in the entry's python examples."""

    @property
    def default(self) -> Any:
        """The first literal of the Default line, as a Python value."""
        return ast.literal_eval(re.findall(r"``(.+?)``", self.default_text)[0])

    @property
    def types(self) -> tuple[type, ...]:
        """The Python types the Type line allows (``float`` takes ints too)."""
        names = re.findall(r"``(.+?)``", self.type_text)
        mapping: dict[str, tuple[type, ...]] = {
            "bool": (bool,),
            "int": (int,),
            "float": (int, float),
            "str": (str,),
            "list": (list,),
            "None": (type(None),),
        }
        allowed: tuple[type, ...] = ()
        for name in names:
            if name not in mapping:
                break  # past the types: value lists such as ``"defer"``
            allowed += mapping[name]
        return allowed


def documented_settings() -> dict[str, SettingEntry]:
    """Setting name -> its entry in docs/reference/settings.rst, in page order."""
    text = (DOCS / "reference" / "settings.rst").read_text(encoding="utf-8")
    entries: dict[str, SettingEntry] = {}
    parts = re.split(r"^\.\. setting:: (\S+)\n", text, flags=re.MULTILINE)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        default = re.search(r"^Default: (.+)$", body, flags=re.MULTILINE)
        kind = re.search(r"^Type: (.+)$", body, flags=re.MULTILINE)
        if default is None or kind is None:
            raise AssertionError(f"{name}: the entry needs a Default: and a Type: line")
        examples = tuple(
            match
            for block in code_blocks(body, "python")
            for match in re.findall(rf"^{name} = (.+?)(?:  #.*)?$", block, flags=re.MULTILINE)
        )
        if name in entries:
            raise AssertionError(f"{name} is documented twice")
        entries[name] = SettingEntry(name, default[1], kind[1], examples)
    return entries


def documented_stats() -> list[str]:
    """The ``.. stat::`` names of docs/reference/stats.rst (``<...>``: a family)."""
    text = (DOCS / "reference" / "stats.rst").read_text(encoding="utf-8")
    return re.findall(r"^\.\. stat:: (\S+)$", text, flags=re.MULTILINE)
