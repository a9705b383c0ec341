"""Lifecycle in haproxy's master-worker semantics (issue 10): reload (SIGUSR2 / master CLI
`reload`), soft stop (SIGUSR1) with idle-close-on-response, hard-stop-after, -p, -D, -Ws."""
from __future__ import annotations

import hashlib
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from tests.e2e.helpers import free_port, http_config, read_response, splicer_command, wait_port


def wait_for(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def procs(sp) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(current workers, old workers) from `show proc`, each as (pid, generation)."""
    lines = sp.cli("show proc").splitlines()
    cur = lines.index("# workers")
    old = lines.index("# old workers")
    end = lines.index("# programs")

    def rows(part):
        return [(int(ln.split()[0]), int(ln.split()[-1])) for ln in part if ln.strip()]
    return rows(lines[cur + 1:old]), rows(lines[old + 1:end])


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def get_ok(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", "/files/1k")
    resp = conn.getresponse()
    assert resp.status == 200 and len(resp.read()) == 1024
    conn.close()


class Download:
    """A GET of /files/<name> read chunk by chunk, hashed as it goes."""

    def __init__(self, port: int, name: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.conn.request("GET", f"/files/{name}")
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200
        self.length = int(self.resp.getheader("Content-Length"))
        self.got = 0
        self.sha = hashlib.sha256()

    def read(self, n: int) -> None:
        while n > 0:
            chunk = self.resp.read(min(n, 1 << 20))
            if not chunk:
                return
            self.got += len(chunk)
            self.sha.update(chunk)
            n -= len(chunk)

    def finish(self) -> str:
        self.read(self.length - self.got)
        self.conn.close()
        return self.sha.hexdigest()


def test_sigusr2_reload_starts_a_new_generation_and_the_old_exits(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    first, _ = procs(sp)
    assert sorted(g for _, g in first) == [1, 1]
    get_ok(port)
    sp.proc.send_signal(signal.SIGUSR2)
    cur, old = wait_for(lambda: (lambda c, o: (c, o) if c and all(g == 2 for _, g in c) and len(c) == 2 else None)(
        *procs(sp)), 60, "two generation-2 workers")
    assert not {p for p, _ in cur} & {p for p, _ in first}
    # the old generation had nothing in flight: it exits at once
    wait_for(lambda: not any(alive(p) for p, _ in first), 30, "the old workers to exit")
    assert procs(sp)[1] == []
    for _ in range(4):
        get_ok(port)
    assert sp.stats()["worker"] == [1, 2]
    assert "master: reload 1: generation 2" in sp.log()
    master = sp.cli("show proc").splitlines()[1].split()
    assert master[1:5] == ["master", "1", "[failed:", "0]"]


def test_reload_with_a_broken_config_changes_nothing(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    before, _ = procs(sp)
    good = sp.cfg_path.read_text()
    sp.cfg_path.write_text(good.replace("    balance roundrobin", "    balance roundrobin\n    blance first"))
    out = sp.cli("reload", timeout=60)
    assert out.startswith("Success=0\n--\n")
    assert re.search(r"splicer0\.cfg:\d+: unknown keyword 'blance'", out)
    assert re.search(r"reload failed: .*splicer0\.cfg:\d+: unknown keyword 'blance'", sp.log())
    assert procs(sp) == (before, [])  # the same workers, the same generation
    get_ok(port)
    master = sp.cli("show proc").splitlines()[1].split()
    assert master[2:5] == ["0", "[failed:", "1]"]
    # and a good one afterwards is taken
    sp.cfg_path.write_text(good)
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    assert [g for _, g in procs(sp)[0]] == [2]


def test_reload_opens_new_binds_and_closes_removed_ones(start_splicer, farm):
    port, extra = free_port(), free_port()
    base = http_config(port, [(o.name, o.port) for o in farm])
    sp = start_splicer(base, [port])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", extra)) != 0
    sp.cfg_path.write_text(base.replace(f"    bind 127.0.0.1:{port}\n",
                                        f"    bind 127.0.0.1:{port}\n    bind 127.0.0.1:{extra}\n"))
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    get_ok(port)
    get_ok(extra)
    sp.cfg_path.write_text(base)
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    get_ok(port)

    def refused():
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", extra)) != 0
    wait_for(refused, 30, f"port {extra} to be closed")


def test_reload_keeps_a_listener_written_another_way(start_splicer, farm):
    """`bind localhost:P` after `bind 127.0.0.1:P`: the same socket is kept (a new one could
    not bind while the old is open)."""
    port = free_port()
    base = http_config(port, [(o.name, o.port) for o in farm])
    sp = start_splicer(base, [port])
    sp.cfg_path.write_text(base.replace(f"bind 127.0.0.1:{port}", f"bind localhost:{port}"))
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    get_ok(port)


def test_download_in_flight_during_a_reload_completes_byte_exact(start_splicer, farm, www):
    """1 GiB through the old worker while a new generation takes over the listener."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    (old_pid, _), = procs(sp)[0]
    dl = Download(port, "1g")
    dl.read(8 << 20)
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    cur, old = procs(sp)
    assert old == [(old_pid, 1)] and [g for _, g in cur] == [2]
    get_ok(port)  # served by the new generation meanwhile
    assert alive(old_pid)  # still sending the download
    assert dl.finish() == www[1]["1g"] and dl.got == 1 << 30
    wait_for(lambda: not alive(old_pid), 30, "the old worker to exit once drained")
    assert procs(sp)[1] == []


def test_download_in_flight_during_a_soft_stop_completes_and_the_master_exits(start_splicer, farm, www):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    dl = Download(port, "1g")
    dl.read(8 << 20)
    sp.proc.send_signal(signal.SIGUSR1)
    wait_for(lambda: "soft stop" in sp.log(), 30, "the worker's soft stop")

    def refused():
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) != 0
    wait_for(refused, 30, "new connections to be refused")
    assert sp.proc.poll() is None  # waiting for the download
    assert dl.finish() == www[1]["1g"] and dl.got == 1 << 30
    assert sp.proc.wait(30) == 0


def test_keepalive_client_during_soft_stop_gets_connection_close_and_no_reset(start_splicer, farm):
    """idle-close-on-response: the idle keep-alive connection stays open; its next response
    says `Connection: close` and the connection then ends with a FIN."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as c:
        c.sendall(b"GET /files/1k HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body = read_response(c)
        assert len(body) == 1024 and b"connection: close" not in head.lower()
        sp.proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: "soft stop" in sp.log(), 30, "the worker's soft stop")
        assert sp.proc.poll() is None  # the idle connection keeps the worker
        c.sendall(b"GET /files/1k HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body = read_response(c)
        assert len(body) == 1024
        assert re.search(rb"(?im)^connection: *close\r?$", head), head
        assert c.recv(100) == b""  # a FIN, not a reset (which would raise here)
    assert sp.proc.wait(30) == 0


def test_hard_stop_after_bounds_a_soft_stop(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, [(o.name, o.port) for o in farm]).replace(
        "    maxconn 1000\n", "    maxconn 1000\n    hard-stop-after 1s\n")
    sp = start_splicer(cfg, [port])
    dl = Download(port, "1g")
    dl.read(1 << 20)  # then stalls: the worker cannot finish
    t0 = time.monotonic()
    sp.proc.send_signal(signal.SIGUSR1)
    assert sp.proc.wait(30) == 0
    assert time.monotonic() - t0 < 25
    assert "hard-stop-after: stopping 1 worker(s)" in sp.log()
    try:
        dl.finish()
    except (http.client.IncompleteRead, ConnectionError):
        pass
    assert dl.got < 1 << 30


def test_pidfile_is_the_masters_and_goes_at_exit(start_splicer, farm, tmp_path):
    port = free_port()
    pidfile = tmp_path / "splicer.pid"
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port], args=["-p", str(pidfile)])
    assert pidfile.read_text() == f"{sp.proc.pid}\n"
    assert sp.stop() == 0
    assert not pidfile.exists()


def test_systemd_notifications(start_splicer, farm, tmp_path):
    """-Ws: READY=1 once the workers serve, RELOADING=1 then READY=1 around a reload,
    STOPPING=1 on stop, to the datagram socket $NOTIFY_SOCKET names."""
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as ns:
        ns.bind(path)
        ns.settimeout(30)
        port = free_port()
        sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port], args=["-Ws"],
                           env={"NOTIFY_SOCKET": path})
        assert ns.recv(4096).decode().splitlines() == ["READY=1", f"MAINPID={sp.proc.pid}"]
        assert sp.cli("reload", timeout=60) == "Success=1\n\n"
        reloading = ns.recv(4096).decode().splitlines()
        assert reloading[:2] == ["RELOADING=1", f"MAINPID={sp.proc.pid}"]
        assert reloading[2].startswith("MONOTONIC_USEC=")
        assert ns.recv(4096).decode().splitlines()[0] == "READY=1"
        sp.stop()
        assert ns.recv(4096).decode().splitlines()[0] == "STOPPING=1"


def test_daemon_mode_detaches_and_serves(farm, tmp_path):
    port = free_port()
    cfg = tmp_path / "d.cfg"
    cfg.write_text(http_config(port, [(o.name, o.port) for o in farm]))
    pidfile = tmp_path / "d.pid"
    with open(tmp_path / "d.log", "wb") as log:
        p = subprocess.run(splicer_command() + ["-D", "-p", str(pidfile), "-c", str(cfg), "-S",
                                                str(tmp_path / "d.sock")], stdout=log, stderr=log, timeout=30)
    assert p.returncode == 0  # the command returned; the master runs on, detached
    pid = int(wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), 30, "the pid file"))
    try:
        assert os.getsid(pid) == pid  # its own session: no controlling terminal of ours
        wait_port(port)
        wait_for(lambda: " serving on CPUs " in (tmp_path / "d.log").read_text(), 30, "a worker serving")
        get_ok(port)
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not alive(pid), 30, "the daemon to stop")


@pytest.mark.skipif(shutil.which("wrk") is None, reason="needs wrk")
def test_wrk_while_reloading_five_times_has_no_error(start_splicer, farm, tmp_path):
    """wrk (1 KiB, 50 connections, 20 s) while the config is reloaded five times, one reload
    adding a server and one removing one: no socket error and no non-2xx response."""
    port = free_port()
    web1, web2 = [(o.name, o.port) for o in farm]
    sp = start_splicer(http_config(port, [web1], nbthread=2), [port], workers=2)
    wrk = subprocess.Popen(["wrk", "-t2", "-c50", "-d20s", f"http://127.0.0.1:{port}/files/1k"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        time.sleep(2)  # let wrk reach full load (pacing only: nothing waits on it)
        for servers in ([web1, web2], [web2], [web1, web2], [web1], [web2]):  # adds, removes, ...
            sp.cfg_path.write_text(http_config(port, servers, nbthread=2))
            assert sp.cli("reload", timeout=60) == "Success=1\n\n"
            time.sleep(2)
        out = wrk.communicate(timeout=120)[0].decode()
    finally:
        if wrk.poll() is None:
            wrk.kill()
            wrk.wait()
    (tmp_path / "wrk.txt").write_text(out)
    print(out)
    assert re.search(r"(\d+) requests in", out), out
    assert int(re.search(r"(\d+) requests in", out).group(1)) > 1000
    assert "Socket errors" not in out, out
    assert "Non-2xx" not in out, out
    assert sp.cli("show proc").splitlines()[1].split()[2] == "5"


def test_no_idle_close_on_response_closes_idle_connections_at_once(start_splicer, farm):
    """haproxy's default: a soft stop closes the idle keep-alive connections right away."""
    port = free_port()
    cfg = http_config(port, [(o.name, o.port) for o in farm], extra_frontend="    no option idle-close-on-response\n")
    sp = start_splicer(cfg, [port])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as c:
        c.sendall(b"GET /files/1k HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body = read_response(c)
        assert len(body) == 1024 and b"connection: close" not in head.lower()
        sp.proc.send_signal(signal.SIGUSR1)
        assert c.recv(100) == b""  # closed without a request of ours
    assert sp.proc.wait(30) == 0


def test_no_idle_close_on_response_lets_a_download_in_flight_finish(start_splicer, farm, www):
    """A soft stop closes the idle connections only: a download under way (the engine's
    express lane sends it: no rule, no log) completes byte-exact, first request or not."""
    port = free_port()
    cfg = http_config(port, [(o.name, o.port) for o in farm], extra_frontend="    no option idle-close-on-response\n")
    sp = start_splicer(cfg, [port])
    first = Download(port, "1g")
    first.read(1 << 20)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/files/1k")
    assert len(conn.getresponse().read()) == 1024
    conn.request("GET", "/files/256m")  # a keep-alive connection's second request
    second = conn.getresponse()
    begun = second.read(1 << 20)
    assert second.status == 200 and len(begun) == 1 << 20
    sp.proc.send_signal(signal.SIGUSR1)
    wait_for(lambda: "soft stop" in sp.log(), 30, "the worker's soft stop")
    assert first.finish() == www[1]["1g"] and first.got == 1 << 30
    sha = hashlib.sha256(begun)
    rest = second.read()
    sha.update(rest)
    assert len(begun) + len(rest) == 256 << 20 and sha.hexdigest() == www[1]["256m"]
    conn.close()
    assert sp.proc.wait(30) == 0


def test_busy_keepalive_connection_finishes_then_gets_connection_close(start_splicer, farm, www):
    """A keep-alive connection busy with a download when the soft stop begins: the download
    completes byte-exact, and the connection's next response says `Connection: close`."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
        c.sendall(b"GET /files/256m HTTP/1.1\r\nHost: x\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = c.recv(65536)
            assert chunk
            head += chunk
        head, _, body = head.partition(b"\r\n\r\n")
        assert b"connection: close" not in head.lower()  # sent before the soft stop
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        sha = hashlib.sha256(body)
        got = len(body)
        sp.proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: "soft stop" in sp.log(), 30, "the worker's soft stop")
        while got < length:
            chunk = c.recv(min(1 << 20, length - got))
            assert chunk, "closed under the download"
            sha.update(chunk)
            got += len(chunk)
        assert sha.hexdigest() == www[1]["256m"]
        c.sendall(b"GET /files/1k HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body = read_response(c)
        assert len(body) == 1024
        assert re.search(rb"(?im)^connection: *close\r?$", head), head
        assert c.recv(100) == b""
    assert sp.proc.wait(30) == 0


def socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def tcp_listen_inodes() -> set[str]:
    out = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(name) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    out.add(fields[9])
    return out


def test_workers_share_only_the_listeners_with_the_master_across_a_reload(start_splicer, farm):
    """No descriptor leaks into a worker: of the master's sockets (its CLI, its loop, every
    worker's channel end) a worker holds only the listening sockets; a second generation,
    forked while the first still runs, neither."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    for generation in (1, 2):
        if generation == 2:
            assert sp.cli("reload", timeout=60) == "Success=1\n\n"
        master = socket_inodes(sp.proc.pid)
        listening = tcp_listen_inodes()
        workers = [p for p, g in procs(sp)[0] if g == generation]
        assert len(workers) == 2
        for pid in workers:
            shared = socket_inodes(pid) & master
            assert len(shared) == 1 and shared <= listening, (generation, pid, shared)
