"""Idle server connections (the reuse pool) that the server closes.

A kept-alive server connection may be closed by the server at any time while idle (RFC 9112
section 9.6). splicer must never fail a request that may be retried because of it: one
closed while idle is dropped before use; one closed just as a request reaches it (the
server read the request and closed without a byte of response) makes splicer send the
idempotent request again on a new connection (RFC 9110 section 9.2.2).
"""
from __future__ import annotations

import socket
import threading
import time

from tests.e2e.helpers import ThreadedServer, free_port, http_config, read_response

RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def read_head(c: socket.socket) -> bytes | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = c.recv(65536)
        if not chunk:
            return None
        buf += chunk
    return buf


class ClosingOrigin(ThreadedServer):
    """Answers the first request of each connection; then, by `mode`, closes the connection
    after `idle_close` seconds of idleness ("idle"), or reads the next request and closes
    without answering it ("race"). Counts connections and requests seen."""

    def __init__(self, mode: str, idle_close: float = 0.05) -> None:
        self.mode = mode
        self.idle_close = idle_close
        self.conns = 0
        self.requests = 0
        self.lock = threading.Lock()
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        with self.lock:
            self.conns += 1
        try:
            if read_head(c) is None:
                return
            with self.lock:
                self.requests += 1
            c.sendall(RESP)
            if self.mode == "idle":
                time.sleep(self.idle_close)
                return  # closed while idle
            if read_head(c) is not None:  # "race": the next request arrives, no answer
                with self.lock:
                    self.requests += 1
        except OSError:
            pass
        finally:
            c.close()


def get(s: socket.socket) -> bytes:
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    head, body = read_response(s)
    return head.split(b"\r\n", 1)[0] + b" " + body


def test_server_connection_closed_while_idle_is_not_used(start_splicer):
    origin = ClosingOrigin("idle")
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
        assert (origin.conns, origin.requests) == (2, 2)
        assert (st["stot"], st["reused"], st["eresp"]) == (2, 0, 0)
    finally:
        origin.close()


def test_server_closing_as_the_request_arrives_is_retried_on_a_new_connection(start_splicer):
    origin = ClosingOrigin("race")
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
        assert (origin.conns, origin.requests) == (3, 5)
        assert (st["stot"], st["reused"], st["eresp"]) == (3, 2, 0)
    finally:
        origin.close()
