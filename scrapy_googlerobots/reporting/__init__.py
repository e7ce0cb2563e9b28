"""Scrapy side: what the crawl tells its user.

Log lines, ``robotstxt/`` stats and the ``robots_parsed`` signal
(``reporter``), any policy file's fetch counts and lines (``file_reports``),
the end-of-crawl summary (``summary``), the decisions code can ask about
(``explain``: ``forbidden_by``, ``RobotsDecision``; ``explainer``: the
middleware's ``explain()`` and ``sitemaps()``), TDMRep's refusal lines and
stats (``tdm_reports``). May import
``fetching`` (what a fetch found), ``runtime`` and the layers below.
"""
