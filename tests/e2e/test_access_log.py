"""The access log (haproxy configuration.txt section 8): real `splicer`, real origins, real
clients, and the log read where it lands: a file, a UDP syslog socket, a unix datagram
socket. Each line is parsed with a regex written from haproxy's documented format
(8.2.3 "HTTP log format") and checked field by field; the termination cases are the
ones haproxy documents (8.5): client abort during the body (CD), server timeout (sD, sH),
connection refused (SC), a request the parser refuses (PR), queue timeout (sQ), a retry
redispatched to another server (the "+" before the retries).
"""
from __future__ import annotations

import os
import re
import socket
import time

import pytest

from tests.e2e.helpers import ScriptedOrigin, exchange, free_port, http_config, read_response, recv_all

# 8.2.3: %ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc
#        %sq/%bq %hr %hs %{+Q}r   (%hr / %hs only when headers are captured)
HTTPLOG = re.compile(
    r"(?P<ci>[0-9.]+):(?P<cp>\d+) \[(?P<tr>\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d\.\d{3})\] "
    r"(?P<ft>\S+) (?P<b>\S+)/(?P<s>\S+) "
    r"(?P<TR>-?\d+)/(?P<Tw>-?\d+)/(?P<Tc>-?\d+)/(?P<Tr>-?\d+)/(?P<Ta>\d+) "
    r"(?P<ST>-?\d+) (?P<B>\d+) (?P<CC>\S+) (?P<CS>\S+) (?P<tsc>[-A-Za-z]{4}) "
    r"(?P<ac>\d+)/(?P<fc>\d+)/(?P<bc>\d+)/(?P<sc>\d+)/(?P<rc>\+?\d+) (?P<sq>\d+)/(?P<bq>\d+)"
    r"(?: \{(?P<hr>[^{}]*)\})?(?: \{(?P<hs>[^{}]*)\})? \"(?P<r>[^\"]*)\"\Z")
# RFC 3164 as haproxy's default `local` format sends it, and RFC 5424 (section 6)
LOCAL = re.compile(r"<(?P<pri>\d+)>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d splicer\[(?P<pid>\d+)\]: (?P<msg>.*)\n\Z",
                   re.S)
RFC5424 = re.compile(r"<(?P<pri>\d+)>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d \S+ splicer (?P<pid>\d+)"
                     r" - - (?P<msg>.*)\n\Z", re.S)

OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"


def script(c: socket.socket, request: bytes) -> None:
    path = request.split(b" ", 2)[1]
    if path.startswith(b"/ok"):
        c.sendall(OK)
    elif path == b"/slow":
        time.sleep(1.0)  # beyond timeout server
    elif path == b"/stall":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
        time.sleep(1.0)
    elif path == b"/hold":
        time.sleep(0.8)
        c.sendall(OK)


class PathOrigin(ScriptedOrigin):
    def __init__(self) -> None:
        super().__init__(lambda c: script(c, self.requests[-1]))


@pytest.fixture(scope="module")
def origin():
    o = PathOrigin()
    yield o
    o.close()


def lines_of(path, n: int, match: str = "", timeout: float = 20.0) -> list[str]:
    """The first `n` lines of the log file `path` that contain `match`, waiting for them."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path) as f:
                got = [ln.rstrip("\n") for ln in f if match in ln]
        except FileNotFoundError:
            got = []
        if len(got) >= n:
            return got[:n]
        assert time.monotonic() < deadline, f"only {len(got)} of {n} log lines with {match!r}: {got}"
        time.sleep(0.02)


def parse(line: str) -> dict:
    m = HTTPLOG.match(line)
    assert m is not None, f"not haproxy's HTTP log format: {line!r}"
    return m.groupdict()


def start(start_splicer, tmp_path, servers, *, frontend: str = "", backend: str = "", defaults: str = "",
          server_timeout: str = "30s", server_opts: str = "", name: str = "access.log"):
    """A splicer logging its frontend `www` with option httplog to a file (format raw)."""
    port = free_port()
    path = tmp_path / name
    cfg = http_config(port, servers, extra_defaults=f"    option httplog\n{defaults}",
                      extra_frontend=f"    log file@{path} format raw daemon\n{frontend}",
                      extra_backend=backend, server_opts=server_opts)
    cfg = cfg.replace("timeout server 30s", f"timeout server {server_timeout}")
    sp = start_splicer(cfg, [port])
    sp.port = port
    return sp, path


def get(port: int, path: str, extra: bytes = b"") -> tuple[bytes, int]:
    """(the whole response, the client's port) of one GET on a new connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        cport = s.getsockname()[1]
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: a\r\n".encode() + extra + b"Connection: close\r\n\r\n")
        return recv_all(s), cport
    finally:
        s.close()


def test_httplog_fields_one_by_one(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)])
    before = time.time()
    resp, cport = get(sp.port, "/ok/fields")
    after = time.time()
    assert resp.endswith(b"\r\n\r\nok")
    (line,) = lines_of(path, 1, "/ok/fields")
    f = parse(line)
    assert (f["ci"], int(f["cp"])) == ("127.0.0.1", cport)
    date = time.mktime(time.strptime(f["tr"][:-4], "%d/%b/%Y:%H:%M:%S")) + int(f["tr"][-3:]) / 1000
    assert before - 1.0 <= date <= after + 0.001  # the request date, local time, ms
    assert (f["ft"], f["b"], f["s"]) == ("www", "farm", "o1")
    TR, Tw, Tc, Tr, Ta = (int(f[k]) for k in ("TR", "Tw", "Tc", "Tr", "Ta"))
    assert min(TR, Tw, Tc, Tr) >= 0 and Ta >= TR + Tw + Tc + Tr
    assert Ta <= (after - before) * 1000 + 1
    assert int(f["ST"]) == 200
    assert int(f["B"]) == len(resp)  # bytes sent to the client: head and body
    assert (f["CC"], f["CS"], f["tsc"]) == ("-", "-", "----")
    assert f["rc"] == "0" and (f["sq"], f["bq"]) == ("0", "0")
    assert int(f["ac"]) >= 1 and int(f["fc"]) >= 1
    assert f["hr"] is None and f["hs"] is None  # nothing captured: no braces
    assert f["r"] == "GET /ok/fields HTTP/1.1"


def test_captures_and_hostile_request_escaped(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)],
                     frontend="    option accept-invalid-http-request\n    capture request header X-Evil len 40\n    capture request header X-Host len 3\n"
                              "    capture request header X-Absent len 8\n"
                              "    capture response header Content-Type len 4\n")
    # a target with a quote and a '#', a field with obs-text, a quote and the capture
    # delimiters: every one of them is #XX in the line, which stays one line
    resp, _ = get(sp.port, '/ok/a"b#c', b'X-Evil: x\x80\xff"{|}\t end\r\nX-Host: abcdef\r\n')
    assert resp.endswith(b"ok")
    (line,) = lines_of(path, 1, "/ok/a")
    f = parse(line)
    assert f["r"] == "GET /ok/a#22b#23c HTTP/1.1"
    assert f["hr"] == "x#80#FF#22#7B#7C#7D#09 end|abc|"  # last occurrence, cut to len, absent empty
    assert f["hs"] == "text"
    with open(path, "rb") as fh:
        assert [x for x in fh.read().split(b"\n") if b"/ok/a" in x] == [line.encode()]  # one request, one line


def test_json_log_format_with_splice_counters(start_splicer, tmp_path, farm, www):
    import json
    sp, path = start(start_splicer, tmp_path, [(o.name, o.port) for o in farm[:1]],
                     frontend='    option dontlognull\n    log-format "%{+json}o %(client)ci %(status)ST %(bytes)B '
                              '%(spliced)[bytes_spliced] %(copied)[bytes_copied] %(request)r %(term)ts"\n')
    big, _ = get(sp.port, "/files/1m")
    small, _ = get(sp.port, "/files/1k")
    assert len(big) > 1 << 20 and len(small) > 1024
    lines = lines_of(path, 2, "request")
    rec = [json.loads(x) for x in lines]
    by = {r["request"]: r for r in rec}
    assert set(by) == {"GET /files/1m HTTP/1.1", "GET /files/1k HTTP/1.1"}
    b, s = by["GET /files/1m HTTP/1.1"], by["GET /files/1k HTTP/1.1"]
    assert (b["client"], b["status"], b["term"]) == ("127.0.0.1", 200, "--")
    assert b["bytes"] == len(big)
    assert b["spliced"] + b["copied"] == 1 << 20 and b["spliced"] > 0  # splice-auto: a 1 MiB body goes by pipe
    assert s["spliced"] + s["copied"] == 1024 and s["spliced"] == 0  # a 1 KiB one is copied


@pytest.mark.parametrize("fmt, frame", [("", LOCAL), ("format rfc5424", RFC5424)])
def test_syslog_over_udp(start_splicer, origin, fmt, frame):
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(20)
    try:
        port = free_port()
        cfg = http_config(port, [("o1", origin.port)], extra_defaults="    option httplog\n    option dontlognull\n",
                          extra_frontend=f"    log udp@127.0.0.1:{rx.getsockname()[1]} {fmt} local3\n")
        sp = start_splicer(cfg, [port])
        get(port, "/ok/udp")
        data = rx.recv(65536).decode()
        m = frame.match(data)
        assert m is not None, data
        assert int(m["pri"]) == 19 * 8 + 6  # local3.info: traffic is logged at level info
        assert int(m["pid"]) in sp.worker_pids()
        assert parse(m["msg"])["r"] == "GET /ok/udp HTTP/1.1"
    finally:
        rx.close()


def test_syslog_to_unix_datagram_socket_and_drops_once_gone(start_splicer, tmp_path, origin):
    sock_path = str(tmp_path / "log.sock")
    rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rx.bind(sock_path)
    rx.settimeout(20)
    port = free_port()
    cfg = http_config(port, [("o1", origin.port)], extra_defaults="    option httplog\n    option dontlognull\n",
                      extra_frontend=f"    log {sock_path} len 200 local0 info\n")
    sp = start_splicer(cfg, [port])
    try:
        get(port, "/ok/unix" + "x" * 300)
        data = rx.recv(65536)
        assert len(data) == 200 and data.endswith(b"\n")  # len 200: cut, the newline kept
        m = LOCAL.match(data.decode())
        assert m is not None and int(m["pri"]) == 16 * 8 + 6
        assert "/ok/unix" in m["msg"]
    finally:
        rx.close()
        os.unlink(sock_path)
    st = sp.stats()["log"]
    assert (st["sent"], st["dropped"]) == (1, 0)
    for i in range(3):  # the syslog daemon is gone: each line is dropped and counted, nothing blocks
        assert get(port, f"/ok/gone{i}")[0].endswith(b"ok")
    deadline = time.monotonic() + 20
    while (st := sp.stats()["log"])["dropped"] < 3:
        assert time.monotonic() < deadline, st
        time.sleep(0.05)
    assert (st["sent"], st["dropped"]) == (1, 3)
    assert st["targets"][sock_path] == {"sent": 1, "dropped": 3}


def test_udp_to_a_closed_port_counts_drops(start_splicer, origin):
    port, dead = free_port(), free_port()
    cfg = http_config(port, [("o1", origin.port)], extra_defaults="    option httplog\n    option dontlognull\n",
                      extra_frontend=f"    log 127.0.0.1:{dead} local0\n")
    sp = start_splicer(cfg, [port])
    for i in range(6):  # one batch each: the ICMP port-unreachable of one fails the next send
        assert get(port, f"/ok/{i}")[0].endswith(b"ok")
        time.sleep(0.05)
    deadline = time.monotonic() + 20
    while (st := sp.stats()["log"])["dropped"] < 1:
        assert time.monotonic() < deadline, st
        time.sleep(0.05)
    assert st["sent"] + st["dropped"] == 6 and st["dropped"] >= 1


def test_dontlognull(start_splicer, tmp_path, origin):
    for opt, logged in (("", True), ("    option dontlognull\n", False)):
        sp, path = start(start_splicer, tmp_path, [("o1", origin.port)], frontend=opt,
                         name="null.log" if logged else "dontlognull.log")
        s = socket.create_connection(("127.0.0.1", sp.port))
        s.close()  # a probe: connected, sent nothing
        get(sp.port, "/ok/after-probe")
        lines = lines_of(path, 1, "/ok/after-probe")
        assert lines
        with open(path) as fh:
            probes = [ln for ln in fh if "<BADREQ>" in ln]
        if logged:  # ours: CR, no request, 400 (haproxy's incomplete request)
            assert len(probes) >= 1
            f = parse(probes[-1].rstrip("\n"))
            assert (f["b"], f["s"], f["tsc"], f["ST"], f["TR"]) == ("www", "<NOSRV>", "CR--", "400", "-1")
        else:
            assert probes == []


def test_bad_request_is_pr_with_400_and_badreq(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)], frontend="    option dontlognull\n")
    resp = exchange(sp.port, b"GET /dup HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
    assert resp.startswith(b"HTTP/1.1 400 ")
    (line,) = lines_of(path, 1, "PR--")
    f = parse(line)
    assert (f["ft"], f["b"], f["s"], f["ST"], f["r"]) == ("www", "www", "<NOSRV>", "400", "<BADREQ>")
    assert (f["TR"], f["Tw"], f["Tc"], f["Tr"]) == ("-1", "-1", "-1", "-1")
    assert int(f["B"]) == len(resp)


def test_server_timeouts_sh_and_sd(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)], server_timeout="400ms",
                     frontend="    option dontlognull\n")
    resp, _ = get(sp.port, "/slow")
    assert resp.startswith(b"HTTP/1.1 504 ")
    resp2, _ = get(sp.port, "/stall")
    assert resp2.startswith(b"HTTP/1.1 200 ") and len(resp2) < 100000
    sh, sd = (parse(x) for x in (lines_of(path, 1, "/slow")[0], lines_of(path, 1, "/stall")[0]))
    assert (sh["tsc"], sh["ST"], sh["Tr"], sh["s"]) == ("sH--", "504", "-1", "o1")
    assert int(sh["Ta"]) >= 400 and int(sh["Tc"]) >= 0
    assert (sd["tsc"], sd["ST"]) == ("sD--", "200")
    assert int(sd["Tr"]) >= 0 and int(sd["Ta"]) >= 400 + int(sd["Tr"])
    assert int(sd["B"]) == len(resp2)


def test_connection_refused_is_sc_with_503(start_splicer, tmp_path):
    sp, path = start(start_splicer, tmp_path, [("dead", free_port())], backend="    retries 1\n",
                     frontend="    option dontlognull\n")
    resp, _ = get(sp.port, "/refused")
    assert resp.startswith(b"HTTP/1.1 503 ")
    f = parse(lines_of(path, 1, "/refused")[0])
    # haproxy 8.2.3: %s is "the last server to which the connection was sent" (haproxy 2.6
    # logs farm/dead here too); <NOSRV> is for a request that never reached one
    assert (f["tsc"], f["ST"], f["b"], f["s"]) == ("SC--", "503", "farm", "dead")
    assert (f["Tw"], f["Tc"], f["Tr"]) == ("0", "-1", "-1")
    assert f["rc"] == "1"  # one retry was made (retries 1), to the same server: no "+"


def test_retry_redispatched_to_another_server_has_plus(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("dead", free_port()), ("o1", origin.port)],
                     backend="    balance first\n    retries 2\n    option redispatch\n",
                     frontend="    option dontlognull\n")
    resp, _ = get(sp.port, "/ok/redispatch")
    assert resp.endswith(b"ok")
    f = parse(lines_of(path, 1, "/ok/redispatch")[0])
    assert (f["tsc"], f["ST"], f["s"], f["rc"]) == ("----", "200", "o1", "+1")


def test_client_abort_during_body_is_cd(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)], frontend="    option dontlognull\n")
    s = socket.create_connection(("127.0.0.1", sp.port), timeout=5)
    s.sendall(b"POST /ok/upload HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n" + b"y" * 500)
    time.sleep(0.2)
    s.close()
    f = parse(lines_of(path, 1, "/ok/upload")[0])
    assert f["tsc"] == "CD--"
    assert f["r"] == "POST /ok/upload HTTP/1.1"


def test_queue_timeout_is_sq_with_503(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)], server_timeout="5s",
                     frontend="    option dontlognull\n", backend="    timeout queue 300ms\n",
                     server_opts="maxconn 1")
    holder = socket.create_connection(("127.0.0.1", sp.port), timeout=10)
    holder.sendall(b"GET /hold HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")  # takes the one slot
    deadline = time.monotonic() + 10
    while sp.stats()["backends"]["farm"]["servers"]["o1"]["scur"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    resp, _ = get(sp.port, "/ok/queued")
    assert resp.startswith(b"HTTP/1.1 503 ")
    assert recv_all(holder).endswith(b"ok")
    holder.close()
    f = parse(lines_of(path, 1, "/ok/queued")[0])
    assert (f["tsc"], f["ST"], f["s"]) == ("sQ--", "503", "<NOSRV>")
    assert int(f["Tw"]) >= 300 and (f["Tc"], f["Tr"]) == ("-1", "-1")


def test_ambiguous_target_refused_locally_is_logged_with_its_request(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)], frontend="    option dontlognull\n")
    resp, _ = get(sp.port, '/ok/a#b')  # splicer refuses an ambiguous target itself (400)
    assert resp.startswith(b"HTTP/1.1 400 ")
    f = parse(lines_of(path, 1, "/ok/a")[0])
    assert (f["r"], f["ST"], f["s"], f["tsc"]) == ("GET /ok/a#23b HTTP/1.1", "400", "<NOSRV>", "PR--")


def test_a_request_after_a_local_answer_is_not_the_connections_first(start_splicer, tmp_path, origin):
    """On one keep-alive connection: a request denied by a rule (403), a pause, a request
    forwarded, then the client closes. As haproxy logs them: the forwarded one is not the
    connection's first (its date is its own, TR 0, not counted from the accept), and the
    close of the idle connection after them is no empty connection (no `CR` <BADREQ> line,
    even without option dontlognull)."""
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)],
                     frontend="    http-request deny if { path_beg /deny }\n")
    s = socket.create_connection(("127.0.0.1", sp.port), timeout=10)
    cport = s.getsockname()[1]
    try:
        s.sendall(b"GET /deny/1 HTTP/1.1\r\nHost: a\r\n\r\n")
        head, _ = read_response(s)
        assert head.startswith(b"HTTP/1.1 403 ")
        time.sleep(0.3)
        sent_at = time.time()
        s.sendall(b"GET /ok/after HTTP/1.1\r\nHost: a\r\n\r\n")
        head, body = read_response(s)
        answered_at = time.time()
        assert head.startswith(b"HTTP/1.1 200 ") and body == b"ok"
    finally:
        s.close()
    denied, = lines_of(path, 1, "/deny/1")
    ok, = lines_of(path, 1, "/ok/after")
    f = parse(ok)
    date = time.mktime(time.strptime(f["tr"][:-4], "%d/%b/%Y:%H:%M:%S")) + int(f["tr"][-3:]) / 1000
    assert date >= sent_at - 0.05, (ok, sent_at)  # its own request's date, not the accept's
    # its own duration, within what the client saw (from the accept it would be 300 ms more)
    assert f["TR"] == "0" and int(f["Ta"]) <= (answered_at - sent_at) * 1000 + 2, ok
    assert parse(denied)["ST"] == "403"
    # after the close, a later connection's line: the close was logged before it, if at all
    probe, _ = get(sp.port, "/ok/probe")
    assert probe.endswith(b"ok")
    lines_of(path, 1, "/ok/probe")
    with open(path) as fh:
        mine = [ln for ln in fh.read().splitlines() if ln.startswith(f"127.0.0.1:{cport} ")]
    assert mine == [denied, ok], mine  # two requests, two lines: the idle close is no empty connection


def test_locally_answered_requests_are_timed_and_dated_as_streams(start_splicer, tmp_path, origin):
    """Two denied requests on one connection, after pauses: the first's TR runs from the
    accept (the pause before it), Ti 0; the second is dated from its own head, Ti is the
    pause before it, TR 0, and Ta only its own answer (haproxy 8.4, as for a stream)."""
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)],
                     frontend="    http-request deny if { path_beg /deny }\n",
                     defaults='    log-format "%tr Ti=%Ti TR=%TR Ta=%Ta Tt=%Tt %ST %r"\n')
    tc = time.time()
    s = socket.create_connection(("127.0.0.1", sp.port), timeout=10)
    try:
        time.sleep(0.3)
        s.sendall(b"GET /deny/1 HTTP/1.1\r\nHost: a\r\n\r\n")
        assert read_response(s)[0].startswith(b"HTTP/1.1 403 ")
        t1 = time.time()
        time.sleep(0.5)
        t2 = time.time()
        s.sendall(b"GET /deny/2 HTTP/1.1\r\nHost: a\r\n\r\n")
        assert read_response(s)[0].startswith(b"HTTP/1.1 403 ")
        t3 = time.time()
    finally:
        s.close()
    pat = re.compile(r"(\S+) Ti=(-?\d+) TR=(-?\d+) Ta=(\d+) Tt=(\d+) 403 GET /deny/(\d) HTTP/1.1\Z")
    got = {}
    for ln in lines_of(path, 2, "/deny/"):
        m = pat.match(ln)
        assert m is not None, ln
        date = time.mktime(time.strptime(m.group(1)[:-4], "%d/%b/%Y:%H:%M:%S")) + int(m.group(1)[-3:]) / 1000
        got[m.group(6)] = (date, *(int(m.group(i)) for i in (2, 3, 4, 5)))
    date, Ti, TR, Ta, Tt = got["1"]
    assert Ti == 0 and TR >= 290 and Ta >= TR and Ta <= (t1 - tc) * 1000 + 2, got["1"]  # from the accept
    date, Ti, TR, Ta, Tt = got["2"]
    assert date >= t2 - 0.05, (got["2"], t2)  # its own head's date, not the end of the first answer
    assert TR == 0 and Ti >= 490 and Ta <= (t3 - t2) * 1000 + 2 and Tt == Ti + Ta, got["2"]


@pytest.mark.parametrize("checks", [False, True])
def test_server_state_changes_and_log_health_checks(start_splicer, tmp_path, origin, checks):
    path = tmp_path / "backend.log"
    port = free_port()
    cfg = http_config(port, [("o1", origin.port), ("gone", free_port())], server_opts="check inter 100ms fall 2 rise 2",
                      extra_backend=f"    log file@{path} format raw daemon\n"
                                    + ("    option log-health-checks\n" if checks else ""))
    start_splicer(cfg, [port])
    (down,) = lines_of(path, 1, "Server farm/gone is DOWN")
    assert down == "Server farm/gone is DOWN, reason: L4CON, 2 in a row."
    with open(path) as f:
        text = f.read()
    lines = text.splitlines()
    failed = [ln for ln in lines if ln.startswith("Health check for server farm/gone failed")]
    o1 = [ln for ln in lines if "farm/o1" in ln]
    if checks:  # a check whose result differs from the last one's: the first of each server, here
        assert failed == ["Health check for server farm/gone failed, reason: L4CON, status: 1/2 UP."]
        assert o1 == ["Health check for server farm/o1 succeeded, reason: L4OK, status: 2/2 UP."]
    else:  # only state changes: a server that stays up logs nothing
        assert (failed, o1) == ([], [])


# 8.2.2: %ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq
TCPLOG = re.compile(
    r"(?P<ci>[0-9.]+):(?P<cp>\d+) \[(?P<t>\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d\.\d{3})\] (?P<ft>\S+) "
    r"(?P<b>\S+)/(?P<s>\S+) (?P<Tw>-?\d+)/(?P<Tc>-?\d+)/(?P<Tt>\d+) (?P<B>\d+) (?P<ts>\S\S) "
    r"(?P<ac>\d+)/(?P<fc>\d+)/(?P<bc>\d+)/(?P<sc>\d+)/(?P<rc>\+?\d+) (?P<sq>\d+)/(?P<bq>\d+)\Z")


def tcplog_config(port: int, path, server: int, *, backend: str = "", frontend: str = "") -> str:
    """A tcp-mode frontend `tcpin` logging with option tcplog to the file `path`, its
    backend `tcpfarm` one server on port `server` (named o1, or as `backend` says)."""
    return f"""
global
    nbthread 1
defaults
    mode tcp
    option tcplog
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend tcpin
    bind 127.0.0.1:{port}
    log file@{path} format raw daemon
{frontend}    default_backend tcpfarm
backend tcpfarm
{backend or f"    server o1 127.0.0.1:{server}"}
"""


def test_tcplog_for_a_tcp_connection(start_splicer, tmp_path, origin):
    port = free_port()
    path = tmp_path / "tcp.log"
    start_splicer(tcplog_config(port, path, origin.port, frontend="    option dontlognull\n"), [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    cport = s.getsockname()[1]
    s.sendall(b"GET /ok/tcp HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    got = recv_all(s)
    s.close()
    assert got.endswith(b"ok")
    line = lines_of(path, 1, f":{cport} ")[0]
    m = TCPLOG.match(line)
    assert m is not None, line
    f = m.groupdict()
    assert (f["ci"], int(f["cp"]), f["ft"], f["b"], f["s"], f["ts"]) == ("127.0.0.1", cport, "tcpin", "tcpfarm",
                                                                         "o1", "--")
    assert int(f["B"]) == len(got) and int(f["Tw"]) >= 0 and int(f["Tc"]) >= 0
    assert int(f["Tt"]) >= int(f["Tw"]) + int(f["Tc"])


def test_tcplog_connect_failure_names_the_server_tried(start_splicer, tmp_path):
    """tcp mode, the only server refusing: SC, and the server the connection was sent to
    (haproxy's %s), as in http mode."""
    port = free_port()
    path = tmp_path / "tcp.log"
    start_splicer(tcplog_config(port, path, 0, backend=f"    retries 1\n    server dead 127.0.0.1:{free_port()}"),
                  [port])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    cport = s.getsockname()[1]
    s.sendall(b"hello")
    assert recv_all(s) in (b"", b"<RST>")  # closed: no server
    s.close()
    f = TCPLOG.match(lines_of(path, 1, f":{cport} ")[0]).groupdict()
    # one retry (retries 1), and no queue wait: the connects' time is in Tt only (haproxy 8.4)
    assert (f["b"], f["s"], f["ts"], f["Tw"], f["Tc"], f["rc"]) == ("tcpfarm", "dead", "SC", "0", "-1", "1")


def test_stdout_target(start_splicer, origin):
    port = free_port()
    cfg = http_config(port, [("o1", origin.port)], extra_defaults="    option httplog\n    option dontlognull\n",
                      extra_frontend="    log stdout format raw daemon\n")
    sp = start_splicer(cfg, [port])
    get(port, "/ok/stdout")
    deadline = time.monotonic() + 20
    while not (lines := [ln for ln in sp.log().splitlines() if "/ok/stdout" in ln]):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert parse(lines[0])["r"] == "GET /ok/stdout HTTP/1.1"


def test_the_exporter_and_the_stats_page_are_logged_as_haproxy_logs_them(start_splicer, tmp_path, origin):
    """haproxy logs a request its prometheus exporter or its stats page answered, with
    "<PROMEX>" or "<STATS>" as the server and LR-- as the termination state."""
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)],
                     frontend="    http-request use-service prometheus-exporter if { path /metrics }\n"
                              "    stats enable\n    stats uri /stats\n")
    resp, _ = get(sp.port, "/metrics")
    assert resp.startswith(b"HTTP/1.1 200 ") and b"haproxy_frontend_" in resp
    page, _ = get(sp.port, "/stats;csv")
    assert page.startswith(b"HTTP/1.1 200 ")
    m = parse(lines_of(path, 1, "/metrics")[0])
    assert (m["ft"], m["b"], m["s"], m["ST"], m["tsc"], m["r"]) == (
        "www", "www", "<PROMEX>", "200", "LR--", "GET /metrics HTTP/1.1")
    assert int(m["B"]) == len(resp)
    s = parse(lines_of(path, 1, "/stats")[0])
    assert (s["b"], s["s"], s["ST"], s["tsc"], s["r"]) == ("www", "<STATS>", "200", "LR--", "GET /stats;csv HTTP/1.1")
    assert int(s["B"]) == len(page)


def test_bytes_count_alike_on_the_frontend_the_backend_and_the_server(start_splicer, tmp_path, origin):
    """haproxy adds a stream's bytes, heads included, to its frontend, backend and server
    alike (what the client sent, what it got): the log line's bytes are the same."""
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)])

    def now() -> list[dict]:
        st = sp.stats()
        return [st["frontends"]["www"], st["backends"]["farm"], st["backends"]["farm"]["servers"]["o1"]]
    before = now()
    resp, _ = get(sp.port, "/ok/x", b"X-Pad: " + b"p" * 100 + b"\r\n")
    assert resp.startswith(b"HTTP/1.1 200 ")
    f = parse(lines_of(path, 1, "/ok/x")[0])
    after = now()
    bout = [a["bout"] - b["bout"] for a, b in zip(after, before)]
    bin_ = [a["bin"] - b["bin"] for a, b in zip(after, before)]
    assert bout == [int(f["B"])] * 3 and int(f["B"]) == len(resp)
    assert bin_[0] == bin_[1] == bin_[2] > 100
