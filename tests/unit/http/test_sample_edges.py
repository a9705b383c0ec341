"""splicer.http.sample: edge cases of fetches and converters the main tests leave open
(haproxy 2.6 configuration.txt 7.3.2 "Fetching samples internal states", 7.3.6 "Fetching
HTTP samples (Layer 7)", 7.3.1 "map"), and of the memos of dynamic names."""
import base64
import ipaddress

import pytest

from splicer.http.h1 import parse_request
from splicer.http.sample import (BOOL, INT, STR, RequestView, internal_fetch, load_map, name_renderer,
                                 parse_fetch, parse_name_format, render_name, request_reads,
                                 request_view_of)


def view(target=b"/", fields=(), **kw):
    return RequestView(b"GET", target, target, b"1.1", list(fields), **kw)


# -- constants: str(), int(), bool() (7.3.2) ---------------------------------------------------

@pytest.mark.parametrize("expr, kind, samples", [
    ("int(42)", INT, [42]), ("int(-7)", INT, [-7]), ("int(+3)", INT, [3]),
    ("bool(1)", BOOL, [True]), ("bool(true)", BOOL, [True]),
    ("bool(0)", BOOL, [False]), ("bool(false)", BOOL, [False]),
    ("str(abc)", STR, [b"abc"]), ("str()", STR, [b""]),
])
def test_constant_fetches_give_their_argument(expr, kind, samples):
    f = parse_fetch(expr)
    assert f.type == kind
    assert f(view()) == samples




# -- cookies (req.cook, req.cook_val) -------------------------------------------------------

COOKIES = [(b"Cookie", b"XSRF-TOKEN=Xq1X; n=12; bad=x1"), (b"Cookie", b"n= -3 ")]


def test_cookie_without_a_name_gives_the_first_cookie_value():
    assert parse_fetch("req.cook()")(view(fields=COOKIES)) == [b"Xq1X"]


def test_cookie_names_and_values_are_kept_as_sent():
    assert parse_fetch("req.cook(XSRF-TOKEN)")(view(fields=COOKIES)) == [b"Xq1X"]


def test_cookie_val_converts_each_cookie_of_that_name_to_an_integer():
    v = view(fields=COOKIES)
    assert parse_fetch("req.cook_val(n)")(v) == [12, -3]
    assert parse_fetch("cook_val(bad)")(v) == []  # not an integer: no sample
    assert parse_fetch("cook_val(none)")(v) == []


# -- header counts, nbsrv, credentials --------------------------------------------------------

def test_hdr_cnt_without_a_name_counts_every_field_value():
    v = view(fields=[(b"Accept", b"a, b"), (b"Host", b"h")])
    assert parse_fetch("hdr_cnt")(v) == [3]
    assert parse_fetch("req.fhdr_cnt")(v) == [2]


def test_nbsrv_without_server_state_counts_zero():
    assert parse_fetch("nbsrv(app)")(view()) == [0]


def test_http_auth_user_and_pass_decode_basic_credentials():
    cred = b"Basic " + base64.b64encode(b"alice:s3cret")
    v = view(fields=[(b"Authorization", cred)])
    assert parse_fetch("http_auth_user")(v) == [b"alice"]
    assert parse_fetch("http_auth_pass")(v) == [b"s3cret"]
    assert parse_fetch("http_auth_user")(view()) == []
    assert parse_fetch("http_auth_pass")(view()) == []


def test_dst_and_src_of_a_non_ip_address_are_absent():
    v = view(src="unix@/run/a.sock", dst="unix@/run/b.sock")
    assert parse_fetch("dst")(v) == []
    assert parse_fetch("src")(v) == []
    assert parse_fetch("dst")(view(dst="::1")) == [ipaddress.ip_address("::1")]


def test_req_body_announced_reads_the_framing():
    f = internal_fetch("req.body_announced")
    assert (f.type, f.expr) == (BOOL, "req.body_announced")
    assert f(view(has_body=True)) == [True]
    assert f(view()) == [False]


# -- url_param: without a name, and with a delimiter ----------------------------------------

@pytest.mark.parametrize("expr, target, samples", [
    ("url_param", b"/p?a=1&b=c=d;e=5?f=6", [b"1", b"c=d", b"5", b"6"]),  # any parameter
    ("url_param", b"/p", []),
    ("url_param", b"/p?", []),
    ("url_param", b"/p?flag&x=", [b""]),
    ("url_param", b"/p?=x=1", [b"x=1"]),  # a value is all after the first '='
    ("url_param(,;)", b"/p=?a=1", [b"1"]),  # the query starts after the '?'
    ("url_param(,;)", b"/p;a=1&b=2", [b"1", b"2"]),  # the delimiter starts them too
    ("url_param(,;)", b"/p=;a=1", [b"1"]),
    ("url_param(,,i)", b"/p?A=1&b=2", [b"1", b"2"]),
    ("url_param(ID,;)", b"/p?id=1", []),  # case-sensitive unless 'i'
    ("url_param(ID,;,i)", b"/p?id=1", [b"1"]),
])
def test_url_param_samples(expr, target, samples):
    assert parse_fetch(expr)(view(target)) == samples


# -- url with a normalized path -------------------------------------------------------------

def test_url_keeps_every_question_mark_of_the_query_after_a_normalized_path():
    assert parse_fetch("url")(view(b"/%61dmin?x=1?y=2")) == [b"/admin?x=1?y=2"]


def test_url_of_an_absolute_form_head_is_read_off_the_request_line():
    raw = b"GET http://h.example/a?b HTTP/1.1\r\nHost: h.example\r\nX-A: 1\r\n\r\n"
    v = request_view_of(parse_request(raw), raw)
    assert parse_fetch("url")(v) == [b"http://h.example/a?b"]
    assert parse_fetch("path")(v) == [b"/a"]


# -- maps ---------------------------------------------------------------------------------

def test_map_values_are_kept_as_written(tmp_path):
    (tmp_path / "sizes.map").write_text("large XL\nsmall \tX S X\n")
    f = parse_fetch("req.hdr(x),map(sizes.map)", str(tmp_path))
    assert f(view(fields=[(b"X", b"large")])) == [b"XL"]
    assert f(view(fields=[(b"X", b"small")])) == [b"X S X"]


def test_a_relative_map_without_a_base_directory_is_read_from_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "m.map").write_text("a b\n")
    monkeypatch.chdir(tmp_path)
    assert parse_fetch("req.hdr(x),map(m.map)")(view(fields=[(b"X", b"a")])) == [b"b"]


# -- log-format names --------------------------------------------------------------------------

def test_name_format_literals_around_samples():
    v = view(b"/p", [(b"Host", b"h")])
    assert render_name(parse_name_format("a%%b_%[hdr(host)]"), v) == b"a%b_h"
    assert render_name(parse_name_format("x]_%[path]"), v) == b"x]_/p"


def test_a_name_on_the_path_and_a_field_is_rendered_per_request():
    name = name_renderer(parse_name_format("%[path]_%[hdr(host)]"))
    assert name(view(b"/a", [(b"Host", b"h1")])) == "/a_h1"
    assert name(view(b"/b", [(b"Host", b"h2")])) == "/b_h2"


def test_a_name_in_a_response_rule_reads_the_response_field_each_time():
    """In an http-response rule hdr() reads the response: two responses to requests with
    the same fields give each its own name."""
    name = name_renderer(parse_name_format("be_%[hdr(x)]"))
    req = [(b"X", b"req")]
    assert name(view(fields=req, response_fields=[(b"X", b"one")])) == "be_one"
    assert name(view(fields=req, response_fields=[(b"X", b"two")])) == "be_two"
    assert name(view(fields=req)) == "be_req"


def test_a_name_on_fields_follows_a_rewritten_target():
    """Views whose target a rule rewrote have no head key: each is named by its fields."""
    name = name_renderer(parse_name_format("%[req.hdr(host)]"))
    for host in (b"one", b"two", b"one"):
        raw = b"GET /x HTTP/1.1\r\nHost: " + host + b"\r\n\r\n"
        v = request_view_of(parse_request(raw), raw)
        v.set_target(b"/y")
        assert name(v) == host.decode()


# -- what a fetch reads (routing decisions may be remembered by it) ----------------------------

@pytest.mark.parametrize("expr, reads", [
    ("hdr(host)", ()), ("path", ()), ("url_param(a)", ()), ("src", ("src",)), ("dst_port", ("dst_port",)),
    ("nbsrv(app)", None), ("var(txn.a)", None), ("status", None), ("res.hdr(x)", None),
    ("http_auth(users)", None),
])
def test_what_a_fetch_reads_besides_the_head(expr, reads):
    assert parse_fetch(expr).reads == reads
    assert request_reads(expr.partition("(")[0]) == reads


def test_a_rewritten_target_of_an_absolute_form_without_a_path_keeps_its_scheme_and_authority():
    """`GET http://h.example?q=1` has the target `/?q=1`: a rewrite of it (normalize-uri,
    set-path) is what `url` reads after the scheme and authority, as for any other
    absolute-form target (haproxy rewrites the start line's URI)."""
    v = view(b"/?q=1")
    v.url = b"http://h.example?q=1"
    v.set_target(b"//b?q=1")
    assert (v.url, v.target) == (b"http://h.example//b?q=1", b"//b?q=1")
    v = view(b"/a?q=1")
    v.url = b"http://h.example/a?q=1"
    v.set_target(b"/b?q=1")
    assert v.url == b"http://h.example/b?q=1"


def test_a_map_line_of_only_blanks_is_skipped_whatever_the_blank(tmp_path):
    """A line holding only a vertical tab or a form feed is blank (isspace(), as haproxy's
    pattern file reader): skipped, not a crash of the configuration's load."""
    (tmp_path / "m.map").write_bytes(b"a 1\n\x0c\n\x0b \t\nb 2\n")
    table = load_map("m.map", str(tmp_path), "str")
    assert (table.lookup(b"a"), table.lookup(b"b"), table.lookup(b"\x0c")) == (b"1", b"2", None)
