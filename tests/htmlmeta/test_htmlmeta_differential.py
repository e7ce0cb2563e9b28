"""htmlmeta.head_meta against a real HTML5 parser (html5lib, scripting on) as oracle.

The corpus (html5lib-tests' tree-construction inputs, each with a robots meta
at five positions, and real-world heads) is in :mod:`head_oracle`. The only
documented departure: where html5lib does not yet build ``<template>`` as
today's standard does (it puts the template, and what follows, in the body),
``head_meta`` follows the standard, checked with justhtml.
"""

from __future__ import annotations

from collections import Counter

import pytest
from head_oracle import REAL_WORLD, html5lib_head, judge, variants

from scrapy_googlerobots.htmlmeta import head_meta, may_name, named_meta

pytest.importorskip("html5lib", reason="html5lib (test extra) is the oracle")
pytest.importorskip("justhtml", reason="justhtml (test extra) judges html5lib's departures")

STANDARD = "html5lib predates the standard (ours = justhtml)"


def _ours(body: bytes) -> list[tuple[str, str]]:
    return head_meta(body, encoding="utf-8")


def test_corpus_agrees_with_html5lib() -> None:
    verdicts: Counter[str] = Counter()
    departures = []
    for ident, document in variants():
        verdict = judge(_ours, document)
        verdicts[verdict[0]] += 1
        if verdict[0] != "agree":
            departures.append((ident, document, verdict))
    assert sum(verdicts.values()) > 8_000
    # Every departure is html5lib's missing <template> support, decided as the standard does.
    wrong = [d for d in departures if d[2][0] != STANDARD or "<template" not in d[1].lower()]
    assert wrong == []
    assert verdicts["agree"] > 0.99 * sum(verdicts.values())


@pytest.mark.parametrize("name", sorted(REAL_WORLD))
def test_real_world_head(name: str) -> None:
    document = REAL_WORLD[name]
    assert _ours(document.encode()) == html5lib_head(document)


def test_real_world_heads_read_what_google_reads() -> None:
    # The shapes of issue 33, spelled out (the oracle says the same, above).
    read = {name: _ours(doc.encode()) for name, doc in REAL_WORLD.items()}
    assert ("robots", "noindex") in read["plugin_meta_after_head"]
    assert ("robots", "noindex") in read["nextjs_large_inline_style"]
    assert ("robots", "noindex") in read["long_hreflang_list"]
    assert read["bang_comment_close"] == [("robots", "noindex")]
    assert read["script_escape_states"] == [("robots", "noindex")]
    assert read["img_ends_head"] == []
    assert read["nbsp_ends_head"] == []
    assert ("robots", "all") not in read["wordpress_yoast"]
    assert read["ampersands_in_content"] == [
        ("tdm-policy", "https://example.com/p?lang=en&region=eu&copy=1&not=2")
    ]


def test_named_reading_agrees_with_reading_all() -> None:
    # The reading for a few names (named_meta, head_meta with names: runs of tokens
    # that change nothing skipped, the reading stopped after the last place a name
    # may be written) gives what reading every meta and keeping those names gives.
    names = ("robots", "mybot")
    for ident, document in variants():
        body = document.encode()
        expected = [pair for pair in _ours(body) if pair[0] in names]
        assert named_meta(body, names, encoding="utf-8") == expected, ident
        assert head_meta(body, names, encoding="utf-8") == expected, ident
        if not may_name(body, names):
            assert expected == [], ident
