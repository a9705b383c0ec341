"""Idle server connections (the reuse pool) that the server closes.

A kept-alive server connection may be closed by the server at any time while idle (RFC 9112
section 9.6). splicer must never fail a request that may be retried because of it: one
closed while idle is dropped before use; one closed just as a request reaches it (the
server read the request and closed without a byte of response) makes splicer send the
idempotent request again on a new connection (RFC 9110 section 9.2.2). And splicer closes a
pooled connection once it has been idle for 5 s (haproxy's pool-purge-delay), even when no
request comes by afterwards.
"""
from __future__ import annotations

import socket
import time

from tests.e2e.helpers import KeepAliveOrigin, free_port, http_config, read_response

RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def idle_closing(conn_no: int, req_no: int, head: bytes):
    """Answer, then close: the pooled connection is closed while idle."""
    return RESP, True


def race_closing(conn_no: int, req_no: int, head: bytes):
    """Answer the first request of a connection; read the next one and close without a byte
    of response (the server closed as the request reached it)."""
    return (RESP, False) if req_no == 0 else (b"", True)


def get(s: socket.socket) -> bytes:
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    head, body = read_response(s)
    return head.split(b"\r\n", 1)[0] + b" " + body


def test_server_connection_closed_while_idle_is_not_used(start_splicer):
    origin = KeepAliveOrigin(idle_closing)
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert get(s) == b"HTTP/1.1 200 OK ok"
        time.sleep(0.3)  # the origin closed the pooled connection meanwhile
        assert get(s) == b"HTTP/1.1 200 OK ok"
        s.close()
        st = sp.stats()["backends"]["farm"]
        # the closed connection was dropped before use: a new one, and no request lost
        assert (origin.conns, len(origin.requests)) == (2, 2)
        assert (st["stot"], st["reused"], st["eresp"]) == (2, 0, 0)
    finally:
        origin.close()


def test_server_closing_as_the_request_arrives_is_retried_on_a_new_connection(start_splicer):
    origin = KeepAliveOrigin(race_closing)
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert get(s) == b"HTTP/1.1 200 OK ok"
        time.sleep(0.05)
        # the pooled connection is alive when taken, and closes under the request: the GET
        # is sent again on a new connection, and the client sees one ordinary response
        assert get(s) == b"HTTP/1.1 200 OK ok"
        assert get(s) == b"HTTP/1.1 200 OK ok"
        s.close()
        st = sp.stats()["backends"]["farm"]
        assert (origin.conns, len(origin.requests)) == (3, 5)
        assert (st["stot"], st["reused"], st["eresp"]) == (3, 2, 0)
    finally:
        origin.close()


def test_idle_server_connection_closed_after_purge_delay_without_traffic(start_splicer):
    ended = []

    class Origin(KeepAliveOrigin):
        def _conn(self, c: socket.socket) -> None:
            super()._conn(c)  # returns when splicer closes the connection
            ended.append(time.monotonic())

    origin = Origin(lambda conn_no, req_no, head: (RESP, False))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            assert get(s) == b"HTTP/1.1 200 OK ok"
        t = time.monotonic()
        deadline = t + 8
        while not ended and time.monotonic() < deadline:
            time.sleep(0.05)
        # pooled after the response, closed 5 s later by the purge timer; nothing else came
        assert ended and 4.5 <= ended[0] - t <= 6.5, (ended, t)
        assert origin.conns == 1
    finally:
        origin.close()
