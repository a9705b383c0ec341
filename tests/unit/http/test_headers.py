"""splicer.http.headers: tokens, hop-by-hop removal, X-Forwarded-For, serialization."""
import pytest

from splicer.http.headers import (
    HOP_BY_HOP,
    append_forwarded_for,
    serialize,
    strip_hop_by_hop,
    tokens,
)


def test_tokens_are_lowercased_stripped_and_in_order():
    h = [(b"Connection", b" Keep-Alive ,X-Foo"), (b"Host", b"a, b"), (b"CONNECTION", b"Upgrade")]
    assert tokens(h, b"connection") == [b"keep-alive", b"x-foo", b"upgrade"]


def test_tokens_drop_empty_list_elements():
    assert tokens([(b"Connection", b",, close ,,\t,")], b"connection") == [b"close"]


def test_tokens_of_absent_field_is_empty():
    assert tokens([(b"Host", b"x")], b"connection") == []


def test_hop_by_hop_set_is_the_rfc_list_plus_legacy():
    assert HOP_BY_HOP == {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authenticate",
                          b"proxy-authorization", b"te", b"trailer", b"transfer-encoding", b"upgrade"}


def test_strip_hop_by_hop_removes_every_listed_field_case_insensitively():
    h = [(b"Host", b"x"), (b"CONNECTION", b"close"), (b"Keep-Alive", b"timeout=5"),
         (b"proxy-connection", b"keep-alive"), (b"Proxy-Authenticate", b"Basic"),
         (b"Proxy-Authorization", b"Basic eA=="), (b"TE", b"trailers"), (b"Trailer", b"X-Sum"),
         (b"Transfer-Encoding", b"chunked"), (b"Upgrade", b"websocket"), (b"Accept", b"*/*")]
    assert strip_hop_by_hop(h) == [(b"Host", b"x"), (b"Accept", b"*/*")]


def test_strip_hop_by_hop_removes_fields_named_in_connection():
    h = [(b"Connection", b"X-Foo, x-BAR"), (b"x-foo", b"1"), (b"X-Bar", b"2"), (b"X-Baz", b"3"),
         (b"X-FOO", b"4"), (b"connection", b"X-Qux"), (b"X-Qux", b"5")]
    assert strip_hop_by_hop(h) == [(b"X-Baz", b"3")]


def test_strip_hop_by_hop_keeps_order_case_and_duplicates():
    h = [(b"X-a", b"1"), (b"Set-Cookie", b"a=1"), (b"x-A", b"2"), (b"Set-Cookie", b"b=2")]
    out = strip_hop_by_hop(h)
    assert out == h
    assert out is not h


def test_strip_hop_by_hop_does_not_modify_its_input():
    h = [(b"Connection", b"close"), (b"Host", b"x")]
    strip_hop_by_hop(h)
    assert h == [(b"Connection", b"close"), (b"Host", b"x")]


def test_append_forwarded_for_adds_last_field_and_leaves_input():
    h = [(b"Host", b"x"), (b"X-Forwarded-For", b"198.51.100.7")]
    out = append_forwarded_for(h, "192.0.2.1")
    assert out == [(b"Host", b"x"), (b"X-Forwarded-For", b"198.51.100.7"), (b"X-Forwarded-For", b"192.0.2.1")]
    assert h == [(b"Host", b"x"), (b"X-Forwarded-For", b"198.51.100.7")]


def test_append_forwarded_for_ipv6():
    assert append_forwarded_for([], "2001:db8::1") == [(b"X-Forwarded-For", b"2001:db8::1")]


def test_serialize_exact_bytes():
    assert serialize(b"GET / HTTP/1.1", [(b"Host", b"x"), (b"a", b"")]) == \
        b"GET / HTTP/1.1\r\nHost: x\r\na: \r\n\r\n"


def test_serialize_without_fields():
    assert serialize(b"HTTP/1.1 204 No Content", []) == b"HTTP/1.1 204 No Content\r\n\r\n"


@pytest.mark.parametrize("name", [b"Content-Length", b"Host"])
def test_strip_hop_by_hop_never_removes_framing_or_routing_fields(name):
    # Connection: content-length would otherwise let a body be smuggled past the proxy
    assert strip_hop_by_hop([(b"Connection", name), (name, b"5")]) == [(name, b"5")]


def test_forwarded_rfc7239_parameters_in_order_with_ipv6_quoted():
    from splicer.http.headers import append_forwarded
    out = append_forwarded([(b"Host", b"a")], ("for", "proto", "by", "host"), "2001:db8::1", "10.0.0.1", b"a")
    assert out[-1] == (b"Forwarded", b'proto=http;host="a";by=10.0.0.1;for="[2001:db8::1]"')
    assert append_forwarded([], ("for",), "192.0.2.1", "x", None) == [(b"Forwarded", b"for=192.0.2.1")]


def test_forwarded_host_loses_quotes_and_backslashes():
    from splicer.http.headers import append_forwarded
    assert append_forwarded([], ("host",), "192.0.2.1", "192.0.2.2", b'a"b\\c') == [(b"Forwarded", b'host="abc"')]


def test_forwarded_without_any_parameter_to_send_adds_nothing():
    from splicer.http.headers import append_forwarded
    fields = [(b"Host", b"h")]
    assert append_forwarded(fields, (), "192.0.2.1", "192.0.2.2", b"h") == fields
    assert append_forwarded(fields, ("host",), "192.0.2.1", "192.0.2.2", None) == fields
    assert append_forwarded(fields, ("host",), "192.0.2.1", "192.0.2.2", b"") == fields


def test_set_framing_length_rewrites_the_first_content_length_and_drops_the_others():
    from splicer.http.headers import set_framing
    assert set_framing([(b"content-length", b"5, 5"), (b"X", b"1"), (b"Content-Length", b"5")], "length", 5) == [
        (b"content-length", b"5"), (b"X", b"1")]


def test_set_framing_length_without_content_length_appends_one():
    from splicer.http.headers import set_framing
    assert set_framing([(b"X", b"1")], "length", 12) == [(b"X", b"1"), (b"Content-Length", b"12")]


def test_append_forwarded_for_under_another_name_and_if_none():
    h = [(b"Host", b"a"), (b"x-client", b"203.0.113.9")]
    assert append_forwarded_for(h, "192.0.2.1", b"X-Real") == [*h, (b"X-Real", b"192.0.2.1")]
    assert append_forwarded_for(h, "192.0.2.1", b"X-Client", if_none=True) is h  # (one is there, any case)
    assert append_forwarded_for(h, "192.0.2.1", b"X-Real", if_none=True) == [*h, (b"X-Real", b"192.0.2.1")]
    assert append_forwarded_for(h, "192.0.2.1", b"X-Client") == [*h, (b"X-Client", b"192.0.2.1")]


def test_in_networks_of_option_forwardfor_except():
    import ipaddress
    from splicer.http.headers import in_networks
    nets = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("2001:db8::/32"))
    assert in_networks("127.0.0.1", nets) and in_networks("127.255.255.255", nets)
    assert not in_networks("128.0.0.1", nets) and not in_networks("126.255.255.255", nets)
    assert in_networks("2001:db8::7", nets) and not in_networks("2001:db9::7", nets)
    # an IPv4 client on an IPv6 listener: in IPv6 networks only, as haproxy 2.6 compares
    assert not in_networks("::ffff:127.0.0.2", nets)
    assert in_networks("::ffff:127.0.0.2", (ipaddress.ip_network("::ffff:0:0/96"),))
    assert not in_networks("not an address", nets) and not in_networks("127.0.0.1", ())
