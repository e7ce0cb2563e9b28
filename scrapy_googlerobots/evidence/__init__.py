"""Evidence of what a crawl obeyed (``ROBOTSTXT_EVIDENCE``): its policy files and decisions.

Every policy file the crawl fetched (robots.txt, ``tdmrep.json``: answers,
redirect hops, failures) goes into WARC files through warcio (``warc.py``);
every decision on a URL goes into a JSON Lines file, linked to the WARC
records it was judged by (``records.py``); the files are named once per
process and run and appended to record by record (``files.py``); the crawl's
recorder owns both and syncs them on a schedule (``recorder.py``). A directory
is read back (``read.py``) and every decision judged again with the core
(``verify.py``), for ``googlerobots evidence show`` / ``verify``.
"""
