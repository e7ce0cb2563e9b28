"""Scrapy side: pacing origins by ``Crawl-delay`` / ``Request-rate`` (opt-in).

``crawl_delay`` applies the delay robots.txt asks, capped by the settings,
through Scrapy's download slots. May import ``reporting``, ``fetching``,
``runtime`` and the layers below.
"""
