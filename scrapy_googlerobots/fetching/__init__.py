"""Scrapy side: fetching an origin's policy file through Scrapy's engine.

What a per-origin policy file is (``policy_file``: robots.txt,
``/.well-known/tdmrep.json``, ...); one download of any such file
(``fetcher``: redirects, the size cap, decoding with ``body_limit``) and one
fetch per origin at a time, from HTTP result to stored record
(``coordinator``, which reports through the
:class:`~.policy_file.FetchReports` protocol and works on any origin state
shaped like :class:`~.coordinator.FetchingOrigin`); the copy of robots.txt
standing for the spider's own request of it (``robots_copy``: which copies
qualify and the response; ``robots_serve``: the answer). May import ``runtime`` and
the layers below (core, policy, stores).
"""
