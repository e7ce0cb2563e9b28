"""crawler_token(): the product token derived from a User-Agent value (SPEC B7)."""

from __future__ import annotations

import pytest

from scrapy_googlerobots.policy.useragent import crawler_token

GOOGLEBOT_DESKTOP = (
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; "
    "+http://www.google.com/bot.html) Chrome/125.0.6422.154 Safari/537.36"
)
GOOGLEBOT_SMARTPHONE = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/125.0.6422.154 Mobile Safari/537.36 "
    "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0"
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/125.0.0.0 Safari/537.36"
)


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        pytest.param("FooBot/1.2 (+http://x)", "FooBot", id="B7_first_product"),
        pytest.param("FooBot", "FooBot", id="bare_token"),
        pytest.param(
            "Mozilla/5.0 (compatible; FooBot/1.0; +http://x)",
            "FooBot",
            id="B7_compatible_comment_wins",
        ),
        pytest.param(
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Googlebot",
            id="googlebot_classic",
        ),
        pytest.param(GOOGLEBOT_DESKTOP, "Googlebot", id="googlebot_desktop_compatible_mid_comment"),
        pytest.param(GOOGLEBOT_SMARTPHONE, "Googlebot", id="googlebot_smartphone_second_comment"),
        pytest.param("Googlebot-Image/1.0", "Googlebot-Image", id="googlebot_image_hyphen_kept"),
        pytest.param("Googlebot-News", "Googlebot-News", id="googlebot_news_token"),
        pytest.param(
            "Mozilla/5.0 (compatible; GoogleOther)",
            "GoogleOther",
            id="compatible_product_without_version",
        ),
        pytest.param(
            "Mozilla/5.0 (compatible; Google-InspectionTool/1.0;)",
            "Google-InspectionTool",
            id="compatible_trailing_semicolon",
        ),
        pytest.param(
            "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
            "bingbot",
            id="case_kept_as_written",
        ),
        pytest.param(
            "Mozilla/5.0 (Compatible;FooBot/1.0)", "FooBot", id="compatible_case_and_spacing"
        ),
        pytest.param("Scrapy/2.19.0 (+https://scrapy.org)", "Scrapy", id="scrapy_default"),
        pytest.param("Scrapy/2.11.2 (+https://scrapy.org)", "Scrapy", id="scrapy_2_11_default"),
        pytest.param(FIREFOX, "Mozilla", id="B7_plain_browser_firefox"),
        pytest.param(CHROME, "Mozilla", id="B7_plain_browser_chrome"),
        pytest.param(
            "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)",
            "Mozilla",
            id="msie_compatible_is_not_a_product",
        ),
        pytest.param("Bot2/1.0", "Bot", id="google_extract_user_agent_stops_at_digit"),
        pytest.param(
            "Mozilla/5.0 (compatible; Bot2/1.0)", "Bot", id="compatible_token_reduced_too"
        ),
        pytest.param("foo_bot/1", "foo_bot", id="underscore_kept"),
        pytest.param("FooBot*", "FooBot", id="star_ends_token"),
        pytest.param("  FooBot/1.2", "FooBot", id="leading_whitespace"),
        pytest.param(
            "Mozilla/5.0 (compatible; +http://x; FooBot/1)",
            "Mozilla",
            id="compatible_first_element_only",
        ),
        pytest.param(
            "Mozilla/5.0 (compatible; 360Spider)", "Mozilla", id="compatible_digit_token_skipped"
        ),
        pytest.param("", "", id="empty"),
        pytest.param(" \t ", "", id="blank"),
        pytest.param("2Bot/1.0", "", id="leading_digit_no_token"),
        pytest.param("(compatible)", "", id="comment_only"),
    ],
)
def test_crawler_token(user_agent: str, token: str) -> None:
    assert crawler_token(user_agent) == token
