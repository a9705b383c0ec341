"""Requests with a body on idle server connections (haproxy `http-reuse`, issue 24).

As in haproxy, the `http-reuse` strategy alone decides whether a request takes an idle
server connection: a POST with a JSON body does, when it is not the first request of its
client connection (`safe`, the default). A request that cannot be sent twice is never sent
twice: if the server drops it on the reused connection without a byte of response, the
client gets a 502 (haproxy closes the client connection instead), and the origin has seen it
once.
"""
from __future__ import annotations

import socket

from tests.e2e.helpers import KeepAliveOrigin, free_port, http_config, read_response

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
BODY = b'{"order": 1, "items": [1, 2, 3]}'


def BodyOrigin(script) -> KeepAliveOrigin:
    """A KeepAliveOrigin that reads each request's body; `requests` hold head + body."""
    return KeepAliveOrigin(script, bodies=True)


def post(s: socket.socket, body: bytes = BODY) -> bytes:
    s.sendall(b"POST /api/orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    head, got = read_response(s)
    return head.split(b"\r\n", 1)[0] + b" " + got


def get(s: socket.socket) -> bytes:
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    head, got = read_response(s)
    return head.split(b"\r\n", 1)[0] + b" " + got


def test_posts_after_the_first_request_take_the_idle_server_connection(start_splicer):
    origin = BodyOrigin(lambda conn_no, req_no, head: (OK, False))
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            assert post(s) == b"HTTP/1.1 200 OK ok"  # the first: a connection of its own
            assert post(s) == b"HTTP/1.1 200 OK ok"
            assert post(s, b"x" * 3000) == b"HTTP/1.1 200 OK ok"
            assert get(s) == b"HTTP/1.1 200 OK ok"
        st = sp.stats()["backends"]["farm"]
        assert origin.conns == 1
        assert [(c, r, req.endswith(b"\r\n\r\n" + BODY)) for c, r, req in origin.requests] == [
            (1, 0, True), (1, 1, True), (1, 2, False), (1, 3, False)]
        assert origin.requests[2][2].endswith(b"\r\n\r\n" + b"x" * 3000)
        assert (st["reused"], st["eresp"]) == (3, 0)
    finally:
        origin.close()


def test_the_first_post_of_a_client_connection_gets_a_server_connection_of_its_own(start_splicer):
    origin = BodyOrigin(lambda conn_no, req_no, head: (OK, False))
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as a:
            assert get(a) == b"HTTP/1.1 200 OK ok"  # leaves an idle server connection
        with socket.create_connection(("127.0.0.1", port), timeout=10) as b:
            assert post(b) == b"HTTP/1.1 200 OK ok"  # http-reuse safe: not on that one
        assert origin.conns == 2
        assert sp.stats()["backends"]["farm"]["reused"] == 0
    finally:
        origin.close()


def test_a_post_the_server_drops_on_a_reused_connection_is_answered_502_and_not_sent_again(start_splicer):
    # the first request of the connection is answered; the next one (the POST) is read whole
    # and the connection closed without a byte of response
    origin = BodyOrigin(lambda conn_no, req_no, head: (OK, False) if req_no == 0 else (b"", True))
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            assert get(s) == b"HTTP/1.1 200 OK ok"
            s.sendall(b"POST /api/orders HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY))
            head, _ = read_response(s)
            assert head.split(b"\r\n", 1)[0] == b"HTTP/1.1 502 Bad Gateway"
        posts = [req for _, _, req in origin.requests if req.startswith(b"POST")]
        assert len(posts) == 1 and posts[0].endswith(BODY)  # once: never replayed
        assert origin.conns == 1
        st = sp.stats()["backends"]["farm"]
        assert (st["reused"], st["wretr"]) == (1, 0)
    finally:
        origin.close()
