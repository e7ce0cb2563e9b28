"""Scrapy side, top floor: the crawl shell that Scrapy loads.

The downloader middleware (``middleware``), the parts it is built from
(``factory``), robots.txt as a per-origin policy file (``robots_file``), the
add-on (``addon``), the spider signals and noticing that the spider closes
(``lifecycle``), the ``ROBOTSTXT_PARSER`` adapter for the stock middleware
(``stock_parser``) and what stands in for the middleware when a setting cannot
work (``bad_setting``). May import every folder below it;
only ``commands`` imports it.
"""
