"""Where policy records live: memory (default), SQLite, Redis, a local layer in front of a
shared store, and the factory reading ``ROBOTSTXT_CACHE_STORE``."""
