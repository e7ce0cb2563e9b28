"""The ``googlerobots`` command: check URLs against a robots.txt, lint a robots.txt."""
