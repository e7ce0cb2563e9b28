"""GoogleRobotParser: the ``ROBOTSTXT_PARSER`` backend for Scrapy's stock middleware.

Directly (matching, user-agent reduction, size cap, crawl-delay, sitemaps,
garbage) and through the stock ``RobotsTxtMiddleware`` in a real crawl.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.robotstxt import RobotParser
from scrapy.utils.test import get_crawler

from scrapy_googlerobots import GoogleRobotParser
from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE, parse

from servers import RecordingSpider, Reply, Site, run_crawl

FOO_UA = "FooBot/1.2 (+http://foo.example/bot)"
COMPATIBLE_UA = "Mozilla/5.0 (compatible; FooBot/1.0; +http://foo.example/bot)"
BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)"

GROUPS = b"""\
User-agent: *
Disallow: /
Crawl-delay: 7

User-agent: foobot
Allow: /shop/sale
Disallow: /shop
Allow: /folder
Disallow: /folder
Disallow: /*.pdf$
Disallow: /K%C3%A4ytt%C3%A4j%C3%A4:
Crawl-delay: 2.5

User-agent: mozilla
Disallow: /browsers-not-welcome

Sitemap: https://example.com/sitemap.xml
Sitemap: https://example.com/news.xml
"""

ALLOWED_CASES = {
    # (url, user agent, allowed)
    "longest-match-allow-wins": ("https://example.com/shop/sale/1", "FooBot", True),
    "longest-match-disallow-wins": ("https://example.com/shop/cart", "FooBot", False),
    "tie-goes-to-allow": ("https://example.com/folder/page", "FooBot", True),
    "dollar-anchors-end": ("https://example.com/a.pdf", "FooBot", False),
    "dollar-query-escapes-anchor": ("https://example.com/a.pdf?page=2", "FooBot", True),
    "own-group-shadows-star": ("https://example.com/elsewhere", "FooBot", True),
    "star-group-for-others": ("https://example.com/elsewhere", "OtherBot", False),
    "full-ua-reduced-to-token": ("https://example.com/shop/cart", FOO_UA, False),
    "full-ua-token-own-group": ("https://example.com/elsewhere", FOO_UA, True),
    "compatible-token-wins": ("https://example.com/elsewhere", COMPATIBLE_UA, True),
    "browser-ua-matches-mozilla": ("https://example.com/browsers-not-welcome", BROWSER_UA, False),
    "browser-ua-mozilla-group-only": ("https://example.com/elsewhere", BROWSER_UA, True),
    "token-case-insensitive": ("https://example.com/shop/cart", "FOOBOT", False),
    "url-utf8-canonicalised": ("https://example.com/Käyttäjä:x", "FooBot", False),
    "url-lowercase-escapes-canonicalised": (
        "https://example.com/K%c3%a4ytt%c3%a4j%c3%a4:x",
        "FooBot",
        False,
    ),
}


@pytest.fixture(scope="module")
def parser() -> GoogleRobotParser:
    return GoogleRobotParser.from_crawler(get_crawler(), GROUPS)


@pytest.mark.parametrize(
    ("url", "agent", "allowed"), ALLOWED_CASES.values(), ids=ALLOWED_CASES.keys()
)
def test_allowed(parser: GoogleRobotParser, url: str, agent: str, allowed: bool) -> None:
    assert parser.allowed(url, agent) is allowed


def test_is_a_scrapy_robot_parser(parser: GoogleRobotParser) -> None:
    assert isinstance(parser, RobotParser)


def test_bytes_url_and_user_agent(parser: GoogleRobotParser) -> None:
    # The stock middleware passes the User-Agent header as bytes.
    assert parser.allowed(b"https://example.com/shop/cart", FOO_UA.encode()) is False
    assert parser.allowed(b"https://example.com/elsewhere", FOO_UA.encode()) is True


def test_str_body() -> None:
    rp = GoogleRobotParser.from_crawler(get_crawler(), GROUPS.decode())
    assert rp.allowed("https://example.com/shop/cart", "FooBot") is False


def test_from_already_parsed_rules() -> None:
    rp = GoogleRobotParser.from_robotstxt(parse(GROUPS))
    assert rp.allowed("https://example.com/shop/cart", FOO_UA) is False
    assert rp.sitemaps == ["https://example.com/sitemap.xml", "https://example.com/news.xml"]


def test_explain_names_the_deciding_line(parser: GoogleRobotParser) -> None:
    verdict = parser.explain("https://example.com/shop/sale/1", FOO_UA)
    assert (verdict.allowed, verdict.line, verdict.rule) == (True, 6, "/shop/sale")


@pytest.mark.parametrize(
    ("agent", "delay"),
    [("FooBot", 2.5), (FOO_UA, 2.5), (b"FooBot/1.2", 2.5), ("OtherBot", 7.0)],
    ids=["own-group", "full-ua-own-group", "bytes-ua", "star-group"],
)
def test_crawl_delay_of_the_group_google_picks(
    parser: GoogleRobotParser, agent: str | bytes, delay: float
) -> None:
    assert parser.crawl_delay(agent) == delay


def test_crawl_delay_none_when_the_group_has_none(parser: GoogleRobotParser) -> None:
    # The mozilla group has no crawl-delay; the '*' one is not consulted.
    assert parser.crawl_delay(BROWSER_UA) is None
    assert GoogleRobotParser(b"User-agent: *\nDisallow: /x\n").crawl_delay("FooBot") is None


def test_sitemaps_in_file_order(parser: GoogleRobotParser) -> None:
    assert parser.sitemaps == ["https://example.com/sitemap.xml", "https://example.com/news.xml"]


def _padded(rule_offset: int) -> bytes:
    head = b"User-agent: *\n"
    padding = b"#" * (rule_offset - len(head) - 1) + b"\n"
    return head + padding + b"Disallow: /late\n"


@pytest.mark.parametrize(
    ("rule_offset", "allowed"),
    [(GOOGLE_MAX_SIZE - 100, False), (GOOGLE_MAX_SIZE, True), (GOOGLE_MAX_SIZE + 10_000, True)],
    ids=["rule-inside-500KiB-applies", "rule-at-limit-ignored", "rule-past-limit-ignored"],
)
def test_only_first_500_kib_used(rule_offset: int, allowed: bool) -> None:
    rp = GoogleRobotParser.from_crawler(get_crawler(), _padded(rule_offset))
    assert rp.allowed("https://example.com/late", "FooBot") is allowed


def test_max_size_setting_honoured() -> None:
    body = _padded(2_000)
    small = get_crawler(settings_dict={"ROBOTSTXT_MAX_SIZE": 1_000})
    assert GoogleRobotParser.from_crawler(small, body).allowed("https://e.com/late", "x") is True
    assert (
        GoogleRobotParser.from_crawler(get_crawler(), body).allowed("https://e.com/late", "x")
        is False
    )


def test_max_size_setting_below_one_fails_at_start_up() -> None:
    with pytest.raises(ValueError, match="ROBOTSTXT_MAX_SIZE"):
        GoogleRobotParser.from_crawler(get_crawler(settings_dict={"ROBOTSTXT_MAX_SIZE": 0}), b"")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00\xff\xfe garbage \x80",
        b"<html><body>Not a robots.txt</body></html>",
        b"\xef\xbb\xbf",
        "Disallow: /ünïcode".encode("latin-1"),
        b"User-agent: *\nDisallow",
    ],
    ids=["empty", "binary", "html", "bom-only", "latin-1", "truncated-line"],
)
def test_garbage_allows_everything(body: bytes) -> None:
    rp = GoogleRobotParser.from_crawler(get_crawler(), body)
    assert rp.allowed("https://example.com/anything", FOO_UA) is True
    assert rp.crawl_delay(FOO_UA) is None


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=2_000), url=st.text(max_size=100), agent=st.text(max_size=40))
def test_never_raises(body: bytes, url: str, agent: str) -> None:
    rp = GoogleRobotParser(body)
    assert isinstance(rp.allowed("https://example.com/" + url, agent), bool)
    delay = rp.crawl_delay(agent)
    assert delay is None or isinstance(delay, float)
    assert all(isinstance(sitemap, str) for sitemap in rp.sitemaps)


class _ParsedSpider(RecordingSpider):
    """Requests its first URL, then the others once that one is in.

    The stock middleware (Scrapy 2.19) lets requests that wait for the first
    robots.txt fetch alongside the first one pass unchecked, so the rest wait
    until the parser is in place. Records the parser sent with
    ``robots_parsed`` into the ``parsed`` list it is given.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> _ParsedSpider:
        spider: _ParsedSpider = super().from_crawler(crawler, *args, **kwargs)
        signal = getattr(signals, "robots_parsed", None)  # Scrapy >= 2.18
        if signal is not None:
            crawler.signals.connect(spider.on_robots_parsed, signal=signal)
        return spider

    def on_robots_parsed(self, robotparser: RobotParser, request: Any) -> None:
        self.parsed.append(robotparser)  # type: ignore[attr-defined]

    def start_requests(self) -> Any:
        first, *self._later = self._start
        yield Request(first, callback=self.parse_first, errback=self.on_error)

    def parse_first(self, response: Response) -> Any:
        for url in self._later:
            yield Request(url, callback=self.parse, errback=self.on_error)


@pytest_twisted.ensureDeferred
async def test_stock_middleware_with_google_parser(site: Site) -> None:
    """The stock RobotsTxtMiddleware, ROBOTSTXT_PARSER pointing at us, a real crawl."""
    site.script("/robots.txt", Reply(200, GROUPS))
    paths = {
        "/shop/sale/1": True,
        "/shop/cart": False,
        "/folder/x": True,
        "/a.pdf": False,
        "/a.pdf?page=2": True,
        "/elsewhere": True,
    }
    parsed: list[RobotParser] = []
    result = await run_crawl(
        {
            "ROBOTSTXT_OBEY": True,
            "ROBOTSTXT_PARSER": "scrapy_googlerobots.GoogleRobotParser",
            "USER_AGENT": FOO_UA,
        },
        [site.url("/"), *(site.url(path) for path in paths)],
        spider_cls=_ParsedSpider,
        parsed=parsed,
    )
    allowed = sorted(path for path, ok in paths.items() if ok)
    assert sorted(r.uri for r in site.requests() if r.path != "/robots.txt") == ["/", *allowed]
    assert sorted(result.downloaded) == sorted(site.url(path) for path in ["/", *allowed])
    assert result.stats["robotstxt/forbidden"] == len(paths) - len(allowed)
    assert site.hits("/robots.txt") == 1
    if not hasattr(signals, "robots_parsed"):
        return  # Scrapy < 2.18 has no robots_parsed signal
    assert len(parsed) == 1
    assert isinstance(parsed[0], GoogleRobotParser)
    assert parsed[0].sitemaps == ["https://example.com/sitemap.xml", "https://example.com/news.xml"]
