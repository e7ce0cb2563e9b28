"""Pure rules around the core: origins, URL canonical form, product tokens, HTTP status ->
outcome and lifetime, the decision on a cached record and TDMRep's (``tdm``), and what
page-level robots directives mean for a crawl (``page_rules``). No Scrapy, no I/O."""
