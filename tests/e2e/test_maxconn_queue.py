"""Server `maxconn`: requests beyond it wait in the backend queue, up to `timeout queue`."""
from __future__ import annotations

import http.client
import socket
import threading
import time

from tests.e2e.helpers import free_port, http_config


def hog(port: int) -> socket.socket:
    """Start a 1 GiB download and stop reading: the server stays busy."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /files/1g HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    return s


def test_request_waits_in_queue_until_a_slot_frees(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, [("web1", farm[0].port)], server_opts="maxconn 1",
                      extra_defaults="    timeout queue 10s")
    sp = start_splicer(cfg, [port])
    h = hog(port)
    result = {}

    def second():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        t0 = time.monotonic()
        conn.request("GET", "/files/1k")
        resp = conn.getresponse()
        result["status"], result["len"] = resp.status, len(resp.read())
        result["waited"] = time.monotonic() - t0

    t = threading.Thread(target=second)
    t.start()
    time.sleep(1.0)
    assert "status" not in result  # still queued behind the hog
    h.close()
    t.join(15)
    assert result["status"] == 200 and result["len"] == 1024
    assert result["waited"] >= 1.0
    assert sp.stats()["backends"]["farm"]["servers"]["web1"]["req_tot"] == 2


def test_queue_timeout_gives_503(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, [("web1", farm[0].port)], server_opts="maxconn 1",
                      extra_defaults="    timeout queue 500ms")
    start_splicer(cfg, [port])
    h = hog(port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        t0 = time.monotonic()
        conn.request("GET", "/files/1k")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 503
        assert 0.4 <= time.monotonic() - t0 < 5
    finally:
        h.close()
