"""Scrapy side: requests waiting for their origin's policy files, and their survival.

Each file's step on a request's way (``file_step``: decision, then waiting);
parking at ``request_scheduled``, the hand-back, adoption and ``park()``
(``parking``); one waiting room per file and its per-origin state
(``waiting_room``, ``origin_state``);
the records that keep waiting requests in a shared store so a stopped or
killed worker loses none (``parked_records``: recording, leases, adoption by
another worker); the hand-over at a stop, to the store or a persisting
scheduler (``handover``); the 0.1.0 journal read once on upgrade
(``legacy_journal``). May import
``reporting``, ``fetching``, ``runtime`` and the layers below.
"""
