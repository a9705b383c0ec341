"""splicer.http.h1 on heads that come with the engine's index (no engine here: a small
pure-Python indexer below writes the index the C tokenizer would; tests/engine/
test_h1_tokenizer.py holds the real one to h11). The parse from an index must be the h11
parse, and a head forwarded as its own byte ranges must be the head built field by field.
"""
from __future__ import annotations

import pytest

from splicer.http import h1
from splicer.http.h1 import HeadError

NAMED = {  # name: (its flag, its id), as native/include/splicer/engine.h has them
    b"host": (h1.F_HOST, 1), b"content-length": (h1.F_CONTENT_LENGTH, 2),
    b"transfer-encoding": (h1.F_TRANSFER_ENCODING, 3), b"connection": (h1.F_CONNECTION, 4),
    b"expect": (h1.F_EXPECT, 5), b"upgrade": (h1.F_UPGRADE, 6), b"keep-alive": (h1.F_HOP, 7),
    b"proxy-connection": (h1.F_HOP, 8), b"te": (h1.F_HOP, 9), b"trailer": (h1.F_HOP, 10),
    b"proxy-authenticate": (h1.F_HOP, 11), b"proxy-authorization": (h1.F_HOP, 12)}


def index_of(head: bytes) -> list[int]:
    """The index of a well-formed head with CRLF line ends (as spl_h1_parse writes it)."""
    first_end = head.index(b"\r\n")
    if head.startswith(b"HTTP/"):
        reason = (13, first_end) if head[12:13] == b" " else (12, 12)
        ix = [h1.INDEX_OK, h1.INDEX_RESPONSE, 0, h1.F_PLAIN, 5, int(head[9:12]), *reason]
    else:
        sp1 = head.index(b" ")
        sp2 = head.index(b" ", sp1 + 1)
        ix = [h1.INDEX_OK, h1.INDEX_REQUEST, 0, h1.F_PLAIN, sp1, sp1 + 1, sp2, sp2 + 6]
    pos = first_end + 2
    while head[pos:pos + 2] != b"\r\n":
        end = head.index(b"\r\n", pos)
        colon = head.index(b":", pos)
        vs = colon + 1
        while head[vs:vs + 1] in (b" ", b"\t"):
            vs += 1
        ve = end
        while ve > vs and head[ve - 1:ve] in (b" ", b"\t"):
            ve -= 1
        if vs != colon + 2 or head[colon + 1:colon + 2] != b" " or ve != end:
            ix[3] &= ~h1.F_PLAIN
        flag, name_id = NAMED.get(head[pos:colon].lower(), (0, 0))
        ix[3] |= flag
        ix += [pos, colon, vs, ve, name_id]
        ix[2] += 1
        pos = end + 2
    return ix


BROWSER = (b"GET /p?q=1 HTTP/1.1\r\nHost: www.example.com\r\nConnection: keep-alive\r\n"
           b"User-Agent: Mozilla/5.0 (X11)\r\nAccept: */*\r\nCookie: sid=1; t=2\r\n\r\n")
ORIGIN = (b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 12\r\nConnection: keep-alive\r\n"
          b"ETag: \"x\"\r\n\r\n")


def test_index_of_matches_the_documented_layout():
    ix = index_of(b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
    assert ix == [0, 1, 1, h1.F_PLAIN | h1.F_HOST, 3, 4, 6, 12, 17, 21, 23, 24, 1]


@pytest.mark.parametrize("head", [
    BROWSER,
    b"GET / HTTP/1.0\r\nUser-Agent: x\r\n\r\n",
    b"POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    b"POST /f HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTE: trailers\r\n\r\n",
    b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    b"GET http://h.example/x?y HTTP/1.1\r\nHost: h.example\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nX-A:  spaced \r\nX-B:\r\n\r\n",
    b"GET / HTTP/1.0\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\n\r\n",
])
def test_parse_request_by_index_is_the_h11_parse(head):
    ix = index_of(head)
    assert h1.parse_request(head, 101, ix) == h1._parse_request(head)


@pytest.mark.parametrize("head, status", [
    (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),                              # Host syntax
    (b"CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 405),
    (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),            # TE in 1.0
    (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nY: 2\r\n\r\n", 400),                 # maxhdr 2
])
def test_parse_request_by_index_refuses_as_h11(head, status):
    with pytest.raises(HeadError) as by_index:
        h1.parse_request(head, 2, index_of(head))
    with pytest.raises(HeadError) as by_h11:
        h1._parse_request(head, 2)
    assert by_index.value.status == by_h11.value.status == status


def test_an_index_that_is_not_ok_or_not_a_request_goes_to_h11(monkeypatch):
    calls = []
    real = h1._parse_request
    monkeypatch.setattr(h1, "_parse_request", lambda *a: calls.append(a) or real(*a))
    ix = index_of(BROWSER)
    h1.parse_request(BROWSER, 101, [h1.INDEX_UNSURE] + ix[1:])
    h1._REQUESTS.reset()  # (a parse is remembered by the head's bytes)
    h1.parse_request(BROWSER, 101, ix[:1] + [h1.INDEX_RESPONSE] + ix[2:])
    assert len(calls) == 2
    h1._REQUESTS.reset()
    assert h1.parse_request(BROWSER, 101, ix).source[1] is ix and len(calls) == 2


def test_flags_skip_only_absent_fields():
    """An index without F_CONNECTION says there is no Connection field: a close is not seen."""
    head = b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
    ix = index_of(head)
    assert h1.parse_request(head, 101, ix).keep_alive is False
    h1._REQUESTS.reset()
    ix[3] &= ~h1.F_CONNECTION
    assert h1.parse_request(head, 101, ix).keep_alive is True


@pytest.mark.parametrize("head", [
    ORIGIN,
    b"HTTP/1.1 204 No Content\r\nServer: s\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5\r\n\r\n",
    b"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
    b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
])
@pytest.mark.parametrize("method", [b"GET", b"HEAD"])
def test_parse_response_by_index_is_the_h11_parse(head, method):
    ix = index_of(head)
    assert h1.parse_response(head, method, True, ix) == h1._parse_response(head, method, True)


def test_parse_response_by_index_refuses_an_unsolicited_101():
    head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
    with pytest.raises(HeadError) as e:
        h1.parse_response(head, b"GET", False, index_of(head))
    assert e.value.status == 502


# --- forwarding by byte ranges ----------------------------------------------------------------

@pytest.mark.parametrize("head", [
    BROWSER,
    b"GET / HTTP/1.0\r\nHost: h\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\n\r\n",
    b"POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nKeep-Alive: 5\r\nTE: trailers\r\nProxy-Connection: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nConnection: close\r\nHost: h\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nX-Last: v\r\nConnection: x-last\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nConnection: content-length, host\r\nContent-Length: 0\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nX-Empty: \r\n\r\n",
])
@pytest.mark.parametrize("ip", [None, "192.0.2.1"])
def test_request_forwarded_by_ranges_is_the_head_built_field_by_field(head, ip):
    req = h1.parse_request(head, 101, index_of(head))
    fast = h1.forwarded_request(head, req, ip)
    assert h1._request_by_ranges(req, req.source, ip, None) == fast
    assert fast == h1.forward_request_head(req, ip)


@pytest.mark.parametrize("head, why", [
    (b"GET / HTTP/1.1\r\nHost:h\r\n\r\n", "a field line not as serialize writes it"),
    (b"GET / HTTP/1.1\r\nHost: h \r\n\r\n", "trailing space"),
    (b"GET / HTTP/1.0\r\nX: 1\r\n\r\n", "no Host: one is added"),
    (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", "chunked: TE moves to the end"),
    (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 05\r\n\r\n", "a length rewritten"),
    (b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n", "an upgrade"),
])
def test_request_not_forwarded_by_ranges_when_the_bytes_would_differ(head, why):
    req = h1.parse_request(head, 101, index_of(head))
    assert h1._request_by_ranges(req, req.source, "192.0.2.1", None) is None, why
    assert h1.forwarded_request(head, req, "192.0.2.1") == h1.forward_request_head(req, "192.0.2.1")


def test_a_target_rewritten_from_absolute_form_is_built_field_by_field():
    head = b"GET http://h/x HTTP/1.1\r\nHost: h\r\n\r\n"
    req = h1.parse_request(head, 101, index_of(head))
    assert req.source is None and req.target == b"/x"
    assert h1.forwarded_request(head, req, "192.0.2.1") == h1.forward_request_head(req, "192.0.2.1")


def test_request_not_forwarded_by_ranges_with_forwarded_or_new_fields():
    req = h1.parse_request(BROWSER, 101, index_of(BROWSER))
    fwd = (("for",), "192.0.2.1", "192.0.2.2")
    assert h1._request_by_ranges(req, req.source, None, fwd) is None
    assert h1.forwarded_request(BROWSER, req, None, fwd) == h1.forward_request_head(req, None, fwd)
    req.headers = req.headers + [(b"X-New", b"1")]  # a rule's edit: the ranges no longer hold
    assert h1.forwarded_request(BROWSER, req, None) == h1.forward_request_head(req, None)
    assert b"X-New: 1" in h1.forwarded_request(BROWSER, req, None)
    req = h1.parse_request(BROWSER, 101, index_of(BROWSER))
    req.target = b"/rewritten"
    assert h1.forwarded_request(BROWSER, req, None).startswith(b"GET /rewritten HTTP/1.1\r\n")


@pytest.mark.parametrize("head", [
    ORIGIN,
    b"HTTP/1.1 204 No Content\r\nServer: s\r\nConnection: keep-alive\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\r\n",
    b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
])
@pytest.mark.parametrize("version, keep", [(b"1.1", True), (b"1.1", False), (b"1.0", True)])
def test_response_forwarded_by_ranges_is_the_head_built_field_by_field(head, version, keep):
    resp = h1.parse_response(head, b"GET", False, index_of(head))
    req = h1.parse_request(b"GET / HTTP/%s\r\nHost: h\r\n\r\n" % version)
    fast = h1._response_by_ranges(resp, resp.source, version, keep)
    if version == b"1.0" and resp.framing.kind.value == "chunked":
        assert fast is None  # de-chunked for a 1.0 client: built field by field
    else:
        assert fast is not None
        assert fast == h1.forward_response_head(resp, version, keep)
    assert h1.forwarded_response(head, resp, req, keep) == h1.forward_response_head(resp, version, keep)


@pytest.mark.parametrize("head", [
    b"HTTP/1.1 200 OK\r\nContent-Length:3\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 03\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nServer: s\r\n\r\n",  # close-delimited
])
def test_response_not_forwarded_by_ranges_when_the_bytes_would_differ(head):
    resp = h1.parse_response(head, b"GET", False, index_of(head))
    assert h1._response_by_ranges(resp, resp.source, b"1.1", True) is None


# --- the head memo stands aside when heads do not repeat --------------------------------------

def test_head_memo_keeps_heads_while_they_repeat():
    memo = h1.HeadMemo(copies=False)
    for i in range(3 * memo.WINDOW):
        key = b"same" if i % 2 else b"other %d" % (i % 7)
        if memo.get(key) is None:
            memo.put(key, 10, key)
    assert memo.get(b"same") == b"same" and memo._off == 0


def test_head_memo_stands_aside_on_unique_heads_and_tries_again():
    memo = h1.HeadMemo(copies=False)
    for i in range(memo.WINDOW):
        assert memo.get(b"head %d" % i) is None
        memo.put(b"head %d" % i, 10, b"v")
    # a window of misses: it emptied itself and keeps nothing for OFF lookups
    assert memo._off == memo.OFF and memo._d == {}
    memo.put(b"kept?", 10, b"v")
    assert memo.get(b"kept?") is None and memo._d == {}
    for _ in range(memo.OFF - 1):
        memo.get(b"x")
    memo.put(b"again", 10, b"v")
    assert memo._off == 0 and memo.get(b"again") == b"v"  # then it tries again


def test_parse_request_from_the_memo_is_the_parse():
    head = BROWSER
    first = h1.parse_request(head, 101, index_of(head))
    again = h1.parse_request(bytes(head), 101, index_of(head))
    assert again == first and again is not first
