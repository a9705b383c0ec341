"""Keep-alive: many requests on one client connection, and kept-alive server connections reused."""
from __future__ import annotations

import http.client
import socket

import pytest

from tests.e2e.helpers import free_port, http_config


@pytest.fixture
def proxy(start_splicer, farm):
    port = free_port()
    return start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])


def test_100_requests_on_one_client_connection(proxy, www):
    before = proxy.stats()["frontends"]["www"]["stot"]  # the readiness probe was one session
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    served = []
    for i in range(100):
        conn.request("GET", "/files/1k" if i % 2 else "/files/0")
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 200
        assert len(body) == (1024 if i % 2 else 0)
        served.append(resp.getheader("X-Served-By"))
    sock = conn.sock
    conn.close()
    assert sock is not None  # http.client kept one socket for all 100 requests
    stats = proxy.stats()
    fe, be = stats["frontends"]["www"], stats["backends"]["farm"]
    assert fe["stot"] - before == 1  # one client connection
    assert fe["req_tot"] == 100
    assert be["req_tot"] == 100
    assert be["stot"] <= 4  # server connections opened: a handful, not one per request
    assert be["reused"] >= 96
    assert sorted(set(served)) == ["web1", "web2"]


def test_pipelined_requests_answered_in_order(proxy):
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    s.sendall(b"GET /files/1k HTTP/1.1\r\nHost: a\r\n\r\n"
              b"GET /headers HTTP/1.1\r\nHost: b\r\n\r\n"
              b"GET /files/0 HTTP/1.1\r\nHost: c\r\nConnection: close\r\n\r\n")
    f = s.makefile("rb")
    statuses = []
    bodies = []
    while True:
        line = f.readline()
        if not line:
            break
        statuses.append(line.split()[1])
        length = 0
        while (h := f.readline()) not in (b"\r\n", b""):
            if h.lower().startswith(b"content-length:"):
                length = int(h.split(b":")[1])
        bodies.append(f.read(length))
    s.close()
    assert statuses == [b"200", b"200", b"200"]
    assert len(bodies[0]) == 1024
    assert b'"Host", "b"' in bodies[1]
    assert bodies[2] == b""


def test_connection_close_from_client_is_honoured(proxy):
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    s.sendall(b"GET /files/1k HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"\r\nConnection: close" in head
    assert len(body) == 1024


def test_http10_client_without_keepalive_gets_close(proxy):
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    s.sendall(b"GET /files/1k HTTP/1.0\r\n\r\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    assert data.startswith(b"HTTP/1.1 200 ")
    assert data.endswith(b"\r\n\r\n" + data[-1024:]) and len(data.partition(b"\r\n\r\n")[2]) == 1024


def test_hop_by_hop_headers_removed_and_xff_added(proxy):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("GET", "/headers", headers={"Connection": "keep-alive, X-Secret", "X-Secret": "1",
                                             "Keep-Alive": "timeout=5", "X-Kept": "yes",
                                             "X-Forwarded-For": "203.0.113.9"})
    import json
    got = json.loads(conn.getresponse().read())
    names = [n.lower() for n, _ in got["headers"]]
    assert "x-secret" not in names
    assert "keep-alive" not in names
    assert "connection" not in names
    assert ["X-Kept", "yes"] in got["headers"]
    # haproxy appends its own X-Forwarded-For line after the client's
    xff = [v for n, v in got["headers"] if n.lower() == "x-forwarded-for"]
    assert xff == ["203.0.113.9", "127.0.0.1"]
