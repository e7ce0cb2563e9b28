"""The Scrapy side: the middleware shell and the units it delegates to (fetch, waiting room,
reporting), plus the add-on, the ``ROBOTSTXT_PARSER`` adapter and version compatibility."""
