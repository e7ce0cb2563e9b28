"""The product token a crawler is matched by, derived from its User-Agent (SPEC B7).

Decisions, beyond SPEC B7:

- The token is reduced the way Google reduces the value of a ``user-agent:``
  line (``ExtractUserAgent`` in robots.cc): its leading run of ``[A-Za-z_-]``.
  ``Bot2/1.0`` gives ``Bot``, which is also what a ``user-agent: Bot2`` line
  reduces to, so the crawler meets its own group. Case is kept as written
  (matching is case-insensitive).
- A ``compatible; Name/x`` element wins wherever it sits in a comment
  (``(compatible; Googlebot/2.1; …)``, ``(KHTML, like Gecko; compatible;
  Googlebot/2.1; …)``), with or without a version (``(compatible;
  GoogleOther)``). An element with a space before its version, such as
  Internet Explorer's ``compatible; MSIE 6.0``, is not a product and leaves the
  first product (``Mozilla``) in place.
- An empty or blank value, or one whose first product starts with a character
  outside ``[A-Za-z_-]`` (``(…)``, ``2Bot/1``), gives ``""``: no usable token.
  The caller decides what to do with it (Google refuses to match such agents).
"""

from __future__ import annotations

import re

from scrapy_googlerobots.robotstxt import product_token

__all__ = ["crawler_token"]

# "compatible;" as an element of a comment, then the next element (up to ";"
# or ")"). Whitespace here is the RFC 9110 kind (space, tab).
_COMPATIBLE = re.compile(r"[(;][ \t]*compatible[ \t]*;[ \t]*([^;)]*)", re.IGNORECASE)


def crawler_token(user_agent: str) -> str:
    """The product token to match robots.txt groups against, from a User-Agent value.

    ``FooBot/1.2 (+http://x)`` → ``FooBot``;
    ``Mozilla/5.0 (compatible; FooBot/1.0; +http://x)`` → ``FooBot``;
    a plain browser value → ``Mozilla``; a blank value → ``""``.
    """
    for match in _COMPATIBLE.finditer(user_agent):
        product = match[1].split("/", 1)[0].strip(" \t")
        if " " not in product and "\t" not in product:
            token = product_token(product)
            if token:
                return token
    return product_token(user_agent.lstrip(" \t\r\n\v\f"))
