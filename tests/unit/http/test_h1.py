"""splicer.http.h1: request/response heads parsed with h11, rewritten for forwarding."""
import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splicer.http.framing import BodyKind, Framing
from splicer.http.h1 import (
    HeadError,
    RequestHead,
    ResponseHead,
    find_head_end,
    forward_request_head,
    forward_response_head,
    parse_request,
    parse_response,
)

GET = b"GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"


def req(*fields, start=b"GET / HTTP/1.1"):
    return start + b"\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n"


def resp(*fields, start=b"HTTP/1.1 200 OK"):
    return start + b"\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n"


def head_error(fn, *args, **kw):
    with pytest.raises(HeadError) as exc:
        fn(*args, **kw)
    return exc.value


# --- find_head_end --------------------------------------------------------------------------

def test_find_head_end_is_length_of_head():
    assert find_head_end(GET) == len(GET)


def test_find_head_end_stops_before_pipelined_bytes():
    assert find_head_end(GET + b"GET /2 HTTP/1.1\r\n") == len(GET)
    assert find_head_end(bytearray(GET + b"body")) == len(GET)


@pytest.mark.parametrize("buf", [b"", b"GET / HTTP/1.1\r\n", b"GET / HTTP/1.1\r\nHost: x\r\n", b"GET / HTTP/1.1\r\nHost: x\r\n\r"])
def test_find_head_end_incomplete_is_minus_one(buf):
    assert find_head_end(buf) == -1


@pytest.mark.parametrize("buf, n", [
    (b"GET / HTTP/1.1\nHost: x\n\nrest", 24), (b"GET / HTTP/1.1\r\nHost: x\n\r\nrest", 26),
    (b"GET / HTTP/1.1\r\nHost: x\r\n\nrest", 26),
])
def test_find_head_end_accepts_bare_lf(buf, n):
    assert find_head_end(buf) == n
    assert buf[n:] == b"rest"


def test_find_head_end_from_start_offset():
    buf = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    assert find_head_end(buf, len(buf) - 6) == len(buf)
    assert find_head_end(buf, len(buf) - 1) == -1


# --- parse_request --------------------------------------------------------------------------

def test_parse_request_exact_fields():
    r = parse_request(GET)
    assert r == RequestHead(b"GET", b"/index.html?q=1", b"1.1", [(b"Host", b"example.com"), (b"Accept", b"*/*")],
                            Framing(BodyKind.NONE, 0), True, False)


def test_parse_request_keeps_field_name_case_and_order():
    r = parse_request(req(b"host: x", b"X-CaSe: A", b"x-case: b"))
    assert r.headers == [(b"host", b"x"), (b"X-CaSe", b"A"), (b"x-case", b"b")]


def test_parse_request_content_length_framing():
    r = parse_request(req(b"Host: x", b"Content-Length: 42", start=b"POST /up HTTP/1.1"))
    assert (r.method, r.target, r.framing) == (b"POST", b"/up", Framing(BodyKind.LENGTH, 42))


def test_parse_request_chunked_framing():
    r = parse_request(req(b"Host: x", b"Transfer-Encoding: chunked", start=b"POST / HTTP/1.1"))
    assert r.framing == Framing(BodyKind.CHUNKED)


@pytest.mark.parametrize("version, conn, keep", [
    (b"1.1", None, True),
    (b"1.1", b"close", False),
    (b"1.1", b"Close", False),
    (b"1.1", b"keep-alive", True),
    (b"1.1", b"x-foo, close", False),
    (b"1.1", b"Upgrade-Insecure, x-foo", True),
    (b"1.0", None, False),
    (b"1.0", b"keep-alive", True),
    (b"1.0", b"Keep-Alive", True),
    (b"1.0", b"close, keep-alive", False),
    (b"1.0", b"x-foo", False),
])
def test_request_keep_alive_rules(version, conn, keep):
    fields = [b"Host: x"] + ([b"Connection: " + conn] if conn else [])
    r = parse_request(req(*fields, start=b"GET / HTTP/" + version))
    assert (r.version, r.keep_alive) == (version, keep)


def test_request_keep_alive_from_second_connection_field():
    r = parse_request(req(b"Host: x", b"Connection: x-foo", b"Connection: close"))
    assert r.keep_alive is False


def test_http10_request_without_host_is_accepted():
    r = parse_request(b"GET / HTTP/1.0\r\n\r\n")
    assert (r.version, r.headers, r.keep_alive) == (b"1.0", [], False)


@pytest.mark.parametrize("value, expect", [
    (b"100-continue", True), (b"100-Continue", True), (b" 100-CONTINUE ", True), (b"200-ok", False),
])
def test_expect_continue(value, expect):
    r = parse_request(req(b"Host: x", b"Content-Length: 3", b"Expect: " + value, start=b"PUT / HTTP/1.1"))
    assert r.expect_continue is expect


def test_no_expect_field_is_not_expect_continue():
    assert parse_request(GET).expect_continue is False


def test_maxhdr_limit_exact():
    head = req(b"Host: x", b"A: 1", b"B: 2")
    assert len(parse_request(head, maxhdr=3).headers) == 3
    e = head_error(parse_request, head, maxhdr=2)
    assert (e.status, str(e)) == (400, "more than 2 header fields")


def test_default_maxhdr_is_101():
    fields = [b"Host: x"] + [b"X-%d: v" % i for i in range(100)]
    assert len(parse_request(req(*fields)).headers) == 101
    assert head_error(parse_request, req(*fields, b"X-last: v")).status == 400


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.1\r\n\r\n",                                  # no Host in 1.1
    b"GET / HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n",        # space in field name
    b"GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
    b"GET /\r\nHost: x\r\n\r\n",                                # HTTP/0.9 style
    b"GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n",
    b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n",                # incomplete, no empty line
    b"\r\n\r\n",
    b"",
])
def test_bad_request_head_is_400(head):
    assert head_error(parse_request, head).status == 400


def test_te_and_cl_rejected_400():
    e = head_error(parse_request, req(b"Host: x", b"Transfer-Encoding: chunked", b"Content-Length: 5",
                                      start=b"POST / HTTP/1.1"))
    assert (e.status, str(e)) == (400, "both Transfer-Encoding and Content-Length")


def test_differing_content_length_rejected_400():
    e = head_error(parse_request, req(b"Host: x", b"Content-Length: 5", b"Content-Length: 6"))
    assert e.status == 400


def test_non_decimal_content_length_rejected_400():
    assert head_error(parse_request, req(b"Host: x", b"Content-Length: 0x5")).status == 400


@pytest.mark.parametrize("te", [b"gzip", b"chunked, gzip", b"identity", b"xchunked", b"chunked, chunked",
                                b"chunked;q=1", b"\"chunked\""])
def test_request_te_whose_final_coding_is_not_chunked_once_rejected_400(te):
    # RFC 9112 section 6.3 rule 4
    e = head_error(parse_request, req(b"Host: x", b"Transfer-Encoding: " + te, start=b"POST / HTTP/1.1"))
    assert e.status == 400


@pytest.mark.parametrize("te", [b"gzip, chunked", b"identity, chunked"])
def test_request_te_with_other_codings_before_chunked_rejected_501(te):
    e = head_error(parse_request, req(b"Host: x", b"Transfer-Encoding: " + te, start=b"POST / HTTP/1.1"))
    assert e.status == 501


@pytest.mark.parametrize("te", [b"chunked", b"Chunked", b"CHUNKED", b" chunked "])
def test_request_te_chunked_in_any_case_or_list_form_accepted(te):
    r = parse_request(req(b"Host: x", b"Transfer-Encoding: " + te, start=b"POST / HTTP/1.1"))
    assert r.framing == Framing(BodyKind.CHUNKED)


def test_te_split_over_two_lines_is_one_list():
    e = head_error(parse_request, req(b"Host: x", b"Transfer-Encoding: chunked", b"Transfer-Encoding: gzip",
                                      start=b"POST / HTTP/1.1"))
    assert e.status == 400


@pytest.mark.parametrize("head, why", [
    (b"GET / HTTP/1.1\nHost: a\n\n", "bare LF"),
    (b"GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", "bare LF"),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", "bare CR"),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", "NUL"),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", "obs-fold"),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", "obs-fold"),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX : a\r\n\r\n", "illegal header line"),
])
def test_strict_line_syntax_rejected_400(head, why):
    e = head_error(parse_request, head)
    assert e.status == 400
    assert why.split()[0].lower() in str(e).lower() or why == "illegal header line"


def test_response_with_bare_lf_is_502():
    assert head_error(parse_response, b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", b"GET").status == 502


def test_http10_request_with_transfer_encoding_rejected_400():
    head = req(b"Host: x", b"Connection: keep-alive", b"Transfer-Encoding: chunked", start=b"POST / HTTP/1.0")
    assert head_error(parse_request, head).status == 400


# --- parse_response -------------------------------------------------------------------------

def test_parse_response_exact_fields():
    r = parse_response(resp(b"Content-Length: 3", b"Server: o"), b"GET")
    assert r == ResponseHead(200, b"OK", b"1.1", [(b"Content-Length", b"3"), (b"Server", b"o")],
                             Framing(BodyKind.LENGTH, 3), True)


def test_parse_response_interim_100():
    r = parse_response(b"HTTP/1.1 100 Continue\r\n\r\n", b"PUT")
    assert r == ResponseHead(100, b"Continue", b"1.1", [], Framing(BodyKind.NONE, 0), True)


def test_parse_response_103_early_hints_keeps_fields():
    r = parse_response(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n", b"GET")
    assert (r.status, r.headers, r.framing.kind) == (103, [(b"Link", b"</a.css>; rel=preload")], BodyKind.NONE)


def test_parse_response_to_head_has_no_body():
    r = parse_response(resp(b"Content-Length: 1000"), b"HEAD")
    assert (r.framing, r.keep_alive) == (Framing(BodyKind.NONE, 0), True)


@pytest.mark.parametrize("status", [204, 304])
def test_parse_response_bodyless_status(status):
    r = parse_response(resp(start=b"HTTP/1.1 %d X" % status), b"GET")
    assert (r.status, r.framing, r.keep_alive) == (status, Framing(BodyKind.NONE, 0), True)


@pytest.mark.parametrize("head, keep", [
    (resp(b"Content-Length: 1"), True),
    (resp(b"Content-Length: 1", b"Connection: close"), False),
    (resp(b"Content-Length: 1", start=b"HTTP/1.0 200 OK"), False),
    (resp(b"Content-Length: 1", b"Connection: Keep-Alive", start=b"HTTP/1.0 200 OK"), True),
    (resp(b"Transfer-Encoding: chunked"), True),
    (resp(), False),                                                  # close-delimited
    (resp(b"Connection: keep-alive"), False),                         # close-delimited
    (resp(b"Transfer-Encoding: chunked", b"Content-Length: 5"), False),  # TE+CL must close
])
def test_response_keep_alive(head, keep):
    assert parse_response(head, b"GET").keep_alive is keep


def test_parse_response_te_and_cl_is_chunked_must_close():
    r = parse_response(resp(b"Transfer-Encoding: chunked", b"Content-Length: 5"), b"GET")
    assert r.framing == Framing(BodyKind.CHUNKED, None, True)


def test_parse_response_empty_reason():
    r = parse_response(b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", b"GET")
    assert (r.status, r.reason) == (200, b"")


@pytest.mark.parametrize("head", [
    b"garbage\r\n\r\n",
    b"HTTP/1.1 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
])
def test_bad_response_head_is_502(head):
    assert head_error(parse_response, head, b"GET").status == 502


# --- forward_request_head -------------------------------------------------------------------

def test_forward_request_head_exact_bytes():
    r = parse_request(b"GET /a?b=1 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"
                      b"Keep-Alive: timeout=5\r\nUser-Agent: t\r\n\r\n")
    assert forward_request_head(r, None) == b"GET /a?b=1 HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n"


def test_forward_request_head_adds_forwarded_for_last():
    r = parse_request(GET)
    assert forward_request_head(r, "192.0.2.1") == (
        b"GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nX-Forwarded-For: 192.0.2.1\r\n\r\n")


def test_forward_request_head_client_cannot_strip_forwarded_for_via_connection():
    r = parse_request(req(b"Host: x", b"Connection: X-Forwarded-For", b"X-Forwarded-For: 6.6.6.6"))
    assert forward_request_head(r, "2001:db8::1") == b"GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 2001:db8::1\r\n\r\n"


def test_forward_request_head_http10_is_sent_as_http11_without_connection():
    r = parse_request(b"GET / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
    assert forward_request_head(r, None) == b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


def test_forward_request_head_chunked_rewrites_transfer_encoding_last():
    r = parse_request(b"POST / HTTP/1.1\r\ntransfer-encoding: Chunked\r\nHost: x\r\nTE: trailers\r\n\r\n")
    assert forward_request_head(r, "10.0.0.1") == (
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n")


def test_forward_request_head_keeps_content_length_and_expect():
    r = parse_request(req(b"Host: x", b"Content-Length: 3", b"Expect: 100-continue", start=b"PUT /f HTTP/1.1"))
    assert forward_request_head(r, None) == (
        b"PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")


def test_forwarded_request_is_framed_the_same_by_h11():
    for head in (req(b"Host: x", b"Content-Length: 5", start=b"POST / HTTP/1.1"),
                 req(b"Host: x", b"Transfer-Encoding: chunked", b"Connection: close", start=b"POST / HTTP/1.1")):
        out = forward_request_head(parse_request(head), "192.0.2.1")
        server = h11.Connection(h11.SERVER)
        server.receive_data(out + b"5\r\nhello\r\n0\r\n\r\n" if b"chunked" in out else out + b"hello")
        ev = server.next_event()
        assert isinstance(ev, h11.Request) and ev.http_version == b"1.1"
        data = server.next_event()
        assert isinstance(data, h11.Data) and data.data == b"hello"
        assert isinstance(server.next_event(), h11.EndOfMessage)


def test_connection_naming_content_length_keeps_request_framing():
    r = parse_request(req(b"Host: x", b"Connection: content-length", b"Content-Length: 5", start=b"POST / HTTP/1.1"))
    assert r.framing == Framing(BodyKind.LENGTH, 5)
    out = forward_request_head(r, None)
    server = h11.Connection(h11.SERVER)
    server.receive_data(out + b"hello")
    server.next_event()
    data = server.next_event()
    assert isinstance(data, h11.Data) and data.data == b"hello"


# --- forward_response_head ------------------------------------------------------------------

def test_forward_response_head_keep_alive_11_has_no_connection_field():
    r = parse_response(resp(b"Content-Length: 2", b"Keep-Alive: timeout=5", b"Connection: keep-alive"), b"GET")
    assert forward_response_head(r, b"1.1", True) == b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"


def test_forward_response_head_keep_alive_10_client_gets_explicit_keep_alive():
    r = parse_response(resp(b"Content-Length: 2"), b"GET")
    assert forward_response_head(r, b"1.0", True) == (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n")


@pytest.mark.parametrize("client_version", [b"1.0", b"1.1"])
def test_forward_response_head_close_says_close(client_version):
    r = parse_response(resp(b"Content-Length: 2"), b"GET")
    assert forward_response_head(r, client_version, False) == (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")


def test_forward_response_head_chunked_and_hop_fields():
    r = parse_response(resp(b"Transfer-Encoding: chunked", b"Connection: X-Hop", b"X-Hop: 1", b"Trailer: X-Sum",
                            b"Date: d", start=b"HTTP/1.1 201 Created"), b"POST")
    assert forward_response_head(r, b"1.1", True) == (
        b"HTTP/1.1 201 Created\r\nDate: d\r\nTransfer-Encoding: chunked\r\n\r\n")


def test_forward_response_head_interim_has_no_connection_field():
    r = parse_response(b"HTTP/1.1 100 Continue\r\nX-A: 1\r\n\r\n", b"PUT")
    assert forward_response_head(r, b"1.0", False) == b"HTTP/1.1 100 Continue\r\nX-A: 1\r\n\r\n"


def test_forward_response_head_of_http10_server():
    r = parse_response(b"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\n", b"GET")
    assert forward_response_head(r, b"1.1", r.keep_alive) == (
        b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")


def test_forwarded_chunked_response_drops_content_length():
    r = parse_response(resp(b"Transfer-Encoding: chunked", b"Content-Length: 5"), b"GET")
    assert forward_response_head(r, b"1.1", r.keep_alive) == (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")


def test_connection_naming_content_length_keeps_response_framing():
    r = parse_response(resp(b"Connection: content-length", b"Content-Length: 5"), b"GET")
    assert r.framing == Framing(BodyKind.LENGTH, 5) and r.keep_alive
    assert forward_response_head(r, b"1.1", True) == b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"


# --- property: heads survive parse -> forward -> h11 ----------------------------------------

TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~",
                min_size=1, max_size=12)
VALUE = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=1, max_size=20)
END_TO_END = TOKEN.filter(lambda n: n.lower() not in {
    "host", "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
    "te", "trailer", "transfer-encoding", "upgrade", "content-length", "expect"})


@settings(max_examples=200, deadline=None)
@given(method=TOKEN.filter(lambda m: m != "CONNECT"),  # refused with 405 (test_bad_request_targets_refused)
       fields=st.lists(st.tuples(END_TO_END, VALUE), max_size=8))
def test_end_to_end_fields_are_forwarded_verbatim(method, fields):
    raw = [(n.encode(), v.encode()) for n, v in fields]
    head = b"%s /p HTTP/1.1\r\nHost: h\r\n" % method.encode() + b"".join(n + b": " + v + b"\r\n" for n, v in raw) + b"\r\n"
    assert find_head_end(head) == len(head)
    r = parse_request(head)
    assert (r.method, r.headers, r.framing, r.keep_alive) == (method.encode(), [(b"Host", b"h")] + raw,
                                                              Framing(BodyKind.NONE, 0), True)
    assert forward_request_head(r, None) == head


# --- request-target forms and versions (RFC 9112 sections 2.3, 3.2) -------------------------

def test_http_version_other_than_1x_gets_505():
    with pytest.raises(HeadError) as exc:
        parse_request(b"GET / HTTP/9.9\r\nHost: a\r\n\r\n")
    assert exc.value.status == 505


def test_absolute_form_becomes_origin_form_with_host_from_authority():
    r = parse_request(b"GET http://Example.com:8080/a/b?c=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n")
    assert r.target == b"/a/b?c=1"
    assert forward_request_head(r, None) == b"GET /a/b?c=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"


def test_absolute_form_without_path_and_without_host_in_http10():
    r = parse_request(b"GET http://example.com HTTP/1.0\r\n\r\n")
    assert r.target == b"/"
    assert r.headers == [(b"Host", b"example.com")]


@pytest.mark.parametrize("head, status", [
    (b"GET http://evil.example/x HTTP/1.1\r\nHost: a\r\n\r\n", 400),      # Host disagrees
    (b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", 400),                  # no authority
    (b"GET http://u@a/x HTTP/1.1\r\nHost: a\r\n\r\n", 400),               # userinfo
    (b"GET ftp://a/x HTTP/1.1\r\nHost: a\r\n\r\n", 400),                  # not http(s)
    (b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400),                          # asterisk, not OPTIONS
    (b"GET a.example:80 HTTP/1.1\r\nHost: a\r\n\r\n", 400),               # authority-form
    (b"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", 405),
])
def test_bad_request_targets_refused(head, status):
    with pytest.raises(HeadError) as exc:
        parse_request(head)
    assert exc.value.status == status


def test_options_asterisk_form_is_forwarded():
    r = parse_request(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")
    assert forward_request_head(r, None) == b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"


def test_chunked_response_to_http10_client_loses_its_chunked_coding():
    r = parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX: y\r\n\r\n", b"GET")
    assert forward_response_head(r, b"1.0", False) == b"HTTP/1.1 200 OK\r\nX: y\r\nConnection: close\r\n\r\n"


# --- h11's head readers and its public Connection agree -------------------------------------

_REQUEST_HEADS = [
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET / HTTP/1.0\r\n\r\n",
    b"GE T / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
    b"GET / HTTP/1.1\nHost: a\n\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 2\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nX: \x00\r\n\r\n",
]
_RESPONSE_HEADS = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.0 200 OK\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"NOT HTTP\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
]


def _outcome(fn, *args):
    try:
        ev = fn(*args)
    except h11.ProtocolError as exc:
        return ("error", exc.error_status_hint)
    return (type(ev).__name__, getattr(ev, "status_code", None), getattr(ev, "target", None),
            list(ev.headers.raw_items()) if hasattr(ev, "headers") else None)


@pytest.mark.parametrize("head", _REQUEST_HEADS)
def test_request_reader_agrees_with_h11_connection(head):
    from splicer.http import h1
    assert _outcome(h1._request_event, head) == _outcome(h1._request_event_public, head)


@pytest.mark.parametrize("head", _RESPONSE_HEADS)
def test_response_reader_agrees_with_h11_connection(head):
    from splicer.http import h1
    assert _outcome(h1._response_event, head, b"GET") == _outcome(h1._response_event_public, head, b"GET")


# --- Upgrade (RFC 9110 section 7.8) ----------------------------------------------------------

def test_upgrade_request_keeps_upgrade_when_forwarded():
    r = parse_request(b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n")
    assert r.upgrade == b"websocket"
    assert forward_request_head(r, None) == (
        b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n")


@pytest.mark.parametrize("head", [
    b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n",                      # not in Connection
    b"POST /ws HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",  # not GET
    b"GET /ws HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",          # not 1.1
])
def test_upgrade_only_for_a_proper_request(head):
    r = parse_request(head)
    assert r.upgrade is None
    assert b"upgrade" not in forward_request_head(r, None).lower()


def test_101_accepted_only_when_upgrade_was_requested():
    head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    assert head_error(parse_response, head, b"GET").status == 502
    r = parse_response(head, b"GET", upgrade_requested=True)
    assert forward_response_head(r, b"1.1", True) == (
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n")


def test_forwarded_response_memo_keys_on_the_request_method():
    from splicer.http.h1 import forwarded_response, parse_request, parse_response
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    get = parse_request(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    head = parse_request(b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n")
    old = parse_request(b"GET / HTTP/1.0\r\nHost: a\r\n\r\n")
    for _ in range(2):  # the second round answers from the memo
        assert forwarded_response(raw, parse_response(raw, b"HEAD"), head, True) == b"HTTP/1.1 200 OK\r\n\r\n"
        assert forwarded_response(raw, parse_response(raw, b"GET"), get, True) == (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        assert forwarded_response(raw, parse_response(raw, b"GET"), old, False) == (
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")


def test_forwarded_request_memo_keys_on_the_addresses():
    from splicer.http.h1 import forwarded_request, parse_request
    raw = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    for _ in range(2):
        assert forwarded_request(raw, parse_request(raw), "10.0.0.1") == (
            b"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n")
        assert forwarded_request(raw, parse_request(raw), None) == b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        assert forwarded_request(raw, parse_request(raw), "10.0.0.1", (("for",), "10.0.0.1", "10.0.0.2")) == (
            b"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 10.0.0.1\r\nForwarded: for=10.0.0.1\r\n\r\n")


def test_parsed_heads_come_back_as_copies():
    from splicer.http.h1 import parse_request
    raw = b"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n"
    a = parse_request(raw)
    a.headers = []
    a.keep_alive = False
    b = parse_request(raw)
    assert b.headers == [(b"Host", b"a"), (b"Expect", b"100-continue")] and b.keep_alive
