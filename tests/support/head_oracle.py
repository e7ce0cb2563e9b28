"""The differential corpus and oracles for ``htmlmeta.head_meta`` (issue 33).

Documents: the ``#data`` inputs of html5lib-tests' tree-construction suite
(``tests/htmlmeta/data/html5lib_tree_construction.json``, MIT: see
``html5lib-tests-LICENSE`` there),
each with a robots meta inserted at five positions, plus hand-written real-world heads.

Oracles: html5lib (the reference; scripting on, as Google renders) and, to
judge where html5lib itself departs from today's HTML standard, justhtml (a
parser of the current standard). Run as a script to print the figures:
``python tests/support/head_oracle.py``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "htmlmeta" / "data" / "html5lib_tree_construction.json"
ROBOTS = '<meta name="robots" content="noindex, nofollow">'
_SPACE = " \t\n\r\f"

Pairs = list[tuple[str, str]]

# Real-world heads, as their generators write them (shortened, same shapes).
_YOAST = (
    '<!DOCTYPE html>\n<html lang="en-US">\n<head>\n<meta charset="UTF-8">\n'
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    "<!-- This site is optimized with the Yoast SEO plugin v22.4 -"
    " https://yoast.com/wordpress/plugins/seo/ -->\n"
    "<title>Hello world! - My Blog</title>\n"
    '<meta name="robots" content="index, follow, max-snippet:-1, '
    'max-image-preview:large, max-video-preview:-1" />\n'
    '<link rel="canonical" href="https://example.com/hello-world/" />\n'
    '<meta property="og:locale" content="en_US" />\n'
    '<script type="application/ld+json" class="yoast-schema-graph">{"@context":"https://schema.org",'
    '"@graph":[{"@type":"WebPage","name":"Hello </scr" + "ipt> world"}]}</script>\n'
    "<!-- / Yoast SEO plugin. -->\n"
    "<style id='wp-emoji-styles-inline-css'>\n"
    "img.wp-smiley { display: inline !important; }\n</style>\n"
    '<script>window._wpemojiSettings = {"baseUrl":"https:\\/\\/s.w.org\\/"};\n'
    "/*! This file is auto-generated */\n!function(i,n){var o,s;"
    "if(!n)return; document.write('<!--<script>x</script>-->');}(window,document);</script>\n"
    '</head>\n<body class="post-template-default">\n'
    '<meta name="robots" content="all">\n<p>Body text</p></body></html>\n'
)
_NEXTJS = (
    '<!DOCTYPE html><html lang="en"><head><meta charSet="utf-8"/>'
    '<meta name="viewport" content="width=device-width"/>'
    '<style data-emotion="css-global">'
    + ".css-1{color:red}/* <meta name=robots content=noindex> */"
    * 2000
    + '</style><noscript data-n-css=""></noscript>'
    '<link rel="preload" href="/_next/static/css/app.css" as="style"/>'
    "<title>Shop</title>"
    '<meta name="robots" content="noindex"/>'
    '<meta name="next-head-count" content="5"/>'
    '<script id="__NEXT_DATA__" type="application/json">'
    '{"props":{"x":"<meta name=\\"robots\\">"}}</script>'
    '</head><body><div id="__next"></div></body></html>'
)
_SHOPIFY = (
    '<!doctype html>\n<html class="no-js" lang="en">\n  <head>\n'
    '    <meta charset="utf-8">\n    <meta http-equiv="X-UA-Compatible" content="IE=edge">\n'
    '    <link rel="canonical" href="https://shop.example/products/tee">\n'
    "    <title>Tee &ndash; Example Shop</title>\n"
    '    <meta name="description" content="A tee &amp; more, ?utm=1&region=eu">\n'
    '    <script>var Shopify = Shopify || {};\nShopify.shop = "example.myshopify.com";</script>\n'
    '    <script type="application/ld+json">{"name":"Tee"}</script>\n'
    '    <noscript><meta name="robots" content="noindex"></noscript>\n'
    '    <meta name="robots" content="noindex,nofollow">\n'
    '  </head>\n\n  <body id="tee">\n'
)
_NO_HEAD_END = (
    "<html><head><title>Old page</title>\n"
    '<META NAME="ROBOTS" CONTENT="NOARCHIVE">\n'
    '<meta name="keywords" content="a, b">\n'
    '<table><tr><td><meta name="robots" content="noindex"></td></tr></table>\n'
)
_PLUGIN_AFTER_HEAD = (
    '<html><head><title>t</title></head>\n<meta name="robots" content="noindex">\n'
    "<link rel=stylesheet href=/x.css><body><p>x"
)
_BANG_COMMENT = '<head><!-- cache --!><meta name="robots" content="noindex"></head>'
_ESCAPED_SCRIPT = (
    "<head><script><!--\ndocument.write('<script>a</script>');\n"
    '<meta name="robots" content="fake">\n--></script>'
    '<meta name="robots" content="noindex"></head>'
)
_AMP_IN_CONTENT = (
    '<head><meta name="tdm-policy" content="https://example.com/p?lang=en&region=eu&copy=1&not=2">'
    "</head>"
)
_BODY_AFTER_IMG = '<head><title>t</title><img src=x.png><meta name="robots" content="noindex">'
_BODY_AFTER_NBSP = '<head>&nbsp;<meta name="robots" content="noindex">'
_HREFLANG = (
    "<!doctype html><html><head><meta charset=utf-8>"
    + "".join(
        f'<link rel="alternate" hreflang="x{n}" href="https://example.com/{n}/page">\n'
        for n in range(1500)
    )
    + '<meta name="robots" content="noindex"></head><body>'
)

REAL_WORLD: dict[str, str] = {
    "wordpress_yoast": _YOAST,
    "nextjs_large_inline_style": _NEXTJS,
    "shopify": _SHOPIFY,
    "no_head_end_tag": _NO_HEAD_END,
    "plugin_meta_after_head": _PLUGIN_AFTER_HEAD,
    "bang_comment_close": _BANG_COMMENT,
    "script_escape_states": _ESCAPED_SCRIPT,
    "ampersands_in_content": _AMP_IN_CONTENT,
    "img_ends_head": _BODY_AFTER_IMG,
    "nbsp_ends_head": _BODY_AFTER_NBSP,
    "long_hreflang_list": _HREFLANG,
}


def corpus_documents() -> list[str]:
    """The tree-construction inputs (those a UTF-8 byte string can carry)."""
    documents: list[str] = json.loads(DATA.read_text("utf-8"))["documents"]
    return [doc for doc in documents if _encodable(doc)]


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 document spells it
        return False
    return True


def positions(document: str) -> list[int]:
    """Five places to insert a tag: the start, after the first ``>``, the first ``<``
    after the middle, before the last ``<``, the end."""
    first = document.find(">") + 1
    middle = document.find("<", len(document) // 2)
    last = document.rfind("<")
    return [0, first, middle if middle >= 0 else len(document), max(last, 0), len(document)]


def variants() -> Iterator[tuple[str, str]]:
    """(id, document): each corpus document with ROBOTS inserted at five positions,
    then the real-world heads."""
    for number, document in enumerate(corpus_documents()):
        for place, at in enumerate(positions(document)):
            yield f"h5t-{number}-{place}", document[:at] + ROBOTS + document[at:]
    yield from REAL_WORLD.items()


def _normal(pairs: list[tuple[str | None, str | None]]) -> Pairs:
    return [
        (name.strip(_SPACE).lower(), content.strip(_SPACE))
        for name, content in pairs
        if name is not None and content is not None
    ]


def html5lib_head(document: str) -> Pairs:
    """The (name, content) of the metas html5lib puts in the head (scripting on)."""
    import html5lib

    root = html5lib.parse(
        document, treebuilder="etree", namespaceHTMLElements=False, scripting=True
    )
    head = root.find("head")
    children = list(head) if head is not None else []
    return _normal([(el.get("name"), el.get("content")) for el in children if el.tag == "meta"])


def justhtml_head(document: str) -> Pairs:
    """The same read by justhtml, a parser of the current HTML standard."""
    from justhtml import JustHTML

    root: Any = JustHTML(document, sanitize=False, scripting_enabled=True).root
    html = next((n for n in root.children if getattr(n, "name", None) == "html"), None)
    head = next((n for n in (html.children if html else []) if n.name == "head"), None)
    metas = [n for n in (head.children if head else []) if getattr(n, "name", None) == "meta"]
    return _normal([(n.attrs.get("name"), n.attrs.get("content")) for n in metas])


def category(ours: Pairs, oracle: Pairs) -> str:
    """How ``ours`` departs from ``oracle``: agree, missed, extra, or value."""
    if ours == oracle:
        return "agree"
    if len(ours) < len(oracle):
        return "missed (oracle has more)"
    if len(ours) > len(oracle):
        return "extra (oracle has fewer)"
    return "value or order"


def judge(reader: Callable[[bytes], Pairs], document: str) -> tuple[str, Pairs, Pairs, Pairs]:
    """(verdict, ours, html5lib's, justhtml's or [] when not asked) for one document.

    ``agree``; ``html5lib predates the standard`` when html5lib and justhtml
    differ and ours is justhtml's; else the :func:`category` against html5lib.
    """
    ours = reader(document.encode("utf-8"))
    oracle = html5lib_head(document)
    if ours == oracle:
        return "agree", ours, oracle, []
    spec = justhtml_head(document)
    if spec != oracle and ours == spec:
        return "html5lib predates the standard (ours = justhtml)", ours, oracle, spec
    return category(ours, oracle), ours, oracle, spec


def figures(reader: Callable[[bytes], Pairs]) -> Counter[str]:
    """Verdicts over every variant."""
    return Counter(judge(reader, document)[0] for _, document in variants())


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from scrapy_googlerobots.htmlmeta import head_meta

    counts = figures(lambda body: head_meta(body, encoding="utf-8"))
    print(f"documents: {sum(counts.values())}")
    for verdict, count in counts.most_common():
        print(f"  {verdict}: {count}")
