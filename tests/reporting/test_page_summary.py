"""The end-of-crawl summary's page directives lines, from the ``robotstxt/page/`` stats."""

from __future__ import annotations

from scrapy_googlerobots.reporting.summary import CrawlSummary


def test_no_page_directives_no_lines() -> None:
    # A crawl whose pages have no directives: the summary is what it was before issue 26.
    text = CrawlSummary().render({"robotstxt/forbidden": 2})
    assert "page directives" not in text
    assert text.splitlines() == [
        "robots.txt summary: 0 origins checked (none)",
        "  requests: 2 forbidden, 0 deferred, 0 released, 0 dropped",
    ]


def test_page_lines_count_each_family() -> None:
    stats = {
        "robotstxt/page/responses": 4,
        "robotstxt/page/directive/nofollow": 3,
        "robotstxt/page/directive/noindex": 3,
        "robotstxt/page/directive/noai": 1,
        "robotstxt/page/ignored": 2,
        "robotstxt/page/requests_dropped/nofollow": 5,
        "robotstxt/page/requests_dropped/none": 2,
        "robotstxt/page/items_dropped/noindex": 3,
        "robotstxt/page/items_dropped/unavailable_after": 1,
        "robotstxt/page/links_dropped/ugc": 4,
    }
    lines = CrawlSummary().render(stats).splitlines()[2:]
    assert lines == [
        "  page directives: 4 responses with directives for this crawler (3 nofollow, "
        "3 noindex, 1 noai), 2 directives for other crawlers ignored, 0 malformed",
        "  page directives applied: 7 requests not followed (nofollow), 0 items of noindex "
        "pages kept, 4 dropped, 4 link targets not followed (rel)",
    ]


def test_only_ignored_directives_still_say_so() -> None:
    lines = CrawlSummary().render({"robotstxt/page/ignored": 1}).splitlines()
    assert lines[2] == (
        "  page directives: 0 responses with directives for this crawler, "
        "1 directive for other crawlers ignored, 0 malformed"
    )


def test_a_noai_refusal_joins_the_usage_line() -> None:
    summary = CrawlSummary(declared_use=("train-ai",))
    text = summary.render({"robotstxt/usage/page_forbidden/train-ai": 2})
    assert (
        "  usage preferences (declared use: train-ai): 0 forbidden by robots.txt, 0 dropped "
        "by their Content-Usage header, 2 dropped by a noai page directive, 0 responses with "
        "preferences"
    ) in text.splitlines()


def test_a_count_of_one_reads_in_the_singular() -> None:
    stats = {
        "robotstxt/page/responses": 1,
        "robotstxt/page/directive/noindex": 1,
        "robotstxt/page/requests_dropped/nofollow": 1,
        "robotstxt/page/items_kept/noindex": 1,
        "robotstxt/page/links_dropped/ugc": 1,
        "robotstxt/usage/responses": 1,
    }
    summary = CrawlSummary(declared_use=("train-ai",))
    summary.answers["http://a.example:80"] = "2xx"
    lines = summary.render(stats).splitlines()
    assert lines[0] == "robots.txt summary: 1 origin checked (1 2xx)"
    assert lines[2].endswith(", 1 response with preferences")
    assert lines[3:] == [
        "  page directives: 1 response with directives for this crawler (1 noindex), "
        "0 directives for other crawlers ignored, 0 malformed",
        "  page directives applied: 1 request not followed (nofollow), 1 item of noindex "
        "pages kept, 0 dropped, 1 link target not followed (rel)",
    ]
