"""Builds the policy store that ``ROBOTSTXT_CACHE_STORE`` (and ``JOBDIR``) select."""

from __future__ import annotations

from scrapy.settings import BaseSettings

from scrapy_googlerobots._store import MemoryPolicyStore, PolicyStore


def build_store(settings: BaseSettings) -> PolicyStore:
    """Return the store the settings ask for; raise ValueError naming the fix if unusable."""
    spec = settings.get("ROBOTSTXT_CACHE_STORE") or "memory"
    max_size = settings.getint("ROBOTSTXT_CACHE_SIZE", 10_000)
    if spec == "memory":
        return MemoryPolicyStore(max_size=max_size)
    raise ValueError(
        f"ROBOTSTXT_CACHE_STORE={spec!r} is not supported; use 'memory'."
    )
