"""The example project's cluster mode: scrapy-redis workers sharing one robots.txt cache."""
