"""`option forwardfor except <network> | header <name> | if-none` end to end (haproxy 2.6
configuration.txt 4.2 "option forwardfor"; http_process_request adds the field): the origin
gets what haproxy would send, on the stream path and on the express lane alike.

Real parts: the `splicer` command, a KeepAliveOrigin that records each head, raw client
sockets on 127.0.0.1.
"""
from __future__ import annotations

import socket
import time

import pytest

from tests.e2e.helpers import RULES_DEFAULTS, KeepAliveOrigin, free_port, recv_exactly

CONFIG = RULES_DEFAULTS + """
frontend www
    bind 127.0.0.1:{port}
{fe}
    default_backend farm
backend farm
{be}
    server s1 127.0.0.1:{origin}
"""

REQUESTS = [b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
            b"GET /b HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 198.51.100.7\r\n\r\n",
            b"GET /c HTTP/1.1\r\nHost: h\r\nx-client: 203.0.113.9\r\n\r\n"]


@pytest.fixture
def origin():
    o = KeepAliveOrigin(lambda conn_no, req_no, head: (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", False))
    yield o
    o.close()


def forwarded(start_splicer, origin, fe: str, be: str, mode: str) -> tuple[list[list[bytes]], int]:
    """The forwarding fields of each request of REQUESTS (sent twice on one connection) as
    the origin got them (the lines after Host, in order), and how many requests the express
    lane served."""
    origin.requests.clear()
    port = free_port()
    sp = start_splicer(CONFIG.format(port=port, origin=origin.port, fe=fe, be=be), [port],
                       env={"SPLICER_EXPRESS": mode})
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for req in REQUESTS * 2:
            s.sendall(req)
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += recv_exactly(s, 1)
            assert head.startswith(b"HTTP/1.1 200 ") and recv_exactly(s, 2) == b"ok"
    deadline = time.monotonic() + 5
    while sp.stats()["frontends"]["www"]["req_tot"] < 6 and time.monotonic() < deadline:
        time.sleep(0.02)  # (a lane request is counted once its completion is reaped)
    lane = sp.stats().get("express", {}).get("www", {}).get("requests", 0)
    sp.stop()
    return [h.split(b"\r\n")[2:] for _, _, h in origin.requests], lane


CASES = [
    # (frontend lines, backend lines, the fields of REQUESTS' three heads after Host)
    ("    option forwardfor", "",
     [[b"X-Forwarded-For: 127.0.0.1"], [b"X-Forwarded-For: 198.51.100.7", b"X-Forwarded-For: 127.0.0.1"],
      [b"x-client: 203.0.113.9", b"X-Forwarded-For: 127.0.0.1"]]),
    # the client is in the except network: no field (either proxy's except counts)
    ("    option forwardfor except 127.0.0.0/8", "",
     [[], [b"X-Forwarded-For: 198.51.100.7"], [b"x-client: 203.0.113.9"]]),
    ("    option forwardfor", "    option forwardfor except 127.0.0.1",
     [[], [b"X-Forwarded-For: 198.51.100.7"], [b"x-client: 203.0.113.9"]]),
    ("    option forwardfor except 10.0.0.0/8", "",
     [[b"X-Forwarded-For: 127.0.0.1"], [b"X-Forwarded-For: 198.51.100.7", b"X-Forwarded-For: 127.0.0.1"],
      [b"x-client: 203.0.113.9", b"X-Forwarded-For: 127.0.0.1"]]),
    # another name: the backend's wins over the frontend's
    ("    option forwardfor header X-Real", "    option forwardfor header X-Client",
     [[b"X-Client: 127.0.0.1"], [b"X-Forwarded-For: 198.51.100.7", b"X-Client: 127.0.0.1"],
      [b"x-client: 203.0.113.9", b"X-Client: 127.0.0.1"]]),
    ("    option forwardfor header X-Real", "",
     [[b"X-Real: 127.0.0.1"], [b"X-Forwarded-For: 198.51.100.7", b"X-Real: 127.0.0.1"],
      [b"x-client: 203.0.113.9", b"X-Real: 127.0.0.1"]]),
    # if-none: only where the request has none of that name...
    ("    option forwardfor if-none", "",
     [[b"X-Forwarded-For: 127.0.0.1"], [b"X-Forwarded-For: 198.51.100.7"],
      [b"x-client: 203.0.113.9", b"X-Forwarded-For: 127.0.0.1"]]),
    ("", "    option forwardfor header x-client if-none",
     [[b"x-client: 127.0.0.1"], [b"X-Forwarded-For: 198.51.100.7", b"x-client: 127.0.0.1"],
      [b"x-client: 203.0.113.9"]]),
    # ...unless the other proxy's option adds it always
    ("    option forwardfor if-none", "    option forwardfor",
     [[b"X-Forwarded-For: 127.0.0.1"], [b"X-Forwarded-For: 198.51.100.7", b"X-Forwarded-For: 127.0.0.1"],
      [b"x-client: 203.0.113.9", b"X-Forwarded-For: 127.0.0.1"]]),
]


STREAM_ONLY = {  # another name, or if-none that holds: the stream's way, not the lane's
    ("    option forwardfor header X-Real", "    option forwardfor header X-Client"),
    ("    option forwardfor header X-Real", ""),
    ("    option forwardfor if-none", ""),
    ("", "    option forwardfor header x-client if-none"),
}


@pytest.mark.parametrize("fe, be, want", CASES)
def test_the_origin_gets_what_haproxy_sends(start_splicer, origin, fe, be, want):
    """With and without the express lane, which takes the requests of the plain form and of
    `except` (the engine then adds no field for the sessions of excepted clients)."""
    for mode in ("off", "on"):
        got, lane = forwarded(start_splicer, origin, fe, be, mode)
        assert got == want * 2, mode
        assert lane == (6 if mode == "on" and (fe, be) not in STREAM_ONLY else 0), (mode, lane)
