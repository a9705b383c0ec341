"""splicer.http.h1 contract details: exact HeadError status and message per refusal, the
memos (a head seen before is not parsed or built again), copies, head_complete, and the
public h11 Connection path used when h11's head readers are missing."""
import h11
import pytest

from splicer.http import h1
from splicer.http.framing import BodyKind, Framing
from splicer.http.h1 import HeadError, parse_request, parse_response


def request_error(head, **kw):
    with pytest.raises(HeadError) as exc:
        parse_request(head, **kw)
    return exc.value.status, str(exc.value)


def response_error(head, method=b"GET", **kw):
    with pytest.raises(HeadError) as exc:
        parse_response(head, method, **kw)
    return exc.value.status, str(exc.value)


def test_head_error_defaults_to_400():
    err = HeadError("bad")
    assert (err.status, str(err)) == (400, "bad")


@pytest.mark.parametrize("head, complete", [
    (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", True),
    (b"GET / HTTP/1.1\nHost: a\n\n", True),
    (b"GET / HTTP/1.1\r\nHost: a\n\r\n", True),
    (b"GET / HTTP/1.1\r\nHost: a\r\n", False),
    (b"GET / HTTP/1.1\r\nHost: a\r\n\r", False),
    (b"", False),
])
def test_head_complete(head, complete):
    assert h1.head_complete(head) is complete


# --- responses: exact refusals ---------------------------------------------------------------------

@pytest.mark.parametrize("head, expected", [
    (b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", (502, "invalid response from server: bare LF line ending (CRLF required)")),
    (b"HTTP/1.1 200 OK\r\nX: a\x7f\r\n\r\n", (502, "invalid response from server: control character in head")),
    (b"HTTP/1.1 200 OK\r\n", (502, "incomplete response head")),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", (502, "Content-Length too large")),
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", (502, "unsolicited 101 Switching Protocols")),
])
def test_response_refusals_are_exact(head, expected):
    assert response_error(head) == expected


def test_response_h11_error_is_502_and_names_the_server():
    status, message = response_error(b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n")
    assert status == 502 and message.startswith("invalid response from server: ")
    assert len(message) > len("invalid response from server: ")


def test_unparsed_101_is_refused_unless_the_request_asked_to_upgrade():
    head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
    with pytest.raises(HeadError):
        h1._parse_response(head, b"GET")
    assert h1._parse_response(head, b"GET", True).status == 101


def test_chunked_response_with_content_length_to_an_http10_client_drops_both():
    resp = parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\nX: 1\r\n\r\n", b"GET")
    assert resp.framing == Framing(BodyKind.CHUNKED, must_close=True)
    assert h1.forward_response_head(resp, b"1.0", False) == b"HTTP/1.1 200 OK\r\nX: 1\r\nConnection: close\r\n\r\n"


# --- copies --------------------------------------------------------------------------------------

def test_response_head_copy_is_equal_and_separate():
    resp = parse_response(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n", b"GET")
    assert (resp.version, resp.keep_alive) == (b"1.0", True)
    copy = resp.copy()
    assert copy == resp and copy is not resp


def test_request_head_copy_is_equal_and_separate():
    req = parse_request(b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
                        b"Expect: 100-continue\r\n\r\n")
    copy = req.copy()
    assert copy == req and copy is not req
    assert (copy.expect_continue, copy.upgrade) == (True, b"websocket")


# --- memos: a head seen before is not parsed or built again ------------------------------------

def counting(monkeypatch, name):
    calls = []
    real = getattr(h1, name)

    def wrapper(*args, **kw):
        calls.append(args)
        return real(*args, **kw)
    monkeypatch.setattr(h1, name, wrapper)
    return calls


def test_parse_request_parses_a_head_once(monkeypatch):
    calls = counting(monkeypatch, "_parse_request")
    head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    first, second = parse_request(head), parse_request(head)
    assert first == second and first is not second
    assert parse_request(head, maxhdr=5) == first
    assert calls == [(head, 101), (head, 5)]


def test_parse_response_parses_a_head_once_per_method_and_upgrade(monkeypatch):
    calls = counting(monkeypatch, "_parse_response")
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"
    assert parse_response(head, b"GET") == parse_response(head, b"GET")
    assert parse_response(head, b"HEAD").framing == Framing(BodyKind.NONE, 0)
    parse_response(head, b"GET", True)
    assert calls == [(head, b"GET", False), (head, b"HEAD", False), (head, b"GET", True)]


def test_forwarded_request_builds_a_head_once_per_addresses(monkeypatch):
    calls = counting(monkeypatch, "forward_request_head")
    raw = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    req = parse_request(raw)
    fwd = (("for",), "192.0.2.1", "192.0.2.2")
    out = h1.forwarded_request(raw, req, "192.0.2.1", fwd)
    assert out == b"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 192.0.2.1\r\nForwarded: for=192.0.2.1\r\n\r\n"
    assert h1.forwarded_request(raw, req, "192.0.2.1", fwd) == out
    assert calls == [(req, "192.0.2.1", fwd)]


def test_forwarded_request_longer_than_the_memo_limit_is_built_each_time(monkeypatch):
    calls = counting(monkeypatch, "forward_request_head")
    raw = b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"x" * 4096 + b"\r\n\r\n"
    req = parse_request(raw)
    assert h1.forwarded_request(raw, req, None) == h1.forwarded_request(raw, req, None) == raw
    assert len(calls) == 2


def test_forwarded_response_builds_a_head_once_per_key(monkeypatch):
    calls = counting(monkeypatch, "forward_response_head")
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    resp = parse_response(raw, b"GET")
    req = parse_request(b"GET / HTTP/1.0\r\n\r\n")
    out = h1.forwarded_response(raw, resp, req, True)
    assert out == b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
    assert h1.forwarded_response(raw, resp, req, True) == out
    assert calls == [(resp, b"1.0", True)]


def test_forwarded_response_memo_keys_on_whether_the_request_asked_to_upgrade(monkeypatch):
    raw = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
    ws = parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n")
    plain = parse_request(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    resp = parse_response(raw, b"GET", upgrade_requested=True)
    calls = counting(monkeypatch, "forward_response_head")
    h1.forwarded_response(raw, resp, ws, True)
    h1.forwarded_response(raw, resp, plain, True)
    assert len(calls) == 2


# --- the public h11 Connection path --------------------------------------------------------------

@pytest.fixture
def without_head_readers(monkeypatch):
    monkeypatch.setattr(h1, "_ReceiveBuffer", None)


def test_public_path_parses_requests_the_same(without_head_readers):
    req = parse_request(b"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n")
    assert (req.method, req.target, req.headers, req.framing) == (
        b"POST", b"/a", [(b"Host", b"a"), (b"Content-Length", b"3")], Framing(BodyKind.LENGTH, 3))


def test_public_path_parses_responses_the_same(without_head_readers):
    resp = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", b"HEAD")
    assert (resp.status, resp.reason, resp.headers, resp.framing) == (
        200, b"OK", [(b"Content-Length", b"3")], Framing(BodyKind.NONE, 0))


def test_public_path_reads_a_head_of_exactly_its_length(without_head_readers):
    long_value = b"v" * 20000
    req = parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nX: " + long_value + b"\r\n\r\n")
    assert req.headers[1] == (b"X", long_value)
    resp = parse_response(b"HTTP/1.1 200 OK\r\nX: " + long_value + b"\r\nContent-Length: 0\r\n\r\n", b"GET")
    assert resp.headers[0] == (b"X", long_value)


def test_incomplete_heads_are_need_data():
    assert h1._request_event(b"GET / HTTP/1.1\r\nHost: a\r\n") is h11.NEED_DATA
    assert h1._response_event(b"HTTP/1.1 200 OK\r\n", b"GET") is h11.NEED_DATA


def test_public_path_long_incomplete_head_is_incomplete_not_too_large(without_head_readers):
    head = b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"v" * 20000 + b"\r\n"
    assert request_error(head) == (400, "incomplete request head")
    assert response_error(b"HTTP/1.1 200 OK\r\nX: " + b"v" * 20000 + b"\r\n") == (502, "incomplete response head")


# --- requests: exact refusals ----------------------------------------------------------------------

@pytest.mark.parametrize("head, expected", [
    (b"GET / HTTP/1.1\r\nHost: a\r\n", (400, "incomplete request head")),
    (b"GET / HTTP/9.9\r\nHost: a\r\n\r\n", (505, "HTTP version 9.9 not supported")),
    (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", (400, "invalid Host field value")),
    (b"GET / HTTP/1.1\r\nHost: a,b\r\n\r\n", (400, "invalid Host field value")),
    (b"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", (400, "invalid Host field value")),
    (b"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", (400, "invalid Host field value")),
    (b"GET / HTTP/1.1\r\nHost: h:8x\r\n\r\n", (400, "invalid Host field value")),
    (b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", (400, "Transfer-Encoding in an HTTP/1.0 request")),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n", (400, "control character in head")),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n", (400, "control character in head")),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: \x00\r\n\r\n", (400, "NUL byte in head")),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", (400, "bare CR in head")),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", (400, "obsolete line folding (obs-fold)")),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", (400, "obsolete line folding (obs-fold)")),
    (b"GET / HTTP/1.1\nHost: a\n\n", (400, "bare LF line ending (CRLF required)")),
    (b"GET / HTTP/1.1\r\n\r\n", (400, "Missing mandatory Host: header")),
])
def test_request_refusals_are_exact(head, expected):
    assert request_error(head) == expected


@pytest.mark.parametrize("host", [b"[::1]:80", b"[2001:db8::1]", b"h:", b"", b"a-b.c_d~e%20!$&'()*+;=", b"h:8080"])
def test_valid_host_values_are_accepted(host):
    assert parse_request(b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % host).headers == [(b"Host", host)]


def test_every_host_field_is_checked():
    assert request_error(b"GET / HTTP/1.0\r\nX: 1\r\nhost: a b\r\n\r\n") == (400, "invalid Host field value")


def test_tab_is_the_one_control_character_allowed():
    assert parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\tb\r\n\r\n").headers[1] == (b"X", b"a\tb")


@pytest.mark.parametrize("head, keep", [
    (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n", False),
    (b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", True),
    (b"GET / HTTP/1.0\r\n\r\n", False),
])
def test_request_persistence(head, keep):
    assert parse_request(head).keep_alive is keep


@pytest.mark.parametrize("expect, value", [(b"100-continue", True), (b" 100-Continue ", True), (b"100-continued", False)])
def test_expect_continue_is_exactly_the_token(expect, value):
    assert parse_request(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: %s\r\n\r\n" % expect).expect_continue is value


def test_find_head_end_searches_from_the_start_by_default():
    assert h1.find_head_end(b"\n\nrest") == 2


def test_http10_request_without_host_gets_an_empty_host_first():
    req = parse_request(b"GET / HTTP/1.0\r\nX: 1\r\nY: 2\r\n\r\n")
    assert h1.forward_request_head(req, None) == b"GET / HTTP/1.1\r\nHost: \r\nX: 1\r\nY: 2\r\n\r\n"


def test_a_memoized_head_is_handed_out_as_a_new_copy_each_time():
    raw = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    parse_request(raw)
    second = parse_request(raw)
    second.headers = []
    assert parse_request(raw).headers == [(b"Host", b"a")]


@pytest.mark.parametrize("target, origin_form", [
    (b"http://h/a://b", b"/a://b"),    # the scheme ends at the first "://"
    (b"http://h?a/b?c", b"/?a/b?c"),   # the authority ends at the first "?" or "/"
])
def test_absolute_form_is_split_at_the_first_separators(target, origin_form):
    assert parse_request(b"GET %s HTTP/1.1\r\nHost: h\r\n\r\n" % target).target == origin_form


def test_transfer_encoding_value_with_a_colon_is_refused_by_the_raw_check():
    assert request_error(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip:x\r\n\r\n") == (
        400, "Transfer-Encoding: chunked is not the final coding, once")
