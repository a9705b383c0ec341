"""Termination states: every stream ends with haproxy's two letters, counted once.

Real `splicer`, a real origin whose behaviour depends on the request path, raw-socket
clients. Each case checks the response the client got and the exact change of the
frontend's and backend's `terms` counters (http/termination.py) and of the error counters
the state implies.
"""
from __future__ import annotations

import socket
import time

import pytest

from tests.e2e.helpers import ScriptedOrigin, exchange, free_port, http_config, recv_all

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def script(c: socket.socket, request: bytes) -> None:
    path = request.split(b" ", 2)[1]
    if path == b"/ok":
        c.sendall(OK)
    elif path == b"/slow":
        time.sleep(1.0)  # beyond timeout server
    elif path == b"/empty":
        pass  # close without a byte
    elif path == b"/junk":
        c.sendall(b"SSH-2.0-OpenSSH_9.0\r\n\r\n")
    elif path == b"/cut":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
    elif path == b"/stall":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
        time.sleep(1.0)


class PathOrigin(ScriptedOrigin):
    def __init__(self) -> None:
        super().__init__(lambda c: script(c, self.requests[-1]))


@pytest.fixture(scope="module")
def origin():
    o = PathOrigin()
    yield o
    o.close()


@pytest.fixture
def proxy(start_splicer, origin):
    port = free_port()
    cfg = http_config(port, [("o", origin.port)])
    cfg = cfg.replace("timeout server 30s", "timeout server 400ms")
    cfg = cfg.replace("timeout http-request 5s", "timeout http-request 400ms")
    sp = start_splicer(cfg, [port])
    sp.port = port
    return sp


def deltas(sp, action):
    """Run `action()`, then the change of (frontend, backend) counters it made: terms and
    the error counters, only the non-zero ones."""
    names = ("ereq", "eresp", "econ", "cli_abrt", "srv_abrt")

    def snap():
        st = sp.stats()
        fe, be = st["frontends"]["www"], st["backends"]["farm"]
        return ({**fe["terms"], **{n: fe[n] for n in names}}, {**be["terms"], **{n: be[n] for n in names}})

    before = snap()
    out = action()
    for _ in range(50):  # the stream is recorded once it is over: after the client saw it end
        after = snap()
        if after != before:
            break
        time.sleep(0.02)
    time.sleep(0.1)
    after = snap()
    diff = tuple({k: v - b.get(k, 0) for k, v in a.items() if v - b.get(k, 0)} for b, a in zip(before, after))
    return out, diff


def get(port: int, path: str) -> bytes:
    return exchange(port, f"GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".encode())


@pytest.mark.parametrize("path, status, fe, be", [
    ("/ok", b"200", {"--": 1}, {"--": 1}),
    ("/slow", b"504", {"sH": 1}, {"sH": 1, "eresp": 1}),
    ("/empty", b"502", {"SH": 1}, {"SH": 1, "eresp": 1}),
    ("/junk", b"502", {"PH": 1}, {"PH": 1, "eresp": 1}),
    ("/cut", b"200", {"SD": 1}, {"SD": 1, "eresp": 1, "srv_abrt": 1}),
    ("/stall", b"200", {"sD": 1}, {"sD": 1, "eresp": 1, "srv_abrt": 1}),
])
def test_server_side_states(proxy, path, status, fe, be):
    resp, (dfe, dbe) = deltas(proxy, lambda: get(proxy.port, path))
    assert resp.split(b" ", 2)[1] == status, resp[:100]
    assert (dfe, dbe) == (fe, be)


def test_dead_server_is_sc_with_503(start_splicer):
    port, dead = free_port(), free_port()
    sp = start_splicer(http_config(port, [("dead", dead)], extra_backend="    retries 1\n"), [port])
    resp, (dfe, dbe) = deltas(sp, lambda: get(port, "/"))
    assert resp.startswith(b"HTTP/1.1 503 ")
    assert dfe == {"SC": 1}
    assert dbe == {"SC": 1, "econ": 2}  # two attempts, one stream


def test_bad_request_is_pr_on_the_frontend_only(proxy):
    resp, (dfe, dbe) = deltas(proxy, lambda: exchange(proxy.port, b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"))
    assert resp.startswith(b"HTTP/1.1 400 ")
    assert (dfe, dbe) == ({"PR": 1, "ereq": 1}, {})


def test_request_timeout_mid_head_is_cr_with_408(proxy):
    def partial():
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost:")
        return recv_all(s)
    resp, (dfe, dbe) = deltas(proxy, partial)
    assert resp.startswith(b"HTTP/1.1 408 ")
    assert (dfe, dbe) == ({"cR": 1, "ereq": 1}, {})


def test_client_closing_mid_head_is_cr_and_a_request_error(proxy):
    """haproxy's incomplete request (h1_handle_incomplete_req): CR, counted in ereq."""
    def partial():
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost:")
        time.sleep(0.05)
        s.close()
    _, (dfe, dbe) = deltas(proxy, partial)
    assert (dfe, dbe) == ({"CR": 1, "ereq": 1}, {})


def test_idle_keep_alive_close_is_no_stream(proxy):
    def idle():
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        s.sendall(b"GET /ok HTTP/1.1\r\nHost: a\r\n\r\n")
        assert s.recv(65536).endswith(b"ok")
        s.close()
    _, (dfe, dbe) = deltas(proxy, idle)
    assert (dfe, dbe) == ({"--": 1}, {"--": 1})


def test_client_cutting_its_upload_is_cd(proxy):
    def upload():
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        s.sendall(b"POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n" + b"y" * 500)
        time.sleep(0.2)
        s.close()
    _, (dfe, dbe) = deltas(proxy, upload)
    assert dfe == {"CD": 1}
    assert dbe == {"CD": 1, "cli_abrt": 1}
