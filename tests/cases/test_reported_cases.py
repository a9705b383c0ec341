"""Cases from public bug reports of other proxies (/work/shared/cases/*.md), run through the real
splicer with a scripted origin. Case names start with the report's number; the A1, A2...
in comments are the report's assertions. Only what applies to a reverse proxy in front of
one origin is kept (no ACL rules: "/admin" stands for a request the proxy never saw)."""
from __future__ import annotations

import math
import random
import socket
import threading
import time

import pytest

from tests.cases.harness import (
    ECHO,
    HOLD,
    SETTLE,
    SHUT_WR,
    Await,
    Case,
    H,
    OriginLog,
    params,
    requests_are,
    run_case,
)

ADMIN = b"GET /admin HTTP/1.1\r\nHost: example.com\r\n\r\n"  # 42 bytes
assert len(ADMIN) == 42


def rejected(*statuses: int) -> dict:
    """The proxy answers one of `statuses`, closes, and forwards nothing."""
    return {"client_status": [set(statuses)], "client_closed": True, "origin_receives": b""}


# --- 001: empty / malformed Content-Length ----------------------------------------------------

def _cl42_forwarded(log: OriginLog) -> bool:
    """A3: exactly one request, exactly one `Content-Length: 42`, 42 body bytes, no 2nd request."""
    reqs = log.requests
    assert [r.target for r in reqs] == [b"/upload"], f"requests {[r.target for r in reqs]}"
    r = reqs[0]
    assert r.values(b"content-length") == [b"42"], f"Content-Length lines {r.values(b'content-length')}"
    assert r.body == ADMIN and r.complete
    return True


def _c001(cl_lines: bytes) -> bytes:
    return b"POST /upload HTTP/1.1\r\n" + H + cl_lines + b"\r\n" + ADMIN


A3_001 = {"client_status": [200], "client_bodies": [b"ok"], "client_closed": False, "origin_receives": _cl42_forwarded}

CASES_001 = [
    Case("001-empty-cl-then-42", _c001(b"Content-Length: \r\nContent-Length: 42\r\n"),
         **rejected(400), alternatives=[A3_001], ref="RFC 9110 8.6, RFC 9112 6.3(5); A1b"),
] + [
    Case(f"001-invalid-cl-{i}", _c001(v), **rejected(400), ref="RFC 9112 6.3(5); A1, A2")
    for i, v in enumerate([
        b"Content-Length: 42\r\nContent-Length: 0\r\n",
        b"Content-Length: 42, 0\r\n",
        b"Content-Length: +42\r\n",
        b"Content-Length: 0x2a\r\n",
        b"Content-Length: 4 2\r\n",
        b"Content-Length: -1\r\n",
    ])
] + [
    # tolerated forms: 400 (A1) or one clean CL 42 forwarded (A3)
    Case(f"001-tolerated-cl-{name}", _c001(v), **rejected(400), alternatives=[A3_001], ref="RFC 9110 8.6; A3")
    for name, v in [("list-42-42", b"Content-Length: 42, 42\r\n"),
                    ("two-lines-42", b"Content-Length: 42\r\nContent-Length: 42\r\n"),
                    ("trailing-comma", b"Content-Length: 42,\r\n")]
]

# --- 002: Transfer-Encoding not recognised as chunked ------------------------------------------

_SMUG002 = b"0\r\n\r\n" + ADMIN  # 47 bytes


def _c002(te_lines: bytes) -> bytes:
    return b"POST /search HTTP/1.1\r\n" + H + te_lines + b"Content-Length: 47\r\n\r\n" + _SMUG002


def _chunked_one_empty(log: OriginLog) -> bool:
    """A2: accepted as chunked: one request, no Content-Length, decoded body b""."""
    reqs = log.requests
    assert [r.target for r in reqs] == [b"/search"], f"requests {[r.target for r in reqs]}"
    assert not reqs[0].values(b"content-length") and reqs[0].body == b"" and reqs[0].complete
    return True


A2_002 = {"client_status": [200], "client_closed": True, "origin_receives": _chunked_one_empty}


def _unfolded_cl47(log: OriginLog) -> bool:
    """obs-fold unfolded into X-Pad: one CL-framed 47-byte request, no TE, no fold forwarded."""
    reqs = log.requests
    assert [r.target for r in reqs] == [b"/search"]
    r = reqs[0]
    assert not r.values(b"transfer-encoding") and b"\r\n " not in r.head and r.body == _SMUG002
    return True


CASES_002 = [
    Case("002-te-empty-member-chunked", _c002(b"Transfer-Encoding: ,chunked\r\n"),
         **rejected(400, 422, 501), alternatives=[A2_002], ref="RFC 9112 6.3(3), 6.1; RFC 9110 5.6.1"),
    Case("002-te-chunked-then-identity-lines",
         _c002(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n"),
         **rejected(400, 501), ref="RFC 9112 6.3(4)"),
    Case("002-te-chunked-identity", _c002(b"Transfer-Encoding: chunked, identity\r\n"),
         **rejected(400, 501), ref="RFC 9112 6.3(4)"),
    Case("002-te-identity-then-chunked-lines",
         _c002(b"Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n"),
         **rejected(400, 422, 501), alternatives=[A2_002], ref="RFC 9112 6.1"),
    Case("002-te-xchunked", _c002(b"Transfer-Encoding: xchunked\r\n"), **rejected(400, 422, 501)),
    Case("002-te-vt-chunked", _c002(b"Transfer-Encoding: \x0bchunked\r\n"), **rejected(400, 422, 501)),
    Case("002-te-chunked-ff", _c002(b"Transfer-Encoding: chunked\x0c\r\n"), **rejected(400, 422, 501)),
    Case("002-te-space-before-colon", _c002(b"Transfer-Encoding : chunked\r\n"), **rejected(400),
         ref="RFC 9112 5.1 (MUST 400)"),
    Case("002-te-obs-fold", _c002(b"X-Pad: a\r\n Transfer-Encoding: chunked\r\n"), **rejected(400),
         alternatives=[{"client_status": [200], "client_closed": None, "origin_receives": _unfolded_cl47}],
         ref="RFC 9112 5.2"),
    Case("002-te-chunked-param", _c002(b"Transfer-Encoding: chunked;x=1\r\n"), **rejected(400, 422, 501),
         ref="RFC 9112 7.1"),
]

# --- 004: bytes after chunk-data not checked to be CRLF ----------------------------------------

_HEAD004 = b"POST /a HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"


def _cut_chunked(*forbidden: bytes):
    """The only request is /a, its body never completed, its connection closed by the proxy,
    and none of `forbidden` reached the origin."""
    def cut_chunked(log: OriginLog) -> bool:
        assert [r.target for r in log.requests] == [b"/a"], f"requests {[r.target for r in log.requests]}"
        assert not log.requests[0].complete, "the malformed body was forwarded as complete"
        assert all(c.eof for c in log.case_conns), "upstream connection not closed (A3)"
        for f in forbidden:
            assert f not in log.raw, f"origin received {f!r}"
        return True
    return cut_chunked


def _bad_chunked(name: str, body: bytes, *forbidden: bytes, ref: str = "", **kw) -> Case:
    """A malformed request body: 400 (or just a close), the origin's request stays incomplete,
    no smuggled request, the upstream connection is closed."""
    return Case(name, _HEAD004 + body, client_status=[400], client_closed=True,
                origin_receives=_cut_chunked(*forbidden),
                alternatives=[{"client_status": []}], ref=ref, **kw)


CASES_004 = [
    _bad_chunked("004-chunk-data-then-XY", b"5\r\nhelloXY0\r\n\r\n", b"helloXY", ref="RFC 9112 7.1; A1-A3"),
    _bad_chunked("004-chunk-desync", b"5\r\nhelloZZ2\r\n2d\r\n0\r\n\r\nGET /two HTTP/1.1\r\n" + H + b"\r\n\r\n0\r\n\r\n",
                 b"helloZZ", b"GET /two", ref="RFC 9112 7.1; A1-A3"),
    Case("004-positive-control", _HEAD004 + b"5\r\nhello\r\n0\r\n\r\n", client_status=[200], client_closed=False,
         origin_receives=lambda log: [(r.target, r.body) for r in log.requests] == [(b"/a", b"hello")],
         ref="A4"),
]

# --- 006: huge chunk-size ---------------------------------------------------------------------

_C006 = {
    "negative": b"fffffffffffffff0\r\n" + b"A" * 4096,
    "wrap-to-zero": b"10000000000000000\r\n\r\n" + ADMIN,
    "int64-min": b"8000000000000000\r\n" + b"A" * 16,
}


def _no_size_line(line: bytes):
    def no_size_line(log: OriginLog) -> bool:
        assert line not in log.raw, "the oversize chunk-size line was forwarded"
        assert not any(r.target == b"/admin" for r in log.requests)
        assert all(not r.complete for r in log.requests)
        return True
    return no_size_line


CASES_006 = [
    Case(f"006-chunk-size-{name}", _HEAD004 + body, client_status=[{400, 413}], client_closed=True,
         origin_receives=_no_size_line(body.split(b"\r\n")[0]), alternatives=[{"client_status": []}],
         ref="RFC 9112 7.1; A1-A3")
    for name, body in _C006.items()
] + [
    Case("006-chunk-size-leading-zeros", _HEAD004 + b"0" * 100000 + b"5\r\nhello\r\n0\r\n\r\n",
         client_status=[{400, 413, 431}], client_closed=True, within=6.0,
         origin_receives=lambda log: all(not r.complete for r in log.requests),
         alternatives=[{"client_status": [200], "client_closed": None, "within": None,
                            "origin_receives": lambda log: [r.body for r in log.requests] == [b"hello"]}],
         ref="A4: accepted or refused, never spinning"),
] + [
    # the same bodies where the proxy answers itself (no server: 503) and discards the body
    Case(f"006-chunk-size-{name}-self-answered", _HEAD004 + body, config="noserver",
         client_status=[{503, 400, 413}], client_closed=True, ref="A1, A3")
    for name, body in list(_C006.items()) + [("leading-zeros", b"0" * 100000 + b"5\r\nhello\r\n0\r\n\r\n")]
]

# --- 008: over-long header names, values, counts ----------------------------------------------


def _one_request_with(line: bytes):
    """Forwarded: one request, `line` (name: value) arrives byte-identical (name case aside)."""
    name, _, value = line.partition(b": ")

    def one_request_with(log: OriginLog) -> bool:
        assert len(log.requests) == 1, f"{len(log.requests)} requests"
        r = log.requests[0]
        got = [v for n, v in r.headers if n.lower() == name.lower()]
        assert got == [value], f"{name[:20]!r}... arrived as {[g[:40] for g in got]}"
        return True
    return one_request_with


def _sweep(name: str, line: bytes, ref: str = "RFC 9110 5.4; A3", **kw) -> Case:
    return Case(name, b"GET / HTTP/1.1\r\n" + H + line + b"\r\n\r\n",
                **rejected(431, 400),
                alternatives=[{"client_status": [200], "client_closed": False, "origin_receives": _one_request_with(line)}],
                ref=ref, **kw)


def _c008_forwarded(log: OriginLog) -> bool:
    reqs = log.requests
    assert [r.target for r in reqs] == [b"/upload"]
    r = reqs[0]
    long = b"Content-Length0" + b"a" * 255
    assert [n.lower() for n, _ in r.headers if n.lower().startswith(b"content-length")].count(b"content-length") == 1
    assert r.values(b"content-length") == [b"42"] and r.values(long) == [b""]
    assert r.body == ADMIN and r.complete
    return True


CASES_008 = [
    Case("008-long-name-forging-cl",
         b"POST /upload HTTP/1.1\r\n" + H + b"Content-Length0" + b"a" * 255 + b":\r\nContent-Length: 42\r\n\r\n" + ADMIN,
         **rejected(400, 431),
         alternatives=[{"client_status": [200], "client_closed": False, "origin_receives": _c008_forwarded}],
         ref="RFC 9110 5.1, 8.6; A1, A2"),
] + [
    _sweep(f"008-name-{n}", b"X" * n + b": v") for n in (255, 256, 257, 511, 512, 65535, 65536)
] + [
    _sweep(f"008-value-{label}", b"X-Big: " + b"v" * size) for label, size in (("8k", 8192), ("64k", 65536), ("1m", 1 << 20))
] + [
    Case(f"008-count-{n}", b"GET / HTTP/1.1\r\n" + H + b"".join(b"X-%d: v\r\n" % i for i in range(n)) + b"\r\n",
         **rejected(431, 400),
         alternatives=[{"client_status": [200], "client_closed": False,
                            "origin_receives": lambda log, n=n: len(log.requests) == 1
                            and sum(1 for k, _ in log.requests[0].headers if k[2:].isdigit()) == n}],
         ref="RFC 9110 5.4; A3")
    for n in (100, 1000, 10000)
] + [
    Case("008-target-100000", b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n" + H + b"\r\n",
         **rejected(414), ref="RFC 9112 3 (MUST 414)"),
]

# --- 010: bare CR / NUL in field values ---------------------------------------------------------

_GET_R = b"GET /r HTTP/1.1\r\n" + H + b"\r\n"


def _clean_response(data: bytes) -> bool:
    """A2: a 502, or a response without CR/LF/NUL inside values and without Set-Cookie."""
    head = data.split(b"\r\n\r\n", 1)[0]
    assert b"set-cookie" not in data.lower(), "Set-Cookie reached the client"
    assert b"\x00" not in head and b"\r" not in head.replace(b"\r\n", b""), "CR/NUL inside the head"
    assert data.count(b"HTTP/1.1 ") == 1, "more than one response"
    return True


CASES_010 = [
    Case("010-request-bare-cr", b"POST /api HTTP/1.1\r\n" + H + b"X-Note: a\rTransfer-Encoding: chunked\r\n\r\n"
         b"5\r\nhello\r\n0\r\n\r\n", **rejected(400), ref="RFC 9110 5.5, RFC 9112 2.2; A1"),
    Case("010-request-nul", b"GET / HTTP/1.1\r\n" + H + b"X-Note: a\x00Transfer-Encoding: chunked\r\n\r\n",
         **rejected(400), ref="RFC 9110 5.5; A1"),
    Case("010-request-cr-in-target", b"GET /a\rb HTTP/1.1\r\n" + H + b"\r\n", **rejected(400), ref="A1"),
] + [
    Case(f"010-response-{name}", _GET_R, origin=[raw], client_status=[502], client_closed=True,
         client_bytes=_clean_response,
         alternatives=[{"client_status": [{200, 302}], "client_closed": None}], ref="RFC 9110 5.5, 15.6.3; A2, A3")
    for name, raw in [
        ("bare-cr", b"HTTP/1.1 302 Found\r\nLocation: /next\rSet-Cookie: session=attacker\r\nContent-Length: 0\r\n\r\n"),
        ("nul", b"HTTP/1.1 200 OK\r\nX-Info: a\x00b\r\nContent-Length: 2\r\n\r\nok"),
        ("cr-split", (b"HTTP/1.1 200 OK\r\nX-Info: a\r\rHTTP/1.1 200 OK\rContent-Length: 4\r\r\n"
                     b"Content-Length: 2\r\n\r\nok")),
    ]
]

# --- 012: Upgrade request tunnelled before the backend agreed ----------------------------------

_NO_UPGRADE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def _chat_then_admin(body: bytes = b""):
    """A2/A3: the connection carrying /chat got nothing beyond its request before answering;
    /admin, if it came at all, came as a request of its own after that."""
    def chat_then_admin(log: OriginLog) -> bool:
        reqs = log.requests
        assert reqs and reqs[0].target == b"/chat", f"requests {[r.target for r in reqs]}"
        assert reqs[0].early == b"", f"tunnel bytes before the response: {reqs[0].early[:80]!r}"
        assert reqs[0].body == body
        assert [r.target for r in reqs[1:]] in ([], [b"/admin"])
        return True
    return chat_then_admin


def _c012(upgrade_lines: bytes, method: bytes = b"GET", body: bytes = b"") -> bytes:
    cl = b"Content-Length: %d\r\n" % len(body) if body else b""
    return method + b" /chat HTTP/1.1\r\n" + H + b"Connection: Upgrade\r\n" + upgrade_lines + cl + b"\r\n" + body + ADMIN


_WS = (b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
       b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n")

CASES_012 = [
    Case(f"012-upgrade-refused-{name}", client, origin=[[SETTLE, _NO_UPGRADE]],
         client_status=[200, 200], client_bodies=[b"ok", b"ok"], client_closed=False,
         origin_receives=_chat_then_admin(body),
         alternatives=[{"client_status": [200], "client_bodies": [b"ok"], "client_closed": True}],
         ref="RFC 9110 7.8, RFC 9112 9.3; A1-A3")
    for name, client, body in [
        ("foo", _c012(b"Upgrade: foo\r\n"), b""),
        ("websocket", _c012(_WS), b""),
        ("post-body", _c012(b"Upgrade: foo\r\n", b"POST", b"0123456789"), b"0123456789"),
    ]
] + [
    Case("012-upgrade-accepted-tunnel",
         [b"GET /chat HTTP/1.1\r\n" + H + b"Connection: Upgrade\r\nUpgrade: foo\r\n\r\n", Await(b"\r\n\r\n"),
          b"ping", Await(b"ping"), SHUT_WR],
         origin=[[b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n", ECHO]],
         client_status=[101], client_closed=True,
         client_bytes=lambda d: d.endswith(b"\r\n\r\nping"),
         origin_receives=lambda log: log.raw.endswith(b"\r\n\r\nping") and all(c.eof for c in log.case_conns),
         ref="RFC 9110 15.2.2; A4"),
    Case("012-unsolicited-101", b"GET /chat HTTP/1.1\r\n" + H + b"\r\n",
         origin=[[b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n", HOLD]],
         client_status=[502], client_closed=True, ref="RFC 9110 15.2.2; A5"),
]

# --- 015: several 1xx before the final response ----------------------------------------------

_1XX = [
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.1 103 Early Hints\r\nLink: </app.css>; rel=preload; as=style\r\n\r\n",
    b"HTTP/1.1 103 Early Hints\r\nLink: </app.js>; rel=preload; as=script\r\n\r\n",
]
_PAGE = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npage"
_NEXT = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"
_C015 = b"GET /page HTTP/1.1\r\n" + H + b"\r\nGET /next HTTP/1.1\r\n" + H + b"\r\n"


def _hints_relayed(res) -> bool:
    links = [r.values(b"link") for r in res.responses if r.status == 103]
    assert links == [[b"</app.css>; rel=preload; as=style"], [b"</app.js>; rel=preload; as=script"]], links
    return True


CASES_015 = [
    Case("015-1xx-one-write", _C015, origin=[b"".join(_1XX) + _PAGE, _NEXT],
         client_status=[100, 100, 103, 103, 200, 200], client_bodies=[b"page", b"next"], client_closed=False,
         client_check=_hints_relayed,
         alternatives=[{"client_status": [100, 103, 103, 200, 200]}],  # coalesced 100s: tolerated
         ref="RFC 9110 15.2; A1-A3"),
    Case("015-1xx-separate-segments", _C015,
         origin=[[x for r in _1XX for x in (r, 0.05)] + [_PAGE], _NEXT],
         client_status=[100, 100, 103, 103, 200, 200], client_bodies=[b"page", b"next"], client_closed=False,
         client_check=_hints_relayed,
         alternatives=[{"client_status": [100, 103, 103, 200, 200]}], ref="A1-A3 (variant a)"),
    Case("015-1xx-http10-client", b"GET /page HTTP/1.0\r\n" + H + b"\r\n", origin=[b"".join(_1XX) + _PAGE],
         client_status=[200], client_bodies=[b"page"], client_closed=True, ref="RFC 9110 15.2; A4"),
    Case("015-unsolicited-101", _C015,
         origin=[[b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: Upgrade\r\n\r\n", HOLD]],
         client_status=[502], client_closed=True,
         alternatives=[{"client_status": []}], ref="RFC 9110 15.2.2; A5"),
]

# --- 017: HEAD / 204 / 304 response bytes -------------------------------------------------------

_C017 = (b"HEAD /r1 HTTP/1.1\r\n" + H + b"\r\nHEAD /r2 HTTP/1.1\r\n" + H + b"\r\n"
         b"GET /r3 HTTP/1.1\r\n" + H + b"\r\n")
_R1 = b"HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n"
_R2 = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
_R3 = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlast"


def _r1_metadata(res) -> bool:
    assert res.responses[0].values(b"content-length") == [b"65536"], "HEAD Content-Length rewritten (A4)"
    return True


def _r1_conn_not_reused(log: OriginLog) -> bool:
    """A2: the upstream connection that carried /r1 is not used again."""
    first = [r for r in log.requests if r.target == b"/r1"]
    assert first, "no /r1"
    later = [r.target for r in log.requests if r.conn == first[0].conn and r.target != b"/r1"]
    assert not later, f"{later} sent on the connection with stray bytes"
    return True


CASES_017 = [
    Case(f"017-head-head-get-{cfg}", _C017, config=cfg, origin=[_R1, _R2, _R3], methods=[b"HEAD", b"HEAD", b"GET"],
         client_status=[200, 200, 200], client_bodies=[b"", b"", b"last"], client_closed=False,
         client_check=_r1_metadata, origin_receives=requests_are(b"/r1", b"/r2", b"/r3"),
         ref="RFC 9112 6.3(1); A1, A4")
    for cfg in ("default", "splice")
] + [
    Case(f"017-head-with-stray-body-{cfg}", _C017, config=cfg, origin=[_R1 + b"x" * 65536, _R2, _R3],
         methods=[b"HEAD", b"HEAD", b"GET"],
         client_status=[200, 200, 200], client_bodies=[b"", b"", b"last"], client_closed=False,
         client_bytes=lambda d: b"xxxx" not in d, origin_receives=_r1_conn_not_reused,
         alternatives=[{"client_status": [200, 502], "client_bodies": None, "client_closed": True},
                       {"client_status": [200, 200, 502], "client_bodies": None, "client_closed": True}],
         ref="A2")
    for cfg in ("default", "splice")
] + [
    Case(f"017-{name}", b"GET /r4 HTTP/1.1\r\n" + H + b"\r\nGET /r5 HTTP/1.1\r\n" + H + b"\r\n",
         config=cfg, origin=[raw, _NEXT], client_status=[status, 200], client_bodies=[b"", b"next"],
         client_closed=False, client_check=check,
         client_bytes=lambda d: b"hello" not in d,
         alternatives=[{"client_status": [status, 502], "client_bodies": None, "client_closed": True}],
         ref="RFC 9110 15.3.5, 15.4.5; A3, A4")
    for cfg in ("default", "splice")
    for name, raw, status, check in [
        (f"204-with-body-{cfg}", b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", 204, None),
        (f"304-content-length-{cfg}", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 1000\r\nETag: \"v1\"\r\n\r\n", 304,
         lambda res: res.responses[0].values(b"content-length") == [b"1000"]
         and res.responses[0].values(b"etag") == [b'"v1"']),
        (f"304-chunked-{cfg}", b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", 304, None),
    ]
]

# --- 021: client half-close after the request ---------------------------------------------------

_HELLO = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

CASES_021 = [
    # the report's origin answers after 500 ms; 300 ms here
    Case(f"021-half-close-{name}", [client, SHUT_WR], origin=[[0.3, _HELLO]],
         client_status=[200], client_bodies=[b"hello"], client_closed=True,
         origin_receives=lambda log, body=body: [(r.body, r.complete) for r in log.requests] == [(body, True)],
         ref="RFC 9112 9.6; A1-A3")
    for name, client, body in [
        ("get-close", b"GET /slow HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", b""),
        ("post", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nhello", b"hello"),
        ("keepalive", b"GET /slow HTTP/1.1\r\n" + H + b"\r\n", b""),
    ]
] + [
    Case("021-half-close-partial-head", [b"GET /slow HTTP/1.1\r\nHo", SHUT_WR], client_status=[],
         client_closed=True, origin_receives=b"", alternatives=[{"client_status": [400]}], ref="A4"),
]

# --- 023: slow clients and slow servers ("short" config: http-request 500ms, client 1s, server 1s)

_GRACE = 1.5

CASES_023 = [
    Case("023-body-never-sent", [b"GET / HTTP/1.1\r\n" + H + b"Content-Length: 10\r\n\r\n", 4.0], config="short",
         client_status=[408], client_closed=True, within=1.0 + _GRACE, timeout=5,
         origin_receives=lambda log: all(c.eof for c in log.case_conns) and all(not r.complete for r in log.requests),
         alternatives=[{"client_status": []}], ref="RFC 9112 9.5, RFC 9110 15.5.9; A1"),
    Case("023-slowloris-head", [b"GET / HTTP/1.1\r\n" + H + b"X-a: "] + [0.1, b"b"] * 30, config="short",
         client_status=[408], client_closed=True, within=0.5 + _GRACE, timeout=5, origin_receives=b"",
         alternatives=[{"client_status": []}], ref="A2"),
    Case("023-post-trickle", [b"POST /up HTTP/1.1\r\n" + H + b"Content-Length: 100000\r\n\r\n"] + [0.2, b"x"] * 17,
         config="short", client_status=[408], client_closed=True, within=0.5 + 1.0 + _GRACE, timeout=3.6,
         alternatives=[{"client_status": []}], ref="A2"),
    Case("023-silent-server", b"GET / HTTP/1.1\r\n" + H + b"\r\n", config="short", origin=[[HOLD]],
         client_status=[504], client_closed=True, within=1.0 + _GRACE, ref="RFC 9110 15.6.5; A4"),
    Case("023-server-stalls-mid-body", b"GET / HTTP/1.1\r\n" + H + b"\r\n", config="short",
         origin=[[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345", HOLD]],
         client_status=[200], client_closed=True, within=1.0 + _GRACE, allow_incomplete=True,
         client_check=lambda res: not res.responses[0].complete and res.responses[0].body == b"12345",
         ref="A4 (case 020: cut short, never complete)"),
]

CASES = CASES_001 + CASES_002 + CASES_004 + CASES_006 + CASES_008 + CASES_010 + CASES_012 + CASES_015 \
    + CASES_017 + CASES_021 + CASES_023


@pytest.mark.parametrize("case", params(CASES))
def test_reported_case(env, case):
    run_case(env, case)


# --- 018: close forwarded while spliced data still sits in the pipe -----------------------------
# Default of the report: 30 FIN runs and 10 RST runs per framing with 15 parallel clients.
# Shortened here: 10 FIN runs and 4 RST runs per framing, all in parallel, and the client sleeps
# (0-50 ms) after ~3% of its reads instead of a quarter, so the suite stays fast.

BIG = bytes(range(256)) * 8192  # 2 MiB
_HEADS_018 = {
    "cl": b"HTTP/1.1 200 OK\r\nContent-Length: 2097152\r\nConnection: close\r\n\r\n",
    "close": b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n200000\r\n",
}
FIN_RUNS, RST_RUNS = 10, 4
CLIENTS_DEADLINE_018 = 300  # seconds for all clients together; see the test


def _writer_018(framing: str, rst: bool):
    payload = _HEADS_018[framing] + BIG + (b"\r\n0\r\n\r\n" if framing == "chunked" else b"")
    head_len = len(_HEADS_018[framing])

    def write(c: socket.socket, req) -> bool:
        rng = random.Random()
        stop = head_len + rng.randrange(len(BIG) // 2, len(BIG)) if rst else len(payload)
        pos = 0
        while pos < stop:
            n = min(max(1, int(math.exp(rng.uniform(0, math.log(256 * 1024))))), stop - pos)
            c.sendall(payload[pos:pos + n])
            pos += n
        if rst:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        else:
            c.shutdown(socket.SHUT_WR)
        return False  # then the origin closes the connection
    return write


def _client_018(port: int, target: bytes, out: list, i: int) -> None:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(20)
    data = bytearray()
    how = "eof"
    rng = random.Random()
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET " + target + b" HTTP/1.1\r\n" + H + b"\r\n")
        while True:
            chunk = s.recv(16384)
            if not chunk:
                break
            data += chunk
            if rng.random() < 0.03:
                time.sleep(rng.uniform(0, 0.05))
    except ConnectionResetError:
        how = "reset"
    except TimeoutError:
        how = "timeout"
    finally:
        s.close()
    out[i] = (bytes(data), how)


def _dechunk(body: bytes) -> tuple[bytes, bool]:
    out, pos = bytearray(), 0
    while True:
        nl = body.find(b"\r\n", pos)
        if nl < 0:
            return bytes(out), False
        size = int(body[pos:nl].split(b";")[0], 16)
        pos = nl + 2
        if size == 0:
            return bytes(out), body[pos:pos + 2] == b"\r\n"
        out += body[pos:pos + size]
        if len(body) < pos + size + 2:
            return bytes(out), False
        pos += size + 2


def test_018_splice_close_no_truncation(env):
    sp = env.splicer("splice")
    runs = [(f, False) for f in _HEADS_018 for _ in range(FIN_RUNS)] + \
           [(f, True) for f in _HEADS_018 for _ in range(RST_RUNS)]
    env.origin.begin(lambda req: [_writer_018(*{
        b"/big/" + f.encode() + (b"-rst" if r else b""): (f, r) for f in _HEADS_018 for r in (False, True)
    }[req.target])])
    out: list = [None] * len(runs)
    threads = [threading.Thread(target=_client_018,
                                args=(sp.port, b"/big/" + f.encode() + (b"-rst" if r else b""), out, i))
               for i, (f, r) in enumerate(runs)]
    for t in threads:
        t.start()
    # Wait for every client to end. A stalled stream is caught by each client itself: every
    # socket operation has a 20 s timeout (reported "client timed out"). The batch's wall time
    # is not what is tested: it is 5 s of keep-alive wait (the cl and chunked clients read
    # until the proxy closes the idle client connection) plus the transfer, which a loaded
    # machine stretches; the former join(30) per thread could fire on a client still
    # receiving, so the batch gets one generous deadline instead.
    deadline = time.monotonic() + CLIENTS_DEADLINE_018
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    problems = []
    for (framing, rst), got in zip(runs, out):
        if got is None:
            problems.append(f"{framing} rst={rst}: client did not finish")
            continue
        data, how = got
        head, sep, body = data.partition(b"\r\n\r\n")
        if not sep or not head.startswith(b"HTTP/1.1 200 "):
            problems.append(f"{framing} rst={rst}: no response head ({data[:80]!r}, {how})")
            continue
        lower = head.lower()
        chunked = b"transfer-encoding: chunked" in lower
        if chunked:
            payload, complete = _dechunk(body)
        else:
            payload = body
            complete = b"content-length: 2097152" in lower and len(body) == len(BIG)
        if how == "timeout":
            problems.append(f"{framing} rst={rst}: client timed out")
        if not BIG.startswith(payload):
            problems.append(f"{framing} rst={rst}: altered bytes")
        elif not rst and payload != BIG:
            problems.append(f"{framing}: truncated to {len(payload)} bytes ({how})")  # A1, A3
        elif rst and complete:
            problems.append(f"{framing} rst: the origin's truncated response looks complete")  # A4
    assert not problems, f"{len(problems)} of {len(runs)} runs: " + "; ".join(problems[:10])
    assert sp.proc.poll() is None


# --- 023 A3: load form, scaled down --------------------------------------------------------------
# The report's default is 200 slowloris connections for 6 s; here 50 for 2.5 s ("short" config:
# timeout http-request 500ms). Attackers reconnect when closed; a well-behaved GET every 0.25 s
# must succeed in under 1 s (to its last byte); the worker's descriptors stay bounded.

SLOWLORIS_N, LOAD_SECONDS = 50, 2.5


def _slowloris(port: int, stop: float) -> None:
    while time.monotonic() < stop:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET / HTTP/1.1\r\n" + H + b"X-a: ")
                while time.monotonic() < stop:
                    time.sleep(0.2)
                    s.sendall(b"b")
        except OSError:
            time.sleep(0.05)  # closed by the proxy: reconnect


def _fds(pid: int) -> int:
    import os
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_023_slowloris_load_good_client_served(env):
    sp = env.splicer("short")
    env.origin.begin(None)
    worker = sp.worker_pids()[0]
    base = _fds(worker)
    stop = time.monotonic() + LOAD_SECONDS
    attackers = [threading.Thread(target=_slowloris, args=(sp.port, stop), daemon=True) for _ in range(SLOWLORIS_N)]
    for t in attackers:
        t.start()
    latencies, failures, peak = [], [], base
    while time.monotonic() < stop:
        t0 = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", sp.port), timeout=2) as s:
                s.sendall(b"GET / HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
                got = b""
                while chunk := s.recv(65536):
                    got += chunk
            if got != b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok":
                failures.append(got[:100])
        except OSError as exc:
            failures.append(repr(exc))
        latencies.append(time.monotonic() - t0)
        peak = max(peak, _fds(worker))
        time.sleep(0.25)
    for t in attackers:
        t.join(3)
    assert not failures, failures[:3]
    assert max(latencies) < 1.0, f"slowest good request {max(latencies):.2f}s"
    assert peak <= base + 2 * SLOWLORIS_N + 64, f"fds {base} -> {peak}"
    deadline = time.monotonic() + 3
    while _fds(worker) > base + 16 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _fds(worker) <= base + 16, f"fds did not come back: {base} -> {_fds(worker)}"
