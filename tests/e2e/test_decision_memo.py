"""Remembered routing decisions on the real proxy (runtime/decisions.py): the same request
head, sent again and again on kept-alive connections that differ only in an address the
rules read (client address and port, the address and port connected to), is routed as the
rules say for each connection; a remembered local answer (deny, redirect) is still built
for its request, and http-response rules whose conditions read the request still see it.

Origins are the `farm` (web1, web2: every response says X-Served-By); clients are raw
sockets bound to chosen local addresses (every 127.0.0.0/8 address is local).
"""
from __future__ import annotations

import socket

from tests.e2e.helpers import RULES_DEFAULTS, free_port, head_values, read_response

HEAD = b"GET /files/1k HTTP/1.1\r\nHost: www.example\r\n\r\n"


def connect(dst: tuple[str, int], src: tuple[str, int] = ("127.0.0.1", 0)) -> socket.socket:
    s = socket.socket()
    s.settimeout(10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(src)
    s.connect(dst)
    return s


def outcome(head: bytes) -> bytes:
    status = head.split(b" ", 2)[1]
    return status if status != b"200" else head_values(head, b"x-served-by")[0]


def test_one_head_on_connections_that_differ_in_an_address_read(start_splicer, farm):
    # one frontend per address part, so that each key holds that part alone
    a, b, c1, c2, d, q = (free_port() for _ in range(6))
    backends = f"""
backend one
    server web1 127.0.0.1:{farm[0].port}
backend two
    server web2 127.0.0.1:{farm[1].port}
"""
    start_splicer(RULES_DEFAULTS + f"""
frontend by_src
    bind 127.0.0.1:{a}
    use_backend two if {{ src 127.0.0.2 }}
    default_backend one
frontend by_dst
    bind 127.0.0.1:{b}
    bind 127.0.0.4:{b}
    use_backend two if {{ dst 127.0.0.4 }}
    default_backend one
frontend by_dst_port
    bind 127.0.0.1:{c1}
    bind 127.0.0.1:{c2}
    use_backend two if {{ dst_port {c2} }}
    default_backend one
frontend by_src_port
    bind 127.0.0.1:{d}
    http-request deny deny_status 429 if {{ src_port {q} }}
    default_backend one
""" + backends, [a, b, c1, c2, d])
    pairs = [  # (a client, one that differs from it in the part read): what the rules say for each
        ((connect(("127.0.0.1", a)), b"web1"), (connect(("127.0.0.1", a), ("127.0.0.2", 0)), b"web2")),
        ((connect(("127.0.0.1", b)), b"web1"), (connect(("127.0.0.4", b)), b"web2")),
        ((connect(("127.0.0.1", c1)), b"web1"), (connect(("127.0.0.1", c2)), b"web2")),
        ((connect(("127.0.0.1", d)), b"web1"), (connect(("127.0.0.1", d), ("127.0.0.1", q)), b"429")),
    ]
    try:
        got, want = [], []
        for rnd in range(4):  # the same head on each connection in turn, the order flipped each round
            for pair in pairs:
                for s, expect in (pair if rnd % 2 == 0 else pair[::-1]):
                    s.sendall(HEAD)
                    head, body = read_response(s)
                    got.append(outcome(head))
                    want.append(expect)
                    if expect != b"429":
                        assert len(body) == 1024
        assert got == want
    finally:
        for pair in pairs:
            for s, _ in pair:
                s.close()


def test_remembered_local_answers_and_response_rules_read_their_request(start_splicer, farm):
    port = free_port()
    start_splicer(RULES_DEFAULTS + f"""
frontend www
    bind 127.0.0.1:{port}
    http-request deny deny_status 429 if {{ path_beg /deny }}
    http-request redirect prefix /moved if {{ path_beg /old }}
    use_backend two if {{ path_beg /files/1k }}
    default_backend one
backend one
    server web1 127.0.0.1:{farm[0].port}
backend two
    http-response set-header X-Path %[path] if {{ path_beg /files }}
    server web2 127.0.0.1:{farm[1].port}
""", [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        got = []
        for _ in range(3):
            for target in (b"/deny/x", b"/old/y?z=1", b"/files/1k", b"/files/0"):
                s.sendall(b"GET %s HTTP/1.1\r\nHost: www.example\r\n\r\n" % target)
                head, _ = read_response(s)
                got.append((outcome(head), head_values(head, b"location"), head_values(head, b"x-path")))
        assert got == 3 * [(b"429", [], []), (b"302", [b"/moved/old/y?z=1"], []),
                           (b"web2", [], [b"/files/1k"]), (b"web1", [], [])]
    finally:
        s.close()
