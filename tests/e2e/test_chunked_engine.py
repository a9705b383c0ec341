"""Chunked bodies relayed by the engine (SPL_JOB_CHUNKED), on the real proxy.

With a splice option (here `option splice-auto`, the tests' default) a chunked body is one
engine job: the engine peeks each framing line, checks it (native/src/chunked.c), and splices
lines and data verbatim. These tests check what must hold whatever the chunk sizes: bytes
exact, nothing read past the end of the body, framing errors end the message short, and a
body trickled or cut anywhere is handled.
"""
from __future__ import annotations

import os
import socket
import time

from tests.e2e.helpers import ScriptedOrigin, free_port, http_config, read_response, recv_all


def chunked(pieces: list[bytes], ext: bytes = b"", trailers: bytes = b"") -> bytes:
    out = b"".join(b"%x%s\r\n%s\r\n" % (len(p), ext, p) for p in pieces)
    return out + b"0\r\n" + trailers + b"\r\n"


def start(start_splicer, script):
    origin = ScriptedOrigin(script)
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)]), [port])
    return origin, port, sp


def test_many_small_chunks_extensions_and_trailers_arrive_verbatim_and_spliced(start_splicer):
    pieces = [os.urandom(n) for n in (1, 7, 100, 4096, 5000, 65536, 3, 200_000)] * 20
    body = chunked(pieces, ext=b";ext=\"v\"", trailers=b"X-Sum: 1\r\nX-Other: 2\r\n")
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    origin, port, sp = start(start_splicer, lambda c: c.sendall(head + body))
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        got = recv_all(s)
        assert got.split(b"\r\n\r\n", 1)[1] == body  # framing, extensions and trailers as sent
        st = sp.stats()
        assert st["frontends"]["www"]["spliced"] == len(body)
        assert st["frontends"]["www"]["copied"] == 0
        assert st["engine"]["jobs_done"] >= 1
    finally:
        origin.close()


def test_the_next_response_on_the_connection_stays_in_the_socket(start_splicer):
    """The engine never reads past the last chunk: the server connection is reused for the
    next request, and its response (already sent, sitting in the socket) is not eaten."""
    body = chunked([b"hello", b"world"])

    def script(c):
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data:
            data += c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext")
        time.sleep(0.5)

    origin, port, sp = start(start_splicer, script)
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\n")
        want = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body
        got = b""
        while len(got) < len(want):
            chunk = s.recv(65536)
            assert chunk, got
            got += chunk
        assert got == want  # the chunked response, and not a byte of the next one
        s.sendall(b"GET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
        head, got = read_response(s)
        assert got == b"next"
        assert sp.stats()["backends"]["farm"]["reused"] == 1
    finally:
        origin.close()


def test_chunked_upload_then_pipelined_request(start_splicer):
    """A chunked request body relayed by the engine, with the next request pipelined right
    behind it in the same segment: the origin gets exactly the body, then the next request."""
    body = chunked([os.urandom(300), os.urandom(70_000)])

    def script(c):
        data = b""
        while not data.endswith(b"0\r\n\r\n"):
            data += c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        data = b""
        while b"\r\n\r\n" not in data:
            data += c.recv(65536)
        origin.requests.append(data)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")

    origin, port, _ = start(start_splicer, script)
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body
                  + b"GET /two HTTP/1.1\r\nHost: a\r\n\r\n")
        assert read_response(s)[1] == b"ok"
        assert read_response(s)[1] == b"two"
        assert origin.requests[1].startswith(b"GET /two HTTP/1.1\r\n")
    finally:
        origin.close()


def test_bad_framing_mid_body_ends_the_client_connection_short(start_splicer):
    good = chunked([b"a" * 1000])[:-5]  # without the last-chunk
    bad = good + b"zz\r\nsmuggled\r\n0\r\n\r\n"
    origin, port, sp = start(start_splicer,
                             lambda c: (c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + bad),
                                        time.sleep(1)))
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        got = recv_all(s).split(b"\r\n\r\n", 1)[1]
        # the valid part (with or without the CRLF checked in the same peek as the bad
        # line), then the end: no last-chunk, nothing after the bad line
        assert got in (good, good[:-2])
        assert b"smuggled" not in got
        assert sp.stats()["backends"]["farm"]["eresp"] == 1
    finally:
        origin.close()


def test_a_trickled_size_line_and_a_cut_mid_line(start_splicer):
    def script(c):
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for b in b"5;e=1\r\nhello\r\n":  # one byte at a time: lines arrive in pieces
            c.sendall(bytes([b]))
            time.sleep(0.01)
        c.sendall(b"3;cut-he")           # then the server dies in the middle of a line
        time.sleep(0.05)

    origin, port, _ = start(start_splicer, script)
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        t0 = time.monotonic()
        got = recv_all(s)
        assert time.monotonic() - t0 < 5  # ended when the server closed, not on a timeout
        assert got.split(b"\r\n\r\n", 1)[1] == b"5;e=1\r\nhello\r\n"  # whole lines only
    finally:
        origin.close()
