"""Hostile tests of http-request / http-response header rules and retry-on / redispatch.

Real `splicer` processes, real origins (threads on 127.0.0.1) and raw-socket clients. Each test
either pins a behaviour that held up under attack, or demonstrates a defect (its docstring says
what was observed and what was expected).
"""
from __future__ import annotations

import re
import socket
import subprocess
import threading
import time

import pytest

from tests.e2e.helpers import (KeepAliveOrigin, ScriptedOrigin, ThreadedServer, exchange, free_port, head_fields, head_values,
                               http_config, read_response,
                               recv_all, splicer_command)

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
UNAVAILABLE = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"





def check(tmp_path, text: str) -> subprocess.CompletedProcess:
    """`splicer -c FILE --check` on `text`."""
    cfg = tmp_path / "check.cfg"
    cfg.write_bytes(text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)
    return subprocess.run(splicer_command() + ["-c", str(cfg), "--check"], capture_output=True,
                          text=True, timeout=20)


def minimal_cfg(frontend: str = "", backend: str = "", mode: str = "http") -> str:
    return ("defaults\n"                       # 1
            f"    mode {mode}\n"               # 2
            "    timeout connect 1s\n"         # 3
            "    timeout client 1s\n"          # 4
            "    timeout server 1s\n"          # 5
            "frontend f\n"                     # 6
            "    bind 127.0.0.1:1\n"           # 7
            "    default_backend b\n"          # 8
            f"{frontend}"                      # 9...
            "backend b\n"
            f"{backend}"
            "    server s 127.0.0.1:2\n")


class BodyOrigin(ThreadedServer):
    """Reads each request with its body (Content-Length or chunked) and answers `answer(n)`
    for the n-th connection (1-based); records (request line, body)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.seen: list[tuple[bytes, bytes]] = []
        self.n = 0
        self.lock = threading.Lock()
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        with self.lock:
            self.n += 1
            n = self.n
        c.settimeout(3)
        buf = b""
        try:
            while b"\r\n\r\n" not in buf:
                chunk = c.recv(65536)
                if not chunk:
                    return
                buf += chunk
            head, _, body = buf.partition(b"\r\n\r\n")
            m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            if b"chunked" in head.lower():
                while not body.endswith(b"0\r\n\r\n"):
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    body += chunk
            else:
                while m and len(body) < int(m.group(1)):
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    body += chunk
            self.seen.append((head.split(b"\r\n")[0], body))
            c.sendall(self.answer(n))
        except OSError:
            pass
        finally:
            c.close()


# == defects ==================================================================================

def test_req_hdr_in_http_response_rules_reads_the_request(start_splicer, tmp_path):
    """DEFECT. docs/configuration.md (http-response): "In addition to the request samples,
    %[status] and res.hdr(...) can be used", so %[req.hdr(x)] in an http-response rule is
    accepted. But rules.py evaluates it on the *response* fields: the origin can forge the
    value (observed `X-Req-Client: from-origin`, `X-Req-Host: ` empty) instead of the
    request's (`abc`, `shop`). haproxy refuses req.hdr where request headers are not
    available; either a load-time refusal or the request's value is acceptable here."""
    frontend = ("    http-response set-header X-Req-Client %[req.hdr(x-client)]\n"
                "    http-response set-header X-Req-Host %[req.hdr(host)]\n")
    r = check(tmp_path, minimal_cfg(frontend=frontend))
    if r.returncode != 0:
        assert re.search(r"check\.cfg:9: .*req\.hdr", r.stderr), r.stderr
        return
    origin = ScriptedOrigin(lambda c: c.sendall(
        b"HTTP/1.1 200 OK\r\nX-Client: from-origin\r\nContent-Length: 2\r\n\r\nok"))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)], extra_frontend=frontend), [port])
    try:
        resp = exchange(port, b"GET /p HTTP/1.1\r\nHost: shop\r\nX-Client: abc\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 200 OK")
        assert head_values(resp, b"x-req-client") == [b"abc"], resp
        assert head_values(resp, b"x-req-host") == [b"shop"], resp
    finally:
        origin.close()


def test_no_retry_on_status_after_a_1xx_from_a_dead_reused_connection(start_splicer):
    """DEFECT. retry-on docs: a request is sent again only if "no byte of any response, not
    even a 1xx, has gone to the client". Sequence: GET /1 is served on a kept-alive server
    connection; GET /2 is sent on that reused connection, which answers 103 and closes.
    session._response_head returns _RETRY (reused connection, empty head) without looking at
    _interim_sent, and _relay_response then resets _interim_sent, so the next 503 is retried too.
    Observed: client gets `103 Early Hints` then `200 OK` (3rd attempt), origin sees GET /2
    three times, wretr == 1. Expected: no retry-on after the 103 (wretr == 0), GET /2 sent at
    most twice, the client never gets the 200 of a third attempt."""
    def script(conn_no, req_no, head):
        if conn_no == 1:
            return (OK, False) if req_no == 0 else (EARLY_HINTS, True)
        if conn_no == 2:
            return UNAVAILABLE, True
        return OK, True

    origin = KeepAliveOrigin(script)
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)], extra_backend="    retry-on 503\n"), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\n")
        head, body = read_response(s)
        assert head.startswith(b"HTTP/1.1 200 OK") and body == b"ok"
        time.sleep(0.1)  # the server connection is back in the idle pool
        s.sendall(b"GET /2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        resp = recv_all(s)
        s.close()
        assert resp.startswith(b"HTTP/1.1 103 Early Hints\r\n")
        sent = [h for _, _, h in origin.requests if h.startswith(b"GET /2 ")]
        be = sp.stats()["backends"]["farm"]
        assert be["wretr"] == 0, (be["wretr"], resp)
        assert len(sent) <= 2, (len(sent), resp)
        assert b"HTTP/1.1 200 OK" not in resp
    finally:
        origin.close()


def test_server_maxconn_holds_across_a_connect_retry_turnaround(start_splicer):
    """DEFECT. backend.acquire: after a failed connect (no redispatch) the slot is dropped,
    the request sleeps min(timeout connect, 1 s), then `take_conn(i)` takes the slot again
    without checking maxconn, so a request that got the free slot meanwhile is not counted.
    Observed: two connections open at once on a `maxconn 1` server. Expected: at most one;
    the retrying request waits in the queue (timeout queue 3s) and then gets its 200."""
    oport = free_port()
    port = free_port()
    cfg = http_config(port, [("o", oport)], server_opts="maxconn 1",
                      extra_backend="    retries 1\n    timeout queue 3s\n")
    sp = start_splicer(cfg.replace("timeout connect 2s", "timeout connect 600ms"), [port])
    lock = threading.Lock()
    state = {"cur": 0, "peak": 0}

    def hold(c):
        with lock:
            state["cur"] += 1
            state["peak"] = max(state["peak"], state["cur"])
        time.sleep(0.8)
        with lock:
            state["cur"] -= 1
        c.sendall(OK)

    results = {}

    def client(name: str) -> None:
        results[name] = exchange(port, b"GET /%s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                                 % name.encode(), timeout=8)

    a = threading.Thread(target=client, args=("a",))
    a.start()  # its connect is refused: slot dropped, 600 ms turnaround
    deadline = time.monotonic() + 5
    while "connect failed" not in sp.log():
        assert time.monotonic() < deadline, sp.log()
        time.sleep(0.01)
    origin = ScriptedOrigin.__new__(ScriptedOrigin)  # the origin comes up on the port now
    origin.script, origin.requests, origin.port = hold, [], oport
    origin.lsock = socket.create_server(("127.0.0.1", oport))
    threading.Thread(target=origin._serve, daemon=True).start()
    try:
        b = threading.Thread(target=client, args=("b",))
        b.start()  # takes the free slot, held 800 ms: still held when a's turnaround ends
        a.join(10)
        b.join(10)
        assert results["a"].startswith(b"HTTP/1.1 200 OK")
        assert results["b"].startswith(b"HTTP/1.1 200 OK")
        assert state["peak"] == 1, f"{state['peak']} concurrent connections on a maxconn 1 server"
    finally:
        origin.close()


def test_wredis_counts_only_retries_that_went_to_another_server(start_splicer):
    """DEFECT. docs (retry-on): wredis counts "the retries that went to another server".
    With a single server, retry-on 503 and option redispatch every retry goes to the same
    server, yet session._forward increments wredis on every retry-on retry whenever redispatch
    is set (backend.acquire, for connect failures, counts only when the server changed).
    Observed: wretr == 2, wredis == 2. Expected: wredis == 0."""
    origin = ScriptedOrigin(lambda c: c.sendall(UNAVAILABLE))
    port = free_port()
    sp = start_splicer(http_config(port, [("only", origin.port)], extra_backend=(
        "    retries 2\n    retry-on 503\n    option redispatch\n")), [port])
    try:
        resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 503 Service Unavailable") and resp.endswith(b"busy")
        assert len(origin.requests) == 3
        be = sp.stats()["backends"]["farm"]
        assert be["wretr"] == 2
        assert be["wredis"] == 0, be["wredis"]
        assert be["servers"]["only"]["wredis"] == 0
    finally:
        origin.close()


@pytest.mark.parametrize("frontend, backend, line", [
    ("    http-request set-header X-Forwarded-Proto http\n", "", 9),
    ("", "    http-response del-header Server\n", 10),
], ids=["http-request", "http-response"])
def test_header_rules_in_mode_tcp_are_not_silently_ignored(tmp_path, frontend, backend, line):
    """DEFECT. In `mode tcp` header rules cannot run, yet `--check` says "valid" with no
    warning at all (observed: rc 0, empty stderr), while `option forwardfor` in the same place
    gets "file:line: ... is ignored in mode tcp". haproxy warns "'http-request' rules ignored
    for frontend 'x' as they require HTTP mode". Expected: a warning or error naming the line."""
    r = check(tmp_path, minimal_cfg(frontend=frontend, backend=backend, mode="tcp"))
    assert f"check.cfg:{line}:" in r.stderr, (r.returncode, r.stdout, r.stderr)


def test_double_percent_is_a_literal_percent(start_splicer, tmp_path):
    """DEFECT (haproxy compatibility). haproxy's log-format: "To emit a verbatim %, it must be
    preceded by another % to result in %%". splicer refuses `"50%%"` with "a '%' must start a
    sample ('%[fetch]') or a variable", so no rule can emit a literal '%' at all.
    Expected: the config is valid and the field is `X-Off: 50%`."""
    frontend = '    http-response set-header X-Off "50%%"\n'
    r = check(tmp_path, minimal_cfg(frontend=frontend))
    assert r.returncode == 0, r.stderr
    origin = ScriptedOrigin(lambda c: c.sendall(OK))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)], extra_frontend=frontend), [port])
    try:
        resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert head_values(resp, b"x-off") == [b"50%"]
    finally:
        origin.close()


def test_del_header_match_method_gets_its_own_reason(tmp_path):
    """DEFECT (minor, message quality). haproxy's syntax is `del-header <name> [-m <meth>]`.
    rules.parse_rule looks for `-m` only right after the action, so haproxy's real form
    `del-header X-Debug -m beg` gets "expects exactly 1 argument(s): del-header <name> (quote a
    value that holds spaces)", a misleading hint. Expected: "... del-header -m' is not supported"."""
    r = check(tmp_path, minimal_cfg(frontend="    http-request del-header X-Debug -m beg\n"))
    assert r.returncode == 1
    assert "check.cfg:9: 'http-request del-header -m' is not supported" in r.stderr, r.stderr


# == what held up =============================================================================

def test_client_field_values_are_copied_verbatim_and_cannot_add_lines(start_splicer):
    """obs-text, HTAB, empty values, a missing Host (HTTP/1.0) and percent-encoded CRLF in the
    target reach the origin through %[req.hdr()] / %[url] byte for byte, on one line each; a
    header line whitespace trick or a duplicate Host is refused (400) before any rule runs."""
    origin = ScriptedOrigin(lambda c: c.sendall(OK))
    port = free_port()
    frontend = ("    http-request set-header X-Forwarded-Proto http\n"
                "    http-request set-header X-Forwarded-Host %[req.hdr(host)]\n"
                "    http-request set-header X-Copy %[req.hdr(x-a)]\n"
                "    http-request set-header X-Url %[url]\n")
    start_splicer(http_config(port, [("o", origin.port)], extra_frontend=frontend), [port])
    try:
        cases = [
            (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: \x80\xff\xfe\r\nConnection: close\r\n\r\n", b"\x80\xff\xfe", b"a"),
            (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\tb\r\nConnection: close\r\n\r\n", b"a\tb", b"a"),
            (b"GET / HTTP/1.1\r\nHost:\r\nX-A:\r\nConnection: close\r\n\r\n", b"", b""),
            (b"GET / HTTP/1.0\r\nX-A: " + b"v" * 6000 + b"\r\n\r\n", b"v" * 6000, b""),
        ]
        for request, copy, host in cases:
            before = len(origin.requests)
            assert exchange(port, request).startswith(b"HTTP/1.1 200 OK")
            head = origin.requests[before]
            assert head_values(head, b"x-copy") == [copy]
            assert head_values(head, b"x-forwarded-host") == [host]
            assert head_values(head, b"host") == [host]
            assert head_values(head, b"x-forwarded-proto") == [b"http"]
            assert len(head_fields(head)) == len(set(n for n, _ in head_fields(head)))  # one line each
        before = len(origin.requests)
        resp = exchange(port, b"GET /a%0d%0aX-Injected:%20y HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 200 OK")
        head = origin.requests[before]
        assert head_values(head, b"x-url") == [b"/a%0d%0aX-Injected:%20y"] and not head_values(head, b"x-injected")
        for bad in (b"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-Proto : https\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\rX-Injected: 1\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\r\n X-Injected: 1\r\n\r\n"):
            before = len(origin.requests)
            assert exchange(port, bad).startswith(b"HTTP/1.1 400 ")
            assert len(origin.requests) == before
    finally:
        origin.close()


def test_response_rules_never_touch_splicer_error_pages(start_splicer):
    """502 (junk), 504 (timeout server) and 503 (server unreachable) pages come out without
    the http-response fields, while a real response gets them."""
    def script(c):
        path = origin.requests[-1].split(b" ")[1]
        if path == b"/junk":
            c.sendall(b"SSH-2.0-x\r\n\r\n")
        elif path == b"/slow":
            time.sleep(0.6)
        else:
            c.sendall(OK)

    origin = ScriptedOrigin(script)
    dead = free_port()
    port = free_port()
    frontend = "    http-response set-header X-Rule fe\n"
    backend = "    http-response add-header X-Rule be\n"
    cfg = http_config(port, [("o", origin.port)], extra_frontend=frontend, extra_backend=backend)
    cfg = cfg.replace("timeout server 30s", "timeout server 300ms")
    port2 = free_port()
    cfg += f"""
frontend www2
    bind 127.0.0.1:{port2}
    default_backend deadfarm
    http-response set-header X-Rule fe2

backend deadfarm
    retries 0
    http-response set-header X-Rule be2
    server d 127.0.0.1:{dead}
"""
    start_splicer(cfg, [port, port2])
    try:
        good = exchange(port, b"GET /ok HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert head_values(good, b"x-rule") == [b"fe"]  # backend's add-header, then frontend's set-header
        for p, path, status in ((port, b"/junk", b"502"), (port, b"/slow", b"504"), (port2, b"/x", b"503")):
            resp = exchange(p, b"GET %s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" % path)
            assert resp.startswith(b"HTTP/1.1 " + status), resp[:40]
            assert head_values(resp, b"x-rule") == []
    finally:
        origin.close()


def test_response_rules_keep_framing_of_head_204_304_chunked_and_101(start_splicer):
    """Response rules on HEAD, 204, 304, chunked (also de-chunked to a 1.0 client), a 1xx
    (left alone, as documented) and a 101 tunnel: framing and tunnel bytes are untouched."""
    answers = {
        b"/head": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nServer: x\r\n\r\n",
        b"/204": b"HTTP/1.1 204 No Content\r\nServer: x\r\n\r\n",
        b"/304": b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\nServer: x\r\n\r\n",
        b"/chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nServer: x\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"/1xx": EARLY_HINTS + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nServer: x\r\n\r\nok",
        b"/ws": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Server: x\r\n\r\nTUNNEL",
    }

    def script(c):
        c.sendall(answers[origin.requests[-1].split(b" ")[1]])
        if origin.requests[-1].startswith(b"GET /ws "):
            c.settimeout(2)
            c.sendall(c.recv(100))  # echo what the client sends through the tunnel

    origin = ScriptedOrigin(script)
    port = free_port()
    frontend = ("    http-response del-header Server\n"
                "    http-response set-header X-St %[status]\n")
    start_splicer(http_config(port, [("o", origin.port)], extra_frontend=frontend), [port])
    try:
        r = exchange(port, b"HEAD /head HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert r == b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nX-St: 200\r\nConnection: close\r\n\r\n"
        r = exchange(port, b"GET /204 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert r == b"HTTP/1.1 204 No Content\r\nX-St: 204\r\nConnection: close\r\n\r\n"
        r = exchange(port, b"GET /304 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert r == b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\nX-St: 304\r\nConnection: close\r\n\r\n"
        r = exchange(port, b"GET /chunk HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert r == (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-St: 200\r\nConnection: close\r\n\r\n"
                     b"3\r\nabc\r\n0\r\n\r\n")
        r = exchange(port, b"GET /chunk HTTP/1.0\r\n\r\n")
        assert r == b"HTTP/1.1 200 OK\r\nX-St: 200\r\nConnection: close\r\n\r\nabc"
        r = exchange(port, b"GET /1xx HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert r.startswith(EARLY_HINTS)
        assert r.endswith(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-St: 200\r\nConnection: close\r\n\r\nok")
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        got = b""
        while b"TUNNEL" not in got:
            chunk = s.recv(4096)
            assert chunk
            got += chunk
        assert got == (b"HTTP/1.1 101 Switching Protocols\r\nX-St: 101\r\nConnection: upgrade\r\n"
                       b"Upgrade: websocket\r\n\r\nTUNNEL")
        s.sendall(b"ping")
        assert s.recv(100) == b"ping"
        s.close()
    finally:
        origin.close()


def test_only_a_wholly_buffered_idempotent_request_is_replayed(start_splicer):
    """With option http-buffer-request and retry-on all-retryable-errors 503: a PUT (and a GET)
    whose body was buffered whole is sent again with its body; POST, PATCH, a chunked DELETE /
    PUT are sent once and their 503 relayed, whatever retry-on says."""
    origin = BodyOrigin(lambda n: UNAVAILABLE if n % 2 else OK)
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)],
                              extra_backend="    retry-on all-retryable-errors 503\n    retries 3\n",
                              extra_frontend="    option http-buffer-request\n"), [port])
    try:
        cases = [
            (b"PUT /put HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", 2, b"hello"),
            (b"GET /get HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", 2, b"hello"),
            (b"POST /post HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", 1, b"hello"),
            (b"PATCH /patch HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", 1, b"hello"),
            (b"DELETE /del HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
             b"5\r\nhello\r\n0\r\n\r\n", 1, b"5\r\nhello\r\n0\r\n\r\n"),
            (b"PUT /putc HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
             b"5\r\nhello\r\n0\r\n\r\n", 1, b"5\r\nhello\r\n0\r\n\r\n"),
        ]
        for request, times, body in cases:
            origin.seen.clear()
            origin.n = 0
            resp = exchange(port, request)
            assert [b for _, b in origin.seen] == [body] * times, (request[:20], origin.seen)
            assert resp.startswith(b"HTTP/1.1 200 OK" if times == 2 else b"HTTP/1.1 503 "), resp[:40]
    finally:
        origin.close()


def test_upgrade_request_is_never_replayed(start_splicer):
    origin = ScriptedOrigin(lambda c: c.sendall(UNAVAILABLE))
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)], extra_backend="    retry-on 503\n"), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        head, body = read_response(s)
        s.close()
        assert head.startswith(b"HTTP/1.1 503 Service Unavailable") and body == b"busy"
        assert len(origin.requests) == 1
    finally:
        origin.close()


@pytest.mark.parametrize("behaviour", ["503", "close", "hang"])
def test_retry_storm_leaks_no_server_slot(start_splicer, behaviour):
    """4 concurrent GETs on a maxconn 1 server that always 503s / closes at once / never
    answers (timeout server 100ms), retries 2 with redispatch: each request makes exactly 3
    attempts, gets its 503/502/504, and the slot is free afterwards (a good answer follows)."""
    mode = {"m": behaviour}

    def script(c):
        if mode["m"] == "503":
            c.sendall(UNAVAILABLE)
        elif mode["m"] == "hang":
            time.sleep(0.3)
        elif mode["m"] == "ok":
            c.sendall(OK)

    origin = ScriptedOrigin(script)
    port = free_port()
    cfg = http_config(port, [("o", origin.port)], server_opts="maxconn 1", extra_backend=(
        "    retries 2\n    retry-on all-retryable-errors\n    option redispatch\n    timeout queue 10s\n"))
    sp = start_splicer(cfg.replace("timeout server 30s", "timeout server 100ms"), [port])
    try:
        results: list[bytes] = []
        clients = [threading.Thread(target=lambda: results.append(exchange(port, (
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"), timeout=10)[:12])) for _ in range(4)]
        for t in clients:
            t.start()
        for t in clients:
            t.join(15)
        want = {"503": b"HTTP/1.1 503", "close": b"HTTP/1.1 502", "hang": b"HTTP/1.1 504"}[behaviour]
        assert results == [want] * 4
        assert len(origin.requests) == 4 * 3
        mode["m"] = "ok"
        assert exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").startswith(b"HTTP/1.1 200 OK")
        be = sp.stats()["backends"]["farm"]
        assert be["wretr"] == 4 * 2
    finally:
        origin.close()


def test_retries_bound_connect_failures_and_statuses_together(start_splicer):
    """A dead server and a 503 server, retries 2, retry-on conn-failure 503, redispatch: every
    request makes exactly 3 attempts (connects that failed + requests the origin saw)."""
    origin = ScriptedOrigin(lambda c: c.sendall(UNAVAILABLE))
    dead = free_port()
    port = free_port()
    cfg = http_config(port, [("dead", dead), ("o", origin.port)], extra_backend=(
        "    retries 2\n    retry-on conn-failure 503\n    option redispatch\n"))
    sp = start_splicer(cfg.replace("timeout connect 2s", "timeout connect 100ms"), [port])
    try:
        for _ in range(4):
            resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            assert resp.startswith(b"HTTP/1.1 503 ")
        be = sp.stats()["backends"]["farm"]
        assert be["econ"] + len(origin.requests) == 4 * 3
        assert be["wretr"] == 4 * 2
    finally:
        origin.close()


def test_redispatch_with_every_server_down_answers_503_quickly(start_splicer):
    port = free_port()
    cfg = http_config(port, [("d1", free_port()), ("d2", free_port())],
                      extra_backend="    retries 5\n    option redispatch\n")
    sp = start_splicer(cfg.replace("timeout connect 2s", "timeout connect 100ms"), [port])
    t0 = time.monotonic()
    resp = exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    assert resp.startswith(b"HTTP/1.1 503 ")
    assert time.monotonic() - t0 < 1.0  # alternating servers: no turnaround sleep
    be = sp.stats()["backends"]["farm"]
    assert be["econ"] == 6 and be["wretr"] == 5


def test_pipelined_requests_with_retries_keep_their_order(start_splicer):
    """Three pipelined requests, each first answered 503 (then retried on a new connection):
    each response matches its request, rules see each request's own URL."""
    count = {"n": 0}

    def script(conn_no, req_no, head):
        count["n"] += 1
        if count["n"] % 2:
            return UNAVAILABLE, True
        path = head.split(b" ")[1]
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(path), path), False

    origin = KeepAliveOrigin(script)
    port = free_port()
    start_splicer(http_config(port, [("o", origin.port)], extra_backend="    retry-on 503\n",
                              extra_frontend="    http-request set-header X-Url %[url]\n"), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /22 HTTP/1.1\r\nHost: a\r\n\r\n"
                  b"GET /333 HTTP/1.1\r\nHost: a\r\n\r\n")
        bodies = [read_response(s)[1] for _ in range(3)]
        s.close()
        assert bodies == [b"/1", b"/22", b"/333"]
        for _, _, head in origin.requests:
            assert head_values(head, b"x-url") == [head.split(b" ")[1]]
    finally:
        origin.close()


@pytest.mark.parametrize("rule, reason", [
    ('http-request set-header X "a\\r\\nInjected: 1"', "control characters"),
    ('http-request set-header X "a\\x0aB"', "control characters"),
    ('http-request set-header X "\\x00"', "control characters"),
    ('http-request set-header X "\\x80"', "must be ASCII"),
    ("http-request set-header X caf\u00e9", "must be ASCII"),
    ("http-request set-header X\u00e9 v", "not a valid field name"),
    ("http-request set-header X %[]", "unknown sample fetch ''"),
    ("http-request set-header X %[req.hdr()]", "expected a field name"),
    ("http-request set-header X 100%", "a '%' must start a sample"),
    ("http-request set-header Content-length 1", "cannot be rewritten"),
    ("http-request set-header X-A", "expects exactly 2 argument(s)"),
    ("http-request set-header Host \"\"", "expects exactly 2 argument(s)"),
    ("http-response set-header X %[req.hdr(x),lower]", "converters are not supported"),
], ids=lambda v: v.encode("ascii", "backslashreplace").decode() if isinstance(v, str) else str(v))
def test_bad_rules_give_file_line_reason(tmp_path, rule, reason):
    r = check(tmp_path, minimal_cfg(frontend=f"    {rule}\n"))
    assert r.returncode == 1
    assert re.search(r"check\.cfg:9: .*" + re.escape(reason), r.stderr), r.stderr
    assert "Traceback" not in r.stderr


def test_hundreds_of_rules_load_and_run_in_order(start_splicer):
    origin = ScriptedOrigin(lambda c: c.sendall(OK))
    port = free_port()
    rules = "".join(f"    http-request add-header X-R %[req.hdr(x-r,-1)]{i}\n" for i in range(300))
    start_splicer(http_config(port, [("o", origin.port)], extra_frontend=rules), [port])
    try:
        assert exchange(port, b"GET / HTTP/1.1\r\nHost: a\r\nX-R: s\r\nConnection: close\r\n\r\n"
                        ).startswith(b"HTTP/1.1 200 OK")
        got = head_values(origin.requests[0], b"x-r")
        assert len(got) == 301 and got[0] == b"s"
        assert got[-1] == b"s" + b"".join(b"%d" % i for i in range(300))
    finally:
        origin.close()
