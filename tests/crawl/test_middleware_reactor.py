"""The middleware on the classic Twisted reactor: representative crawls, in a subprocess.

The suite runs on the asyncio reactor (setup.cfg); a process can install one
reactor only, so the classic-reactor run is a second pytest process with
``--reactor=default`` (its crawls run with ``TWISTED_REACTOR=None``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest_twisted

from middleware_support import CAN_PARK, robots_settings
from servers import Reply, Site, run_crawl

ROOT = Path(__file__).resolve().parents[2]

REPRESENTATIVE = [
    "tests/crawl/test_middleware_reactor.py::test_crawl_runs_on_the_expected_reactor",
    "tests/crawl/test_middleware_crawl.py::test_one_crawl_many_verdicts_and_forbidden_log",
    "tests/crawl/test_middleware_crawl.py::test_200_concurrent_first_requests_one_fetch_all_judged",
    "tests/crawl/test_middleware_crawl.py::test_gzip_bomb_costs_no_more_than_a_plain_file",
    "tests/crawl/test_middleware_crawl.py::test_redirect_chain_of_five_hops_is_followed",
    "tests/waiting/test_middleware_unreachable.py::"
    "test_503_twice_then_200_deferred_requests_crawled_healthy_origin_unhindered",
    "tests/waiting/test_middleware_unreachable.py::test_max_wait_drops_with_one_errback_each",
    "tests/crawl/test_middleware_cache.py::"
    "test_expired_while_in_the_scheduler_waits_outside_the_downloader",
    "tests/crawl/test_middleware_stock.py::test_engine_download_waits_inline_and_is_judged",
]


@pytest_twisted.ensureDeferred
async def test_crawl_runs_on_the_expected_reactor(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /x\n"))
    result = await run_crawl(robots_settings(), [site.url("/x"), site.url("/y")])
    assert result.downloaded == [site.url("/y")]
    from twisted.internet import reactor

    name = type(reactor).__name__
    classic = os.environ.get("GOOGLEROBOTS_EXPECT_REACTOR") == "classic"
    assert ("Asyncio" in name) is not classic, name


def test_representative_crawls_on_the_classic_reactor() -> None:
    env = {**os.environ, "GOOGLEROBOTS_EXPECT_REACTOR": "classic"}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--reactor=default", *REPRESENTATIVE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-5000:]
    # Every listed test ran (parametrized ones count several times); only the
    # parking tests may skip, and only on Scrapy < 2.11.2.
    passed = re.search(r"(\d+) passed", output)
    skipped = re.search(r"(\d+) skipped", output)
    ran = (int(passed[1]) if passed else 0) + (int(skipped[1]) if skipped else 0)
    assert ran >= len(REPRESENTATIVE), output[-2000:]
    assert skipped is None or not CAN_PARK, output[-2000:]
    assert "deselected" not in output, output[-2000:]
