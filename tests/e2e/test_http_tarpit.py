"""http-request tarpit and timeout tarpit on the real proxy (haproxy 4.2): the request is
held for the tarpit time without reaching any server, then answered 500 (or its status);
the connection goes on when the request allows it, as haproxy 2.6's does, else it closes;
timeout connect stands in for an unset timeout tarpit; a client that leaves during the hold
is freed at once; many holds do not stop the other requests. Counted in dreq, logged PT
(CT when the client left first)."""
from __future__ import annotations

import socket
import time

from tests.e2e.helpers import RULES_DEFAULTS, free_port, named_origin, recv_all

PAGE_500 = (b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 84\r\ncache-control: no-cache\r\n"
            b"content-type: text/html\r\nconnection: close\r\n\r\n<html><body><h1>500 Internal Server Error</h1>\n"
            b"Internal Server Error\n</body></html>\n")

SLACK = 10.0
"""Generous upper bound past the tarpit time (a loaded 2-CPU CI machine)."""


def start(start_splicer, frontend: str, backend: str = "", defaults: str = RULES_DEFAULTS):
    o = named_origin(b"origin")
    port = free_port()
    sp = start_splicer(defaults + f"""
frontend www
    bind 127.0.0.1:{port}
{frontend}
    default_backend app
backend app
{backend}
    server o 127.0.0.1:{o.port}
""", [port])
    return sp, port, o


def send(port: int, request: bytes) -> tuple[socket.socket, float]:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    t0 = time.monotonic()
    s.sendall(request)
    return s, t0


def answer(s: socket.socket, t0: float) -> tuple[bytes, float]:
    """Everything until the close, and how long after the request was sent the close came."""
    try:
        return recv_all(s), time.monotonic() - t0
    finally:
        s.close()


def get(target: bytes) -> bytes:
    """A request whose client closes after the answer (answer() reads until the close)."""
    return b"GET %s HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n\r\n" % target


def wait_stats(sp, ok, timeout: float):
    """Poll the stats until ok(stats) holds; the stats at that point (fails after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        st = sp.stats()
        if ok(st):
            return st
        assert time.monotonic() < deadline, st
        time.sleep(0.05)


def test_tarpit_holds_then_answers_500_and_closes(start_splicer):
    sp, port, o = start(start_splicer, """
    timeout tarpit 700ms
    http-request tarpit if { path /bot }
    http-request tarpit deny_status 429 content-type text/plain string "slow down" if { path /post }
""")
    try:
        a, ta = send(port, get(b"/bot"))
        # a body sent during the hold is read and dropped, and changes nothing
        b, tb = send(port, b"POST /post HTTP/1.1\r\nHost: www.example\r\nContent-Length: 200000\r\n\r\n"
                     + b"x" * 200000)
        got_a, wait_a = answer(a, ta)
        got_b, wait_b = answer(b, tb)
        assert got_a == PAGE_500
        assert got_b == (b"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 9\r\ncontent-type: text/plain\r\n"
                         b"connection: close\r\n\r\nslow down")
        assert 0.7 <= wait_a <= 0.7 + SLACK and 0.7 <= wait_b <= 0.7 + SLACK, (wait_a, wait_b)
        assert not o.requests
        fe = sp.stats()["frontends"]["www"]
        assert (fe["req_tot"], fe["dreq"], fe["intercepted"], fe["hrsp_5xx"], fe["hrsp_4xx"]) == (2, 2, 0, 1, 1)
        assert fe["terms"] == {"PT": 2}
    finally:
        o.close()


def test_a_tarpitted_keep_alive_connection_goes_on_after_the_answer(start_splicer):
    """haproxy 2.6 keeps the connection after a tarpit's 500 (checked side by side with
    haproxy 2.6.12): the next request on it is served."""
    sp, port, o = start(start_splicer, """
    timeout tarpit 300ms
    http-request tarpit if { path /bot }
""")
    try:
        s, t0 = send(port, b"GET /bot HTTP/1.1\r\nHost: www.example\r\n\r\n")
        got = b""
        while len(got) < len(PAGE_500) - len(b"connection: close\r\n"):
            chunk = s.recv(65536)
            assert chunk, got
            got += chunk
        assert got == PAGE_500.replace(b"connection: close\r\n", b"")
        assert time.monotonic() - t0 >= 0.3
        s.sendall(b"GET /ok HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n\r\n")
        rest, _ = answer(s, t0)
        assert rest.startswith(b"HTTP/1.1 200 ") and len(o.requests) == 1
        fe = sp.stats()["frontends"]["www"]
        assert (fe["req_tot"], fe["dreq"], fe["hrsp_5xx"], fe["hrsp_2xx"]) == (2, 1, 1, 1)
    finally:
        o.close()


def test_timeout_connect_stands_in_and_a_backend_rule_uses_the_backend_timeout(start_splicer):
    defaults = RULES_DEFAULTS.replace("timeout connect 2s", "timeout connect 900ms")
    sp, port, o = start(start_splicer, """
    http-request tarpit if { path /fe }
""", """
    timeout tarpit 300ms
    http-request tarpit deny_status 403 if { path /be }
""", defaults)
    try:
        fe_s, fe_t = send(port, get(b"/fe"))
        be_s, be_t = send(port, get(b"/be"))
        got_be, wait_be = answer(be_s, be_t)
        got_fe, wait_fe = answer(fe_s, fe_t)
        assert got_fe == PAGE_500 and 0.9 <= wait_fe <= 0.9 + SLACK, wait_fe
        assert got_be.startswith(b"HTTP/1.1 403 Forbidden\r\n") and got_be.endswith(b"</html>\n")
        assert 0.3 <= wait_be <= 0.3 + SLACK, wait_be
        st = sp.stats()
        assert (st["frontends"]["www"]["dreq"], st["backends"]["app"]["dreq"]) == (2, 1)
        assert st["backends"]["app"]["terms"] == {"PT": 1}
        assert not o.requests
    finally:
        o.close()


def test_client_closing_during_the_tarpit_is_freed_at_once(start_splicer):
    sp, port, o = start(start_splicer, """
    timeout tarpit 60s
    http-request tarpit
""")
    try:
        s, t0 = send(port, get(b"/"))
        wait_stats(sp, lambda st: st["frontends"]["www"]["scur"] == 1, 10)
        s.close()
        # long before the 60 s are up, the session is gone: counted as denied, logged CT
        fe = wait_stats(sp, lambda st: st["frontends"]["www"]["scur"] == 0, 15)["frontends"]["www"]
        assert time.monotonic() - t0 < 30
        assert (fe["req_tot"], fe["dreq"], fe["hrsp_5xx"]) == (1, 1, 0)
        assert fe["terms"] == {"CT": 1}
    finally:
        o.close()


def test_many_tarpitted_connections_do_not_hold_up_other_requests(start_splicer):
    n = 50
    sp, port, o = start(start_splicer, """
    timeout tarpit 4s
    http-request tarpit if { path /bot }
""")
    try:
        held = [send(port, get(b"/bot")) for _ in range(n)]
        wait_stats(sp, lambda st: st["frontends"]["www"]["scur"] == n, 10)
        c, tc = send(port, b"GET /ok HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n\r\n")
        got, _ = answer(c, tc)
        assert got.endswith(b"\r\n\r\norigin")
        for s, _ in held:  # the held ones have had nothing yet
            s.setblocking(False)
            try:
                assert s.recv(1) == b"<never>"
            except BlockingIOError:
                pass
            s.setblocking(True)
            s.settimeout(30)
        for s, t0 in held:
            page, waited = answer(s, t0)
            assert page == PAGE_500 and 4.0 <= waited <= 4.0 + SLACK, waited
        fe = sp.stats()["frontends"]["www"]
        assert (fe["dreq"], fe["hrsp_5xx"], fe["hrsp_2xx"], fe["scur"]) == (n, n, 1, 0)
        assert fe["terms"] == {"PT": n, "--": 1}
    finally:
        o.close()
