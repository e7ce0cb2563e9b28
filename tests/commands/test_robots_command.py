"""``scrapy robots`` end to end: the installed command run in ``example_project``.

Each test runs ``python -m scrapy robots ...`` as a subprocess with the example
project as working directory (its settings: ``USER_AGENT`` naming DemoBot, the
add-on, its downloader middleware), against local sites served by the test's
reactor (the subprocess runs in a thread so the reactor keeps serving).
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.threads import deferToThread

from servers import UNRESOLVABLE_HOST, RefusedPort, Reply, Site

# Crawls through the project's Scrapy: rerun on the classic reactor in CI too.
pytestmark = pytest.mark.scrapy_side

PROJECT = Path(__file__).resolve().parents[2] / "example_project"
#: The example project's USER_AGENT, read from its settings module.
PROJECT_AGENT = str(runpy.run_path(str(PROJECT / "demo_project" / "settings.py"))["USER_AGENT"])

ROBOTS = b"""\
User-agent: *
Disallow: /

User-agent: DemoBot
Disallow: /admin/
Crawl-delay: 2
"""
UNREACHABLE = "robots.txt unreachable: {}; Google treats the whole site as disallowed"


def robots_command(
    *args: str, cwd: Path = PROJECT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``scrapy robots ARGS`` in ``cwd``; never a traceback."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY_")}
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "robots", *args],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


async def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """:func:`robots_command` off the reactor thread, so local sites keep answering."""
    result: subprocess.CompletedProcess[str] = await deferToThread(robots_command, *args, **kwargs)
    return result


def test_registered_as_a_scrapy_command() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "scrapy"], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert any(line.split()[:1] == ["robots"] for line in listing.stdout.splitlines()), listing


# -- the project's settings --------------------------------------------------


@pytest.mark.parametrize(
    "reactor",
    ["asyncio", "twisted.internet.selectreactor.SelectReactor"],
    ids=["asyncio-reactor", "select-reactor"],
)
@pytest_twisted.ensureDeferred
async def test_project_user_agent_picks_the_group(site: Site, reactor: str) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS))
    extra = [] if reactor == "asyncio" else ["-s", f"TWISTED_REACTOR={reactor}"]
    result = await run(*extra, site.url("/articles/1"), site.url("/admin/panel"))
    assert result.returncode == 1, result.stderr
    # DemoBot's own group applies, not "*" (which disallows everything).
    assert result.stdout.splitlines() == [
        f"product token: DemoBot (from USER_AGENT = {PROJECT_AGENT!r})",
        # The project does not pace by robots.txt (ROBOTSTXT_CRAWL_DELAY is off).
        f"{site.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: none applied "
        "(robots.txt asks 2 s; ROBOTSTXT_CRAWL_DELAY is off)",
        f"  ALLOWED     {site.url('/articles/1')}  no matching rule",
        f"  DISALLOWED  {site.url('/admin/panel')}  line 5: Disallow: /admin/",
    ]
    # One fetch for the origin, with the project's User-Agent.
    [request] = site.requests("/robots.txt")
    assert request.header("user-agent") == PROJECT_AGENT


@pytest_twisted.ensureDeferred
async def test_robotstxt_user_agent_setting_picks_the_group(site: Site) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS))
    agent = "Mozilla/5.0 (compatible; OtherBot/2.0)"
    result = await run("-s", f"ROBOTSTXT_USER_AGENT={agent}", site.url("/articles/1"))
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        f"product token: OtherBot (from ROBOTSTXT_USER_AGENT = {agent!r})",
        f"{site.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: none",
        f"  DISALLOWED  {site.url('/articles/1')}  line 2: Disallow: /",
    ]
    # ROBOTSTXT_USER_AGENT picks the group; the request still says USER_AGENT.
    assert site.requests("/robots.txt")[0].header("user-agent") == PROJECT_AGENT


@pytest_twisted.ensureDeferred
async def test_proxy_and_default_headers_apply(site: Site) -> None:
    # The site is the HTTP proxy (from the environment, as HttpProxyMiddleware
    # reads it): the URL's host does not resolve, so only a proxied fetch works.
    robots_url = f"http://{UNRESOLVABLE_HOST}/robots.txt"
    site.script(robots_url, Reply(200, b"User-agent: *\nDisallow: /private/\n"))
    url = f"http://{UNRESOLVABLE_HOST}/private/x"
    proxy = {"http_proxy": site.url(), "no_proxy": "", "NO_PROXY": ""}
    headers = json.dumps({"X-Robots-Check": "yes"})
    result = await run("-s", f"DEFAULT_REQUEST_HEADERS={headers}", url, env=proxy)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[1:] == [
        f"{robots_url}: HTTP 200, rules apply; crawl delay: none",
        f"  DISALLOWED  {url}  line 2: Disallow: /private/",
    ]
    [request] = site.requests(robots_url)
    assert request.header("x-robots-check") == "yes"


@pytest_twisted.ensureDeferred
async def test_never_touches_the_projects_jobdir(site: Site, tmp_path: Path) -> None:
    site.script("/robots.txt", Reply(404))
    job = tmp_path / "job"
    result = await run("-s", f"JOBDIR={job}", site.url("/x"))
    assert result.returncode == 0, result.stderr
    assert not job.exists()


# -- Google's status rules ---------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_unreachable_origins_disallow_every_url(
    make_site: Any, refused_port: RefusedPort
) -> None:
    down, missing = make_site(), make_site()
    down.script("/robots.txt", Reply(503, b"User-agent: *\nAllow: /\n"))
    missing.script("/robots.txt", Reply(404))
    refused = refused_port.url("/a")
    # Google's plain behaviour (the default, "defer", waits: test_page_commands.py).
    result = await run(
        "-s",
        "ROBOTSTXT_UNREACHABLE=disallow",
        down.url("/a"),
        down.url("/b"),
        missing.url("/c"),
        refused,
    )
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    disallow = "unreachable: every URL disallowed (ROBOTSTXT_UNREACHABLE = 'disallow', as Google)"
    assert lines[1:5] == [
        f"{down.url('/robots.txt')}: HTTP 503, {disallow}",
        f"  DISALLOWED  {down.url('/a')}  {UNREACHABLE.format('HTTP 503')}",
        f"  DISALLOWED  {down.url('/b')}  {UNREACHABLE.format('HTTP 503')}",
        f"{missing.url('/robots.txt')}: HTTP 404, no rules: every URL allowed",
    ]
    assert lines[5] == f"  ALLOWED     {missing.url('/c')}  no robots.txt (HTTP 404)"
    assert lines[6].startswith(f"{refused_port.url('/robots.txt')}: ")
    assert lines[6].endswith(f", {disallow}")
    assert lines[7].startswith(f"  DISALLOWED  {refused}  robots.txt unreachable: ")
    assert "Connection" in lines[7]
    # One download: a robots.txt is not re-sent by RetryMiddleware (the crawl's
    # backoff retries it; the command asks once).
    assert down.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_all_allowed_exit_0(site: Site) -> None:
    site.script("/robots.txt", Reply(410))
    result = await run(site.url("/x"), site.url("/admin/"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2:] == [
        f"  ALLOWED     {site.url('/x')}  no robots.txt (HTTP 410)",
        f"  ALLOWED     {site.url('/admin/')}  no robots.txt (HTTP 410)",
    ]


@pytest_twisted.ensureDeferred
async def test_urls_grouped_by_origin_one_fetch_each(make_site: Any) -> None:
    first, second = make_site(), make_site()
    for origin in (first, second):
        origin.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /no\n"))
    urls = [first.url("/no"), second.url("/yes"), first.url("/yes")]
    result = await run(*urls)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[1:] == [
        f"{first.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: none",
        f"  DISALLOWED  {first.url('/no')}  line 2: Disallow: /no",
        f"  ALLOWED     {first.url('/yes')}  no matching rule",
        f"{second.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: none",
        f"  ALLOWED     {second.url('/yes')}  no matching rule",
    ]
    assert (first.hits("/robots.txt"), second.hits("/robots.txt")) == (1, 1)


# -- the crawl delay, as the project's settings apply it -------------------------

PACED_ROBOTS = b"""\
User-agent: DemoBot
Disallow: /admin/
Crawl-delay: 9

User-agent: RateBot
Crawl-delay: 2
Request-rate: 1/3s
Disallow: /admin/
"""


# (-s settings, what the robots.txt line says after "crawl delay: ", the delay applied)
DELAY_CASES = [
    pytest.param(
        ["ROBOTSTXT_CRAWL_DELAY=True", "ROBOTSTXT_CRAWL_DELAY_MAX=5"],
        "5 s (capped from 9 s by ROBOTSTXT_CRAWL_DELAY_MAX)",
        5.0,
        id="capped",
    ),
    pytest.param(["ROBOTSTXT_CRAWL_DELAY=True"], "9 s", 9.0, id="under_the_default_cap"),
    pytest.param(
        [],
        "none applied (robots.txt asks 9 s; ROBOTSTXT_CRAWL_DELAY is off)",
        None,
        id="pacing_off",
    ),
    pytest.param(
        ["ROBOTSTXT_CRAWL_DELAY=True", "ROBOTSTXT_CRAWL_DELAY_MAX=0"],
        "none applied (robots.txt asks 9 s; ROBOTSTXT_CRAWL_DELAY_MAX = 0)",
        None,
        id="maximum_zero",
    ),
]


@pytest.mark.parametrize(("settings", "shown", "applied"), DELAY_CASES)
@pytest_twisted.ensureDeferred
async def test_the_crawl_delay_the_settings_apply(
    site: Site, settings: list[str], shown: str, applied: float | None
) -> None:
    site.script("/robots.txt", Reply(200, PACED_ROBOTS))
    options = [arg for setting in settings for arg in ("-s", setting)]
    result = await run(*options, site.url("/articles/1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == (
        f"{site.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: {shown}"
    )
    document = json.loads((await run("--json", *options, site.url("/articles/1"))).stdout)
    [entry] = document["urls"]
    assert (entry["crawl_delay"], entry["crawl_delay_applied"]) == (9.0, applied)


def test_the_docs_show_the_capped_and_the_unpaced_line() -> None:
    page = (PROJECT.parent / "docs" / "usage" / "commands.rst").read_text(encoding="utf-8")
    shown = {case.id: case.values[1] for case in DELAY_CASES}
    for case in ("capped", "pacing_off"):
        assert f"crawl delay: {shown[case]}" in " ".join(page.split()), case


@pytest_twisted.ensureDeferred
async def test_request_rate_counts_and_no_directive_says_none(make_site: Any) -> None:
    paced, plain = make_site(), make_site()
    paced.script("/robots.txt", Reply(200, PACED_ROBOTS))
    plain.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /admin/\n"))
    result = await run(
        "-s", "ROBOTSTXT_CRAWL_DELAY=True", "-s", "ROBOTSTXT_USER_AGENT=RateBot",
        paced.url("/a"), plain.url("/b"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # Request-rate 1/3s is a 3 s delay, larger than Crawl-delay 2: the larger applies.
    assert result.stdout.splitlines()[1::2] == [
        f"{paced.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: 3 s",
        f"{plain.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: none",
    ]


# -- --json ------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_json_document(make_site: Any) -> None:
    start, target, down = make_site(), make_site(), make_site()
    start.script("/robots.txt", Reply.redirect(target.url("/moved.txt")))
    target.script("/moved.txt", Reply(200, ROBOTS))
    down.script("/robots.txt", Reply(429))
    urls = [start.url("/admin/x"), start.url("/ok"), down.url("/")]
    result = await run(
        "--json", "-s", "RETRY_ENABLED=False", "-s", "ROBOTSTXT_UNREACHABLE=disallow", *urls
    )
    assert result.returncode == 1, result.stderr

    def entry(url: str, allowed: bool, reason: str, robots: dict[str, Any]) -> dict[str, Any]:
        line, _, rule = reason.removeprefix("line ").partition(": ")
        decided = reason.startswith("line ")
        return {
            "url": url,
            "allowed": allowed,
            "line": int(line) if decided else None,
            "rule": rule if decided else None,
            "reason": reason,
            "token": "DemoBot",
            "usage": {},
            "tdmrep": None,  # no TDM use declared: not asked
            "crawl_delay": 2.0 if robots["outcome"] == "rules" else None,
            "crawl_delay_applied": None,  # ROBOTSTXT_CRAWL_DELAY is off in the project
            "robots_txt": robots,
        }

    moved = {
        "url": start.url("/robots.txt"),
        "redirects": [target.url("/moved.txt")],
        "outcome": "rules",
        "reason": "HTTP 200",
        "sitemaps": [],
    }
    unreachable = {
        "url": down.url("/robots.txt"),
        "redirects": [],
        "outcome": "unreachable",
        "reason": "HTTP 429",
        "sitemaps": [],
    }
    assert json.loads(result.stdout) == {
        "user_agent": PROJECT_AGENT,
        "user_agent_setting": "USER_AGENT",
        "token": "DemoBot",
        "declared_use": [],
        "all_allowed": False,
        "urls": [
            entry(urls[0], False, "line 5: Disallow: /admin/", moved),
            entry(urls[1], True, "no matching rule", moved),
            entry(urls[2], False, UNREACHABLE.format("HTTP 429"), unreachable),
        ],
    }


@pytest_twisted.ensureDeferred
async def test_json_all_allowed_exit_0(site: Site) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS))
    result = await run("--json", site.url("/articles/1"))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["all_allowed"] is True
    assert [entry["allowed"] for entry in document["urls"]] == [True]


# -- usage -------------------------------------------------------------------


# -- --usage (issue 20) --------------------------------------------------------

USAGE_ROBOTS = b"""\
User-agent: *
Disallow: /

User-agent: DemoBot
Allow: /
Disallow: /admin/
Content-Usage: train-ai=n, search=y
Content-Signal: /open/ ai-train=yes
"""


@pytest_twisted.ensureDeferred
async def test_usage_no_is_disallowed_with_the_deciding_line(site: Site) -> None:
    site.script("/robots.txt", Reply(200, USAGE_ROBOTS))
    site.script("/.well-known/tdmrep.json", Reply(404))
    urls = [site.url("/article"), site.url("/open/a"), site.url("/admin/x")]
    result = await run("--usage", "train-ai", *urls)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "declared AI use: train-ai (from --usage)",
        f"{site.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: none",
        f"  DISALLOWED  {urls[0]}  train-ai=n: line 7: Content-Usage: train-ai=n, search=y",
        f"  ALLOWED     {urls[1]}  line 5: Allow: /; usage: train-ai=y (line 8), search=y (line 7)"
        "; TDMRep: unset (no tdmrep.json: HTTP 404)",
        f"  DISALLOWED  {urls[2]}  line 6: Disallow: /admin/",
    ]


@pytest_twisted.ensureDeferred
async def test_usage_yes_or_unknown_is_allowed_exit_0(site: Site) -> None:
    site.script("/robots.txt", Reply(200, USAGE_ROBOTS))
    url = site.url("/article")
    # Content Signals names, repeated and comma-separated; ai-use is stated nowhere.
    result = await run("--usage", "search", "--usage", "ai-input", url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == "declared AI use: search, ai-use (from --usage)"
    assert result.stdout.splitlines()[-1] == (
        f"  ALLOWED     {url}  line 5: Allow: /; usage: search=y (line 7), ai-use: no "
        # ai-use is a TDM use: the origin's tdmrep.json was asked (this site answers a page)
        "preference, train-ai=n (line 7); TDMRep: unset (tdmrep.json is not a JSON array)"
    )


@pytest_twisted.ensureDeferred
async def test_usage_from_the_setting_and_in_json(site: Site) -> None:
    site.script("/robots.txt", Reply(200, USAGE_ROBOTS))
    url = site.url("/article")
    result = await run("--json", "-s", "ROBOTSTXT_USAGE=ai-train", url)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["declared_use"] == ["train-ai"]
    [entry] = document["urls"]
    line_7 = "Content-Usage: train-ai=n, search=y"  # as written
    assert (entry["allowed"], entry["line"], entry["rule"]) == (False, 7, line_7)
    assert entry["reason"] == f"train-ai=n: line 7: {line_7}"
    assert entry["usage"] == {
        "train-ai": {"allowed": False, "line": 7, "rule": line_7},
        "search": {"allowed": True, "line": 7, "rule": line_7},
    }
    # --usage replaces the setting: declaring nothing, the URL is allowed.
    replaced = await run("-s", "ROBOTSTXT_USAGE=ai-train", "--usage", "", url)
    assert replaced.returncode == 0, replaced.stderr


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["data:,hello"],
        ["http://127.0.0.1:99999/x"],
        ["-s", "ROBOTSTXT_MAX_SIZE=0", "http://127.0.0.1:9/x"],
        ["-s", "ROBOTSTXT_UNREACHABLE=sometimes", "http://127.0.0.1:9/x"],
        ["--usage", "train-llm", "http://127.0.0.1:9/x"],
        ["-s", "ROBOTSTXT_USAGE=genai", "http://127.0.0.1:9/x"],
    ],
    ids=[
        "no-url",
        "no-robots-scheme",
        "bad-port",
        "bad-max-size",
        "bad-unreachable-mode",
        "unknown-usage-option",
        "unknown-usage-setting",
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = robots_command(*args)
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert "error:" in result.stderr


@pytest_twisted.ensureDeferred
async def test_outside_a_project_scrapy_defaults_and_set_options(
    site: Site, tmp_path: Path
) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: FooBot\nDisallow: /foo\n"))
    default = await run(site.url("/foo"), cwd=tmp_path)
    assert default.returncode == 0, default.stderr
    assert default.stdout.startswith("product token: Scrapy (from USER_AGENT = 'Scrapy/")
    named = await run("-s", "USER_AGENT=FooBot/1.0", site.url("/foo"), cwd=tmp_path)
    assert named.returncode == 1, named.stderr
    assert (
        named.stdout.splitlines()[-1] == f"  DISALLOWED  {site.url('/foo')}  line 2: Disallow: /foo"
    )


# -- sitemaps (issue 28) -------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_sitemaps_are_printed_under_their_robots_txt(site: Site) -> None:
    sitemaps = [site.url("/sitemap_index.xml"), "https://cdn.example/news.xml"]
    body = ROBOTS + b"".join(b"Sitemap: " + url.encode() + b"\n" for url in sitemaps)
    site.script("/robots.txt", Reply(200, body))
    result = await run(site.url("/articles/1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2:] == [
        f"  ALLOWED     {site.url('/articles/1')}  no matching rule",
        *(f"  Sitemap: {url}" for url in sitemaps),
    ]
    document = json.loads((await run("--json", site.url("/articles/1"))).stdout)
    assert document["urls"][0]["robots_txt"]["sitemaps"] == sitemaps


# -- TDMRep (issue 27) ----------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_tdmrep_verdict_beside_robots_txt(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /admin/\n"))
    rules = [
        {
            "location": "/articles/*",
            "tdm-reservation": 1,
            "tdm-policy": "https://publisher.example/tdm-policy.json",
        },
        {"location": "/open/", "tdm-reservation": 0},
    ]
    site.script("/.well-known/tdmrep.json", Reply(200, json.dumps(rules).encode()))
    urls = [site.url("/articles/2024/x"), site.url("/open/a"), site.url("/admin/x")]
    result = await run("--usage", "train-ai", *urls)
    print(result.stdout)
    assert result.returncode == 1, result.stderr
    tdmrep = site.url("/.well-known/tdmrep.json")
    assert result.stdout.splitlines()[1:] == [
        "declared AI use: train-ai (from --usage)",
        f"{site.url('/robots.txt')}: HTTP 200, rules apply; crawl delay: none",
        f"  DISALLOWED  {urls[0]}  no matching rule; usage: train-ai: no preference; TDMRep: "
        f'TDM rights reserved: rule 1 of {tdmrep} (location "/articles/*"), '
        "policy https://publisher.example/tdm-policy.json",
        f"  ALLOWED     {urls[1]}  no matching rule; usage: train-ai: no preference; TDMRep: "
        f'TDM rights not reserved: rule 2 of {tdmrep} (location "/open/")',
        f"  DISALLOWED  {urls[2]}  line 2: Disallow: /admin/",
    ]
    assert site.hits("/.well-known/tdmrep.json") == 1
    # Declaring search only: tdmrep.json is not asked, nothing is reserved.
    searching = await run("--usage", "search", urls[0])
    assert searching.returncode == 0, searching.stderr
    assert "TDMRep" not in searching.stdout
    assert site.hits("/.well-known/tdmrep.json") == 1
