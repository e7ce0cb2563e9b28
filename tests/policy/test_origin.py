"""origin_of(): the scope of a robots.txt (SPEC B1)."""

from __future__ import annotations

import pytest

from scrapy_googlerobots.policy.origin import DEFAULT_PORTS, Origin, ascii_host, origin_of

# url, expected key, expected robots.txt URL
SAME_ORIGIN = [
    pytest.param(
        "http://example.com/",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="B1_plain_http",
    ),
    pytest.param(
        "http://example.com:80/a",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="B1_default_port_http_folded",
    ),
    pytest.param(
        "https://example.com:443/",
        "https://example.com:443",
        "https://example.com/robots.txt",
        id="B1_default_port_https_folded",
    ),
    pytest.param(
        "ftp://example.com:21/pub/x",
        "ftp://example.com:21",
        "ftp://example.com/robots.txt",
        id="B1_default_port_ftp_folded",
    ),
    pytest.param(
        "http://example.com:8181/",
        "http://example.com:8181",
        "http://example.com:8181/robots.txt",
        id="B1_other_port_kept",
    ),
    pytest.param(
        "http://example.com:0080/",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="port_leading_zeros_numeric",
    ),
    pytest.param(
        "http://example.com:/",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="rfc3986_empty_port_is_default",
    ),
    pytest.param(
        "http://EXAMPLE.Com/Path",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="B1_host_case_insensitive",
    ),
    pytest.param(
        "HTTPS://example.com/",
        "https://example.com:443",
        "https://example.com/robots.txt",
        id="scheme_case_insensitive",
    ),
    pytest.param(
        "https://www.müller.eu/",
        "https://www.xn--mller-kva.eu:443",
        "https://www.xn--mller-kva.eu/robots.txt",
        id="B1_idna_to_punycode",
    ),
    pytest.param(
        "https://WWW.MÜLLER.EU/",
        "https://www.xn--mller-kva.eu:443",
        "https://www.xn--mller-kva.eu/robots.txt",
        id="B1_idna_uppercase_mapped",
    ),
    pytest.param(
        "https://www.XN--MLLER-KVA.eu/",
        "https://www.xn--mller-kva.eu:443",
        "https://www.xn--mller-kva.eu/robots.txt",
        id="B1_punycode_case_folded",
    ),
    pytest.param(
        "http://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com/",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="uts46_fullwidth_mapped",
    ),
    pytest.param(
        "http://例子。测试/",
        "http://xn--fsqu00a.xn--0zwm56d:80",
        "http://xn--fsqu00a.xn--0zwm56d/robots.txt",
        id="uts46_ideographic_full_stop",
    ),
    pytest.param(
        "http://☃.net/",
        "http://xn--n3h.net:80",
        "http://xn--n3h.net/robots.txt",
        id="idna2003_fallback_like_scrapy",
    ),
    pytest.param(
        "http://a_b.example/",
        "http://a_b.example:80",
        "http://a_b.example/robots.txt",
        id="ascii_underscore_accepted_like_scrapy",
    ),
    pytest.param(
        "http://example.com./x",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="trailing_dot_folded",
    ),
    pytest.param(
        "http://münchen.de./",
        "http://xn--mnchen-3ya.de:80",
        "http://xn--mnchen-3ya.de/robots.txt",
        id="trailing_dot_folded_idna",
    ),
    pytest.param(
        "http://user:secret@example.com/",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="userinfo_ignored",
    ),
    pytest.param(
        "http://a@b@example.com:8080/",
        "http://example.com:8080",
        "http://example.com:8080/robots.txt",
        id="userinfo_ends_at_last_at",
    ),
    pytest.param(
        "http://127.0.0.1:8080/x",
        "http://127.0.0.1:8080",
        "http://127.0.0.1:8080/robots.txt",
        id="B1_ipv4_literal",
    ),
    pytest.param(
        "http://[::1]/", "http://[::1]:80", "http://[::1]/robots.txt", id="B1_ipv6_literal"
    ),
    pytest.param(
        "http://[0:0:0:0:0:0:0:1]:8080/",
        "http://[::1]:8080",
        "http://[::1]:8080/robots.txt",
        id="ipv6_compressed_form",
    ),
    pytest.param(
        "https://[2001:DB8::A]/",
        "https://[2001:db8::a]:443",
        "https://[2001:db8::a]/robots.txt",
        id="ipv6_lowercase",
    ),
    pytest.param(
        "http://[fe80::1%25eth0]/",
        "http://[fe80::1%25eth0]:80",
        "http://[fe80::1%25eth0]/robots.txt",
        id="rfc6874_ipv6_zone_id",
    ),
    pytest.param(
        "http://example.com", "http://example.com:80", "http://example.com/robots.txt", id="no_path"
    ),
    pytest.param(
        "http://example.com?q",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="query_ends_authority",
    ),
    pytest.param(
        "http://example.com#f",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="fragment_ends_authority",
    ),
    pytest.param(
        " \thttp://example.com/",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="leading_whitespace_stripped_like_urllib",
    ),
    pytest.param(
        "http://exa\tmple.com/",
        "http://example.com:80",
        "http://example.com/robots.txt",
        id="tab_in_authority_dropped_like_urllib",
    ),
]


@pytest.mark.parametrize(("url", "key", "robots_url"), SAME_ORIGIN)
def test_origin_key_and_robots_url(url: str, key: str, robots_url: str) -> None:
    origin = origin_of(url)
    assert origin is not None
    assert origin.key == key
    assert origin.robots_url == robots_url


@pytest.mark.parametrize(
    ("url", "scheme", "host", "port"),
    [
        pytest.param("http://Example.com/", "http", "example.com", 80, id="fast_path"),
        pytest.param("HTTP://Example.com/", "http", "example.com", 80, id="slow_path"),
        pytest.param("https://[::1]:8443/", "https", "::1", 8443, id="ipv6_host_without_brackets"),
    ],
)
def test_origin_fields(url: str, scheme: str, host: str, port: int) -> None:
    assert origin_of(url) == Origin(scheme, host, port)
    assert type(origin_of(url)) is Origin


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param("http://example.com/", "https://example.com/", id="B1_http_vs_https"),
        pytest.param("http://example.com/", "http://www.example.com/", id="B1_subdomain"),
        pytest.param("http://example.com/", "http://example.com:8181/", id="B1_other_port"),
        pytest.param("http://example.com:443/", "https://example.com/", id="B1_port_not_scheme"),
        pytest.param("http://127.0.0.1/", "http://localhost/", id="B1_ip_is_own_origin"),
        pytest.param("http://[::1]/", "http://127.0.0.1/", id="ipv6_vs_ipv4_loopback"),
    ],
)
def test_different_origins(a: str, b: str) -> None:
    origin_a, origin_b = origin_of(a), origin_of(b)
    assert origin_a is not None and origin_b is not None
    assert origin_a.key != origin_b.key


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("data:text/plain,hello", id="data"),
        pytest.param("file:///etc/passwd", id="file"),
        pytest.param("s3://bucket/key", id="s3"),
        pytest.param("about:blank", id="about"),
        pytest.param("mailto:someone@example.com", id="mailto"),
        pytest.param("gs://bucket/key", id="gs"),
        pytest.param("httpx://example.com/", id="scheme_prefix_is_not_http"),
        pytest.param("localhost:8080/x", id="host_port_reads_as_scheme_like_urllib"),
    ],
)
def test_schemes_without_robots_txt(url: str) -> None:
    assert origin_of(url) is None


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("http:///path", id="http_without_host"),
        pytest.param("http:/path", id="http_single_slash"),
        pytest.param("http:example.com", id="http_without_slashes"),
        pytest.param("https://", id="https_nothing"),
        pytest.param("ftp://user@/", id="ftp_userinfo_only"),
        pytest.param("http://:8080/", id="port_without_host"),
        pytest.param("http://example.com:0/", id="port_zero"),
        pytest.param("http://example.com:65536/", id="port_too_large"),
        pytest.param("http://example.com:123456/", id="port_six_digits"),
        pytest.param("http://example.com:http/", id="port_non_numeric"),
        pytest.param("http://example.com:-1/", id="port_negative"),
        pytest.param("http://example.com:8080:90/", id="port_two_colons"),
        pytest.param("http://a..b/", id="empty_label"),
        pytest.param("http://.example.com/", id="leading_dot"),
        pytest.param("http://example.com../", id="two_trailing_dots"),
        pytest.param("http://exa mple.com/", id="space_in_host"),
        pytest.param("http://ex%41mple.com/", id="percent_in_host"),
        pytest.param("http://[::1/", id="ipv6_unclosed"),
        pytest.param("http://[::1]x/", id="ipv6_garbage_after_bracket"),
        pytest.param("http://[not-an-ip]/", id="ipv6_invalid"),
        pytest.param("http://a\u200b\u0000b.com/", id="idna_invalid_codepoints"),
        pytest.param("example.com/a", id="no_scheme"),
        pytest.param("", id="empty"),
    ],
)
def test_invalid_urls_raise_value_error(url: str) -> None:
    with pytest.raises(ValueError):
        origin_of(url)


@pytest.mark.parametrize("port", [1, 65535])
def test_port_range_bounds_accepted(port: int) -> None:
    origin = origin_of(f"http://example.com:{port}/")
    assert origin is not None and origin.port == port


def test_fast_and_slow_paths_agree() -> None:
    # The uppercase scheme forces the general path; the answers must match.
    for url in ("http://Example.COM:8080/x", "https://a-b_c.example./", "ftp://1.2.3.4/"):
        fast = origin_of(url)
        slow = origin_of(url.replace(url.split(":", 1)[0], url.split(":", 1)[0].upper(), 1))
        assert fast == slow


def test_default_ports_read_only() -> None:
    with pytest.raises(TypeError):
        DEFAULT_PORTS["gopher"] = 70  # type: ignore[index]


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param("Example.COM", "example.com", id="ascii_lowercased"),
        pytest.param("xn--MLLER-kva.eu", "xn--mller-kva.eu", id="punycode_not_revalidated"),
        pytest.param("müller.eu.", "xn--mller-kva.eu", id="idna_trailing_dot"),
    ],
)
def test_ascii_host(host: str, expected: str) -> None:
    assert ascii_host(host) == expected
