"""example_project: ``scrapy crawl demo`` as a user runs it (a subprocess in the project dir).

The crawl serves its own demo web on loopback and prints a report on stdout;
the test reads the report and checks, per origin and URL, what was crawled or
blocked and which robots.txt line decided it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet.threads import deferToThread

from servers import Reply, Site

PROJECT = Path(__file__).resolve().parent.parent / "example_project"

# origin title -> robots.txt story (regex), then (path, outcome, reason) per URL
EXPECTED: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "Longest match and ties": (
        r"200 — rules apply",
        [
            ("/shop/cart", "blocked", "line 3: Disallow: /shop/"),
            ("/shop/sale/boots", "crawled", "line 4: Allow: /shop/sale/"),
            ("/guides/setup", "crawled", "line 5: Allow: /guides"),
            ("/about", "crawled", "no matching rule"),
        ],
    ),
    "Wildcards: * and $": (
        r"200 — rules apply",
        [
            ("/files/manual.pdf", "blocked", "line 3: Disallow: /*.pdf$"),
            ("/files/manual.pdf?page=2", "crawled", "no matching rule"),
            ("/cart?sessionid=42", "blocked", "line 4: Disallow: /*?sessionid="),
            ("/private/data", "blocked", "line 6: Disallow: /private/"),
            ("/private/team/public", "crawled", "line 5: Allow: /private/*/public"),
        ],
    ),
    "A group for DemoBot shadows *": (
        r"200 — rules apply",
        [
            ("/articles/1", "crawled", "no matching rule"),
            ("/admin/panel", "blocked", "line 7: Disallow: /admin/"),
        ],
    ),
    "No robots.txt (404)": (
        r"404 — no robots.txt: everything allowed",
        [
            ("/anything", "crawled", "no robots.txt"),
            ("/admin/", "crawled", "no robots.txt"),
        ],
    ),
    "robots.txt answers 503, then recovers": (
        # One download per attempt (no RetryMiddleware re-sends), spaced by the backoff.
        r"503, then 503 after \d+\.\d s, then 503 after \d+\.\d s, then 200 after \d+\.\d s "
        r"— rules apply",
        [
            ("/news/today", "crawled", "no matching rule  (after waiting"),
            ("/drafts/tomorrow", "blocked", "line 2: Disallow: /drafts/"),
        ],
    ),
    "robots.txt redirects to another origin": (
        r"301 → http://127\.0\.0\.1:\d+/shared/robots\.txt: 200 — rules apply",
        [
            ("/welcome", "crawled", "no matching rule"),
            ("/members/list", "blocked", "line 3: Disallow: /members/"),
        ],
    ),
}


def crawl(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY_")}
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "demo", *args],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def sections(report: str) -> dict[str, list[str]]:
    """Report lines grouped under their ``Title — http://origin`` heading."""
    grouped: dict[str, list[str]] = {}
    current: list[str] = []
    for line in report.splitlines():
        heading = re.match(r"(\S.*) — (https?://\S+)$", line)
        if heading:
            current = grouped.setdefault(heading[1], [])
        elif not line.strip():
            current = []  # a blank line ends the section
        elif line.startswith("  "):
            current.append(line.strip())
    return grouped


@pytest.fixture(scope="module")
def demo() -> subprocess.CompletedProcess[str]:
    return crawl()


def test_demo_runs_clean(demo: subprocess.CompletedProcess[str]) -> None:
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "Traceback" not in demo.stderr
    assert "Spider closed (finished)" in demo.stderr


@pytest.mark.parametrize("title", list(EXPECTED))
def test_demo_report_per_origin(demo: subprocess.CompletedProcess[str], title: str) -> None:
    story, pages = EXPECTED[title]
    lines = sections(demo.stdout)[title]
    assert re.fullmatch(r"robots\.txt: " + story, lines[0]), lines[0]
    rows = [re.split(r"\s+", line, maxsplit=2) for line in lines[1:]]
    assert [(path, outcome) for outcome, path, _ in rows] == [(p, o) for p, o, _ in pages]
    for (_, _, why), (_, _, expected_why) in zip(rows, pages, strict=True):
        assert why.startswith(expected_why), why
        assert "(!)" not in why


def test_demo_totals(demo: subprocess.CompletedProcess[str]) -> None:
    blocked = sum(outcome == "blocked" for _, pages in EXPECTED.values() for _, outcome, _ in pages)
    crawled = sum(outcome == "crawled" for _, pages in EXPECTED.values() for _, outcome, _ in pages)
    assert f"Total: {blocked} blocked, {crawled} crawled" in demo.stdout
    assert "robotstxt/forbidden=7" in demo.stdout


@pytest_twisted.ensureDeferred
async def test_start_url_crawls_a_given_site(site: Site) -> None:
    """``-a start_url=…`` crawls that site instead (here a local one), following its links."""
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /secret\n"))
    site.script(
        "/",
        Reply(
            200,
            b'<a href="/a">a</a> <a href="/secret/x">s</a> <a href="/b">b</a>',
            {"Content-Type": "text/html"},
        ),
    )
    result = await deferToThread(crawl, "-a", f"start_url={site.url('/')}", "-a", "max_pages=10")
    assert result.returncode == 0, result.stderr[-3000:]
    (lines,) = sections(result.stdout).values()
    assert lines[0] == "robots.txt: 200 — rules apply"
    assert [line.split()[:2] for line in lines[1:]] == [
        ["crawled", "/"],
        ["crawled", "/a"],
        ["blocked", "/secret/x"],
        ["crawled", "/b"],
    ]
    assert site.hits("/secret/x") == 0
