"""use_backend routing on the real proxy: each request of a frontend goes to the backend its
rules pick (haproxy 4.2 "use_backend", 7 "ACLs"), checked by which origin answered.

Origins are the `farm` (web1, web2: every response says X-Served-By) and KeepAliveOrigins
that name themselves in their body; clients are raw sockets.
"""
from __future__ import annotations

import json
import socket

from tests.e2e.helpers import RULES_DEFAULTS, exchange, free_port, head_values, read_response
from tests.e2e.helpers import named_origin as named

DEFAULTS = RULES_DEFAULTS


def get(port: int, target: bytes = b"/", host: bytes = b"www.example", method: bytes = b"GET",
        extra: bytes = b"") -> bytes:
    return exchange(port, b"%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n" % (method, target, host, extra))


def served_by(resp: bytes) -> bytes:
    return head_values(resp, b"x-served-by")[0]


def named_backends(a, b) -> str:
    """Backends a and b, each with its one named origin (the name is the body it answers)."""
    return f"backend a\n    server a 127.0.0.1:{a.port}\nbackend b\n    server b 127.0.0.1:{b.port}\n"


def farm_config(port: int, farm, frontend: str, extra: str = "") -> str:
    return DEFAULTS + f"""
frontend www
    bind 127.0.0.1:{port}
{frontend}
backend one
    server web1 127.0.0.1:{farm[0].port}
backend two
    server web2 127.0.0.1:{farm[1].port}
{extra}
"""


def test_routing_by_host_path_method_and_default(start_splicer, farm):
    port = free_port()
    start_splicer(farm_config(port, farm, """
    acl host_two hdr(host) -i two.example
    acl api path_beg /api/ /v2/
    acl static path_end .css .js
    use_backend two if host_two
    use_backend two if api !METH_POST
    use_backend two if static || { method head }
    default_backend one
"""), [port])
    cases = [
        (dict(), b"web1"),
        (dict(host=b"TWO.example"), b"web2"),
        # a Host ACL also matches the host without its port (docs/configuration.md, "Rules
        # that cannot be spelled around"; haproxy compares the value with its port: web1)
        (dict(host=b"two.example:80"), b"web2"),
        (dict(host=b"two.example.:8080"), b"web2"),
        (dict(host=b"two.example.com"), b"web1"),
        (dict(target=b"/api/users"), b"web2"),
        (dict(target=b"/v2/x?y=1"), b"web2"),
        (dict(target=b"/api/users", method=b"POST", extra=b"Content-Length: 0\r\n"), b"web1"),
        (dict(target=b"/x/api/"), b"web1"),
        (dict(target=b"/site.css"), b"web2"),
        (dict(target=b"/site.css?v=2"), b"web2"),  # path excludes the query
        (dict(target=b"/site.cssx"), b"web1"),
        (dict(method=b"HEAD"), b"web2"),
    ]
    got = [(c, served_by(get(port, **c))) for c, _ in cases]
    assert got == [(c, want) for c, want in cases]


def test_first_matching_use_backend_wins_and_same_name_acls_or_together(start_splicer, farm):
    port = free_port()
    start_splicer(farm_config(port, farm, """
    acl special path /a
    acl special path /b
    use_backend two if special
    use_backend one if special
    use_backend one
"""), [port])
    assert [served_by(get(port, t)) for t in (b"/a", b"/b", b"/c")] == [b"web2", b"web2", b"web1"]


def test_no_matching_rule_and_no_default_backend_is_503(start_splicer, farm):
    port = free_port()
    sp = start_splicer(farm_config(port, farm, "    use_backend two if { path_beg /two }\n"), [port])
    assert served_by(get(port, b"/two/x")) == b"web2"
    resp = get(port, b"/elsewhere")
    assert resp.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    fe = sp.stats()["frontends"]["www"]
    assert (fe["req_tot"], fe["hrsp_5xx"], fe["terms"]) == (2, 1, {"--": 1, "SC": 1})


def test_the_503_for_want_of_a_backend_keeps_the_connection(start_splicer, farm):
    """haproxy 2.6 answers its 503 page and keeps the connection (checked side by side with
    haproxy 2.6.12): the next request on it goes to its backend."""
    port = free_port()
    start_splicer(farm_config(port, farm, "    use_backend two if { path_beg /two }\n"), [port])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /elsewhere HTTP/1.1\r\nHost: a\r\n\r\n")
        head, _ = read_response(s)
        assert head.startswith(b"HTTP/1.1 503 Service Unavailable\r\n") and b"connection: close" not in head.lower()
        s.sendall(b"GET /two/x HTTP/1.1\r\nHost: a\r\n\r\n")
        head, body = read_response(s)
        assert served_by(head + b"\r\n\r\n") == b"web2"  # (the origin answers it, whatever its status)


def test_src_and_ports_route(start_splicer, farm):
    port = free_port()
    start_splicer(farm_config(port, farm, f"""
    use_backend two if LOCALHOST {{ dst_port {port} }} {{ src_port 1024:65535 }}
    default_backend one
"""), [port])
    assert served_by(get(port)) == b"web2"
    port2 = free_port()
    start_splicer(farm_config(port2, farm, """
    use_backend two if { src 10.0.0.0/8 } || { src ::2 }
    use_backend one if { src 127.0.0.0/8 }
"""), [port2])
    assert served_by(get(port2)) == b"web1"


def test_each_request_of_a_kept_alive_connection_is_routed_on_its_own(start_splicer):
    a, b = named(b"A"), named(b"B")
    port = free_port()
    start_splicer(DEFAULTS + f"""
frontend www
    bind 127.0.0.1:{port}
    use_backend b if {{ path_beg /b }}
    default_backend a
""" + named_backends(a, b), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        bodies = []
        for target in (b"/a", b"/b", b"/b/2", b"/", b"/bb"):
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % target)
            bodies.append(read_response(s)[1])
        # and pipelined: both requests in one write, answered in order by their backends
        s.sendall(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        bodies += [read_response(s)[1], read_response(s)[1]]
        s.close()
        assert bodies == [b"A", b"B", b"B", b"A", b"B", b"B", b"A"]
        assert [h.split(b" ")[1] for _, _, h in b.requests] == [b"/b", b"/b/2", b"/bb", b"/b"]
    finally:
        a.close()
        b.close()


def test_nbsrv_switches_to_a_spare_backend(start_splicer, farm):
    port = free_port()
    start_splicer(farm_config(port, farm, """
    use_backend two if { nbsrv(one) lt 1 }
    default_backend one
""").replace(f"server web1 127.0.0.1:{farm[0].port}", f"server web1 127.0.0.1:{farm[0].port} disabled"), [port])
    assert served_by(get(port)) == b"web2"


def test_header_rules_with_conditions_and_backend_rules_after_routing(start_splicer, farm):
    port = free_port()
    start_splicer(farm_config(port, farm, """
    acl api path_beg /headers/api
    http-request set-header X-Api yes if api
    http-request set-header X-Not-Api yes unless api
    http-request del-header X-Secret if { hdr(x-secret) -m beg leak }
    use_backend two if api
    default_backend one
""").replace("backend two\n", "backend two\n    http-request set-header X-Backend two if { req.hdr(host) -m dom example }\n"),
        [port])

    def headers(target: bytes, extra: bytes = b"") -> dict:
        body = get(port, target, extra=extra).split(b"\r\n\r\n", 1)[1]
        return {k.lower(): v for k, v in json.loads(body)["headers"]}

    api = headers(b"/headers/api", b"X-Secret: leaked\r\n")
    other = headers(b"/headers/x", b"X-Secret: kept\r\n")
    assert (api.get("x-api"), api.get("x-not-api"), api.get("x-secret"), api.get("x-backend")) == \
        ("yes", None, None, "two")
    assert (other.get("x-api"), other.get("x-not-api"), other.get("x-secret"), other.get("x-backend")) == \
        (None, "yes", "kept", None)


def test_pattern_file_routes(start_splicer, farm, tmp_path):
    (tmp_path / "hosts.lst").write_text("# static hosts\nimg.example\n  cdn.example\n")
    port = free_port()
    start_splicer(farm_config(port, farm, f"""
    use_backend two if {{ hdr(host) -i -f {tmp_path / 'hosts.lst'} }}
    default_backend one
"""), [port])
    assert [served_by(get(port, host=h)) for h in (b"IMG.example", b"cdn.example", b"www.example")] == [
        b"web2", b"web2", b"web1"]


def test_a_long_substring_list_denies_by_user_agent(start_splicer, farm, tmp_path):
    """A bot list of 600 `-m sub -i` patterns (one automaton pass, acl.AUTOMATON_MIN) on an
    8 KB User-Agent: a listed word anywhere, in any case, is denied; regex metacharacters in
    the list are plain characters; the rest is routed."""
    words = [f"crawler{i}.bot" for i in range(598)] + ["[z", "q|w"]
    (tmp_path / "bots.lst").write_text("# user-agent substrings\n" + "\n".join(words) + "\n")
    port = free_port()
    start_splicer(farm_config(port, farm, f"""
    acl bot hdr(user-agent) -m sub -i -f {tmp_path / 'bots.lst'}
    http-request deny if bot
    default_backend one
"""), [port])
    pad = b"Mozilla/5.0 (X11; Linux x86_64) " * 250
    assert len(pad) >= 8000
    for ua, denied in ((pad, False), (pad + b"CRAWLER597.BOT/1", True), (b"x crawler0.bot", True),
                       (pad + b"crawler5xbot", False), (b"a [Z b", True), (b"q|w", True), (b"qw", False)):
        resp = get(port, extra=b"User-Agent: " + ua + b"\r\n")
        if denied:
            assert resp.startswith(b"HTTP/1.1 403 "), (ua[-20:], resp[:40])
        else:
            assert served_by(resp) == b"web1", (ua[-20:], resp[:40])


def test_dynamic_backend_name_from_the_host(start_splicer, farm):
    port = free_port()
    start_splicer(farm_config(port, farm, """
    use_backend %[req.hdr(host),lower] if { hdr(host) -m found }
    use_backend two
    default_backend one
"""), [port])
    # the Host names the backend; a name that is no backend sends the request to the default
    assert [served_by(get(port, host=h)) for h in (b"TWO", b"one", b"three", b"www.example")] == [
        b"web2", b"web1", b"web1", b"web1"]


def test_routing_by_cookie_url_param_version_and_header_count(start_splicer, farm):
    port = free_port()
    start_splicer(farm_config(port, farm, """
    use_backend two if { req.cook(beta) 1 }
    use_backend two if { url_param(v) -m int ge 2 }
    use_backend two if HTTP_1.0
    use_backend two if { hdr_cnt(x-hop) gt 1 }
    default_backend one
"""), [port])

    def via(request: bytes) -> bytes:
        return served_by(exchange(port, request))
    assert [via(b"GET / HTTP/1.1\r\nHost: a\r\nCookie: a=0; beta=1\r\nConnection: close\r\n\r\n"),
            via(b"GET / HTTP/1.1\r\nHost: a\r\nCookie: beta=10\r\nConnection: close\r\n\r\n"),
            via(b"GET /x?v=2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
            via(b"GET /x?v=1&w=5 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
            via(b"GET / HTTP/1.0\r\nHost: a\r\n\r\n"),
            via(b"GET / HTTP/1.1\r\nHost: a\r\nX-Hop: a, b\r\nConnection: close\r\n\r\n"),
            via(b"GET / HTTP/1.1\r\nHost: a\r\nX-Hop: a\r\nConnection: close\r\n\r\n")] == [
        b"web2", b"web1", b"web2", b"web1", b"web2", b"web2", b"web1"]


def test_http_response_rules_with_conditions(start_splicer, farm):
    port = free_port()
    start_splicer(farm_config(port, farm, """
    http-response set-header X-Missing yes if { status 404 }
    http-response set-header X-Json yes if { res.hdr(content-type) -m beg application/json } { path_beg /health }
    http-response del-header X-Served-By unless { req.hdr(x-debug) -m found }
    default_backend one
"""), [port])
    missing = get(port, b"/nope", extra=b"X-Debug: 1\r\n")
    health = get(port, b"/health")
    assert (head_values(missing, b"x-missing"), head_values(missing, b"x-json"),
            head_values(missing, b"x-served-by")) == ([b"yes"], [], [b"web1"])
    assert (head_values(health, b"x-missing"), head_values(health, b"x-json"),
            head_values(health, b"x-served-by")) == ([], [b"yes"], [])


def test_each_explicit_matching_method_routes(start_splicer, farm):
    """`-m <method>` written out (haproxy 7.1.3), each on its own use_backend line: a
    request that one method matches goes to `two`, any other to `one`."""
    port = free_port()
    start_splicer(farm_config(port, farm, """
    use_backend two if { path -m str /exact }
    use_backend two if { path -m beg /beg/ }
    use_backend two if { path -m end .end }
    use_backend two if { path -m sub /sub/ }
    use_backend two if { path -m reg ^/re/[0-9]+$ }
    use_backend two if { path -m dir dir }
    use_backend two if { hdr(host) -m dom dom }
    use_backend two if { hdr(x-len) -m len 5 }
    use_backend two if { hdr(x-ip) -m ip 10.0.0.0/8 }
    use_backend two if { hdr(x-int) -m int gt 100 }
    use_backend two if { hdr(x-found) -m found }
    default_backend one
"""), [port])
    cases = [
        (dict(), b"web1"),
        (dict(target=b"/exact"), b"web2"), (dict(target=b"/exact/x"), b"web1"),
        (dict(target=b"/beg/x"), b"web2"), (dict(target=b"/x/beg/"), b"web1"),
        (dict(target=b"/a.end"), b"web2"), (dict(target=b"/a.end/x"), b"web1"),
        (dict(target=b"/x/sub/y"), b"web2"), (dict(target=b"/x/subway"), b"web1"),
        (dict(target=b"/re/42"), b"web2"), (dict(target=b"/re/4x"), b"web1"),
        (dict(target=b"/a/dir/b"), b"web2"), (dict(target=b"/a/dirt/b"), b"web1"),
        (dict(host=b"www.dom.example"), b"web2"), (dict(host=b"www.domain.example"), b"web1"),
        (dict(extra=b"X-Len: 12345\r\n"), b"web2"), (dict(extra=b"X-Len: 1234\r\n"), b"web1"),
        (dict(extra=b"X-Ip: 10.1.2.3\r\n"), b"web2"), (dict(extra=b"X-Ip: 192.0.2.1\r\n"), b"web1"),
        (dict(extra=b"X-Int: 101\r\n"), b"web2"), (dict(extra=b"X-Int: 100\r\n"), b"web1"),
        (dict(extra=b"X-Found: \r\n"), b"web2"),
    ]
    got = [(c, served_by(get(port, **c))) for c, _ in cases]
    assert got == [(c, want) for c, want in cases]


def test_the_other_criteria_predefined_acls_and_converters_route(start_splicer, farm, tmp_path):
    """The fetches, predefined ACLs and converters no other routing test writes out, each on
    a use_backend line of its own (haproxy 7.3.6, 7.4, 7.3.1): a request one of them
    matches goes to `two`, any other to `one`."""
    (tmp_path / "dom.map").write_text("internal.example two\n")
    (tmp_path / "reg.map").write_text("^/legacy/[0-9]+$ two\n")
    port = free_port()
    cfg = tmp_path / "site.cfg"
    cfg.write_text(farm_config(port, farm, """
    use_backend two if { hdr_beg(x-a) beg }
    use_backend two if { hdr_sub(x-a) -- -sub- }
    use_backend two if { hdr_reg(x-a) ^re[0-9]$ }
    use_backend two if { hdr_dom(x-a) dom }
    use_backend two if { hdr_len(x-a) 9 }
    use_backend two if { path_dir pdir }
    use_backend two if { path_reg ^/preg/[a-z]+$ }
    use_backend two if { path_sub /psub/ }
    use_backend two if { url /url?x }
    use_backend two if { url_beg /ubeg }
    use_backend two if { dst 127.0.0.1 } { path /dst }
    use_backend two if { req.ver 1.0 } { path /v10 }
    use_backend two if HTTP_1.1 { path /v11 }
    use_backend two if METH_GET { path /get }
    use_backend two if TRUE { path /true }
    use_backend two if FALSE || { always_false } || { path /false }
    use_backend two if { always_true } { path /always }
    use_backend %[req.hdr(x-up),upper,word(1,-)] if { req.hdr(x-up) -m found }
    use_backend %[path,map_reg(reg.map)] if { path_beg /legacy/ }
    use_backend %[req.hdr(host),map_dom(dom.map)] if { hdr_end(host) .example }
    default_backend one
""") + "backend TWO\n    server web2 127.0.0.1:%d\n" % farm[1].port)
    start_splicer(cfg.read_text(), [port])

    def via(**c) -> bytes:
        resp = get(port, **c)
        return served_by(resp) if b"x-served-by" in resp.lower() else resp.split(b"\r\n")[0]
    hdr = lambda v: dict(extra=b"X-A: " + v + b"\r\n")  # noqa: E731
    cases = [
        (dict(), b"web1"),
        (hdr(b"begin"), b"web2"), (hdr(b"xbeg"), b"web1"),
        (hdr(b"a-sub-b"), b"web2"), (hdr(b"asubb"), b"web1"),
        (hdr(b"re7"), b"web2"), (hdr(b"re77"), b"web1"),
        (hdr(b"www.dom.x"), b"web2"), (hdr(b"www.domx"), b"web1"),
        (hdr(b"123456789"), b"web2"), (hdr(b"12345678"), b"web1"),
        (dict(target=b"/a/pdir/b"), b"web2"), (dict(target=b"/a/pdirx"), b"web1"),
        (dict(target=b"/preg/abc"), b"web2"), (dict(target=b"/preg/ab1"), b"web1"),
        (dict(target=b"/x/psub/y"), b"web2"), (dict(target=b"/psubx"), b"web1"),
        (dict(target=b"/url?x"), b"web2"), (dict(target=b"/url?y"), b"web1"),
        (dict(target=b"/ubeg/x"), b"web2"), (dict(target=b"/dst"), b"web2"),
        (dict(target=b"/v11"), b"web2"), (dict(target=b"/get"), b"web2"),
        (dict(target=b"/get", method=b"HEAD"), b"web2"),  # METH_GET is GET or HEAD
        (dict(target=b"/get", method=b"POST", extra=b"Content-Length: 0\r\n"), b"web1"),
        (dict(target=b"/true"), b"web2"), (dict(target=b"/false"), b"web2"),
        (dict(target=b"/always"), b"web2"),
        (dict(extra=b"X-Up: two-x\r\n"), b"web2"),  # upper, word(1,-): backend TWO
        (dict(extra=b"X-Up: three\r\n"), b"web1"),  # no backend THREE: the default
        (dict(host=b"db.internal.example"), b"web2"), (dict(host=b"db.other.example"), b"web1"),
        (dict(target=b"/legacy/12"), b"web2"), (dict(target=b"/legacy/x"), b"web1"),
    ]
    got = [(c, via(**c)) for c, _ in cases]
    assert got == [(c, want) for c, want in cases]
    # HTTP/1.0 requests (req.ver, HTTP_1.1)
    assert served_by(exchange(port, b"GET /v10 HTTP/1.0\r\nHost: www.example\r\n\r\n")) == b"web2"
    assert served_by(exchange(port, b"GET /v11 HTTP/1.0\r\nHost: www.example\r\n\r\n")) == b"web1"


def test_query_rules_on_heads_that_repeat_but_for_their_query(start_splicer):
    """A kept-alive client sends one head with a new query each time (the case the head
    memo and the query prefilter serve: docs/configuration.md 7.7): each request is still
    decided by its own query, its own fields and its own path, in any order, and a head
    seen before with a harmless query is denied when its next query holds the pattern
    (in any case with -i, after ';' or '&', in an absolute-form URL). The four deny rules
    answer alike, so they are one merged rule (docs 7.7). Also `use_backend ...
    unless` and the integer operators `eq` and `le`."""
    a, b = named(b"A"), named(b"B")
    port = free_port()
    start_splicer(DEFAULTS + f"""
frontend www
    bind 127.0.0.1:{port}
    acl admin path_beg /admin
    acl bot hdr(user-agent) -m sub -i scanner
    acl dbg query -m sub -i debug=
    acl tok url_param(token) -m found
    acl two hdr_cnt(x-two) eq 2
    acl few hdr_cnt(x-few) le 1
    http-request deny deny_status 403 if admin
    http-request deny deny_status 403 if bot
    http-request deny deny_status 403 if dbg
    http-request deny deny_status 403 if tok
    use_backend b if two
    use_backend a unless few
    use_backend b if {{ path_beg /b }}
    default_backend a
""" + named_backends(a, b), [port])
    cases = [  # (target, extra fields, status, who answered: A, B or the proxy)
        (b"/x?n=1", b"", 200, b"A"), (b"/x?n=2", b"", 200, b"A"),
        (b"/x?n=3&debug=1", b"", 403, b""), (b"/x?n=4", b"", 200, b"A"),
        (b"/x?DeBuG=1", b"", 403, b""), (b"/x?a=1;token=2", b"", 403, b""),
        (b"/x?a=1&token", b"", 200, b"A"), (b"/x?xtoken=1", b"", 200, b"A"),
        (b"/x?n=5", b"User-Agent: Scanner/1\r\n", 403, b""), (b"/x?n=6", b"", 200, b"A"),
        (b"/admin?n=7", b"", 403, b""), (b"/x?n=8", b"", 200, b"A"),
        (b"http://www.example/x?debug=2", b"", 403, b""), (b"http://www.example/x?n=9", b"", 200, b"A"),
        (b"/b?n=10", b"", 200, b"B"), (b"/b?n=11&token=1", b"", 403, b""),
        (b"/x?n=12", b"X-Two: 1\r\nX-Two: 2\r\n", 200, b"B"),
        (b"/x?n=13", b"X-Two: 1\r\n", 200, b"A"),
        (b"/b?n=14", b"X-Few: 1\r\nX-Few: 2\r\n", 200, b"A"),  # `unless few` holds first
        (b"/b?n=15", b"X-Few: 1\r\n", 200, b"B"),
    ]
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        got = []
        for _ in range(2):  # twice over: what was remembered the first time answers the same
            for target, extra, _, _ in cases:
                s.sendall(b"GET %s HTTP/1.1\r\nHost: www.example\r\n%s\r\n" % (target, extra))
                head, body = read_response(s)
                got.append((target, int(head.split(b" ")[1]), body if head.startswith(b"HTTP/1.1 200") else b""))
        s.close()
        want = [(t, status, who) for t, _, status, who in cases]
        assert got == want + want
        # what reached the origins is exactly the requests let through (twice), in origin-form
        forwarded = sorted(h.split(b" ")[1] for _, _, h in a.requests + b.requests)
        allowed = [t.replace(b"http://www.example", b"") for t, _, status, _ in cases if status == 200]
        assert forwarded == sorted(allowed + allowed)
    finally:
        a.close()
        b.close()


def test_an_absolute_form_head_without_a_path_is_decided_by_its_own_path(start_splicer, farm):
    """OPTIONS http://h has the path "*", OPTIONS http://h?x the path "/": whichever comes
    first, each is decided by its own (a fresh tester found the second answered with the
    first's remembered verdict: the deny rule bypassed)."""
    port = free_port()
    start_splicer(farm_config(port, farm, """
    http-request deny if !{ path_beg / }
    http-request deny if { hdr_sub(user-agent) -i bot }
    default_backend one
"""), [port])

    def status(target: bytes) -> int:
        resp = exchange(port, b"OPTIONS %s HTTP/1.1\r\nHost: h\r\nUser-Agent: curl\r\nConnection: close\r\n\r\n"
                        % target)
        return int(resp.split(b" ")[1])
    got = [status(t) for t in (b"http://h?x", b"http://h", b"http://h?x", b"http://h", b"*")]
    assert got[1] == got[3] == got[4] == 403 and got[0] == got[2] != 403
