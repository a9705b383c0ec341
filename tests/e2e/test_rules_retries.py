"""http-request / http-response header rules and retry-on, on the real proxy.

Origins are ScriptedOrigins (one thread per connection, they record each request head); the
client is a raw socket, so every byte the client and the origin see is checked.
"""
from __future__ import annotations

import socket
import threading
import time

from tests.e2e.helpers import (ScriptedOrigin, exchange, free_port, head_values, http_config, read_response)

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
UNAVAILABLE = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"





# -- header rules ---------------------------------------------------------------------------

def test_forwarding_fields_are_added_after_hop_by_hop_removal(start_splicer):
    """X-Forwarded-Proto/-Host (http-request set-header), Via (add-header) and X-Forwarded-For
    (option forwardfor) reach the origin exactly once each, whatever the client sent or named
    in Connection; del-header removes a client field."""
    origin = ScriptedOrigin(lambda c: c.sendall(OK))
    port = free_port()
    rules = ("    http-request set-header X-Forwarded-Proto http\n"
             "    http-request set-header X-Forwarded-Host %[req.hdr(host)]\n"
             "    http-request add-header Via \"1.1 splicer\"\n"
             "    http-request del-header X-Secret\n"
             "    http-request set-header X-Client %ci:%[src_port]\n")
    start_splicer(http_config(port, [("o", origin.port)], extra_frontend=rules), [port])
    try:
        resp = exchange(port, b"GET /p?q=1 HTTP/1.1\r\nHost: shop.example\r\n"
                              b"Connection: close, X-Forwarded-Proto, X-Forwarded-Host, Via, X-Forwarded-For\r\n"
                              b"X-Forwarded-Proto: https\r\nX-Forwarded-For: 6.6.6.6\r\n"
                              b"X-Secret: s3cr3t\r\nVia: 1.0 attacker\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 200 OK")
        head = origin.requests[0]
        assert head_values(head, b"x-forwarded-proto") == [b"http"]
        assert head_values(head, b"x-forwarded-host") == [b"shop.example"]
        assert head_values(head, b"via") == [b"1.1 splicer"]
        assert head_values(head, b"x-forwarded-for") == [b"127.0.0.1"]
        assert head_values(head, b"x-secret") == []
        ip, _, client_port = head_values(head, b"x-client")[0].partition(b":")
        assert ip == b"127.0.0.1" and int(client_port) > 0
    finally:
        origin.close()


def test_set_header_replaces_what_the_client_sent(start_splicer):
    origin = ScriptedOrigin(lambda c: c.sendall(OK))
    port = free_port()
    rules = "    http-request set-header X-Forwarded-Proto http\n"
    start_splicer(http_config(port, [("o", origin.port)], extra_frontend=rules), [port])
    try:
        exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-Proto: https\r\n"
                       b"x-forwarded-proto: ftp\r\nConnection: close\r\n\r\n")
        assert head_values(origin.requests[0], b"x-forwarded-proto") == [b"http"]
    finally:
        origin.close()


def test_rule_order_frontend_then_backend_for_requests_and_reverse_for_responses(start_splicer):
    """haproxy's order: a request meets the frontend's rules then the backend's; a response
    the backend's then the frontend's."""
    origin = ScriptedOrigin(lambda c: c.sendall(
        b"HTTP/1.1 200 OK\r\nServer: Apache/2.4.1\r\nX-Order: origin\r\nContent-Length: 2\r\n\r\nok"))
    port = free_port()
    fe = ("    http-request set-header X-Order fe\n"
          "    http-response add-header X-Order fe\n"
          "    http-response set-header X-Status %[status]\n")
    be = ("    http-request add-header X-Order be\n"
          "    http-response set-header X-Order be\n"
          "    http-response del-header Server\n"
          "    http-response set-header X-Backend %b\n")
    start_splicer(http_config(port, [("o", origin.port)], extra_frontend=fe, extra_backend=be), [port])
    try:
        resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nX-Order: client\r\nConnection: close\r\n\r\n")
        assert head_values(origin.requests[0], b"x-order") == [b"fe", b"be"]
        assert head_values(resp, b"x-order") == [b"be", b"fe"]
        assert head_values(resp, b"server") == []
        assert head_values(resp, b"x-status") == [b"200"]
        assert head_values(resp, b"x-backend") == [b"farm"]
        assert resp.endswith(b"\r\n\r\nok")
    finally:
        origin.close()


def test_listen_section_rules_run_once(start_splicer):
    origin = ScriptedOrigin(lambda c: c.sendall(OK))
    port = free_port()
    cfg = f"""
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s

listen lb
    bind 127.0.0.1:{port}
    http-request add-header X-Once 1
    http-response add-header X-Once 1
    server o 127.0.0.1:{origin.port}
"""
    start_splicer(cfg, [port])
    try:
        resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert head_values(origin.requests[0], b"x-once") == [b"1"]
        assert head_values(resp, b"x-once") == [b"1"]
    finally:
        origin.close()


# -- retry-on -------------------------------------------------------------------------------

class Flaky:
    """A script that fails the first `bad` connections with `fail(conn)`, then answers 200."""

    def __init__(self, fail, bad: int = 1) -> None:
        self.fail, self.bad, self.seen = fail, bad, 0
        self.lock = threading.Lock()

    def __call__(self, c: socket.socket) -> None:
        with self.lock:
            self.seen += 1
            n = self.seen
        if n <= self.bad:
            self.fail(c)
        else:
            c.sendall(OK)


def retry_setup(start_splicer, fail, retry_on: str, bad: int = 1, extra: str = ""):
    origin = ScriptedOrigin(Flaky(fail, bad))
    port = free_port()
    backend = (f"    retry-on {retry_on}\n" if retry_on else "") + extra
    cfg = http_config(port, [("o", origin.port)], extra_backend=backend)
    cfg = cfg.replace("timeout server 30s", "timeout server 700ms")
    sp = start_splicer(cfg, [port])
    return origin, port, sp


def test_retry_on_503_sends_a_get_again(start_splicer):
    origin, port, sp = retry_setup(start_splicer, lambda c: c.sendall(UNAVAILABLE), "503")
    try:
        resp = exchange(port, b"GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 200 OK") and resp.endswith(b"ok")
        assert len(origin.requests) == 2
        assert sp.stats()["backends"]["farm"]["wretr"] == 1
    finally:
        origin.close()


def test_retry_on_never_replays_a_post(start_splicer):
    origin, port, sp = retry_setup(start_splicer, lambda c: c.sendall(UNAVAILABLE),
                                   "all-retryable-errors")
    try:
        resp = exchange(port, b"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                              b"Connection: close\r\n\r\nabc")
        assert resp.startswith(b"HTTP/1.1 503 Service Unavailable") and resp.endswith(b"busy")
        assert len(origin.requests) == 1
        assert sp.stats()["backends"]["farm"]["wretr"] == 0
    finally:
        origin.close()


def test_default_retry_on_does_not_resend_after_an_empty_response(start_splicer):
    origin, port, _ = retry_setup(start_splicer, lambda c: None, "")
    try:
        resp = exchange(port, b"GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 502 ")
        assert len(origin.requests) == 1
    finally:
        origin.close()


def test_retry_on_empty_response(start_splicer):
    origin, port, _ = retry_setup(start_splicer, lambda c: None, "empty-response")
    try:
        resp = exchange(port, b"GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 200 OK")
        assert len(origin.requests) == 2
    finally:
        origin.close()


def test_retry_on_junk_response(start_splicer):
    origin, port, _ = retry_setup(start_splicer, lambda c: c.sendall(b"SSH-2.0-OpenSSH\r\n\r\n"),
                                  "junk-response")
    try:
        resp = exchange(port, b"GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 200 OK")
        assert len(origin.requests) == 2
    finally:
        origin.close()


def test_retry_on_response_timeout(start_splicer):
    origin, port, _ = retry_setup(start_splicer, lambda c: time.sleep(1.5), "response-timeout")
    try:
        t0 = time.monotonic()
        resp = exchange(port, b"HEAD /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 200 OK")
        assert time.monotonic() - t0 >= 0.6  # the first attempt waited for timeout server
        assert len(origin.requests) == 2
    finally:
        origin.close()


def test_retries_bound_retry_on_and_the_last_response_is_relayed(start_splicer):
    origin, port, sp = retry_setup(start_splicer, lambda c: c.sendall(UNAVAILABLE), "503", bad=10,
                                   extra="    retries 2\n")
    try:
        resp = exchange(port, b"GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 503 Service Unavailable") and resp.endswith(b"busy")
        assert len(origin.requests) == 3  # the first attempt and 2 retries
        assert sp.stats()["backends"]["farm"]["wretr"] == 2
    finally:
        origin.close()


def test_no_retry_once_an_interim_response_reached_the_client(start_splicer):
    origin, port, _ = retry_setup(
        start_splicer, lambda c: c.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n" + UNAVAILABLE),
        "503")
    try:
        resp = exchange(port, b"GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 103 Early Hints\r\n")
        assert b"HTTP/1.1 503 Service Unavailable" in resp
        assert len(origin.requests) == 1
    finally:
        origin.close()


def test_retry_on_503_with_redispatch_goes_to_another_server(start_splicer):
    bad = ScriptedOrigin(lambda c: c.sendall(UNAVAILABLE))
    good = ScriptedOrigin(lambda c: c.sendall(OK))
    port = free_port()
    cfg = http_config(port, [("bad", bad.port), ("good", good.port)],
                      extra_backend="    retry-on 503\n    option redispatch\n")
    sp = start_splicer(cfg, [port])
    try:
        for _ in range(4):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            head, body = read_response(s)
            assert head.startswith(b"HTTP/1.1 200 OK") and body == b"ok"
            s.close()
        assert len(good.requests) == 4
        assert 1 <= len(bad.requests) <= 2  # roundrobin sent it its share, each redispatched
        be = sp.stats()["backends"]["farm"]
        assert be["wretr"] == be["wredis"] == len(bad.requests)
    finally:
        bad.close()
        good.close()


def test_retry_on_none_does_not_retry_a_failed_connect(start_splicer):
    dead = free_port()
    port = free_port()
    cfg = http_config(port, [("dead", dead)], extra_backend="    retry-on none\n    retries 3\n")
    sp = start_splicer(cfg, [port])
    resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    assert resp.startswith(b"HTTP/1.1 503 ")
    be = sp.stats()["backends"]["farm"]
    assert be["econ"] == 1 and be["wretr"] == 0


def test_default_retries_a_failed_connect(start_splicer):
    dead = free_port()
    port = free_port()
    cfg = http_config(port, [("dead", dead)], extra_backend="    retries 2\n")
    cfg = cfg.replace("timeout connect 2s", "timeout connect 100ms")
    sp = start_splicer(cfg, [port])
    resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    assert resp.startswith(b"HTTP/1.1 503 ")
    be = sp.stats()["backends"]["farm"]
    assert be["econ"] == 3 and be["wretr"] == 2
