"""Parse a robots.txt once, answer allow/disallow many times -- the Google way."""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Iterable
from typing import NamedTuple

from ._lines import (
    EXACT_KEYS,
    WHITESPACE,
    LineKind,
    classify_key,
    directives,
    escape_pattern,
    to_bytes,
)
from ._match import HTTP_AUTHORITY, NO_MATCH, RuleIndex, path_params_query

__all__ = ["GOOGLE_MAX_SIZE", "RobotsTxt", "Verdict", "parse", "product_token"]

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

_TOKEN = re.compile(r"[A-Za-z_-]*")
_TOKEN_BYTES = re.compile(rb"[A-Za-z_-]*")
_CRAWL_DELAY_KEY = b"crawl-delay"
# What the keys parse() cares for can start with: user-agent, allow, disallow
# (and its typos), sitemap, crawl-delay.
_KEY_STARTS = frozenset(b"uUaAdDsScC")
_CRAWL_DELAY = re.compile(rb"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def product_token(value: str) -> str:
    """The product token of a user-agent value: its leading run of ``[A-Za-z_-]``.

    ``FooBot/2.1 (+http://x)`` gives ``FooBot`` (the reference's ``ExtractUserAgent``).
    """
    match = _TOKEN.match(value)
    return match[0] if match else ""


class _Group:
    """A run of user-agent lines and the rules after it (mutable only while parsing)."""

    __slots__ = ("crawl_delay", "is_global", "lines", "tokens", "values")

    def __init__(self) -> None:
        self.is_global = False
        self.tokens: frozenset[str] | set[str] = set()
        # The rules, column-wise: line number (negative for disallow) and the
        # value as written. Compiled lazily, per crawler.
        self.lines = array("q")
        self.values: list[bytes] | tuple[bytes, ...] = []
        self.crawl_delay: float | None = None


class _Policy:
    """The merged, compiled rules of the groups that apply to one crawler.

    Rules are ranked so that the first one to match a path is the one the
    reference reports: longest (normalised) pattern first, allow before
    disallow on equal length (tie -> allow), then the earlier line.
    """

    __slots__ = ("crawl_delay", "first_match", "lines", "written")

    def __init__(self, groups: list[_Group]) -> None:
        entries: list[tuple[int, bool, int, bytes, bytes]] = []
        for group in groups:
            for line, written in zip(group.lines, group.values, strict=True):
                pattern = escape_pattern(written)
                entries.append((len(pattern), line > 0, abs(line), pattern, written))
                # Google-specific: "allow: /a/index.html" also allows the
                # directory "/a/" itself, with that shorter pattern's priority.
                # (The reference tries it only when the full pattern does not
                # match; when it does, the full pattern outranks this one.)
                slash = pattern.rfind(b"/")
                if line > 0 and slash >= 0 and pattern.startswith(b"/index.htm", slash):
                    entries.append((slash + 2, True, line, pattern[: slash + 1] + b"$", written))
        entries.sort(key=lambda entry: (-entry[0], not entry[1], entry[2]))
        self.first_match = RuleIndex([entry[3] for entry in entries]).first_match
        # By rank: the line, negative when the rule disallows. An empty pattern
        # matches everything with priority 0: it never disallows, but it is
        # the deciding line when nothing longer matched.
        self.lines = array(
            "q", [line if is_allow or not size else -line for size, is_allow, line, _, _ in entries]
        )
        self.written = tuple(entry[4] for entry in entries)
        self.crawl_delay = next(
            (group.crawl_delay for group in groups if group.crawl_delay is not None), None
        )

    def verdict(self, rank: int) -> Verdict:
        if rank == NO_MATCH:
            return _NO_MATCH
        line = self.lines[rank]
        return Verdict(line > 0, abs(line), self.written[rank].decode("utf-8", "replace"))


UserAgent = str | Iterable[str]


class RobotsTxt:
    """A parsed robots.txt. Immutable from the outside and safe to share between threads."""

    __slots__ = ("_authority", "_by_groups", "_groups", "_policies", "_sitemaps")

    def __init__(self, groups: list[_Group], sitemaps: list[str]) -> None:
        self._groups = tuple(groups)
        self._sitemaps = tuple(sitemaps)
        # Filled on demand (racing threads store equal values): user agent ->
        # policy, and the indexes of the applicable groups -> policy, so that
        # crawlers that end up with the same groups share one compiled policy.
        self._policies: dict[object, _Policy] = {}
        self._by_groups: dict[tuple[int, ...], _Policy] = {}
        # The last "http(s)://authority" seen (see _path); initially one that
        # no URL which passes the NUL test in allowed() can start with.
        self._authority = "\0"

    def __repr__(self) -> str:
        rules = sum(len(group.values) for group in self._groups)
        return (
            f"<RobotsTxt groups={len(self._groups)} rules={rules} sitemaps={len(self._sitemaps)}>"
        )

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
        if not policy.lines:
            return True  # no rule applies: nothing to look at
        rank = self._rank(policy, url)
        return rank == NO_MATCH or policy.lines[rank] > 0

    def deciding_line(self, url: str, user_agent: UserAgent) -> int:
        """:meth:`allowed` with the deciding line: the line of the rule that decided,
        negative when it disallows (so ``>= 0`` means allowed), 0 when none matched."""
        try:
            policy = self._policies[user_agent]
        except (KeyError, TypeError):
            policy = self._policy(user_agent)
        if not policy.lines:
            return 0
        rank = self._rank(policy, url)
        return 0 if rank == NO_MATCH else policy.lines[rank]

    def explain(self, url: str, user_agent: UserAgent) -> Verdict:
        """The verdict for ``url`` with the line and rule that decided it."""
        policy = self._policy(user_agent)
        return policy.verdict(self._rank(policy, url))

    def _rank(self, policy: _Policy, url: str) -> int:
        """The rank of the rule deciding ``url`` in ``policy`` (or NO_MATCH)."""
        # The hot path: a URL on the origin of the last one (see _path), in
        # plain ASCII, without fragment or NUL: its path is what follows the
        # authority. Anything else takes the general way.
        authority = self._authority
        if (
            url.startswith(authority)
            and url.startswith("/", len(authority))
            and url.isascii()
            and "#" not in url
            and "\0" not in url
        ):
            return policy.first_match(url[len(authority) :].encode())
        return policy.first_match(self._path(url))

    def _path(self, url: str) -> bytes:
        """``path_params_query`` of the URL's UTF-8 bytes.

        Nearly every URL is "http(s)://authority/path", and nearly every URL
        asked about one robots.txt has the same authority (the file governs
        one origin): the last one seen is remembered for ``allowed``.
        """
        try:
            data = url.encode()
        except UnicodeEncodeError:  # lone surrogates: still bytes, never an error
            data = url.encode("utf-8", "surrogatepass")
        found = HTTP_AUTHORITY(data)
        if found is not None and data[: found.end()].isascii():
            self._authority = data[: found.end()].decode("ascii")
        return path_params_query(data)

    def crawl_delay(self, user_agent: UserAgent) -> float | None:
        """The ``crawl-delay`` of the group(s) that apply to ``user_agent``, if any.

        Google itself ignores crawl-delay; this reads it from the same groups
        that decide allow/disallow (the first valid value wins).
        """
        return self._policy(user_agent).crawl_delay

    def _policy(self, user_agent: UserAgent) -> _Policy:
        key: object = user_agent if isinstance(user_agent, str) else tuple(user_agent)
        policy = self._policies.get(key)
        if policy is not None:
            return policy
        agents: Iterable[str] = (user_agent,) if isinstance(user_agent, str) else key  # type: ignore[assignment]
        tokens = {product_token(agent).lower() for agent in agents}
        groups = self._groups
        chosen = tuple(i for i, group in enumerate(groups) if not tokens.isdisjoint(group.tokens))
        if not chosen:
            # The groups naming the crawler shadow the global ones completely;
            # only when none names it do the global groups apply.
            chosen = tuple(i for i, group in enumerate(groups) if group.is_global)
        policy = self._by_groups.get(chosen)
        if policy is None:
            policy = _Policy([groups[i] for i in chosen])
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
    for number, key, value in directives(data, _KEY_STARTS):
        kind = EXACT_KEYS.get(key.lower()) or classify_key(key)[0]
        if kind is _DISALLOW or kind is _ALLOW:
            builder.rule(number if kind is _ALLOW else -number, value)
        elif kind is _USER_AGENT:
            builder.user_agent(value)
        elif kind is _SITEMAP:
            if value:
                builder.sitemaps.append(value.decode("utf-8", "replace"))
        elif len(key) == len(_CRAWL_DELAY_KEY) and key.lower() == _CRAWL_DELAY_KEY:
            builder.crawl_delay(value)
    return builder.build()


_ALLOW = LineKind.ALLOW
_DISALLOW = LineKind.DISALLOW
_USER_AGENT = LineKind.USER_AGENT
_SITEMAP = LineKind.SITEMAP


class _Builder:
    """Groups the directives the way the reference's matcher state machine does."""

    __slots__ = ("group", "group_has_rules", "groups", "sitemaps")

    def __init__(self) -> None:
        self.groups: list[_Group] = []
        self.group: _Group | None = None
        self.group_has_rules = False
        self.sitemaps: list[str] = []

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
        else:
            token = _TOKEN_BYTES.match(value)[0]  # type: ignore[index]
            group.tokens.add(sys.intern(token.decode("ascii").lower()))  # type: ignore[union-attr]

    def rule(self, line: int, value: bytes) -> None:
        """A rule at ``line`` (negative for disallow); ignored before any user-agent line."""
        group = self.group
        if group is not None:
            group.lines.append(line)
            group.values.append(value)  # type: ignore[union-attr]
            self.group_has_rules = True

    def crawl_delay(self, value: bytes) -> None:
        group = self.group
        if group is not None and group.crawl_delay is None and _CRAWL_DELAY.fullmatch(value):
            group.crawl_delay = float(value)

    def build(self) -> RobotsTxt:
        for group in self.groups:  # freeze: compact and immutable from here on
            group.tokens = frozenset(group.tokens)
            group.values = tuple(group.values)
        return RobotsTxt(self.groups, self.sitemaps)
