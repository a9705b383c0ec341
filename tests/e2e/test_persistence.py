"""Cookie persistence and use-server through the real `splicer` command, real origins and
http.client (haproxy configuration.txt "cookie", "use-server", "option persist",
"option redispatch"): a client stays on its server across requests and connections; a
cookie naming a DOWN server is balanced over (unless `option persist`); a cookie naming a
server that cannot be reached goes elsewhere only with `option redispatch`; the server's
own cookie is rewritten or prefixed."""
from __future__ import annotations

import http.client
import json
import time

from tests.e2e.conftest import Origin
from tests.e2e.helpers import KeepAliveOrigin, free_port, http_config

CHECK = "check inter 100ms rise 1 fall 1"


def get(port, path="/files/0", cookie=None, headers=None):
    """One GET on a new client connection: (status, served by, Set-Cookie values, Cache-control, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers=({"Cookie": cookie} if cookie else {}) | (headers or {}))
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return (resp.status, resp.getheader("X-Served-By"), resp.msg.get_all("Set-Cookie") or [],
            resp.getheader("Cache-control"), body)


def wait_log(sp, text, timeout=10.0):
    deadline = time.monotonic() + timeout
    while text not in sp.log():
        assert time.monotonic() < deadline, f"no {text!r} in the log"
        time.sleep(0.02)


def config(port, origins, extra_backend="", opts=""):
    lines = "".join(f"    server {o.name} 127.0.0.1:{o.port} cookie {o.name}-c {opts}\n" for o in origins)
    return http_config(port, [], extra_backend=extra_backend) + lines


def test_insert_keeps_a_client_on_its_server_across_requests_and_connections(start_splicer, farm):
    port = free_port()
    start_splicer(config(port, farm, "    cookie SRV insert indirect nocache httponly"), [port])
    status, first, cookies, cache, _ = get(port)
    assert (status, cookies, cache) == (200, [f"SRV={first}-c; path=/; HttpOnly"], "private")
    other = "web2" if first == "web1" else "web1"
    # without the cookie, roundrobin alternates; with it, every request sticks
    assert get(port)[:3] == (200, other, [f"SRV={other}-c; path=/; HttpOnly"])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(4):  # one kept-alive connection
        conn.request("GET", "/files/0", headers={"Cookie": f"SRV={first}-c"})
        resp = conn.getresponse()
        resp.read()
        assert (resp.status, resp.getheader("X-Served-By"), resp.getheader("Set-Cookie")) == (200, first, None)
    conn.close()
    for _ in range(4):  # new connections each time
        assert get(port, cookie=f"a=1; SRV={first}-c")[:4] == (200, first, [], None)
    # indirect: the server never sees splicer's cookie, and the others are kept
    status, by, cookies, _, body = get(port, "/headers", cookie=f"a=1; SRV={first}-c; b=2")
    seen = dict((k.lower(), v) for k, v in json.loads(body)["headers"])
    assert (status, by, cookies, seen["cookie"]) == (200, first, [], "a=1; b=2")


def test_secure_and_httponly_attributes_of_an_inserted_cookie(start_splicer, farm):
    """`cookie SRV insert secure httponly` (haproxy "cookie": secure adds the Secure
    attribute, httponly HttpOnly); without them, neither."""
    port = free_port()
    start_splicer(config(port, farm, "    cookie SRV insert secure httponly"), [port])
    status, by, cookies, _, _ = get(port)
    assert (status, cookies) == (200, [f"SRV={by}-c; path=/; HttpOnly; Secure"])
    port2 = free_port()
    start_splicer(config(port2, farm, "    cookie SRV insert"), [port2])
    status, by, cookies, _, _ = get(port2)
    assert (status, cookies) == (200, [f"SRV={by}-c; path=/"])


def test_unknown_cookie_value_is_balanced_and_gets_a_new_cookie(start_splicer, farm):
    port = free_port()
    start_splicer(config(port, farm, "    cookie SRV insert"), [port])
    status, by, cookies, cache, _ = get(port, cookie="SRV=nobody")
    assert (status, cookies, cache) == (200, [f"SRV={by}-c; path=/"], None)


def test_cookie_to_a_down_server_goes_elsewhere_with_a_new_cookie(start_splicer, www):
    a, b = Origin("a", www[0]), Origin("b", www[0])
    try:
        port = free_port()
        sp = start_splicer(config(port, [a, b], "    cookie SRV insert indirect", CHECK), [port])
        assert get(port, cookie="SRV=a-c")[:3] == (200, "a", [])
        a.stop()
        wait_log(sp, "server a is DOWN")
        # haproxy: a cookie naming a DOWN server is ignored (no option persist)
        for _ in range(3):
            assert get(port, cookie="SRV=a-c")[:3] == (200, "b", ["SRV=b-c; path=/"])
    finally:
        a.stop()
        b.stop()


def test_option_persist_sends_to_the_down_server_503_without_redispatch(start_splicer, www):
    a, b = Origin("a", www[0]), Origin("b", www[0])
    try:
        port = free_port()
        sp = start_splicer(config(port, [a, b], "    cookie SRV insert\n    option persist\n    retries 1",
                                  CHECK), [port])
        a.stop()
        wait_log(sp, "server a is DOWN")
        status, by, cookies, _, _ = get(port, cookie="SRV=a-c")
        assert (status, by) == (503, None)
        assert get(port)[:3] == (200, "b", ["SRV=b-c; path=/"])  # no cookie: balanced as usual
    finally:
        a.stop()
        b.stop()


def test_force_persist_sends_a_matching_request_to_the_down_server(start_splicer, www):
    """force-persist (haproxy 4.2): a request its condition matches keeps to the cookie's
    server even when that server is DOWN (here: 503, the server is gone); one it does not
    match is balanced elsewhere, as without it."""
    a, b = Origin("a", www[0]), Origin("b", www[0])
    try:
        port = free_port()
        sp = start_splicer(config(port, [a, b], "    cookie SRV insert\n    retries 1\n"
                                  "    force-persist if { hdr(x-force) 1 }", CHECK), [port])
        a.stop()
        wait_log(sp, "server a is DOWN")
        status, by, cookies, _, _ = get(port, cookie="SRV=a-c", headers={"X-Force": "1"})
        assert (status, by) == (503, None)
        assert get(port, cookie="SRV=a-c")[:3] == (200, "b", ["SRV=b-c; path=/"])
    finally:
        a.stop()
        b.stop()


def test_unreachable_persistent_server_redispatched_only_with_option_redispatch(start_splicer, www):
    """No health checks: the server stays UP for splicer, its connects fail. Without
    `option redispatch` the request keeps to it and gets 503; with it, the retry goes to
    another server, whose cookie the client gets."""
    a, b = Origin("a", www[0]), Origin("b", www[0])
    try:
        a.stop()
        port = free_port()
        start_splicer(config(port, [a, b], "    cookie SRV insert\n    retries 2"), [port])
        assert get(port, cookie="SRV=a-c")[:2] == (503, None)
        port2 = free_port()
        start_splicer(config(port2, [a, b], "    cookie SRV insert\n    retries 2\n    option redispatch"), [port2])
        assert get(port2, cookie="SRV=a-c")[:3] == (200, "b", ["SRV=b-c; path=/"])
    finally:
        b.stop()


def test_use_server_wins_and_falls_back_when_its_server_is_down(start_splicer, www):
    a, b = Origin("a", www[0]), Origin("b", www[0])
    try:
        port = free_port()
        sp = start_splicer(config(port, [a, b], "    acl to_b hdr(x-to) b\n    use-server b if to_b",
                                  CHECK), [port])
        for _ in range(4):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/files/0", headers={"X-To": "b"})
            resp = conn.getresponse()
            resp.read()
            conn.close()
            assert (resp.status, resp.getheader("X-Served-By")) == (200, "b")
        b.stop()
        wait_log(sp, "server b is DOWN")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/files/0", headers={"X-To": "b"})
        resp = conn.getresponse()
        resp.read()
        assert (resp.status, resp.getheader("X-Served-By")) == (200, "a")
    finally:
        a.stop()
        b.stop()


def test_ignore_persist_balances_and_sets_no_cookie(start_splicer, farm):
    port = free_port()
    start_splicer(config(port, farm, "    cookie SRV insert\n    ignore-persist if { path_beg /files/ }"), [port])
    got = [get(port, cookie="SRV=web1-c")[1:3] for _ in range(4)]
    assert sorted(by for by, _ in got) == ["web1", "web1", "web2", "web2"]
    assert [c for _, c in got] == [[], [], [], []]
    assert get(port, "/headers", cookie="SRV=web1-c")[1:3] == ("web1", [])  # the cookie decides again


def cookie_origin(name):
    """An origin that sets its own cookie APP=xyz and names itself."""
    def script(conn_no, req_no, head):
        return (b"HTTP/1.1 200 OK\r\nSet-Cookie: APP=xyz; Path=/app\r\nX-Served-By: " + name
                + b"\r\nContent-Length: 0\r\n\r\n", False)
    return KeepAliveOrigin(script)


def test_rewrite_and_prefix_modes_edit_the_servers_cookie(start_splicer):
    a, b = cookie_origin(b"a"), cookie_origin(b"b")
    try:
        port = free_port()
        lines = f"    server a 127.0.0.1:{a.port} cookie A\n    server b 127.0.0.1:{b.port} cookie B\n"
        start_splicer(http_config(port, [], extra_backend="    cookie APP rewrite") + lines, [port])
        assert get(port)[:3] == (200, "a", ["APP=A; Path=/app"])
        assert get(port, cookie="APP=B")[:3] == (200, "b", ["APP=B; Path=/app"])
        assert get(port, cookie="APP=B")[:3] == (200, "b", ["APP=B; Path=/app"])
        port2 = free_port()
        start_splicer(http_config(port2, [], extra_backend="    cookie APP prefix") + lines, [port2])
        assert get(port2, cookie="APP=B~xyz")[:3] == (200, "b", ["APP=B~xyz; Path=/app"])
        assert get(port2, cookie="APP=B~xyz")[:3] == (200, "b", ["APP=B~xyz; Path=/app"])
        # the prefix is stripped on the way in: the server sees its own value
        assert [h for _, _, h in b.requests][-1].endswith(b"\r\nCookie: APP=xyz\r\nX-Forwarded-For: 127.0.0.1")
    finally:
        a.close()
        b.close()


def stamp(unix: int) -> str:
    """A cookie date as haproxy writes it (UNIX time in 4-second units, 30 bits as 5 base64
    characters), computed with the stdlib."""
    import base64
    return base64.b64encode(((unix >> 2) << 18).to_bytes(6, "big"))[:5].decode()


def unstamp(text: str) -> int:
    import base64
    return int.from_bytes(base64.b64decode(text + "AAA="), "big") >> 18 << 2


DATED = "    cookie SRV insert indirect maxidle 30m maxlife 8h"


def test_maxidle_maxlife_insert_dates_and_ignore_an_expired_cookie(start_splicer, farm):
    port = free_port()
    start_splicer(config(port, farm, DATED), [port])
    t = int(time.time())
    status, by, cookies, _, _ = get(port)
    value = cookies[0].split(";")[0]
    srv, last, first = value.split("=", 1)[1].split("|")
    assert (status, srv, cookies[0].endswith("; path=/")) == (200, f"{by}-c", True)
    assert last == first and t - 4 <= unstamp(last) <= t + 60  # now, in 4-second units
    # idle for an hour (maxidle 30m): ignored, so the request is balanced and gets a new cookie
    idle = f"SRV=web1-c|{stamp(t - 3600)}|{stamp(t - 3600)}"
    got = [get(port, cookie=idle) for _ in range(2)]
    assert sorted(g[1] for g in got) == ["web1", "web2"]
    for _, by, cookies, _, _ in got:
        srv, last, first = cookies[0].split(";")[0].split("=", 1)[1].split("|")
        assert srv == f"{by}-c" and t - 4 <= unstamp(first) <= t + 60  # a new first visit
    # used a minute ago but first seen nine hours ago (maxlife 8h): ignored as well
    old = f"SRV=web1-c|{stamp(t - 60)}|{stamp(t - 9 * 3600)}"
    got = [get(port, cookie=old) for _ in range(2)]
    assert sorted(g[1] for g in got) == ["web1", "web2"] and all(g[2] for g in got)


def test_maxidle_a_valid_cookie_sticks_and_its_last_date_is_refreshed(start_splicer, farm):
    port = free_port()
    start_splicer(config(port, farm, DATED), [port])
    t = int(time.time())
    first = stamp(t - 3600)
    # last seen a minute ago: it sticks, and comes back with a new last date, same first date
    for _ in range(2):
        status, by, cookies, _, _ = get(port, cookie=f"SRV=web2-c|{stamp(t - 60)}|{first}")
        assert (status, by, len(cookies)) == (200, "web2", 1)
        srv, last, kept = cookies[0].split(";")[0].split("=", 1)[1].split("|")
        assert (srv, kept) == ("web2-c", first) and t - 4 <= unstamp(last) <= t + 60
    # a last date still to come: nothing to refresh, no Set-Cookie at all
    for _ in range(2):
        assert get(port, cookie=f"SRV=web2-c|{stamp(t + 600)}|{first}")[:3] == (200, "web2", [])
