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
passes with ours. Each test id is run on its own, bounded (``--timeout``): a test
that waits for robots.txt forever fails by the clock.

Usage: python .ci/scrapy_forced_addon_tests.py [--reactor asyncio|classic] [TEST_ID ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import scrapy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scrapy_stock_tests import fetch_sdist

# The tests issue 32 names; any other test ids may be given on the command line.
DEFAULT_TESTS = [
    "tests/test_engine_loop.py::TestRequestSendOrder",
    "tests/test_request_attribute_binding.py::TestCrawl::test_downloader_middleware_raise_exception",
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
    workdir: Path, which: str, reactor: str, tests: list[str], timeout: float
) -> dict[str, str]:
    """Test id -> "passed", "failed", "skipped" or "timeout" with the ``which`` middleware."""
    report = workdir / f"report-{which}-{reactor}.xml"
    command = [
        sys.executable, "-m", "pytest", *tests, "-p", "forced_robotstxt", "-p", "no:cacheprovider",
        "-q", f"--reactor={'asyncio' if reactor == 'asyncio' else 'default'}",
        f"--junitxml={report}", "-o", "addopts=",
    ]  # fmt: skip
    env = {"FORCED_ROBOTSTXT": which, "PYTHONPATH": str(workdir)}
    import os

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
        return {test.split("::", 1)[-1]: "timeout" for test in tests}
    if not report.exists():
        print(completed.stdout[-4000:], completed.stderr[-4000:], sep="\n")
        raise SystemExit(f"pytest did not run ({which}, {reactor}): exit {completed.returncode}")
    results: dict[str, str] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        if case.find("skipped") is not None:
            results[name] = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            results[name] = "failed"
        else:
            results[name] = "passed"
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reactor", choices=["asyncio", "classic"], default="asyncio")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument("tests", nargs="*", default=DEFAULT_TESTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scrapy-forced-tests-") as temp:
        sdist = fetch_sdist(scrapy.__version__, Path(temp) / "sdist")
        workdir = Path(temp) / "work"
        workdir.mkdir()
        import shutil

        shutil.copytree(sdist / "tests", workdir / "tests")
        for name in ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"):
            if (sdist / name).exists():
                shutil.copy(sdist / name, workdir / name)
        (workdir / "forced_robotstxt.py").write_text(_PLUGIN, encoding="utf-8")
        stock: dict[str, str] = {}
        ours: dict[str, str] = {}
        for test in args.tests:  # one run each: a test that hangs times out alone
            stock.update(run(workdir, "stock", args.reactor, [test], args.timeout))
            ours.update(run(workdir, "ours", args.reactor, [test], args.timeout))
    ok = True
    for name in sorted(set(stock) | set(ours)):
        before, after = stock.get(name, "timeout"), ours.get(name, "timeout")
        flag = "" if before != "passed" or after == "passed" else "  DIVERGES"
        ok = ok and not flag
        print(f"{before:>8} (stock)  {after:>8} (ours)  {name}{flag}")
    print(f"Scrapy {scrapy.__version__}, {args.reactor}: {'same' if ok else 'DIVERGES'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
