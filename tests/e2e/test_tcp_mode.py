"""`mode tcp`: plain TCP connections balanced and spliced both ways, half-closes kept apart."""
from __future__ import annotations

import hashlib
import os
import socket
import threading

import pytest

from tests.e2e.helpers import ThreadedServer, free_port

SIZE = 100 << 20


def tcp_config(port: int, servers: list[int]) -> str:
    srv = "\n".join(f"    server s{i} 127.0.0.1:{p}" for i, p in enumerate(servers))
    return f"""
global
    nbthread 1
    tune.pipesize 1048576
listen tunnel
    mode tcp
    bind 127.0.0.1:{port}
    balance roundrobin
    option splice-auto
    timeout connect 2s
    timeout client 30s
    timeout server 30s
{srv}
"""


class TcpOrigin(ThreadedServer):
    """Per connection: sends SIZE bytes of `payload` while reading until the client's FIN,
    then sends the sha256 of what it read, then closes."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.received = []
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        h = hashlib.sha256()
        n = 0

        def reader():
            nonlocal n
            while data := c.recv(1 << 20):
                h.update(data)
                n += len(data)

        t = threading.Thread(target=reader)
        t.start()
        try:
            c.sendall(self.payload)
        except OSError:  # a client that went away early (the readiness probe)
            pass
        t.join()
        try:
            c.sendall(h.hexdigest().encode())  # after the client's half-close, still writable
        except OSError:
            pass
        self.received.append(n)
        c.close()


@pytest.fixture(scope="module")
def payloads():
    return os.urandom(SIZE), os.urandom(SIZE)


def test_tcp_100m_both_ways_byte_exact(start_splicer, payloads):
    down, up = payloads
    origin = TcpOrigin(down)
    port = free_port()
    sp = start_splicer(tcp_config(port, [origin.port]), [port])
    try:
        before = sp.stats()["frontends"]["tunnel"]  # the readiness probe was tunnelled too
        while before["scur"]:
            before = sp.stats()["frontends"]["tunnel"]
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        got = bytearray()

        def reader():
            while data := s.recv(1 << 20):
                got.extend(data)

        t = threading.Thread(target=reader)
        t.start()
        s.sendall(up)
        s.shutdown(socket.SHUT_WR)  # half-close: the origin must still be able to answer
        t.join(60)
        s.close()
        assert len(got) == SIZE + 64
        assert hashlib.sha256(got[:SIZE]).digest() == hashlib.sha256(down).digest()
        assert got[SIZE:].decode() == hashlib.sha256(up).hexdigest()
        stats = sp.stats()["frontends"]["tunnel"]
        assert stats["spliced"] - before["spliced"] >= 2 * SIZE
        assert stats["bin"] - before["bin"] == SIZE
        assert stats["bout"] - before["bout"] == SIZE + 64
    finally:
        origin.close()


def test_tcp_roundrobin_and_dead_server(start_splicer):
    a = TcpOrigin(b"A")
    b = TcpOrigin(b"B")
    port = free_port()
    start_splicer(tcp_config(port, [a.port, b.port]), [port])
    seen = []
    for _ in range(4):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        s.close()
        seen.append(data[:1])
    assert sorted(seen) == [b"A", b"A", b"B", b"B"]
    a.close()
    b.close()
