"""robots.txt as a :class:`~scrapy_googlerobots.fetching.policy_file.PolicyFile`.

Every request needs it; a fetch keeps the response's headers (so the spider's
own request of robots.txt can be answered from the copy) and parses the body
once; a request is judged by its rules for the request's product token (then
by the AI usage rules it carries); an unreachable file is waited for, and a
request whose wait runs out is dropped. After a fetch that yielded a policy,
``robots_parsed`` is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy_googlerobots.fetching.policy_file import record_of
from scrapy_googlerobots.fetching.robots_copy import kept_headers
from scrapy_googlerobots.policy.canonical import canonicalize_url
from scrapy_googlerobots.policy.decision import decide
from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.origin import ROBOTS_TXT
from scrapy_googlerobots.waiting.origin_state import DROP_META, RELEASED_META

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_googlerobots.fetching.fetcher import FetchResult
    from scrapy_googlerobots.policy.decision import Decision
    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.policy.record import FetchTimings, ParsedRulesCache, PolicyRecord
    from scrapy_googlerobots.reporting.reporter import Reporter
    from scrapy_googlerobots.robotstxt import RobotsTxt
    from scrapy_googlerobots.runtime.config import RobotsConfig

__all__ = ["RobotsTxtFile"]


class RobotsTxtFile:
    """robots.txt in one crawl (see the module doc).

    ``origin_ref`` and ``token`` give a request's origin and product token (the
    shell's memo); ``usage_judge`` checks the AI usage rules of an allowed URL.
    """

    kind = ROBOTS_TXT
    released_meta = RELEASED_META
    gave_up_meta = DROP_META
    always = True
    trigger_meta = ""

    def __init__(
        self,
        config: RobotsConfig,
        reporter: Reporter,
        rules: ParsedRulesCache,
        *,
        origin_ref: Callable[[str], OriginRef | None],
        token: Callable[[Request], str],
        usage_judge: Callable[[Request, RobotsTxt, str, str, OriginRef], None],
    ) -> None:
        self.reports = self._reporter = reporter
        self._rules = rules
        self._origin_ref = origin_ref
        self._token = token
        self._usage_judge = usage_judge
        self._disallow_mode = config.unreachable == "disallow"
        self._allow_after = config.unreachable_allow_after

    def needs(self, request: Request) -> bool:
        return True

    def record(
        self,
        ref: OriginRef,
        result: FetchResult,
        previous: PolicyRecord | None,
        now: float,
        timings: FetchTimings,
    ) -> PolicyRecord:
        # The headers are kept so that the spider's own request of this
        # robots.txt can be answered from the copy (one fetch per origin).
        url = ref.origin.robots_url
        headers = kept_headers(result.outcome, result.response, url=url, whole=result.whole)
        return record_of(ref.key, result, previous, now, timings, headers=headers)

    def decide(self, record: PolicyRecord | None, now: float) -> Decision:
        return decide(record, now, disallow_mode=self._disallow_mode, allow_after=self._allow_after)

    def judge(self, request: Request, record: PolicyRecord | None) -> None:
        if record is None:
            self.judge_rules(request, self._rules.empty)
        else:
            self.judge_rules(request, record.rules or self._rules.rules_of(record))

    def judge_rules(self, request: Request, rules: RobotsTxt) -> None:
        """Raise ``IgnoreRequest`` if ``rules`` (or their usage rules) refuse ``request``."""
        token = self._token(request)
        canonical = canonicalize_url(request.url)
        line = rules.deciding_line(canonical, token)
        if line >= 0 and not rules.has_usage:
            return
        ref = self._origin_ref(request.url)
        assert ref is not None, "only requests with an origin are judged"
        if line < 0:
            raise self._reporter.forbidden(request, rules, canonical, token, ref, -line)
        self._usage_judge(request, rules, canonical, token, ref)

    def gave_up(self, request: Request, reason: str) -> None:
        ref = self._origin_ref(request.url)
        raise self._reporter.dropped(request, reason, origin=None if ref is None else ref.key)

    async def fetched(
        self, result: FetchResult, record: PolicyRecord, trigger: Request | None
    ) -> None:
        # Only a fetch that yielded a policy (not an unreachable one that
        # merely kept a previous good copy).
        if result.response is not None and result.outcome is not FetchOutcome.UNREACHABLE:
            await self._reporter.robots_parsed(record, self._rules.rules_of(record), trigger)
