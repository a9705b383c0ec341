"""The engine's head tokenizer (native/src/h1.c, spl_h1_parse) against h11 plus splicer's
strict rules (splicer/http/h1.py's reference path).

h11 defines a valid head. The tokenizer may say three things of a head: OK (then
parse_request/parse_response built from its index must give exactly what the reference gives,
the same RequestHead or the same refusal status), REFUSE (then the reference must refuse it
with 400 for a request, 502 for a response), or UNSURE (then the reference decides, as it
does for any head without an index). Every head below is fed to both: hypothesis heads,
every byte vector of tests/cases, and mutations of real browser, API client and origin heads.
`python -m tests.unit.engine.test_h1_tokenizer` prints the counts.
"""
from __future__ import annotations

import random
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from splicer.engine import binding
from splicer.http import h1
from splicer.http.framing import BodyKind
from splicer.http.h1 import HeadError
from splicer.http.headers import HOP_BY_HOP
from tests.unit.http.test_h1_properties import heads as property_heads

OK, REFUSE, UNSURE = binding.H1_OK, binding.H1_REFUSE, binding.H1_UNSURE

# --- real heads --------------------------------------------------------------------------------

REQUESTS = [
    # Chrome, a page
    b"GET /products/shoes/index.html?color=blue&size=42&utm_source=news HTTP/1.1\r\n"
    b"Host: www.example.com\r\nConnection: keep-alive\r\nCache-Control: max-age=0\r\n"
    b'sec-ch-ua: "Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"\r\n'
    b"sec-ch-ua-mobile: ?0\r\nsec-ch-ua-platform: \"Linux\"\r\nUpgrade-Insecure-Requests: 1\r\n"
    b"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    b"Chrome/124.0.0.0 Safari/537.36\r\n"
    b"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8\r\n"
    b"Sec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-User: ?1\r\n"
    b"Sec-Fetch-Dest: document\r\nReferer: https://www.example.com/products/?page=3\r\n"
    b"Accept-Encoding: gzip, deflate, br, zstd\r\nAccept-Language: en-US,en;q=0.9,fr;q=0.8\r\n"
    b"Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark; _ga=GA1.2.1234567890.1700000000\r\n\r\n",
    # Firefox, an image
    b"GET /static/img/logo.svg?v=20261206 HTTP/1.1\r\nHost: www.example.com\r\n"
    b"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0\r\n"
    b"Accept: image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5\r\n"
    b"Accept-Language: de,en-US;q=0.7,en;q=0.3\r\nAccept-Encoding: gzip, deflate, br\r\n"
    b"Connection: keep-alive\r\nReferer: https://www.example.com/\r\nSec-Fetch-Dest: image\r\n"
    b"Sec-Fetch-Mode: no-cors\r\nSec-Fetch-Site: same-origin\r\nPriority: u=5, i\r\nTE: trailers\r\n\r\n",
    # an API client's JSON POST
    b"POST /api/v2/orders?dry_run=false HTTP/1.1\r\nHost: api.example.com\r\n"
    b"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSIsImlhdCI6MTcwMDAwMDAwMH0.abc\r\n"
    b"Content-Type: application/json\r\nContent-Length: 1024\r\nX-Request-Id: 4bf92f35-77b3-4da6-a3ce-929d0e0e4736\r\n"
    b"Accept: application/json\r\nUser-Agent: python-requests/2.32.3\r\n\r\n",
    # curl, a chunked upload with Expect
    b"PUT /upload/file.bin HTTP/1.1\r\nHost: files.example.com:8443\r\nUser-Agent: curl/8.5.0\r\n"
    b"Accept: */*\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
    # a WebSocket upgrade
    b"GET /chat HTTP/1.1\r\nHost: ws.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: https://example.com\r\n\r\n",
    # HTTP/1.0, no Host, Keep-Alive
    b"GET /health HTTP/1.0\r\nConnection: Keep-Alive\r\nUser-Agent: check/1.0\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET http://www.example.com/a?b=c HTTP/1.1\r\nHost: www.example.com\r\nProxy-Connection: keep-alive\r\n\r\n",
    b"HEAD / HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\nX-Empty:\r\nX-Spaces:   a  b   \r\nX-Tab:\ta\tb\t\r\n\r\n",
    b"DELETE /items/1 HTTP/1.1\r\nhost: example.com\r\ncontent-length: 0\r\nX-Obs: caf\xc3\xa9\r\n\r\n",
]

RESPONSES = [
    b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 06 Dec 2026 20:00:00 GMT\r\n"
    b"Content-Type: text/html; charset=utf-8\r\nContent-Length: 48213\r\n"
    b"Last-Modified: Fri, 04 Dec 2026 09:12:44 GMT\r\nConnection: keep-alive\r\nETag: \"6564a1fc-bc55\"\r\n"
    b"Cache-Control: public, max-age=300\r\nVary: Accept-Encoding\r\nAccept-Ranges: bytes\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\nServer: nginx\r\nDate: Sun, 06 Dec 2026 20:00:00 GMT\r\nConnection: keep-alive\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
    b"Set-Cookie: sid=abc; Path=/; HttpOnly; Secure\r\nSet-Cookie: t=1\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload; as=style\r\n\r\n",
    b"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\n",
    b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nKeep-Alive: timeout=5\r\n\r\n",
    b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 302 \r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 500 Internal\tServer  Error \r\nContent-Length: 5\r\nConnection: close\r\n\r\n",
]

METHODS = (b"GET", b"HEAD", b"POST")
MEMOS = (h1._REQUESTS, h1._RESPONSES, h1._FORWARDED_REQUESTS, h1._FORWARDED_RESPONSES)


def request_outcome(fn, head: bytes, *args):
    try:
        return "ok", fn(head, *args)
    except HeadError as exc:
        return "refused", exc.status


def compare(head: bytes, stats: dict | None = None) -> list[str]:
    """Feed one head to the tokenizer and to the reference; the disagreements, if any."""
    for memo in MEMOS:  # every parse below runs the code it compares, not a memo
        memo.reset()
    ix = binding.h1_index(head)
    verdict = ix[0]
    bad = []
    if stats is not None:
        stats["heads"] += 1
        stats[("ok", "refuse", "unsure")[verdict]] += 1
    if verdict == UNSURE:
        return bad
    kind = ix[1]
    if verdict == REFUSE:
        ref = request_outcome(h1._parse_request, head)
        if ref != ("refused", 400):
            bad.append(f"REFUSE but the request reference gives {ref}")
        for m in METHODS:
            ref = request_outcome(h1._parse_response, head, m)
            if ref != ("refused", 502):
                bad.append(f"REFUSE but the response reference gives {ref}")
        return bad
    if kind == binding.lib.SPL_H1_REQUEST:
        for maxhdr in (3, 101):
            ref = request_outcome(h1._parse_request, head, maxhdr)
            got = request_outcome(h1.parse_request, head, maxhdr, ix)
            if got != ref:
                bad.append(f"request maxhdr={maxhdr}: tokenizer {got} != reference {ref}")
        if got[0] == "ok":  # (maxhdr 101)
            bad += forwarding_disagreements(head, got[1], stats)
        # a response parse of a request head: the tokenizer's index is not for a response
        if request_outcome(h1.parse_response, head, b"GET", False, ix)[0] == "ok":
            bad.append("a request head accepted as a response")
    elif kind == binding.lib.SPL_H1_RESPONSE:
        for m in METHODS:
            for up in (False, True):
                ref = request_outcome(h1._parse_response, head, m, up)
                got = request_outcome(h1.parse_response, head, m, up, ix)
                if got != ref:
                    bad.append(f"response {m} upgrade={up}: tokenizer {got} != reference {ref}")
                elif got[0] == "ok":
                    bad += response_forwarding_disagreements(got[1], stats)
                if not up:
                    bad += relay_disagreements(head, m, ref, stats)
        if request_outcome(h1.parse_request, head, 101, ix)[0] == "ok":
            bad.append("a response head accepted as a request")
    else:
        bad.append(f"OK with no kind: {ix[:8]}")
    return bad


def forwarding_disagreements(head: bytes, req, stats: dict | None) -> list[str]:
    """The forwarded request built from the head's byte ranges must be forward_request_head()'s."""
    bad = []
    if req.source is None:  # (a target rewritten: built field by field)
        return bad
    for ip in (None, "192.0.2.1", "2001:db8::7"):
        fast = h1._request_by_ranges(req, req.source, ip, None)
        if fast is None:
            continue
        if stats is not None:
            stats["ranges"] += 1
        ref = h1.forward_request_head(req, ip)
        if fast != ref:
            bad.append(f"forwarded by ranges {fast!r} != {ref!r}")
    return bad


def response_forwarding_disagreements(resp, stats: dict | None) -> list[str]:
    bad = []
    for version in (b"1.1", b"1.0"):
        for keep in (True, False):
            fast = h1._response_by_ranges(resp, resp.source, version, keep)
            if fast is None:
                continue
            if stats is not None:
                stats["ranges"] += 1
            ref = h1.forward_response_head(resp, version, keep)
            if fast != ref:
                bad.append(f"response forwarded by ranges {fast!r} != {ref!r}")
    return bad


def relay_disagreements(head: bytes, method: bytes, ref, stats: dict | None) -> list[str]:
    """What the engine relays by itself (spl_h1_relay, SPL_JOB_RELAY) must be what the stream
    machine would send: the response head as forward_response_head() writes it for an HTTP/1.1
    keep-alive client, and exactly the body its framing gives."""
    bad = []
    for max_status, version, keep, connection in ((599, b"1.1", True, b""), (399, b"1.1", True, b""),
                                                  (599, b"1.1", False, b"close"),
                                                  (599, b"1.0", True, b"keep-alive"),
                                                  (599, b"1.0", False, b"close")):
        got = binding.h1_relay(head, max_status, method == b"HEAD", connection)
        if got is None:
            continue
        if ref[0] != "ok":
            bad.append(f"relayed {method} though the reference refuses it: {ref}")
            continue
        resp = ref[1]
        if stats is not None:
            stats["relayed"] = stats.get("relayed", 0) + 1
        fwd, body = got
        want = h1.forward_response_head(resp, version, keep)
        if fwd != want:
            bad.append(f"relayed {method} as {fwd!r} != {want!r}")
        fr = resp.framing
        if fr.kind is BodyKind.LENGTH:
            if body != fr.length:
                bad.append(f"relayed {method} with a body of {body} != {fr.length}")
        elif fr.kind is not BodyKind.NONE or body != 0:
            bad.append(f"relayed {method} with framing {fr} (body {body})")
        if not 200 <= resp.status <= max_status:
            bad.append(f"relayed status {resp.status} (max {max_status})")
    return bad


def cut(blob: bytes) -> bytes | None:
    """The head at the start of `blob` (through its empty line), or None."""
    end = h1.find_head_end(blob)
    return blob[:end] if end > 0 else None


def mutations(base: bytes, rng: random.Random, n: int):
    """n heads made from `base` the way broken clients, fuzzers and smugglers make them."""
    lines = base[:-4].split(b"\r\n")
    for _ in range(n):
        op = rng.randrange(12)
        if op == 0:  # one byte changed
            i = rng.randrange(len(base) - 4)
            yield base[:i] + bytes([rng.randrange(256)]) + base[i + 1:]
        elif op == 1:  # one byte inserted
            i = rng.randrange(len(base) - 3)
            yield base[:i] + bytes([rng.choice(b" \t\r\n:\x00\x7f\x80\xff,;\"=/aZ0")]) + base[i:]
        elif op == 2:  # one byte dropped
            i = rng.randrange(len(base) - 4)
            yield base[:i] + base[i + 1:]
        elif op == 3:  # a line doubled
            k = rng.randrange(len(lines))
            ls = lines[:k + 1] + lines[k:]
            yield b"\r\n".join(ls) + b"\r\n\r\n"
        elif op == 4:  # a line dropped
            k = rng.randrange(len(lines))
            yield b"\r\n".join(lines[:k] + lines[k + 1:]) + b"\r\n\r\n"
        elif op == 5:  # a name's case changed
            k = rng.randrange(1, len(lines)) if len(lines) > 1 else 0
            ls = list(lines)
            ls[k] = bytes(c ^ 0x20 if 65 <= c <= 90 or 97 <= c <= 122 else c for c in ls[k].partition(b":")[0]) + \
                b"".join(ls[k].partition(b":")[1:])
            yield b"\r\n".join(ls) + b"\r\n\r\n"
        elif op == 6:  # a framing field added
            extra = rng.choice([b"Content-Length: 5", b"Content-Length: 5, 5", b"Content-Length: 05",
                                b"Content-Length: +5", b"Transfer-Encoding: chunked", b"Transfer-Encoding: Chunked",
                                b"Transfer-Encoding: gzip, chunked", b"transfer-encoding : chunked",
                                b"Content-Length: 99999999999999999999", b"Content-Length: 123456789012345678901",
                                b"Host: other", b"Connection: close", b"Expect: 100-continue", b"Upgrade: h2c",
                                b"Connection: upgrade", b"Keep-Alive: 5", b"TE: trailers", b" folded", b"\tfolded",
                                b"X-A\x00: b", b"X: a\rb", b"X:a", b"X:", b"X", b":v", b"X-\xff: 1"])
            k = rng.randrange(1, len(lines) + 1)
            yield b"\r\n".join(lines[:k] + [extra] + lines[k:]) + b"\r\n\r\n"
        elif op == 7:  # line ends changed
            yield base.replace(b"\r\n", rng.choice([b"\n", b"\r", b"\r\r\n", b"\n\r"]), rng.randrange(1, 4))
        elif op == 8:  # the start line's spacing or version changed
            first = lines[0]
            alt = rng.choice([first.replace(b" ", b"  ", 1), first.replace(b" ", b"\t", 1), first + b" ",
                              first.replace(b"HTTP/1.1", b"HTTP/2.0"), first.replace(b"HTTP/1.1", b"HTTP/1.10"),
                              first.replace(b"HTTP/1.1", b"http/1.1"), first.replace(b"1.1", b"1.0"),
                              first.replace(b"/", b"/\x80", 1), first.replace(b" ", b"", 1), b" " + first,
                              first.replace(b"200", b"099"), first.replace(b"200", b"2000"),
                              first.replace(b"OK", b"O\x01K")])
            yield b"\r\n".join([alt] + lines[1:]) + b"\r\n\r\n"
        elif op == 9:  # leading or trailing bytes
            yield rng.choice([b"\r\n" + base, base + b"GET / HTTP/1.1\r\n", base[:-2]])
        elif op == 10:  # many fields
            k = rng.choice([2, 100, 101, 127, 128, 129, 200])
            yield b"\r\n".join(lines + [b"X-%d: v" % i for i in range(k)]) + b"\r\n\r\n"
        else:  # a value with odd bytes
            k = rng.randrange(1, len(lines)) if len(lines) > 1 else 0
            ls = list(lines)
            ls[k] += rng.choice([b" \xe9t\xe9", b"\t", b" ", b"\x7f", b"\x0b", b"\x0c", b"\x1b[0m", b"\xff\xfe"])
            yield b"\r\n".join(ls) + b"\r\n\r\n"


def case_heads() -> list[bytes]:
    """Every head in the byte vectors of tests/cases (client streams and origin answers),
    cut at each end of head."""
    from tests.cases import test_reported_cases, test_rfc_requests, test_rfc_responses

    blobs = []

    def add(x):
        if isinstance(x, (bytes, bytearray)):
            blobs.append(bytes(x))
        elif isinstance(x, (list, tuple)):
            for y in x:
                add(y)

    for mod in (test_reported_cases, test_rfc_requests, test_rfc_responses):
        for value in vars(mod).values():
            items = value if isinstance(value, list) else [value]
            for case in items:
                if hasattr(case, "client") and hasattr(case, "origin"):
                    add(case.client)
                    add(case.origin)
    out = []
    for blob in blobs:
        pos = 0
        while pos < len(blob):
            end = h1.find_head_end(blob, pos)
            if end < 0:
                break
            out.append(blob[pos:end])
            pos = end
    return out


def corpus(n_mutations: int = 1500, seed: int = 24) -> list[bytes]:
    rng = random.Random(seed)
    heads = list(REQUESTS) + list(RESPONSES) + case_heads()
    for base in REQUESTS + RESPONSES:
        heads += list(mutations(base, rng, n_mutations))
    return [h for h in (cut(x) if h1.find_head_end(x) != len(x) else x for x in heads) if h]


# --- the differential tests ------------------------------------------------------------------


def test_the_index_constants_are_the_engines():
    lib = binding.lib
    assert (h1.INDEX_OK, h1.INDEX_REFUSE, h1.INDEX_UNSURE) == (lib.SPL_H1_OK, lib.SPL_H1_REFUSE, lib.SPL_H1_UNSURE)
    assert (h1.INDEX_REQUEST, h1.INDEX_RESPONSE) == (lib.SPL_H1_REQUEST, lib.SPL_H1_RESPONSE)
    assert (h1.F_HOST, h1.F_CONTENT_LENGTH, h1.F_TRANSFER_ENCODING, h1.F_CONNECTION, h1.F_EXPECT, h1.F_UPGRADE,
            h1.F_HOP) == (lib.SPL_H1_F_HOST, lib.SPL_H1_F_CONTENT_LENGTH, lib.SPL_H1_F_TRANSFER_ENCODING,
                          lib.SPL_H1_F_CONNECTION, lib.SPL_H1_F_EXPECT, lib.SPL_H1_F_UPGRADE, lib.SPL_H1_F_HOP)
    assert h1.F_ALL == 127 and h1.F_PLAIN == lib.SPL_H1_F_PLAIN
    assert (h1.F_HOST_OK, h1.F_CONN_KEEP_ALIVE, h1.F_CONN_CLOSE) == (
        lib.SPL_H1_F_HOST_OK, lib.SPL_H1_F_CONN_KEEP_ALIVE, lib.SPL_H1_F_CONN_CLOSE)
    assert (h1.INDEX_HDR, h1.FIELD_WORDS) == (lib.SPL_H1_HDR_WORDS, lib.SPL_H1_FIELD_WORDS)
    assert (h1.ID_HOST, h1.ID_CONTENT_LENGTH, h1.ID_TRANSFER_ENCODING, h1.ID_CONNECTION, h1.ID_EXPECT,
            h1.ID_UPGRADE) == (lib.SPL_H1_ID_HOST, lib.SPL_H1_ID_CONTENT_LENGTH, lib.SPL_H1_ID_TRANSFER_ENCODING,
                               lib.SPL_H1_ID_CONNECTION, lib.SPL_H1_ID_EXPECT, lib.SPL_H1_ID_UPGRADE)
    assert h1.HOP_IDS == {getattr(lib, "SPL_H1_ID_" + n.decode().upper().replace("-", "_")) for n in HOP_BY_HOP}


def test_tokenizer_agrees_with_h11_on_every_head_of_the_corpus():
    stats = {"heads": 0, "ok": 0, "refuse": 0, "unsure": 0, "ranges": 0}
    bad = []
    for head in corpus():
        for d in compare(head, stats):
            bad.append((head, d))
    assert bad == []
    # the corpus holds every kind of verdict, so the comparison is not vacuous
    assert stats["heads"] > 15000 and min(stats["ok"], stats["refuse"], stats["unsure"]) > 1000, stats
    assert stats["ranges"] > 10000, stats  # heads forwarded by their byte ranges, compared
    assert stats["relayed"] > 2000, stats  # response heads the engine relays, compared


def test_tokenizer_is_certain_of_every_real_head():
    """The fast road is the one real traffic takes: each real head is OK, not UNSURE."""
    for head in REQUESTS + RESPONSES:
        assert binding.h1_index(head)[0] == OK, head


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(property_heads())
def test_tokenizer_agrees_with_h11_on_property_heads(head):
    head = cut(head) or head
    assert compare(head) == []


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from([b"GET", b" ", b"/", b"HTTP/1.1", b"HTTP/1.0", b"HTTP/", b"1.1", b"200", b"OK",
                                 b"\r\n", b"\n", b"\r", b":", b"Host", b"Content-Length", b"Transfer-Encoding",
                                 b"chunked", b"5", b"\t", b"x", b"\x00", b"\x80", b",", b"Connection", b"close"]),
                min_size=1, max_size=30))
def test_tokenizer_agrees_with_h11_on_token_soup(parts):
    head = b"".join(parts) + b"\r\n\r\n"
    head = cut(head) or head
    assert compare(head) == []


# --- the index itself -------------------------------------------------------------------------


def test_request_index_gives_exact_spans_and_flags():
    head = b"POST /a?b HTTP/1.1\r\nHost: h\r\nContent-Length:  12 \r\nX-A:\r\nConnection: close\r\n\r\n"
    ix = binding.h1_index(head)
    # (the value verdicts too: a Host the grammar takes, a Connection of just "close")
    assert ix[:4] == [OK, binding.lib.SPL_H1_REQUEST, 4,
                      h1.F_HOST | h1.F_CONTENT_LENGTH | h1.F_CONNECTION | h1.F_HOST_OK | h1.F_CONN_CLOSE]
    assert head[:ix[4]] == b"POST" and head[ix[5]:ix[6]] == b"/a?b" and head[ix[7]:ix[7] + 3] == b"1.1"
    spans = [(head[ix[8 + 5 * i]:ix[9 + 5 * i]], head[ix[10 + 5 * i]:ix[11 + 5 * i]], ix[12 + 5 * i])
             for i in range(4)]
    assert spans == [(b"Host", b"h", 1), (b"Content-Length", b"12", 2), (b"X-A", b"", 0), (b"Connection", b"close", 4)]
    assert len(ix) == 8 + 5 * 4


@pytest.mark.parametrize("host, ok", [
    (b"www.example.com", True), (b"www.example.com:8080", True), (b"[2001:db8::1]:80", True), (b"", True),
    (b"a-b_c~d%20!$&'()*+;=", True), (b":80", True), (b"a:", True),
    (b"a b", False), (b"a:8x", False), (b"[::1", False), (b"[]", False), (b"a\"b", False), (b"caf\xc3\xa9", False),
    (b"[::1]x", False), (b"a@b", False), (b"a/b", False)])
def test_the_host_verdict_is_the_grammars(host, ok):
    """SPL_H1_F_HOST_OK only where h1._HOST takes the value (unset: Python's check decides)."""
    ix = binding.h1_index(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    assert ix[0] == OK and bool(ix[3] & h1.F_HOST_OK) is ok
    assert bool(h1._HOST.fullmatch(host)) is ok


@pytest.mark.parametrize("fields, flag", [
    (b"Connection: keep-alive\r\n", h1.F_CONN_KEEP_ALIVE), (b"Connection: KEEP-ALIVE\r\n", h1.F_CONN_KEEP_ALIVE),
    (b"Connection: Close\r\n", h1.F_CONN_CLOSE), (b"Connection: close, te\r\n", 0),
    (b"Connection: close\r\nConnection: close\r\n", 0), (b"Connection: keep-alive2\r\n", 0), (b"", 0)])
def test_the_connection_verdict_is_one_field_of_one_option(fields, flag):
    ix = binding.h1_index(b"GET / HTTP/1.1\r\nHost: a\r\n" + fields + b"\r\n")
    assert ix[3] & (h1.F_CONN_KEEP_ALIVE | h1.F_CONN_CLOSE) == flag


def test_response_index_gives_exact_spans():
    head = b"HTTP/1.0 404 Not  Found\r\nKeep-Alive: 5\r\n\r\n"
    ix = binding.h1_index(head)
    assert ix[:4] == [OK, binding.lib.SPL_H1_RESPONSE, 1, h1.F_HOP | h1.F_PLAIN]
    assert head[ix[4]:ix[4] + 3] == b"1.0" and ix[5] == 404 and head[ix[6]:ix[7]] == b"Not  Found"


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",           # bare LF
    b"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",           # bare CR
    b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",      # obs-fold
    b"GET / HTTP/1.1\r\nHost: a\r\n\tfolded\r\n\r\n",     # obs-fold with HTAB
    b"GET / HTTP/1.1\r\nHost: a\x00\r\n\r\n",              # NUL
    b"GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n",              # DEL
    b"HTTP/1.1 200 OK\x01\r\n\r\n",                        # a control character in a reason
])
def test_strict_violations_are_refused_with_certainty(head):
    assert binding.h1_index(head) == [REFUSE, 0, 0, 0, 0, 0, 0, 0]
    assert compare(head) == []


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.1\r\n\r\n",                                          # no Host in 1.1
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",                    # two Hosts
    b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",                               # a version h11 reads, 505
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n",      # a list h11 rewrites
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n",  # a value h11 lowers
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",                              # space before the colon
    b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n",
    b"HTTP/1.1 099 Low\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET",                # bytes behind the head
    b"GET / HTTP/1.1\r\nHost: a\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(128)) + b"\r\n",
])
def test_heads_left_to_h11(head):
    assert binding.h1_index(head)[0] == UNSURE
    assert compare(head) == []


def test_parse_request_takes_the_index_and_skips_h11(monkeypatch):
    """With an OK index, no h11 reader runs; the RequestHead is the reference's."""
    head = REQUESTS[0]
    ref = h1._parse_request(head)

    def boom(*a):
        raise AssertionError("h11 called")

    monkeypatch.setattr(h1, "_request_event", boom)
    assert h1.parse_request(head, 101, binding.h1_index(head)) == ref


def main() -> int:
    stats = {"heads": 0, "ok": 0, "refuse": 0, "unsure": 0, "ranges": 0}
    bad = 0
    for head in corpus():
        d = compare(head, stats)
        bad += len(d)
        for x in d:
            print(repr(head), x)
    print(f"heads compared: {stats['heads']} (tokenizer OK {stats['ok']}, REFUSE {stats['refuse']}, "
          f"UNSURE {stats['unsure']}); heads forwarded by byte ranges compared: {stats['ranges']}; "
          f"disagreements: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
