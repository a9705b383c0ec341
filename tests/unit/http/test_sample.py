"""splicer.http.sample: each fetch over a RequestView, exact samples (haproxy 7.3.6)."""
import ipaddress

import pytest

from splicer.http.sample import BOOL, INT, IP, STR, RequestView, SampleError, parse_fetch

FIELDS = [(b"Host", b"WWW.Example.com:8080"), (b"Accept", b"text/html, application/json"),
          (b"accept", b"*/*"), (b"Cookie", b"a=1; SID = abc ; SID=def"), (b"Cookie", b"b=2"),
          (b"User-Agent", b"x, y"), (b"X-Forwarded-For", b"10.1.2.3:443, [2001:db8::1]"),
          (b"Content-Length", b"12")]


def view(url=b"/static/img/logo.png?id=42&lang=en;sess=9", target=None, **kw):
    return RequestView(b"GET", url, target or url, b"1.1", FIELDS, "192.0.2.7", 40000, "10.0.0.1", 8080,
                       nbsrv=kw.pop("nbsrv", None), **kw)


@pytest.mark.parametrize("expr, samples", [
    ("hdr(host)", [b"WWW.Example.com:8080"]),
    ("req.hdr(accept)", [b"text/html", b"application/json", b"*/*"]),
    ("hdr(accept,1)", [b"text/html"]),
    ("hdr(accept,-1)", [b"*/*"]),
    ("hdr(accept,4)", []),
    ("req.fhdr(user-agent)", [b"x, y"]),
    ("hdr(user-agent)", [b"x", b"y"]),
    ("hdr(x-missing)", []),
    ("hdr_cnt(accept)", [3]),
    ("req.fhdr_cnt(accept)", [2]),
    ("req.hdr_cnt(x-missing)", [0]),
    ("req.hdr_val(content-length)", [12]),
    ("req.hdr_ip(x-forwarded-for)", [ipaddress.ip_address("10.1.2.3"), ipaddress.ip_address("2001:db8::1")]),
    ("req.cook(SID)", [b"abc", b"def"]),
    ("cook(sid)", []),
    ("req.cook_cnt(SID)", [2]),
    ("path", [b"/static/img/logo.png"]),
    ("query", [b"id=42&lang=en;sess=9"]),
    ("url", [b"/static/img/logo.png?id=42&lang=en;sess=9"]),
    ("url_param(lang)", [b"en"]),
    ("urlp(sess)", [b"9"]),
    ("urlp(ID)", []),
    ("urlp(ID,,i)", [b"42"]),
    ("urlp_val(id)", [42]),
    ("method", [b"GET"]),
    ("req.ver", [b"1.1"]),
    ("src", [ipaddress.ip_address("192.0.2.7")]),
    ("dst", [ipaddress.ip_address("10.0.0.1")]),
    ("src_port", [40000]),
    ("dst_port", [8080]),
    ("always_true", [True]),
    ("always_false", [False]),
    ("hdr(host),lower", [b"www.example.com:8080"]),
    ("hdr(host),upper", [b"WWW.EXAMPLE.COM:8080"]),
    ("status", []),
])
def test_fetch_samples(expr, samples):
    assert parse_fetch(expr)(view()) == samples


def test_query_is_absent_without_question_mark_and_empty_after_a_bare_one():
    assert parse_fetch("query")(view(b"/a")) == []
    assert parse_fetch("query")(view(b"/a?")) == [b""]
    assert parse_fetch("path")(view(b"/a?")) == [b"/a"]


def test_path_of_an_absolute_form_request_reads_the_origin_form_target():
    v = view(b"http://h.example/p/q?x=1", b"/p/q?x=1")
    assert parse_fetch("path")(v) == [b"/p/q"]
    assert parse_fetch("url")(v) == [b"http://h.example/p/q?x=1"]


def test_nbsrv_asks_the_callback():
    v = view(nbsrv={"app": 3}.get)
    assert parse_fetch("nbsrv(app)")(v) == [3]


def test_response_side_fetches():
    v = view(status=404, response_fields=[(b"Content-Type", b"text/plain")])
    assert parse_fetch("status")(v) == [404]
    assert parse_fetch("res.hdr(content-type)")(v) == [b"text/plain"]
    assert parse_fetch("hdr(content-type)")(v) == [b"text/plain"]
    assert parse_fetch("req.hdr(content-type)")(v) == []


@pytest.mark.parametrize("expr, type_, method, derivative", [
    ("hdr(host)", STR, "str", False), ("hdr_beg(host)", STR, "beg", True), ("path_dir", STR, "dir", True),
    ("url_len", STR, "len", True), ("src", IP, "ip", False), ("src_port", INT, "int", False),
    ("always_true", BOOL, "bool", False), ("hdr_beg(host),lower", STR, "str", False),
    ("req.cook_sub(a)", STR, "sub", True), ("urlp_reg(x)", STR, "reg", True),
])
def test_types_and_implied_methods(expr, type_, method, derivative):
    f = parse_fetch(expr)
    assert (f.type, f.method, f.derivative) == (type_, method, derivative)


@pytest.mark.parametrize("expr, message", [
    ("paht", "unknown fetch method 'paht'; did you mean 'path'?"),
    ("path(x)", "fetch 'path' takes no argument"),
    ("hdr(a,b)", "fetch 'hdr': occurrence 'b' is not an integer"),
    ("hdr(a,1,2)", "fetch 'hdr' takes at most 2 argument(s)"),
    ("hdr(a", "missing ')' in 'hdr(a'"),
    ("nbsrv", "fetch 'nbsrv' expects a backend name: nbsrv(<backend>)"),
    ("path,lowr", "unknown converter 'lowr' in 'path,lowr' (supported: lower, upper)"),
    ("src,lower", "converter 'lower' expects a string, 'src' gives ip"),
    ("urlp(a,b,c)", "fetch 'urlp': third argument must be 'i', got 'c'"),
    ("req.body_announced", "unknown fetch method 'req.body_announced'"),
])
def test_bad_fetches(expr, message):
    with pytest.raises(SampleError) as exc:
        parse_fetch(expr)
    assert str(exc.value) == message


def test_log_format_text_takes_the_last_header_value_and_the_first_parameter():
    from splicer.http.sample import parse_name_format, render_name
    v = view(b"/p?id=1&id=2")
    assert parse_fetch("req.hdr(accept)").text(v) == b"*/*"
    assert parse_fetch("req.cook(SID)").text(v) == b"def"
    assert parse_fetch("url_param(id)").text(v) == b"1"
    assert parse_fetch("src_port").text(v) == b"40000"
    assert parse_fetch("hdr(none)").text(v) == b""
    assert render_name(parse_name_format("be_%[hdr(host),lower]_%%"), v) == b"be_www.example.com:8080_%"
