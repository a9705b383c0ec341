"""splicer.http.h1 head builders: the exact bytes forward_request_head, forward_response_head,
forwarded_request and forwarded_response send, for the cases a proxy most easily gets wrong
(101 responses, header rules, `option forwarded`, repeated Content-Length, Transfer-Encoding
checks, absolute-form OPTIONS)."""
import pytest

from splicer.http import h1
from splicer.http.framing import BodyKind, Framing
from splicer.http.h1 import (
    HeadError,
    forward_request_head,
    forward_response_head,
    forwarded_request,
    forwarded_response,
    parse_request,
    parse_response,
)
from splicer.http.rules import StreamInfo, parse_rule

STREAM = StreamInfo(src="192.0.2.7", src_port=5555, dst="198.51.100.1", dst_port=8080,
                    fe_name="fe", be_name="be")

WS_REQUEST = (b"GET /chat HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
WS_101 = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat\r\n"
          b"Keep-Alive: timeout=5\r\n\r\n")


def request_rules(*rules):
    return tuple(parse_rule(list(words), "request") for words in rules)


def response_rules(*rules):
    return tuple(parse_rule(list(words), "response") for words in rules)


def error_of(head, **kw):
    with pytest.raises(HeadError) as exc:
        parse_request(head, **kw)
    return exc.value


# --- 101 Switching Protocols ------------------------------------------------------------------

def test_101_forwarded_keeps_every_end_to_end_field_and_rewrites_connection_upgrade_last():
    req = parse_request(WS_REQUEST)
    resp = parse_response(WS_101, b"GET", upgrade_requested=True)
    expected = (b"HTTP/1.1 101 Switching Protocols\r\n"
                b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat\r\n"
                b"Connection: upgrade\r\nUpgrade: websocket\r\n\r\n")
    assert forward_response_head(resp, b"1.1", True) == expected
    # keep_alive does not matter to a 101: the connection becomes a tunnel, no "close"
    assert forward_response_head(resp, b"1.1", False) == expected
    assert forwarded_response(WS_101, resp, req, True) == expected


def test_101_upgrade_fields_are_joined_and_stripped():
    raw = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade:  websocket \r\nConnection: upgrade\r\n"
           b"upgrade: chat/1\r\nX-A: 1\r\n\r\n")
    resp = parse_response(raw, b"GET", upgrade_requested=True)
    assert forward_response_head(resp, b"1.1", True) == (
        b"HTTP/1.1 101 Switching Protocols\r\nX-A: 1\r\nConnection: upgrade\r\n"
        b"Upgrade: websocket, chat/1\r\n\r\n")


def test_101_without_upgrade_field_gets_connection_upgrade_only():
    resp = parse_response(b"HTTP/1.1 101 Switching Protocols\r\nX-A: 1\r\n\r\n", b"GET", upgrade_requested=True)
    assert forward_response_head(resp, b"1.1", True) == (
        b"HTTP/1.1 101 Switching Protocols\r\nX-A: 1\r\nConnection: upgrade\r\n\r\n")


def test_101_to_a_request_that_did_not_ask_is_502_with_the_reason():
    with pytest.raises(HeadError) as exc:
        parse_response(WS_101, b"GET")
    assert (exc.value.status, str(exc.value)) == (502, "unsolicited 101 Switching Protocols")


def test_upgrade_request_forwarded_with_its_end_to_end_fields():
    req = parse_request(WS_REQUEST)
    assert (req.upgrade, req.keep_alive, req.framing) == (b"websocket", True, Framing(BodyKind.NONE, 0))
    assert forward_request_head(req, "192.0.2.7") == (
        b"GET /chat HTTP/1.1\r\nHost: h\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Version: 13\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
        b"X-Forwarded-For: 192.0.2.7\r\n\r\n")


def test_upgrade_values_of_several_fields_are_joined():
    req = parse_request(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: a \r\nupgrade: b\r\n\r\n")
    assert req.upgrade == b"a, b"


def test_upgrade_in_connection_without_an_upgrade_field_is_no_upgrade():
    req = parse_request(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n\r\n")
    assert req.upgrade is None
    assert forward_request_head(req, None) == b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"


# --- header rules and `option forwarded` in the head builders -------------------------------

def test_request_rules_run_after_hop_by_hop_removal_and_before_forwarded_fields():
    req = parse_request(b"GET /p?q=1 HTTP/1.1\r\nHost: h\r\nX-Src: forged\r\nX-Forwarded-For: 6.6.6.6\r\n"
                        b"Connection: X-Hop\r\nX-Hop: 1\r\n\r\n")
    rules = request_rules(["set-header", "X-Src", "%[src]:%cp"], ["del-header", "X-Forwarded-For"],
                          ["add-header", "X-Path", "%HP %[query] %[hdr(host)] %[hdr(x-hop)]"],
                          ["add-header", "Via", "1.1 %b"])
    fwd = (("proto", "host", "by", "for"), "192.0.2.7", "198.51.100.1")
    assert forward_request_head(req, "192.0.2.7", fwd, rules, STREAM) == (
        b"GET /p?q=1 HTTP/1.1\r\nHost: h\r\nX-Src: 192.0.2.7:5555\r\nX-Path: /p q=1 h \r\nVia: 1.1 be\r\n"
        b"X-Forwarded-For: 192.0.2.7\r\nForwarded: proto=http;host=\"h\";by=198.51.100.1;for=192.0.2.7\r\n\r\n")


def test_request_rules_without_stream_info_are_not_run():
    req = parse_request(b"GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n")
    rules = request_rules(["del-header", "X-A"])
    assert forward_request_head(req, None, None, rules, None) == b"GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n"
    assert forward_request_head(req, None, None, rules, STREAM) == b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"


def test_request_rules_read_the_method_and_target_of_the_request():
    req = parse_request(b"DELETE /a/b?c HTTP/1.1\r\nHost: h\r\n\r\n")
    rules = request_rules(["set-header", "X-Req", "%HM %HU %[path] %[url] %[dst]:%[dst_port] %f"])
    assert forward_request_head(req, None, None, rules, STREAM) == (
        b"DELETE /a/b?c HTTP/1.1\r\nHost: h\r\nX-Req: DELETE /a/b?c /a/b /a/b?c 198.51.100.1:8080 fe\r\n\r\n")


def test_request_rules_see_the_empty_host_given_to_an_http10_request():
    req = parse_request(b"GET / HTTP/1.0\r\n\r\n")
    rules = request_rules(["set-header", "X-Host", "[%[req.hdr(host)]]"])
    assert forward_request_head(req, None, None, rules, STREAM) == (
        b"GET / HTTP/1.1\r\nHost: \r\nX-Host: []\r\n\r\n")


def test_request_rules_cannot_remove_the_upgrade_this_hop_passes_on():
    req = parse_request(WS_REQUEST)
    rules = request_rules(["del-header", "Sec-WebSocket-Key"])
    assert forward_request_head(req, None, None, rules, STREAM) == (
        b"GET /chat HTTP/1.1\r\nHost: h\r\nSec-WebSocket-Version: 13\r\nConnection: upgrade\r\n"
        b"Upgrade: websocket\r\n\r\n")


def test_forwarded_host_comes_from_the_host_field_after_the_rules():
    req = parse_request(b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n")
    rules = request_rules(["set-header", "Host", "b.example"])
    fwd = (("host",), "192.0.2.7", "198.51.100.1")
    assert forward_request_head(req, None, fwd, rules, STREAM) == (
        b"GET / HTTP/1.1\r\nHost: b.example\r\nForwarded: host=\"b.example\"\r\n\r\n")
    assert forward_request_head(req, None, fwd) == (
        b"GET / HTTP/1.1\r\nHost: a.example\r\nForwarded: host=\"a.example\"\r\n\r\n")


def test_forwarded_without_host_field_has_no_host_parameter():
    req = parse_request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    rules = request_rules(["del-header", "Host"])
    fwd = (("host", "for"), "2001:db8::7", "198.51.100.1")
    assert forward_request_head(req, None, fwd, rules, STREAM) == (
        b"GET / HTTP/1.1\r\nForwarded: for=\"[2001:db8::7]\"\r\n\r\n")


def test_forwarded_uses_the_first_host_field():
    req = parse_request(b"GET / HTTP/1.1\r\nhost: one\r\nX: 1\r\n\r\n")
    rules = request_rules(["add-header", "HOST", "two"])
    fwd = (("host", "by"), "192.0.2.7", "198.51.100.1")
    assert forward_request_head(req, None, fwd, rules, STREAM) == (
        b"GET / HTTP/1.1\r\nhost: one\r\nX: 1\r\nHOST: two\r\nForwarded: host=\"one\";by=198.51.100.1\r\n\r\n")


def test_forwarded_for_and_forwarded_are_both_added_in_that_order():
    req = parse_request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert forwarded_request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", req, "192.0.2.7",
                             (("proto", "for"), "192.0.2.7", "198.51.100.1")) == (
        b"GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 192.0.2.7\r\nForwarded: proto=http;for=192.0.2.7\r\n\r\n")


def test_response_rules_run_on_a_final_response_with_the_request_to_read():
    req = parse_request(b"POST /up?x=2 HTTP/1.1\r\nHost: h\r\nX-Trace: t1\r\nContent-Length: 0\r\n\r\n")
    resp = parse_response(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-Trace: origin\r\nServer: s\r\n\r\n",
                          b"POST")
    rules = response_rules(["set-header", "X-Trace", "%[req.hdr(x-trace)]"], ["del-header", "Server"],
                           ["add-header", "X-Info", "%ST %HM %HU %[res.hdr(content-length)] %[hdr(x-trace)]"])
    assert forward_response_head(resp, b"1.1", True, rules, STREAM, req) == (
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-Trace: t1\r\nX-Info: 201 POST /up?x=2 2 t1\r\n\r\n")


def test_response_rules_run_before_connection_close_is_added():
    resp = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", b"GET")
    rules = response_rules(["add-header", "X-Last", "1"])
    assert forward_response_head(resp, b"1.1", False, rules, STREAM, None) == (
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Last: 1\r\nConnection: close\r\n\r\n")
    assert forward_response_head(resp, b"1.0", True, rules, STREAM, None) == (
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Last: 1\r\nConnection: keep-alive\r\n\r\n")


def test_response_rules_without_a_request_read_empty_request_samples():
    resp = parse_response(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", b"GET")
    rules = response_rules(["add-header", "X-Info", "[%HM][%HU][%[req.hdr(host)]][%ST]"])
    assert forward_response_head(resp, b"1.1", True, rules, STREAM) == (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nX-Info: [][][][503]\r\n\r\n")


def test_response_rules_run_on_101_but_not_on_other_interim_responses():
    rules = response_rules(["add-header", "X-Seen", "%ST"])
    cont = parse_response(b"HTTP/1.1 100 Continue\r\n\r\n", b"PUT")
    assert forward_response_head(cont, b"1.1", True, rules, STREAM) == b"HTTP/1.1 100 Continue\r\n\r\n"
    hints = parse_response(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n", b"GET")
    assert forward_response_head(hints, b"1.1", True, rules, STREAM) == (
        b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n")
    up = parse_response(WS_101, b"GET", upgrade_requested=True)
    assert forward_response_head(up, b"1.1", True, rules, STREAM, parse_request(WS_REQUEST)) == (
        b"HTTP/1.1 101 Switching Protocols\r\n"
        b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat\r\n"
        b"X-Seen: 101\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n")


def test_response_rules_without_stream_info_are_not_run():
    resp = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nServer: s\r\n\r\n", b"GET")
    rules = response_rules(["del-header", "Server"])
    assert forward_response_head(resp, b"1.1", True, rules, None) == (
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nServer: s\r\n\r\n")


# --- repeated Content-Length ------------------------------------------------------------------

@pytest.mark.parametrize("fields", [
    (b"Content-Length: 5, 5",),
    (b"Content-Length: 5", b"Content-Length: 5"),
    (b"Content-Length: 5 , 5", b"content-length: 5"),
])
def test_request_with_repeated_equal_content_length_is_forwarded_with_one(fields):
    raw = b"POST / HTTP/1.1\r\nHost: h\r\n" + b"".join(f + b"\r\n" for f in fields) + b"X: y\r\n\r\n"
    req = parse_request(raw)
    assert req.framing == Framing(BodyKind.LENGTH, 5)
    name = fields[0].split(b":")[0]
    assert forward_request_head(req, None) == b"POST / HTTP/1.1\r\nHost: h\r\n%s: 5\r\nX: y\r\n\r\n" % name
    assert forwarded_request(raw, req, None) == b"POST / HTTP/1.1\r\nHost: h\r\n%s: 5\r\nX: y\r\n\r\n" % name


@pytest.mark.parametrize("fields", [
    (b"Content-Length: 5, 5",),
    (b"X: y", b"Content-Length: 5", b"content-length: 5, 5"),
])
def test_response_with_repeated_equal_content_length_is_forwarded_with_one(fields):
    raw = b"HTTP/1.1 200 OK\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n"
    resp = parse_response(raw, b"GET")
    assert resp.framing == Framing(BodyKind.LENGTH, 5)
    kept = [f for f in fields if not f.lower().startswith(b"content-length")]
    first = next(f for f in fields if f.lower().startswith(b"content-length")).split(b":")[0]
    cl_at = next(i for i, f in enumerate(fields) if f.lower().startswith(b"content-length"))
    out = kept[:cl_at] + [first + b": 5"] + kept[cl_at:]
    assert forward_response_head(resp, b"1.1", True) == b"HTTP/1.1 200 OK\r\n" + b"".join(
        f + b"\r\n" for f in out) + b"\r\n"


def test_differing_repeated_content_length_is_refused():
    err = error_of(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")
    assert (err.status, str(err)) == (400, "conflicting Content-Length headers")
    with pytest.raises(HeadError) as exc:
        parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", b"GET")
    assert (exc.value.status, str(exc.value)) == (
        502, "invalid response from server: conflicting Content-Length headers")


@pytest.mark.parametrize("cl", [b"0, 0", b"0\r\nContent-Length: 0"])
def test_repeated_content_length_zero_request_is_forwarded_with_one(cl):
    req = parse_request(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %s\r\n\r\n" % cl)
    assert req.framing == Framing(BodyKind.NONE, 0)
    assert forward_request_head(req, None) == b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"


@pytest.mark.parametrize("method, status", [(b"HEAD", 200), (b"GET", 304)])
def test_bodyless_response_keeps_one_content_length_of_a_repeated_one(method, status):
    raw = b"HTTP/1.1 %d X\r\nContent-Length: 5, 5\r\nX: 1\r\ncontent-length: 5\r\n\r\n" % status
    resp = parse_response(raw, method)
    assert resp.framing == Framing(BodyKind.NONE, 0)
    assert forward_response_head(resp, b"1.1", True) == (
        b"HTTP/1.1 %d X\r\nContent-Length: 5\r\nX: 1\r\n\r\n" % status)


# --- Transfer-Encoding checks, wherever the field is ------------------------------------------

@pytest.mark.parametrize("te, status, message", [
    (b"gzip", 400, "Transfer-Encoding: chunked is not the final coding, once"),
    (b"chunked, chunked", 400, "Transfer-Encoding: chunked is not the final coding, once"),
    (b"", 400, "Transfer-Encoding: chunked is not the final coding, once"),
    (b"gzip, chunked", 501, "only the chunked transfer coding is supported"),
])
@pytest.mark.parametrize("position", ["first", "last"])
def test_request_transfer_encoding_is_checked_in_any_position(te, status, message, position):
    field = b"Transfer-Encoding: " + te
    fields = [field, b"Host: h"] if position == "first" else [b"Host: h", b"X: 1", field]
    raw = b"POST / HTTP/1.1\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n"
    err = error_of(raw)
    assert (err.status, str(err)) == (status, message)


def test_request_transfer_encoding_first_and_chunked_is_accepted_and_forwarded_last():
    req = parse_request(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: h\r\n\r\n")
    assert req.framing == Framing(BodyKind.CHUNKED)
    assert forward_request_head(req, None) == b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"


def test_request_transfer_encoding_codings_add_up_over_fields():
    err = error_of(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert (err.status, str(err)) == (501, "only the chunked transfer coding is supported")


def test_a_field_value_mentioning_transfer_encoding_is_not_checked_as_one():
    req = parse_request(b"POST / HTTP/1.1\r\nHost: h\r\nX-Note: transfer-encoding: gzip\r\n"
                        b"Content-Length: 1\r\n\r\n")
    assert req.framing == Framing(BodyKind.LENGTH, 1)


def test_transfer_encoding_with_content_length_is_refused_in_a_request():
    err = error_of(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\nHost: h\r\n\r\n")
    assert (err.status, str(err)) == (400, "both Transfer-Encoding and Content-Length")


# --- absolute-form and OPTIONS (RFC 9112 sections 3.2.2 and 3.2.4) ------------------------------

@pytest.mark.parametrize("target, host, forwarded_target, forwarded_host", [
    (b"http://h", b"h", b"*", b"h"),
    (b"http://h/", b"h", b"/", b"h"),
    (b"HTTP://H:8080", b"h:8080", b"*", b"h:8080"),
    (b"https://h?x=1", b"h", b"/?x=1", b"h"),
    (b"http://h/a?b", b"h", b"/a?b", b"h"),
])
def test_absolute_form_options_is_rewritten(target, host, forwarded_target, forwarded_host):
    req = parse_request(b"OPTIONS %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, host))
    assert req.target == forwarded_target
    assert forward_request_head(req, None) == b"OPTIONS %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
        forwarded_target, forwarded_host)


def test_absolute_form_options_without_host_takes_the_authority():
    req = parse_request(b"OPTIONS http://h.example:81 HTTP/1.0\r\nX: 1\r\n\r\n")
    assert (req.target, req.headers) == (b"*", [(b"Host", b"h.example:81"), (b"X", b"1")])
    assert forward_request_head(req, None) == b"OPTIONS * HTTP/1.1\r\nHost: h.example:81\r\nX: 1\r\n\r\n"


def test_options_asterisk_form_is_forwarded_unchanged():
    raw = b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"
    req = parse_request(raw)
    assert req.target == b"*"
    assert forwarded_request(raw, req, "192.0.2.7") == (
        b"OPTIONS * HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 192.0.2.7\r\n\r\n")


def test_absolute_form_get_without_path_becomes_slash_not_asterisk():
    req = parse_request(b"GET http://h HTTP/1.1\r\nHost: h\r\n\r\n")
    assert forward_request_head(req, None) == b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"


def test_absolute_form_query_without_path_gets_a_slash():
    req = parse_request(b"GET http://h?q HTTP/1.1\r\nHost: h\r\n\r\n")
    assert req.target == b"/?q"


def test_absolute_form_host_comparison_ignores_case_and_surrounding_space():
    req = parse_request(b"GET http://H.Example/x HTTP/1.1\r\nHost:  h.example \r\n\r\n")
    assert forward_request_head(req, None) == b"GET /x HTTP/1.1\r\nHost: h.example\r\n\r\n"


def test_absolute_form_checks_the_first_host_against_the_authority():
    err = error_of(b"GET http://a/x HTTP/1.1\r\nHost: b\r\n\r\n")
    assert (err.status, str(err)) == (400, "Host disagrees with the absolute-form request-target")


@pytest.mark.parametrize("head, status, message", [
    (b"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", 405, "CONNECT is not allowed"),
    (b"GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400, "asterisk-form request-target is only for OPTIONS"),
    (b"GET h:80 HTTP/1.1\r\nHost: h\r\n\r\n", 400, "request-target is neither origin-form nor absolute-form"),
    (b"GET ws://h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400, "request-target is neither origin-form nor absolute-form"),
    (b"GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400, "absolute-form request-target without a valid authority"),
    (b"GET http://?x HTTP/1.1\r\nHost: h\r\n\r\n", 400, "absolute-form request-target without a valid authority"),
    (b"GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400, "absolute-form request-target without a valid authority"),
])
def test_request_target_errors_are_exact(head, status, message):
    err = error_of(head)
    assert (err.status, str(err)) == (status, message)


def test_absolute_form_authority_is_cut_at_the_first_slash_or_query():
    req = parse_request(b"GET http://h?a=/b HTTP/1.1\r\nHost: h\r\n\r\n")
    assert req.target == b"/?a=/b"
    req = parse_request(b"GET http://h/a?b/c HTTP/1.1\r\nHost: h\r\n\r\n")
    assert req.target == b"/a?b/c"


# --- the memoized builders ---------------------------------------------------------------------

def test_forwarded_response_to_an_http10_client_that_keeps_alive():
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
    req = parse_request(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    resp = parse_response(raw, b"GET")
    for _ in range(2):
        assert forwarded_response(raw, resp, req, True) == (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n")


def test_forwarded_response_memo_keys_on_keep_alive_and_upgrade():
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
    req = parse_request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    resp = parse_response(raw, b"GET")
    for _ in range(2):
        assert forwarded_response(raw, resp, req, True) == b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
        assert forwarded_response(raw, resp, req, False) == (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")


def test_forwarded_builders_memoize_short_heads_only():
    memo = h1.HeadMemo(max_entries=2, max_len=10, copies=False)
    memo.put("a", 10, b"A")
    memo.put("b", 11, b"B")
    assert (memo.get("a"), memo.get("b")) == (b"A", None)
    memo.put("c", 1, b"C")
    memo.put("d", 1, b"D")  # a third entry pushes out the oldest
    assert (memo.get("a"), memo.get("c"), memo.get("d")) == (None, b"C", b"D")


def test_head_memo_defaults():
    memo = h1.HeadMemo()
    assert (memo.max_entries, memo.max_len, memo.copies) == (1024, 4096, True)


def test_response_rules_read_the_stream():
    resp = parse_response(b"HTTP/1.1 204 No Content\r\n\r\n", b"GET")
    rules = response_rules(["add-header", "X-Via", "%f/%b %ci:%cp"])
    assert forward_response_head(resp, b"1.1", True, rules, STREAM) == (
        b"HTTP/1.1 204 No Content\r\nX-Via: fe/be 192.0.2.7:5555\r\n\r\n")
