"""Settings of the example project: Scrapy's defaults plus scrapy-googlerobots."""

BOT_NAME = "demo_project"
SPIDER_MODULES = ["demo_project.spiders"]
NEWSPIDER_MODULE = "demo_project.spiders"

# Name the crawler: robots.txt groups are matched against its product token,
# "DemoBot" (the demo web has a group for it).
USER_AGENT = "DemoBot/1.0 (+https://github.com/scrapy-googlerobots/scrapy-googlerobots)"

# The add-on turns ROBOTSTXT_OBEY on and puts GoogleRobotsTxtMiddleware where
# Scrapy's RobotsTxtMiddleware was. Without add-ons, the same is:
#
# ROBOTSTXT_OBEY = True
# DOWNLOADER_MIDDLEWARES = {
#     "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
#     "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
# }
ADDONS = {"scrapy_googlerobots.Addon": 0}

# An unreachable robots.txt (503) is fetched again after this many seconds
# (default 30); short here so the demo ends in seconds.
ROBOTSTXT_RETRY_DELAY = 1

# Reports every robots.txt exchange on the wire, for the end-of-crawl report.
# Close to the downloader, so it sees retries and redirect hops.
DOWNLOADER_MIDDLEWARES = {"demo_project.report.RobotsTxtRecorder": 950}

TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
