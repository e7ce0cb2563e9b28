"""``python -m scrapy_googlerobots``: the ``googlerobots`` command."""

import sys

from scrapy_googlerobots.commands.googlerobots import main

if __name__ == "__main__":
    sys.exit(main())
