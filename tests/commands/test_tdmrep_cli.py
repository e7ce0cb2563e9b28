"""``googlerobots tdmrep`` and ``googlerobots lint`` of a tdmrep.json (issue 27), end to end
through ``python -m scrapy_googlerobots`` in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest_twisted
from twisted.internet.threads import deferToThread

from servers import Reply, Site

FILE = b"""[
  {"location": "/articles/*", "tdm-reservation": 1, "tdm-policy": "https://example.com/p.json"},
  {"location": "/articles/2024/", "tdm-reservation": 0},
  {"location": "/open/", "tdm-reservation": "0"},
  {"tdm-reservation": 1},
  {"location": "news/", "tdm-reservation": 1},
  {"location": "/free/", "tdm-reservation": 0}
]
"""


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    raw = subprocess.run(
        [sys.executable, "-m", "scrapy_googlerobots", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
    )
    result = subprocess.CompletedProcess(
        raw.args, raw.returncode, raw.stdout.decode(), raw.stderr.decode()
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_lint_knows_a_tdmrep_json_by_its_name_and_reports_the_cores_diagnostics(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tdmrep.json"
    path.write_bytes(FILE)
    result = run("lint", str(path))
    assert result.returncode == 1, result
    assert result.stdout.splitlines() == [
        f'{path}:3: warning: rule 2: never decides: rule 1 (location "/articles/*") matches '
        "every path it matches, and the first matching rule wins [unreachable-rule]",
        f'{path}:4: error: rule 3: "tdm-reservation" is "0", not 0 or 1 (write the number 0, '
        "not a string); unset for the URLs this rule matches [bad-reservation]",
        f'{path}:5: error: rule 4: no "location"; the rule never applies [missing-location]',
        f'{path}:6: warning: rule 5: "location" "news/" does not start with / or *, so it '
        "matches no URL (paths start with /) [location-never-matches]",
        "2 errors, 2 warnings",
    ]
    # Any name (or stdin) with --kind; not an array is an error; JSON output.
    document = run("lint", "--kind", "tdmrep", "--format", "json", "-", stdin=b'{"location": "/"}')
    assert document.returncode == 1
    parsed = json.loads(document.stdout)
    assert parsed["kind"] == "tdmrep.json" and parsed["errors"] == 1
    assert [d["code"] for d in parsed["diagnostics"]] == ["not-array"]
    clean = run("lint", "--kind", "tdmrep", "-", stdin=b'[{"location": "/", "tdm-reservation": 0}]')
    assert (clean.returncode, clean.stdout) == (0, "0 errors, 0 warnings\n")
    # The same bytes as robots.txt (the default kind for other names) are another matter.
    assert "[bad-reservation]" not in run("lint", "-", stdin=FILE).stdout


def test_tdmrep_gives_each_urls_verdict_exit_1_when_reserved(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_bytes(FILE)
    urls = [
        "https://example.com/articles/2024/x",
        "/free/a",
        "https://example.com/open/a",
        "https://example.com/other",
    ]
    result = run("tdmrep", str(path), *urls)
    assert result.returncode == 1, result
    assert result.stdout.splitlines() == [
        f'RESERVED     {urls[0]}  rule 1 of {path} (location "/articles/*"), '
        "policy https://example.com/p.json",
        f'NOT-RESERVED {urls[1]}  rule 6 of {path} (location "/free/")',
        f'UNSET        {urls[2]}  rule 3 of {path} (location "/open/") matches but sets no '
        "valid tdm-reservation",
        f"UNSET        {urls[3]}  no tdmrep.json rule, header field or meta tag sets "
        "tdm-reservation",
    ]
    assert "[bad-reservation]" in result.stderr  # errors are noted on stderr
    free = run("tdmrep", str(path), urls[1])
    assert free.returncode == 0


@pytest_twisted.ensureDeferred
async def test_tdmrep_of_a_url_missing_is_unset(site: Site) -> None:
    site.script("/.well-known/tdmrep.json", Reply(404))
    result = await deferToThread(
        run, "tdmrep", site.url("/.well-known/tdmrep.json"), site.url("/articles/1")
    )
    assert result.returncode == 0, result
    assert result.stdout == f"UNSET        {site.url('/articles/1')}  (HTTP 404)\n"
    assert "every URL is unset" in result.stderr
