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
    ("path,lowr", "unknown converter 'lowr' in 'path,lowr' (supported: lower, upper, map, map_str, "
     "map_beg, map_end, map_dom, map_reg, field, word, regsub)"),
    ("src,lower", "converter 'lower' expects a string, 'src' gives ip"),
    ("urlp(a,b,c)", "fetch 'urlp': third argument must be 'i', got 'c'"),
    ("req.body_announced", "unknown fetch method 'req.body_announced'"),
    ("str(a,b)", "fetch 'str' expects one argument: str(<value>)"),
    ("int()", "fetch 'int' expects one argument: int(<value>)"),
    ("bool(yes)", "fetch 'bool': 'yes' is not 0, 1, true or false"),
    ("var()", "fetch 'var' expects a variable: var(<scope>.<name>[,<default>])"),
    ("hdr_cnt(accept,1)", "fetch 'hdr_cnt' takes at most 1 argument(s)"),
    ("req.fhdr_cnt(accept,1)", "fetch 'req.fhdr_cnt' takes at most 1 argument(s)"),
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


# -- converters: map*, field, word, regsub (haproxy 7.3.1) ----------------------------------

MAP = """# routing map
www.example.com   be_www
  api.example.com\tbe_api  second word

example.com be_dom
/static be_static
/st be_st
.jpg be_img
^/v[0-9]+/ be_ver
WWW.EXAMPLE.COM be_upper
"""


@pytest.fixture
def mapdir(tmp_path):
    (tmp_path / "routes.map").write_text(MAP)
    return str(tmp_path)


def one(expr: str, base_dir: str, value: bytes, name: bytes = b"X") -> list:
    v = RequestView(b"GET", value, value, b"1.1", [(name, value)])
    return parse_fetch(f"req.hdr({name.decode()}),{expr}", base_dir)(v)


@pytest.mark.parametrize("expr, value, out", [
    ("map(routes.map)", b"www.example.com", [b"be_www"]),
    ("map(routes.map)", b"api.example.com", [b"be_api  second word"]),
    ("map(routes.map)", b"WWW.EXAMPLE.COM", [b"be_upper"]),       # case-sensitive, as haproxy
    ("map(routes.map)", b"nope", []),                             # no default: absent
    ("map(routes.map,fallback)", b"nope", [b"fallback"]),
    ("map_str(routes.map,-)", b"example.com", [b"be_dom"]),
    ("map_str(routes.map,-)", b"# routing", [b"-"]),               # comments are no keys
    ("map_beg(routes.map,-)", b"/static/a.css", [b"be_static"]),  # first in file order
    ("map_beg(routes.map,-)", b"/stx", [b"be_st"]),
    ("map_beg(routes.map,-)", b"/s", [b"-"]),
    ("map_end(routes.map,-)", b"/a/b.jpg", [b"be_img"]),
    ("map_end(routes.map,-)", b"/a/b.jpeg", [b"-"]),
    ("map_dom(routes.map,-)", b"a.b.example.com:8080", [b"be_dom"]),
    ("map_dom(routes.map,-)", b"www.example.com", [b"be_www"]),     # line 1 before example.com
    ("map_dom(routes.map,-)", b"myexample.com", [b"-"]),
    ("map_reg(routes.map,-)", b"/v12/x", [b"be_ver"]),
    ("map_reg(routes.map,-)", b"/vx/x", [b"-"]),
    ("lower,map(routes.map,-)", b"WWW.Example.com", [b"be_www"]),
])
def test_map_converters(mapdir, expr, value, out):
    assert one(expr, mapdir, value) == out


def test_map_is_read_once_at_load(mapdir, tmp_path):
    fetch = parse_fetch("req.hdr(x),map(routes.map,-)", mapdir)
    (tmp_path / "routes.map").write_text("www.example.com changed\n")
    v = RequestView(b"GET", b"/", b"/", b"1.1", [(b"X", b"www.example.com")])
    assert fetch(v) == [b"be_www"]


def test_a_large_map_is_looked_up_by_key(tmp_path):
    (tmp_path / "big.map").write_text("".join(f"host{i}.example.com be{i % 7}\n" for i in range(10000)))
    fetch = parse_fetch("req.hdr(host),lower,map(big.map,none)", str(tmp_path))
    v = RequestView(b"GET", b"/", b"/", b"1.1", [(b"Host", b"HOST9999.example.com")])
    assert fetch(v) == [b"be3"]
    assert fetch.text(v) == b"be3"


@pytest.mark.parametrize("expr, out", [
    ("field(1,_)", b"f1"), ("field(4,_)", b""), ("field(5,_)", b"f5"), ("field(6,_)", b""),
    ("field(2,_,0)", b"f2_f3__f5"), ("field(2,_,2)", b"f2_f3"), ("field(-2,_,3)", b"f2_f3_"),
    ("field(-3,_,0)", b"f1_f2_f3"), ("field(-1,_)", b"f5"), ("field(3,_3)", b"f"),
    ("word(4,_)", b"f5"), ("word(2,_,0)", b"f2_f3__f5"), ("word(3,_,2)", b"f3__f5"),
    ("word(-2,_,3)", b"f1_f2_f3"), ("word(-3,_,0)", b"f1_f2"), ("word(5,_)", b""),
    ("regsub(_,-)", b"f1-f2_f3__f5"), ("regsub(_,-,g)", b"f1-f2-f3--f5"),
    ("regsub(F(.),<\\1>,ig)", b"<1>_<2>_<3>__<5>"), ("regsub(^f1_,)", b"f2_f3__f5"),
    ("regsub(_+,.,g)", b"f1.f2.f3.f5"),
])
def test_field_word_regsub(expr, out):
    assert one(expr, "", b"f1_f2_f3__f5") == [out]


def test_converters_in_a_dynamic_use_backend_name(mapdir):
    from splicer.http.sample import parse_name_format, render_name
    parts = parse_name_format("%[req.hdr(host),lower,word(1,:),map(routes.map,be_default)]", mapdir)
    for host, want in ((b"WWW.example.com:8080", b"be_www"), (b"other", b"be_default")):
        v = RequestView(b"GET", b"/", b"/", b"1.1", [(b"Host", host)])
        assert render_name(parts, v) == want


def test_a_dynamic_name_on_fields_is_remembered_by_the_head_without_its_query(mapdir):
    """name_renderer on views built from heads: one entry per head but for its query, each
    Host its own name; a view without a head key (one a rule changed) is keyed by its
    field values."""
    from splicer.http.h1 import parse_request
    from splicer.http.sample import name_renderer, parse_name_format, request_view_of
    name = name_renderer(parse_name_format("%[req.hdr(host),lower,word(1,:),map(routes.map,be_default)]",
                                           mapdir))

    def view(host: bytes, target: bytes = b"/"):
        raw = b"GET " + target + b" HTTP/1.1\r\nHost: " + host + b"\r\n\r\n"
        return request_view_of(parse_request(raw), raw)
    for i in range(20):
        assert name(view(b"WWW.example.com:8080", b"/x?n=%d" % i)) == "be_www"
        assert name(view(b"other", b"/x?n=%d" % i)) == "be_default"
    assert len(name.memo) == 2 and all(type(k) is bytes for k in name.memo)
    v = view(b"other")
    v.set_fields([(b"Host", b"www.example.com")])  # a rule changed the Host: its value decides
    assert name(v) == "be_www"
    assert len(name.memo) == 2


def head_memo():
    """(remembered_by_head of a fetch of Host, the list of its calls, view(i): a request
    whose Cookie is its own for each i)."""
    from splicer.http.h1 import parse_request
    from splicer.http.sample import remembered_by_head, request_view_of
    calls = []

    def fn(view):
        calls.append(1)
        return view.values(b"host")[0]

    def view(i: int):
        raw = b"GET / HTTP/1.1\r\nHost: h\r\nCookie: id=%d\r\n\r\n" % i
        return request_view_of(parse_request(raw), raw)
    return remembered_by_head(fn), calls, view


def test_a_head_memo_that_does_not_pay_pauses():
    from splicer.http.sample import MEMO_SIZE, PAUSE_CALLS
    by_head, calls, view = head_memo()
    for i in range(MEMO_SIZE + 1):  # a cookie of its own per request: every probe misses
        assert by_head(view(i)) == b"h"
    assert len(by_head.memo) == 1
    for i in range(100):  # paused: fn answers, nothing is probed or kept
        assert by_head(view(0)) == b"h"
    assert len(by_head.memo) == 1 and len(calls) == MEMO_SIZE + 101
    assert PAUSE_CALLS > 100


def test_a_head_memo_that_did_not_pay_leaves_exactly_pause_calls_alone():
    """PAUSE_CALLS: the calls that follow the one whose insert filled the memo without
    paying are left alone (fn answers, nothing is kept), PAUSE_CALLS of them; the next
    one is watched again (its head is kept, and the one after it is a hit)."""
    from splicer.http.sample import MEMO_SIZE, PAUSE_CALLS
    by_head, calls, view = head_memo()
    for i in range(1, MEMO_SIZE + 2):  # every probe misses: the memo fills, does not pay
        by_head(view(i))
    again = view(0)
    for _ in range(PAUSE_CALLS):
        assert by_head(again) == b"h"
    assert len(by_head.memo) == 1  # (the head that filled it) nothing kept while paused
    by_head(again)  # watched again: kept
    assert len(by_head.memo) == 2
    n = len(calls)
    by_head(again)
    assert len(calls) == n  # a hit


@pytest.mark.parametrize("expr, message", [
    ("map(missing.map)", "cannot read map file 'missing.map': No such file or directory"),
    ("map", "converter 'map' expects a map file: map(<file>[,<default>])"),
    ("map_beg(a,b,c)", "converter 'map_beg' expects a map file: map_beg(<file>[,<default>])"),
    ("field(0,_)", "converter 'field': index '0' must be a non-zero integer"),
    ("field(x,_)", "converter 'field': index 'x' must be a non-zero integer"),
    ("word(1)", "converter 'word' expects word(<index>,<delimiters>[,<count>])"),
    ("word(1,)", "converter 'word': delimiters must not be empty"),
    ("field(1,_,-1)", "converter 'field': count '-1' must be an integer >= 0"),
    ("regsub(a)", "converter 'regsub' expects regsub(<regex>,<subst>[,<flags>])"),
    ("regsub(a,b,x)", "converter 'regsub': unknown flags 'x' (supported: i, g)"),
    ("regsub(a,\\1)", "converter 'regsub': '\\1' refers to a group the regex does not have"),
    ("lower(1)", "converter 'lower' takes no argument"),
])
def test_bad_converters(tmp_path, expr, message):
    with pytest.raises(SampleError) as exc:
        parse_fetch("path," + expr, str(tmp_path))
    assert str(exc.value) == message


def test_bad_map_regex(tmp_path):
    (tmp_path / "r.map").write_text("# c\nok a\n([ b\n")
    with pytest.raises(SampleError) as exc:
        parse_fetch("path,map_reg(r.map)", str(tmp_path))
    assert str(exc.value).startswith("map file 'r.map' line 3: invalid regex '([': ")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from splicer.http import sample as smp  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"A", b"tok", b"TOK5", b"x.y", b"=", b"&", b";", b"?", b"1", b"%61", b"/"]),
                max_size=12),
       st.sets(st.sampled_from([b"a", b"tok", b"tok5", b"x.y", b"b"]), min_size=1, max_size=3),
       st.booleans(), st.booleans())
def test_url_param_found_of_several_names_is_the_parameter_index(parts, names, icase, absolute):
    """params_found (``url_param(<name>) -m found`` of several ACLs, one search) says
    exactly what the parameter index (_param_index, what url_param() reads) says."""
    url = (b"http://h" if absolute else b"") + b"/p" + b"".join(parts)
    names = frozenset(n.lower() for n in names) if icase else frozenset(names)
    v = RequestView(b"GET", url, url, b"1.1", [])
    assert smp.params_found(names, b"", icase)(v) is (not names.isdisjoint(smp._param_index(url, b"", icase)))


@pytest.mark.parametrize("target, found, value", [
    (b"/x?a=1?token=2", True, b"2"), (b"/x??token=1", True, b"1"), (b"/x?token=1?", True, b"1"),
    (b"/x?a=1&token=3", True, b"3"), (b"/x?a=1;token=4", True, b"4"), (b"/x?atoken=1", False, None),
    (b"/x?a=1?xtoken=2", False, None),
])
def test_a_question_mark_in_the_query_ends_a_parameter(target, found, value):
    """haproxy's url_param has '?' for its default delimiter (smp_fetch_url_param): a '?'
    inside the query ends a parameter, as '&' and ';' do (found by a fresh tester: the
    ACL missed "/x?a=1?token=2", which haproxy 2.6 denies)."""
    v = RequestView(b"GET", target, target, b"1.1", [])
    assert smp.params_found(frozenset({b"token"}), b"", False)(v) is found
    assert parse_fetch("url_param(token)")(v) == ([value] if found else [])
