"""Bad input gets a clear error and loses nothing: 400/431/408/502/504 from the real proxy."""
from __future__ import annotations

import http.client
import socket
import threading
import time

import pytest

from tests.e2e.helpers import free_port, http_config


@pytest.fixture
def proxy(start_splicer, farm):
    port = free_port()
    return start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])


def exchange(port: int, data: bytes, timeout: float = 10) -> bytes:
    """Send raw bytes, read until the proxy closes; returns everything received."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    s.close()
    return out


def status_of(resp: bytes) -> int:
    return int(resp.split(b" ", 2)[1])


@pytest.mark.parametrize("raw", [
    b"GARBAGE\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n",                                            # no Host
    b"GET / HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n",                 # space in name
    b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"G\x00T / HTTP/1.1\r\nHost: a\r\n\r\n",
])
def test_malformed_request_gets_400_and_close(proxy, raw):
    resp = exchange(proxy.port, raw)
    assert status_of(resp) == 400
    head, _, body = resp.partition(b"\r\n\r\n")
    assert b"\r\nconnection: close" in head.lower()
    assert int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]) == len(body)
    # the proxy keeps serving
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("GET", "/files/1k")
    assert conn.getresponse().status == 200


def test_bad_request_is_not_forwarded(proxy):
    before = proxy.stats()["backends"]["farm"]["req_tot"]
    exchange(proxy.port, b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
    stats = proxy.stats()
    assert stats["backends"]["farm"]["req_tot"] == before
    assert stats["frontends"]["www"]["ereq"] >= 1


def test_unsupported_transfer_coding_gets_501(proxy):
    resp = exchange(proxy.port, b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
    assert status_of(resp) == 501


def test_final_transfer_coding_not_chunked_gets_400(proxy):
    # RFC 9112 section 6.3 rule 4: the body length cannot be determined
    resp = exchange(proxy.port, b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n")
    assert status_of(resp) == 400


def test_oversized_head_gets_431(proxy):
    resp = exchange(proxy.port, b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
    assert status_of(resp) == 431


def test_slow_head_gets_408(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, [(o.name, o.port) for o in farm]).replace("timeout http-request 5s",
                                                                      "timeout http-request 500ms")
    start_splicer(cfg, [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET / HTTP/1.1\r\nHo")
    t0 = time.monotonic()
    resp = s.recv(65536)
    assert status_of(resp) == 408
    assert time.monotonic() - t0 < 3


def test_idle_keepalive_connection_closed_silently(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, [(o.name, o.port) for o in farm]).replace("timeout http-keep-alive 5s",
                                                                      "timeout http-keep-alive 300ms")
    start_splicer(cfg, [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /files/0 HTTP/1.1\r\nHost: a\r\n\r\n")
    first = s.recv(65536)
    assert status_of(first) == 200
    assert s.recv(65536) == b""  # closed after the keep-alive timeout, nothing sent


def _silent_server(port: int, stop: threading.Event, reply: bytes | None = None) -> threading.Thread:
    """A server that accepts and reads, then answers `reply` (or nothing) and holds the connection."""
    lsock = socket.create_server(("127.0.0.1", port))
    lsock.settimeout(0.2)

    def run():
        conns = []
        while not stop.is_set():
            try:
                c, _ = lsock.accept()
                c.recv(65536)
                if reply is not None:
                    c.sendall(reply)
                conns.append(c)
            except socket.timeout:
                continue
        for c in conns:
            c.close()
        lsock.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_silent_server_gives_504(start_splicer):
    port, srv = free_port(), free_port()
    stop = threading.Event()
    _silent_server(srv, stop)
    cfg = http_config(port, [("mute", srv)]).replace("timeout server 30s", "timeout server 500ms")
    try:
        sp = start_splicer(cfg, [port])
        resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        assert status_of(resp) == 504
        assert sp.stats()["backends"]["farm"]["eresp"] == 1
    finally:
        stop.set()


def test_garbage_response_gives_502(start_splicer):
    port, srv = free_port(), free_port()
    stop = threading.Event()
    _silent_server(srv, stop, reply=b"NOT HTTP AT ALL\r\n\r\n")
    try:
        start_splicer(http_config(port, [("bad", srv)]), [port])
        resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        assert status_of(resp) == 502
    finally:
        stop.set()
