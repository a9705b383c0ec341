"""The runtime API (`stats socket`): every command through socat, levels, prompt mode, and
the changes it makes to a running splicer (drain under load, weights, every worker, a
worker restart, the server-state-file). Real processes, real sockets on 127.0.0.1."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections import Counter


from tests.e2e.helpers import ThreadedServer, free_port, read_response


def cli(path: str, text: str, timeout: float = 20.0) -> str:
    """Send `text` to the stats socket `path` with socat and return all it answered."""
    out = subprocess.run(["socat", "-t", "5", "-", f"UNIX-CONNECT:{path}"], input=text.encode(),
                         capture_output=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode()


def wait_socket(path: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"no stats socket at {path}"
        time.sleep(0.01)


class NamedOrigin(ThreadedServer):
    """An HTTP/1.1 origin answering every request with its name as the body and in
    X-Served-By, keeping connections alive. GET /slow sends a 2 MiB body: the first half at
    once, the rest when `release` is set. `served` counts the requests it received."""

    SLOW = 2 << 20

    def __init__(self, name: str) -> None:
        self.name = name.encode()
        self.served = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = c.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                with self.lock:
                    self.served += 1
                if head.startswith(b"GET /slow "):
                    half = self.SLOW // 2
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Served-By: %s\r\n\r\n"
                              % (self.SLOW, self.name) + b"a" * half)
                    self.release.wait(60)
                    c.sendall(b"b" * half)
                    continue
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Served-By: %s\r\n\r\n%s"
                          % (len(self.name), self.name, self.name))
        except OSError:
            pass
        finally:
            c.close()


def config(tmp_path, port: int, servers: list[tuple[str, int, str]], nbthread: int = 1, extra_global: str = "",
           extra_backend: str = "") -> tuple[str, str]:
    """A config with three stats sockets (admin, operator, user) in tmp_path; returns
    (config text, socket directory)."""
    d = str(tmp_path)
    lines = "\n".join(f"    server {n} 127.0.0.1:{p} {opts}" for n, p, opts in servers)
    return f"""
global
    nbthread {nbthread}
    stats socket {d}/admin.sock mode 600 level admin
    stats socket {d}/oper.sock level operator
    stats socket {d}/user.sock level user
    stats timeout 2m
{extra_global}
defaults
    mode http
    timeout connect 2s
    timeout client 20s
    timeout server 20s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
{extra_backend}
{lines}
""", d


def get(port: int, path: str = "/", keep: socket.socket | None = None) -> tuple[bytes, bytes]:
    """One GET on a new connection (closed after); (head, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
        return read_response(s)


def served_by(head: bytes) -> str:
    return re.search(rb"X-Served-By: (\S+)", head).group(1).decode()


def server_rows(text: str) -> dict[str, list[str]]:
    """`show servers state` rows by server name (after checking the two header lines)."""
    lines = text.strip("\n").split("\n")
    assert lines[0] == "1"
    assert lines[1].startswith("# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state "
                               "srv_uweight srv_iweight ")
    return {r.split()[3]: r.split() for r in lines[2:]}


def test_show_commands_through_socat(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, "weight 3"), ("s2", origins[1].port, "")], nbthread=2)
    sp = start_splicer(cfg, [port], workers=2)
    wait_socket(f"{d}/admin.sock")
    assert os.stat(f"{d}/admin.sock").st_mode & 0o777 == 0o600  # `mode 600`
    assert not [n for n in os.listdir(d) if n.endswith(".tmp")]
    for _ in range(6):
        assert get(port)[0].startswith(b"HTTP/1.1 200")
    info = cli(f"{d}/admin.sock", "show info\n")
    assert info.endswith("\n\n")
    fields = dict(line.split(": ", 1) for line in info.strip("\n").split("\n"))
    assert fields["Name"] == "splicer"
    assert fields["Nbthread"] == "2"
    assert fields["Pid"] == str(sp.proc.pid)
    assert fields["CumReq"] == "6"
    assert fields["CumConns"] == "6"  # (start_splicer waits for the port without connecting)
    assert re.fullmatch(r"\d+d \d+h\d\dm\d\ds", fields["Uptime"])

    rows = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))
    assert rows["s1"][:9] == ["2", "be", "1", "s1", "127.0.0.1", "2", "0", "3", "3"]
    assert rows["s2"][18] == str(origins[1].port)
    assert cli(f"{d}/user.sock", "show servers state nope\n") == "Can't find backend 'nope'.\n\n"

    assert cli(f"{d}/user.sock", "show backend\n") == "# name\nbe\n\n"
    counters = json.loads(cli(f"{d}/user.sock", "show counters\n").split("\n")[0])
    assert counters["frontends"]["fe"]["req_tot"] == 6
    assert sorted(counters["worker"]) == [1, 2]
    # several commands on one line: each answer ends with an empty line
    both = cli(f"{d}/admin.sock", "show backend;show cli level\n")
    assert both == "# name\nbe\n\nadmin\n\n"
    helped = cli(f"{d}/user.sock", "help\n")
    assert "  show servers state [<backend>]" in helped and "set server" not in helped
    assert "set server <bk>/<srv> [opts]" in cli(f"{d}/admin.sock", "help\n")


def test_show_errors_prints_refused_bytes_escaped(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, "")])
    start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\nBad: a\x01b\\c\r\n\r\n")
        head, _ = read_response(s)
    assert head.startswith(b"HTTP/1.1 400")
    out = cli(f"{d}/oper.sock", "show errors\n")
    assert out.startswith("Total events captured on [")
    assert ": 1\n" in out.split("\n")[0] + "\n"
    assert "frontend fe (#1): invalid request" in out
    assert "answered 400" in out
    assert "  00000  GET /x HTTP/1.1\\r\\n\n" in out
    assert "  00026  Bad: a\\x01b\\\\c\\r\\n\n" in out
    assert "\n\n" not in out[:-2]  # no empty line inside the answer
    assert cli(f"{d}/user.sock", "show errors\n") == "Permission denied\n\n"
    # an oversized head (431) and an unknown transfer coding (501) are captured too
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 20000 + b"\r\n\r\n")
        assert read_response(s)[0].startswith(b"HTTP/1.1 431")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST /te HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        assert read_response(s)[0].startswith(b"HTTP/1.1 501")
    out = cli(f"{d}/admin.sock", "show errors\n")
    assert out.split("\n")[0].endswith("] : 3")
    assert "answered 431" in out and "  00000  GET /big HTTP/1.1\\r\\n\n" in out
    assert re.search(r"\n  len 1638[0-9]\n", out)  # the bytes up to tune.bufsize
    assert "answered 501" in out and "Transfer-Encoding: gzip, chunked\\r\\n" in out


def test_levels_and_bad_commands(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "")])
    start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    user, oper, admin = (f"{d}/{n}.sock" for n in ("user", "oper", "admin"))
    for cmd in ("disable server be/s1", "set server be/s1 weight 2", "show sess", "clear counters",
                "shutdown sessions server be/s1", "enable health be/s1"):
        assert cli(user, cmd + "\n") == "Permission denied\n\n", cmd
    for cmd in ("set server be/s1 state drain", "clear counters all", "disable health be/s1"):
        assert cli(oper, cmd + "\n") == "Permission denied\n\n", cmd
    assert cli(oper, "clear counters\n") == "\n"
    assert cli(oper, "show sess\n").endswith("\n")
    # a session lowers its own level, never raises it
    assert cli(admin, "user;show cli level;operator\n") == "\nuser\n\nPermission denied\n\n"
    unknown = cli(user, "shwo info\n")
    assert unknown.startswith("Unknown command")
    assert "show info" in unknown
    assert cli(admin, "disable server be\n") == "Require 'backend/server'.\n\n"
    assert cli(admin, "disable server nope/s1\n") == "No such backend.\n\n"
    assert cli(admin, "set server be/s9 weight 1\n") == "No such server.\n\n"
    assert cli(admin, "set server be/s1 weight 300\n") == \
        "Absolute weight can only be between 0 and 256 inclusive.\n\n"
    assert cli(admin, "set server be/s1 state off\n") == \
        "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n\n"
    assert cli(admin, "set server be/s1\n").startswith("usage: set server <backend>/<server> ")
    assert cli(admin, "enable health be/s1\n") == \
        "Health check was not configured on this server, cannot enable.\n\n"


def test_prompt_mode(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, "")])
    start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(f"{d}/admin.sock")
        s.sendall(b"prompt\n")
        got = b""
        while not got.endswith(b"> "):
            got += s.recv(4096)
        assert got == b"\n> "
        s.sendall(b"show backend\n")
        got = b""
        while not got.endswith(b"> "):
            got += s.recv(4096)
        assert got == b"# name\nbe\n\n> "
        s.sendall(b"show cli level;quit;show backend\n")
        got = b""
        while chunk := s.recv(4096):
            got += chunk
        assert got == b"admin\n\n"  # quit closes at once: the rest of the line is not run
    # without prompt, the connection carries one line (and those sent with it, as haproxy
    # runs the lines already in its buffer), then closes
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(f"{d}/admin.sock")
        s.sendall(b"show backend\nshow cli level\n")
        got = b""
        while chunk := s.recv(4096):
            got += chunk
    assert got == b"# name\nbe\n\nadmin\n\n"
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(f"{d}/admin.sock")
        s.sendall(b"show cli level\n")
        got = b""
        while chunk := s.recv(4096):  # the splicer end closes after the answer
            got += chunk
    assert got == b"admin\n\n"
    assert cli(f"{d}/admin.sock", "show cli level") == "admin\n\n"  # a last line without its end of line


def test_drain_under_load_stops_new_sessions_and_finishes_in_flight(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "")])
    start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    # a slow download in flight on one server
    slow = socket.create_connection(("127.0.0.1", port), timeout=30)
    slow.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += slow.recv(65536)
    head, _, body = head.partition(b"\r\n\r\n")
    victim = served_by(head)
    drained = origins[0] if victim == "s1" else origins[1]
    other = origins[1] if victim == "s1" else origins[0]
    # load: clients in a loop, until told to stop
    stop = threading.Event()
    seen: Counter = Counter()
    started: list[tuple[float, str]] = []  # (when the request was sent, the server that answered)
    errors: list = []

    def client() -> None:
        while not stop.is_set():
            try:
                t = time.monotonic()
                h, b = get(port)
                seen[served_by(h)] += 1
                started.append((t, served_by(h)))
            except Exception as exc:  # noqa: BLE001 - counted and asserted on
                errors.append(exc)
    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while seen[victim] < 20:
        assert time.monotonic() < deadline, seen
        time.sleep(0.01)
    assert cli(f"{d}/admin.sock", f"set server be/{victim} state drain\n") == "\n"
    drained_at = time.monotonic()  # every worker applied it: no later request may go there
    base = sum(seen.values())
    while sum(seen.values()) < base + 200:
        assert time.monotonic() < deadline + 30, seen
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors
    after = Counter(name for t, name in started if t > drained_at)
    assert after[victim] == 0 and after[other.name.decode()] >= 150, after  # no new session on it
    assert other.served > 200
    rows = server_rows(cli(f"{d}/user.sock", "show servers state be\n"))
    assert rows[victim][6] == "8"  # SRV_ADMF_FDRAIN
    assert rows[victim][5] == "2"  # still up: drain is no maintenance
    # the download in flight on it finishes, every byte
    drained.release.set()
    while len(body) < NamedOrigin.SLOW:
        chunk = slow.recv(1 << 20)
        assert chunk, f"download cut at {len(body)} bytes"
        body += chunk
    slow.close()
    assert body == b"a" * (NamedOrigin.SLOW // 2) + b"b" * (NamedOrigin.SLOW // 2)
    # ready again: it takes traffic again
    assert cli(f"{d}/admin.sock", f"set server be/{victim} state ready\n") == "\n"
    names = Counter(served_by(get(port)[0]) for _ in range(20))
    assert names[victim] == 10


def test_set_weight_changes_the_spread(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "")], nbthread=2)
    start_splicer(cfg, [port], workers=2)
    wait_socket(f"{d}/admin.sock")
    assert cli(f"{d}/admin.sock", "set server be/s2 weight 3\n") == "\n"
    names = Counter(served_by(get(port)[0]) for _ in range(400))
    assert 0.65 <= names["s2"] / 400 <= 0.85, names  # 75 % expected
    # relative weights: N % of the configured weight (1), and back
    assert cli(f"{d}/admin.sock", "set server be/s2 weight 100%;set server be/s1 weight 0\n") == "\n\n"
    names = Counter(served_by(get(port)[0]) for _ in range(40))
    assert names == Counter({"s2": 40})
    rows = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))
    assert rows["s1"][7:9] == ["0", "1"] and rows["s2"][7:9] == ["1", "1"]


def test_changes_reach_every_worker_and_survive_a_worker_restart(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "")], nbthread=2)
    sp = start_splicer(cfg, [port], workers=2)
    wait_socket(f"{d}/admin.sock")
    assert cli(f"{d}/admin.sock", "disable server be/s1\n") == "\n"
    # until both workers have served requests: none of them went to s1
    deadline = time.monotonic() + 60
    while True:
        for _ in range(20):
            assert served_by(get(port)[0]) == "s2"
        per = sp.worker_stats()  # each worker's own counters
        if all(w["frontends"]["fe"]["req_tot"] > 0 for w in per):
            break
        assert time.monotonic() < deadline, "one worker never got a connection"
    assert all(w["backends"]["be"]["servers"]["s1"]["req_tot"] == 0 for w in per)
    assert origins[0].served == 0
    # kill -9 the first worker: the master restarts it with the change applied
    victim = sp.worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    while victim in sp.worker_pids() or len(sp.worker_pids()) < 2 or sp.log().count(" serving on CPUs ") < 3:
        assert time.monotonic() < deadline + 30, sp.log()
        time.sleep(0.02)
    rows = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))  # asks worker 1: the new one
    assert rows["s1"][6] == "1"  # SRV_ADMF_FMAINT
    assert rows["s1"][5] == "0"  # DOWN
    for _ in range(40):
        assert served_by(get(port)[0]) == "s2"
    assert origins[0].served == 0
    assert cli(f"{d}/admin.sock", "enable server be/s1\n") == "\n"
    assert Counter(served_by(get(port)[0]) for _ in range(40))["s1"] > 0


def test_server_state_file_restores_states_at_start(start_splicer, tmp_path, origins):
    port = free_port()
    state = tmp_path / "servers.state"
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "weight 2")],
                    extra_global=f"    server-state-file {state}", extra_backend="    load-server-state-from-file global")
    sp = start_splicer(cfg, [port])  # no file yet: servers as configured
    wait_socket(f"{d}/admin.sock")
    assert "server-state-file" in sp.log()
    cli(f"{d}/admin.sock", "set server be/s1 state maint;set server be/s2 weight 5\n")
    # what an operator does before a reload: save the states
    state.write_text(cli(f"{d}/admin.sock", "show servers state\n"))
    sp.stop()
    sp2 = start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    deadline = time.monotonic() + 15
    while "1 server" not in sp2.log() and "2 server" not in sp2.log():
        assert time.monotonic() < deadline, sp2.log()
        time.sleep(0.02)
    rows = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))
    assert rows["s1"][5:8] == ["0", "1", "1"]
    assert rows["s2"][5:9] == ["2", "0", "5", "2"]
    for _ in range(10):
        assert served_by(get(port)[0]) == "s2"


def test_shutdown_sessions_and_clear_counters(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, "")])
    start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    slow = socket.create_connection(("127.0.0.1", port), timeout=30)
    slow.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while len(got) < 1000:
        got += slow.recv(65536)
    idle = socket.create_connection(("127.0.0.1", port), timeout=30)  # a keep-alive session between requests
    idle.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_response(idle)[0].startswith(b"HTTP/1.1 200")
    sess = cli(f"{d}/oper.sock", "show sess\n")
    assert sess.count("\n") == 2, sess  # one stream in flight (the idle session has none), then the empty line
    idle.close()
    assert re.search(r"^0x[0-9a-f]+: proto=tcpv4 src=127\.0\.0\.1:\d+ fe=fe be=be srv=s1 age=\d+s phase=D worker=1$",
                     sess, re.M), sess
    assert cli(f"{d}/admin.sock", "shutdown sessions server be/s1\n") == "\n"
    try:
        while chunk := slow.recv(1 << 20):
            got += chunk
    except ConnectionResetError:  # killed as haproxy does: closed with what was unsent dropped
        pass
    slow.close()
    assert len(got) < NamedOrigin.SLOW  # cut short, not completed
    counters = json.loads(cli(f"{d}/user.sock", "show counters\n").split("\n")[0])
    assert counters["backends"]["be"]["servers"]["s1"]["terms"].get("KD") == 1
    assert cli(f"{d}/admin.sock", "clear counters all\n") == "\n"
    counters = json.loads(cli(f"{d}/user.sock", "show counters\n").split("\n")[0])
    assert counters["frontends"]["fe"]["req_tot"] == 0
    assert counters["backends"]["be"]["servers"]["s1"]["terms"] == {}


def test_disable_health_and_set_addr(start_splicer, tmp_path, origins):
    port = free_port()
    dead = free_port()
    cfg, d = config(tmp_path, port, [("s1", dead, "check inter 200ms fall 1 rise 1")])
    sp = start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    deadline = time.monotonic() + 20
    while server_rows(cli(f"{d}/admin.sock", "show servers state\n"))["s1"][5] != "0":
        assert time.monotonic() < deadline, sp.log()
        time.sleep(0.05)
    row = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))["s1"]
    assert row[10:14] == ["8", "2", "0", "6"]  # L4CON, FAILED, health 0, CONFIGURED|ENABLED
    assert get(port)[0].startswith(b"HTTP/1.1 503")
    # checks off: considered UP (haproxy)
    assert cli(f"{d}/admin.sock", "disable health be/s1\n") == "\n"
    row = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))["s1"]
    assert row[5] == "2" and row[13] == "2"
    # and shown as haproxy shows a server whose checks are off: "no check", no check status
    csv_rows = cli(f"{d}/admin.sock", "show stat\n").strip("\n").split("\n")
    names = csv_rows[0][2:].split(",")
    stat = next(dict(zip(names, r.split(","))) for r in csv_rows[1:] if r.startswith("be,s1,"))
    assert (stat["status"], stat["check_status"]) == ("no check", "")
    # point it at a live origin
    answer = cli(f"{d}/admin.sock", f"set server be/s1 addr 127.0.0.1 port {origins[0].port}\n")
    # the same IP: only the port is said to change (haproxy server_set_inetaddr())
    assert answer == f"port changed from '{dead}' to '{origins[0].port}' by 'stats socket command'\n\n"
    assert served_by(get(port)[0]) == "s1"
    assert cli(f"{d}/admin.sock", "enable health be/s1\n") == "\n"
    row = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))["s1"]
    assert row[13] == "6" and row[18] == str(origins[0].port)
    assert served_by(get(port)[0]) == "s1"


def test_show_stat_csv_and_typed(start_splicer, tmp_path, origins):
    from splicer.report.csv import COLUMNS

    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "")], nbthread=2)
    start_splicer(cfg, [port], workers=2)
    wait_socket(f"{d}/admin.sock")
    for _ in range(10):
        get(port)
    assert cli(f"{d}/admin.sock", "set server be/s2 state maint\n") == "\n"
    out = cli(f"{d}/user.sock", "show stat\n")
    assert out.endswith("\n\n")
    lines = out.strip("\n").split("\n")
    header = lines[0][2:].split(",")
    assert lines[0].startswith("# pxname,svname,qcur,qmax,scur,")
    assert header[:len(COLUMNS)] == list(COLUMNS)
    rows = {(r.split(",")[0], r.split(",")[1]): dict(zip(header, r.split(","))) for r in lines[1:]}
    assert rows[("fe", "FRONTEND")]["req_tot"] == "10"  # summed over both workers
    assert rows[("be", "s2")]["status"] == "MAINT"
    assert int(rows[("be", "s1")]["req_tot"]) + int(rows[("be", "s2")]["req_tot"]) == 10
    typed = cli(f"{d}/user.sock", "show stat typed\n").strip("\n").split("\n")
    assert "F.1.0.0.pxname.1:KNS:str:fe" in typed
    assert any(re.fullmatch(r"F\.1\.0\.\d+\.req_tot\.1:MCP:u64:10", x) for x in typed), typed[:40]
    # haproxy numbers proxies in file order across sections: backend be is proxy 2
    assert any(re.fullmatch(r"S\.2\.2\.\d+\.status\.1:SGP:str:MAINT", x) for x in typed)


def test_changes_survive_a_reload(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "")])
    sp = start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    assert cli(f"{d}/admin.sock", "set server be/s1 state maint;set server be/s2 weight 9\n") == "\n\n"
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    deadline = time.monotonic() + 30
    while "generation 2" not in sp.log() or sp.log().count(" serving on CPUs ") < 2:
        assert time.monotonic() < deadline, sp.log()
        time.sleep(0.02)
    rows = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))  # the new generation's
    assert rows["s1"][5:8] == ["0", "1", "1"] and rows["s2"][7] == "9"
    for _ in range(10):
        assert served_by(get(port)[0]) == "s2"
    assert origins[0].served == 0


def test_local_state_file_and_a_changed_configured_weight(start_splicer, tmp_path, origins):
    port = free_port()
    base = tmp_path / "states"
    base.mkdir()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "")],
                    extra_global=f"    server-state-base {base}",
                    extra_backend="    load-server-state-from-file local")
    sp = start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    cli(f"{d}/admin.sock", "set server be/s1 state drain;set server be/s1 weight 4;set server be/s2 weight 6\n")
    (base / "be").write_text(cli(f"{d}/admin.sock", "show servers state be\n"))  # the backend's name
    sp.stop()
    # s2's configured weight changed meanwhile: its saved weight no longer applies (haproxy)
    cfg2 = cfg.replace(f"server s2 127.0.0.1:{origins[1].port} ", f"server s2 127.0.0.1:{origins[1].port} weight 2")
    sp2 = start_splicer(cfg2, [port])
    wait_socket(f"{d}/admin.sock")
    deadline = time.monotonic() + 15
    while "2 server(s) restored" not in sp2.log():
        assert time.monotonic() < deadline, sp2.log()
        time.sleep(0.02)
    rows = server_rows(cli(f"{d}/admin.sock", "show servers state\n"))
    assert rows["s1"][6:9] == ["8", "4", "1"]  # drained, weight 4 of 1
    assert rows["s2"][7:9] == ["2", "2"]


def test_a_stats_page_action_is_remembered_for_a_restarted_worker(start_splicer, tmp_path, origins):
    import http.client

    port, sport = free_port(), free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, ""), ("s2", origins[1].port, "")])
    cfg += f"""
listen adminstats
    bind 127.0.0.1:{sport}
    stats uri /
    stats admin if TRUE
"""
    sp = start_splicer(cfg, [port, sport])
    wait_socket(f"{d}/admin.sock")
    conn = http.client.HTTPConnection("127.0.0.1", sport, timeout=15)
    conn.request("POST", "/", body=b"s=s1&action=maint&b=be",
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert conn.getresponse().status == 303
    conn.close()
    assert server_rows(cli(f"{d}/admin.sock", "show servers state be\n"))["s1"][6] == "1"
    victim = sp.worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while victim in sp.worker_pids() or not sp.worker_pids() or sp.log().count(" serving on CPUs ") < 2:
        assert time.monotonic() < deadline, sp.log()
        time.sleep(0.02)
    assert server_rows(cli(f"{d}/admin.sock", "show servers state be\n"))["s1"][6] == "1"
    for _ in range(10):
        assert served_by(get(port)[0]) == "s2"


def test_clear_counters_resets_the_maxima_and_all_the_rest(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, "")])
    start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")

    def frontend() -> dict:
        lines = cli(f"{d}/user.sock", "show stat\n").strip("\n").split("\n")
        header = lines[0][2:].split(",")
        return next(dict(zip(header, r.split(","))) for r in lines[1:] if r.startswith("fe,FRONTEND,"))
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
    deadline = time.monotonic() + 15
    while frontend()["scur"] != "3":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    for s in held:
        s.close()
    while frontend()["scur"] != "0":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    get(port)
    while (row := frontend())["scur"] != "0":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # the three held connections closed before they sent a byte: incomplete requests, as
    # haproxy counts them (tests/e2e/test_probes.py), and the GET
    assert row["smax"] == "3" and row["req_tot"] == "4"
    assert cli(f"{d}/oper.sock", "clear counters\n") == "\n"
    row = frontend()
    assert row["smax"] == "0" and row["req_tot"] == "4"  # the maxima only
    assert cli(f"{d}/admin.sock", "clear counters all\n") == "\n"
    assert frontend()["req_tot"] == "0"


def test_a_draining_server_still_takes_its_persistent_requests(start_splicer, tmp_path, origins):
    """haproxy management.txt, `set server ... state drain`: out of the load balancing, but
    "still allows it to be checked and to accept new persistent connections"; maint does not."""
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, "cookie c1"), ("s2", origins[1].port, "cookie c2")],
                    extra_backend="    cookie SRV insert indirect nocache")
    start_splicer(cfg, [port])
    wait_socket(f"{d}/admin.sock")
    assert cli(f"{d}/admin.sock", "set server be/s1 state drain\n") == "\n"

    def with_cookie(value: str) -> str:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nCookie: SRV=%s\r\nConnection: close\r\n\r\n" % value.encode())
            return served_by(read_response(s)[0])
    assert [served_by(get(port)[0]) for _ in range(6)] == ["s2"] * 6
    assert with_cookie("c1") == "s1"
    assert cli(f"{d}/admin.sock", "set server be/s1 state maint\n") == "\n"
    assert with_cookie("c1") == "s2"  # a server in maintenance takes nothing: redispatched


def test_sessions_leave_no_descriptor_open_in_the_master(start_splicer, tmp_path, origins):
    port = free_port()
    cfg, d = config(tmp_path, port, [("s1", origins[0].port, "")], nbthread=2)
    sp = start_splicer(cfg, [port], workers=2)
    wait_socket(f"{d}/admin.sock")
    cli(f"{d}/admin.sock", "show info\n")  # the first answer may open what lives as long as the master

    def fds() -> int:
        return len(os.listdir(f"/proc/{sp.proc.pid}/fd"))
    before = fds()
    for k in range(30):
        cli(f"{d}/admin.sock", "show info;show stat;show servers state;set server be/s1 weight 2\n")
        cli(f"{d}/user.sock", "bogus;disable server be/s1\n")
        with socket.socket(socket.AF_UNIX) as s:  # an interactive client that goes away mid-session
            s.connect(f"{d}/oper.sock")
            s.sendall(b"prompt\nshow sess\n")
    deadline = time.monotonic() + 15
    while fds() > before:
        assert time.monotonic() < deadline, f"{fds()} descriptors, {before} before"
        time.sleep(0.05)
