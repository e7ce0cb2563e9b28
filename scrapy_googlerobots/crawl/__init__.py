"""Scrapy side, top floor: the crawl shell that Scrapy loads.

The downloader middleware (``middleware``), the add-on (``addon``), noticing
that the spider closes (``lifecycle``) and the ``ROBOTSTXT_PARSER`` adapter for
the stock middleware (``stock_parser``). May import every folder below it;
only ``commands`` imports it.
"""
