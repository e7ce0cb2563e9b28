"""Run some of Scrapy's own crawl tests with robots.txt obeyed: stock middleware vs our add-on.

Scrapy's tests crawl with ``ROBOTSTXT_OBEY`` off. Run with it forced on, they
show whether a crawl behaves the same when our add-on replaces the stock
middleware: the same test tree (the sdist of the installed Scrapy, fetched as
``scrapy_stock_tests.py`` fetches it) is run twice, once with Scrapy's default
settings patched to ``ROBOTSTXT_OBEY = True`` (the stock middleware), once to
``ADDONS = {"scrapy_googlerobots.Addon": 0}`` (ours), through a ``conftest``
plugin that patches ``scrapy.settings.default_settings`` before any crawler is
made. Scrapy's mock server answers ``/robots.txt`` 404: every URL allowed, so a
test can only diverge by how its requests wait for robots.txt.

Exit status 0 when every selected test that passes with the stock middleware
passes with ours. Each test is run on its own, bounded (``--timeout``): a test
that waits for robots.txt forever fails by the clock. A default test that this
Scrapy's test tree does not have (``tests/test_engine_loop.py`` came with
Scrapy 2.13) is named as absent and passes.

Usage: python .ci/scrapy_forced_addon_tests.py [--reactor asyncio|classic] [TEST_ID ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import scrapy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scrapy_stock_tests import copy_tests, fetch_sdist, reactor_plugins

# The tests issue 32 names, as a module and a name (a class or a test function,
# selected with -k: the class's name differs between Scrapy releases); any test
# ids may be given on the command line instead.
DEFAULT_TESTS = [
    ("tests/test_engine_loop.py", "TestRequestSendOrder"),
    ("tests/test_request_attribute_binding.py", "test_downloader_middleware_raise_exception"),
]

_PLUGIN = '''
"""Forces robots.txt obedience on every crawler these tests make (see the runner)."""
import os

import scrapy.settings.default_settings as defaults

if os.environ["FORCED_ROBOTSTXT"] == "ours":
    defaults.ADDONS = {"scrapy_googlerobots.Addon": 0}
else:
    defaults.ROBOTSTXT_OBEY = True
'''


def run(
    workdir: Path, which: str, reactor: str, selection: list[str], timeout: float
) -> dict[str, str]:
    """Test name -> "passed", "failed", "skipped" or "timeout" with the ``which`` middleware
    (``selection``: pytest's arguments that select the tests)."""
    report = workdir / f"report-{which}-{reactor}.xml"
    report.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "pytest", *selection, "-p", "forced_robotstxt",
        "-p", "no:cacheprovider", *reactor_plugins(workdir),
        "-q", f"--reactor={'asyncio' if reactor == 'asyncio' else 'default'}",
        f"--junitxml={report}", "-o", "addopts=",
    ]  # fmt: skip
    env = {"FORCED_ROBOTSTXT": which, "PYTHONPATH": str(workdir)}
    try:
        completed = subprocess.run(
            command,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **env},
        )
    except subprocess.TimeoutExpired:
        return {selection[-1].split("::", 1)[-1]: "timeout"}
    if not report.exists():
        print(completed.stdout[-4000:], completed.stderr[-4000:], sep="\n")
        raise SystemExit(f"pytest did not run ({which}, {reactor}): exit {completed.returncode}")
    results: dict[str, str] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        if not case.get("classname"):  # the module itself: it could not be collected
            error = case.find("error")
            why = "" if error is None else error.get("message", "")
            raise SystemExit(f"{case.get('name')} could not be collected ({which}): {why}")
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        if case.find("skipped") is not None:
            results[name] = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            results[name] = "failed"
        else:
            results[name] = "passed"
    return results


def selections(workdir: Path, tests: list[str]) -> tuple[list[list[str]], list[str]]:
    """pytest's arguments for each test to run, and the default tests this tree lacks."""
    if tests:
        return [[test] for test in tests], []
    present = [(module, name) for module, name in DEFAULT_TESTS if (workdir / module).exists()]
    absent = [
        f"{module}::{name}" for module, name in DEFAULT_TESTS if (module, name) not in present
    ]
    return [[module, "-k", name] for module, name in present], absent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reactor", choices=["asyncio", "classic"], default="asyncio")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument("tests", nargs="*", help="test ids (default: the tests issue 32 names)")
    args = parser.parse_args()
    version = scrapy.__version__
    with tempfile.TemporaryDirectory(prefix="scrapy-forced-tests-") as temp:
        sdist = fetch_sdist(version, Path(temp) / "sdist")
        workdir = Path(temp) / "work"
        workdir.mkdir()
        copy_tests(sdist, workdir)
        (workdir / "forced_robotstxt.py").write_text(_PLUGIN, encoding="utf-8")
        stock: dict[str, str] = {}
        ours: dict[str, str] = {}
        runs, absent = selections(workdir, args.tests)
        for selection in runs:  # one run each: a test that hangs times out alone
            with_stock = run(workdir, "stock", args.reactor, selection, args.timeout)
            if not with_stock:  # the module is there, the name is not
                absent.append("::".join(selection[::2]))
                continue
            stock.update(with_stock)
            ours.update(run(workdir, "ours", args.reactor, selection, args.timeout))
    ok = True
    for name in absent:
        print(f"  not in Scrapy {version}'s tests: {name}")
    for name in sorted(set(stock) | set(ours)):
        before, after = stock.get(name, "timeout"), ours.get(name, "timeout")
        flag = "" if before != "passed" or after == "passed" else "  DIVERGES"
        ok = ok and not flag
        print(f"{before:>8} (stock)  {after:>8} (ours)  {name}{flag}")
    print(f"Scrapy {version}, {args.reactor}: {'same' if ok else 'DIVERGES'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
