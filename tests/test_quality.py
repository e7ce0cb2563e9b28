"""The linters are part of the test suite, so the README's test command runs them too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_clean() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


# The newest Scrapy we support; on it mypy runs fully strict.
NEWEST_SCRAPY = (2, 19)

# Older Scrapy releases ship no or partial, release-specific annotations: there
# Scrapy is checked as untyped (its names are Any), everything else as strictly.
_OLD_SCRAPY_MYPY = """
[mypy-scrapy.*]
follow_imports = skip
ignore_missing_imports = True
"""


def test_mypy_strict_clean(tmp_path: Path) -> None:
    # Configuration (strict, files) lives in setup.cfg.
    import scrapy

    installed = tuple(int(part) for part in scrapy.__version__.split(".")[:2])
    args: list[str] = []
    if installed < NEWEST_SCRAPY:
        config = tmp_path / "mypy.ini"
        base = (ROOT / "setup.cfg").read_text(encoding="utf-8")
        mypy_sections = base[base.index("[mypy]") :]
        config.write_text(mypy_sections + _OLD_SCRAPY_MYPY, encoding="utf-8")
        args = ["--config-file", str(config), "--allow-subclassing-any", "--no-warn-return-any"]
    result = _run("mypy", *args)
    assert result.returncode == 0, result.stdout + result.stderr


def test_core_imports_only_stdlib() -> None:
    """The core must be liftable: importing it pulls in no scrapy/twisted/idna."""
    code = (
        "import sys; import scrapy_googlerobots.robotstxt as r; "
        "r.parse(b'user-agent: *\\ndisallow: /x').allowed('http://a/x', 'bot'); "
        "bad = [m for m in ('scrapy', 'twisted', 'idna', 'w3lib') if m in sys.modules]; "
        "print(','.join(bad)); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_clean() -> None:
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr
