"""AI usage preferences: ``Content-Usage`` and ``Content-Signal`` lines and the header.

Two syntaxes say which uses of its content a site accepts:

- IETF AI Preferences (draft-ietf-aipref-attach-05, vocabulary
  draft-ietf-aipref-vocab-08): ``Content-Usage: [path] train-ai=n, search=y``
  in a user-agent group, and the same Dictionary in the ``Content-Usage``
  HTTP response header. Keys ``train-ai``, ``ai-use``, ``search``; values the
  tokens ``y`` / ``n``.
- Content Signals (contentsignals.org): ``Content-Signal: [path] search=yes,
  ai-input=yes, ai-train=no`` in a group. ``ai-train`` is read as
  ``train-ai``, ``ai-input`` as ``ai-use``, ``search`` as ``search``, the
  tokens ``yes`` / ``no`` as ``y`` / ``n``.

Google's parser knows both keys and ignores them (``kUnsupportedTags`` in
google/robotstxt ``reporting_robots.cc``): they neither start nor end a group,
so allow/disallow verdicts are exactly Google's, and the lines belong to the
group Google's grouping puts them in (as ``Crawl-delay`` does).

Choices where the drafts are silent (or the two syntaxes differ):

1. A ``Content-Signal`` value is parsed as an RFC 9651 Dictionary, like a
   ``Content-Usage`` value: its ``key=value`` pairs are Dictionary members and
   ``yes`` / ``no`` are Tokens. A value that is not a valid Dictionary gives
   every category unknown, as for ``Content-Usage``.
2. Each directive has its own vocabulary, strictly: ``train-ai=n`` in a
   ``Content-Signal`` line, ``ai-train=n`` in a ``Content-Usage`` line, ``y``
   / ``n`` in ``Content-Signal`` and ``yes`` / ``no`` in ``Content-Usage`` are
   unknown (``googlerobots lint`` reports each). Keys and values are
   case-sensitive in both.
3. Parameters on a member (``train-ai=n;x=1``) are ignored; a member without a
   value (``train-ai``, Boolean true) or with any other value (a String, an
   inner list) leaves its category unknown.
4. The path: when the whole value is not a valid Dictionary, its first word
   (up to a space or tab) is the path if it starts with ``/`` or ``*``, or if
   it holds no ``=`` (``images/ train-ai=n``: the path ``images/``, which, like
   an allow/disallow pattern that does not start with ``/`` or ``*``, matches
   no URL); the rest is the Dictionary. Otherwise the line is pathless.
5. A pathless rule is the pattern ``/``: it matches every path with length 1,
   so a ``/`` rule that disagrees with it ties and "no" wins.
6. Pattern length is the length of the normalised pattern (``%xx`` escapes
   upper-cased, non-ASCII bytes escaped), exactly as for allow/disallow.
   Google's ``/index.html`` -> ``/`` allowance is an allow-rule quirk and does
   not apply to usage rules.
7. Equal-length rules that agree: the earliest line is the deciding line.
8. The groups that apply are Google's for the product token: a group naming
   the crawler shadows ``*`` completely, also when it holds no usage rule
   (then every category is unknown), and lines in several groups naming the
   same crawler are merged, as allow/disallow rules are.
9. A usage line before any user-agent line is ignored (as a rule there is).
10. In the header, the caller joins several ``Content-Usage`` field lines with
    ``", "`` (RFC 9651 section 4.2); a malformed value is ignored whole.
"""

from __future__ import annotations

from typing import NamedTuple

from ._sf import Member, Token, parse_dictionary

__all__ = [
    "CONTENT_SIGNAL",
    "CONTENT_USAGE",
    "USAGE_CATEGORIES",
    "USAGE_DIRECTIVES",
    "USAGE_VOCABULARIES",
    "UsageLine",
    "UsageRule",
    "parse_usage_header",
    "parse_usage_line",
    "usage_category",
]

#: The categories of the IETF vocabulary (draft-ietf-aipref-vocab-08), by their IETF names.
USAGE_CATEGORIES: tuple[str, ...] = ("train-ai", "ai-use", "search")

CONTENT_USAGE = "Content-Usage"
CONTENT_SIGNAL = "Content-Signal"

#: Per directive: (its keys -> IETF category, its value tokens -> allowed).
USAGE_VOCABULARIES: dict[str, tuple[dict[str, str], dict[str, bool]]] = {
    CONTENT_USAGE: ({name: name for name in USAGE_CATEGORIES}, {"y": True, "n": False}),
    CONTENT_SIGNAL: (
        {"ai-train": "train-ai", "ai-input": "ai-use", "search": "search"},
        {"yes": True, "no": False},
    ),
}
_ANY_NAME = {**USAGE_VOCABULARIES[CONTENT_SIGNAL][0], **USAGE_VOCABULARIES[CONTENT_USAGE][0]}

#: Lower-cased robots.txt keys of the usage directives -> their names.
USAGE_DIRECTIVES = {b"content-usage": CONTENT_USAGE, b"content-signal": CONTENT_SIGNAL}


def usage_category(name: str) -> str | None:
    """The IETF name of a category named in either vocabulary, else None.

    ``"train-ai"`` and ``"ai-train"`` give ``"train-ai"``; ``"ai-use"`` and
    ``"ai-input"`` give ``"ai-use"``; ``"search"`` gives ``"search"``. Names
    are case-sensitive, as keys are in both syntaxes.
    """
    return _ANY_NAME.get(name)


class UsageRule(NamedTuple):
    """The rule that gives one category its value for a URL."""

    category: str
    """The IETF name (``train-ai``, ``ai-use``, ``search``)."""
    allowed: bool
    """``y`` / ``yes``: True; ``n`` / ``no``: False."""
    line: int
    """1-based robots.txt line; 0 when the preference comes from an HTTP header."""
    directive: str
    """``"Content-Usage"`` or ``"Content-Signal"``."""
    path: str
    """The rule's path pattern as written; ``""`` for a pathless rule."""


class UsageLine(NamedTuple):
    """A usage line's value, taken apart (what the rule set and the linter both read)."""

    path: bytes
    """The path pattern as written; ``b""`` when the line has none."""
    preferences: bytes
    """The Dictionary text after the path."""
    members: dict[str, Member] | None
    """The Dictionary's members (key -> (value, parameters)); None when it is not valid."""
    values: dict[str, bool]
    """IETF category -> allowed, for the members that give one."""


def parse_usage_line(directive: str, value: bytes) -> UsageLine:
    """Take a (stripped) ``Content-Usage`` / ``Content-Signal`` value apart (choice 4)."""
    members = parse_dictionary(value)
    path = b""
    preferences = value
    if members is None:
        word, _, rest = value.replace(b"\t", b" ").partition(b" ")
        if rest and (word[:1] in (b"/", b"*") or b"=" not in word):
            path = value[: len(word)]
            preferences = rest.strip(b" ")
            members = parse_dictionary(preferences)
    return UsageLine(path, preferences, members, _values(directive, members))


def _values(directive: str, members: dict[str, Member] | None) -> dict[str, bool]:
    if not members:
        return {}
    keys, tokens = USAGE_VOCABULARIES[directive]
    values: dict[str, bool] = {}
    for key, member in members.items():
        category = keys.get(key)
        if category is None:
            continue  # an unknown key is ignored
        bare = member[0]
        if bare.__class__ is Token and bare in tokens:
            values[category] = tokens[bare]
    return values


def parse_usage_header(value: bytes | str) -> dict[str, bool]:
    """The ``Content-Usage`` HTTP response header: IETF category -> allowed.

    An RFC 9651 Dictionary in the IETF vocabulary. A malformed value gives
    ``{}``; an unknown key is ignored; a value other than the tokens ``y`` /
    ``n`` leaves that category out (unknown); a repeated key: the last wins.
    Several field lines: the caller joins them with ``b", "``.
    """
    return _values(CONTENT_USAGE, parse_dictionary(value))
