"""http-request rules in order on one message, request-line rewrites, variables and
replace-header / replace-value on the real proxy (haproxy configuration.txt 4.2, 2.8):
the origins echo the head they received, so every assertion is on the exact bytes the
origin saw; a rewrite that may not be forwarded is answered 400 and never reaches one."""
from __future__ import annotations

import socket
import subprocess

from tests.e2e.helpers import (RULES_DEFAULTS, KeepAliveOrigin, exchange, free_port, read_response,
                               splicer_command)

BAD_REQUEST = (b"HTTP/1.1 400 Bad Request\r\ncontent-length: 90\r\ncache-control: no-cache\r\n"
               b"content-type: text/html\r\n\r\n<html><body><h1>400 Bad Request</h1>\n"
               b"Your browser sent an invalid request.\n</body></html>\n")


def echo(name: bytes, extra: bytes = b"") -> KeepAliveOrigin:
    """Answers 200 with `name`, a newline and the request head exactly as received (without
    its final empty line) as the body; `extra` are more response header lines."""
    def script(c, r, head):
        body = name + b"\n" + head
        return b"HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s" % (extra, len(body), body), False
    return KeepAliveOrigin(script)


def start(start_splicer, frontend: str, app: str = "", alt: str = "", app_extra: bytes = b""):
    o_app, o_alt = echo(b"app", app_extra), echo(b"alt")
    port = free_port()
    sp = start_splicer(RULES_DEFAULTS + f"""
frontend www
    bind 127.0.0.1:{port}
{frontend}
backend app
{app}
    server o 127.0.0.1:{o_app.port}
backend alt
{alt}
    server o 127.0.0.1:{o_alt.port}
""", [port])
    return sp, port, o_app, o_alt


def ask(port, target: bytes, extra: bytes = b"", method: bytes = b"GET") -> bytes:
    """One request on its own connection (closed after it); the response's body."""
    resp = exchange(port, b"%s %s HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n%s\r\n"
                    % (method, target, extra))
    head, _, body = resp.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n"), resp
    return body


def test_each_rule_sees_what_the_rules_before_it_did(start_splicer):
    sp, port, o_app, o_alt = start(start_splicer, """
    http-request set-header X-A 1 if { path_beg /seta }
    http-request deny if { req.hdr(x-a) 1 }
    http-request set-path /alt%[path] if { path_beg /move/ }
    use_backend alt if { path_beg /alt/ }
    default_backend app
""", alt="    http-request set-header X-Alt-Saw %[path]\n")
    try:
        # set-header then a deny on it: the deny sees the field the rule before it set
        resp = exchange(port, b"GET /seta HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n\r\n")
        assert resp.startswith(b"HTTP/1.1 403 Forbidden\r\n")
        # set-path then use_backend on the new path; the backend's rules read it too
        assert ask(port, b"/move/x?q=1") == (b"alt\nGET /alt/move/x?q=1 HTTP/1.1\r\nHost: www.example\r\n"
                                             b"X-Alt-Saw: /alt/move/x")
        assert ask(port, b"/other") == b"app\nGET /other HTTP/1.1\r\nHost: www.example"
        assert [h.split(b"\r\n")[0] for _, _, h in o_app.requests + o_alt.requests] == [
            b"GET /other HTTP/1.1", b"GET /alt/move/x?q=1 HTTP/1.1"]  # the denied one reached no origin
    finally:
        o_app.close()
        o_alt.close()


def test_each_rewrite_action_reaches_the_origin(start_splicer):
    sp, port, o_app, o_alt = start(start_splicer, "    default_backend app\n", app=r"""
    http-request set-path /p if { path /sp }
    http-request set-pathq /pq if { path /spq }
    http-request set-query x=%[query]&y=1 if { path /sq }
    http-request set-uri /u?m=%HM if { path /su }
    http-request replace-path ^/rp/([^/]*)/(.*) /\2/\1
    http-request replace-pathq ^/rq/([^?]*)\?(.*) /\2/\1
    http-request replace-uri ^/ru(.*) /uri\1
    http-request set-method PUT if { path /put }
    http-request set-header X-Seen %HM|%[path]|%[query]|%[url]
""")
    try:
        base = b"app\n%s HTTP/1.1\r\nHost: www.example\r\nX-Seen: %s"
        cases = [
            (b"/sp?k=1", b"GET /p?k=1", b"GET|/p|k=1|/p?k=1"),
            (b"/spq?k=1", b"GET /pq", b"GET|/pq||/pq"),
            (b"/sq?k=1", b"GET /sq?x=k=1&y=1", b"GET|/sq|x=k=1&y=1|/sq?x=k=1&y=1"),
            (b"/su?k=1", b"GET /u?m=GET", b"GET|/u|m=GET|/u?m=GET"),
            (b"/rp/a/b/c?k=1", b"GET /b/c/a?k=1", b"GET|/b/c/a|k=1|/b/c/a?k=1"),
            (b"/rq/a?k=1", b"GET /k=1/a", b"GET|/k=1/a||/k=1/a"),
            (b"/ru/x?k=1", b"GET /uri/x?k=1", b"GET|/uri/x|k=1|/uri/x?k=1"),
            (b"/put", b"PUT /put", b"PUT|/put||/put"),
        ]
        for target, line, seen in cases:
            assert ask(port, target) == base % (line, seen), target
    finally:
        o_app.close()
        o_alt.close()


def test_a_rewrite_that_may_not_be_forwarded_is_answered_400_and_never_reaches_the_origin(start_splicer):
    sp, port, o_app, o_alt = start(start_splicer, """
    http-request set-path /a/%[req.hdr(x-p)] if { req.hdr(x-p) -m found }
    http-request set-method %[req.hdr(x-m)] if { req.hdr(x-m) -m found }
    default_backend app
""")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            for extra in (b"X-P: b c\r\n", b"X-P: ..\r\n", b"X-P: %2e%2e/admin\r\n", b"X-M: G T\r\n",
                          b"X-M: CONNECT\r\n", b"X-M: HEAD\r\n"):
                s.sendall(b"GET /x HTTP/1.1\r\nHost: www.example\r\n%s\r\n" % extra)
                head, body = read_response(s)
                assert head + b"\r\n\r\n" + body == BAD_REQUEST, extra
            # the connection is still in a sane state: the next request on it is served
            s.sendall(b"GET /x HTTP/1.1\r\nHost: www.example\r\nX-P: ok\r\n\r\n")
            head, body = read_response(s)
            assert body == b"app\nGET /a/ok HTTP/1.1\r\nHost: www.example\r\nX-P: ok"
        assert [h.split(b"\r\n")[0] for _, _, h in o_app.requests] == [b"GET /a/ok HTTP/1.1"]
        fe = sp.stats()["frontends"]["www"]
        assert (fe["req_tot"], fe["hrsp_4xx"], fe["hrsp_2xx"]) == (7, 6, 1)
    finally:
        o_app.close()
        o_alt.close()


def test_variables_in_acls_formats_and_use_backend(start_splicer):
    sp, port, o_app, o_alt = start(start_splicer, """
    acl to_alt var(txn.be) -m str alt
    http-request set-var(txn.be) req.hdr(x-be),lower
    http-request set-var(sess.mark) path if { path_beg /mark }
    http-request set-var-fmt(txn.info) %[src]-%HM
    http-request set-header X-Sess [%[var(sess.mark)]]
    http-request set-header X-To-Alt yes if to_alt
    use_backend %[var(txn.be)] if { var(txn.be) -m found }
    default_backend app
""", app="""
    http-response set-header X-Info %[var(txn.info)]
    http-response set-var(res.len) res.hdr(content-length)
    http-response set-header X-Len %[var(res.len)]|%[var(req.none)]
""")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /one HTTP/1.1\r\nHost: www.example\r\nX-Be: ALT\r\n\r\n")
            head, body = read_response(s)
            assert body == b"alt\nGET /one HTTP/1.1\r\nHost: www.example\r\nX-Be: ALT\r\nX-Sess: []\r\nX-To-Alt: yes"
            assert b"x-info" not in head.lower()  # alt has no response rules
            s.sendall(b"GET /mark/me HTTP/1.1\r\nHost: www.example\r\n\r\n")
            head, body = read_response(s)
            assert body == b"app\nGET /mark/me HTTP/1.1\r\nHost: www.example\r\nX-Sess: [/mark/me]"
            assert head == (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Info: 127.0.0.1-GET\r\nX-Len: %d|"
                            % (len(body), len(body)))
            # a "sess" variable lasts as long as the client connection; "txn" ones do not
            s.sendall(b"GET /three HTTP/1.1\r\nHost: www.example\r\nX-Be: nosuch\r\n\r\n")
            head, body = read_response(s)
            assert body == b"app\nGET /three HTTP/1.1\r\nHost: www.example\r\nX-Be: nosuch\r\nX-Sess: [/mark/me]"
        # another connection has session variables of its own, even for the very same head
        # bytes (whose forwarded head is then never taken from a memo of the first one)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /three HTTP/1.1\r\nHost: www.example\r\nX-Be: nosuch\r\n\r\n")
            head, body = read_response(s)
            assert body == b"app\nGET /three HTTP/1.1\r\nHost: www.example\r\nX-Be: nosuch\r\nX-Sess: []"
    finally:
        o_app.close()
        o_alt.close()


def test_replace_header_and_replace_value_on_both_sides(start_splicer):
    sp, port, o_app, o_alt = start(start_splicer, r"""
    http-request replace-header User-Agent ^curl/(.*) curl-\1
    http-request replace-value Accept ^text/(.*)$ application/\1
    http-response replace-header Set-Cookie (C=[^;]*);(.*) \1;ip=%ci;\2
    http-response replace-value Cache-Control ^public$ private
    default_backend app
""", app_extra=b"Set-Cookie: C=1; path=/\r\nSet-Cookie: D=2; path=/\r\nCache-Control: max-age=60, public\r\n")
    try:
        resp = exchange(port, b"GET / HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n"
                              b"User-Agent: curl/8.5.0\r\nAccept: text/html, text/plain,image/png\r\n\r\n")
        head, _, body = resp.partition(b"\r\n\r\n")
        assert body == (b"app\nGET / HTTP/1.1\r\nHost: www.example\r\nUser-Agent: curl-8.5.0\r\n"
                        b"Accept: application/html, application/plain,image/png")
        assert head == (b"HTTP/1.1 200 OK\r\nSet-Cookie: C=1;ip=127.0.0.1; path=/\r\nSet-Cookie: D=2; path=/\r\n"
                        b"Cache-Control: max-age=60, private\r\nContent-Length: %d\r\nConnection: close" % len(body))
    finally:
        o_app.close()
        o_alt.close()


def test_bad_rule_lines_are_refused_with_file_and_line(tmp_path):
    cfg = tmp_path / "site.cfg"
    cfg.write_text(
        "defaults\n"                                            # 1
        "    mode http\n"                                       # 2
        "frontend www\n"                                        # 3
        "    bind 127.0.0.1:8080\n"                             # 4
        "    http-request set-path\n"                           # 5
        "    http-request replace-path /(a) /\\2\n"             # 6
        "    http-request set-var(txn) str(x)\n"                # 7
        "    http-response set-var(req.a) str(x)\n"             # 8
        "    http-response replace-value Connection a b\n"      # 9
        "    use_backend %[var(nope.x)]\n"                      # 10
        "backend app\n"                                         # 11
        "    server s 127.0.0.1:1\n")                           # 12
    r = subprocess.run(splicer_command() + ["-c", str(cfg), "--check"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1
    lines = [ln.removeprefix("splicer: ") for ln in r.stderr.splitlines()]
    for want in [
        f"{cfg}:5: 'http-request set-path' expects exactly 1 argument(s): set-path <fmt>",
        f"{cfg}:6: 'http-request replace-path': '\\2' refers to a group the regex '/(a)' does not have",
        f"{cfg}:7: 'http-request set-var': 'txn' is not a variable name: expected <scope>.<name> with "
        "<scope> one of proc, sess, txn, req, res",
        f"{cfg}:8: 'http-response set-var(req.a)': a 'req' variable does not live during response processing "
        "(haproxy 2.8: 'req' and 'res' never overlap)",
        f"{cfg}:9: 'Connection' cannot be rewritten: splicer writes the framing and connection fields itself",
    ]:
        assert want in lines, (want, lines)
    assert any(ln.startswith(f"{cfg}:10: ") and "'nope.x' is not a variable name" in ln for ln in lines), lines


def test_unset_var_and_percent_to_uppercase_reach_the_origin(start_splicer):
    """unset-var removes what set-var stored, so a later format finds nothing (haproxy 4.2
    "unset-var"); normalize-uri percent-to-uppercase forwards the escapes' hex in upper
    case (haproxy 4.2 "normalize-uri")."""
    sp, port, o_app, o_alt = start(start_splicer, """
    http-request set-var(txn.x) str(kept)
    http-request set-var(txn.y) str(dropped)
    http-request unset-var(txn.y) if { path_beg /unset }
    http-request set-header X-Vars x=%[var(txn.x)],y=%[var(txn.y)]
    http-request normalize-uri percent-to-uppercase
    default_backend app
""")
    assert b"X-Vars: x=kept,y=dropped\r\n" in ask(port, b"/keep") + b"\r\n"
    assert b"X-Vars: x=kept,y=\r\n" in ask(port, b"/unset") + b"\r\n"
    assert ask(port, b"/caf%c3%a9?q=%e2%82%ac").split(b"\n", 1)[1].split(b"\r\n")[0] == b"GET /caf%C3%A9?q=%E2%82%AC HTTP/1.1"
