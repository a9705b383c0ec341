"""RFC 9110 / 9112 request-side rules, as raw-byte cases through the real splicer: request
targets, Host, header syntax, message framing, chunked bodies and limits."""
from __future__ import annotations

import pytest

from tests.cases.harness import XFF, Case, H, OriginLog, params, run_case

SMUG = b"GET /smuggled HTTP/1.1\r\n" + H + b"\r\n"


def rejected(status, **kw) -> dict:
    """The proxy answers `status` (or one of a set), closes, and the origin receives nothing."""
    return dict(client_status=[status if isinstance(status, int) else set(status)], client_closed=True,
                origin_receives=b"", **kw)


def ok_forwarded(origin_bytes, **kw) -> dict:
    """One 200 from the origin, the connection stays usable, the origin got exactly this."""
    return dict(client_status=[200], client_bodies=[b"ok"], client_closed=False, origin_receives=origin_bytes, **kw)


# --- request targets (RFC 9112 section 3.2) ----------------------------------------------------

TARGETS = [
    Case("target-origin-form", b"GET /a/b?c=d&e HTTP/1.1\r\n" + H + b"\r\n",
         **ok_forwarded(b"GET /a/b?c=d&e HTTP/1.1\r\n" + H + XFF + b"\r\n"), ref="RFC 9112 3.2.1"),
    Case("target-absolute-form", b"GET http://example.com/p?q=1 HTTP/1.1\r\n" + H + b"\r\n",
         **ok_forwarded(b"GET /p?q=1 HTTP/1.1\r\n" + H + XFF + b"\r\n"), ref="RFC 9112 3.2.2"),
    Case("target-absolute-form-port", b"GET http://example.com:8080/p HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
         **ok_forwarded(b"GET /p HTTP/1.1\r\nHost: example.com:8080\r\n" + XFF + b"\r\n"), ref="RFC 9112 3.2.2"),
    Case("target-absolute-form-empty-path", b"GET http://example.com HTTP/1.1\r\n" + H + b"\r\n",
         **ok_forwarded(b"GET / HTTP/1.1\r\n" + H + XFF + b"\r\n"), ref="RFC 9112 3.2.1 (empty path -> /)"),
    Case("target-absolute-form-query-no-path", b"GET http://example.com?x=1 HTTP/1.1\r\n" + H + b"\r\n",
         **ok_forwarded(b"GET /?x=1 HTTP/1.1\r\n" + H + XFF + b"\r\n"), ref="RFC 9112 3.2.1"),
    Case("target-absolute-form-host-disagrees", b"GET http://example.com/p HTTP/1.1\r\nHost: other.example\r\n\r\n",
         **rejected(400), ref="RFC 9112 3.2.2 (brief: 400)"),
    Case("target-absolute-form-without-host", b"GET http://example.com/p HTTP/1.1\r\n\r\n",
         **rejected(400), ref="RFC 9112 3.2 (MUST 400 for any 1.1 request without Host)"),
    Case("target-asterisk-options", b"OPTIONS * HTTP/1.1\r\n" + H + b"\r\n",
         **ok_forwarded(b"OPTIONS * HTTP/1.1\r\n" + H + XFF + b"\r\n"), ref="RFC 9112 3.2.4"),
    Case("target-absolute-form-options-empty-path", b"OPTIONS http://example.com HTTP/1.1\r\n" + H + b"\r\n",
         **ok_forwarded(b"OPTIONS * HTTP/1.1\r\n" + H + XFF + b"\r\n"),
         ref="RFC 9112 3.2.4 (the last proxy MUST send '*')"),
    Case("target-asterisk-get", b"GET * HTTP/1.1\r\n" + H + b"\r\n", **rejected(400), ref="RFC 9112 3.2.4"),
    Case("target-authority-form-get", b"GET example.com:80 HTTP/1.1\r\n" + H + b"\r\n", **rejected(400),
         ref="RFC 9112 3.2.3 (only for CONNECT)"),
    Case("target-relative", b"GET a/b HTTP/1.1\r\n" + H + b"\r\n", **rejected(400), ref="RFC 9112 3.2"),
    Case("target-connect", b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", **rejected(405),
         ref="brief: CONNECT -> 405"),
]

# --- Host (RFC 9112 section 3.2) ---------------------------------------------------------------


def _one_host(log: OriginLog) -> bool:
    reqs = log.requests
    assert len(reqs) == 1
    assert len(reqs[0].values(b"host")) == 1, f"Host fields at the origin: {reqs[0].values(b'host')}"
    assert reqs[0].version == b"HTTP/1.1"
    return True


HOSTS = [
    Case("host-missing", b"GET / HTTP/1.1\r\n\r\n", **rejected(400), ref="RFC 9112 3.2 (MUST 400)"),
    Case("host-repeated-same", b"GET / HTTP/1.1\r\n" + H + H + b"\r\n", **rejected(400), ref="RFC 9112 3.2 (MUST 400)"),
    Case("host-repeated-different", b"GET / HTTP/1.1\r\n" + H + b"Host: other.example\r\n\r\n", **rejected(400),
         ref="RFC 9112 3.2 (MUST 400)"),
    Case("host-list-value", b"GET / HTTP/1.1\r\nHost: example.com, other.example\r\n\r\n", **rejected(400),
         ref="RFC 9112 3.2 (invalid Host value: MUST 400)", timeout=0.6),
    Case("host-http10-missing", b"GET / HTTP/1.0\r\n\r\n", client_status=[200], client_closed=True,
         origin_receives=_one_host, ref="RFC 9112 3.2: forwarded as 1.1, which MUST carry Host"),
]

# --- header syntax (RFC 9112 sections 2.2, 5) --------------------------------------------------

SYNTAX = [
    Case(f"syntax-{name}", raw, **rejected(400), ref=ref)
    for name, raw, ref in [
        ("space-before-colon", b"GET / HTTP/1.1\r\n" + H + b"X-A : b\r\n\r\n", "RFC 9112 5.1 (MUST 400)"),
        ("space-before-colon-host", b"GET / HTTP/1.1\r\nHost : example.com\r\n\r\n", "RFC 9112 5.1"),
        ("tab-before-colon", b"GET / HTTP/1.1\r\n" + H + b"X-A\t: b\r\n\r\n", "RFC 9112 5.1"),
        ("cr-in-value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\rb\r\n\r\n", "RFC 9110 5.5, RFC 9112 2.2"),
        ("lf-in-value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\nb\r\n\r\n", "RFC 9110 5.5"),
        ("nul-in-value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x00b\r\n\r\n", "RFC 9110 5.5"),
        ("ctl-soh-in-value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x01b\r\n\r\n", "RFC 9110 5.5 (strict choice)"),
        ("ctl-esc-in-value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x1bb\r\n\r\n", "RFC 9110 5.5 (strict choice)"),
        ("ctl-del-in-value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x7fb\r\n\r\n", "RFC 9110 5.5 (strict choice)"),
        ("ctl-in-target", b"GET /a\x7fb HTTP/1.1\r\n" + H + b"\r\n", "RFC 9112 3.2"),
        ("obs-fold", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\r\n b\r\n\r\n", "RFC 9112 5.2"),
        ("obs-fold-tab", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\r\n\tb\r\n\r\n", "RFC 9112 5.2"),
        ("whitespace-before-first-field", b"GET / HTTP/1.1\r\n " + H + b"\r\n", "RFC 9112 2.2"),
        ("bare-lf-line-endings", b"GET / HTTP/1.1\nHost: example.com\n\n", "RFC 9112 2.2 (strict choice)"),
        ("bare-lf-last-line", b"GET / HTTP/1.1\r\n" + H + b"\n", "RFC 9112 2.2 (strict choice)"),
        ("bare-lf-request-line", b"GET / HTTP/1.1\n" + H + b"\r\n", "RFC 9112 2.2 (strict choice)"),
        ("empty-field-name", b"GET / HTTP/1.1\r\n" + H + b": x\r\n\r\n", "RFC 9110 5.1"),
        ("non-token-field-name", b"GET / HTTP/1.1\r\n" + H + b"X(A): b\r\n\r\n", "RFC 9110 5.1"),
        ("line-without-colon", b"GET / HTTP/1.1\r\n" + H + b"X-A b\r\n\r\n", "RFC 9112 5"),
    ]
]

# --- framing (RFC 9112 section 6) -------------------------------------------------------------

_BODY5 = b"hello"
_CHUNKED5 = b"5\r\nhello\r\n0\r\n\r\n"


def _post(fields: bytes, body: bytes, version: bytes = b"1.1") -> bytes:
    return b"POST /f HTTP/" + version + b"\r\n" + H + fields + b"\r\n" + body + SMUG


def _one_post(body: bytes, cl: list[bytes] | None = None, te: list[bytes] | None = None):
    def one_post(log: OriginLog) -> bool:
        reqs = log.requests
        assert [r.target for r in reqs] == [b"/f", b"/smuggled"], f"requests {[r.target for r in reqs]}"
        r = reqs[0]
        assert r.body == body and r.complete
        if cl is not None:
            assert r.values(b"content-length") == cl, r.values(b"content-length")
        if te is not None:
            assert r.values(b"transfer-encoding") == te, r.values(b"transfer-encoding")
        return True
    return one_post


FRAMING = [
    Case("framing-te-and-cl", _post(b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", _CHUNKED5),
         **rejected(400), ref="RFC 9112 6.3(3) (brief: 400)"),
    Case("framing-cl-differing-lines", _post(b"Content-Length: 5\r\nContent-Length: 6\r\n", _BODY5),
         **rejected(400), ref="RFC 9112 6.3(5)"),
    Case("framing-cl-differing-list", _post(b"Content-Length: 5, 6\r\n", _BODY5), **rejected(400),
         ref="RFC 9112 6.3(5)"),
] + [
    Case(f"framing-cl-{name}", _post(b"Content-Length: " + v + b"\r\n", _BODY5), **rejected(400),
         ref="RFC 9110 8.6, RFC 9112 6.3(5)")
    for name, v in [("plus", b"+5"), ("hex", b"0x5"), ("inner-space", b"5 5"), ("negative", b"-1"),
                    ("empty", b""), ("huge-2e64", b"%d" % 2**64), ("letters", b"five"), ("decimal", b"5.0")]
] + [
    Case("framing-cl-identical-duplicates", _post(b"Content-Length: 5\r\nContent-Length: 5\r\n", _BODY5),
         client_status=[200, 200], client_closed=False, origin_receives=_one_post(_BODY5, cl=[b"5"]),
         alternatives=[rejected(400)], ref="RFC 9110 8.6 (MAY accept identical values, forwarded as one)"),
    Case("framing-cl-zero-leading", _post(b"Content-Length: 005\r\n", _BODY5),
         client_status=[200, 200], client_closed=False, origin_receives=_one_post(_BODY5, cl=[b"5"]),
         ref="RFC 9110 8.6 (1*DIGIT)"),
] + [
    Case(f"framing-te-{name}", _post(b"Transfer-Encoding: " + v + b"\r\n", _CHUNKED5), **rejected(400),
         ref="RFC 9112 6.3(4) (MUST 400)")
    for name, v in [("gzip", b"gzip"), ("chunked-identity", b"chunked, identity"), ("xchunked", b"xchunked"),
                    ("chunked-chunked", b"chunked, chunked"), ("identity", b"identity")]
] + [
    Case("framing-te-empty", _post(b"Transfer-Encoding: \r\n", _CHUNKED5), **rejected(400),
         ref="RFC 9112 6.3(4): TE present and chunked not final (MUST 400)"),
] + [
    Case("framing-te-two-chunked-lines", _post(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                                               _CHUNKED5), **rejected(400), ref="RFC 9112 6.1, 6.3(4)"),
    Case("framing-te-gzip-chunked", _post(b"Transfer-Encoding: gzip, chunked\r\n", _CHUNKED5), **rejected(501),
         ref="RFC 9112 6.1 (SHOULD 501 for a coding not understood)"),
    Case("framing-te-mixed-case-chunked", _post(b"Transfer-Encoding: Chunked\r\n", _CHUNKED5),
         client_status=[200, 200], client_closed=False,
         origin_receives=_one_post(_BODY5, te=[b"chunked"]), ref="RFC 9112 7 (coding names are case-insensitive)"),
    Case("framing-te-http10", _post(b"Transfer-Encoding: chunked\r\n", _CHUNKED5, version=b"1.0"),
         **rejected(400), ref="RFC 9112 6.1 (1.0 with TE: faulty framing)",
         alternatives=[{"client_status": [200], "client_closed": True, "origin_receives": lambda log: [
             (r.target, r.body) for r in log.requests] == [(b"/f", _BODY5)]}]),
    Case("framing-cl-exact-forward", _post(b"Content-Length: 5\r\n", _BODY5),
         client_status=[200, 200], client_bodies=[b"ok", b"ok"], client_closed=False,
         origin_receives=b"POST /f HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n" + XFF + b"\r\nhello"
         + SMUG.replace(b"\r\n\r\n", b"\r\n" + XFF + b"\r\n"), ref="RFC 9112 6.2"),
    Case("framing-chunked-exact-forward", _post(b"Transfer-Encoding: chunked\r\n", _CHUNKED5),
         client_status=[200, 200], client_closed=False,
         origin_receives=b"POST /f HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n" + XFF + b"\r\n" + _CHUNKED5
         + SMUG.replace(b"\r\n\r\n", b"\r\n" + XFF + b"\r\n"), ref="RFC 9112 7.1"),
]

# --- chunked request bodies (RFC 9112 section 7.1) ---------------------------------------------

_CHEAD = b"POST /c HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"


def _cut(log: OriginLog) -> bool:
    """The origin saw only /c, never complete, and its connection was closed by the proxy."""
    assert [r.target for r in log.requests] == [b"/c"], f"requests {[r.target for r in log.requests]}"
    assert not log.requests[0].complete, "a malformed body was forwarded as complete"
    assert all(c.eof for c in log.case_conns), "upstream connection left open"
    return True


def _bad_chunk(name: str, body: bytes, ref: str) -> Case:
    return Case(f"chunked-{name}", _CHEAD + body + SMUG, client_status=[400], client_closed=True,
                origin_receives=_cut, alternatives=[{"client_status": []}], ref=ref)


def _chunks_ok(name: str, body: bytes, decoded: bytes, ref: str, raw: bytes | None = None) -> Case:
    def decoded_body(log: OriginLog) -> bool:
        assert [(r.target, r.body, r.complete) for r in log.requests] == [(b"/c", decoded, True), (b"/smuggled", b"", True)]
        if raw is not None:
            assert log.requests[0].raw_body == raw, log.requests[0].raw_body
        return True
    return Case(f"chunked-{name}", _CHEAD + body + SMUG, client_status=[200, 200], client_closed=False,
                origin_receives=decoded_body, ref=ref)


CHUNKED = [
    _chunks_ok("valid-two-chunks", b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", b"hello world", "RFC 9112 7.1",
               raw=b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
    _chunks_ok("valid-uppercase-hex", b"A\r\n0123456789\r\n0\r\n\r\n", b"0123456789", "RFC 9112 7.1"),
    _chunks_ok("valid-extension", b"5;name=value\r\nhello\r\n0\r\n\r\n", b"hello", "RFC 9112 7.1.1"),
    _chunks_ok("valid-trailer", b"5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", b"hello", "RFC 9112 7.1.2"),
    _bad_chunk("bad-hex-size", b"zz\r\nhello\r\n0\r\n\r\n", "RFC 9112 7.1"),
    _bad_chunk("empty-size-line", b"\r\nhello\r\n0\r\n\r\n", "RFC 9112 7.1"),
    _bad_chunk("signed-size", b"+5\r\nhello\r\n0\r\n\r\n", "RFC 9112 7.1"),
    _bad_chunk("size-overflow-17-digits", b"10000000000000005\r\nhello\r\n0\r\n\r\n", "RFC 9112 7.1 (overflow)"),
    _bad_chunk("size-overflow-16-digits", b"ffffffffffffffff\r\nhello\r\n0\r\n\r\n", "RFC 9112 7.1 (overflow)"),
    _bad_chunk("missing-crlf-after-data", b"5\r\nhello0\r\n\r\n", "RFC 9112 7.1"),
    _bad_chunk("data-longer-than-size", b"3\r\nhello\r\n0\r\n\r\n", "RFC 9112 7.1"),
    _bad_chunk("bare-lf-after-size", b"5\nhello\r\n0\r\n\r\n", "RFC 9112 7.1 (CRLF)"),
    _bad_chunk("bare-lf-after-data", b"5\r\nhello\n0\r\n\r\n", "RFC 9112 7.1 (CRLF)"),
    _bad_chunk("oversized-extension", b"5;" + b"a" * 8000 + b"\r\nhello\r\n0\r\n\r\n", "RFC 9112 7.1.1 (bounded)"),
    _bad_chunk("oversized-trailer", b"5\r\nhello\r\n0\r\n" + b"".join(b"X-T%d: %s\r\n" % (i, b"t" * 64)
                                                                       for i in range(400)) + b"\r\n",
               "RFC 9112 7.1.2 (bounded)"),
    _bad_chunk("trailer-without-colon", b"5\r\nhello\r\n0\r\nnot a field\r\n\r\n", "RFC 9112 7.1.2"),
]

# --- limits ------------------------------------------------------------------------------------


def _fields(n: int) -> bytes:
    return b"".join(b"X-%d: v\r\n" % i for i in range(n))


LIMITS = [
    Case("limit-head-over-16k", b"GET / HTTP/1.1\r\n" + H + b"X-Big: " + b"a" * 17000 + b"\r\n\r\n",
         **rejected((431, 400)), ref="RFC 9110 5.4, RFC 6585 5 (tune.bufsize 16384)"),
    Case("limit-head-under-16k", b"GET / HTTP/1.1\r\n" + H + b"X-Big: " + b"a" * 16000 + b"\r\n\r\n",
         client_status=[200], client_closed=False,
         origin_receives=lambda log: len(log.requests) == 1 and log.requests[0].values(b"x-big") == [b"a" * 16000],
         ref="tune.bufsize 16384"),
    Case("limit-102-fields", b"GET / HTTP/1.1\r\n" + H + _fields(101) + b"\r\n", **rejected(400),
         ref="tune.http.maxhdr 101"),
    Case("limit-101-fields", b"GET / HTTP/1.1\r\n" + H + _fields(100) + b"\r\n", client_status=[200],
         client_closed=False, origin_receives=lambda log: len(log.requests) == 1, ref="tune.http.maxhdr 101"),
    Case("limit-head-trickled", [b"GET / HTTP/1.1\r\n" + H] + [0.1, b"X"] * 30, config="short",
         **rejected(408), within=0.5 + 1.5, timeout=5, ref="timeout http-request 500ms; RFC 9110 15.5.9"),
    Case("limit-no-request-line-end-trickled", [b"G"] + [0.1, b"E"] * 30, config="short",
         **rejected(408), within=0.5 + 1.5, timeout=5, ref="timeout http-request 500ms"),
]

CASES = TARGETS + HOSTS + SYNTAX + FRAMING + CHUNKED + LIMITS


@pytest.mark.parametrize("case", params(CASES))
def test_request_rule(env, case):
    run_case(env, case)
