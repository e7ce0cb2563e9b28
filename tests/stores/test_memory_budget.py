"""The memory store's hot set, compact quiet origins and memory budget (issue 21).

Memory is measured with tracemalloc over the shared corpus (skipped without
it): what the store retains per origin, against its own estimate (the budget
is enforced on the estimate) and against Protego for the hot set.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.record import FetchTimings, PolicyRecord, record_after_fetch
from scrapy_googlerobots.robotstxt import GOOGLE_MAX_SIZE, parse
from scrapy_googlerobots.stores.memory import EVICTED_STAT, MemoryPolicyStore
from scrapy_googlerobots.stores.memory_cost import DEFAULT_CACHE_MEMORY, hot_cost, hot_memory

from corpus import CORPUS_FILES, MISSING
from store_support import Stats

TIMINGS = FetchTimings(86_400.0, 60.0, 604_800.0, 30.0, 600.0, GOOGLE_MAX_SIZE)
AGENTS = ("Googlebot", "FooBot", "*")
PATHS = ("/", "/a/b.html?x=1", "/wp-admin/", "/search?q=1", "/private/", "/cart", "/%7Euser")


@pytest.fixture(scope="module")
def corpus() -> list[bytes]:
    if not CORPUS_FILES:
        pytest.skip(MISSING)
    # As a crawl keeps them: cut at ROBOTSTXT_MAX_SIZE.
    return [path.read_bytes()[:GOOGLE_MAX_SIZE] for path in CORPUS_FILES]


def origin(index: int) -> str:
    return f"https://www.site-{index:07d}.example.com:443"


# Response headers as robots.txt servers send them (kept with each record since
# issue 28, to serve the spider's own robots.txt request): nginx, Apache, a CDN
# (Cloudflare), object storage behind CloudFront. ``fetched`` gives each origin
# one of them, with its own Date and validators.
HEADER_SETS = (
    "Server: nginx\r\nDate: {date}\r\nContent-Type: text/plain\r\nContent-Length: {size}\r\n"
    'Last-Modified: {date}\r\nConnection: keep-alive\r\nEtag: "{etag}"\r\n'
    "Accept-Ranges: bytes\r\n",
    'Date: {date}\r\nServer: Apache\r\nLast-Modified: {date}\r\nEtag: "{etag}"\r\n'
    "Accept-Ranges: bytes\r\nContent-Length: {size}\r\nVary: Accept-Encoding\r\n"
    "Content-Type: text/plain\r\n",
    "Date: {date}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: keep-alive\r\n"
    "Cache-Control: max-age=14400\r\nCf-Cache-Status: HIT\r\nAge: 3017\r\n"
    "Last-Modified: {date}\r\nVary: Accept-Encoding\r\n"
    "Strict-Transport-Security: max-age=31536000; includeSubDomains\r\n"
    "X-Content-Type-Options: nosniff\r\nServer: cloudflare\r\nCf-Ray: {etag}-FRA\r\n",
    "Content-Type: text/plain\r\nContent-Length: {size}\r\nConnection: keep-alive\r\n"
    'Date: {date}\r\nLast-Modified: {date}\r\nEtag: "{etag}"\r\nAccept-Ranges: bytes\r\n'
    "Server: AmazonS3\r\nX-Cache: Hit from cloudfront\r\n"
    "Via: 1.1 {etag}.cloudfront.net (CloudFront)\r\nX-Amz-Cf-Pop: FRA56-P5\r\n"
    "X-Amz-Cf-Id: {etag}{etag}==\r\nAge: 1784\r\n",
)


def headers_for(key: str, body: bytes) -> bytes:
    """A realistic header block for ``key``'s robots.txt (one of HEADER_SETS)."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    day = int(digest[:4], 16) % 28 + 1
    date = f"Wed, {day:02d} Nov 2026 {day % 24:02d}:{day:02d}:{day % 60:02d} GMT"
    template = HEADER_SETS[int(digest[4:6], 16) % len(HEADER_SETS)]
    return template.format(date=date, size=len(body), etag=digest[8:24]).encode()


def fetched(key: str, body: bytes, now: float = 1_000.0) -> PolicyRecord:
    return record_after_fetch(
        key,
        FetchOutcome.RULES,
        status=200,
        body=bytes(bytearray(body)),  # a body of its own, as a download gives
        cache_control=None,
        previous=None,
        now=now,
        timings=TIMINGS,
        headers=headers_for(key, body),
    )


def allow_all(key: str) -> PolicyRecord:
    return PolicyRecord(key, FetchOutcome.ALLOW_ALL, status=404, fetched_at=1.0, expires_at=9.0)


def use(record: PolicyRecord) -> None:
    """Ask the record's rules a few questions, as a crawl would (compiles matchers)."""
    assert record.rules is not None
    for path in PATHS:
        record.rules.deciding_line("https://www.site.example.com" + path, "mybot")


# -- behaviour ------------------------------------------------------------------


def test_quiet_origin_comes_back_with_the_same_verdicts_and_lines(corpus: list[bytes]) -> None:
    store = MemoryPolicyStore(hot_size=1)
    for index, body in enumerate(corpus):
        store.put(fetched(origin(index), body))
    assert store.hot_count == 1
    for index, body in enumerate(corpus):
        record = store.get(origin(index))
        assert record is not None and record.body == body and record.rules is not None
        expected = parse(body, max_size=GOOGLE_MAX_SIZE)
        for path in PATHS:
            url = "https://www.site.example.com" + path
            for agent in AGENTS:
                assert record.rules.deciding_line(url, agent) == expected.deciding_line(url, agent)


def test_quiet_origin_keeps_its_usage_preferences() -> None:
    # Usage rules (issue 20) live in the parsed rules only: a quiet origin,
    # parsed again from its compact body, must answer usage() the same.
    bodies = [
        b"User-agent: *\nDisallow: /private\nContent-Usage: train-ai=n, search=y\n"
        b"Content-Usage: /open/ train-ai=y\n",
        b"User-agent: mybot\nContent-Signal: ai-train=no, search=yes\nAllow: /\n",
        b"User-agent: *\nContent-Usage: bogus\nDisallow: /x\n",  # no usable rule
    ]
    store = MemoryPolicyStore(hot_size=1)
    for index, body in enumerate(bodies):
        store.put(fetched(origin(index), body))
    store.put(fetched(origin(99), b""))  # the last hot one: the others are quiet
    assert store.hot_count == 1
    for index, body in enumerate(bodies):
        record = store.get(origin(index))
        assert record is not None and record.rules is not None
        expected = parse(body, max_size=GOOGLE_MAX_SIZE)
        assert record.rules.has_usage == expected.has_usage == (index < 2)
        for path in ("/", "/open/page", "/private", "/x"):
            url = "https://www.site.example.com" + path
            for agent in ("mybot", "otherbot"):
                assert record.rules.usage(url, agent) == expected.usage(url, agent)
        store.put(fetched(origin(99), b""))  # sends it back to the quiet side


def test_woken_record_equals_the_one_put() -> None:
    store = MemoryPolicyStore(hot_size=1)
    put = [
        fetched("https://a:443", b"User-agent: *\nDisallow: /x\n"),
        allow_all("http://b:80"),
        PolicyRecord("http://c:80", FetchOutcome.UNREACHABLE, status=503, failures=2, retry_at=7.5),
    ]
    for record in put:
        store.put(record)
    for record in put[:2]:
        woken = store.get(record.origin)
        assert woken == record and woken is not record
    woken_rules = [store.get(r.origin).rules for r in put]  # type: ignore[union-attr]
    assert woken_rules[0] is not None and not woken_rules[0].allowed("https://a/x", "bot")
    assert woken_rules[1] is not None and woken_rules[1].allowed("http://b/x", "bot")
    assert woken_rules[2] is None  # like a never-good record put by a fetch


def test_hot_origin_is_served_as_put() -> None:
    store = MemoryPolicyStore(hot_size=2)
    record = fetched("https://a:443", b"Disallow: /")
    store.put(record)
    store.put(fetched("https://b:443", b""))
    assert store.get("https://a:443") is record


def test_lru_order_runs_through_quiet_and_hot_origins() -> None:
    store = MemoryPolicyStore(max_size=3, hot_size=1)
    for name in "abc":
        store.put(allow_all(f"http://{name}:80"))
    store.get("http://a:80")  # a: most recently used (woken); b is now the oldest
    store.put(allow_all("http://d:80"))
    assert store.get("http://b:80") is None
    assert [store.get(f"http://{n}:80") is not None for n in "acd"] == [True, True, True]


def test_put_replaces_a_quiet_copy_and_its_cost() -> None:
    store = MemoryPolicyStore(hot_size=1)
    store.put(fetched("https://a:443", b"Disallow: /old\n" * 50))
    store.put(allow_all("http://b:80"))
    before = store.estimated_bytes
    store.put(allow_all("https://a:443"))
    assert len(store) == 2 and store.estimated_bytes < before
    assert store.get("https://a:443").outcome is FetchOutcome.ALLOW_ALL  # type: ignore[union-attr]
    store.close()
    assert (len(store), store.estimated_bytes) == (0, 0)


def test_budget_evicts_only_when_reached_with_one_info_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stats = Stats()
    store = MemoryPolicyStore(memory=2_000_000, hot_bytes=1_500_000, stats=stats)
    caplog.set_level(logging.INFO, logger="scrapy_googlerobots.stores.memory")
    index = 0
    while not stats:
        store.put(fetched(origin(index), b"User-agent: *\nDisallow: /p%d\n" % index))
        assert store.estimated_bytes <= 2_000_000
        index += 1
    # Nothing was forgotten before the budget was reached, and the hot set
    # had shrunk to its floor first (a hot origin costs ten quiet ones).
    assert stats[EVICTED_STAT] == 1 and len(store) == index - 1 > 2 * 256
    assert store.hot_count == 256
    for more in range(index, index + 50):
        store.put(fetched(origin(more), b"Disallow: /"))
    assert store.estimated_bytes <= 2_000_000
    assert store.get(origin(0)) is None and store.get(origin(index + 49)) is not None
    assert stats[EVICTED_STAT] > 1
    lines = [r.getMessage() for r in caplog.records if "robots.txt cache is full" in r.message]
    assert len(lines) == 1 and "ROBOTSTXT_CACHE_MEMORY" in lines[0], lines


def test_count_cap_names_its_setting(caplog: pytest.LogCaptureFixture) -> None:
    stats = Stats()
    store = MemoryPolicyStore(max_size=2, stats=stats)
    caplog.set_level(logging.INFO, logger="scrapy_googlerobots.stores.memory")
    for name in "abcd":
        store.put(allow_all(f"http://{name}:80"))
    assert len(store) == 2 and stats[EVICTED_STAT] == 2
    (line,) = [r.getMessage() for r in caplog.records if "cache is full" in r.message]
    assert "ROBOTSTXT_CACHE_SIZE = 2 origins" in line


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_size": 0}, "max_size must be at least 1"),
        ({"memory": 0}, "memory must be at least 1 byte"),
        ({"hot_size": 0}, "hot_size must be at least 1"),
    ],
)
def test_bad_limits_are_refused(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MemoryPolicyStore(**kwargs)


def test_twelve_thousand_origins_of_the_corpus_fit_the_default_budget(
    corpus: list[bytes],
) -> None:
    stats = Stats()
    store = MemoryPolicyStore(stats=stats)
    for index in range(12_000):
        store.put(fetched(origin(index), corpus[index % len(corpus)]))
    assert not stats and len(store) == 12_000
    assert store.get(origin(0)) is not None


# -- memory (tracemalloc) -------------------------------------------------------


def retained_per_origin(count: int, fill: Callable[[int], None]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for index in range(count):
            fill(index)
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - start) / count
    finally:
        tracemalloc.stop()


@pytest.fixture
def warm(corpus: list[bytes]) -> Iterator[None]:
    # Parse the corpus once first: one-time growth (interned agent names,
    # the interpreter's caches) is not what an origin costs.
    for index, body in enumerate(corpus):
        use(fetched(origin(index), body))
    yield


def test_quiet_origins_cost_about_their_compressed_size(corpus: list[bytes], warm: None) -> None:
    store = MemoryPolicyStore(hot_size=1)

    def fill(index: int) -> None:
        record = fetched(origin(index), corpus[index])
        store.put(record)
        use(record)

    per_origin = retained_per_origin(len(corpus), fill)
    assert per_origin <= 1.5 * 1024, per_origin
    # The budget's estimate stays within 15% of what is really held.
    estimate = store.estimated_bytes / len(store)
    assert abs(estimate - per_origin) <= 0.15 * per_origin, (estimate, per_origin)


def test_hot_origins_cost_no_more_than_protego(corpus: list[bytes], warm: None) -> None:
    protego = pytest.importorskip("protego")
    store = MemoryPolicyStore(hot_size=len(corpus))

    def fill(index: int) -> None:
        record = fetched(origin(index), corpus[index])
        store.put(record)
        use(record)

    ours = retained_per_origin(len(corpus), fill)
    estimate = store.estimated_bytes / len(store)
    assert abs(estimate - ours) <= 0.15 * ours, (estimate, ours)
    parsers: dict[str, object] = {}

    def fill_protego(index: int) -> None:
        parser = protego.Protego.parse(corpus[index].decode("utf-8", "replace"))
        parsers[origin(index)] = parser
        for path in PATHS:
            parser.can_fetch("https://www.site.example.com" + path, "mybot")

    theirs = retained_per_origin(len(corpus), fill_protego)
    assert ours <= theirs, (ours, theirs)


def test_default_budget_holds_a_million_origins_of_the_corpus_mix(
    corpus: list[bytes],
) -> None:
    # The estimate for a quiet origin of each corpus file, times a million,
    # plus a full hot set (its share of the budget).
    store = MemoryPolicyStore(hot_size=1, memory=None)
    for index, body in enumerate(corpus):
        store.put(fetched(origin(index), body))
    per_quiet = store.estimated_bytes / len(store)
    assert 1_000_000 * per_quiet + hot_memory(DEFAULT_CACHE_MEMORY) < DEFAULT_CACHE_MEMORY


def test_hot_set_stays_within_its_share_of_the_budget(corpus: list[bytes]) -> None:
    store = MemoryPolicyStore(memory=16 * 2**20)
    for index in range(600):
        store.put(fetched(origin(index), corpus[index % len(corpus)]))
    assert store.hot_bytes == 2 * 2**20
    assert 1 < store.hot_count < 600 and len(store) == 600
    hot = [store.get(origin(index)) for index in range(600 - store.hot_count, 600)]
    assert sum(hot_cost(record) for record in hot if record is not None) <= 2 * 2**20
