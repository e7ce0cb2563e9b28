"""Parse a robots.txt once, answer allow/disallow many times -- the Google way."""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Iterable
from typing import Any, NamedTuple

from scrapy_googlerobots.usagerules import USAGE_DIRECTIVES as _USAGE_DIRECTIVES
from scrapy_googlerobots.usagerules import UsageRule, parse_usage_line

from ._lines import (
    EXACT_KEYS,
    WHITESPACE,
    LineKind,
    classify_key,
    directives,
    to_bytes,
)
from ._match import HTTP_AUTHORITY, path_params_query
from ._policy import Policy

__all__ = ["GOOGLE_MAX_SIZE", "RequestRate", "RobotsTxt", "Verdict", "parse", "product_token"]

#: Google reads only the first 500 KiB of a robots.txt (the C++ library leaves
#: this to its caller; ``parse(..., max_size=GOOGLE_MAX_SIZE)`` applies it).
GOOGLE_MAX_SIZE = 500 * 1024


class Verdict(NamedTuple):
    """The answer for one URL and crawler, with the rule that decided it."""

    allowed: bool
    line: int
    """1-based line of the deciding rule (the reference's ``matching_line()``);
    0 when no rule of the applicable group(s) matched."""
    rule: str | None
    """The deciding rule's value as written; None when ``line`` is 0."""


_NO_MATCH = Verdict(True, 0, None)


class RequestRate(NamedTuple):
    """A ``Request-rate: n/T`` directive: at most ``requests`` per ``seconds``."""

    requests: int
    seconds: float

    @property
    def delay(self) -> float:
        """The gap between two requests this rate asks for: ``seconds / requests``."""
        return self.seconds / self.requests


_TOKEN = re.compile(r"[A-Za-z_-]*")
_TOKEN_BYTES = re.compile(rb"[A-Za-z_-]*")
_CRAWL_DELAY_KEY = b"crawl-delay"
_REQUEST_RATE_KEY = b"request-rate"
# What the keys parse() cares for can start with: user-agent, allow, disallow
# (and its typos), sitemap, crawl-delay, request-rate, content-usage,
# content-signal.
_KEY_STARTS = frozenset(b"uUaAdDsScCrR")
_CRAWL_DELAY = re.compile(rb"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
# "n/T" with an optional unit (s, m, h, d; seconds by default), optionally
# followed by a visit-time window ("1/5s 0900-1730"), which is not used.
_REQUEST_RATE = re.compile(
    rb"([0-9]+)[ \t]*/[ \t]*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)[ \t]*([smhdSMHD]?)(?:[ \t]+[ -~]*)?"
)
_UNIT_SECONDS = {b"": 1, b"s": 1, b"m": 60, b"h": 3600, b"d": 86400}
_USAGE_KEY_LENGTHS = frozenset(len(key) for key in _USAGE_DIRECTIVES)


def product_token(value: str) -> str:
    """The product token of a user-agent value: its leading run of ``[A-Za-z_-]``.

    ``FooBot/2.1 (+http://x)`` gives ``FooBot`` (the reference's ``ExtractUserAgent``).
    """
    match = _TOKEN.match(value)
    return match[0] if match else ""


class _Group:
    """A run of user-agent lines and the rules after it (mutable only while parsing)."""

    __slots__ = ("crawl_delay", "is_global", "lines", "request_rate", "tokens", "values")

    def __init__(self) -> None:
        self.is_global = False
        self.tokens: frozenset[str] | set[str] = set()
        # The rules, column-wise: line number (negative for disallow) and the
        # value as written. Compiled lazily, per crawler.
        self.lines = array("q")
        self.values: list[bytes] | tuple[bytes, ...] = []
        # Not part of Google's matching: the largest valid value of each.
        self.crawl_delay: float | None = None
        self.request_rate: RequestRate | None = None


UserAgent = str | Iterable[str]


class RobotsTxt:
    """A parsed robots.txt. Immutable from the outside and safe to share between threads."""

    __slots__ = ("_authority", "_by_groups", "_groups", "_policies", "_sitemaps", "_tokens")

    def __init__(
        self, groups: list[_Group], sitemaps: list[str], tokens: dict[str, tuple[int, ...]]
    ) -> None:
        self._groups = tuple(groups)
        self._sitemaps = tuple(sitemaps)
        # Filled on demand (racing threads store equal values): user agent ->
        # policy, and the indexes of the applicable groups -> policy, so that
        # crawlers that end up with the same groups share one compiled policy.
        self._policies: dict[object, Policy] = {}
        self._by_groups: dict[tuple[int, ...], Policy] = {}
        # Product token -> indexes of the groups naming it ("*" -> the global
        # ones; no product token holds a "*").
        self._tokens = tokens
        # The last "http(s)://authority/" seen (see _path). The initial value
        # is no authority, but what follows it is a URL's path all the same.
        self._authority = "\0/"

    def __repr__(self) -> str:
        rules = sum(len(group.values) for group in self._groups)
        return (
            f"<RobotsTxt groups={len(self._groups)} rules={rules} sitemaps={len(self._sitemaps)}>"
        )

    @property
    def has_usage(self) -> bool:
        """Whether any group holds a ``Content-Usage`` / ``Content-Signal`` rule
        that gives a category a value (when False, :meth:`usage` is always ``{}``)."""
        return False

    def usage(self, url: str, user_agent: UserAgent) -> dict[str, UsageRule]:
        """The AI usage preferences for ``url``: IETF category -> the rule that decides it.

        The rules are those of the group(s) Google's rules choose for
        ``user_agent``; per category the rule whose path matches longest
        decides ("no" on a tie). A category without a matching rule is absent
        (unknown). A URL that ``user_agent`` may not fetch has none: ``{}``.
        """
        return {}

    @property
    def sitemaps(self) -> list[str]:
        """The ``sitemap:`` values in file order, as written (empty ones skipped)."""
        return list(self._sitemaps)

    def allowed(self, url: str, user_agent: UserAgent) -> bool:
        """Whether ``user_agent`` may fetch ``url`` (an RFC 3986 %-encoded URL).

        ``user_agent`` is a product token, a full User-Agent value (reduced to
        its product token), or several of them (groups naming any one apply).
        """
        try:
            policy = self._policies[user_agent]
        except (KeyError, TypeError):  # not seen yet, or a list of agents
            policy = self._policy(user_agent)
        if policy.no_rules:
            return True  # no rule applies: nothing to look at
        # (_path_of, inlined: this is the hot path)
        authority = self._authority
        if url.startswith(authority):
            path = url[len(authority) - 1 :]
            if "#" not in path and "\0" not in path and path.isascii():
                return policy.decide(path.encode()) >= 0
        return policy.decide(self._path_of(url)) >= 0

    def deciding_line(self, url: str, user_agent: UserAgent) -> int:
        """:meth:`allowed` with the deciding line: the line of the rule that decided,
        negative when it disallows (so ``>= 0`` means allowed), 0 when none matched."""
        try:
            policy = self._policies[user_agent]
        except (KeyError, TypeError):
            policy = self._policy(user_agent)
        if policy.no_rules:
            return 0
        authority = self._authority  # (_path_of, inlined)
        if url.startswith(authority):
            path = url[len(authority) - 1 :]
            if "#" not in path and "\0" not in path and path.isascii():
                return policy.decide(path.encode())
        return policy.decide(self._path_of(url))

    def explain(self, url: str, user_agent: UserAgent) -> Verdict:
        """The verdict for ``url`` with the line and rule that decided it."""
        policy = self._policy(user_agent)
        line = policy.decide(self._path_of(url))
        if not line:
            return _NO_MATCH
        return Verdict(line > 0, abs(line), self.rule_at(abs(line)))

    def rule_at(self, line: int) -> str | None:
        """The value of the allow/disallow rule on 1-based ``line``, as written;
        None when that line holds no rule of a group (what :attr:`Verdict.rule`
        shows for a verdict decided there)."""
        for group in self._groups:
            lines = group.lines
            for signed in (line, -line):
                if signed in lines:
                    return group.values[lines.index(signed)].decode("utf-8", "replace")
        return None

    def _path_of(self, url: str) -> bytes:
        """The path, params and query of ``url``, as bytes."""
        # The hot path: a URL on the origin of the last one (see _path),
        # without fragment or NUL: its path is what follows the authority.
        # Anything else takes the general way.
        authority = self._authority
        if url.startswith(authority):
            path = url[len(authority) - 1 :]
            if "#" not in path and "\0" not in path:
                try:
                    return path.encode()
                except UnicodeEncodeError:  # lone surrogates
                    pass
        return self._path(url)

    def _path(self, url: str) -> bytes:
        """``path_params_query`` of the URL's UTF-8 bytes.

        Nearly every URL is "http(s)://authority/path", and nearly every URL
        asked about one robots.txt has the same authority (the file governs
        one origin): the last one seen, with the "/" that follows it, is
        remembered for the hot path.
        """
        try:
            data = url.encode()
        except UnicodeEncodeError:  # lone surrogates: still bytes, never an error
            data = url.encode("utf-8", "surrogatepass")
        found = HTTP_AUTHORITY(data)
        if found is not None and data[: found.end()].isascii():
            self._authority = data[: found.end() + 1].decode("ascii")
        return path_params_query(data)

    # -- directives Google ignores, read from the groups Google would pick ----

    def crawl_delay(self, user_agent: UserAgent) -> float | None:
        """The ``crawl-delay`` of the group(s) that apply to ``user_agent``, if any.

        Google itself ignores crawl-delay; this reads it from the groups that
        decide allow/disallow. Several values: the largest (the polite reading).
        """
        groups = self._groups
        delays = [groups[i].crawl_delay for i in self._chosen(user_agent)]
        return max((d for d in delays if d is not None), default=None)

    def request_rate(self, user_agent: UserAgent) -> RequestRate | None:
        """The ``request-rate`` of the group(s) that apply, if any (the slowest one)."""
        groups = self._groups
        rates = [groups[i].request_rate for i in self._chosen(user_agent)]
        return max((r for r in rates if r is not None), key=lambda r: r.delay, default=None)

    def delay(self, user_agent: UserAgent) -> float | None:
        """The gap a polite crawler leaves between requests: the larger of
        ``crawl-delay`` and ``request-rate``'s seconds per request; None if neither."""
        delay = self.crawl_delay(user_agent)
        rate = self.request_rate(user_agent)
        if rate is not None and (delay is None or rate.delay > delay):
            return rate.delay
        return delay

    def group_name(self, user_agent: UserAgent) -> str:
        """How the file names the group(s) that apply to ``user_agent``: its
        product token (lower case) when a group names it, ``"*"`` when only
        the global groups apply, ``""`` when none does (everything allowed)."""
        chosen = self._chosen(user_agent)
        if not chosen:
            return ""
        tokens = self._tokens
        agents = (user_agent,) if isinstance(user_agent, str) else tuple(user_agent)
        for agent in agents:
            token = product_token(agent).lower()
            if token in tokens and token != "*":
                return token
        return "*"

    # -- choosing and compiling the groups ------------------------------------

    def _chosen(self, user_agent: UserAgent) -> tuple[int, ...]:
        """Indexes of the groups that apply to ``user_agent``."""
        tokens = self._tokens
        if isinstance(user_agent, str):
            chosen = tokens.get(product_token(user_agent).lower())
            # The groups naming the crawler shadow the global ones completely;
            # only when none names it do the global groups apply.
            return chosen if chosen is not None else tokens.get("*", ())
        named = {i for agent in user_agent for i in tokens.get(product_token(agent).lower(), ())}
        return tuple(sorted(named)) if named else tokens.get("*", ())

    def _policy(self, user_agent: UserAgent) -> Policy:
        key: object = user_agent if isinstance(user_agent, str) else tuple(user_agent)
        policy = self._policies.get(key)
        if policy is not None:
            return policy
        chosen = self._chosen(key)  # type: ignore[arg-type]
        policy = self._by_groups.get(chosen)
        if policy is None:
            groups = self._groups
            if len(chosen) == 1:
                group = groups[chosen[0]]
                policy = Policy(group.lines, group.values)
            else:
                lines = array("q")
                values: list[bytes] = []
                for index in chosen:
                    lines.extend(groups[index].lines)
                    values.extend(groups[index].values)
                policy = Policy(lines, values)
            if len(self._by_groups) >= 64:  # bounded: callers may pass many agents
                self._by_groups.clear()
            self._by_groups[chosen] = policy
        if len(self._policies) >= 64:
            self._policies.clear()
        self._policies[key] = policy
        return policy


def parse(body: bytes | str, *, max_size: int | None = None) -> RobotsTxt:
    """Parse a robots.txt body the way Google's reference parser does. Never raises.

    ``max_size`` keeps only that many leading bytes (Google reads
    :data:`GOOGLE_MAX_SIZE`).
    """
    data = to_bytes(body)
    if max_size is not None:
        data = data[: max(max_size, 0)]
    builder = _Builder()
    # The current group's columns, bound once per group (rules are most lines).
    lines_append: Any = None
    values_append: Any = None
    for number, key, value in directives(data, _KEY_STARTS):
        kind = EXACT_KEYS.get(key.lower()) or classify_key(key)[0]
        if kind is _DISALLOW or kind is _ALLOW:
            if lines_append is not None:
                lines_append(number if kind is _ALLOW else -number)
                values_append(value)
            elif builder.group is not None:
                builder.group_has_rules = True
                lines_append = builder.group.lines.append
                values_append = builder.group.values.append  # type: ignore[union-attr]
                lines_append(number if kind is _ALLOW else -number)
                values_append(value)
            # (a rule before any user-agent line is ignored)
        elif kind is _USER_AGENT:
            if lines_append is not None:  # a rule ended the group: this starts the next
                lines_append = values_append = None
            builder.user_agent(value)
        elif kind is _SITEMAP:
            if value:
                builder.sitemaps.append(value.decode("utf-8", "replace"))
        elif len(key) == len(_CRAWL_DELAY_KEY) and key.lower() == _CRAWL_DELAY_KEY:
            builder.crawl_delay(value)
        elif len(key) == len(_REQUEST_RATE_KEY) and key.lower() == _REQUEST_RATE_KEY:
            builder.request_rate(value)
        elif len(key) in _USAGE_KEY_LENGTHS:
            directive = _USAGE_DIRECTIVES.get(key.lower())
            if directive is not None:
                builder.usage(number, directive, value)
    return builder.build()


_ALLOW = LineKind.ALLOW
_DISALLOW = LineKind.DISALLOW
_USER_AGENT = LineKind.USER_AGENT
_SITEMAP = LineKind.SITEMAP


class _Builder:
    """Groups the directives the way the reference's matcher state machine does."""

    __slots__ = ("group", "group_has_rules", "groups", "sitemaps", "tokens", "usage_lines")

    def __init__(self) -> None:
        self.groups: list[_Group] = []
        self.group: _Group | None = None
        self.group_has_rules = False
        self.sitemaps: list[str] = []
        # Product token ("*": the global agent) -> indexes of the groups naming it.
        self.tokens: dict[str, list[int]] = {}
        # (group index, line number, directive, value) of each usage line in a group.
        self.usage_lines: list[tuple[int, int, str, bytes]] | None = None

    def user_agent(self, value: bytes) -> None:
        group = self.group
        # Only an allow/disallow line ends a run of user-agent lines
        # (Google-specific: sitemap and other records do not).
        if group is None or self.group_has_rules:
            group = self.group = _Group()
            self.groups.append(group)
            self.group_has_rules = False
        # Google-specific: "*" followed by whitespace and more text is still
        # the global agent.
        if value[:1] == b"*" and (len(value) == 1 or value[1] in WHITESPACE):
            group.is_global = True
            token = "*"
        else:
            found = _TOKEN_BYTES.match(value)[0]  # type: ignore[index]
            token = sys.intern(found.decode("ascii").lower())
            group.tokens.add(token)  # type: ignore[union-attr]
        index = len(self.groups) - 1
        indexes = self.tokens.get(token)
        if indexes is None:
            self.tokens[token] = [index]
        elif indexes[-1] != index:  # (a group may name a crawler twice)
            indexes.append(index)

    # Crawl-delay and Request-rate lines belong to the current group but do not
    # end its run of user-agent lines (only a rule does, as for Google). A
    # group holding several values keeps the largest: the polite reading.

    def crawl_delay(self, value: bytes) -> None:
        group = self.group
        if group is not None and _CRAWL_DELAY.fullmatch(value):
            delay = float(value)
            if group.crawl_delay is None or delay > group.crawl_delay:
                group.crawl_delay = delay

    def request_rate(self, value: bytes) -> None:
        group = self.group
        found = _REQUEST_RATE.fullmatch(value)
        if group is None or found is None:
            return
        requests = int(found[1])
        seconds = float(found[2]) * _UNIT_SECONDS[found[3].lower()]
        if requests <= 0 or seconds <= 0:
            return
        rate = RequestRate(requests, seconds)
        if group.request_rate is None or rate.delay > group.request_rate.delay:
            group.request_rate = rate

    def usage(self, number: int, directive: str, value: bytes) -> None:
        # Like Crawl-delay: part of the current group, not ending its run of
        # user-agent lines (Google ignores the line); before any group, ignored.
        if self.group is None:
            return
        if self.usage_lines is None:
            self.usage_lines = []
        self.usage_lines.append((len(self.groups) - 1, number, directive, value))

    def build(self) -> RobotsTxt:
        for group in self.groups:  # freeze: compact and immutable from here on
            group.tokens = frozenset(group.tokens)
            group.values = tuple(group.values)
        tokens = {token: tuple(indexes) for token, indexes in self.tokens.items()}
        if self.usage_lines is not None:
            rules = _usage_rules(self.usage_lines)
            if rules:
                return _UsageRobotsTxt(self.groups, self.sitemaps, tokens, rules)
        return RobotsTxt(self.groups, self.sitemaps, tokens)


# A usage rule as filed by group: (signed line: positive for "no", so that it
# wins a tie as an allow rule does in a Policy; the pattern to match; the rule).
_FiledUsage = tuple[int, bytes, UsageRule]


def _usage_rules(lines: list[tuple[int, int, str, bytes]]) -> dict[int, list[_FiledUsage]]:
    """Group index -> its usage rules, one per category a line gives a value."""
    by_group: dict[int, list[_FiledUsage]] = {}
    for index, number, directive, value in lines:
        parsed = parse_usage_line(directive, value)
        # A pathless rule applies to every path with the length of "/" (and
        # every path starts with "/"): it is the pattern "/".
        pattern = parsed.path or b"/"
        path = parsed.path.decode("utf-8", "replace")
        for category, allowed in parsed.values.items():
            rule = UsageRule(category, allowed, number, directive, path)
            filed = by_group.setdefault(index, [])
            filed.append((-number if allowed else number, pattern, rule))
    return by_group


# A category's compiled rules and its rules by line number.
_UsagePolicy = tuple[Policy, dict[int, UsageRule]]


class _UsageRobotsTxt(RobotsTxt):
    """A :class:`RobotsTxt` whose groups hold usage rules (a file without any
    is a plain RobotsTxt and pays nothing for them)."""

    __slots__ = ("_usage_by_agent", "_usage_by_groups", "_usage_rules")

    def __init__(
        self,
        groups: list[_Group],
        sitemaps: list[str],
        tokens: dict[str, tuple[int, ...]],
        usage_rules: dict[int, list[_FiledUsage]],
    ) -> None:
        super().__init__(groups, sitemaps, tokens)
        self._usage_rules = usage_rules
        # Indexes of the applicable groups -> category -> (policy, rules by
        # line); and the same by user agent, as _policies is.
        self._usage_by_groups: dict[tuple[int, ...], dict[str, _UsagePolicy]] = {}
        self._usage_by_agent: dict[object, dict[str, _UsagePolicy]] = {}

    @property
    def has_usage(self) -> bool:
        return True

    def usage(self, url: str, user_agent: UserAgent) -> dict[str, UsageRule]:
        try:
            policies = self._usage_by_agent[user_agent]
        except (KeyError, TypeError):  # not seen yet, or a list of agents
            policies = self._usage_for(user_agent)
        if not policies:
            return {}
        path = self._path_of(url)
        allow = self._policy(user_agent)
        if not allow.no_rules and allow.decide(path) < 0:
            return {}  # not fetched at all
        found: dict[str, UsageRule] = {}
        for category, (policy, rules) in policies.items():
            line = policy.decide(path)
            if line:
                found[category] = rules[abs(line)]
        return found

    def _usage_for(self, user_agent: UserAgent) -> dict[str, _UsagePolicy]:
        key: object = user_agent if isinstance(user_agent, str) else tuple(user_agent)
        chosen = self._chosen(key)  # type: ignore[arg-type]
        policies = self._usage_by_groups.get(chosen)
        if policies is None:
            policies = self._usage_policies(chosen)
        if len(self._usage_by_agent) >= 64:  # bounded: callers may pass many agents
            self._usage_by_agent.clear()
        self._usage_by_agent[key] = policies
        return policies

    def _usage_policies(self, chosen: tuple[int, ...]) -> dict[str, _UsagePolicy]:
        by_category: dict[str, tuple[array[int], list[bytes], dict[int, UsageRule]]] = {}
        for index in chosen:
            for signed, pattern, rule in self._usage_rules.get(index, ()):
                lines, patterns, rules = by_category.setdefault(rule.category, (array("q"), [], {}))
                lines.append(signed)
                patterns.append(pattern)
                rules[rule.line] = rule
        policies = {
            category: (Policy(lines, patterns, index_htm=False), rules)
            for category, (lines, patterns, rules) in by_category.items()
        }
        if len(self._usage_by_groups) >= 64:  # bounded, as the allow/disallow policies
            self._usage_by_groups.clear()
        self._usage_by_groups[chosen] = policies
        return policies
