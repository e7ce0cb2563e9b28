"""``googlerobots lint`` rules, checked on the linter directly (the CLI has its own tests).

One case per rule; each expects the exact (line, severity, codes) diagnostics.
"""

from __future__ import annotations

import pytest

from scrapy_googlerobots.commands.lint import lint
from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE, MAX_LINE_LENGTH

E, W = "error", "warning"


def _long_rule(length: int) -> bytes:
    """A ``Disallow`` line of exactly ``length`` bytes (terminator excluded)."""
    head = b"Disallow: /"
    return head + b"a" * (length - len(head))


CASES: dict[str, tuple[bytes, list[tuple[int, str, list[str]]]]] = {
    "clean-file": (
        b"# comment\nUser-agent: *\nDisallow: /private # why\nAllow: /private/public\n\n"
        b"User-agent: FooBot\nUser-agent: Googlebot-News\nDisallow: /*.pdf$\n"
        b"Sitemap: https://example.com/sitemap.xml\n",
        [],
    ),
    "error-rule-outside-any-group": (
        b"Disallow: /x\nUser-agent: *\nDisallow: /y\n",
        [(1, E, ["rule-outside-group"])],
    ),
    "sitemap-outside-group-is-fine": (
        b"Sitemap: https://example.com/s.xml\nUser-agent: *\nDisallow: /y\n",
        [],
    ),
    "error-line-cut-past-16663-bytes": (
        b"User-agent: *\n" + _long_rule(MAX_LINE_LENGTH + 1) + b"\n",
        [(2, E, ["line-too-long"])],
    ),
    "line-of-16663-bytes-is-whole": (
        b"User-agent: *\n" + _long_rule(MAX_LINE_LENGTH) + b"\n",
        [],
    ),
    "error-unknown-key": (
        b"User-agent: *\nNoise: yes\nDisallow: /x\n",
        [(2, E, ["unknown-key"])],
    ),
    "error-noindex-unsupported-by-google": (
        b"User-agent: *\nNoindex: /x\nDisallow: /y\n",
        [(2, E, ["unknown-key"])],
    ),
    "error-bom-inside-file-makes-key-unknown": (
        b"User-agent: *\nDisallow: /a\n\xef\xbb\xbfUser-agent: b\nDisallow: /b\n",
        [(3, E, ["unknown-key"])],
    ),
    "error-unparsable-line": (
        b"User-agent: *\n<html>\ndisallow /x y\n",
        [(2, E, ["unparsable-line"]), (3, E, ["unparsable-line"])],
    ),
    "error-first-colon-swallows-key": (
        b"User-agent: *\nDisallow /a:/b\n",
        [(2, E, ["misread-key"])],
    ),
    "warning-known-key-google-ignores": (
        b"User-agent: *\nCrawl-delay: 10\nHost: example.com\nDisallow: /x\n",
        [(2, W, ["ignored-by-google"]), (3, W, ["ignored-by-google"])],
    ),
    "warning-accepted-typos": (
        b"Useragent: a\nUser agent: b\nDissallow: /x\nDisalow: /y\nSite-map: https://e.com/s\n",
        [
            (1, W, ["accepted-typo"]),
            (2, W, ["accepted-typo"]),
            (3, W, ["accepted-typo"]),
            (4, W, ["accepted-typo"]),
            (5, W, ["accepted-typo"]),
        ],
    ),
    "warning-key-read-by-prefix": (
        b"User-agents: *\nDisallowed: /x\n",
        [(1, W, ["accepted-typo"]), (2, W, ["accepted-typo"])],
    ),
    "warning-typo-read-by-prefix-is-no-misread-key": (
        b"User agents: *\nDisallow: /x\nUser agent foo: b\nDisallow: /y\n",
        [(1, W, ["accepted-typo"]), (3, E, ["misread-key"])],
    ),
    "warning-missing-colon": (
        b"User-agent *\nDisallow /x\n",
        [(1, W, ["missing-colon"]), (2, W, ["missing-colon"])],
    ),
    "warning-bom-at-start": (
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n",
        [(1, W, ["bom"])],
    ),
    "warning-partial-bom-at-start": (
        b"\xef\xbbUser-agent: *\nDisallow: /x\n",
        [(1, W, ["bom"])],
    ),
    "warning-lone-bom-byte-at-start": (
        b"\xefUser-agent: *\nDisallow: /x\n",
        [(1, W, ["bom"])],
    ),
    "warning-broken-bom-at-start": (
        b"\xef\x11\xbfUser-agent: *\nDisallow: /x\n",
        [(1, E, ["unknown-key", "invalid-utf8", "bom"]), (2, E, ["rule-outside-group"])],
    ),
    "warning-invalid-utf8": (
        b"User-agent: *\nDisallow: /caf\xe9\n",
        [(2, W, ["invalid-utf8"])],
    ),
    "warning-pattern-not-starting-with-slash-or-star": (
        b"User-agent: *\nDisallow: fish/\nAllow: $\nDisallow: *.gif$\n",
        [(2, W, ["pattern-start"]), (3, W, ["pattern-start"])],
    ),
    "warning-empty-rules": (
        b"User-agent: *\nDisallow:\nAllow:\n",
        [(2, W, ["empty-rule"]), (3, W, ["empty-rule"])],
    ),
    "warning-user-agent-characters-dropped": (
        b"User-agent: FooBot/1.2\nUser-agent: Foo Bar\nUser-agent: * trailing\n"
        b"User-agent: *bot\nUser-agent: 2bot\nDisallow: /\n",
        [
            (1, W, ["user-agent-token"]),
            (2, W, ["user-agent-token"]),
            (3, W, ["user-agent-token"]),
            (4, W, ["user-agent-token"]),
            (5, W, ["user-agent-token"]),
        ],
    ),
    "warning-sitemap-not-absolute": (
        b"Sitemap: /sitemap.xml\nUser-agent: *\nDisallow: /x\n",
        [(1, W, ["sitemap-url"])],
    ),
    "one-diagnostic-per-line-worst-first": (
        b"Disallow: fish\nUser-agent: *\n",
        [(1, E, ["rule-outside-group", "pattern-start"])],
    ),
    # -- AI usage preferences (issue 20) --
    "usage-lines-are-known-and-clean": (
        b"User-agent: *\nDisallow: /p\nContent-Usage: train-ai=n, search=y\n"
        b"Content-Usage: /open/ train-ai=y\ncontent-usage: *.csv$ ai-use=n\n"
        b"Content-Signal: search=yes, ai-input=yes, ai-train=no\nCONTENT-SIGNAL: /b ai-train=yes\n",
        [],
    ),
    "error-usage-not-a-dictionary": (
        b"User-agent: *\nContent-Usage: train-ai=n search=y\nContent-Signal: ai-train=no,\n",
        [(2, E, ["usage-syntax"]), (3, E, ["usage-syntax"])],
    ),
    "error-usage-uppercase-key": (
        b"User-agent: *\nContent-Usage: Train-AI=n\nContent-Signal: search=yes, AI-train=no\n",
        [(2, E, ["usage-key-case"]), (3, E, ["usage-key-case"])],
    ),
    "error-usage-yes-no-in-content-usage": (
        b"User-agent: *\nContent-Usage: train-ai=no, search=yes\n",
        [(2, E, ["usage-value", "usage-value"])],
    ),
    "error-usage-y-n-in-content-signal": (
        b"User-agent: *\nContent-Signal: ai-train=n\n",
        [(2, E, ["usage-value"])],
    ),
    "error-usage-value-not-a-token": (
        b'User-agent: *\nContent-Usage: train-ai="n", search, ai-use=(y), x=1\n',
        [(2, E, ["usage-value", "usage-value", "usage-value", "usage-category"])],
    ),
    "error-usage-category-of-the-other-syntax": (
        b"User-agent: *\nContent-Usage: ai-train=n\nContent-Signal: train-ai=no\n",
        [(2, E, ["usage-category"]), (3, E, ["usage-category"])],
    ),
    "warning-usage-unknown-category": (
        b"User-agent: *\nContent-Usage: genai=n, train-ai=n\n",
        [(2, W, ["usage-category"])],
    ),
    "warning-usage-path-not-starting-with-slash-or-star": (
        b"User-agent: *\nContent-Usage: images/ train-ai=n\nContent-Signal: blog ai-train=no\n",
        [(2, W, ["usage-path"]), (3, W, ["usage-path"])],
    ),
    "warning-usage-without-preference": (
        b"User-agent: *\nContent-Usage:\nContent-Signal: /blog/\n",
        [(2, W, ["usage-empty"]), (3, E, ["usage-syntax"])],
    ),
    "error-usage-outside-group": (
        b"Content-Usage: train-ai=n\nUser-agent: *\nDisallow: /x\n",
        [(1, E, ["rule-outside-group"])],
    ),
    "crlf-and-cr-line-numbers": (
        b"User-agent: *\r\nDisallow: /a\rNoise: 1\r\n",
        [(3, E, ["unknown-key"])],
    ),
}


@pytest.mark.parametrize(("body", "expected"), CASES.values(), ids=CASES.keys())
def test_rule(body: bytes, expected: list[tuple[int, str, list[str]]]) -> None:
    found = [(d.line, d.severity, d.codes) for d in lint(body)]
    assert found == expected


def test_unknown_key_close_to_a_known_one_gets_a_hint() -> None:
    (diagnostic,) = lint(b"User_agent: *\n")
    assert "did you mean 'user-agent'?" in diagnostic.message


@pytest.mark.parametrize(
    ("line", "wording"),
    [
        (b"Content-Usage: train-ai=no", "did you mean 'n'?"),
        (b"Content-Signal: ai-train=y", "did you mean 'yes'?"),
        (b"Content-Signal: train-ai=no", "Content-Signal calls it 'ai-train'"),
        (b"Content-Usage: ai-input=n", "Content-Usage calls it 'ai-use'"),
        (b"Content-Usage: Search=y", "keys are lower case ('search')"),
        (b"Content-Usge: train-ai=n", "did you mean 'content-usage'?"),
    ],
    ids=["usage-y-n", "signal-yes-no", "signal-key", "usage-key", "key-case", "key-typo"],
)
def test_usage_messages_say_what_to_write(line: bytes, wording: str) -> None:
    (diagnostic,) = lint(b"User-agent: *\n" + line + b"\n")
    assert wording in diagnostic.message


def test_messages_are_one_line_and_name_the_problem() -> None:
    diagnostics = lint(b"User-agent: FooBot/1.2\nDissallow: /x\n")
    assert [d.line for d in diagnostics] == [1, 2]
    assert "'FooBot'" in diagnostics[0].message
    assert "'dissallow'" in diagnostics[1].message.lower()
    assert all("\n" not in d.message for d in diagnostics)


def _past_limit(line3_end: int) -> bytes:
    """A file longer than 500 KiB whose line 3 ends ``line3_end`` bytes after the limit."""
    line1 = b"User-agent: *\n"
    line3 = b"Disallow: /" + b"a" * 40 + b"\n"
    line2 = b"#" * (GOOGLE_MAX_SIZE + line3_end - len(line1) - len(line3) - 1) + b"\n"
    return line1 + line2 + line3 + b"Disallow: /after\n"


@pytest.mark.parametrize(
    ("line3_end", "line", "wording"),
    [(20, 3, "cut there"), (0, 4, "this line and the lines after")],
    ids=["limit-inside-a-line", "limit-at-a-line-end"],
)
def test_error_content_past_500_kib(line3_end: int, line: int, wording: str) -> None:
    content = _past_limit(line3_end)
    diagnostics = lint(content[:GOOGLE_MAX_SIZE], truncated=True)
    past = [d for d in diagnostics if "past-size-limit" in d.codes]
    assert [(d.line, d.severity) for d in past] == [(line, E)]
    assert wording in past[0].message


def test_not_truncated_no_size_error() -> None:
    assert lint(b"User-agent: *\nDisallow: /x\n", truncated=False) == []


def test_json_form() -> None:
    (diagnostic,) = lint(b"Disallow: /x\n")
    assert diagnostic.as_dict() == {
        "line": 1,
        "severity": "error",
        "code": "rule-outside-group",
        "codes": ["rule-outside-group"],
        "message": diagnostic.message,
    }
