"""Scrapy side, bottom floor: what every Scrapy-side unit runs on.

The settings, read and checked once into :class:`~.config.RobotsConfig`
(``config``); what differs between the Scrapy versions we support, decided
once (``scrapy_compat``); timers on whichever reactor runs (``timers``); the
product token a request is judged for, shared by the middlewares (``agents``); the
``robots_parsed`` signal on every Scrapy (``signals``). May
import Scrapy, Twisted and the layers below (core, policy, stores); every
other Scrapy-side folder may import it, and it imports none of them.
"""
