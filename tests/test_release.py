"""Releases: one version everywhere, a changelog entry for it, and workflows
that test what tox.ini lists and publish with trusted publishing.

(.ci/run lints the workflows themselves with actionlint.)
"""

from __future__ import annotations

import configparser
import importlib.metadata
import json
import re
import runpy
from pathlib import Path

import scrapy_googlerobots

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"


def test_the_distribution_version_is_the_packages() -> None:
    # pyproject.toml reads it from scrapy_googlerobots.__version__ (dynamic).
    assert importlib.metadata.version("scrapy-googlerobots") == scrapy_googlerobots.__version__
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = pyproject.split("\n[project]\n", 1)[1].split("\n[", 1)[0]
    assert 'dynamic = ["version"]' in project
    assert not re.search(r"^version\s*=", project, re.MULTILINE)
    assert 'version = { attr = "scrapy_googlerobots.__version__" }' in pyproject


def test_the_docs_show_the_packages_version() -> None:
    conf = runpy.run_path(str(ROOT / "docs" / "conf.py"))
    assert conf["release"] == scrapy_googlerobots.__version__


def test_the_changelog_has_the_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.MULTILINE)
    assert headings[0] == "Unreleased"
    # The newest release is the package's version (bumped together at release).
    assert headings[1] == scrapy_googlerobots.__version__


def _tox_scrapy_versions() -> list[str]:
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    envlist = tox["tox"]["envlist"]
    [versions] = re.findall(r"scrapy\{([\d,]+)\}-\{asyncio,classic\}", envlist)
    return versions.split(",")


def test_the_tests_workflow_runs_the_tox_matrix() -> None:
    text = (WORKFLOWS / "tests.yml").read_text(encoding="utf-8")
    full, short = (json.loads(found) for found in re.findall(r"'(\[[^']+\])'", text))
    versions = _tox_scrapy_versions()
    assert full == versions
    assert short == [versions[0], versions[-1]]  # every push: the oldest and the newest
    assert "reactor: [asyncio, classic]" in text
    assert 'tox -e "scrapy${{ matrix.scrapy }}-${{ matrix.reactor }}"' in text
    assert "schedule:" in text and "redis-server" in text


def test_a_tag_runs_everything_then_publishes_with_trusted_publishing() -> None:
    text = (WORKFLOWS / "release.yml").read_text(encoding="utf-8")
    assert 'tags: ["v*"]' in text
    assert "uses: ./.github/workflows/tests.yml" in text and "full: true" in text
    assert "twine check --strict dist/*" in text
    publish = text.split("\n  publish:\n", 1)[1]
    assert "id-token: write" in publish  # trusted publishing: no token stored anywhere
    assert "environment:" in publish
    assert "uses: pypa/gh-action-pypi-publish@release/v1" in publish
    assert "password" not in publish


def test_the_docs_workflow_builds_them_as_ci_does() -> None:
    assert "run: tox -e docs" in (WORKFLOWS / "docs.yml").read_text(encoding="utf-8")
