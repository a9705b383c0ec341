"""splicer.balance key extraction: source, uri, url_param, hdr (haproxy get_server_sh/uh/ph/hh)."""
from splicer.balance.hashing import gen_hash, sdbm
from splicer.balance.hdr import domain_only, hdr_key, header_value
from splicer.balance.key import key_function
from splicer.balance.source import source_key
from splicer.balance.uri import uri_key, uri_part
from splicer.balance.url_param import url_param_key, url_param_value
from splicer.config.model import Balance, HashType


def test_uri_part_stops_at_the_query_unless_whole():
    assert uri_part(b"/img/a/b.png?v=2") == b"/img/a/b.png"
    assert uri_part(b"/img/a/b.png?v=2", whole=True) == b"/img/a/b.png?v=2"


def test_uri_part_len_and_depth():
    assert uri_part(b"/img/a/b.png", length=6) == b"/img/a"
    assert uri_part(b"/img/a/b.png", depth=1) == b"/img"
    assert uri_part(b"/img/a/b.png", depth=2) == b"/img/a"
    assert uri_part(b"/img/a/b.png", depth=5) == b"/img/a/b.png"
    assert uri_part(b"/img/a/b.png?q", length=4, depth=2) == b"/img"  # the first limit reached wins


def test_uri_part_path_only_skips_the_authority():
    assert uri_part(b"http://example.com/a?x", path_only=True) == b"/a"


def test_uri_key_hashes_with_the_hash_type():
    assert uri_key(b"/index.html?x=1") == 0x33242976
    assert uri_key(b"/index.html", function="djb2") == 0xE114B9CF


def test_url_param_value_and_key():
    assert url_param_value(b"/cart?user=42&x=1", b"user") == b"42"
    assert url_param_value(b"/cart?x=1&user=42", b"user") == b"42"
    assert url_param_value(b"/cart?username=1&user=7", b"user") == b"7"
    assert url_param_value(b"/cart?user=", b"user") == b""
    assert url_param_value(b"/cart?user", b"user") is None
    assert url_param_value(b"/cart", b"user") is None
    assert url_param_value(b"/cart?User=1", b"user") is None  # names are case-sensitive
    assert url_param_key(b"/cart?user=42", b"user") == sdbm(b"42")
    assert url_param_key(b"/cart", b"user") is None


def test_header_value_is_the_first_value_of_the_first_field():
    headers = [(b"Host", b"www.example.com"), (b"X-User", b" alice , bob"), (b"x-user", b"carol")]
    assert header_value(headers, b"x-user") == b"alice"
    assert header_value(headers, b"HOST") == b"www.example.com"
    assert header_value(headers, b"cookie") is None


def test_hdr_key_empty_or_missing_has_no_key():
    assert hdr_key([(b"X-User", b"")], b"x-user") is None
    assert hdr_key([], b"x-user") is None
    assert hdr_key([(b"X-User", b"alice")], b"x-user") == sdbm(b"alice")


def test_use_domain_only_keeps_the_label_before_the_last_dot():
    assert domain_only(b"haproxy.1wt.eu") == b"1wt"
    assert domain_only(b"example.com") == b"example"
    assert domain_only(b"localhost") == b"localhost"
    assert hdr_key([(b"Host", b"www.1wt.eu")], b"host", use_domain_only=True) == sdbm(b"1wt")


def test_source_key_without_an_address_is_none():
    assert source_key("10.0.0.1") == 0x0A000001
    assert source_key("unknown") is None


def test_key_function_per_algorithm():
    ht = HashType("map-based", "djb2", False)
    headers = [(b"Host", b"a.example.com")]
    assert key_function(Balance("roundrobin"), ht) is None
    assert key_function(Balance("random"), ht) is None
    assert key_function(Balance("source"), ht)(b"/", headers, "10.0.0.1") == 0x0A000001
    assert key_function(Balance("uri", uri_depth=1), ht)(b"/a/b", headers, "") == gen_hash(b"/a", "djb2")
    assert key_function(Balance("url_param", param="u"), ht)(b"/?u=1", headers, "") == gen_hash(b"1", "djb2")
    assert key_function(Balance("hdr", param="host"), HashType())(b"/", headers, "") == sdbm(b"a.example.com")
    assert key_function(Balance("hdr", param="host", use_domain_only=True),
                        HashType())(b"/", headers, "") == sdbm(b"example")
