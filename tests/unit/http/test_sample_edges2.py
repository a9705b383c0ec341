"""splicer.http.sample: more edge cases of fetches, converters, maps and keys the other tests
leave open (haproxy 2.6 configuration.txt 7.3.1 "map", "field", "word", 7.3.6 "hdr",
"req.cook", "url_param"; RFC 9110 section 5.6.1 and 5.6.3, RFC 6265 section 5.2)."""
from __future__ import annotations

import pytest

from splicer.http.h1 import parse_request
from splicer.http.sample import (
    RequestView,
    SampleError,
    load_map,
    parse_fetch,
    request_view_of,
    source_key,
)


def view(target=b"/", fields=(), **kw):
    return RequestView(b"GET", target, target, b"1.1", list(fields), **kw)


# -- hdr() and req.cook(): what is stripped around a value ------------------------------------

@pytest.mark.parametrize("value, samples", [
    (b"a,\x0cb\x0c", [b"a", b"\x0cb\x0c"]),  # a form feed is no OWS: kept
    (b" a \t,\t\x0bb ", [b"a", b"\x0bb"]),
    (b"XL", [b"XL"]),
    (b" X \t", [b"X"]),
    (b"\tXX,X", [b"XX", b"X"]),
])
def test_hdr_strips_only_spaces_and_tabs_around_each_value(value, samples):
    """hdr() strips the optional whitespace around each comma-separated value: spaces and
    tabs only (OWS, RFC 9110 sections 5.6.1 and 5.6.3); every other byte is the value's."""
    assert parse_fetch("hdr(x)")(view(fields=[(b"X", value)])) == samples


@pytest.mark.parametrize("cookie, samples", [
    (b"a=\x0b1\x0c; b=2", [b"\x0b1\x0c"]),
    (b" a = \t1 ; b=2", [b"1"]),
])
def test_first_cookie_strips_only_spaces_and_tabs(cookie, samples):
    """req.cook() without a name gives the first cookie's value with the spaces and tabs
    around it removed (RFC 6265 section 5.2, WSP), no other byte."""
    assert parse_fetch("req.cook()")(view(fields=[(b"Cookie", cookie)])) == samples


# -- url_param: no query without a '?' (or the delimiter) -------------------------------------

@pytest.mark.parametrize("target", [b"/p;a=1", b"/p&a=1", b"/a=1&a=2"])
def test_url_param_without_a_question_mark_finds_nothing(target):
    """Without a '?' (the default delimiter) the URL has no parameters: '&' and ';' in the
    path start none (haproxy url_param)."""
    assert parse_fetch("url_param(a)")(view(target)) == []
    assert parse_fetch("urlp_val(a)")(view(target)) == []


def test_url_param_with_a_non_ascii_delimiter_still_loads():
    """A delimiter that is not ASCII does not break the configuration's load: the fetch is
    compiled and reads the query after the '?'."""
    f = parse_fetch("url_param(a,\u00e9)")
    assert f(view(b"/p?a=1")) == [b"1"]


@pytest.mark.parametrize("expr, message", [
    ("urlp(a,;,i,x)", "fetch 'urlp' takes at most 3 argument(s)"),
    ("url_param(a,;,i,x)", "fetch 'url_param' takes at most 3 argument(s)"),
    ("urlp_val(a,b,c,d)", "fetch 'urlp_val' takes at most 3 argument(s)"),
    ("path,field(1,_,1,2)", "converter 'field' expects field(<index>,<delimiters>[,<count>])"),
    ("path,word(1,_,0,0)", "converter 'word' expects word(<index>,<delimiters>[,<count>])"),
])
def test_too_many_arguments_are_refused(expr, message):
    """url_param takes at most <name>, <delim> and 'i'; field and word at most <index>,
    <delimiters> and <count>: one more is refused with the expected form."""
    with pytest.raises(SampleError) as exc:
        parse_fetch(expr)
    assert str(exc.value) == message


# -- maps: comment lines ----------------------------------------------------------------------

def test_map_comment_lines_give_no_key(tmp_path):
    """A line starting with '#' is a comment: neither its first word nor '#' is a key."""
    (tmp_path / "m.map").write_bytes(b"#host be_x\n# y z\n  #indented c\nk v\n")
    table = load_map("m.map", str(tmp_path), "str")
    assert [table.lookup(k) for k in (b"#host", b"#", b"#indented", b"k")] == [None, None, None, b"v"]


# -- head keys and views built from heads -----------------------------------------------------

@pytest.mark.parametrize("raw, key", [
    (b"GET /p HTTP/1.1\r\nHost: h\r\nReferer: /x?y\r\n\r\n",
     b"GET /p HTTP/1.1\r\nHost: h\r\nReferer: /x?y\r\n\r\n"),
    (b"GET /p?q=1 HTTP/1.1\r\nHost: h\r\nReferer: /x?y\r\n\r\n",
     b"GET /p HTTP/1.1\r\nHost: h\r\nReferer: /x?y\r\n\r\n"),
])
def test_head_key_cuts_only_the_query_of_the_request_target(raw, key):
    """head_key() is the head without the target's query: a '?' in a field is no query."""
    assert request_view_of(parse_request(raw), raw).head_key() == key


def test_a_view_of_a_head_without_connection_details_has_the_defaults():
    """request_view_of's src, dst, ports, nbsrv and vars default as RequestView's: no
    address (""), port 0, no server state, no variables."""
    raw = b"GET /p HTTP/1.1\r\nHost: h\r\n\r\n"
    v = request_view_of(parse_request(raw), raw)
    assert (v.src, v.src_port, v.dst, v.dst_port, v.nbsrv, v.vars) == ("", 0, "", 0, None, None)
    assert parse_fetch("dst")(v) == [] and parse_fetch("src")(v) == []


@pytest.mark.parametrize("source, value", [
    (("src",), "192.0.2.7"), (("dst",), "10.0.0.1"), (("src_port",), 40000), (("dst_port",), 8080),
])
def test_source_key_of_an_address_is_that_address(source, value):
    """source_key() of a fetch on the client's or the local address or port is that value."""
    v = view(src="192.0.2.7", src_port=40000, dst="10.0.0.1", dst_port=8080)
    assert source_key(source)(v) == value

