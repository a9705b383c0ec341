"""RFC 9110 / 9112 rules on responses and connection handling, as raw-byte cases through the real
splicer: Expect and 1xx, bodiless responses, close-delimited and invalid responses, Upgrade,
pipelining, hop-by-hop fields, splicer's own error responses, and no replay of a POST."""
from __future__ import annotations

import pytest

from tests.cases.harness import (
    BODY,
    CLOSE,
    ECHO,
    HOLD,
    NOBODY,
    RESET,
    SHUT_WR,
    XFF,
    Await,
    Case,
    H,
    OriginLog,
    params,
    response,
    run_case,
)

GET = b"GET / HTTP/1.1\r\n" + H + b"\r\n"


def _two_gets(a: bytes = b"/a", b: bytes = b"/b") -> bytes:
    return b"GET " + a + b" HTTP/1.1\r\n" + H + b"\r\nGET " + b + b" HTTP/1.1\r\n" + H + b"\r\n"


def echo_target(req) -> bytes:
    """Origin entry: answer with the request target (and body) as the response body."""
    return [BODY, lambda c, r: c.sendall(response(r.target + (b":" + r.body if r.body else b"")))]


# --- Expect: 100-continue and 1xx (RFC 9110 sections 10.1.1, 15.2) ----------------------------

_EXPECT_HEAD = b"POST /e HTTP/1.1\r\n" + H + b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"


def _expect_forwarded(log: OriginLog) -> bool:
    reqs = log.requests
    assert [(r.target, r.body, r.complete) for r in reqs] == [(b"/e", b"hello", True)]
    assert reqs[0].values(b"expect") == [b"100-continue"], "Expect not forwarded"
    return True


EXPECT = [
    Case("expect-100-relayed", [_EXPECT_HEAD, Await(b"100 Continue"), b"hello"],
         origin=[[b"HTTP/1.1 100 Continue\r\n\r\n", BODY, response(b"done")]],
         client_status=[100, 200], client_bodies=[b"done"], client_closed=False,
         origin_receives=_expect_forwarded, ref="RFC 9110 10.1.1, 15.2"),
    Case("expect-origin-never-sends-100", [_EXPECT_HEAD, 0.3, b"hello"], origin=[response(b"done")],
         client_status=[200], client_bodies=[b"done"], client_closed=False, origin_receives=_expect_forwarded,
         ref="RFC 9110 10.1.1 (client sends the body after a pause; no deadlock)"),
    Case("expect-100-and-103", [_EXPECT_HEAD, Await(b"100 Continue"), b"hello"],
         origin=[[b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n",
                  BODY, response(b"done")]],
         client_status=[100, 103, 200], client_bodies=[b"done"], client_closed=False,
         client_check=lambda res: res.responses[1].values(b"link") == [b"</s.css>; rel=preload"],
         origin_receives=_expect_forwarded, ref="RFC 9110 15.2 (a proxy MUST forward 1xx)"),
    Case("expect-100-http10-client", b"POST /e HTTP/1.0\r\n" + H + b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
         origin=[[b"HTTP/1.1 100 Continue\r\n\r\n", BODY, response(b"done")]],
         client_status=[200], client_bodies=[b"done"], client_closed=True,
         ref="RFC 9110 15.2 (no 1xx to an HTTP/1.0 client)"),
    Case("interim-102-then-final", GET, origin=[b"HTTP/1.1 102 Processing\r\n\r\n" + response(b"done")],
         client_status=[102, 200], client_bodies=[b"done"], client_closed=False, ref="RFC 9110 15.2"),
]

# --- bodiless responses (RFC 9112 section 6.3 rule 1) ------------------------------------------

_HEAD_REQ = b"HEAD /h HTTP/1.1\r\n" + H + b"\r\n"


def _no_stray(stray: bytes):
    def no_stray(data: bytes) -> bool:
        assert stray not in data, f"{stray!r} reached the client"
        return True
    return no_stray


def _bodiless(name: str, client: bytes, raw: bytes, status: int, stray: bytes, methods=None, **kw) -> Case:
    """`raw` must end at its head; stray bytes never reach the client; then the connection
    either serves the next request (probe) or is closed (or the next request gets 502)."""
    return Case(name, client, origin=[raw], methods=methods, client_status=[status], client_closed=False,
                client_bytes=_no_stray(stray),
                alternatives=[{"client_closed": True}], ref="RFC 9112 6.3(1), RFC 9110 9.3.2, 15.3.5, 15.4.5",
                **kw)


BODILESS = [
    _bodiless("head-cl-no-body", _HEAD_REQ, b"HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n", 200, b"\r\n\r\nHTTP",
              methods=[b"HEAD"]),
    _bodiless("head-cl-with-body", _HEAD_REQ, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, b"hello",
              methods=[b"HEAD"]),
    _bodiless("head-chunked-with-body", _HEAD_REQ,
              b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 200, b"hello",
              methods=[b"HEAD"]),
    _bodiless("head-big-body-splice", _HEAD_REQ, b"HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n" + b"y" * 200000,
              200, b"yyyy", methods=[b"HEAD"], config="splice"),
    _bodiless("204-cl-with-body", GET, b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", 204, b"hello"),
    _bodiless("204-chunked-with-body", GET,
              b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 204, b"hello"),
    _bodiless("204-big-body-splice", GET, b"HTTP/1.1 204 No Content\r\nContent-Length: 200000\r\n\r\n" + b"y" * 200000,
              204, b"yyyy", config="splice"),
    _bodiless("304-cl-with-body", GET, b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nhello", 304, b"hello"),
    _bodiless("304-chunked-with-body", GET,
              b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 304, b"hello"),
] + [
    # the stray bytes arrive 150 ms late, after splicer may already have pooled the connection and
    # sent the next request on it: the client must still never see them
    Case(f"{name}-late-stray-bytes", [client, Await(b"\r\n\r\n"), 0.05, b"GET /next HTTP/1.1\r\n" + H + b"\r\n"],
         origin=[[head, 0.15, b"hello"], response(b"next")], methods=methods,
         client_status=[status, 200], client_bodies=[b"", b"next"], client_closed=False,
         client_bytes=_no_stray(b"hello"),
         alternatives=[{"client_status": [status, 502], "client_bodies": None, "client_closed": True}],
         ref="RFC 9112 6.3(1)")
    for name, client, head, status, methods in [
        ("head", _HEAD_REQ, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 200, [b"HEAD", b"GET"]),
        ("204", GET, b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", 204, None),
        ("304", GET, b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", 304, None),
    ]
]

# --- response framing -------------------------------------------------------------------------


def _close_header(res) -> bool:
    assert any(v.lower() == b"close" for v in res.finals[0].values(b"connection")), "no Connection: close"
    return True


RESPONSES = [
    Case("close-delimited", _two_gets(b"/c", b"/never"), origin=[[b"HTTP/1.1 200 OK\r\n\r\nbody-until-close", CLOSE]],
         client_status=[200], client_bodies=[b"body-until-close"], client_closed=True, client_check=_close_header,
         origin_receives=lambda log: [r.target for r in log.requests] == [b"/c"], ref="RFC 9112 6.3(8), 9.6"),
    Case("close-delimited-http10-origin", GET, origin=[[b"HTTP/1.0 200 OK\r\n\r\nold-style", CLOSE]],
         client_status=[200], client_bodies=[b"old-style"], client_closed=True, client_check=_close_header,
         ref="RFC 9112 6.3(8)"),
    Case("close-delimited-big-splice", GET, config="splice",
         origin=[[b"HTTP/1.1 200 OK\r\n\r\n" + bytes(range(256)) * 4096, CLOSE]],
         client_status=[200], client_bodies=[bytes(range(256)) * 4096], client_closed=True, ref="RFC 9112 6.3(8)"),
    Case("response-te-and-cl", GET,
         origin=[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 100\r\n\r\n5\r\nhello\r\n0\r\n\r\n"],
         client_status=[200], client_bodies=[b"hello"], client_closed=None,
         client_check=lambda res: not res.finals[0].values(b"content-length"),
         origin_receives=lambda log: all(c.eof for c in log.case_conns),  # upstream not reused
         alternatives=[{"client_status": [502], "client_bodies": None, "client_check": None, "client_closed": True}],
         ref="RFC 9112 6.3(3): TE wins, CL removed before forwarding, upstream connection closed"),
    Case("response-chunked-relayed", GET,
         origin=[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"],
         client_status=[200], client_bodies=[b"hello world"], client_closed=False, ref="RFC 9112 7.1"),
    Case("response-chunked-to-http10-client", b"GET / HTTP/1.0\r\n" + H + b"\r\n",
         origin=[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"],
         client_bytes=lambda d: d.endswith(b"\r\n\r\nhello world") and b"transfer-encoding" not in d.lower(),
         client_closed=True, ref="RFC 9112 6.1 (no chunked to a 1.0 recipient)"),
    Case("response-differing-cl", GET, origin=[[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
                                                HOLD]],
         client_status=[502], client_closed=True, ref="RFC 9112 6.3(5), RFC 9110 15.6.3"),
    Case("response-bad-cl", GET, origin=[[b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", HOLD]],
         client_status=[502], client_closed=True, ref="RFC 9112 6.3(5)"),
    Case("response-bad-status-line", GET, origin=[[b"HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok", HOLD]],
         client_status=[502], client_closed=True, ref="RFC 9110 15.6.3"),
    Case("response-garbage", GET, origin=[[b"garbage garbage\r\n\r\n", HOLD]],
         client_status=[502], client_closed=True, ref="RFC 9110 15.6.3"),
    Case("response-ctl-in-value", GET, origin=[[b"HTTP/1.1 200 OK\r\nX-A: a\x7fb\r\nContent-Length: 2\r\n\r\nok", HOLD]],
         client_status=[502], client_closed=True, ref="RFC 9110 5.5 (strict choice: control characters refused)"),
    Case("response-bare-lf", GET, origin=[[b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", HOLD]],
         client_status=[502], client_closed=True,
         alternatives=[{"client_status": [200], "client_bodies": [b"ok"], "client_closed": None}],
         ref="RFC 9112 2.2 (strict choice: 502; or relayed with CRLF)"),
    Case("response-obs-fold", GET, origin=[[b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok", HOLD]],
         client_status=[502], client_closed=True,
         alternatives=[{"client_status": [200], "client_closed": None,
                            "client_bytes": lambda d: b"\r\n b" not in d}],
         ref="RFC 9112 5.2 (a proxy MUST reject or unfold obs-fold)"),
    Case("response-truncated-cl", GET, origin=[[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345", CLOSE]],
         client_status=[200], client_closed=True, allow_incomplete=True,
         client_check=lambda res: not res.finals[0].complete, ref="RFC 9112 8 (an incomplete message stays visible)"),
    Case("response-truncated-chunked", GET,
         origin=[[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", CLOSE]],
         client_status=[200], client_closed=True, allow_incomplete=True,
         client_check=lambda res: not res.finals[0].complete, ref="RFC 9112 8 (no last-chunk after a failure)"),
]

# --- Upgrade / 101 (RFC 9110 sections 7.8, 15.2.2) ---------------------------------------------

_UPGRADE_REQ = b"GET /ws HTTP/1.1\r\n" + H + b"Connection: Upgrade\r\nUpgrade: foo\r\n\r\n"
_101 = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n"

UPGRADE = [
    Case("upgrade-101-tunnel", [_UPGRADE_REQ, Await(b"\r\n\r\n"), b"ping", Await(b"ping"), b"more", Await(b"more"),
                                SHUT_WR],
         origin=[[_101, ECHO]], client_status=[101], client_closed=True,
         client_bytes=lambda d: d.endswith(b"\r\n\r\npingmore"),
         origin_receives=lambda log: log.raw.endswith(b"\r\n\r\npingmore")
         and log.requests[0].values(b"upgrade") == [b"foo"], ref="RFC 9110 7.8, 15.2.2"),
    Case("upgrade-101-server-speaks-first", _UPGRADE_REQ, origin=[[_101 + b"hello from the new protocol", CLOSE]],
         client_status=[101], client_closed=True,
         client_bytes=lambda d: d.endswith(b"\r\n\r\nhello from the new protocol"), ref="RFC 9110 15.2.2"),
    Case("upgrade-101-unsolicited", GET, origin=[[_101, HOLD]], client_status=[502], client_closed=True,
         ref="RFC 9110 15.2.2 (101 only to an Upgrade request)"),
    Case("upgrade-101-to-http10-upgrade", b"GET /ws HTTP/1.0\r\n" + H + b"Connection: Upgrade\r\nUpgrade: foo\r\n\r\n",
         origin=[[_101, HOLD]], client_status=[502], client_closed=True,
         origin_receives=lambda log: not log.requests[0].values(b"upgrade"),
         ref="RFC 9110 7.8 (Upgrade is ignored in HTTP/1.0)"),
    Case("upgrade-refused-next-request-is-http", _UPGRADE_REQ + b"GET /after HTTP/1.1\r\n" + H + b"\r\n",
         origin=echo_target, client_status=[200, 200], client_bodies=[b"/ws", b"/after"], client_closed=False,
         origin_receives=lambda log: [r.target for r in log.requests] == [b"/ws", b"/after"],
         ref="RFC 9112 9.3 (no switch without 101)"),
]

# --- pipelining and half-close (RFC 9112 sections 9.3.2, 9.6) ----------------------------------

PIPELINE = [
    Case("pipeline-three-gets", _two_gets(b"/1", b"/2") + b"GET /3 HTTP/1.1\r\n" + H + b"\r\n", origin=echo_target,
         client_status=[200, 200, 200], client_bodies=[b"/1", b"/2", b"/3"], client_closed=False,
         origin_receives=lambda log: [r.target for r in log.requests] == [b"/1", b"/2", b"/3"],
         ref="RFC 9112 9.3.2"),
    Case("pipeline-post-then-get",
         b"POST /p HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nhelloGET /g HTTP/1.1\r\n" + H + b"\r\n",
         origin=echo_target, client_status=[200, 200], client_bodies=[b"/p:hello", b"/g"], client_closed=False,
         ref="RFC 9112 9.3.2"),
    Case("pipeline-chunked-post-then-get",
         b"POST /p HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
         b"GET /g HTTP/1.1\r\n" + H + b"\r\n",
         origin=echo_target, client_status=[200, 200], client_bodies=[b"/p:hello", b"/g"], client_closed=False,
         ref="RFC 9112 9.3.2"),
    Case("pipeline-slow-first-response", _two_gets(b"/slow", b"/fast"),
         origin=[[0.3, response(b"slow")], response(b"fast")],
         client_status=[200, 200], client_bodies=[b"slow", b"fast"], client_closed=False, ref="RFC 9112 9.3.2"),
    Case("pipeline-connection-close-stops", b"GET /1 HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n"
         b"GET /2 HTTP/1.1\r\n" + H + b"\r\n", origin=echo_target,
         client_status=[200], client_bodies=[b"/1"], client_closed=True,
         origin_receives=lambda log: [r.target for r in log.requests] == [b"/1"], ref="RFC 9112 9.6"),
    Case("half-close-after-request", [b"GET /h HTTP/1.1\r\n" + H + b"\r\n", SHUT_WR], origin=[[0.2, response(b"late")]],
         client_status=[200], client_bodies=[b"late"], client_closed=True, ref="RFC 9112 9.6"),
    Case("half-close-after-pipelined-requests", [_two_gets(b"/1", b"/2"), SHUT_WR], origin=echo_target,
         client_status=[200, 200], client_bodies=[b"/1", b"/2"], client_closed=True, ref="RFC 9112 9.6"),
    Case("http10-keep-alive", b"GET /1 HTTP/1.0\r\n" + H + b"Connection: keep-alive\r\n\r\n", origin=echo_target,
         client_status=[200], client_bodies=[b"/1"], client_closed=False,
         client_check=lambda res: [v.lower() for v in res.finals[0].values(b"connection")] == [b"keep-alive"],
         ref="RFC 9112 9.3 (1.0 persistence needs keep-alive)"),
    Case("http10-default-close", b"GET /1 HTTP/1.0\r\n" + H + b"\r\n", origin=echo_target,
         client_status=[200], client_bodies=[b"/1"], client_closed=True, ref="RFC 9112 9.3"),
]

# --- hop-by-hop fields (RFC 9110 section 7.6.1) ------------------------------------------------

HOP = [
    Case("hop-by-hop-request-fields-removed",
         b"GET /h HTTP/1.1\r\n" + H + b"Connection: keep-alive, X-Foo, x-bar\r\nKeep-Alive: timeout=5\r\n"
         b"X-Foo: 1\r\nX-Bar: 2\r\nX-Keep: 3\r\nTE: trailers\r\nProxy-Connection: keep-alive\r\nTrailer: X-T\r\n"
         b"Upgrade: h2c\r\n\r\n",
         client_status=[200], client_closed=False,
         origin_receives=b"GET /h HTTP/1.1\r\n" + H + b"X-Keep: 3\r\n" + XFF + b"\r\n", ref="RFC 9110 7.6.1"),
    Case("hop-by-hop-connection-names-xff",
         b"GET / HTTP/1.1\r\n" + H + b"Connection: x-forwarded-for\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n",
         client_status=[200], client_closed=False, origin_receives=b"GET / HTTP/1.1\r\n" + H + XFF + b"\r\n",
         ref="RFC 9110 7.6.1; XFF appended after the removal"),
    Case("xff-appended-to-existing", b"GET / HTTP/1.1\r\n" + H + b"X-Forwarded-For: 6.6.6.6\r\n\r\n",
         client_status=[200], client_closed=False,
         origin_receives=b"GET / HTTP/1.1\r\n" + H + b"X-Forwarded-For: 6.6.6.6\r\n" + XFF + b"\r\n",
         ref="haproxy option forwardfor"),
    Case("hop-by-hop-connection-content-length",
         b"POST /p HTTP/1.1\r\n" + H + b"Connection: content-length\r\nContent-Length: 5\r\n\r\nhello",
         client_status=[200], client_closed=False,
         origin_receives=b"POST /p HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n" + XFF + b"\r\nhello",
         ref="framing survives Connection: content-length"),
    Case("hop-by-hop-connection-transfer-encoding",
         b"POST /p HTTP/1.1\r\n" + H + b"Connection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"5\r\nhello\r\n0\r\n\r\n",
         client_status=[200], client_closed=False,
         origin_receives=b"POST /p HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n" + XFF
         + b"\r\n5\r\nhello\r\n0\r\n\r\n", ref="framing survives Connection: transfer-encoding"),
    Case("hop-by-hop-connection-close-not-forwarded",
         b"GET / HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n",
         client_status=[200], client_closed=True, origin_receives=b"GET / HTTP/1.1\r\n" + H + XFF + b"\r\n",
         ref="RFC 9110 7.6.1"),
    Case("hop-by-hop-response-fields-removed", GET,
         origin=[(b"HTTP/1.1 200 OK\r\nConnection: x-secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\n"
                 b"Proxy-Connection: keep-alive\r\nX-Keep: 1\r\nContent-Length: 2\r\n\r\nok")],
         client_status=[200], client_closed=False,
         client_bytes=b"HTTP/1.1 200 OK\r\nX-Keep: 1\r\nContent-Length: 2\r\n\r\nok", ref="RFC 9110 7.6.1"),
    Case("hop-by-hop-response-connection-content-length", GET,
         origin=[b"HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\nok"],
         client_status=[200], client_closed=False,
         client_bytes=b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", ref="framing survives Connection"),
]

# --- splicer's own error responses (Content-Length = body, connection: close) -----------------
# Every case checks these properties on any 4xx/5xx splicer sends (harness.generic_errors);
# these make sure each status is produced at least once.

ERRORS = [
    Case("error-400", b"GET / HTTP/1.1\r\n\r\n", client_status=[400], client_closed=True, origin_receives=b""),
    Case("error-405", b"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", client_status=[405],
         client_closed=True, origin_receives=b""),
    Case("error-408", [b"GET / HTTP/1.1\r\n", 2.0], config="short", client_status=[408], client_closed=True,
         origin_receives=b""),
    Case("error-431", b"GET / HTTP/1.1\r\n" + H + b"X-Big: " + b"a" * 20000 + b"\r\n\r\n", client_status=[431],
         client_closed=True, origin_receives=b""),
    Case("error-501", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
         client_status=[501], client_closed=True, origin_receives=b""),
    Case("error-502-closed-without-response", GET, origin=[[CLOSE]], client_status=[502], client_closed=True),
    Case("error-502-reset-without-response", GET, origin=[[RESET]], client_status=[502], client_closed=True),
    Case("error-503-no-server", GET, config="noserver", client_status=[503], client_closed=True),
    Case("error-504-silent-server", GET, config="short", origin=[[HOLD]], client_status=[504], client_closed=True,
         within=1.0 + 1.5),
    Case("error-505", b"GET / HTTP/2.0\r\n" + H + b"\r\n", client_status=[505], client_closed=True,
         origin_receives=b"", ref="RFC 9110 15.6.6"),
]

# --- a POST is never replayed (RFC 9110 section 9.2.2, RFC 9112 9.3.1) ------------------------

_FIRST = b"GET /first HTTP/1.1\r\n" + H + b"\r\n"  # leaves an idle server connection in the pool


def _posts_once(log: OriginLog) -> bool:
    posts = [r for r in log.requests if r.method == b"POST"]
    assert len(posts) == 1, f"the origin received the POST {len(posts)} times"
    return True


REPLAY = [
    Case(f"post-not-replayed-{name}-{cfg}", [_FIRST, Await(b"ok"), post], config=cfg,
         origin=[response(b"ok"), steps], client_status=[200, 502], client_closed=True,
         origin_receives=_posts_once, alternatives=[{"client_status": [200]}],
         ref="RFC 9110 9.2.2 (a non-idempotent request is not retried automatically)")
    for cfg in ("default", "retry")
    for name, post, steps in [
        ("closed-after-body", b"POST /pay HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nhello", [BODY, CLOSE]),
        ("reset-after-body", b"POST /pay HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nhello", [BODY, RESET]),
        ("reset-after-head", b"POST /pay HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nhello", [NOBODY, 0.05, RESET]),
        ("no-body-closed", b"POST /pay HTTP/1.1\r\n" + H + b"Content-Length: 0\r\n\r\n", [CLOSE]),
        ("chunked-closed", b"POST /pay HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
         [BODY, CLOSE]),
    ]
]

CASES = EXPECT + BODILESS + RESPONSES + UPGRADE + PIPELINE + HOP + ERRORS + REPLAY


@pytest.mark.parametrize("case", params(CASES))
def test_response_rule(env, case):
    run_case(env, case)
