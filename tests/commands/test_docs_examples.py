"""The command examples of docs/usage/commands.rst print what the commands print.

``googlerobots``: the page's robots.txt is written to a directory, each
``$ googlerobots ...`` line is run there with the installed script, and its
stderr then stdout (notes come before verdicts, as on a terminal) must equal
the lines shown. ``scrapy robots``: the demo web is served on free ports, the
page's ports (``--port 36001``: origin i on 36001 + i) are mapped to them,
and the command run in ``example_project`` must print the lines shown. Every
``--option`` a ``googlerobots ...`` synopsis of the docs or README shows exists.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet.threads import deferToThread

from scrapy_googlerobots.commands.googlerobots import build_parser

from docs_text import DOCS, ROOT, all_docs_text, code_blocks, section

PAGE = (DOCS / "usage" / "commands.rst").read_text(encoding="utf-8")
PROJECT = ROOT / "example_project"
BIN = Path(sys.executable).parent
DOCS_BASE_PORT = 36001


def sessions(text: str) -> Iterator[tuple[str, str]]:
    """(command, shown output) for each ``$`` line of the console blocks in ``text``."""
    for block in code_blocks(text, "console"):
        for session in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            lines = session.splitlines(keepends=True)
            command = ""
            while lines[0].rstrip("\n").endswith("\\"):
                command += lines.pop(0).rstrip("\n")[:-1]
            command += lines.pop(0).rstrip("\n")
            yield " ".join(command.split()), "".join(lines)


GOOGLEROBOTS = section(PAGE, "The ``googlerobots`` command")
SCRAPY_ROBOTS = section(PAGE, "The ``scrapy robots`` command")


def test_the_sections_show_examples() -> None:
    assert [c.split()[:2] for c, _ in sessions(GOOGLEROBOTS)] == [
        ["googlerobots", "check"],
        ["googlerobots", "lint"],
    ]
    assert [c.split()[:2] for c, _ in sessions(SCRAPY_ROBOTS)] == [["scrapy", "robots"]]


@pytest.mark.parametrize(
    ("command", "shown"),
    list(sessions(GOOGLEROBOTS)),
    ids=[command.split()[1] for command, _ in sessions(GOOGLEROBOTS)],
)
def test_googlerobots_example_output(tmp_path: Path, command: str, shown: str) -> None:
    [robots] = code_blocks(GOOGLEROBOTS, "text")
    (tmp_path / "robots.txt").write_text(robots, encoding="utf-8")
    program, *args = shlex.split(command)
    result = subprocess.run(
        [str(BIN / program), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode in (0, 1), result.stderr
    assert result.stderr + result.stdout == shown


@pytest_twisted.ensureDeferred
async def test_scrapy_robots_example_output() -> None:
    sys.path.insert(0, str(PROJECT))
    try:
        from demo_project.demoweb import DemoWeb
    finally:
        sys.path.remove(str(PROJECT))
    web = DemoWeb()
    web.start()
    try:
        ports = {
            str(DOCS_BASE_PORT + index): origin.url.rsplit(":", 1)[1]
            for index, origin in enumerate(web.origins)
        }

        def ours(text: str) -> str:
            return re.sub(r"(?<=127\.0\.0\.1:)(\d+)", lambda port: ports[port[1]], text)

        [(command, shown)] = sessions(SCRAPY_ROBOTS)
        program, *args = shlex.split(ours(command))
        env = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY_")}
        result = await deferToThread(
            subprocess.run,
            [str(BIN / program), *args],
            cwd=PROJECT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        await web.stop()
    assert result.returncode == 1, result.stderr
    assert result.stdout == ours(shown)


def _options_of(command: str) -> set[str]:
    """The option strings ``googlerobots COMMAND`` accepts."""
    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(commands.choices[command]._option_string_actions)


# ``googlerobots COMMAND ...`` as the docs and the README write it inline.
_SYNOPSIS = re.compile(r"`+googlerobots ([a-z][a-z-]*)\b([^`]*)`+")


def test_every_option_the_docs_show_exists() -> None:
    text = all_docs_text() + (ROOT / "README.md").read_text(encoding="utf-8")
    shown = [
        (m[1], option)
        for m in _SYNOPSIS.finditer(text)
        for option in re.findall(r"--[a-z-]+", m[2])
    ]
    assert shown, "the scan found no option"
    unknown = sorted({(c, o) for c, o in shown if o not in _options_of(c)})
    assert not unknown, f"options the docs show that googlerobots does not have: {unknown}"
