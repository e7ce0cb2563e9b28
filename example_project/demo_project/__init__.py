"""Example Scrapy project for scrapy-googlerobots (see ../README.md, Quickstart)."""
