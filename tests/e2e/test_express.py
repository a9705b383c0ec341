"""The express lane end to end (runtime/express.py): a frontend without access log, whose
request rules are plain edits the engine makes itself (conf/site.cfg's), has its plain requests routed and relayed by the engine (a connection's first one on a new
server connection, as `http-reuse safe` wants, one with `Connection: close` too), and every
counter, response and balancing decision is what the stream path gives (SPLICER_EXPRESS=off).

Real parts: the `splicer` command, KeepAliveOrigin servers, raw client sockets on 127.0.0.1.
"""
from __future__ import annotations

import socket
import time

import pytest

from tests.e2e.helpers import KeepAliveOrigin, free_port, recv_exactly
from tests.e2e.test_access_log import HTTPLOG, lines_of

CONFIG = """
global
    nbthread 1
    maxconn 200
defaults
    mode http
    option forwardfor
    timeout connect 2s
    timeout client 10s
    timeout server 10s
    timeout http-request 5s
    timeout http-keep-alive 5s
frontend www
    bind 127.0.0.1:{port}
    default_backend farm
backend farm
    balance roundrobin
{servers}
"""


def body_of(name: bytes, head: bytes) -> bytes:
    """What the test origins answer: their name and the request line."""
    return name + b" " + head.split(b"\r\n", 1)[0]


def origin(name: bytes) -> KeepAliveOrigin:
    """An origin that answers GET and HEAD with its name and the request line (a HEAD gets
    the same head, no body); /chunked with a chunked body (not for the engine to relay);
    /close with a response after which it closes the connection; /say-close with one that
    says `Connection: close` before it closes."""
    def script(conn_no, req_no, head):
        line = head.split(b"\r\n", 1)[0]
        body = body_of(name, head)
        if b" /chunked" in line:
            return (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Served-By: %s\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
                    % (name, len(body), body), False)
        head_out = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Served-By: %s\r\n\r\n" % (len(body), name)
        if line.startswith(b"HEAD "):
            return head_out, False
        if b" /say-close" in line:
            return head_out[:-2] + b"Connection: close\r\n\r\n" + body, True
        return head_out + body, b" /close" in line
    return KeepAliveOrigin(script, bodies=True)


def config(port: int, origins) -> str:
    servers = "\n".join(f"    server {o.tag} 127.0.0.1:{o.port}" for o in origins)
    return CONFIG.format(port=port, servers=servers)


@pytest.fixture
def two():
    made = []
    for name in (b"s1", b"s2"):
        o = origin(name)
        o.tag = name.decode()
        made.append(o)
    yield made
    for o in made:
        o.close()


REQUESTS = [
    b"GET /a?x=1 HTTP/1.1\r\nHost: h\r\nCookie: c=1\r\n\r\n",
    b"GET /b HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n",
    b"HEAD /c HTTP/1.1\r\nHost: h\r\n\r\n",
    b"GET /chunked HTTP/1.1\r\nHost: h\r\n\r\n",
    b"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc",
    b"GET /d HTTP/1.1\r\nHost: h\r\nUser-Agent: t\r\n\r\n",
    b"PUT /q HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n{\"a\": 123}",
    b"GET /e%20f HTTP/1.1\r\nHost: h\r\n\r\n",
    b"GET /g HTTP/1.1\r\nHost: h\r\n\r\n",
]


def read_response(s: socket.socket, head_request: bool = False) -> tuple[bytes, bytes]:
    """One whole response: (head, body); a body framed by Content-Length or chunked (the
    chunked framing kept), none for a HEAD request."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536, socket.MSG_PEEK)
        assert chunk, "closed before the end of the head"
        end = (buf + chunk).find(b"\r\n\r\n")
        buf += recv_exactly(s, len(chunk) if end < 0 else end + 4 - len(buf))
    head = buf[:-4]
    if head_request:
        return head, b""
    low = head.lower()
    if b"transfer-encoding: chunked" in low:
        body = b""
        while not body.endswith(b"0\r\n\r\n"):
            chunk = s.recv(65536)
            assert chunk, "closed before the end of the chunked body"
            body += chunk
        return head, body
    return head, recv_exactly(s, int(low.split(b"content-length:")[1].split(b"\r\n")[0]))


def run_session(port: int, requests: list[bytes], conns: int = 3) -> list[tuple[bytes, bytes]]:
    """Each of `conns` keep-alive connections sends every request in turn, one at a time;
    returns every (head, body) answered, in order."""
    out = []
    socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(conns)]
    try:
        for req in requests:
            for s in socks:
                s.sendall(req)
                out.append(read_response(s, req.startswith(b"HEAD ")))
    finally:
        for s in socks:
            s.close()
    return out


def served(results) -> list[bytes]:
    return [h.split(b"X-Served-By: ", 1)[1].split(b"\r\n", 1)[0] for h, _ in results]


def counters(sp) -> dict:
    st = sp.stats()
    fe = st["frontends"]["www"]
    be = st["backends"]["farm"]
    keys = ("req_tot", "bin", "bout", "hrsp_2xx", "hrsp_5xx", "reused", "terms", "spliced", "copied")
    return {"fe": {k: fe[k] for k in keys}, "be": {k: be[k] for k in keys},
            **{n: {k: s[k] for k in (*keys, "smax")} for n, s in be["servers"].items()}}


def settle(sp) -> None:
    """Until every credit's completion is counted (the last request's is reaped after its
    response went out)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        st = sp.stats()
        if st["frontends"]["www"]["req_tot"] == st["backends"]["farm"]["req_tot"] and \
                st["backends"]["farm"]["req_tot"] >= len(REQUESTS) * 3:
            return
        time.sleep(0.02)


def test_the_express_lane_serves_and_counts_as_the_stream_path(start_splicer, two):
    """The same requests with and without the lane: the same answers, the same servers in
    the same order and the same counters; with it, the engine served most of them by
    itself."""
    results, stats, express = {}, {}, {}
    for mode in ("off", "on"):
        port = free_port()
        sp = start_splicer(config(port, two), [port], env={"SPLICER_EXPRESS": mode})
        results[mode] = run_session(port, REQUESTS)
        settle(sp)
        stats[mode] = counters(sp)
        express[mode] = sp.stats().get("express", {})
        sp.stop()
    on, off = results["on"], results["off"]
    assert [h.split(b"\r\n", 1)[0] for h, _ in on] == [h.split(b"\r\n", 1)[0] for h, _ in off]
    assert served(on) == served(off)  # the balancer's turn, request by request
    assert stats["on"] == stats["off"]  # every counter, the servers' too
    assert express["off"] == {}
    lane = express["on"]["www"]
    assert lane["requests"] > 0 and lane["credits"] == 0
    for (h, b), req in zip(on, [r for r in REQUESTS for _ in range(3)]):
        name = h.split(b"X-Served-By: ", 1)[1].split(b"\r\n", 1)[0]
        want = body_of(name, req)
        if req.startswith(b"HEAD "):
            assert b == b"" and b"Content-Length: %d" % len(want) in h
        elif b"/chunked" in req:
            assert b == b"%x\r\n%s\r\n0\r\n\r\n" % (len(want), want)
        else:
            assert b == want, req


def test_an_httplog_frontend_takes_the_lane_and_logs_as_the_stream_path(start_splicer, two, tmp_path):
    """`option httplog` (no capture) leaves the lane open: the same requests with and
    without it give the same answers, counters and access log lines, field for field but
    the date, the client port and the timers (which are the machine's), and the timers
    of each line are those of one request served at once (no wait, no connect: a reused
    connection). A connection's first request goes the stream's way."""
    results, stats, express, logs = {}, {}, {}, {}
    n = len(REQUESTS) * 3
    for mode in ("off", "on"):
        port = free_port()
        path = tmp_path / f"access-{mode}.log"
        cfg = config(port, two).replace("    default_backend farm\n",
                                         f"    default_backend farm\n    option httplog\n"
                                         f"    log file@{path} format raw daemon\n")
        sp = start_splicer(cfg, [port], env={"SPLICER_EXPRESS": mode})
        results[mode] = run_session(port, REQUESTS)
        settle(sp)
        stats[mode] = counters(sp)
        express[mode] = sp.stats().get("express", {})
        logs[mode] = lines_of(path, n, " www ")
        sp.stop()
    assert [h for h, _ in results["on"]] == [h for h, _ in results["off"]]
    assert stats["on"] == stats["off"]
    assert express["off"] == {}
    lane = express["on"]["www"]
    # each connection's /b, /c, /d, /q and /g: not its first, nor /chunked (handed over: its
    # response is not for the engine), /p (after it: a response the stream sent arms nothing)
    # and /e%20f (its target)
    assert (lane["requests"], lane["handovers"], lane["connects"]) == (15, 3, 0)
    assert lane["streams"] == n - 15 == stats["on"]["fe"]["req_tot"] - 15  # (the stream's way: the other 12)

    def fields(line: str) -> tuple:
        m = HTTPLOG.match(line)
        assert m is not None, line
        d = m.groupdict()
        timers = [int(d[k]) for k in ("TR", "Tw", "Tc", "Tr", "Ta")]
        assert min(timers) >= 0 and timers[3] <= timers[4], line  # (every request had its answer)
        return tuple(v for k, v in d.items() if k not in ("cp", "tr", "TR", "Tw", "Tc", "Tr", "Ta"))

    assert sorted(map(fields, logs["on"])) == sorted(map(fields, logs["off"]))
    assert len({fields(ln)[-1] for ln in logs["on"]}) == len(REQUESTS)  # (each request line thrice)
    lane_lines = [d for d in (HTTPLOG.match(ln).groupdict() for ln in logs["on"])
                  if d["r"].split(" ")[1] in ("/b", "/c", "/d", "/q", "/g")]  # (the lane's 15, above)
    assert len(lane_lines) == 15
    for d in lane_lines:  # (a stream's Tw may read 1 ms on a loaded machine; the lane lends at once)
        assert (d["TR"], d["Tw"], d["Tc"]) == ("0", "0", "0"), d


def test_the_origin_gets_the_head_the_stream_path_sends(start_splicer, two):
    """Byte for byte: the request line and fields as received, the Connection field left
    out, X-Forwarded-For added last."""
    port = free_port()
    start_splicer(config(port, two[:1]), [port])
    req = b"GET /x?q=%d HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nX-A: 1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for i in range(4):
            s.sendall(req % i)
            read_response(s)
    heads = [h.rsplit(b"\r\n\r\n", 1)[0] for _, _, h in two[0].requests]
    assert len(heads) == 4
    assert all(h == b"GET /x?q=%d HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nX-Forwarded-For: 127.0.0.1" % i
               for i, h in enumerate(heads))


RULES = """    http-request set-header X-Forwarded-Proto http
    http-request set-header X-Forwarded-Host %[req.hdr(host)]
    http-request add-header Via "1.1 splicer"
    http-request del-header X-Debug
    http-request add-header X-Real-IP %ci
    http-request set-header X-Lang %[req.hdr(accept-language,2)]
"""

RULED = [
    b"GET /a?x=1 HTTP/1.1\r\nHost: www.example.com\r\nX-Forwarded-Proto: https\r\nVia: 1.0 client\r\n\r\n",
    b"GET /b HTTP/1.1\r\nhost: h:8080\r\nX-Debug: 1\r\nAccept-Language: en, fr ,de\r\nX-Debug: 2\r\n\r\n",
    b"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabc",
    b"HEAD /c HTTP/1.1\r\nHost: h\r\nAccept-Language: a\r\nAccept-Language: b, c\r\n\r\n",
    b"GET /e%20f HTTP/1.1\r\nHost: h\r\nX-Forwarded-Host: evil\r\n\r\n",
]


def test_request_rules_are_made_by_the_engine_as_by_the_stream_path(start_splicer, two):
    """conf/site.cfg's rules and others (a deletion, the client's address, an occurrence of
    a list): the origins get the same heads byte for byte with and without the lane, every
    counter is the same, and the engine made the rules on most requests itself."""
    heads, stats, express = {}, {}, {}
    for mode in ("off", "on"):
        for o in two:
            o.requests.clear()
        port = free_port()
        cfg = config(port, two).replace("    default_backend farm\n", "    default_backend farm\n" + RULES)
        sp = start_splicer(cfg, [port], env={"SPLICER_EXPRESS": mode})
        got = run_session(port, RULED)
        assert [h.split(b"\r\n", 1)[0] for h, _ in got] == [b"HTTP/1.1 200 OK"] * len(RULED) * 3
        settle_n(sp, len(RULED) * 3)
        stats[mode] = counters(sp)
        express[mode] = sp.stats().get("express", {})
        heads[mode] = [[h for _, _, h in o.requests] for o in two]
        sp.stop()
    assert heads["on"] == heads["off"]
    assert stats["on"] == stats["off"]
    lane = express["on"]["www"]
    assert lane["requests"] >= 12 and express["off"] == {}  # (/e%20f is not for the lane)
    first = heads["on"][0][0]
    assert first.startswith(b"GET /a?x=1 HTTP/1.1\r\nHost: www.example.com\r\nVia: 1.0 client\r\n"
                            b"X-Forwarded-Proto: http\r\nX-Forwarded-Host: www.example.com\r\n"
                            b"Via: 1.1 splicer\r\nX-Real-IP: 127.0.0.1\r\nX-Lang: \r\n"
                            b"X-Forwarded-For: 127.0.0.1\r\n\r\n"), first
    assert not any(b"X-Debug" in h for o in heads["on"] for h in o)
    assert any(b"X-Lang: fr\r\n" in h for o in heads["on"] for h in o)
    assert any(b"X-Lang: b\r\n" in h for o in heads["on"] for h in o)


def test_a_server_that_closes_its_idle_connections_loses_no_request(start_splicer, two):
    """/close makes the origin close after its response: the connection the lane may have
    lent is found closed (X_DEAD) or fails under the request (handed back, sent again on a
    new connection by the stream's rules): every request is answered."""
    port = free_port()
    sp = start_splicer(config(port, two), [port])
    reqs = [b"GET /close HTTP/1.1\r\nHost: h\r\n\r\n", b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n"] * 6
    got = run_session(port, reqs, conns=2)
    assert [h.split(b"\r\n", 1)[0] for h, _ in got] == [b"HTTP/1.1 200 OK"] * len(reqs) * 2
    settle_n(sp, len(reqs) * 2)
    st = sp.stats()
    assert st["frontends"]["www"]["req_tot"] == len(reqs) * 2
    assert st["frontends"]["www"]["hrsp_2xx"] == len(reqs) * 2


def settle_n(sp, n: int) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and sp.stats()["frontends"]["www"]["req_tot"] < n:
        time.sleep(0.02)


def test_a_server_put_in_maintenance_gets_no_more_express_requests(start_splicer, two):
    port = free_port()
    sp = start_splicer(config(port, two), [port])
    req = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
    assert set(served(run_session(port, [req] * 6, conns=2))) == {b"s1", b"s2"}
    out = sp.cli("@1 set server farm/s2 state maint")
    assert "error" not in out.lower()
    assert set(served(run_session(port, [req] * 8, conns=2))) == {b"s1"}


def test_which_requests_take_the_lane_and_which_are_handed_back(start_splicer, two):
    """One client, one server: the first request goes on a new connection, each qualifying
    one after it on an idle one (the server's pool always has it), the PUT with its body;
    /chunked is handed back (the engine does not relay a chunked body) and finished by its
    stream; the escaped target is not for the lane."""
    port = free_port()
    sp = start_splicer(config(port, two[:1]), [port])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for req in REQUESTS:
            s.sendall(req)
            head, body = read_response(s, req.startswith(b"HEAD "))
            assert head.startswith(b"HTTP/1.1 200 OK\r\n"), req
    deadline = time.monotonic() + 5
    while sp.stats()["frontends"]["www"]["req_tot"] < len(REQUESTS):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    lane = sp.stats()["express"]["www"]
    # /a (a new connection), /b, HEAD /c, /d, PUT, /g; /chunked (whose response its stream
    # relays: the POST after it is not armed); /e%20f does not ask
    assert (lane["requests"], lane["handovers"], lane["refused"], lane["credits"]) == (6, 1, 0, 0)
    assert lane["connects"] == 1
    fe = sp.stats()["frontends"]["www"]
    assert (fe["req_tot"], fe["hrsp_2xx"], fe["terms"]) == (len(REQUESTS), len(REQUESTS), {"--": len(REQUESTS)})


CLOSING = [b"GET /n%d HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" % i for i in range(6)] + \
    [b"HEAD /h HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", b"GET /k HTTP/1.1\r\nHost: h\r\n\r\n"]


def one_per_connection(port: int, requests: list[bytes]) -> list[tuple[bytes, bytes, bool]]:
    """Each request on a connection of its own: (head, body, whether the proxy closed the
    connection after the response) for each."""
    out = []
    for req in requests:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(req)
            head, body = read_response(s, req.startswith(b"HEAD "))
            s.settimeout(0.5 if b"Connection: close" not in req else 10)
            try:
                closed = s.recv(1) == b""
            except TimeoutError:
                closed = False
            out.append((head, body, closed))
    return out


def all_counters(sp) -> dict:
    """counters() and the connection ones: new connections (stot), failed connects, retries
    and redispatches."""
    st = sp.stats()
    be = st["backends"]["farm"]
    keys = ("stot", "econ", "wretr", "wredis")
    got = counters(sp)
    got["be"].update({k: be[k] for k in keys})
    for n, srv in be["servers"].items():
        got[n].update({k: srv[k] for k in keys})
    return got


def settle_be(sp, n: int) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and sp.stats()["backends"]["farm"]["req_tot"] < n:
        time.sleep(0.02)


def test_first_requests_take_the_lane_on_new_connections_and_count_as_the_stream_path(start_splicer, two):
    """A request per connection (`Connection: close`, as a client without keep-alive): the
    engine connects to the server the balancer picked, sends the request, relays the
    response with `Connection: close` and the session closes; answers, servers in order
    and every counter (new connections too) are the stream path's."""
    results, stats, lanes = {}, {}, {}
    for mode in ("off", "on"):
        port = free_port()
        sp = start_splicer(config(port, two), [port], env={"SPLICER_EXPRESS": mode})
        results[mode] = one_per_connection(port, CLOSING)
        settle_be(sp, len(CLOSING))
        stats[mode] = all_counters(sp)
        lanes[mode] = sp.stats().get("express", {}).get("www")
        sp.stop()
    on, off = results["on"], results["off"]
    assert [h.split(b"\r\n", 1)[0] for h, _, _ in on] == [b"HTTP/1.1 200 OK"] * len(CLOSING)
    assert served([(h, b) for h, b, _ in on]) == served([(h, b) for h, b, _ in off])
    assert [c for _, _, c in on] == [c for _, _, c in off] == [True] * (len(CLOSING) - 1) + [False]
    assert all(b"\r\nConnection: close" in h for h, _, _ in on[:-1])
    assert [b for _, b, _ in on] == [b for _, b, _ in off]
    assert stats["on"] == stats["off"]
    assert stats["on"]["be"]["stot"] == len(CLOSING)  # each opened its own (http-reuse safe)
    assert (lanes["on"]["requests"], lanes["on"]["connects"], lanes["on"]["handovers"]) == \
        (len(CLOSING), len(CLOSING), 0)


def test_a_first_request_whose_connect_fails_is_retried_as_by_the_stream_path(start_splicer, two):
    """A dead server in the farm (nothing listens on its port): the lane's connect to it is
    refused and the request's stream takes it as its first failed attempt (retries, option
    redispatch): every request is answered by a live server, and econ, wretr, wredis and
    the servers' order are what the stream path gives."""
    dead = free_port()
    results, stats, lanes = {}, {}, {}
    for mode in ("off", "on"):
        port = free_port()
        cfg = config(port, two[:1]).replace("    balance roundrobin\n", "    balance roundrobin\n    retries 2\n"
                                            "    option redispatch\n")
        cfg += f"    server dead 127.0.0.1:{dead}\n"
        sp = start_splicer(cfg, [port], env={"SPLICER_EXPRESS": mode})
        results[mode] = one_per_connection(port, CLOSING[:4])
        settle_be(sp, 4)
        stats[mode] = all_counters(sp)
        lanes[mode] = sp.stats().get("express", {}).get("www")
        sp.stop()
    on, off = results["on"], results["off"]
    assert [h.split(b"\r\n", 1)[0] for h, _, _ in on] == [b"HTTP/1.1 200 OK"] * 4
    assert served([(h, b) for h, b, _ in on]) == served([(h, b) for h, b, _ in off]) == [b"s1"] * 4
    assert stats["on"] == stats["off"]
    assert stats["on"]["dead"]["econ"] == 2 and stats["on"]["be"]["wredis"] == 2
    assert lanes["on"]["handovers"] == 2  # the two whose connect failed went to their streams


def test_a_response_that_says_close_gives_no_idle_connection_back(start_splicer, two):
    """The server's `Connection: close` on an express request: its connection is not put
    back in the pool (the stream path's rule), so no later request is sent on it."""
    port = free_port()
    sp = start_splicer(config(port, two[:1]), [port])
    reqs = [b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n", b"GET /say-close HTTP/1.1\r\nHost: h\r\n\r\n"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for req in reqs:
            s.sendall(req)
            head, _ = read_response(s)
            assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: close" not in head
        settle_be(sp, 2)
        assert sp.stats()["express"]["www"]["requests"] == 2
        srv = sp.stats()["backends"]["farm"]["servers"]["s1"]
        assert (srv["idle_conn_cur"], srv["stot"]) == (0, 1)
        s.sendall(reqs[0])
        assert read_response(s)[0].startswith(b"HTTP/1.1 200 OK\r\n")
    settle_be(sp, 3)
    assert sp.stats()["backends"]["farm"]["servers"]["s1"]["stot"] == 2  # a new connection


def test_a_first_request_whose_connect_times_out_ends_as_by_the_stream_path(start_splicer):
    """A server whose accept queue is full drops the SYN: the connect hangs past `timeout
    connect`, the lane's attempt times out and the request's stream ends it as its own
    (retries 0: 503, termination sC), the same answer and counters as the stream path."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    held = socket.create_connection(lst.getsockname())  # fills the accept queue
    try:
        got, stats = {}, {}
        for mode in ("off", "on"):
            port = free_port()
            cfg = CONFIG.format(port=port, servers=f"    server s1 127.0.0.1:{lst.getsockname()[1]}")
            cfg = cfg.replace("timeout connect 2s", "timeout connect 300ms").replace(
                "    balance roundrobin\n", "    balance roundrobin\n    retries 0\n")
            sp = start_splicer(cfg, [port], env={"SPLICER_EXPRESS": mode})
            got[mode] = [(h.split(b"\r\n", 1)[0], closed) for h, _, closed in
                         one_per_connection(port, [b"GET /t HTTP/1.1\r\nHost: h\r\n\r\n"])]
            settle_be(sp, 1)
            stats[mode] = all_counters(sp)
            lane = sp.stats().get("express", {}).get("www")
            sp.stop()
        assert (lane["connects"], lane["handovers"], lane["requests"]) == (1, 1, 0)  # (the "on" run's)
        assert got["on"] == got["off"] == [(b"HTTP/1.1 503 Service Unavailable", True)]
        assert stats["on"] == stats["off"]
        assert stats["on"]["be"]["terms"] == {"sC": 1} and stats["on"]["s1"]["econ"] == 1
    finally:
        held.close()
        lst.close()
