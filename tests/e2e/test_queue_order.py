"""The backend queue through the real `splicer` command: requests waiting for a server slot
are served in arrival order, and `maxqueue` answers 503 at once when the queue is full."""
from __future__ import annotations

import socket
import time

from tests.e2e.helpers import free_port, http_config, recv_all


def start_download(port: int) -> socket.socket:
    """Send a 1 GiB download request (read nothing yet)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /files/1g HTTP/1.1\r\nHost: x\r\n\r\n")
    return s


def wait_stat(sp, path, value, timeout=5.0):
    """Wait until the stats value at `path` (keys) equals `value`."""
    deadline = time.monotonic() + timeout
    while True:
        got = sp.stats()
        for k in path:
            got = got[k]
        if got == value:
            return
        assert time.monotonic() < deadline, f"{'/'.join(path)} stayed {got}, not {value}"
        time.sleep(0.02)


def test_queued_requests_are_served_in_arrival_order_and_maxqueue_refuses_more(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, [("web1", farm[0].port)], server_opts="maxconn 1 maxqueue 2",
                      extra_defaults="    timeout queue 20s")
    sp = start_splicer(cfg, [port])
    hog = start_download(port)
    assert hog.recv(4096).startswith(b"HTTP/1.1 200")        # it holds the only slot
    first = start_download(port)
    wait_stat(sp, ("backends", "farm", "qcur"), 1)
    second = socket.create_connection(("127.0.0.1", port))
    second.sendall(b"GET /files/1k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    wait_stat(sp, ("backends", "farm", "qcur"), 2)
    # the queue is full (maxqueue 2 on the only server): 503 at once
    third = socket.create_connection(("127.0.0.1", port))
    third.settimeout(5)
    third.sendall(b"GET /files/1k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert recv_all(third).startswith(b"HTTP/1.1 503 ")
    third.close()
    hog.close()
    # the first one queued gets the slot; the second still waits
    assert first.recv(4096).startswith(b"HTTP/1.1 200")
    wait_stat(sp, ("backends", "farm", "qcur"), 1)
    first.close()
    second.settimeout(10)
    reply = recv_all(second)
    assert reply.startswith(b"HTTP/1.1 200")
    assert len(reply.split(b"\r\n\r\n", 1)[1]) == 1024
    second.close()
    be = sp.stats()["backends"]["farm"]
    assert be["qcur"] == 0 and be["terms"].get("sQ") == 1 and be["hrsp_5xx"] == 1
