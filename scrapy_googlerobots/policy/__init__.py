"""Pure rules around the core: origins, URL canonical form, product tokens, HTTP status ->
outcome and lifetime, the decision on a cached record, and TDMRep's (``tdm``). No Scrapy,
no I/O."""
