"""``googlerobots`` end to end, through the real entry points in subprocesses.

Both ``python -m scrapy_googlerobots`` and the installed ``googlerobots``
script run every case. robots.txt URLs are served by the local test sites
(the subprocess runs in a thread so the reactor keeps serving).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet.threads import deferToThread

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome, outcome_for_status
from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE

from servers import RefusedPort, Reply, Site

SCRIPT = Path(sys.executable).with_name("googlerobots")
ENTRY_POINTS = {
    "python-m": [sys.executable, "-m", "scrapy_googlerobots"],
    "script": [str(SCRIPT)],
}

ROBOTS = b"""\
User-agent: *
Disallow: /private/
Allow: /private/public

User-agent: FooBot
Disallow: /foo-only
"""


@pytest.fixture(params=list(ENTRY_POINTS), ids=list(ENTRY_POINTS))
def command(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "script" and not SCRIPT.exists():
        pytest.fail(f"{SCRIPT} is missing: install the project (pip install -e .)")
    return ENTRY_POINTS[str(request.param)]


@pytest.fixture
def robots_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_bytes(ROBOTS)
    return path


def run(command: list[str], *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    raw = subprocess.run([*command, *args], input=stdin, capture_output=True, env=env, timeout=120)
    completed = subprocess.CompletedProcess(
        raw.args,
        raw.returncode,
        raw.stdout.decode("utf-8", "replace"),
        raw.stderr.decode("utf-8", "replace"),
    )
    # Whatever happens, never a traceback.
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed


def run_in_thread(command: list[str], *args: str) -> object:
    """``run`` off the reactor thread, so local sites keep answering; a Deferred."""
    return deferToThread(run, command, *args)


def assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("googlerobots: error: ")
    for word in words:
        assert word in lines[0]


# -- check --------------------------------------------------------------------


def test_check_all_allowed_exit_0(command: list[str], robots_file: Path) -> None:
    result = run(
        command,
        "check",
        str(robots_file),
        "OtherBot",
        "https://example.com/",
        "https://example.com/private/public/x",
    )
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == [
        "ALLOWED     https://example.com/  no matching rule",
        "ALLOWED     https://example.com/private/public/x  line 3: Allow: /private/public",
    ]


def test_check_any_disallowed_exit_1(command: list[str], robots_file: Path) -> None:
    result = run(
        command,
        "check",
        str(robots_file),
        "OtherBot",
        "https://example.com/private/x",
        "https://example.com/ok",
    )
    assert result.returncode == 1, result
    assert result.stdout.splitlines() == [
        "DISALLOWED  https://example.com/private/x  line 2: Disallow: /private/",
        "ALLOWED     https://example.com/ok  no matching rule",
    ]


def test_check_full_user_agent_reduced_to_token(command: list[str], robots_file: Path) -> None:
    result = run(
        command,
        "check",
        str(robots_file),
        "FooBot/1.2 (+http://foo.example)",
        "https://example.com/foo-only",
        "https://example.com/private/x",
    )
    assert result.returncode == 1
    # FooBot's own group applies: /private/ is not in it.
    assert result.stdout.splitlines() == [
        "DISALLOWED  https://example.com/foo-only  line 6: Disallow: /foo-only",
        "ALLOWED     https://example.com/private/x  no matching rule",
    ]
    assert "'FooBot'" in result.stderr


def test_check_notes_the_crawl_delay_of_the_chosen_group(command: list[str]) -> None:
    robots = (
        b"User-agent: *\nCrawl-delay: 9\nDisallow: /x\n\nUser-agent: FooBot\nCrawl-delay: 2.5\n"
    )
    foo = run(command, "check", "-", "FooBot/1.0", "http://a.test/x", stdin=robots)
    other = run(command, "check", "-", "OtherBot", "http://a.test/x", stdin=robots)
    # The note is on stderr: stdout stays one line per URL.
    assert (foo.returncode, foo.stdout) == (0, "ALLOWED     http://a.test/x  no matching rule\n")
    assert (
        "crawl delay for 'FooBot': 2.5 s (Crawl-delay / Request-rate; Google ignores" in foo.stderr
    )
    assert other.returncode == 1
    assert "crawl delay for 'OtherBot': 9 s" in other.stderr
    none = run(
        command, "check", "-", "bot", "http://a.test/", stdin=b"User-agent: *\nDisallow: /x\n"
    )
    assert "crawl delay" not in none.stderr


def test_check_stdin(command: list[str]) -> None:
    result = run(
        command, "check", "-", "bot", "http://a.test/x", stdin=b"user-agent: *\ndisallow: /x"
    )
    assert result.returncode == 1
    assert result.stdout == "DISALLOWED  http://a.test/x  line 2: disallow: /x\n"


def test_check_google_tool_argument_order(command: list[str], robots_file: Path) -> None:
    """``robots <robots.txt> <user-agent> <url>``: same positions, same exit meaning."""
    allowed = run(command, "check", str(robots_file), "Googlebot", "https://example.com/a")
    denied = run(command, "check", str(robots_file), "Googlebot", "https://example.com/private/")
    assert (allowed.returncode, denied.returncode) == (0, 1)


def test_check_non_ascii_url_canonicalised(command: list[str], tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes("User-agent: *\nDisallow: /Käyttäjä:\n".encode())
    for url in ("https://fi.test/Käyttäjä:x", "https://fi.test/K%c3%a4ytt%c3%a4j%c3%a4:x"):
        result = run(command, "check", str(robots), "bot", url)
        assert result.returncode == 1, (url, result)


def test_check_missing_file(command: list[str], tmp_path: Path) -> None:
    result = run(command, "check", str(tmp_path / "nope.txt"), "bot", "https://a.test/")
    assert_one_line_error(result, "nope.txt", "No such file")


def test_check_directory(command: list[str], tmp_path: Path) -> None:
    result = run(command, "check", str(tmp_path), "bot", "https://a.test/")
    assert_one_line_error(result, "Is a directory")


def test_check_binary_file_allows_everything(command: list[str], tmp_path: Path) -> None:
    binary = tmp_path / "robots.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    result = run(command, "check", str(binary), "bot", "https://a.test/x")
    assert result.returncode == 0
    assert result.stdout.startswith("ALLOWED ")
    assert "no allow or disallow rule found" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["check"],
        ["check", "robots.txt", "bot"],
        ["frobnicate"],
        ["lint"],
        ["lint", "x", "--format", "xml"],
    ],
    ids=[
        "nothing",
        "check-no-args",
        "check-no-url",
        "unknown-command",
        "lint-no-file",
        "lint-bad-format",
    ],
)
def test_usage_errors_one_line_exit_2(command: list[str], args: list[str]) -> None:
    result = run(command, *args)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "error:" in result.stderr


def test_empty_user_agent_token_is_a_usage_error(command: list[str], robots_file: Path) -> None:
    result = run(command, "check", str(robots_file), "2bot", "https://a.test/")
    assert_one_line_error(result, "product token")


# -- check against a robots.txt URL ---------------------------------------------


@pytest_twisted.ensureDeferred
async def test_url_200(command: list[str], site: Site) -> None:
    site.script("/robots.txt", Reply(200, ROBOTS))
    result = await run_in_thread(
        command, "check", site.url("/robots.txt"), "bot", "https://example.com/private/x"
    )
    assert result.returncode == 1
    assert "line 2: Disallow: /private/" in result.stdout
    assert site.requests("/robots.txt")[0].header("user-agent") == "bot"


@pytest_twisted.ensureDeferred
async def test_url_404_allows_everything(command: list[str], site: Site) -> None:
    site.script("/robots.txt", Reply(404, b"User-agent: *\nDisallow: /\n"))
    result = await run_in_thread(
        command, "check", site.url("/robots.txt"), "bot", "https://example.com/private/x"
    )
    assert result.returncode == 0
    assert result.stdout == "ALLOWED     https://example.com/private/x  (HTTP 404: no robots.txt)\n"
    assert "allows every URL" in result.stderr


UNREACHABLE = "robots.txt unreachable: {}; Google treats the whole site as disallowed"


@pytest.mark.parametrize("status", [503, 500, 429])
@pytest_twisted.ensureDeferred
async def test_url_server_error_disallows_every_url(
    command: list[str], site: Site, status: int
) -> None:
    # The error page's rules are not read: the status alone decides.
    site.script("/robots.txt", Reply(status, b"User-agent: *\nAllow: /\n"))
    urls = ["https://example.com/", "https://example.com/any/page"]
    result = await run_in_thread(command, "check", site.url("/robots.txt"), "bot", *urls)
    assert result.returncode == 1, result
    reason = UNREACHABLE.format(f"HTTP {status}")
    assert result.stdout.splitlines() == [f"DISALLOWED  {url}  {reason}" for url in urls]
    assert result.stderr == f"googlerobots: note: {site.url('/robots.txt')}: {reason}\n"


@pytest.mark.parametrize("status", [199, 304, 404, 418, 429, 503, 600])
@pytest_twisted.ensureDeferred
async def test_url_status_is_read_as_the_crawl_reads_it(
    command: list[str], site: Site, status: int
) -> None:
    # One table for the CLI and the crawl (policy.fetch_policy), odd statuses included.
    site.script("/robots.txt", Reply(status, b"User-agent: *\nDisallow: /\n"))
    result = await run_in_thread(command, "check", site.url("/robots.txt"), "bot", "https://a/x")
    unreachable = outcome_for_status(status) is FetchOutcome.UNREACHABLE
    assert result.returncode == (1 if unreachable else 0), result
    word = "DISALLOWED" if unreachable else "ALLOWED"
    assert result.stdout.startswith(f"{word:<12}https://a/x  "), result.stdout
    assert f"HTTP {status}" in result.stdout


@pytest_twisted.ensureDeferred
async def test_url_refused_connection_disallows_every_url(
    command: list[str], refused_port: RefusedPort
) -> None:
    result = await run_in_thread(
        command, "check", refused_port.url("/robots.txt"), "bot", "https://example.com/"
    )
    assert result.returncode == 1, result
    assert result.stdout.startswith("DISALLOWED  https://example.com/  robots.txt unreachable: ")
    assert "Connection refused" in result.stdout
    assert result.stdout.endswith("; Google treats the whole site as disallowed\n")


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:notaport/robots.txt", "http://[::1/robots.txt"],
    ids=["bad-port", "bad-ipv6"],
)
def test_url_malformed_is_a_usage_error(command: list[str], url: str) -> None:
    result = run(command, "check", url, "bot", "https://example.com/")
    assert_one_line_error(result, "invalid URL")


def test_unencodable_output_does_not_crash(command: list[str], robots_file: Path) -> None:
    env_ascii = {**os.environ, "PYTHONIOENCODING": "ascii"}
    raw = subprocess.run(
        [*command, "check", str(robots_file), "bot", "https://example.com/ä"],
        capture_output=True,
        env=env_ascii,
        timeout=120,
    )
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == b"ALLOWED     https://example.com/\\xe4  no matching rule\n"


@pytest_twisted.ensureDeferred
async def test_url_timeout(command: list[str], site: Site) -> None:
    site.script("/robots.txt", Reply.hang())
    result = await run_in_thread(
        command, "check", site.url("/robots.txt"), "bot", "https://example.com/", "--timeout", "0.5"
    )
    assert result.returncode == 1, result
    assert result.stdout.startswith("DISALLOWED  https://example.com/  robots.txt unreachable: ")
    assert "timed out" in result.stdout


@pytest_twisted.ensureDeferred
async def test_url_redirect_301_then_200(command: list[str], make_site: object) -> None:
    first, second = make_site(), make_site()  # type: ignore[operator]
    first.script("/robots.txt", Reply.redirect(second.url("/moved.txt")))
    second.script("/moved.txt", Reply(200, ROBOTS))
    result = await run_in_thread(
        command, "check", first.url("/robots.txt"), "bot", "https://example.com/private/x"
    )
    assert result.returncode == 1
    assert "line 2: Disallow: /private/" in result.stdout


@pytest.mark.parametrize(
    ("hops", "applies"), [(5, True), (6, False)], ids=["five-hops-followed", "sixth-hop-as-404"]
)
@pytest_twisted.ensureDeferred
async def test_url_redirect_limit(command: list[str], site: Site, hops: int, applies: bool) -> None:
    site.script("/robots.txt", Reply.redirect("/r1"))
    for hop in range(1, hops):
        site.script(f"/r{hop}", Reply.redirect(f"/r{hop + 1}"))
    site.script(f"/r{hops}", Reply(200, ROBOTS))
    result = await run_in_thread(
        command, "check", site.url("/robots.txt"), "bot", "https://example.com/private/x"
    )
    assert result.returncode == (1 if applies else 0), result
    if not applies:
        assert "as for 404" in result.stdout
        assert site.hits(f"/r{hops}") == 0


@pytest_twisted.ensureDeferred
async def test_url_redirect_loop_as_404(command: list[str], site: Site) -> None:
    site.script("/robots.txt", Reply.redirect("/a"))
    site.script("/a", Reply.redirect("/b"))
    site.script("/b", Reply.redirect("/a"))
    result = await run_in_thread(
        command, "check", site.url("/robots.txt"), "bot", "https://example.com/private/x"
    )
    assert result.returncode == 0
    assert "as for 404" in result.stdout


@pytest_twisted.ensureDeferred
async def test_url_endless_body_read_to_the_limit_only(command: list[str], site: Site) -> None:
    site.script("/robots.txt", Reply.stream(b"User-agent: *\nDisallow: /x\n", fill=b"#\n"))
    result = await run_in_thread(
        command, "check", site.url("/robots.txt"), "bot", "https://example.com/x"
    )
    assert result.returncode == 1
    assert "only the first 512,000 bytes are read" in result.stderr
    record = site.requests("/robots.txt")[0]
    await record.done
    # Generous bound: socket buffers hold some more, an endless body never.
    assert record.body_bytes_sent < 20 * GOOGLE_MAX_SIZE


# -- check --usage (issue 20) -------------------------------------------------

USAGE_FIXTURE = Path(__file__).with_name("fixtures") / "usage-both-syntaxes.txt"
USAGE_URLS = [
    "https://example.com/",
    "https://example.com/open-data/set.csv",
    "https://example.com/blog/post",
    "https://example.com/private/x",
]


def test_check_usage_both_syntaxes(command: list[str]) -> None:
    # The closing note's output: a "no" is DISALLOWED with its deciding line.
    result = run(
        command, "check", str(USAGE_FIXTURE), "googlebot", "--usage", "train-ai", *USAGE_URLS
    )
    assert result.returncode == 1, result
    assert result.stdout.splitlines() == [
        "DISALLOWED  https://example.com/  train-ai=n: line 4: Content-Usage: train-ai=n, search=y",
        "ALLOWED     https://example.com/open-data/set.csv  "
        "train-ai=y: line 5: Content-Usage: /open-data/ train-ai=y",
        "DISALLOWED  https://example.com/blog/post  "
        "train-ai=n: line 4: Content-Usage: train-ai=n, search=y",
        "DISALLOWED  https://example.com/private/x  "
        "line 3: Disallow: /private/ (not fetched, so no usage preference)",
    ]
    assert result.stderr == ""


def test_check_usage_content_signal_vocabulary(command: list[str]) -> None:
    result = run(
        command, "check", str(USAGE_FIXTURE), "googlebot", "--usage", "ai-input",
        "https://example.com/", "https://example.com/blog/post",
    )  # fmt: skip
    assert result.returncode == 1, result
    assert result.stdout.splitlines() == [
        "ALLOWED     https://example.com/  "
        "ai-use=y: line 6: Content-Signal: search=yes, ai-input=yes, ai-train=no",
        "DISALLOWED  https://example.com/blog/post  "
        "ai-use=n: line 7: Content-Signal: /blog/ ai-input=no",
    ]


def test_check_usage_unknown_is_allowed_exit_0(command: list[str]) -> None:
    # FooBot's group has only a malformed train-ai value: unknown, not "no".
    result = run(
        command,
        "check",
        str(USAGE_FIXTURE),
        "FooBot",
        "--usage",
        "train-ai",
        "https://example.com/",
    )
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == [
        "ALLOWED     https://example.com/  train-ai unknown: no usage rule matches"
    ]


def test_check_usage_file_without_usage_rules_notes_it(
    command: list[str], robots_file: Path
) -> None:
    result = run(command, "check", str(robots_file), "bot", "--usage", "search", "https://e.com/")
    assert result.returncode == 0, result
    assert "no Content-Usage or Content-Signal rule found" in result.stderr
    assert result.stdout.splitlines() == [
        "ALLOWED     https://e.com/  search unknown: no usage rule matches"
    ]


def test_check_usage_unknown_category_is_an_argument_error(command: list[str]) -> None:
    result = run(
        command, "check", str(USAGE_FIXTURE), "bot", "--usage", "training", "https://e.com/"
    )
    assert result.returncode == 2, result
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("googlerobots check: error: argument --usage: ")
    assert "unknown usage category 'training'" in line and "ai-input" in line


def test_lint_usage_both_syntaxes(command: list[str]) -> None:
    # The closing note's output: the one malformed line of the fixture.
    result = run(command, "lint", str(USAGE_FIXTURE))
    assert result.returncode == 1, result
    assert result.stdout.splitlines() == [
        f"{USAGE_FIXTURE}:11: error: Content-Usage takes 'y' or 'n', not 'no' "
        "(did you mean 'n'?): 'train-ai' stays unknown [usage-value]",
        "1 error, 0 warnings",
    ]


# -- lint ---------------------------------------------------------------------


LINT_ME = b"Disallow: /early\nUser-agent: FooBot/1.2\nDissallow: /x\nCrawl-delay: 5\n"


def test_lint_text(command: list[str], tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(LINT_ME)
    result = run(command, "lint", str(path))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert [line.split(": ", 2)[:2] for line in lines[:-1]] == [
        [f"{path}:1", "error"],
        [f"{path}:2", "warning"],
        [f"{path}:3", "warning"],
        [f"{path}:4", "warning"],
    ]
    assert lines[0].endswith("[rule-outside-group]")
    assert lines[-1] == "1 error, 3 warnings"


def test_lint_json(command: list[str], tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(LINT_ME)
    result = run(command, "lint", str(path), "--format", "json")
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert (document["errors"], document["warnings"]) == (1, 3)
    assert [(d["line"], d["severity"], d["code"]) for d in document["diagnostics"]] == [
        (1, "error", "rule-outside-group"),
        (2, "warning", "user-agent-token"),
        (3, "warning", "accepted-typo"),
        (4, "warning", "ignored-by-google"),
    ]


def test_lint_warnings_only_exit_0(command: list[str]) -> None:
    result = run(command, "lint", "-", stdin=b"User-agent: *\nDisallow:\n")
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "0 errors, 1 warning"


def test_lint_clean(command: list[str], robots_file: Path) -> None:
    result = run(command, "lint", str(robots_file))
    assert (result.returncode, result.stdout) == (0, "0 errors, 0 warnings\n")


def test_lint_binary_file_errors(command: list[str], tmp_path: Path) -> None:
    binary = tmp_path / "robots.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    result = run(command, "lint", str(binary), "--format", "json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["errors"] > 0


def test_lint_past_500_kib(command: list[str], tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    # 14 + 13 * n bytes: the limit falls 7 bytes into a line, "Disallo" is left.
    path.write_bytes(b"User-agent: *\n" + b"Disallow: /x\n" * (GOOGLE_MAX_SIZE // 13 + 10))
    result = run(command, "lint", str(path), "--format", "json")
    assert result.returncode == 1
    lines = (GOOGLE_MAX_SIZE - 14) // 13 + 2
    assert [(d["line"], d["codes"]) for d in json.loads(result.stdout)["diagnostics"]] == [
        (lines, ["past-size-limit", "unparsable-line"])
    ]


def test_lint_missing_file_and_directory(command: list[str], tmp_path: Path) -> None:
    assert_one_line_error(run(command, "lint", str(tmp_path / "nope")), "No such file")
    assert_one_line_error(run(command, "lint", str(tmp_path)), "Is a directory")


@pytest_twisted.ensureDeferred
async def test_lint_url_unreachable_and_404(
    command: list[str], site: Site, refused_port: RefusedPort
) -> None:
    site.script("/robots.txt", Reply(404))
    missing = await run_in_thread(command, "lint", site.url("/robots.txt"))
    assert missing.returncode == 0
    assert "HTTP 404" in missing.stdout
    refused = await run_in_thread(command, "lint", refused_port.url("/robots.txt"))
    assert_one_line_error(refused, "robots.txt unreachable", "nothing to lint")
    site.script("/robots.txt", Reply(503))
    down = await run_in_thread(command, "lint", site.url("/robots.txt"))
    assert_one_line_error(down, "robots.txt unreachable (HTTP 503)", "nothing to lint")


# -- sitemaps (issue 28) -------------------------------------------------------


def test_check_notes_the_sitemaps_on_stderr(command: list[str], tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(
        b"Sitemap: https://example.com/sitemap.xml\nUser-agent: *\nDisallow: /x\n"
        b"sitemap: https://example.com/news.xml\n"
    )
    result = run(command, "check", str(robots), "MyBot", "https://example.com/y")
    assert result.returncode == 0, result
    assert result.stdout == "ALLOWED     https://example.com/y  no matching rule\n"
    assert result.stderr.splitlines() == [
        "googlerobots: note: Sitemap: https://example.com/sitemap.xml",
        "googlerobots: note: Sitemap: https://example.com/news.xml",
    ]
