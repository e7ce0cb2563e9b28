"""Pure rules around the core: origins, URL canonical form, product tokens, HTTP status ->
outcome and lifetime, and the decision on a cached record. No Scrapy, no I/O."""
