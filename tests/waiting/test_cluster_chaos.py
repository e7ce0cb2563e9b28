"""Faults, with the real thing: no request waiting for robots.txt is lost to a stop or a kill.

Both scenarios are ``example_project/cluster/run_cluster.py``'s, run as an
operator runs them (see ``chaos.py`` there); the test reads its JSON summary
and asserts the pass criteria; ``pytest -s`` prints the report.

- ``--chaos``: a real ``redis-server``, 30 loopback origins (6 answer 503 for
  robots.txt for a while), 240 start pages, three scrapy-redis workers as
  separate ``scrapy crawl`` processes. While pages wait for the 6 origins, one
  worker gets SIGINT and another SIGKILL; a replacement joins; the origins
  recover. scrapy-redis's own loss (requests the killed worker had taken from
  Redis and was not holding for robots.txt) is not ours: it is printed, and
  only has to account for the rest.
- ``--chaos-jobdir``: one process with ``JOBDIR``, no Redis, SIGKILLed while
  pages wait, restarted with the same ``JOBDIR``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from redis_server import RedisServer, redis_server

__all__ = ["redis_server"]  # the fixture, imported for the test below

CLUSTER = Path(__file__).resolve().parents[2] / "example_project" / "cluster"
# One seed in CI: its faults meet waiting pages in both workers, and pages in
# the killed worker's downloader (scrapy-redis's own loss is then non-zero).
SEED = 1
# Hard limit of one run inside the harness; the subprocess gets a little more.
RUN_TIMEOUT = 120


def run_cluster(*args: str, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """``run_cluster.py *args --json``: its exit status and JSON summary (the report is printed)."""
    # Its own session: if it hangs, it goes with its workers and its redis-server.
    harness = subprocess.Popen(
        [sys.executable, str(CLUSTER / "run_cluster.py"), *args, "--json"],
        cwd=CLUSTER,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        stdout, stderr = harness.communicate(timeout=RUN_TIMEOUT + 60)
    except subprocess.TimeoutExpired:
        os.killpg(harness.pid, signal.SIGKILL)
        stdout, stderr = harness.communicate()
    *report, summary = stdout.strip().splitlines() or [""]
    print("\n".join(report))
    assert summary.startswith("{"), stdout[-3000:] + stderr[-3000:]
    return harness.returncode, json.loads(summary)


def _reactor() -> list[str]:
    """The workers run on the reactor this test run is about (CI's classic-reactor pass)."""
    classic = os.environ.get("GOOGLEROBOTS_EXPECT_REACTOR") == "classic"
    return ["--reactor", "classic" if classic else "asyncio"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("SCRAPY_")}
    return {**env, **extra}


def test_cluster_chaos_loses_no_waiting_request(redis_server: RedisServer) -> None:
    pytest.importorskip("scrapy_redis", reason="scrapy-redis is not installed")
    code, summary = run_cluster(
        "--chaos", "--seed", str(SEED), "--timeout", str(RUN_TIMEOUT), *_reactor(),
        env=_env(REDIS_URL=redis_server.url),
    )  # fmt: skip
    [run] = summary["runs"]
    assert not run["timed_out"], f"the cluster was not idle within {RUN_TIMEOUT} s"
    # The scenario happened: both faults met pages waiting for robots.txt.
    assert run["waiting_at_stop"] > 0 and run["waiting_at_kill"] > 0, run["timeline"]
    assert run["lost_at_stop"] == 0, run["lost_urls"]
    assert run["lost_at_kill"] == 0, run["lost_urls"]
    assert run["lost_other"] == 0, run["lost_urls"]
    assert run["duplicates"] == 0, run["duplicate_urls"]
    assert run["forbidden_fetched"] == 0
    # TDMRep (the workers declare train-ai): no reserved page handed to a spider, and each
    # origin's tdmrep.json was asked for.
    assert run["tdm_reserved_fetched"] == 0
    assert run["tdm_reserved_pages"] == 5
    assert run["tdmrep_fetches"] >= run["origins"]
    assert run["left_in_store"] == 0, "parked requests left in Redis that nobody adopted"
    # Every page allowed by the final rules was crawled, but scrapy-redis's own loss.
    assert run["crawled"] + run["scrapy_redis_loss"] == run["allowed_pages"]
    # The stop says at once what became of its waiting pages (generous bound: no poll, no hang).
    assert run["handover_latency"] is not None, "no log line about the waiting requests at the stop"
    assert run["handover_latency"] < 5.0
    assert code == 0 and summary["ok"]


def test_jobdir_crawl_sigkilled_keeps_its_waiting_requests() -> None:
    # The cluster project's spider modules import scrapy-redis.
    pytest.importorskip("scrapy_redis", reason="scrapy-redis is not installed")
    code, summary = run_cluster(
        "--chaos-jobdir",
        "--seed",
        str(SEED),
        "--timeout",
        str(RUN_TIMEOUT),
        *_reactor(),
        env=_env(),
    )
    [run] = summary["runs"]
    assert not run["timed_out"]
    assert run["waiting_at_kill"] > 0, run["timeline"]
    assert run["crawled_after_restart"] == run["waiting_at_kill"]
    assert run["lost_at_kill"] == 0 and run["never_crawled"] == 0
    assert run["duplicates"] == 0, run["duplicate_urls"]
    assert run["forbidden_fetched"] == 0
    assert code == 0 and summary["ok"]
