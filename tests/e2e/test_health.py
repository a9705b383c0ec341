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


class HealthOrigin:
    """An origin whose /health answers `health_status` (changeable), and 200 elsewhere."""

    def __init__(self, name: str) -> None:
        from tests.e2e.helpers import ScriptedOrigin
        self.name = name
        self.health_status = 200
        self.origin = ScriptedOrigin(self._answer)
        self.port = self.origin.port

    def _answer(self, c) -> None:
        head = self.origin.requests[-1]
        status = self.health_status if head.startswith(b"GET /health ") else 200
        if status == 0:
            c.sendall(b"SSH-2.0-not-http\r\n")
            return
        c.sendall(b"HTTP/1.1 %d X\r\nX-Served-By: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                  % (status, self.name.encode()))

    def checks(self) -> list[bytes]:
        return [r for r in self.origin.requests if r.startswith(b"GET /health ")]

    def close(self) -> None:
        self.origin.close()


def wait_log(sp, text: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in sp.log():
        assert time.monotonic() < deadline, f"{text!r} not in log:\n{sp.log()}"
        time.sleep(0.05)


def test_httpchk_takes_out_a_server_whose_health_url_fails_and_puts_it_back(start_splicer):
    """option httpchk: the server still accepts connections (a layer-4 check would pass),
    but its health URL answers 503, so it is taken out; when it answers 200 again it is put
    back. The check request is exactly what the configuration says."""
    good, sick = HealthOrigin("good"), HealthOrigin("sick")
    sick.health_status = 503
    port = free_port()
    cfg = http_config(port, [("good", good.port), ("sick", sick.port)],
                      server_opts="check inter 150ms rise 2 fall 2",
                      extra_backend='    option httpchk GET /health "HTTP/1.1\\r\\nHost:\\ farm.example"\n'
                                    "    http-check expect status 200-299\n")
    sp = start_splicer(cfg, [port])
    try:
        wait_log(sp, "backend farm server sick is DOWN (L7STS 503, 2 in a row)")
        assert good.checks()[0] == (b"GET /health HTTP/1.1\r\nHost: farm.example\r\n"
                                    b"Connection: close\r\n\r\n")
        assert served(port, 6) == ["200 good"] * 6
        sick.health_status = 204
        wait_log(sp, "backend farm server sick is UP (L7OK 204, 2 in a row)")
        assert sorted(set(served(port, 6))) == ["200 good", "200 sick"]
        assert "server good is DOWN" not in sp.log()
    finally:
        good.close()
        sick.close()


def test_httpchk_junk_and_silence(start_splicer):
    """A server that answers something that is not HTTP is L7RSP; one that accepts and says
    nothing within `timeout check` is L7TOUT."""
    junk = HealthOrigin("junk")
    junk.health_status = 0
    import socket as _socket
    mute = _socket.create_server(("127.0.0.1", 0))  # accepts (backlog) and never answers
    port = free_port()
    cfg = http_config(port, [("junk", junk.port), ("mute", mute.getsockname()[1])],
                      server_opts="check inter 150ms rise 1 fall 1",
                      extra_backend="    option httpchk GET /health\n    timeout check 100ms\n")
    sp = start_splicer(cfg, [port])
    try:
        wait_log(sp, "backend farm server junk is DOWN (L7RSP, 1 in a row)")
        wait_log(sp, "backend farm server mute is DOWN (L7TOUT, 1 in a row)")
        assert junk.checks()[0] == b"GET /health HTTP/1.0\r\nConnection: close\r\n\r\n"
    finally:
        junk.close()
        mute.close()
