"""Cluster mode: every worker runs these settings against one Redis.

scrapy-redis shares the request queue and the duplicate filter;
scrapy-googlerobots shares the robots.txt cache (one fetch per origin for the
whole cluster) in the same Redis, under its own key prefix.
"""

import os

BOT_NAME = "cluster_demo"
SPIDER_MODULES = ["cluster_demo.spiders"]
NEWSPIDER_MODULE = "cluster_demo.spiders"
USER_AGENT = "ClusterDemoBot/1.0 (+https://github.com/scrapy-googlerobots/scrapy-googlerobots)"

# One Redis for everything; run_cluster.py sets REDIS_URL to the one it starts.
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")

# scrapy-redis, unmodified: shared queue and duplicate filter. The queue must
# outlive the first worker to finish, so it is not flushed on close.
SCHEDULER = "scrapy_redis.scheduler.Scheduler"
DUPEFILTER_CLASS = "scrapy_redis.dupefilter.RFPDupeFilter"
SCHEDULER_PERSIST = True
# Start URLs taken from Redis at a time (default: CONCURRENT_REQUESTS), so
# that every worker gets some.
REDIS_START_URLS_BATCH_SIZE = 1
CONCURRENT_REQUESTS = 4
# A worker with nothing to do for this many seconds stops (default: never).
MAX_IDLE_TIME_BEFORE_CLOSE = int(os.environ.get("MAX_IDLE_TIME_BEFORE_CLOSE", "3"))

# scrapy-googlerobots with the shared robots.txt cache.
ROBOTSTXT_OBEY = True
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "scrapy_googlerobots.GoogleRobotsTxtMiddleware": 100,
}
ROBOTSTXT_CACHE_STORE = REDIS_URL
ROBOTSTXT_CACHE_KEY_PREFIX = "cluster_demo:robotstxt:"  # default "robotstxt:"
# ROBOTSTXT_CACHE_STORE_TIMEOUT = 1.0   # a slower Redis is taken out of the path
# ROBOTSTXT_LOCAL_CACHE_TTL = 60        # each worker re-reads a record at most this often

# The chaos check's window into each worker (run_cluster.py --chaos sets
# SNAPSHOT_FILE per worker; without it the extension stays off).
EXTENSIONS = {"cluster_demo.snapshots.WorkerSnapshots": 500}

TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
