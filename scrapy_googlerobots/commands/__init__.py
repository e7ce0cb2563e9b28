"""The commands: ``googlerobots`` (``check``, ``lint``) and ``scrapy robots``.

``googlerobots`` and its linter need no Scrapy; ``scrapy_robots`` checks URLs
the way the project's crawl would (its verdicts and output:
``robots_verdicts``). The top layer: may import anything in the package, and
nothing imports it.
"""
