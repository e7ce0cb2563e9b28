"""The shared robots.txt corpus: where the tests find it, and why they skip without it.

1,301 real-world robots.txt files, one per site, named after its host: the
test data of Protego (github.com/scrapy/protego, ``tests/test_data``,
BSD-3-Clause). They live beside the checkout, never in it:
``../shared/corpus/robotstxt/`` from the project root (README, "Tests").
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CORPUS", "CORPUS_FILES", "MISSING"]

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "robotstxt"
CORPUS_FILES = sorted(p for p in CORPUS.iterdir() if p.is_file()) if CORPUS.is_dir() else []

# The skip reason the run's summary shows (-rs in setup.cfg's addopts).
MISSING = (
    f"the robots.txt corpus is not at {CORPUS}: copy Protego's tests/test_data "
    "(github.com/scrapy/protego) there, beside the checkout (README, Tests)"
)
