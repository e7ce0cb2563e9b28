"""Scrapy side: the opt-out signals beyond allow/disallow, applied to the crawl.

AI usage preferences against the use the crawl declares (``usage_gate``:
robots.txt's usage rules and the ``Content-Usage`` header); TDMRep's file,
header and meta steps, ``tdmrep.json`` as a per-origin policy file (``tdm_gate``). May import
``reporting``, ``fetching``, ``runtime`` and the layers below.
"""
