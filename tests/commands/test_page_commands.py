"""The page directives in the commands: ``scrapy robots --page`` (run in ``example_project``
against a local site) and ``googlerobots check-headers`` on saved responses."""

from __future__ import annotations

import io
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet.threads import deferToThread

from scrapy_googlerobots.commands.googlerobots import main
from scrapy_googlerobots.commands.page_check import read_saved_response

from servers import Reply, Site

pytestmark = pytest.mark.scrapy_side

PROJECT = Path(__file__).resolve().parents[2] / "example_project"
PROJECT_AGENT = str(runpy.run_path(str(PROJECT / "demo_project" / "settings.py"))["USER_AGENT"])
PAGE = (
    b'<!doctype html><html><head><meta name="robots" content="nofollow">'
    b'<meta name="DemoBot" content="noindex"><meta name="otherbot" content="noarchive">'
    b"</head><body>text</body></html>"
)


def scrapy_robots(*args: str) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY_")}
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "robots", *args],
        cwd=PROJECT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


async def run(*args: str) -> subprocess.CompletedProcess[str]:
    """Off the reactor thread, so the local site keeps answering."""
    result: subprocess.CompletedProcess[str] = await deferToThread(scrapy_robots, *args)
    return result


def script(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /private/\n"))
    site.script(
        "/a",
        Reply(
            200,
            PAGE,
            {
                "Content-Type": "text/html",
                "X-Robots-Tag": ["otherbot: noindex", "max-snippet:20, max-snippet:oops"],
            },
        ),
    )


@pytest_twisted.ensureDeferred
async def test_page_flag_fetches_allowed_pages_and_prints_their_directives(site: Site) -> None:
    script(site)
    a, private = site.url("/a"), site.url("/private/x")
    result = await run("--page", a, private)
    assert result.returncode == 1, result.stderr  # /private/x is disallowed
    assert result.stdout.splitlines()[2:] == [
        f"  ALLOWED     {a}  no matching rule",
        "      page: HTTP 200; directives for DemoBot:",
        "        in effect:",
        "          max-snippet:20  X-Robots-Tag: max-snippet:20, max-snippet:oops",
        '          nofollow        <meta name="robots" content="nofollow">',
        '          noindex         <meta name="demobot" content="noindex">',
        "        in a crawl:",
        "          requests yielded from this page are not followed "
        '(<meta name="robots" content="nofollow">; ROBOTSTXT_PAGE_NOFOLLOW)',
        "          items of this page are kept and counted as from a noindex page "
        '(<meta name="demobot" content="noindex">; ROBOTSTXT_PAGE_NOINDEX_ITEMS = \'drop\' '
        "drops them)",
        "        ignored (for other crawlers):",
        "          X-Robots-Tag: otherbot: noindex ignored for DemoBot",
        "        malformed (not read):",
        "          X-Robots-Tag: max-snippet:oops is malformed: max-snippet needs an integer >= -1",
        f"  DISALLOWED  {private}  line 2: Disallow: /private/",
        "      page: not fetched: robots.txt disallows it (a crawl would not fetch it)",
    ]
    # The page was fetched once, with the project's User-Agent; the disallowed one never.
    [request] = site.requests("/a")
    assert request.header("user-agent") == PROJECT_AGENT
    assert site.hits("/private/x") == 0


@pytest_twisted.ensureDeferred
async def test_without_the_flag_no_page_is_fetched_and_json_has_it(site: Site) -> None:
    script(site)
    a = site.url("/a")
    result = await run(a)
    assert result.returncode == 0 and "page:" not in result.stdout
    assert site.hits("/a") == 0 and site.hits("/robots.txt") == 1
    result = await run("--json", "--page", a)
    [entry] = json.loads(result.stdout)["urls"]
    page = entry["page"]
    assert (page["fetched"], page["status"], page["nofollow"], page["noindex"]) == (
        True,
        200,
        True,
        True,
    )
    assert page["directives"][1] == {
        "directive": "nofollow",
        "source": '<meta name="robots" content="nofollow">',
    }
    assert page["ignored"] == ["X-Robots-Tag: otherbot: noindex ignored for DemoBot"]
    assert site.hits("/a") == 1


# --------------------------------------------------------------------------
# googlerobots check-headers


def check_headers(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        status = main(["check-headers", *args])
    finally:
        sys.stdout, sys.stderr = saved
    return status, out.getvalue(), err.getvalue()


CURL_IL = (
    b"HTTP/1.1 301 Moved Permanently\r\nLocation: /a\r\n\r\n"
    b"HTTP/2 200\r\ncontent-type: text/html; charset=utf-8\r\n"
    b"x-robots-tag: unavailable_after: 25 Jun 2010 15:00:00 PST\r\n"
    b"X-Robots-Tag: googlebot: noai\r\n"
    b"x-robots-tag:\r\n  noimageai\r\n\r\n" + PAGE
)


def test_check_headers_reads_a_curl_response(tmp_path: Path) -> None:
    saved = tmp_path / "response.txt"
    saved.write_bytes(CURL_IL)
    status, out, err = check_headers(str(saved), "DemoBot/1.0")
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        "product token: DemoBot (from 'DemoBot/1.0')",
        f"{saved}: HTTP/2 200; {len(PAGE)} bytes of body, HTML: head meta tags read",
        "in effect:",
        "  unavailable_after:2010-06-25T15:00:00-08:00  "
        "X-Robots-Tag: unavailable_after: 25 Jun 2010 15:00:00 PST",
        "  noimageai                                    X-Robots-Tag: noimageai",
        '  nofollow                                     <meta name="robots" content="nofollow">',
        '  noindex                                      <meta name="demobot" content="noindex">',
        "in a crawl:",
        '  requests yielded from this page are not followed (<meta name="robots" '
        'content="nofollow">; ROBOTSTXT_PAGE_NOFOLLOW)',
        "  items of this page are kept and counted as from a noindex page (<meta "
        'name="demobot" content="noindex">; ROBOTSTXT_PAGE_NOINDEX_ITEMS = \'drop\' drops them)',
        "  train-ai is 'no': a crawl that declares it (ROBOTSTXT_USAGE) does not get this page "
        "(X-Robots-Tag: noimageai)",
        "ignored (for other crawlers):",
        "  X-Robots-Tag: googlebot: noai ignored for DemoBot",
    ]


@pytest.mark.parametrize(
    ("headers", "body", "expected_status", "in_effect"),
    [
        pytest.param(b"Content-Type: text/plain\n", None, 0, "in effect: none", id="nothing"),
        pytest.param(
            b"HTTP/1.1 200 OK\nX-Robots-Tag: noarchive\n",
            None,
            0,
            "  noarchive  X-Robots-Tag: noarchive",
            id="reported_only",
        ),
        pytest.param(
            b"X-Robots-Tag: all\n",
            PAGE,
            1,
            '  nofollow  <meta name="robots" content="nofollow">',
            id="sniffed_html_body_file",
        ),
        pytest.param(
            b"Content-Type: application/pdf\n", PAGE, 0, "in effect: none", id="pdf_not_read"
        ),
    ],
)
def test_check_headers_with_a_body_file(
    tmp_path: Path, headers: bytes, body: bytes | None, expected_status: int, in_effect: str
) -> None:
    saved = tmp_path / "headers.txt"
    saved.write_bytes(headers)
    args = [str(saved), "DemoBot"]
    if body is not None:
        (tmp_path / "page.html").write_bytes(body)
        args += ["--body", str(tmp_path / "page.html")]
    status, out, _ = check_headers(*args)
    assert status == expected_status
    assert in_effect in out.splitlines()


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        pytest.param(b"not a header\n", ["Bot"], "line 1 is not a header line", id="garbage"),
        pytest.param(b"A: b\n", ["2Bot"], "has no product token", id="bad_agent"),
        pytest.param(None, ["Bot"], "cannot read file", id="missing_file"),
    ],
)
def test_check_headers_errors_exit_2(
    tmp_path: Path, content: bytes | None, args: list[str], message: str
) -> None:
    saved = tmp_path / "saved.txt"
    if content is not None:
        saved.write_bytes(content)
    status, out, err = check_headers(str(saved), *args)
    assert (status, out) == (2, "")
    assert message in err and err.count("\n") == 1


def test_saved_response_without_a_body() -> None:
    saved = read_saved_response(b"HTTP/1.0 404 Not Found\nX-Robots-Tag: none\n")
    assert (saved.status, saved.values("X-ROBOTS-TAG"), saved.body) == (
        "HTTP/1.0 404 Not Found",
        [b"none"],
        None,
    )


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        pytest.param(
            b"text/html",
            '<html><head></head><meta name="robots" content="nofollow">'.encode("utf-16"),
            id="utf16_bom_meta_after_head",
        ),
        pytest.param(
            b"text/html; charset=iso-2022-jp",
            '<head><title>\u8868</title><meta name="robots" content="nofollow">'.encode(
                "iso2022_jp"
            ),
            id="declared_legacy_charset",
        ),
    ],
)
def test_check_headers_body_read_as_a_browser_reads_the_head(
    tmp_path: Path, content_type: bytes, body: bytes
) -> None:
    # Issue 33: --body uses the corrected head reader, in the page's encoding.
    saved = tmp_path / "headers.txt"
    saved.write_bytes(b"HTTP/1.1 200 OK\r\ncontent-type: " + content_type + b"\r\n\r\n")
    (tmp_path / "page.html").write_bytes(body)
    _, out, _ = check_headers(str(saved), "DemoBot", "--body", str(tmp_path / "page.html"))
    assert "nofollow" in out


# --------------------------------------------------------------------------
# issue 33: the commands agree with the crawl


def script_usage(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nAllow: /\n"))
    site.script(
        "/header",
        Reply(200, b"<p>x", {"Content-Type": "text/html", "Content-Usage": "train-ai=n"}),
    )
    site.script(
        "/meta",
        Reply(
            200,
            b'<html><head></head><meta name="robots" content="noai, nofollow"><body>',
            {"Content-Type": "text/html"},
        ),
    )
    site.script("/plain", Reply(200, b"<p>x", {"Content-Type": "text/html"}))


@pytest_twisted.ensureDeferred
async def test_robots_page_with_declared_use_is_disallowed_as_in_a_crawl(site: Site) -> None:
    script_usage(site)
    header, meta, plain = site.url("/header"), site.url("/meta"), site.url("/plain")
    result = await run("--usage", "train-ai", "--page", header, meta, plain)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()

    def line_of(url: str) -> str:
        [found] = [line for line in lines if line.startswith("  ") and f" {url} " in line]
        return found  # then "; TDMRep: ..." (train-ai is a use TDMRep covers)

    assert line_of(header).startswith(
        f"  DISALLOWED  {header}  train-ai=n by the page: Content-Usage: train-ai=n "
        "(a crawl declaring train-ai refuses it)"
    )
    assert line_of(meta).startswith(
        f"  DISALLOWED  {meta}  train-ai=n by the page: "
        '<meta name="robots" content="noai, nofollow"> (a crawl declaring train-ai refuses it)'
    )
    assert line_of(plain).startswith(f"  ALLOWED     {plain}")
    # Without a declared use the same pages are allowed (exit 0).
    result = await run("--page", header, meta)
    assert result.returncode == 0, result.stdout


@pytest_twisted.ensureDeferred
async def test_robots_unreachable_says_what_the_crawl_does(site: Site) -> None:
    site.script("/robots.txt", Reply(503, b"busy"))
    url = site.url("/news")
    result = await run(url)
    assert result.returncode == 1
    assert "every URL disallowed" not in result.stdout
    assert "a crawl's requests wait while robots.txt is fetched again" in result.stdout
    assert "ROBOTSTXT_UNREACHABLE = 'defer'" in result.stdout
    result = await run("-s", "ROBOTSTXT_UNREACHABLE=disallow", url)
    assert result.returncode == 1
    assert "every URL disallowed (ROBOTSTXT_UNREACHABLE = 'disallow', as Google)" in result.stdout


@pytest.mark.parametrize(
    ("headers", "body", "written"),
    [
        pytest.param(
            b"content-usage: train-ai=n\r\n", b"<p>x", "Content-Usage: train-ai=n", id="header"
        ),
        pytest.param(
            b"",
            b'<head><meta name="robots" content="noai"></head>',
            '<meta name="robots" content="noai">',
            id="meta",
        ),
    ],
)
def test_check_headers_with_a_declared_use(
    tmp_path: Path, headers: bytes, body: bytes, written: str
) -> None:
    saved = tmp_path / "response.txt"
    saved.write_bytes(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n" + headers + b"\r\n" + body)
    status, out, _ = check_headers(str(saved), "DemoBot", "--usage", "train-ai")
    assert status == 1
    assert (
        f"usage: DISALLOWED for train-ai: {written} (a crawl declaring train-ai refuses this "
        "response)"
    ) in out.splitlines()
    status, out, _ = check_headers(str(saved), "DemoBot", "--usage", "search")
    assert "usage: ALLOWED for search: the response says no 'no'" in out.splitlines()


def test_in_a_crawl_quotes_the_tag_as_written(tmp_path: Path) -> None:
    saved = tmp_path / "response.txt"
    saved.write_bytes(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\r\n"
        b'<head><meta name="robots" content="nofollow,noindex"></head>'
    )
    status, out, _ = check_headers(str(saved), "DemoBot")
    assert status == 1
    assert (
        '  requests yielded from this page are not followed (nofollow in <meta name="robots" '
        'content="nofollow,noindex">; ROBOTSTXT_PAGE_NOFOLLOW)'
    ) in out.splitlines()
    assert '<meta name="robots" content="nofollow">' not in out
