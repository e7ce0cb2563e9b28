"""Scrapy side: requests waiting for their origin's robots.txt, and their survival.

The waiting room and its per-origin state (``waiting_room``, ``origin_state``);
the records that keep waiting requests in a shared store so a stopped or
killed worker loses none (``parked_records``: recording, leases, adoption by
another worker); the hand-over at a stop, to the store or a persisting
scheduler (``handover``); the 0.1.0 journal read once on upgrade
(``legacy_journal``). The same room, keyed by ``tdmrep|<origin>``, holds
requests waiting for a ``tdmrep.json`` (``tdm_room``). May import
``reporting``, ``fetching``, ``runtime`` and the layers below.
"""
