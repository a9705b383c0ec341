"""Balancing over a real farm: roundrobin spread and weights, leastconn, servers down."""
from __future__ import annotations

import collections
import http.client
import socket
import time

from tests.e2e.helpers import free_port, http_config


def served_by(port: int, n: int, path: str = "/files/0", new_conn: bool = False) -> collections.Counter:
    c = collections.Counter()
    conn = None
    for _ in range(n):
        if conn is None or new_conn:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        c[(resp.status, resp.getheader("X-Served-By"))] += 1
        if new_conn:
            conn.close()
    return c


def test_roundrobin_spreads_evenly(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    assert served_by(port, 40) == {(200, "web1"): 20, (200, "web2"): 20}
    assert served_by(port, 20, new_conn=True) == {(200, "web1"): 10, (200, "web2"): 10}
    servers = sp.stats()["backends"]["farm"]["servers"]
    assert servers["web1"]["req_tot"] == servers["web2"]["req_tot"] == 30


def test_roundrobin_respects_weights(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, []) + (f"    server web1 127.0.0.1:{farm[0].port} weight 3\n"
                                   f"    server web2 127.0.0.1:{farm[1].port} weight 1\n")
    start_splicer(cfg, [port])
    assert served_by(port, 40) == {(200, "web1"): 30, (200, "web2"): 10}


def test_static_rr_follows_the_weights_in_order(start_splicer, farm):
    """balance static-rr (haproxy 4.2 "balance"): the weights' map, walked in turn, so 40
    requests with weights 3 and 1 give exactly 30 and 10, the same as roundrobin."""
    port = free_port()
    cfg = http_config(port, [], balance="static-rr") + (f"    server web1 127.0.0.1:{farm[0].port} weight 3\n"
                                                        f"    server web2 127.0.0.1:{farm[1].port} weight 1\n")
    start_splicer(cfg, [port])
    assert served_by(port, 40) == {(200, "web1"): 30, (200, "web2"): 10}
    assert served_by(port, 8, new_conn=True) == {(200, "web1"): 6, (200, "web2"): 2}


def test_weight_zero_server_gets_nothing(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, []) + (f"    server web1 127.0.0.1:{farm[0].port} weight 0\n"
                                   f"    server web2 127.0.0.1:{farm[1].port} weight 5\n")
    start_splicer(cfg, [port])
    assert served_by(port, 10) == {(200, "web2"): 10}


def test_leastconn_avoids_the_busy_server(start_splicer, farm):
    port = free_port()
    start_splicer(http_config(port, [(o.name, o.port) for o in farm], balance="leastconn"), [port])
    # hold a long download open (not reading) on one server
    hog = socket.create_connection(("127.0.0.1", port))
    hog.sendall(b"GET /files/1g HTTP/1.1\r\nHost: x\r\n\r\n")
    head = hog.recv(4096)
    busy = [ln for ln in head.split(b"\r\n") if ln.startswith(b"X-Served-By")][0].split(b": ")[1].decode()
    idle = "web2" if busy == "web1" else "web1"
    try:
        got = served_by(port, 10, new_conn=True)
        assert got == {(200, idle): 10}
    finally:
        hog.close()
    time.sleep(0.3)
    # once it is released, both share the load again
    assert set(served_by(port, 10, new_conn=True)) == {(200, "web1"), (200, "web2")}


def test_server_down_sends_all_traffic_to_the_other(start_splicer, farm):
    port = free_port()
    dead = free_port()
    sp = start_splicer(http_config(port, [("web1", farm[0].port), ("dead", dead)],
                                   extra_defaults="    option redispatch\n    retries 2"), [port])
    assert served_by(port, 20, new_conn=True) == {(200, "web1"): 20}
    be = sp.stats()["backends"]["farm"]
    assert be["econ"] >= 1
    assert be["hrsp_5xx"] == 0


def test_all_servers_down_gives_503(start_splicer):
    port = free_port()
    sp = start_splicer(http_config(port, [("a", free_port()), ("b", free_port())],
                                   extra_defaults="    option redispatch\n    retries 1"), [port])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/files/1k")
    resp = conn.getresponse()
    body = resp.read()
    assert resp.status == 503
    assert int(resp.getheader("Content-Length")) == len(body)
    assert resp.getheader("Connection") == "close"
    assert sp.stats()["frontends"]["www"]["hrsp_5xx"] == 1


def test_backend_without_servers_gives_503(start_splicer):
    port = free_port()
    start_splicer(http_config(port, []), [port])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/")
    assert conn.getresponse().status == 503
