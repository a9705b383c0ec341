"""Random and mutated heads against the real proxy: it answers or closes, never crashes, never
lets an ambiguous request through, and its worker keeps serving afterwards."""
from __future__ import annotations

import http.client
import socket

from hypothesis import HealthCheck, given, settings

from tests.e2e.helpers import ScriptedOrigin, free_port, http_config
from tests.unit.http.test_h1_properties import heads, peer_framing


class Farm:
    """One splicer in front of a recording origin, shared by every example."""

    def __init__(self, start_splicer) -> None:
        self.origin = ScriptedOrigin(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
        self.port = free_port()
        self.sp = start_splicer(http_config(self.port, [("o", self.origin.port)]), [self.port])


def exchange(port: int, data: bytes) -> bytes:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out
    except (ConnectionResetError, BrokenPipeError):
        return b"<RST>"
    finally:
        s.close()


def test_random_heads_never_break_the_worker(start_splicer):
    farm = Farm(start_splicer)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(heads())
    def one(head):
        resp = exchange(farm.port, head + b"hello")
        assert resp == b"<RST>" or resp == b"" or resp.startswith(b"HTTP/1.1 ")

    try:
        one()
        # every request the origin got had unambiguous framing
        for raw in farm.origin.requests:
            peer_framing(raw.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n")
        # and the worker still serves
        conn = http.client.HTTPConnection("127.0.0.1", farm.port, timeout=5)
        conn.request("GET", "/")
        assert conn.getresponse().status == 200
        log = farm.sp.log()
        assert "Traceback" not in log and "restarting" not in log
    finally:
        farm.origin.close()
