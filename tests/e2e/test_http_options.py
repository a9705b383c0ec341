"""errorfile, option http-buffer-request and option abortonclose, on the real proxy."""
from __future__ import annotations

import socket
import time

from tests.e2e.helpers import ScriptedOrigin, free_port, http_config, recv_all


def test_errorfile_replaces_the_503_page(start_splicer, tmp_path):
    page = tmp_path / "503.http"
    body = b"<h1>we are down</h1>\n"
    page.write_bytes(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (len(body), body))
    port = free_port()
    cfg = http_config(port, [("dead", free_port())], extra_defaults=f"    errorfile 503 {page}\n    retries 0")
    start_splicer(cfg, [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    assert recv_all(s) == page.read_bytes()


def test_bad_errorfile_is_a_config_error(tmp_path):
    from tests.e2e.test_config_cli import run
    bad = tmp_path / "x.http"
    bad.write_bytes(b"<html>not a response</html>")
    cfg = tmp_path / "c.cfg"
    cfg.write_text(f"defaults\n    mode http\n    errorfile 503 {bad}\n    errorfile 999 {bad}\n    errorfile 302 {bad}\n")
    r = run(["-c", str(cfg), "--check"])
    assert r.returncode == 1
    assert f"{cfg}:3: 'errorfile 503': '{bad}' is not an HTTP response" in r.stderr
    assert f"{cfg}:4: 'errorfile' must be between 100 and 599, got 999" in r.stderr
    assert f"{cfg}:5: 'errorfile': status code 302 cannot be replaced" in r.stderr


def test_http_buffer_request_answers_408_to_a_trickled_body_without_touching_a_server(start_splicer):
    origin = ScriptedOrigin(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
    port = free_port()
    cfg = http_config(port, [("o", origin.port)], extra_defaults="    option http-buffer-request")
    cfg = cfg.replace("timeout http-request 5s", "timeout http-request 600ms")
    sp = start_splicer(cfg, [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n")
        for _ in range(5):
            s.sendall(b"x")
            time.sleep(0.2)
        assert recv_all(s).startswith(b"HTTP/1.1 408 ")
        assert origin.requests == []  # no server connection was ever used
        assert sp.stats()["backends"]["farm"]["stot"] == 0
    finally:
        origin.close()


def test_http_buffer_request_forwards_a_complete_body_with_its_head(start_splicer):
    origin = ScriptedOrigin(lambda c: (time.sleep(0.2), c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)], extra_defaults="    option http-buffer-request"), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        assert recv_all(s).startswith(b"HTTP/1.1 200 OK")
        assert origin.requests[0].endswith(b"\r\n\r\nhello")  # head and body in one read
    finally:
        origin.close()


def test_abortonclose_does_not_send_a_request_whose_client_left(start_splicer, farm):
    origin = ScriptedOrigin(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
    port = free_port()
    cfg = http_config(port, [("o", origin.port)], server_opts="maxconn 1",
                      extra_defaults="    option abortonclose\n    timeout queue 5s")
    start_splicer(cfg, [port])
    try:
        # hold the only slot with a slow request, queue a second one, and let its client leave
        hold = socket.create_connection(("127.0.0.1", port), timeout=10)
        origin.script = lambda c: (time.sleep(1.0), c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        hold.sendall(b"GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(0.2)
        gone = socket.create_connection(("127.0.0.1", port), timeout=10)
        gone.sendall(b"GET /gone HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(0.2)
        gone.close()
        assert hold.recv(4096).startswith(b"HTTP/1.1 200 OK")
        time.sleep(0.5)
        assert [r.split(b" ")[1] for r in origin.requests] == [b"/slow"]
    finally:
        origin.close()


def test_option_forwarded_cannot_be_stripped_by_the_client(start_splicer, farm):
    import json
    port = free_port()
    start_splicer(http_config(port, [(o.name, o.port) for o in farm],
                              extra_backend="    option forwarded proto host for"), [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /headers HTTP/1.1\r\nHost: shop.example\r\nConnection: close, Forwarded\r\n"
              b"Forwarded: for=6.6.6.6\r\n\r\n")
    got = json.loads(recv_all(s).partition(b"\r\n\r\n")[2])
    fwd = [v for n, v in got["headers"] if n.lower() == "forwarded"]
    assert fwd == ['proto=http;host="shop.example";for=127.0.0.1']


def test_http_buffer_request_answers_100_continue_itself(start_splicer):
    origin = ScriptedOrigin(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)], extra_defaults="    option http-buffer-request"), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
                  b"Connection: close\r\n\r\n")
        assert s.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"  # before any body byte was sent
        s.sendall(b"hello")
        assert recv_all(s).startswith(b"HTTP/1.1 200 OK")
        assert origin.requests[0].endswith(b"\r\n\r\nhello")
    finally:
        origin.close()


def test_http_buffer_request_answers_100_once_and_does_not_forward_the_expectation(start_splicer):
    """splicer answered the client's 100-continue itself while buffering, so the expectation
    is met: it is not forwarded, and the client never gets a second 100 (haproxy removes the
    Expect field in that case too)."""
    def script(c):
        if b"expect:" in origin.requests[-1].lower():
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    origin = ScriptedOrigin(script)
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)], extra_defaults="    option http-buffer-request"), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
                  b"Connection: close\r\n\r\n")
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(b"hello")
        rest = recv_all(s)
        assert rest.startswith(b"HTTP/1.1 200 OK") and b"100 Continue" not in rest
        assert b"expect:" not in origin.requests[0].lower()
        assert origin.requests[0].endswith(b"\r\n\r\nhello")
    finally:
        origin.close()


def test_closing_after_a_response_does_not_reset_away_unread_pipelined_bytes(start_splicer):
    """A client pipelines a second request behind one that says Connection: close. splicer
    closes after the first response; closing with the second request unread would make the
    kernel send a reset, which can destroy the response before the client reads it (RFC 9112
    section 9.6: close in stages). The client, reading late, gets the whole response."""
    body = bytes(range(256)) * 1024  # 256 KiB: more than the client reads before the close
    origin = ScriptedOrigin(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                                                % (len(body), body)))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                  b"GET /b HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(0.5)  # splicer has sent what fits and waits; the client reads only now
        got = recv_all(s)
        assert not got.endswith(b"<RST>"), len(got)
        assert got.split(b"\r\n\r\n", 1)[1] == body
        assert len(origin.requests) == 1
    finally:
        origin.close()
