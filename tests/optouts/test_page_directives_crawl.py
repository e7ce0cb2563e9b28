"""Page-level robots directives in real crawls (issue 26): X-Robots-Tag headers and robots
meta tags applied by the PageDirectivesMiddleware the add-on installs.

One CrawlSpider crawl over a loopback site with every directive form (header, meta,
scoped to our agent and to another one, ``none``, past and future
``unavailable_after``, competing and malformed values, ``rel`` link hints), run with
items kept (the default, marked in a field) and dropped; each run asserts the exact
pages fetched, the items kept, ``response.meta``, the stats, the log and the summary.
Then the AI opt-outs against a declared use.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import reactor
from twisted.internet.defer import Deferred

from scrapy_googlerobots import forbidden_by
from scrapy_googlerobots.reporting.explain import UsagePreference

from middleware_support import robots_stats
from servers import CrawlResult, RecordingSpider, Reply, Site, run_crawl

LOGGER = "scrapy_googlerobots"
AGENT = "TestBot/1.0 (+http://test.example/bot)"


def html(*head: str, links: Sequence[str] = (), body: str = "") -> bytes:
    """A page: ``head`` tags in its head, one <a> per link (``href`` or ``"rel|href"``)."""
    anchors = []
    for link in links:
        rel, _, href = link.rpartition("|")
        rel_attr = f' rel="{rel}"' if rel else ""
        anchors.append(f'<a{rel_attr} href="{href}">{href}</a>')
    return (
        "<!doctype html><html><head><title>t</title>"
        + "".join(head)
        + "</head><body>"
        + body
        + "".join(anchors)
        + "</body></html>"
    ).encode()


def meta(name: str, content: str) -> str:
    return f'<meta name="{name}" content="{content}">'


def page(name: str, *head: str, headers: Mapping[str, str | Sequence[str]] | None = None) -> Reply:
    """A page linking to its own child ``/child/<name>`` (followed or not)."""
    return Reply(
        200,
        html(*head, links=[f"/child/{name}"]),
        {"Content-Type": "text/html; charset=utf-8", **(headers or {})},
    )


# name -> (reply, child fetched?, item marked with this source or None)
PAGES: dict[str, tuple[Reply, bool, str | None]] = {
    "plain": (page("plain"), True, None),
    "xrt-nofollow": (page("xrt-nofollow", headers={"X-Robots-Tag": "nofollow"}), False, None),
    "meta-nofollow": (page("meta-nofollow", meta("robots", "NoFollow")), False, None),
    "xrt-none": (
        page("xrt-none", headers={"X-Robots-Tag": "none"}),
        False,
        "X-Robots-Tag: none",
    ),
    "meta-noindex": (
        page("meta-noindex", meta("ROBOTS", "noindex")),
        True,
        '<meta name="robots" content="noindex">',
    ),
    "scoped-us": (
        page("scoped-us", headers={"X-Robots-Tag": "testbot: nofollow, noindex"}),
        False,
        "X-Robots-Tag: testbot: nofollow, noindex",
    ),
    "scoped-other": (
        page("scoped-other", headers={"X-Robots-Tag": "otherbot: noindex, nofollow"}),
        True,
        None,
    ),
    "meta-agents": (
        page("meta-agents", meta("otherbot", "nofollow"), meta("TestBot", "noindex")),
        True,
        '<meta name="testbot" content="noindex">',
    ),
    "past": (
        page("past", headers={"X-Robots-Tag": "unavailable_after: 25 Jun 2010 15:00:00 PST"}),
        True,
        "X-Robots-Tag: unavailable_after: 25 Jun 2010 15:00:00 PST",
    ),
    "future": (
        page("future", meta("robots", "unavailable_after: 2999-01-01")),
        True,
        None,
    ),
    "conflict": (
        page(
            "conflict",
            meta("robots", "index, follow, max-snippet:50"),
            headers={"X-Robots-Tag": ["max-snippet:10", "noindex"]},
        ),
        True,
        "X-Robots-Tag: noindex",
    ),
    "malformed": (
        page(
            "malformed",
            headers={"X-Robots-Tag": "max-snippet:abc, unavailable_after: someday, nofollw"},
        ),
        True,
        None,
    ),
    "in-body": (
        Reply(
            200,
            html(body=meta("robots", "nofollow"), links=["/child/in-body"]),
            {"Content-Type": "text/html"},
        ),
        True,
        None,
    ),
}

REL_PAGE = Reply(
    200,
    html(
        links=[
            "nofollow|/child/rel-nofollow",
            "UGC noopener|/child/rel-ugc",
            "sponsored|/child/rel-sponsored",
            "nofollow|/child/rel-both",
            "/child/rel-both",
        ]
    ),
    {"Content-Type": "text/html"},
)


class DirectivesSpider(CrawlSpider):
    """Follows every link; one item per page, with what the page's meta said."""

    name = "directives"
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)
    seen: dict[str, Any]

    def __init__(self, *args: Any, crawl_result: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def parse_item(self, response: Response) -> Any:
        self.seen[response.url] = response.meta.get("page_directives")
        yield {"url": response.url}


class AsyncDirectivesSpider(DirectivesSpider):
    """The same, with an asynchronous callback."""

    name = "directives_async"

    async def parse_item(self, response: Response) -> Any:  # type: ignore[override]
        self.seen[response.url] = response.meta.get("page_directives")
        yield {"url": response.url}


def script(site: Site) -> list[str]:
    """Script the site; the start URL's links, in order."""
    site.script("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /private\n"))
    paths = [f"/{name}" for name in PAGES] + ["/rel"]
    site.script("/", Reply(200, html(links=paths), {"Content-Type": "text/html"}))
    for name, (reply, _, _) in PAGES.items():
        site.script(f"/{name}", reply)
    site.script("/rel", REL_PAGE)
    return paths


async def crawl_site(
    site: Site, spider: type[DirectivesSpider], **settings: Any
) -> tuple[CrawlResult, dict[str, Any], list[dict[str, Any]], list[tuple[Any, BaseException]]]:
    items: list[dict[str, Any]] = []
    dropped: list[tuple[Any, BaseException]] = []
    seen: dict[str, Any] = {}

    class Recording(spider):  # type: ignore[valid-type,misc]
        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
            found = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(
                lambda item, **_: items.append(item), signal=signals.item_scraped, weak=False
            )
            crawler.signals.connect(on_dropped, signal=signals.item_dropped, weak=False)
            return found

    async def on_dropped(item: Any, exception: BaseException, **_: Any) -> None:
        # An asynchronous receiver, done a turn of the reactor later: it counts only if awaited.
        turn: Deferred[None] = Deferred()
        reactor.callLater(0, turn.callback, None)
        await maybe_deferred_to_future(turn)
        dropped.append((item, exception))

    all_settings = {
        "ADDONS": {"scrapy_googlerobots.Addon": 0},
        "USER_AGENT": AGENT,
        "DOWNLOAD_TIMEOUT": 5,
        **settings,
    }
    result = await run_crawl(all_settings, [site.url("/")], spider_cls=Recording, seen=seen)
    return result, seen, items, dropped


@pytest.mark.parametrize(
    ("mode", "spider"),
    [
        pytest.param("keep", DirectivesSpider, id="kept_and_marked_sync_callback"),
        pytest.param("drop", AsyncDirectivesSpider, id="dropped_async_callback"),
        pytest.param("drop", DirectivesSpider, id="dropped_sync_callback"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_every_directive_form_in_one_crawl(
    site: Site, mode: str, spider: type[DirectivesSpider]
) -> None:
    paths = script(site)
    settings: dict[str, Any] = {"ROBOTSTXT_PAGE_REL_NOFOLLOW": ["nofollow", "ugc"]}
    if mode == "keep":
        settings["ROBOTSTXT_PAGE_NOINDEX_FIELD"] = "robots_noindex"
    else:
        settings["ROBOTSTXT_PAGE_NOINDEX_ITEMS"] = "drop"
    result, seen, items, dropped = await crawl_site(site, spider, **settings)
    base = site.url("")

    # The pages fetched: every page, the children of those that may be followed.
    followed = [f"/child/{name}" for name, (_, follows, _) in PAGES.items() if follows]
    expected = {"/", *paths, *followed, "/child/rel-sponsored", "/child/rel-both"}
    assert sorted(r.path for r in site.requests() if r.path != "/robots.txt") == sorted(expected)
    for name in ("xrt-nofollow", "meta-nofollow", "xrt-none", "scoped-us"):
        assert site.hits(f"/child/{name}") == 0
    assert site.hits("/child/rel-nofollow") == site.hits("/child/rel-ugc") == 0

    # Items: one per page the callback saw (the start page has no callback).
    marked = {f"{base}/{name}": source for name, (_, _, source) in PAGES.items() if source}
    every = {f"{base}{path}" for path in expected - {"/"}}
    if mode == "keep":
        assert sorted(item["url"] for item in items) == sorted(every)
        for item in items:
            assert item.get("robots_noindex") == marked.get(item["url"]), item
        assert dropped == []
    else:
        assert sorted(item["url"] for item in items) == sorted(every - set(marked))
        assert all("robots_noindex" not in item for item in items)
        assert sorted(item["url"] for item, _ in dropped) == sorted(marked)
        for item, error in dropped:
            decision = forbidden_by(error)
            assert decision is not None and decision.page_refused is not None
            assert decision.page_refused.source == marked[item["url"]]
            assert str(decision) == f"{marked[item['url']]} of {item['url']}"
            assert str(error).startswith("Forbidden by page directive: ")

    # response.meta["page_directives"]: the effective set, with its sources.
    scoped = seen[f"{base}/scoped-other"]
    assert scoped is not None and scoped.empty
    assert [str(r) for r in scoped.ignored] == [
        "X-Robots-Tag: otherbot: noindex ignored for TestBot",
        "X-Robots-Tag: otherbot: nofollow ignored for TestBot",
    ]
    conflict = seen[f"{base}/conflict"]
    assert conflict.noindex and not conflict.nofollow and conflict.max_snippet == 10
    assert str(conflict.source("max-snippet")) == "X-Robots-Tag: max-snippet:10"
    assert seen[f"{base}/future"].unavailable_after is not None
    assert not seen[f"{base}/future"].is_noindex()
    assert [r.reason for r in seen[f"{base}/malformed"].malformed] == [
        "is malformed: max-snippet needs an integer >= -1",
        "is malformed: unreadable date, ignored",
        "is not a known directive",
    ]
    assert seen[f"{base}/plain"] is None and seen[f"{base}/in-body"] is None
    assert seen[f"{base}/child/plain"] is None  # not copied from the parent's meta

    stats = robots_stats(result)
    page_stats = {k: v for k, v in stats.items() if k.startswith("robotstxt/page/")}
    items_key = "items_kept" if mode == "keep" else "items_dropped"
    assert page_stats == {
        "robotstxt/page/responses": 9,
        "robotstxt/page/directive/nofollow": 4,
        "robotstxt/page/directive/noindex": 5,
        "robotstxt/page/directive/max-snippet": 1,
        "robotstxt/page/directive/unavailable_after": 2,
        "robotstxt/page/ignored": 2,
        "robotstxt/page/malformed": 3,
        "robotstxt/page/requests_dropped/nofollow": 3,
        "robotstxt/page/requests_dropped/none": 1,
        f"robotstxt/page/{items_key}/noindex": 4,
        f"robotstxt/page/{items_key}/none": 1,
        f"robotstxt/page/{items_key}/unavailable_after": 1,
        "robotstxt/page/links_dropped/nofollow": 1,
        "robotstxt/page/links_dropped/ugc": 1,
    }
    if mode == "drop":
        assert result.stats["item_dropped_count"] == 6

    debug = result.messages(logging.DEBUG, logger=LOGGER)
    assert (
        f"Page directives of <200 {base}/scoped-other> for TestBot: none in effect; ignored: "
        "X-Robots-Tag: otherbot: noindex ignored for TestBot; "
        "X-Robots-Tag: otherbot: nofollow ignored for TestBot"
    ) in debug
    assert (
        f"Not following <GET {base}/child/meta-nofollow> from <200 {base}/meta-nofollow>: "
        '<meta name="robots" content="NoFollow">'
    ) in debug
    assert (
        f"Not following <GET {base}/child/rel-ugc>: <200 {base}/rel> links to it only with "
        '<a rel="ugc noopener">'
    ) in debug
    summary = "\n".join(result.messages(logging.INFO, logger=LOGGER))
    kept, gone = (6, 0) if mode == "keep" else (0, 6)
    assert (
        "  page directives: 9 responses with directives for this crawler (5 noindex, "
        "4 nofollow, 2 unavailable_after, 1 max-snippet), 2 directives for other crawlers "
        "ignored, 3 malformed\n"
        f"  page directives applied: 4 requests not followed (nofollow), {kept} items of "
        f"noindex pages kept, {gone} dropped, 2 link targets not followed (rel)"
    ) in summary


# --------------------------------------------------------------------------
# AI opt-outs: noai / noimageai / noml as a "no" for train-ai


class PreferencesSpider(RecordingSpider):
    name = "preferences"
    seen: dict[str, Any]

    def parse(self, response: Response, **kwargs: Any) -> Any:
        self.seen[response.url] = response.meta.get("usage_preferences")


def ai_site(site: Site) -> dict[str, str]:
    """Pages with each AI opt-out; path -> how the refusal names its source."""
    site.script("/robots.txt", Reply(200, b"User-agent: *\nAllow: /\n"))
    site.script("/noai", Reply(200, b"x", {"X-Robots-Tag": "noai, noimageai"}))
    site.script(
        "/noimageai", page("noimageai", meta("robots", "max-image-preview:large, noimageai"))
    )
    site.script("/other", Reply(200, b"x", {"X-Robots-Tag": "otherbot: noai"}))
    site.script("/plain", Reply(200, b"x", {"Content-Type": "text/plain"}))
    # Quoted whole, as the page wrote it.
    return {
        "/noai": "X-Robots-Tag: noai, noimageai",
        "/noimageai": '<meta name="robots" content="max-image-preview:large, noimageai">',
    }


@pytest_twisted.ensureDeferred
async def test_ai_opt_outs_refuse_a_declared_training_use(site: Site) -> None:
    refusing = ai_site(site)
    urls = [site.url(path) for path in ("/noai", "/noimageai", "/other", "/plain")]
    seen: dict[str, Any] = {}
    settings = {
        "ADDONS": {"scrapy_googlerobots.Addon": 0},
        "USER_AGENT": AGENT,
        "ROBOTSTXT_USAGE": ["ai-train"],
    }
    result = await run_crawl(settings, urls, spider_cls=PreferencesSpider, seen=seen)
    # Downloaded (the site said no only in the response), never given to the spider.
    assert [site.hits(path) for path in ("/noai", "/noimageai", "/other", "/plain")] == [1] * 4
    assert seen == {site.url("/other"): None, site.url("/plain"): None}
    for path, written in refusing.items():
        url = site.url(path)
        [failure] = result.failed(url)
        assert failure.check(IgnoreRequest)
        assert str(failure.value) == (
            f"Forbidden by usage preference: train-ai=n ({written} of {url})"
        )
        decision = forbidden_by(failure)
        assert decision is not None
        assert decision.usage_refused == UsagePreference.of_page("train-ai", written, url)
        assert str(decision) == f"{written} of {url}: train-ai=n"
        assert decision.line == 2 and decision.allowed  # robots.txt's own answer, kept
    stats = robots_stats(result)
    assert stats["robotstxt/usage/page_forbidden/train-ai"] == 2
    assert "robotstxt/usage/header_forbidden/train-ai" not in stats
    summary = "\n".join(result.messages(logging.INFO, logger=LOGGER))
    assert "2 dropped by a noai page directive" in summary


@pytest_twisted.ensureDeferred
async def test_ai_opt_outs_are_reported_when_no_use_is_declared(site: Site) -> None:
    ai_site(site)
    urls = [site.url(path) for path in ("/noai", "/noimageai", "/other")]
    seen: dict[str, Any] = {}
    settings = {"ADDONS": {"scrapy_googlerobots.Addon": 0}, "USER_AGENT": AGENT}
    result = await run_crawl(settings, urls, spider_cls=PreferencesSpider, seen=seen)
    assert result.failures == []
    assert seen == {
        site.url("/noai"): {"train-ai": False},
        site.url("/noimageai"): {"train-ai": False},
        site.url("/other"): None,
    }
    assert "robotstxt/usage/page_forbidden/train-ai" not in result.stats


@pytest_twisted.ensureDeferred
async def test_switched_off_reads_nothing(site: Site) -> None:
    script(site)
    result, seen, items, _ = await crawl_site(
        site, DirectivesSpider, ROBOTSTXT_PAGE_DIRECTIVES=False
    )
    assert site.hits("/child/xrt-nofollow") == site.hits("/child/xrt-none") == 1
    assert set(seen.values()) == {None}
    assert not any(k.startswith("robotstxt/page/") for k in result.stats)
    assert len(items) == len(seen)


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_requests_are_reported_not_enforced(site: Site) -> None:
    site.script("/robots.txt", Reply(200, b"User-agent: *\nAllow: /\n"))
    site.script("/a", page("a", headers={"X-Robots-Tag": "nofollow"}))
    seen: dict[str, Any] = {}

    class Follow(RecordingSpider):
        name = "follow"

        def parse(self, response: Response, **kwargs: Any) -> Any:
            seen[response.url] = response.meta.get("page_directives")
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse)

    settings = {"ADDONS": {"scrapy_googlerobots.Addon": 0}, "USER_AGENT": AGENT}
    start = Request(site.url("/a"), meta={"dont_obey_robotstxt": True})
    await run_crawl(settings, [start], spider_cls=Follow)
    assert site.hits("/child/a") == 1
    assert seen[site.url("/a")].nofollow
