"""The README's Quickstart is what CI runs, and every setting the code reads is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scrapy_googlerobots.integration.config import DEFAULTS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _quickstart_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:sh|console|bash)\n(.+?)\n```", section)


def test_quickstart_has_exactly_two_commands() -> None:
    commands = _quickstart_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in command for command in commands)
    assert "scrapy crawl demo" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_word_for_word() -> None:
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert _quickstart_commands()[1] in ci_lines


@pytest.mark.parametrize("setting", sorted(DEFAULTS))
def test_every_middleware_setting_is_documented(setting: str) -> None:
    assert f"`{setting}`" in README.read_text(encoding="utf-8")
