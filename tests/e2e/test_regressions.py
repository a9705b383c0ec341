"""Regressions found by trying to break splicer: each one a real process on real sockets."""
from __future__ import annotations

import socket
import time

import pytest

from tests.e2e.helpers import ScriptedOrigin, free_port, http_config, read_response, recv_all


def test_trickled_chunk_line_neither_crashes_nor_leaks_the_server_slot(start_splicer):
    """A chunk-size line sent one byte at a time (with a long extension) used to recurse
    until RecursionError, and the crashed stream kept its server slot (maxconn 1) forever."""
    def trickle(c):
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for b in b"1;" + b"a" * 2500:
            c.send(bytes([b]))
            time.sleep(0.0005)
        time.sleep(0.5)

    origin = ScriptedOrigin(trickle)
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)], server_opts="maxconn 1",
                                   extra_defaults="    timeout queue 2s"), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        got = recv_all(s)
        assert got.startswith(b"HTTP/1.1 200 OK")
        assert not got.endswith(b"0\r\n\r\n")  # the malformed body is cut, never completed
        assert "RecursionError" not in sp.log() and "Traceback" not in sp.log()
        # the slot was given back: the next request is served (here: the same trickle again)
        s2 = socket.create_connection(("127.0.0.1", port), timeout=20)
        s2.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        assert recv_all(s2).startswith(b"HTTP/1.1 200 OK")
        assert sp.stats()["backends"]["farm"]["hrsp_5xx"] == 0
    finally:
        origin.close()


def test_partial_response_head_then_silence_gives_504(start_splicer):
    origin = ScriptedOrigin(lambda c: (c.sendall(b"HTTP/1.1 200 OK\r\nContent-"), time.sleep(3)))
    port = free_port()
    cfg = http_config(port, [("o", origin.port)]).replace("timeout server 30s", "timeout server 500ms")
    start_splicer(cfg, [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        assert recv_all(s).startswith(b"HTTP/1.1 504 ")
    finally:
        origin.close()


def test_chunked_response_to_http10_client_is_dechunked_and_closed(start_splicer, farm, www):
    port = free_port()
    start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /chunked/1m HTTP/1.0\r\n\r\n")
    got = recv_all(s)
    head, _, body = got.partition(b"\r\n\r\n")
    assert b"transfer-encoding" not in head.lower()
    assert b"\r\nConnection: close" in head
    import hashlib
    assert hashlib.sha256(body).hexdigest() == www[1]["1m"]


def test_empty_lines_before_a_request_are_ignored(start_splicer, farm):
    port = free_port()
    start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"\r\n\r\nGET /files/0 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    assert recv_all(s).startswith(b"HTTP/1.1 200 OK")


@pytest.mark.parametrize("raw, status", [
    (b"GET /headers HTTP/9.9\r\nHost: a\r\n\r\n", b"505"),
    (b"GET http://evil.example/headers HTTP/1.1\r\nHost: a\r\n\r\n", b"400"),
    (b"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", b"405"),
])
def test_refused_request_forms(start_splicer, farm, raw, status):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(raw)
    assert recv_all(s).split(b" ")[1] == status
    assert sp.stats()["backends"]["farm"]["req_tot"] == 0  # nothing reached a server


def test_absolute_form_is_forwarded_in_origin_form(start_splicer, farm):
    import json
    port = free_port()
    start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET http://a.example/headers?x=1 HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n")
    got = json.loads(recv_all(s).partition(b"\r\n\r\n")[2])
    assert got["target"] == "/headers?x=1"
    assert ["Host", "a.example"] in got["headers"]


def test_connection_naming_content_length_cannot_smuggle(start_splicer, farm):
    """`Connection: Content-Length` must not strip the framing: the 60 bytes are the POST's
    body, never a request of their own on the pooled server connection."""
    import json
    port = free_port()
    start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    smuggled = b"GET /headers?SMUGGLED HTTP/1.1\r\nHost: a\r\nX-Ignore: " + b"x" * 10
    smuggled += b"x" * (60 - len(smuggled))
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 60\r\nConnection: Content-Length\r\n\r\n" + smuggled)
    assert json.loads(read_response(s)[1])["size"] == 60
    for _ in range(4):
        c = socket.create_connection(("127.0.0.1", port), timeout=10)
        c.sendall(b"GET /headers HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
        body = json.loads(recv_all(c).partition(b"\r\n\r\n")[2])
        assert body["target"] == "/headers"


def test_sigterm_mid_close_delimited_body_resets_the_client(start_splicer, farm):
    """A hard stop must not end a close-delimited body with a FIN that looks like its end."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.sendall(b"GET /close/1g HTTP/1.1\r\nHost: a\r\n\r\n")
    assert s.recv(65536).startswith(b"HTTP/1.1 200 OK")
    time.sleep(0.3)
    sp.stop()
    got = recv_all(s)
    assert got.endswith(b"<RST>")
