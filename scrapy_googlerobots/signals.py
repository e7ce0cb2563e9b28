"""Signals of scrapy_googlerobots, for ``crawler.signals.connect(handler, signal=...)``.

.. data:: robots_parsed

   ``robots_parsed(robotparser, request)``: the middleware fetched and parsed
   an origin's robots.txt. It *is* ``scrapy.signals.robots_parsed`` on Scrapy
   2.18 and later, and an object of this package's own on Scrapy 2.11 to 2.17;
   either way it is sent with the same arguments. See :doc:`/usage/sitemaps`.
"""

from __future__ import annotations

from scrapy_googlerobots.runtime.signals import robots_parsed

__all__ = ["robots_parsed"]
