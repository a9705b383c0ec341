"""Property tests: random and mutated heads through the request parsing path.

Whatever the bytes, parse_request either refuses them (HeadError with a 4xx/5xx status) or
returns a request whose forwarded head, read by a strict peer (h11), has exactly the framing
splicer decided: one Content-Length equal to ours, or chunked alone, or no body. Anything
else would be a request whose end the proxy and the origin see differently (smuggling).
"""
from __future__ import annotations

import h11
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from splicer.http.framing import BodyKind
from splicer.http.h1 import HeadError, forward_request_head, parse_request

NAMES = [b"Host", b"Content-Length", b"Transfer-Encoding", b"Connection", b"Expect", b"Upgrade",
         b"Keep-Alive", b"TE", b"X-Forwarded-For", b"content-length", b"transfer-encoding", b"X-A"]
VALUES = [b"a", b"5", b"0", b"chunked", b"Chunked", b"gzip, chunked", b"chunked, gzip", b" chunked",
          b"5, 5", b"5, 6", b"+5", b"-1", b"", b"close", b"keep-alive", b"content-length",
          b"transfer-encoding", b"100-continue", b"websocket", b"upgrade", b"18446744073709551616",
          b"\x00", b"a\rb", b"x y"]
METHODS = [b"GET", b"POST", b"PUT", b"HEAD", b"OPTIONS", b"CONNECT", b"G T", b""]
TARGETS = [b"/", b"/a?b", b"*", b"http://a/x", b"http://b/x", b"a:80", b"", b"/\x7f"]
VERSIONS = [b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1 ", b"http/1.1"]


@st.composite
def heads(draw):
    line = draw(st.sampled_from(METHODS)) + b" " + draw(st.sampled_from(TARGETS)) + b" " + draw(st.sampled_from(VERSIONS))
    fields = draw(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)), max_size=8))
    sep = draw(st.sampled_from([b": ", b":", b" : ", b":\t"]))
    eol = draw(st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"\n"]))
    head = line + eol + b"".join(n + sep + v + eol for n, v in fields) + eol
    # mutate: flip, drop or insert one byte somewhere, sometimes
    if draw(st.booleans()):
        i = draw(st.integers(0, len(head) - 1))
        op = draw(st.sampled_from(["flip", "drop", "insert"]))
        b = draw(st.integers(0, 255))
        if op == "flip":
            head = head[:i] + bytes([b]) + head[i + 1:]
        elif op == "drop":
            head = head[:i] + head[i + 1:]
        else:
            head = head[:i] + bytes([b]) + head[i:]
    return head


def peer_framing(forwarded: bytes):
    """How a strict origin (h11) frames the forwarded request: (kind, length)."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(forwarded)
    ev = conn.next_event()
    assert isinstance(ev, h11.Request), ev
    cl = [v for n, v in ev.headers if n == b"content-length"]
    te = [v for n, v in ev.headers if n == b"transfer-encoding"]
    if te:
        assert not cl, "both Content-Length and Transfer-Encoding forwarded"
        return "chunked", None
    if cl:
        assert len(cl) == 1, "several Content-Length fields forwarded"
        return "length", int(cl[0])
    return "none", 0


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(heads())
def test_parse_never_crashes_and_never_forwards_ambiguous_framing(head):
    try:
        req = parse_request(head)
    except HeadError as exc:
        assert 400 <= exc.status <= 505
        return
    forwarded = forward_request_head(req, "192.0.2.1")
    kind, length = peer_framing(forwarded)
    if req.framing.kind is BodyKind.CHUNKED:
        assert kind == "chunked"
    elif req.framing.kind is BodyKind.LENGTH:
        assert (kind, length) == ("length", req.framing.length)
    else:
        assert kind == "none" or (kind, length) == ("length", 0)
    # and what was forwarded is itself strictly valid
    assert b"\r\n\r\n" in forwarded and forwarded.count(b"\r\n\r\n") == 1
