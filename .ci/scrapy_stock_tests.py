"""Run Scrapy's own tests for RobotsTxtMiddleware against GoogleRobotsTxtMiddleware.

Fetches the sdist of the installed Scrapy version (it carries ``tests/``),
copies its test tree to a temporary directory, swaps one import in
``tests/test_downloadermiddleware_robotstxt.py`` so that the name
``RobotsTxtMiddleware`` is our class, and runs that module with pytest on the
asyncio and/or the classic reactor. Where a test patches the stock module's
``logger`` to assert that no ERROR was logged, the same assertion is made on the
log records of our package instead.

Exit status 0 when every test passes except the named divergences below, 1
otherwise. Nothing of Scrapy's tests is kept or committed.

Usage: python .ci/scrapy_stock_tests.py [--reactor asyncio|classic|both]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import scrapy

MODULE = "tests/test_downloadermiddleware_robotstxt.py"

# Tests expected to fail against our class, each with why (docs/compatibility.rst:
# "Scrapy's own tests of the stock middleware"). Names are test function names, so
# they hold across Scrapy versions and test-class names.
DIVERGENT = {
    "test_robotstxt_user_agent_setting": "calls the stock class's private process_request_2",
    "test_robotstxt_local_file": (
        "Scrapy >= 2.14: replaces the stock class's private process_request_2 and asserts it "
        "is called"
    ),
}
# Expected to diverge by never finishing on their own: a robots.txt DNS failure
# is "unreachable" for Google (SPEC B3), so requests wait for robots.txt with
# backoff instead of being allowed at once. Not run (they would only time out).
NOT_RUN = {
    "test_robotstxt_error": "DNS error means unreachable (wait, retry), not allow-all",
    "test_robotstxt_immediate_error": "DNS error means unreachable (wait, retry), not allow-all",
}

_RECORDER = '''

class _ErrorLogRecorder(logging.Handler):
    """Stands in for the stock module's patched ``logger``: ``.error.called`` is
    True when scrapy_googlerobots logged an ERROR since recording started."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records = []
        logging.getLogger("scrapy_googlerobots").addHandler(self)

    def emit(self, record):
        self.records.append(record)

    @property
    def error(self):
        return types.SimpleNamespace(called=bool(self.records))

    @error.setter
    def error(self, _value):  # "logger.error = MagicMock()": start recording
        self.records.clear()

    def __enter__(self):
        self.records.clear()
        return self

    def __exit__(self, *exc_info):
        logging.getLogger("scrapy_googlerobots").removeHandler(self)
'''


def transform(source: str) -> str:
    """The stock test module with our class in place of the stock one."""
    stock_import = re.compile(
        r"^from scrapy\.downloadermiddlewares\.robotstxt import RobotsTxtMiddleware$", re.M
    )
    if not stock_import.search(source):
        raise SystemExit("the stock import line was not found; the runner needs updating")
    source = stock_import.sub(
        "from scrapy_googlerobots import GoogleRobotsTxtMiddleware as RobotsTxtMiddleware",
        source,
    )
    # Scrapy < 2.14: the module-level logger import, then "logger.error = MagicMock()".
    source = re.sub(
        r"^from scrapy\.downloadermiddlewares\.robotstxt import logger as mw_module_logger$",
        "mw_module_logger = _ErrorLogRecorder()",
        source,
        flags=re.M,
    )
    # Scrapy >= 2.14: "with mock.patch(<stock module>.logger) as mw_module_logger:".
    source = source.replace(
        'mock.patch(\n            "scrapy.downloadermiddlewares.robotstxt.logger"\n        )',
        "_ErrorLogRecorder()",
    ).replace('mock.patch("scrapy.downloadermiddlewares.robotstxt.logger")', "_ErrorLogRecorder()")
    if "scrapy.downloadermiddlewares.robotstxt" in source:
        raise SystemExit("the stock module is still referenced; the runner needs updating")
    # The recorder goes first (after a __future__ import, which must lead).
    future = re.search(r"^from __future__ import .*\n", source, re.M)
    at = future.end() if future else 0
    recorder = "import logging\nimport types\n" + _RECORDER
    return source[:at] + recorder + "\n\n" + source[at:]


def fetch_sdist(version: str, into: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
         f"scrapy=={version}", "-d", str(into)],
        check=True,
    )  # fmt: skip
    [archive] = into.glob("[Ss]crapy-*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    [root] = [path for path in into.iterdir() if path.is_dir()]
    return root


def copy_tests(sdist: Path, workdir: Path) -> None:
    """Scrapy's test tree and its pytest configuration, from ``sdist`` into ``workdir``."""
    shutil.copytree(sdist / "tests", workdir / "tests")
    for name in ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"):
        if (sdist / name).exists():
            shutil.copy(sdist / name, workdir / name)


def prepare(sdist: Path, workdir: Path) -> None:
    copy_tests(sdist, workdir)
    module = workdir / MODULE
    module.write_text(transform(module.read_text(encoding="utf-8")), encoding="utf-8")


def run(workdir: Path, reactor: str) -> tuple[set[str], set[str], set[str]]:
    """Passed, failed and skipped test names on ``reactor``."""
    report = workdir / f"report-{reactor}.xml"
    deselect = [f"-k not ({' or '.join(sorted(NOT_RUN))})"]
    plugins = reactor_plugins(workdir)
    command = [
        sys.executable, "-m", "pytest", MODULE, "-p", "no:cacheprovider", "-q",
        f"--reactor={'asyncio' if reactor == 'asyncio' else 'default'}",
        f"--junitxml={report}", "-o", "addopts=", *plugins, *deselect,
    ]  # fmt: skip
    completed = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=900)
    if not report.exists():
        print(completed.stdout[-4000:], completed.stderr[-4000:], sep="\n")
        raise SystemExit(f"pytest did not run ({reactor}): exit {completed.returncode}")
    passed, failed, skipped = set(), set(), set()
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        if case.find("skipped") is not None:
            skipped.add(name)
        elif case.find("failure") is not None or case.find("error") is not None:
            failed.add(name)
        else:
            passed.add(name)
    if failed - _named(failed):
        print(completed.stdout[-6000:])
    return passed, failed, skipped


def reactor_plugins(workdir: Path) -> list[str]:
    """pytest's ``-p`` options for Scrapy's test tree in ``workdir``: before 2.13 Scrapy's
    conftest defines ``--reactor`` itself (its tox runs without pytest-twisted); then
    pytest-twisted, our test extra, steps aside."""
    conftest = (workdir / "conftest.py").read_text(encoding="utf-8")
    own_option = bool(re.search(r'addoption\(\s*"--reactor"', conftest)) and (
        "hasplugin" not in conftest
    )
    return ["-p", "no:twisted"] if own_option else []


def _named(names: set[str]) -> set[str]:
    return {name for name in names if name.rsplit("::", 1)[-1] in DIVERGENT}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reactor", choices=["asyncio", "classic", "both"], default="both")
    args = parser.parse_args()
    reactors = ["asyncio", "classic"] if args.reactor == "both" else [args.reactor]
    version = scrapy.__version__
    ok = True
    with tempfile.TemporaryDirectory(prefix="scrapy-stock-tests-") as temp:
        sdist = fetch_sdist(version, Path(temp) / "sdist")
        workdir = Path(temp) / "work"
        prepare(sdist, workdir)
        for reactor in reactors:
            passed, failed, skipped = run(workdir, reactor)
            unexpected = failed - _named(failed)
            print(
                f"Scrapy {version}, {reactor} reactor: {len(passed)} passed, "
                f"{len(failed)} failed, {len(skipped)} skipped; "
                f"not run: {', '.join(sorted(NOT_RUN))}"
            )
            for name in sorted(_named(failed)):
                print(f"  divergence  {name}: {DIVERGENT[name.rsplit('::', 1)[-1]]}")
            for name in sorted(name for name in passed if name.rsplit("::", 1)[-1] in DIVERGENT):
                print(f"  passes here {name} (a listed divergence)")
            for name in sorted(unexpected):
                print(f"  UNEXPECTED FAILURE  {name}")
            ok = ok and not unexpected and bool(passed)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
