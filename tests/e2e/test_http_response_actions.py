"""http-response set-status / deny / return / redirect / allow on the real proxy (haproxy 4.2
"http-response", 4.4): exact status lines and answers; none of a denied response's body
(1 MiB, spliced) reaches the client, whose connection goes on; the server connection of a
dropped body is closed, never reused; rules run in file order, backend's then frontend's;
the dresp counter and the PH / LH termination states."""
from __future__ import annotations

import socket

from tests.e2e.helpers import (RULES_DEFAULTS, KeepAliveOrigin, exchange, free_port, read_response, recv_all,
                               splicer_command)

BIG = 1 << 20

BAD_GATEWAY = (b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 107\r\ncache-control: no-cache\r\n"
               b"content-type: text/html\r\n\r\n<html><body><h1>502 Bad Gateway</h1>\n"
               b"The server returned an invalid or incomplete response.\n</body></html>\n")


def origin() -> KeepAliveOrigin:
    """Answers by path: /big 200 with X-Secret and a 1 MiB body; /status/<n> status n with
    body "body"; /empty 204; /chunked a chunked 200; /late the head of a 200 whose 4-byte
    body it sends only before its answer to the next request on that connection (a server
    connection kept with a body unread would give that away); else 200 "origin <path>"."""
    late = set()

    def script(c, r, head):
        target = head.split(b" ")[1]
        if target == b"/late":
            late.add(c)
            return b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", False
        if c in late:
            late.discard(c)
            return b"late" + script(c, r, head)[0], False
        if target == b"/big":
            return b"HTTP/1.1 200 OK\r\nX-Secret: 1\r\nContent-Length: %d\r\n\r\n%s" % (BIG, b"s" * BIG), False
        if target.startswith(b"/status/"):
            body = b"" if head.startswith(b"HEAD ") else b"body"
            return b"HTTP/1.1 %s Whatever\r\nContent-Length: 4\r\n\r\n%s" % (target[8:], body), False
        if target == b"/empty":
            return b"HTTP/1.1 204 No Content\r\nX-Empty: 1\r\n\r\n", False
        if target == b"/chunked":
            return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", False
        body = b"origin " + target
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body), False
    return KeepAliveOrigin(script)


def start(start_splicer, frontend: str, backend: str = ""):
    o = origin()
    port = free_port()
    sp = start_splicer(RULES_DEFAULTS + f"""
frontend www
    bind 127.0.0.1:{port}
{frontend}
    default_backend app
backend app
{backend}
    server o 127.0.0.1:{o.port}
""", [port])
    return sp, port, o


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def ask(s: socket.socket, target: bytes, method: bytes = b"GET") -> tuple[bytes, bytes]:
    """One keep-alive request on `s`; its response (head without the blank line, body)."""
    s.sendall(b"%s %s HTTP/1.1\r\nHost: www.example\r\n\r\n" % (method, target))
    return read_response(s)


def ask_raw(s: socket.socket, target: bytes, n: int) -> bytes:
    """One keep-alive request on `s`; exactly the first `n` bytes that come back."""
    s.sendall(b"GET %s HTTP/1.1\r\nHost: www.example\r\n\r\n" % target)
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        assert chunk, f"closed after {got!r}"
        got += chunk
    return got


def ask_last(s: socket.socket, target: bytes) -> bytes:
    """The last request on `s` (Connection: close): everything until the close, which comes
    after the proxy counted the stream (so the counters read next include it)."""
    s.sendall(b"GET %s HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n\r\n" % target)
    return recv_all(s)


def test_set_status_exact_status_line(start_splicer):
    sp, port, o = start(start_splicer, "", """
    http-response set-status 503 reason "Slow Down" if { path /slow }
    http-response set-status 431 if { path /std }
    http-response set-status 299 if { path /odd }
    http-response set-header X-Seen %[status]
""")
    try:
        with connect(port) as s:
            assert ask(s, b"/slow") == (b"HTTP/1.1 503 Slow Down\r\nContent-Length: 12\r\nX-Seen: 503",
                                        b"origin /slow")
            assert ask(s, b"/std") == (b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 11\r\n"
                                       b"X-Seen: 431", b"origin /std")
            assert ask(s, b"/odd") == (b"HTTP/1.1 299 Success\r\nContent-Length: 11\r\nX-Seen: 299", b"origin /odd")
            assert ask_last(s, b"/plain") == (b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nX-Seen: 200\r\n"
                                              b"Connection: close\r\n\r\norigin /plain")
        # the response's status class counts what the client got
        fe = sp.stats()["frontends"]["www"]
        assert (fe["hrsp_2xx"], fe["hrsp_4xx"], fe["hrsp_5xx"], fe["terms"]) == (2, 1, 1, {"--": 4})
        assert {c for c, _, _ in o.requests} == {1}  # one server connection, reused throughout
    finally:
        o.close()


def test_set_status_204_drops_the_body_and_the_server_connection(start_splicer):
    sp, port, o = start(start_splicer, "", """
    http-response set-status 204 if { path /big } || { path /chunked } || { path /late }
    http-response set-status 304 if { path /cached }
    http-response set-status 200 if { path /empty }
""")
    try:
        with connect(port) as s:
            # the next response's first bytes come right after the 204's blank line: no body byte between
            no_content = b"HTTP/1.1 204 No Content\r\nX-Secret: 1\r\n\r\n"
            assert ask_raw(s, b"/big", len(no_content)) == no_content
            assert ask(s, b"/next") == (b"HTTP/1.1 200 OK\r\nContent-Length: 12", b"origin /next")
            no_content = b"HTTP/1.1 204 No Content\r\n\r\n"
            assert ask_raw(s, b"/chunked", len(no_content)) == no_content
            # a 304 keeps the length of the representation it stands for (RFC 9110 section 8.6)
            not_modified = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 14\r\n\r\n"
            assert ask_raw(s, b"/cached", len(not_modified)) == not_modified
            # the server's 204 made a 200: it says its body is empty
            assert ask(s, b"/empty") == (b"HTTP/1.1 200 OK\r\nX-Empty: 1\r\nContent-Length: 0", b"")
            assert ask(s, b"/last") == (b"HTTP/1.1 200 OK\r\nContent-Length: 12", b"origin /last")
            assert ask_raw(s, b"/late", len(no_content)) == no_content
            assert ask(s, b"/final") == (b"HTTP/1.1 200 OK\r\nContent-Length: 13", b"origin /final")
        # each dropped body closed its server connection: the request after it came on a new one
        conns = [(c, h.split(b" ")[1]) for c, _, h in o.requests]
        assert conns == [(1, b"/big"), (2, b"/next"), (2, b"/chunked"), (3, b"/cached"), (4, b"/empty"),
                         (4, b"/last"), (4, b"/late"), (5, b"/final")]
    finally:
        o.close()


def test_deny_drops_a_spliced_1mib_body_and_the_client_goes_on(start_splicer):
    sp, port, o = start(start_splicer, "", """
    option splice-response
    http-response deny if { res.hdr(x-secret) -m found }
""")
    try:
        with connect(port) as s:
            # first a response that goes through, so that /big comes on an idle server
            # connection (the fast path, decided in the engine's completion callback)
            assert ask(s, b"/ok") == (b"HTTP/1.1 200 OK\r\nContent-Length: 10", b"origin /ok")
            for last in (False, True):
                head, body = ask(s, b"/big")
                assert head + b"\r\n\r\n" + body == BAD_GATEWAY
                if not last:
                    assert ask(s, b"/after") == (b"HTTP/1.1 200 OK\r\nContent-Length: 13", b"origin /after")
            assert ask_last(s, b"/after") == (b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close"
                                              b"\r\n\r\norigin /after")
        st = sp.stats()
        fe, be, srv = st["frontends"]["www"], st["backends"]["app"], st["backends"]["app"]["servers"]["o"]
        assert (fe["dresp"], be["dresp"], srv["dresp"]) == (2, 2, 2)
        assert (fe["terms"], be["terms"], srv["terms"]) == ({"--": 3, "PH": 2},) * 3
        assert (fe["eresp"], be["eresp"], fe["dreq"], fe["hrsp_5xx"], fe["hrsp_2xx"]) == (0, 0, 0, 2, 3)
        assert fe["bout"] < BIG  # not one byte of the secret bodies
        conns = [(c, h.split(b" ")[1]) for c, _, h in o.requests]
        assert conns == [(1, b"/ok"), (1, b"/big"), (2, b"/after"), (2, b"/big"), (3, b"/after")]
    finally:
        o.close()


def test_deny_status_and_payload_and_errorfile(start_splicer, tmp_path):
    page = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbad"
    (tmp_path / "502.http").write_bytes(page)
    sp, port, o = start(start_splicer, f"""
    errorfile 502 {tmp_path / '502.http'}
    http-response deny if {{ path /page }}
""", """
    http-response deny deny_status 503 if { status 500 }
    http-response deny deny_status 403 content-type text/plain lf-string "no %[status]" hdr X-Why origin if { status 501 }
""")
    try:
        with connect(port) as s:
            assert ask(s, b"/status/500") == (
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 107\r\ncache-control: no-cache\r\n"
                b"content-type: text/html", b"<html><body><h1>503 Service Unavailable</h1>\n"
                b"No server is available to handle this request.\n</body></html>\n")
            assert ask(s, b"/status/501") == (b"HTTP/1.1 403 Forbidden\r\ncontent-length: 6\r\n"
                                              b"content-type: text/plain\r\nX-Why: origin", b"no 501")
        # the proxy's errorfile is sent as it is, and ends the connection
        assert exchange(port, b"GET /page HTTP/1.1\r\nHost: x\r\n\r\n") == page
    finally:
        o.close()


def test_return_and_redirect_exact_bytes(start_splicer):
    sp, port, o = start(start_splicer, "", """
    http-response return status 200 content-type text/plain lf-string "was %[status]" hdr X-Orig %[res.hdr(content-length)] if { status 404 }
    http-response redirect location /moved code 301 if { status 410 }
    http-response redirect location https://%[req.hdr(host)]%[path]/x if { status 418 }
""")
    try:
        with connect(port) as s:
            assert ask(s, b"/status/404") == (b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\ncontent-type: text/plain"
                                              b"\r\nX-Orig: 4", b"was 404")
            assert ask(s, b"/status/410") == (b"HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\n"
                                              b"location: /moved\r\ncache-control: no-cache", b"")
            assert ask(s, b"/status/418") == (b"HTTP/1.1 302 Found\r\ncontent-length: 0\r\n"
                                              b"location: https://www.example/status/418/x\r\n"
                                              b"cache-control: no-cache", b"")
            assert ask(s, b"/status/200") == (b"HTTP/1.1 200 Whatever\r\nContent-Length: 4", b"body")
        # HTTP/1.0 and close: the answer says what happens to the connection
        assert exchange(port, b"GET /status/410 HTTP/1.0\r\n\r\n") == (
            b"HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\nlocation: /moved\r\n"
            b"cache-control: no-cache\r\nconnection: close\r\n\r\n")
        fe = sp.stats()["frontends"]["www"]
        assert (fe["terms"], fe["intercepted"], fe["dresp"], fe["hrsp_3xx"], fe["hrsp_2xx"]) == (
            {"LH": 4, "--": 1}, 0, 0, 3, 2)
    finally:
        o.close()


def test_allow_stops_only_the_rules_after_it_in_its_section(start_splicer):
    sp, port, o = start(start_splicer, """
    http-response set-header X-Fe seen
    http-response deny if { status 500 }
""", """
    http-response allow if { path_beg /status/4 }
    http-response set-header X-Be seen
    http-response deny if { status 404 }
""")
    try:
        with connect(port) as s:
            # the backend's allow: its deny and set-header skipped, the frontend's rules run
            assert ask(s, b"/status/404") == (b"HTTP/1.1 404 Whatever\r\nContent-Length: 4\r\nX-Fe: seen", b"body")
            assert ask(s, b"/status/200") == (b"HTTP/1.1 200 Whatever\r\nContent-Length: 4\r\nX-Be: seen\r\n"
                                              b"X-Fe: seen", b"body")
            head, body = ask(s, b"/status/500")
            assert head + b"\r\n\r\n" + body == BAD_GATEWAY
    finally:
        o.close()


def test_rules_run_in_file_order_backend_then_frontend(start_splicer):
    sp, port, o = start(start_splicer, """
    http-response set-header X-Fe-Saw %[status]
    http-response deny deny_status 500 if { status 404 } { res.hdr(x-mark) on }
""", """
    http-response set-header X-Mark on if { path /mark }
    http-response set-status 404 if { res.hdr(x-mark) on }
    http-response set-header X-Be-Saw %[status]
    http-response del-header X-Mark if { path /unmark }
    http-response set-header X-Mark on if { path /unmark }
    http-response del-header X-Mark if { path /unmark }
""")
    try:
        with connect(port) as s:
            head, body = ask(s, b"/mark")  # marked, set to 404, then denied by the frontend
            assert head.startswith(b"HTTP/1.1 500 Internal Server Error\r\n") and b"X-" not in head
            # the mark set after set-status is removed again: 200, not denied
            assert ask(s, b"/unmark") == (b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nX-Be-Saw: 200\r\n"
                                          b"X-Fe-Saw: 200", b"origin /unmark")
            assert ask(s, b"/status/404") == (b"HTTP/1.1 404 Whatever\r\nContent-Length: 4\r\nX-Be-Saw: 404\r\n"
                                              b"X-Fe-Saw: 404", b"body")
    finally:
        o.close()


def test_deny_after_a_request_body_keeps_the_client_connection(start_splicer):
    sp, port, o = start(start_splicer, "", "    http-response deny if { status 200 }\n")
    try:
        with connect(port) as s:
            s.sendall(b"POST /status/200 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            head, body = read_response(s)
            assert head + b"\r\n\r\n" + body == BAD_GATEWAY
            assert ask(s, b"/status/201") == (b"HTTP/1.1 201 Whatever\r\nContent-Length: 4", b"body")
        # the client asked to close: it is told so
        assert exchange(port, b"GET /status/200 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") == (
            BAD_GATEWAY.replace(b"text/html\r\n\r\n", b"text/html\r\nconnection: close\r\n\r\n"))
    finally:
        o.close()


def test_bad_response_rules_are_refused_with_file_and_line(tmp_path):
    import subprocess
    cfg = tmp_path / "site.cfg"
    text = RULES_DEFAULTS + """
frontend www
    bind 127.0.0.1:1
    http-response set-status 150
    http-response set-status 200 reason
    http-response redirect prefix /x
    http-response deny status 403
    http-response return string x
    default_backend app
backend app
    http-response set-status twohundred
    server o 127.0.0.1:2
"""
    cfg.write_text(text)
    first = text.splitlines().index("    http-response set-status 150") + 1
    r = subprocess.run(splicer_command() + ["-c", str(cfg), "--check"], capture_output=True, text=True, timeout=20)
    assert r.returncode != 0
    lines = [line.removeprefix("splicer: ") for line in r.stderr.splitlines()]
    assert lines == [
        f"{cfg}:{first}: 'http-response set-status': invalid status code '150' (expected 200..999) "
        "(a 1xx is an interim response: a client would wait for another)",
        f"{cfg}:{first + 1}: 'http-response set-status': 'reason' expects a text (quote it if it holds spaces)",
        f"{cfg}:{first + 2}: 'http-response redirect prefix' is not allowed: a response may only be "
        "redirected with 'location <loc>' (haproxy)",
        f"{cfg}:{first + 3}: 'http-response deny': unknown option 'status' (use 'deny_status')",
        f"{cfg}:{first + 4}: 'http-response return': 'string' needs a 'content-type'",
        f"{cfg}:{first + 7}: 'http-response set-status': invalid status code 'twohundred' (expected 200..999)",
        f"configuration file {cfg} has 6 error(s)",
    ]


def test_deny_before_the_request_body_is_through_closes_the_client_connection(start_splicer):
    """The server answers (and is denied) while the client has most of its body still to
    send: the answer says so and the connection ends, so the rest is never read as a request."""
    sp, port, o = start(start_splicer, "", "    http-response deny if { status 200 }\n")
    try:
        with connect(port) as s:
            s.sendall(b"POST /status/200 HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"a" * 1000)
            assert recv_all(s) == BAD_GATEWAY.replace(b"text/html\r\n\r\n", b"text/html\r\nconnection: close\r\n\r\n")
        fe = sp.stats()["frontends"]["www"]
        assert (fe["dresp"], fe["terms"]) == (1, {"PH": 1})
    finally:
        o.close()


def test_head_request_answers_have_no_body(start_splicer):
    sp, port, o = start(start_splicer, "", """
    http-response set-status 204 if { path /status/200 }
    http-response deny if { path /status/201 }
""")
    try:
        with connect(port) as s:
            no_content = b"HTTP/1.1 204 No Content\r\n\r\n"
            s.sendall(b"HEAD /status/200 HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(len(no_content), socket.MSG_WAITALL) == no_content
            head = BAD_GATEWAY.split(b"\r\n\r\n")[0] + b"\r\n\r\n"
            s.sendall(b"HEAD /status/201 HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(len(head), socket.MSG_WAITALL) == head
            assert ask(s, b"/after") == (b"HTTP/1.1 200 OK\r\nContent-Length: 13", b"origin /after")
        # no body to drop: the server connection served all three
        assert [c for c, _, _ in o.requests] == [1, 1, 1]
    finally:
        o.close()


def test_unconditional_rules_without_any_condition_in_the_config(start_splicer):
    """No rule has a condition (the frontend makes no per-request decision): set-status and
    the header rules still run, in order, on every response."""
    sp, port, o = start(start_splicer, "    http-response set-header X-Fe %[status]\n", """
    http-response set-status 404 reason Nope
    http-response set-header X-Be %[status]
""")
    try:
        with connect(port) as s:
            for target in (b"/a", b"/bb"):
                assert ask(s, target) == (b"HTTP/1.1 404 Nope\r\nContent-Length: %d\r\nX-Be: 404\r\nX-Fe: 404"
                                          % (len(target) + 7), b"origin " + target)
    finally:
        o.close()
