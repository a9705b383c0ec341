"""Health from live traffic and what a state change does to the streams under way, through
the real `splicer` command with real origins on 127.0.0.1 (haproxy configuration.txt 5.2
"observe", "error-limit", "on-error", "on-marked-down", "on-marked-up"): a server answering
503s (observe layer7) or refusing connections (observe layer4) is marked DOWN after
`error-limit` errors in a row and traffic moves to the other server, and its checks bring
it back; `on-marked-down shutdown-sessions` cuts a download from a server going DOWN, and
`on-marked-up shutdown-backup-sessions` one from a backup when an active server comes UP:
the client sees the body end short of its Content-Length, never a complete-looking one."""
from __future__ import annotations

import http.client
import socket
import threading
import time

import pytest

from tests.e2e.helpers import ThreadedServer, free_port, http_config

BIG = 4 << 20
"""Content-Length of the slow download."""

FIRST = 65536
"""Bytes of it the origin sends before it waits."""


class FlagOrigin(ThreadedServer):
    """An origin whose `GET /health` answers `health` (changeable); other requests get
    `status` with its name as body, or, for `GET /big`, a head announcing BIG bytes and FIRST
    of them, then the rest only once `release` is set."""

    def __init__(self, name: bytes, status: int = 200, health: int = 200) -> None:
        self.name, self.status, self.health = name, status, health
        self.release = threading.Event()
        self.big_started = threading.Event()
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        try:
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = c.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                if head.startswith(b"GET /health "):
                    c.sendall(b"HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % self.health)
                    return
                if head.startswith(b"GET /big "):
                    c.sendall(b"HTTP/1.1 200 OK\r\nX-Served-By: %s\r\nContent-Length: %d\r\n\r\n"
                              % (self.name, BIG) + b"x" * FIRST)
                    self.big_started.set()
                    self.release.wait(30)
                    c.sendall(b"x" * (BIG - FIRST))
                    continue
                c.sendall(b"HTTP/1.1 %d X\r\nX-Served-By: %s\r\nContent-Length: %d\r\n\r\n%s"
                          % (self.status, self.name, len(self.name), self.name))
        except OSError:
            pass
        finally:
            c.close()


def get(port: int, path: str = "/") -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return f"{resp.status} {resp.getheader('X-Served-By')}"


def wait_log(sp, text: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in sp.log():
        assert time.monotonic() < deadline, f"{text!r} not in log:\n{sp.log()}"
        time.sleep(0.02)


def test_layer7_503s_mark_a_server_down_after_error_limit_and_its_check_brings_it_back(start_splicer):
    good, bad = FlagOrigin(b"good"), FlagOrigin(b"bad", status=503, health=503)
    port = free_port()
    # the checks fail all along but `fall 1000` keeps them from taking the server down: only
    # the traffic does, at its third 503 in a row (on-error mark-down)
    cfg = http_config(port, [("good", good.port), ("bad", bad.port)],
                      server_opts="check inter 100ms rise 2 fall 1000 observe layer7 error-limit 3 "
                                  "on-error mark-down",
                      extra_backend="    option httpchk GET /health\n")
    sp = start_splicer(cfg, [port])
    try:
        first = [get(port) for _ in range(4)]  # roundrobin: two each
        assert sorted(first) == ["200 good", "200 good", "503 bad", "503 bad"]
        assert "is DOWN" not in sp.log()  # two errors in a row: under the limit
        more = [get(port) for _ in range(2)]
        assert sorted(more) == ["200 good", "503 bad"]
        wait_log(sp, "backend farm server bad is DOWN (Health analyze: 3 consecutive errors, "
                     "last one was: Wrong http response)")
        assert [get(port) for _ in range(6)] == ["200 good"] * 6
        bad.health = 200  # healthy again: `rise` passed checks bring it back
        wait_log(sp, "backend farm server bad is UP (L7OK 200, 2 in a row)")
        assert sorted(get(port) for _ in range(4)) == ["200 good", "200 good", "503 bad", "503 bad"]
        assert "server good is DOWN" not in sp.log()
    finally:
        good.close()
        bad.close()


def test_layer4_refused_connections_mark_a_server_down_after_error_limit(start_splicer):
    good, dead = FlagOrigin(b"good"), free_port()
    port = free_port()
    # one check at start-up (it fails: fall 3 keeps the server UP), the next in a minute
    cfg = http_config(port, [("good", good.port), ("dead", dead)],
                      server_opts="check inter 60s observe layer4 error-limit 3 on-error mark-down",
                      extra_backend="    option redispatch\n    retries 1\n")
    sp = start_splicer(cfg, [port])
    try:
        # every other request tries `dead`, is refused and is redispatched to `good`
        assert [get(port) for _ in range(4)] == ["200 good"] * 4
        assert sp.stats()["backends"]["farm"]["servers"]["dead"]["econ"] == 2
        assert "server dead is DOWN" not in sp.log()
        assert [get(port) for _ in range(2)] == ["200 good"] * 2
        wait_log(sp, "backend farm server dead is DOWN (Health analyze: 3 consecutive errors, "
                     "last one was: L4 unsuccessful connection)")
        assert [get(port) for _ in range(6)] == ["200 good"] * 6
        assert sp.stats()["backends"]["farm"]["servers"]["dead"]["econ"] == 3  # no more attempts
    finally:
        good.close()


def settled(sp, backend: str, server: str, timeout: float = 10.0) -> dict:
    """The server's counters once it has no stream left (scur 0): every stream recorded."""
    deadline = time.monotonic() + timeout
    while True:
        st = sp.stats()["backends"][backend]["servers"][server]
        if st["scur"] == 0:
            return st
        assert time.monotonic() < deadline, f"streams still open: {st}"
        time.sleep(0.05)


def start_download(port: int) -> tuple[socket.socket, bytes]:
    """GET /big on a new connection; returns the socket and what came until the head's end
    and FIRST body bytes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < FIRST:
        chunk = s.recv(65536)
        assert chunk, f"closed early: {got[:200]!r}"
        got += chunk
    return s, got


def rest_of(s: socket.socket) -> bytes:
    """Everything until the connection ends (fails on a hang: the socket has a timeout)."""
    out = b""
    while chunk := s.recv(1 << 20):
        out += chunk
    return out


def test_on_marked_down_shutdown_sessions_cuts_a_download_short(start_splicer):
    slow = FlagOrigin(b"slow")
    port = free_port()
    cfg = http_config(port, [("slow", slow.port)],
                      server_opts="check inter 100ms rise 1 fall 1 on-marked-down shutdown-sessions",
                      extra_backend="    option httpchk GET /health\n")
    sp = start_splicer(cfg, [port])
    s = None
    try:
        s, got = start_download(port)
        assert b"Content-Length: %d" % BIG in got and b"X-Served-By: slow" in got
        slow.health = 503
        wait_log(sp, "backend farm server slow is DOWN (L7STS 503, 1 in a row)")
        body = got.partition(b"\r\n\r\n")[2] + rest_of(s)
        assert FIRST <= len(body) < BIG  # ended, and visibly short of its Content-Length
        wait_log(sp, "backend farm server slow: 1 stream(s) shut down (on-marked-down)")
        s.close()
        assert settled(sp, "farm", "slow")["terms"] == {"DD": 1}
    finally:
        slow.release.set()
        if s is not None:
            s.close()
        slow.close()


def test_without_on_marked_down_a_download_goes_on_from_a_server_marked_down(start_splicer):
    slow = FlagOrigin(b"slow")
    port = free_port()
    cfg = http_config(port, [("slow", slow.port)], server_opts="check inter 100ms rise 1 fall 1",
                      extra_backend="    option httpchk GET /health\n")
    sp = start_splicer(cfg, [port])
    s = None
    try:
        s, got = start_download(port)
        slow.health = 503
        wait_log(sp, "backend farm server slow is DOWN (L7STS 503, 1 in a row)")
        slow.release.set()
        body = got.partition(b"\r\n\r\n")[2]
        while len(body) < BIG:
            chunk = s.recv(1 << 20)
            assert chunk, f"cut after {len(body)} bytes"
            body += chunk
        assert len(body) == BIG
    finally:
        slow.release.set()
        if s is not None:
            s.close()
        slow.close()


def test_on_marked_up_shutdown_backup_sessions_cuts_a_backup_download(start_splicer):
    main, spare = FlagOrigin(b"main", health=503), FlagOrigin(b"spare")
    port = free_port()
    cfg = http_config(port, [], extra_backend="    option httpchk GET /health\n") + (
        f"    server main 127.0.0.1:{main.port} check inter 100ms rise 1 fall 1 "
        "on-marked-up shutdown-backup-sessions\n"
        f"    server spare 127.0.0.1:{spare.port} backup\n")
    sp = start_splicer(cfg, [port])
    s = None
    try:
        wait_log(sp, "backend farm server main is DOWN (L7STS 503, 1 in a row)")
        s, got = start_download(port)
        assert b"X-Served-By: spare" in got
        main.health = 200
        wait_log(sp, "backend farm server main is UP (L7OK 200, 1 in a row)")
        body = got.partition(b"\r\n\r\n")[2] + rest_of(s)
        assert FIRST <= len(body) < BIG
        wait_log(sp, "backend farm server main: 1 backup stream(s) shut down (on-marked-up)")
        s.close()
        assert settled(sp, "farm", "spare")["terms"] == {"UD": 1}
        assert get(port) == "200 main"
    finally:
        spare.release.set()
        if s is not None:
            s.close()
        main.close()
        spare.close()


class MuteOrigin(ThreadedServer):
    """Accepts, reads and never answers (except `GET /health`, with `health`); for tcp mode,
    echoes nothing and holds the connection until the peer goes."""

    def __init__(self, health: int = 200) -> None:
        self.health = health
        self.held = threading.Event()
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        try:
            data = c.recv(65536)
            if not data:
                return  # (a connection that sends nothing: splicer's start-up port probe)
            if data.startswith(b"GET /health "):
                c.sendall(b"HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % self.health)
                return
            self.held.set()
            while c.recv(65536):
                pass
        except OSError:
            pass
        finally:
            c.close()


def test_on_marked_down_a_request_waiting_for_its_response_head_gets_502(start_splicer):
    mute = MuteOrigin()
    port = free_port()
    cfg = http_config(port, [("mute", mute.port)],
                      server_opts="check inter 100ms rise 1 fall 1 on-marked-down shutdown-sessions",
                      extra_backend="    option httpchk GET /health\n")
    sp = start_splicer(cfg, [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        assert mute.held.wait(10)
        mute.health = 503
        wait_log(sp, "backend farm server mute is DOWN (L7STS 503, 1 in a row)")
        answer = rest_of(s)  # not a hang until `timeout server` (30s)
        assert answer.startswith(b"HTTP/1.1 502 ")
        s.close()  # the session ends (and its stream is counted) once the client is gone too
        assert settled(sp, "farm", "mute")["terms"] == {"DH": 1}
    finally:
        s.close()
        mute.close()


def test_on_marked_down_ends_a_tcp_mode_tunnel(start_splicer):
    """mode tcp: the origin stops listening (its established connection stays), the layer-4
    check fails, the server goes DOWN and its tunnel is ended."""
    held = MuteOrigin()
    port = free_port()
    cfg = f"""
global
    nbthread 1
defaults
    mode tcp
    timeout connect 1s
    timeout client 30s
    timeout server 30s
listen tun
    bind 127.0.0.1:{port}
    server t 127.0.0.1:{held.port} check inter 100ms rise 1 fall 1 on-marked-down shutdown-sessions
"""
    sp = start_splicer(cfg, [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(b"hello")
        assert held.held.wait(10)
        held.close()  # refuses new connections from now on
        wait_log(sp, "backend tun server t is DOWN (L4CON, 1 in a row)")
        assert rest_of(s) == b""  # the tunnel ended (not after `timeout client`)
        wait_log(sp, "backend tun server t: 1 stream(s) shut down (on-marked-down)")
        s.close()
        # (start_splicer waits for the port without connecting: this tunnel is the only one)
        assert settled(sp, "tun", "t")["terms"] == {"DD": 1}
    finally:
        s.close()


class ClosingOrigin(ThreadedServer):
    """Reads a request and closes without a word (`mute`: holds the connection instead);
    answers `GET /health` with 200."""

    def __init__(self, mute: bool) -> None:
        self.mute = mute
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        try:
            data = c.recv(65536)
            if data.startswith(b"GET /health "):
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            elif data and self.mute:
                while c.recv(65536):
                    pass
        except OSError:
            pass
        finally:
            c.close()



def checked(sp, backend: str, server: str, want: str, timeout: float = 10.0) -> None:
    """Until the server's health check said `want` (`show stat`'s check_status)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = sp.cli("@1 show stat").strip("\n").split("\n")
        names = rows[0].lstrip("# ").split(",")
        got = [dict(zip(names, r.split(","))) for r in rows[1:]]
        if any(r.get("pxname") == backend and r.get("svname") == server and r.get("check_status") == want
               for r in got):
            return
        assert time.monotonic() < deadline, f"no check said {want}: {got}"
        time.sleep(0.02)


@pytest.mark.parametrize("mute, status, event", [
    (False, 502, "Close from server (http)"),
    (True, 504, "Read timeout (http)"),
])
def test_layer7_no_response_counts_as_an_error(start_splicer, mute, status, event):
    origin = ClosingOrigin(mute)
    port = free_port()
    cfg = http_config(port, [("s", origin.port)],
                      server_opts="check inter 60s observe layer7 error-limit 2 on-error mark-down",
                      extra_backend="    option httpchk GET /health\n    timeout server 300ms\n")
    sp = start_splicer(cfg, [port])
    try:
        # a check that passes clears the errors counted in a row: the requests go after the
        # first one (the next is 60 s away), not around it
        checked(sp, "farm", "s", "L7OK")
        assert [get(port).split()[0] for _ in range(2)] == [str(status)] * 2
        wait_log(sp, f"backend farm server s is DOWN (Health analyze: 2 consecutive errors, "
                     f"last one was: {event})")
        assert get(port) == "503 None"  # no server left
    finally:
        origin.close()
