"""`http-reuse` and `pool-max-conn` through the real `splicer` command (haproxy
configuration.txt "http-reuse", default `safe`): the server connections an origin accepts,
counted, for client sessions of one or two requests each."""
from __future__ import annotations

import http.client

import pytest

from tests.e2e.helpers import KeepAliveOrigin, free_port, http_config

RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def session(port, n):
    """One client connection making `n` GET requests."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(n):
        conn.request("GET", "/")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"ok")
    conn.close()


def run(start_splicer, extra_backend, sessions, server_opts=""):
    """Serve client sessions of the given request counts, one after the other; returns
    (connections the origin accepted, requests it served, the backend's reused count)."""
    origin = KeepAliveOrigin(lambda conn_no, req_no, head: (RESP, False))
    try:
        port = free_port()
        sp = start_splicer(http_config(port, [("o", origin.port)], extra_backend=extra_backend,
                                       server_opts=server_opts), [port])
        for n in sessions:
            session(port, n)
        return origin.conns, len(origin.requests), sp.stats()["backends"]["farm"]["reused"]
    finally:
        origin.close()


def test_never_opens_a_server_connection_per_request(start_splicer):
    assert run(start_splicer, "    http-reuse never", [3, 2]) == (5, 5, 0)


def test_safe_is_the_default_first_request_of_a_session_never_reuses(start_splicer):
    # each session's first request opens its own connection; its later ones reuse
    assert run(start_splicer, "", [2, 2, 1]) == (3, 5, 2)
    assert run(start_splicer, "    http-reuse safe", [2, 2, 1]) == (3, 5, 2)


def test_always_reuses_for_first_requests_too(start_splicer):
    assert run(start_splicer, "    http-reuse always", [2, 2, 1]) == (1, 5, 4)


def test_aggressive_reuses_for_a_first_request_only_a_connection_reused_before(start_splicer):
    # session 1 (1 request): conn 1 serves once. Session 2's first request may not take it
    # (never reused yet): conn 2; its second request reuses conn 2, which is now proven, so
    # session 3's first request takes it.
    assert run(start_splicer, "    http-reuse aggressive", [1, 2, 1]) == (2, 4, 2)


@pytest.mark.parametrize("opts, expected", [
    ("pool-max-conn 0", (3, 3, 0)),    # nothing is kept: a new connection each time
    ("pool-max-conn 1", (1, 3, 2)),
    ("pool-max-conn -1", (1, 3, 2)),
])
def test_pool_max_conn(start_splicer, opts, expected):
    assert run(start_splicer, "    http-reuse always", [1, 1, 1], opts) == expected


def test_idle_connections_beyond_the_traffics_need_are_closed(start_splicer):
    """haproxy 2.x keeps an idle server connection only while the connections in use plus
    the idle ones stay within the estimated need (est_need_conns): one client session after
    another, each first request on a connection of its own (`safe`), leaves one idle
    connection behind, not one per session; and the CSV says so (idle_conn_cur,
    used_conn_cur, need_conn_est)."""
    origin = KeepAliveOrigin(lambda conn_no, req_no, head: (RESP, False))
    try:
        port = free_port()
        sp = start_splicer(http_config(port, [("o", origin.port)]), [port])
        for _ in range(5):
            session(port, 1)
        assert origin.conns == 5
        srv = sp.stats()["backends"]["farm"]["servers"]["o"]
        assert (srv["idle"], srv["idle_conn_cur"], srv["used_conn_cur"], srv["need_conn_est"]) == (1, 1, 0, 1)
        session(port, 2)  # a second request reuses the one kept
        assert origin.conns == 6
    finally:
        origin.close()
