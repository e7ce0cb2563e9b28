"""The ``robots_parsed`` signal on every supported Scrapy (2.11 to 2.19).

Scrapy 2.18 added ``scrapy.signals.robots_parsed``, sent by its
``RobotsTxtMiddleware`` after it parses a robots.txt, with ``robotparser=``
and ``request=``. :data:`robots_parsed` *is* that object where Scrapy has it
(so a handler connected to either name receives the middleware's signal), and
an object of this package's own on older Scrapy, sent with the same arguments.
"""

from __future__ import annotations

from scrapy import signals

__all__ = ["SCRAPY_HAS_ROBOTS_PARSED", "robots_parsed"]

SCRAPY_HAS_ROBOTS_PARSED: bool = hasattr(signals, "robots_parsed")
"""Whether the installed Scrapy defines ``scrapy.signals.robots_parsed`` (2.18+)."""

robots_parsed: object = getattr(signals, "robots_parsed", None) or object()
"""Sent after the middleware fetched and parsed a robots.txt that yields a policy
(2xx rules, 4xx allow-all), with ``robotparser`` (a
:class:`~scrapy_googlerobots.GoogleRobotParser`) and ``request`` (the request
that triggered the fetch, or None). Scrapy's own object on Scrapy 2.18+."""
