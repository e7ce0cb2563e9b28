"""The scope of a robots.txt: the origin (scheme, host, port) of a URL (SPEC B1).

:func:`origin_of` runs once per request on the middleware's hot path, so the
common shape (``http(s)://plain-ascii-host[:port]/...``) is handled by a
single precompiled regular expression; everything else (user info, IPv6
literals, non-ASCII hosts, odd case in the scheme) takes a slower, general
path. Both paths give the same answer for the same origin.

Host decisions, beyond SPEC B1:

- ASCII host names are only lowercased. For an all-ASCII label, IDNA's
  ToASCII is lowercasing plus validation, and validating would reject names
  Scrapy happily connects to (``a_b.example``, malformed ``xn--`` labels), so
  the key stays equal to the host Scrapy actually contacts.
- Non-ASCII host names go through UTS 46 (``idna.encode(host, uts46=True)``);
  names IDNA 2008 rejects but IDNA 2003 accepts (``☃.net``) fall back to the
  standard library's IDNA 2003 codec, the same conversion Scrapy's own URL
  handling applies before connecting.
- One trailing dot is dropped: ``example.com.`` is the fully qualified spelling
  of ``example.com``, the same server, and must not escape that site's rules.
- IPv4 literals are kept as written; IPv6 literals are normalised to their
  compressed form (``[0:0::1]`` ≡ ``[::1]``) and keep their brackets in keys
  and URLs. An IP host is never merged with a name that resolves to it.
- User info (``user:pass@``) is not part of the origin.
- Ports: an empty port (``host:``) is the default one (RFC 3986); a port must
  be 1-65535 in ASCII digits, anything else raises ValueError, as does an
  http/https/ftp URL without a host or with an invalid one.
- The authority is read as urllib (and so Scrapy's download handlers) reads
  it: it ends at the first ``/``, ``?`` or ``#``; user info ends at the last
  ``@``; tabs and line breaks in it are dropped.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

import idna

__all__ = [
    "DEFAULT_PORTS",
    "ROBOTS_TXT",
    "FileKind",
    "Origin",
    "OriginMemo",
    "OriginRef",
    "ascii_host",
    "origin_of",
]

#: Schemes that have a robots.txt, with their default ports (SPEC B1).
DEFAULT_PORTS: Mapping[str, int] = MappingProxyType({"http": 80, "https": 443, "ftp": 21})

# The common case in one match: lowercase robots scheme, plain ASCII host
# (any case, not starting with a dot), optional numeric port, then the end of
# the authority. Empty labels and a trailing dot are checked after the match:
# spelling them out in the pattern doubles its cost.
_FAST = re.compile(r"(https?|ftp)://([A-Za-z0-9_\-][A-Za-z0-9_.\-]*)(?::([0-9]{1,5}))?(?=[/?#]|\Z)")
# General shape: any scheme; the authority when "//" follows it.
_HEAD = re.compile(r"[\x00-\x20]*([A-Za-z][A-Za-z0-9+.\-]*):(?://([^/?#]*))?")
_ASCII_HOST = re.compile(r"[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*")
_PORT = re.compile(r"[0-9]*")


class Origin(NamedTuple):
    """One robots.txt scope: lowercase scheme, canonical ASCII host, explicit port."""

    scheme: str
    host: str
    port: int

    @property
    def key(self) -> str:
        """``scheme://host:port`` with the port always written: the store key."""
        return f"{self.scheme}://{self._netloc_host()}:{self.port}"

    @property
    def robots_url(self) -> str:
        """The URL of this origin's robots.txt (default port omitted)."""
        host = self._netloc_host()
        if self.port != DEFAULT_PORTS[self.scheme]:
            host = f"{host}:{self.port}"
        return f"{self.scheme}://{host}/robots.txt"

    def _netloc_host(self) -> str:
        if ":" not in self.host:
            return self.host
        # IPv6 literal: bracketed, and a zone id's "%" escaped (RFC 6874).
        return "[" + self.host.replace("%", "%25") + "]"


_new_origin = tuple.__new__


def origin_of(url: str) -> Origin | None:
    """The origin whose robots.txt governs ``url``.

    None for schemes without robots.txt (anything but http, https, ftp).
    Raises ValueError when the URL has no scheme, or when an http/https/ftp URL
    has a missing or invalid host or port.
    """
    match = _FAST.match(url)
    if match is None:
        return _origin_slow(url)
    scheme, host, port = match.groups()
    if ".." in host or host[-1] == ".":
        return _origin_slow(url)
    # tuple.__new__ skips the NamedTuple's Python-level __new__ (hot path).
    if port is None:
        return _new_origin(Origin, (scheme, host.lower(), DEFAULT_PORTS[scheme]))
    return _new_origin(Origin, (scheme, host.lower(), _port(scheme, port, url)))


def _origin_slow(url: str) -> Origin | None:
    match = _HEAD.match(url)
    if match is None:
        raise ValueError(f"URL without a scheme: {url!r}")
    scheme = match[1].lower()
    if scheme not in DEFAULT_PORTS:
        return None
    authority = match[2]
    if not authority:
        raise ValueError(f"{scheme} URL without a host: {url!r}")
    # As urllib (and so Scrapy's download handlers) reads it: tabs and line
    # breaks are dropped, user info ends at the last "@".
    authority = authority.replace("\t", "").replace("\r", "").replace("\n", "")
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        literal, bracket, rest = hostport[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"invalid IPv6 host in URL {url!r}")
        host = _ipv6(literal, url)
        port = rest[1:] if rest else None
    else:
        raw_host, colon, raw_port = hostport.partition(":")
        host = ascii_host(raw_host)
        port = raw_port if colon else None
    return Origin(scheme, host, _port(scheme, port, url))


def ascii_host(host: str) -> str:
    """``host`` (a registered name) in canonical ASCII form: lowercase, punycode.

    Raises ValueError for an empty or malformed name.
    """
    if host.isascii():
        host = host.lower()
    else:
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError:
            try:
                # IDNA 2003, as Scrapy (w3lib) converts names IDNA 2008 refuses.
                host = host.lower().encode("idna").decode("ascii")
            except UnicodeError:
                raise ValueError(f"invalid host name {host!r}") from None
    if host.endswith("."):
        host = host[:-1]
    if _ASCII_HOST.fullmatch(host) is None:
        raise ValueError(f"invalid host name {host!r}")
    return host


def _ipv6(literal: str, url: str) -> str:
    # A zone id is written "%25eth0" in URLs (RFC 6874); ipaddress wants "%eth0".
    try:
        return ipaddress.IPv6Address(literal.replace("%25", "%", 1)).compressed
    except ValueError:
        raise ValueError(f"invalid IPv6 host in URL {url!r}") from None


def _port(scheme: str, port: str | None, url: str) -> int:
    # An empty port ("host:") means the default one (RFC 3986 section 3.2.3).
    if not port:
        return DEFAULT_PORTS[scheme]
    if _PORT.fullmatch(port) is None:
        raise ValueError(f"non-numeric port in URL {url!r}")
    number = int(port)
    if not 0 < number < 65536:
        raise ValueError(f"port out of range in URL {url!r}")
    return number


class OriginRef:
    """An origin and its store key (computed once: the hot path reads it per request)."""

    __slots__ = ("key", "origin")

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.key = origin.key


# Largest scheme://authority prefix remembered by the origin memo (longer
# ones, e.g. huge data: URLs, are resolved each time instead of stored).
_MEMO_KEY_MAX = 512
# Entries of the origin memo (cleared when full): a few times the origins with
# requests in flight, independent of how many origins the crawl meets.
_MEMO_SIZE = 10_000
_UNSEEN: object = object()


class OriginMemo:
    """The origin of a URL, remembered by its ``scheme://authority`` prefix.

    The prefix is the URL up to the first "/" from index 8, which always holds
    the whole scheme://authority of an http(s)/ftp URL (the authority starts at
    index 6 to 8 and has no "/"), so equal prefixes mean equal origins; other
    schemes map to None whatever the prefix holds. The middleware's hot path
    reads :attr:`refs` itself. ``not_checked(url, error)``: a URL whose origin
    is invalid (its download fails on its own; there is no robots.txt to ask).
    """

    __slots__ = ("_not_checked", "refs")

    def __init__(self, not_checked: Callable[[str, ValueError], None]) -> None:
        self.refs: dict[str, OriginRef | None] = {}
        self._not_checked = not_checked

    def ref(self, url: str) -> OriginRef | None:
        """The origin of ``url`` (None: no robots.txt, e.g. ``data:``)."""
        cut = url.find("/", 8)
        ref = self.refs.get(url if cut < 0 else url[:cut], _UNSEEN)
        return self.resolve(url, cut) if ref is _UNSEEN else ref  # type: ignore[return-value]

    def resolve(self, url: str, cut: int) -> OriginRef | None:
        """The origin of ``url`` (``cut``: the index its prefix ends at), remembered."""
        prefix = url if cut < 0 else url[:cut]
        try:
            origin = origin_of(url)
        except ValueError as exc:
            self._not_checked(url, exc)
            origin = None
        ref = None if origin is None else OriginRef(origin)
        if len(prefix) <= _MEMO_KEY_MAX:
            if len(self.refs) >= _MEMO_SIZE:
                self.refs.clear()
            self.refs[prefix] = ref
        return ref


_ROBOTS_PATH = "/robots.txt"


@dataclass(frozen=True)
class FileKind:
    """What a policy file is, without a crawl: its name, stats and store prefixes, its path."""

    name: str
    """How log lines and reasons name it: ``"robots.txt"``, ``"tdmrep.json"``."""
    stats: str
    """Prefix of its fetch stats: ``"robotstxt/"``, ``"robotstxt/tdmrep/"``."""
    store_prefix: str
    """Prefix of its store keys before the origin key (``""`` for robots.txt)."""
    path: str
    """Its path on an origin: ``"/robots.txt"``, ``"/.well-known/tdmrep.json"``."""
    schemes: frozenset[str] | None = None
    """The URL schemes of origins that have one (None: every origin robots.txt knows)."""

    def url_for(self, origin: Origin) -> str | None:
        """Its URL for ``origin`` (default port omitted); None for an origin of another scheme."""
        if self.schemes is not None and origin.scheme not in self.schemes:
            return None
        return origin.robots_url[: -len(_ROBOTS_PATH)] + self.path

    def stat(self, name: str) -> str:
        """Its name of the fetch stat robots.txt's is ``name``: ``robotstxt/request_count`` ->
        ``robotstxt/tdmrep/request_count`` for tdmrep.json (the same name for robots.txt)."""
        return self.stats + name.removeprefix("robotstxt/")

    def origin_key(self, key: str) -> str:
        """The origin key of one of its store keys (``tdmrep|https://a:443`` -> ``https://a:443``)."""
        return key.removeprefix(self.store_prefix)


ROBOTS_TXT = FileKind("robots.txt", "robotstxt/", "", _ROBOTS_PATH)
"""robots.txt: every origin has one, keyed by the origin key itself."""
