"""Every value the docs show for a setting works: the crawler starts and the value takes effect.

docs/reference/settings.rst gives each setting a default and an example: both
must start the middleware. The other cases name the docs text they come from,
and the test checks the docs still show it, so the examples and this table
cannot drift apart. (tests/test_docs_reference.py checks the defaults are the
code's.)
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Spider
from scrapy.utils.test import get_crawler

from scrapy_googlerobots import GoogleRobotsTxtMiddleware

from docs_text import all_docs_text, documented_settings
from middleware_support import robots_settings
from servers import Reply, Site, run_crawl

DOCS = " ".join(all_docs_text().split())  # line breaks are spaces
SETTINGS = documented_settings()


def _start(settings: dict[str, Any]) -> None:
    crawler = get_crawler(Spider, {"ROBOTSTXT_OBEY": True, **settings})
    middleware = GoogleRobotsTxtMiddleware.from_crawler(crawler)
    middleware._store.close()


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_the_documented_default_starts_the_middleware(setting: str) -> None:
    documented = SETTINGS[setting].default
    if setting == "ROBOTSTXT_OBEY":
        documented = True  # the add-on's value; with False the middleware is off
    _start({setting: documented})


@pytest.mark.parametrize(
    ("setting", "example"),
    [(name, example) for name, entry in SETTINGS.items() for example in entry.examples],
)
def test_the_documented_example_starts_the_middleware(
    setting: str, example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative SQLite path lands here
    _start({setting: ast.literal_eval(example)})


# (docs text that shows the value, setting, value)
STARTS = [
    ('``"defer"``: they wait', "ROBOTSTXT_UNREACHABLE", "defer"),
    ('``"disallow"``: Google\'s plain', "ROBOTSTXT_UNREACHABLE", "disallow"),
    ('``"memory"``, a SQLite file path', "ROBOTSTXT_CACHE_STORE", "memory"),
    ("a SQLite file path", "ROBOTSTXT_CACHE_STORE", "{tmp}/cache.sqlite"),
    ("(a directory means ``<dir>/robotstxt.sqlite``)", "ROBOTSTXT_CACHE_STORE", "{tmp}"),
    ("(``0``: read the store on every request)", "ROBOTSTXT_LOCAL_CACHE_TTL", 0),
]


@pytest.mark.parametrize(("shown", "setting", "value"), STARTS, ids=[c[1] for c in STARTS])
def test_a_documented_value_starts_the_middleware(
    shown: str, setting: str, value: Any, tmp_path: Path
) -> None:
    assert " ".join(shown.split()) in DOCS
    if isinstance(value, str):
        value = value.format(tmp=tmp_path)
    crawler = get_crawler(Spider, {"ROBOTSTXT_OBEY": True, setting: value})
    middleware = GoogleRobotsTxtMiddleware.from_crawler(crawler)
    middleware._store.close()
    if setting == "ROBOTSTXT_CACHE_STORE" and value != "memory":
        assert any(tmp_path.rglob("*.sqlite")), "the SQLite store file was not created"


# A robots.txt with one group per product token, each disallowing its own path.
AGENTS_ROBOTS = b"""\
User-agent: MyBot
Disallow: /mybot

User-agent: FooBot
Disallow: /foobot

User-agent: Mozilla
Disallow: /mozilla

User-agent: *
Disallow: /everyone
"""

# (docs text that shows it, ROBOTSTXT_USER_AGENT, the group it must select)
AGENTS = [
    ('ROBOTSTXT_USER_AGENT = "MyBot"', "MyBot", "mybot"),
    ("``FooBot/1.2 (+http://x)`` → ``FooBot``", "FooBot/1.2 (+http://x)", "foobot"),
    (
        "``Mozilla/5.0 (compatible; FooBot/1.0; +http://x)`` → ``FooBot``",
        "Mozilla/5.0 (compatible; FooBot/1.0; +http://x)",
        "foobot",
    ),
    ("When the result is ``Mozilla``", "Mozilla/5.0 (X11; Linux x86_64)", "mozilla"),
]


@pytest.mark.parametrize(
    ("shown", "agent", "group"), AGENTS, ids=[a[2] + ":" + a[1] for a in AGENTS]
)
@pytest_twisted.ensureDeferred
async def test_a_documented_user_agent_selects_its_group(
    shown: str, agent: str, group: str, site: Site
) -> None:
    assert " ".join(shown.split()) in DOCS
    site.script("/robots.txt", Reply(200, AGENTS_ROBOTS))
    paths = ["/mybot", "/foobot", "/mozilla", "/everyone"]
    result = await run_crawl(
        robots_settings(ROBOTSTXT_USER_AGENT=agent), [site.url(p) for p in paths], timeout=30
    )
    assert sorted(result.downloaded) == sorted(site.url(p) for p in paths if p != f"/{group}")
    warnings = [m for m in result.messages() if "names no crawler" in m]
    assert len(warnings) == (1 if group == "mozilla" else 0)
