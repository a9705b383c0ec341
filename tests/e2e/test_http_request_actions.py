"""http-request deny / return / redirect / allow on the real proxy (haproxy 4.2): exact
statuses, bodies and Location fields; what becomes of a request body the answer leaves in
the socket (read and dropped when small, or the connection closed, never read as the next
request); the dreq / intercepted counters and the PR / LR termination states."""
from __future__ import annotations

import socket

from tests.e2e.helpers import RULES_DEFAULTS, KeepAliveOrigin, exchange, free_port, recv_all, read_response

DEFAULTS = RULES_DEFAULTS.replace("    nbthread 1\n", "    nbthread 1\n    tune.bufsize 16384\n")

FORBIDDEN = (b"HTTP/1.1 403 Forbidden\r\ncontent-length: 93\r\ncache-control: no-cache\r\n"
             b"content-type: text/html\r\n\r\n<html><body><h1>403 Forbidden</h1>\n"
             b"Request forbidden by administrative rules.\n</body></html>\n")


def origin() -> KeepAliveOrigin:
    """Answers 200 "origin <target>" to every request head (bodies are not read: a test
    that sends one to it would see it as the next request, which is what must not happen)."""
    def script(c, r, head):
        body = b"origin " + head.split(b" ")[1]
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body), False
    return KeepAliveOrigin(script)


def start(start_splicer, rules: str, backend_rules: str = "", tmp_path=None):
    o = origin()
    port = free_port()
    sp = start_splicer(DEFAULTS + f"""
frontend www
    bind 127.0.0.1:{port}
{rules}
    default_backend app
backend app
{backend_rules}
    server o 127.0.0.1:{o.port}
""", [port])
    return sp, port, o


def get(port, target=b"/", extra=b"", method=b"GET"):
    return exchange(port, b"%s %s HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n%s\r\n"
                    % (method, target, extra))


def with_close(resp: bytes) -> bytes:
    """`resp` (a keep-alive answer) as it reads when the client asked to close."""
    head, _, body = resp.partition(b"\r\n\r\n")
    return head + b"\r\nconnection: close\r\n\r\n" + body


def test_deny_default_and_deny_status(start_splicer):
    sp, port, o = start(start_splicer, """
    http-request deny if { path_beg /admin }
    http-request deny deny_status 429 if { path_beg /busy }
    http-request deny deny_status 404 content-type text/plain string "nothing here" if { path /hidden }
""")
    try:
        assert get(port, b"/admin/x") == with_close(FORBIDDEN)
        assert get(port, b"/busy") == (b"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 76\r\n"
                                       b"cache-control: no-cache\r\ncontent-type: text/html\r\n"
                                       b"connection: close\r\n\r\n<html><body><h1>429 Too Many Requests</h1>\n"
                                       b"Too Many Requests\n</body></html>\n")
        assert get(port, b"/hidden") == (b"HTTP/1.1 404 Not Found\r\ncontent-length: 12\r\n"
                                         b"content-type: text/plain\r\nconnection: close\r\n\r\nnothing here")
        assert get(port, b"/ok").endswith(b"\r\n\r\norigin /ok")
        assert o.requests and [h.split(b" ")[1] for _, _, h in o.requests] == [b"/ok"]
        st = sp.stats()
        fe, be = st["frontends"]["www"], st["backends"]["app"]
        assert (fe["req_tot"], fe["dreq"], fe["intercepted"], fe["ereq"], fe["hrsp_4xx"]) == (4, 3, 0, 0, 3)
        assert fe["terms"] == {"PR": 3, "--": 1}
        assert (be["req_tot"], be["dreq"]) == (1, 0)
    finally:
        o.close()


def test_deny_uses_the_errorfile(start_splicer, tmp_path):
    page = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope"
    (tmp_path / "403.http").write_bytes(page)
    sp, port, o = start(start_splicer, f"    errorfile 403 {tmp_path / '403.http'}\n    http-request deny\n")
    try:
        assert get(port) == page
    finally:
        o.close()


def test_return_string_file_errorfile_and_headers(start_splicer, tmp_path):
    (tmp_path / "robots.txt").write_bytes(b"User-agent: *\nDisallow: /\n")
    (tmp_path / "maint.http").write_bytes(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nmaint")
    sp, port, o = start(start_splicer, f"""
    http-request return status 200 content-type text/plain string "pong" hdr X-Who %[src] hdr X-Path %[path] if {{ path /ping }}
    http-request return content-type text/plain file {tmp_path / 'robots.txt'} if {{ path /robots.txt }}
    http-request return errorfile {tmp_path / 'maint.http'} if {{ path_beg /maint }}
    http-request return status 204 if {{ path /empty }}
""")
    try:
        assert get(port, b"/ping") == (b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\ncontent-type: text/plain\r\n"
                                       b"X-Who: 127.0.0.1\r\nX-Path: /ping\r\nconnection: close\r\n\r\npong")
        assert get(port, b"/robots.txt") == (b"HTTP/1.1 200 OK\r\ncontent-length: 26\r\ncontent-type: text/plain"
                                             b"\r\nconnection: close\r\n\r\nUser-agent: *\nDisallow: /\n")
        assert get(port, b"/maint/x") == b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nmaint"
        # RFC 9110 section 8.6: no Content-Length in a 204 (it used to say content-length: 0)
        assert get(port, b"/empty") == b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n"
        assert get(port, b"/ping", method=b"HEAD") == (
            b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\ncontent-type: text/plain\r\n"
            b"X-Who: 127.0.0.1\r\nX-Path: /ping\r\nconnection: close\r\n\r\n")
        fe = sp.stats()["frontends"]["www"]
        assert (fe["intercepted"], fe["dreq"], fe["terms"], fe["hrsp_2xx"], fe["hrsp_5xx"]) == (
            5, 0, {"LR": 5}, 4, 1)
        assert o.requests == []
    finally:
        o.close()


def test_redirects(start_splicer):
    sp, port, o = start(start_splicer, """
    http-request redirect location /login if { path /account }
    http-request redirect location https://%[req.hdr(host)]/new code 308 if { path /old }
    http-request redirect prefix https://www.example code 301 if { hdr(host) -i example.org }
    http-request redirect prefix / drop-query append-slash if { path_beg /dir } !{ path_end / }
    http-request redirect scheme https code 303 if { path_beg /secure }
""")
    try:
        def location(target, host=b"www.example"):
            r = exchange(port, b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (target, host))
            head = r.split(b"\r\n\r\n")[0].split(b"\r\n")
            return head[0], [f for f in head[1:] if f.startswith(b"location: ")]
        assert location(b"/account?x=1") == (b"HTTP/1.1 302 Found", [b"location: /login"])
        assert location(b"/old") == (b"HTTP/1.1 308 Permanent Redirect", [b"location: https://www.example/new"])
        assert location(b"/a/b?c=d", b"EXAMPLE.org") == (b"HTTP/1.1 301 Moved Permanently",
                                                           [b"location: https://www.example/a/b?c=d"])
        assert location(b"/dir/sub?q=1") == (b"HTTP/1.1 302 Found", [b"location: /dir/sub/"])
        assert location(b"/secure/p?q=1") == (b"HTTP/1.1 303 See Other",
                                              [b"location: https://www.example/secure/p?q=1"])
        assert get(port, b"/dir/") .endswith(b"origin /dir/")
        full = exchange(port, b"GET /account HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert full == (b"HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /login\r\n"
                        b"cache-control: no-cache\r\nconnection: close\r\n\r\n")
    finally:
        o.close()


def test_allow_stops_the_rules_after_it(start_splicer):
    sp, port, o = start(start_splicer, """
    http-request allow if LOCALHOST { path_beg /internal }
    http-request set-header X-Late yes
    http-request deny if { path_beg /internal }
""")
    try:
        assert get(port, b"/internal/x").endswith(b"origin /internal/x")
        assert get(port, b"/other").endswith(b"origin /other")
        heads = [h for _, _, h in o.requests]
        assert [b"x-late: yes" in h.lower() for h in heads] == [False, True]
    finally:
        o.close()


def test_backend_rules_deny_after_routing(start_splicer):
    sp, port, o = start(start_splicer, "", "    http-request deny deny_status 403 if { path /be-deny }\n")
    try:
        assert get(port, b"/be-deny") == with_close(FORBIDDEN)
        st = sp.stats()
        assert (st["frontends"]["www"]["dreq"], st["backends"]["app"]["dreq"]) == (1, 1)
        assert (st["frontends"]["www"]["req_tot"], st["backends"]["app"]["req_tot"]) == (1, 1)
        assert st["backends"]["app"]["terms"] == {"PR": 1}
    finally:
        o.close()


def test_denied_post_body_is_drained_and_the_pipelined_request_is_served(start_splicer):
    sp, port, o = start(start_splicer, "    http-request deny if METH_POST\n")
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        body = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"  # a body that looks like a request
        s.sendall(b"POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                  + b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        head, page = read_response(s)
        assert head + b"\r\n\r\n" + page == FORBIDDEN
        head, got = read_response(s)
        assert (head.split(b"\r\n")[0], got) == (b"HTTP/1.1 200 OK", b"origin /next")
        s.close()
        assert [h.split(b" ")[1] for _, _, h in o.requests] == [b"/next"]
    finally:
        o.close()


def test_a_body_larger_than_bufsize_closes_the_connection(start_splicer):
    sp, port, o = start(start_splicer, "    http-request deny if METH_POST\n")
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        body = b"x" * 100_000
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
        s.sendall(body + b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        assert recv_all(s) == with_close(FORBIDDEN)
        s.close()
        assert o.requests == []
    finally:
        o.close()


def test_a_chunked_body_closes_the_connection(start_splicer):
    sp, port, o = start(start_splicer, "    http-request return status 200 content-type text/plain string ok\n")
    try:
        resp = exchange(port, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                              b"5\r\nhello\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        assert resp == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nok"
    finally:
        o.close()


def test_a_204_or_304_local_answer_ends_at_its_head(start_splicer):
    """A deny with deny_status 204 or 304 sends no body and no Content-Length (RFC 9112
    section 6.3 rule 1): the next response on the connection is read where it starts."""
    sp, port, o = start(start_splicer, """
    http-request deny deny_status 204 if { path /d204 }
    http-request deny deny_status 304 if { path /d304 }
    http-request return status 204 if { path /r204 }
""")
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /d204 HTTP/1.1\r\nHost: x\r\n\r\nGET /d304 HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /r204 HTTP/1.1\r\nHost: x\r\n\r\nGET /origin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = recv_all(s)
        s.close()
        assert got == (b"HTTP/1.1 204 No Content\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n"
                       b"HTTP/1.1 304 Not Modified\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n"
                       b"HTTP/1.1 204 No Content\r\n\r\n"
                       b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nConnection: close\r\n\r\norigin /origin")
    finally:
        o.close()


def test_local_answers_keep_the_connection_alive(start_splicer):
    sp, port, o = start(start_splicer, """
    http-request return status 200 content-type text/plain string pong if { path /ping }
    http-request redirect location /there if { path /here }
""")
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\nGET /here HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /origin HTTP/1.1\r\nHost: x\r\n\r\n")
        out = [read_response(s) for _ in range(3)]
        assert [(h.split(b"\r\n")[0], b) for h, b in out] == [
            (b"HTTP/1.1 200 OK", b"pong"), (b"HTTP/1.1 302 Found", b""), (b"HTTP/1.1 200 OK", b"origin /origin")]
        assert all(b"connection: close" not in h.lower() for h, _ in out)
        # an HTTP/1.0 client with keep-alive is told it stays open
        s.sendall(b"GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        h, b = read_response(s)
        assert h.endswith(b"\r\nconnection: keep-alive") and b == b"pong"
        s.close()
    finally:
        o.close()
