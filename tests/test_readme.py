"""The README is a landing page that cannot drift: its Quickstart is what CI
runs, its settings table shows the documented (so the code's) defaults, its
links lead somewhere, and its docs command is the one CI and tox run."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from docs_text import documented_settings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")


def _section(title: str) -> str:
    return TEXT.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _quickstart_commands() -> list[str]:
    return re.findall(r"```(?:sh|console|bash)\n(.+?)\n```", _section("Quickstart"))


def test_quickstart_has_exactly_two_commands() -> None:
    commands = _quickstart_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in command for command in commands)
    assert "scrapy crawl demo" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_word_for_word() -> None:
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert _quickstart_commands()[1] in ci_lines


def test_a_landing_page_not_a_manual() -> None:
    assert len(TEXT.splitlines()) <= 150


def _settings_rows() -> dict[str, str]:
    section = _section("The settings most users change")
    return dict(re.findall(r"^\| `(ROBOTSTXT_[A-Z_]+)` \| `(.+?)` \|", section, re.MULTILINE))


def test_the_readme_shows_five_settings() -> None:
    assert len(_settings_rows()) == 5


@pytest.mark.parametrize("setting", sorted(_settings_rows()))
def test_a_readme_default_is_the_documented_one(setting: str) -> None:
    # The reference's defaults are checked against the code (test_docs_reference.py).
    assert ast.literal_eval(_settings_rows()[setting]) == documented_settings()[setting].default


def _relative_links() -> list[str]:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT)
    return sorted({t for t in targets if "://" not in t})


def test_the_readme_links_into_the_docs() -> None:
    assert "docs/reference/settings.rst" in _relative_links()
    assert "docs/index.rst" in _relative_links()


@pytest.mark.parametrize("target", _relative_links())
def test_a_relative_link_leads_to_a_file(target: str) -> None:
    assert (ROOT / target).exists(), target


def test_the_readme_docs_command_is_what_ci_and_tox_run() -> None:
    [command] = re.findall(r"`pip install -e \"\.\[docs\]\" && (sphinx-build [^`]+)`", TEXT)
    assert command in (ROOT / "tox.ini").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    [ci_command] = [line for line in ci.splitlines() if line.startswith("sphinx-build ")]
    assert ci_command.replace(" -q", "") == command


def test_the_add_on_is_documented_for_the_scrapy_the_package_needs() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    [oldest] = re.findall(r'"scrapy>=([\d.]+)"', pyproject)
    setup = (ROOT / "docs" / "setup.rst").read_text(encoding="utf-8")
    for text in (TEXT, setup):
        assert f"With the add-on (Scrapy ≥ {oldest}, as the package)" in text
