"""Upgrade (WebSocket-style): a 101 from the server turns the connection into a two-way tunnel;
nothing is tunnelled before the server agreed, and a 101 nobody asked for is refused."""
from __future__ import annotations

import socket
import time

from tests.e2e.helpers import ScriptedOrigin, free_port, http_config, recv_all


def echo_after_101(c: socket.socket) -> None:
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
    while data := c.recv(65536):
        c.sendall(data.upper())
    c.shutdown(socket.SHUT_WR)


def test_101_turns_the_connection_into_a_tunnel(start_splicer):
    origin = ScriptedOrigin(echo_after_101)
    port = free_port()
    start_splicer(http_config(port, [("ws", origin.port)]), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        assert head.startswith(b"HTTP/1.1 101 ")
        assert b"\r\nUpgrade: websocket" in head and b"\r\nConnection: upgrade" in head
        payload = b"hello tunnel " * 10000
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)  # half-close: the echo must still come back in full
        assert recv_all(s) == payload.upper()
        req = origin.requests[0]
        assert b"\r\nUpgrade: websocket\r\n" in req and b"\r\nConnection: upgrade\r\n" in req
    finally:
        origin.close()


def test_upgrade_refused_by_server_is_a_normal_response(start_splicer):
    origin = ScriptedOrigin(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno"))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                  b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        got = recv_all(s)
        assert got.count(b"HTTP/1.1 200 OK") == 2  # the second request is HTTP, not tunnel bytes
    finally:
        origin.close()


def test_unsolicited_101_is_502(start_splicer):
    origin = ScriptedOrigin(lambda c: (c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"),
                                       time.sleep(0.5)))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        assert recv_all(s).startswith(b"HTTP/1.1 502 ")
    finally:
        origin.close()
