"""Which product token robots.txt groups are matched for, per request (memoised)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_googlerobots.policy.useragent import crawler_token

if TYPE_CHECKING:
    from scrapy import Request

__all__ = ["AgentTokens"]

logger = logging.getLogger(__name__)

# User-Agent values remembered; a rotating-agent crawl clears and refills.
_MEMO_SIZE = 1_024


class AgentTokens:
    """``ROBOTSTXT_USER_AGENT``, else the request's ``User-Agent``, else ``USER_AGENT``.

    ``fixed`` is the token of ``ROBOTSTXT_USER_AGENT`` (None when unset): the
    middleware's hot path reads it directly and calls :meth:`of` only without it.
    ``warn=False``: no warning for a token that names no crawler (the robots.txt
    middleware of the same crawl gives it once).
    """

    __slots__ = ("_default", "_default_agent", "_extra", "_memo", "_warned", "fixed")

    def __init__(
        self,
        fixed_agent: str | None,
        default_agent: str,
        log_extra: Callable[[], Any],
        *,
        warn: bool = True,
    ) -> None:
        self._memo: dict[bytes, str] = {}
        self._default_agent = default_agent
        self._default: str | None = None
        self._extra = log_extra
        self._warned = not warn
        self.fixed: str | None = self._token(fixed_agent) if fixed_agent else None

    def token(self, request: Request) -> str:
        """The product token ``request`` is judged for: ``fixed``, else :meth:`of`."""
        fixed = self.fixed
        return self.of(request) if fixed is None else fixed

    def of(self, request: Request) -> str:
        """The product token for ``request`` (its header, else ``USER_AGENT``)."""
        # Headers is a dict of normalised (title-case) names to value lists;
        # reading it directly skips Headers.get's per-call normalisation.
        values = dict.get(request.headers, b"User-Agent")
        value = values[-1] if values else None
        if value is None:
            token = self._default
            if token is None:
                token = self._default = self._token(self._default_agent)
            return token
        token = self._memo.get(value)
        if token is None:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            token = self._memo[value] = self._token(value.decode("latin-1"))
        return token

    def _token(self, user_agent: str) -> str:
        token = crawler_token(user_agent)
        if (token == "Mozilla" or not token) and not self._warned:
            # Once per crawl: a rotating browser User-Agent must not flood the log.
            self._warned = True
            logger.warning(
                "robots.txt groups are matched for the product token %(token)r of the "
                "User-Agent %(agent)r, which names no crawler; set ROBOTSTXT_USER_AGENT to "
                "your crawler's name (e.g. 'MyBot') so sites can address it",
                {"token": token, "agent": user_agent},
                extra=self._extra(),
            )
        return token
