"""Scrapy side: what the crawl tells its user.

Log lines, ``robotstxt/`` stats and the ``robots_parsed`` signal
(``reporter``), the end-of-crawl summary (``summary``), and the decisions code
can ask about (``explain``: ``forbidden_by``, ``RobotsDecision``), TDMRep's
fetch and refusal lines and stats (``tdm_reports``). May import
``fetching`` (what a fetch found), ``runtime`` and the layers below.
"""
