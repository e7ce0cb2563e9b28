"""Scrapy side: fetching an origin's policy file through Scrapy's engine.

robots.txt and ``/.well-known/tdmrep.json`` (``tdmrep_fetcher``): one
download (``fetcher``: redirects, the size cap, decoding with ``body_limit``)
and one fetch per origin at a time, from HTTP result to stored record
(``coordinator``), which keeps the response headers when the copy can stand
for the spider's own request of robots.txt (``robots_copy``, which also builds
that response), and reports through the
:class:`~.coordinator.FetchReports` protocol and works on any origin state
shaped like :class:`~.coordinator.FetchingOrigin`. May import ``runtime`` and
the layers below (core, policy, stores).
"""
