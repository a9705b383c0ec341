"""Health checks (server `check`): a dead server is taken out after `fall` failed checks, so
requests stop paying for connect attempts, and put back after `rise` passed ones."""
from __future__ import annotations

import http.client
import socket
import time

from tests.e2e.helpers import free_port, http_config


def served(port: int, n: int) -> list[str]:
    out = []
    for _ in range(n):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/files/0")
        resp = conn.getresponse()
        resp.read()
        out.append(f"{resp.status} {resp.getheader('X-Served-By')}")
        conn.close()
    return out


def test_dead_server_marked_down_then_up_again(start_splicer, farm):
    port, dead = free_port(), free_port()
    cfg = http_config(port, [("web1", farm[0].port), ("flaky", dead)],
                      server_opts="check inter 200ms rise 2 fall 2")
    sp = start_splicer(cfg, [port])
    deadline = time.monotonic() + 5
    while "server flaky is DOWN" not in sp.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "backend farm server flaky is DOWN (L4CON, 2 in a row)" in sp.log()
    before = sp.stats()["backends"]["farm"]["econ"]
    assert served(port, 10) == ["200 web1"] * 10
    assert sp.stats()["backends"]["farm"]["econ"] == before  # no request tried the dead server
    # the server comes back: after `rise` passed checks it gets traffic again
    lsock = socket.create_server(("127.0.0.1", dead))
    try:
        deadline = time.monotonic() + 5
        while "server flaky is UP" not in sp.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "backend farm server flaky is UP (L4OK, 2 in a row)" in sp.log()
    finally:
        lsock.close()
