"""Configurations `splicer --check` used to accept that then failed at run time, as haproxy
refuses them: a log target whose host name does not resolve (haproxy -c: "invalid address"),
a `file@` log target that cannot be opened, a `stats socket` that cannot be bound (haproxy
does not start: "cannot bind UNIX socket"); at --check, at the start and at a reload, each
reported at its `file:line`. Only names that resolve locally are used: `localhost` and
`.invalid` ones (RFC 6761)."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from tests.e2e.helpers import free_port, splicer_command
from tests.e2e.test_lifecycle import procs, wait_for

BAD = "no.such.host.invalid"

pytestmark = pytest.mark.timeout(120)


def config(port: int, global_lines: str = "", frontend_lines: str = "") -> str:
    """A one-frontend http config; its `global` section's lines start at line 3."""
    return ("global\n"                                  # 1
            "    nbthread 1\n"                          # 2
            f"{global_lines}"
            "defaults\n"
            "    mode http\n"
            "    timeout client 5s\n"
            "    timeout server 5s\n"
            "    timeout connect 5s\n"
            "frontend www\n"
            f"    bind 127.0.0.1:{port}\n"
            f"{frontend_lines}"
            "    default_backend be\n"
            "backend be\n"
            "    server s1 127.0.0.1:1\n")


def run(args: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(splicer_command() + args, capture_output=True, text=True, timeout=timeout)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def unix_listening(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        return probe.connect_ex(path) == 0


def lines_of(stderr: str) -> list[str]:
    return [ln.removeprefix("splicer: ") for ln in stderr.splitlines()]


# -- log targets: --check and the start ------------------------------------------------------

def test_a_log_host_that_does_not_resolve_is_refused_by_check_and_start(tmp_path):
    port = free_port()
    cfg = tmp_path / "site.cfg"
    cfg.write_text(config(port, f"    log udp@{BAD}:514 local0\n", f"    log tcp@{BAD}:601 local1\n"))
    for extra in (["--check"], []):
        started = time.monotonic()
        r = run(["-c", str(cfg), *extra])
        assert time.monotonic() - started < 20
        assert r.returncode == 1, r.stderr
        errs = lines_of(r.stderr)
        assert [e.split(" (")[0] for e in errs[:2]] == [
            f"{cfg}:3: log 'udp@{BAD}:514': invalid address: '{BAD}'",
            f"{cfg}:11: log 'tcp@{BAD}:601': invalid address: '{BAD}'"], r.stderr
        assert errs[2] == f"configuration file {cfg} has 2 error(s)"
        assert "is valid" not in r.stdout
        assert not listening(port)


def test_a_ring_server_that_does_not_resolve_is_refused_by_check(tmp_path):
    port = free_port()
    cfg = tmp_path / "site.cfg"
    cfg.write_text(config(port, "    log ring@central local0\n") + f"ring central\n    server s1 {BAD}:6514\n")
    r = run(["-c", str(cfg), "--check"])
    assert r.returncode == 1
    assert re.search(rf"^splicer: {re.escape(str(cfg))}:15: server 's1': invalid address: '{BAD}' \(",
                     r.stderr, re.M), r.stderr


def test_localhost_and_ip_literals_are_accepted(tmp_path):
    cfg = tmp_path / "site.cfg"
    cfg.write_text(config(free_port(), "    log localhost:514 local0\n    log udp@127.0.0.1:514 local0\n"
                                       "    log tcp6@[::1]:601 local0\n"))
    r = run(["-c", str(cfg), "--check"])
    assert (r.returncode, r.stdout, r.stderr) == (0, f"Configuration file {cfg} is valid\n", "")


def test_a_log_file_in_a_missing_directory_is_refused_by_check_and_start(tmp_path):
    port = free_port()
    cfg = tmp_path / "site.cfg"
    cfg.write_text(config(port, "    log file@/nonexistent/dir/x.log local0\n"))
    for extra in (["--check"], []):
        r = run(["-c", str(cfg), *extra])
        assert r.returncode == 1
        assert lines_of(r.stderr)[0] == (f"{cfg}:3: log 'file@/nonexistent/dir/x.log': cannot open "
                                         "'/nonexistent/dir/x.log' for appending: No such file or directory")
        assert not listening(port)


# -- stats socket: the start ------------------------------------------------------------------

def test_a_stats_socket_that_cannot_be_bound_stops_the_start(tmp_path):
    port = free_port()
    good = str(tmp_path / "good.sock")
    cfg = tmp_path / "site.cfg"
    cfg.write_text(config(port, f"    stats socket {good} level admin\n"
                                "    stats socket /nonexistent/dir/x.sock level admin\n"))
    # haproxy -c binds nothing either: the file is valid
    r = run(["-c", str(cfg), "--check"])
    assert r.returncode == 0, r.stderr
    r = run(["-c", str(cfg)])
    assert r.returncode == 3
    assert lines_of(r.stderr) == [f"{cfg}:4: stats socket '/nonexistent/dir/x.sock': cannot bind UNIX socket: "
                                  "No such file or directory"]
    # no worker was started, nothing listens: neither the frontend nor the socket bound first
    assert "worker" not in r.stderr
    assert not listening(port)
    assert not os.path.exists(good)


def test_a_stats_socket_that_cannot_be_bound_stops_a_daemon_before_it_detaches(tmp_path):
    port = free_port()
    cfg = tmp_path / "site.cfg"
    cfg.write_text(config(port, "    stats socket /nonexistent/dir/x.sock\n"))
    pidfile = tmp_path / "splicer.pid"
    try:
        r = run(["-c", str(cfg), "-D", "-p", str(pidfile)])
        assert r.returncode == 3
        assert f"{cfg}:3: stats socket '/nonexistent/dir/x.sock': cannot bind UNIX socket" in r.stderr
        assert not listening(port)
        assert not pidfile.exists()  # it never detached
    finally:  # a daemon that detached all the same (the bug this test is about) is not left running
        if pidfile.exists():
            os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)


# -- reload -----------------------------------------------------------------------------------

@pytest.mark.parametrize("lines, error", [
    ("    stats socket /nonexistent/dir/x.sock\n",
     r"{cfg}:3: stats socket '/nonexistent/dir/x\.sock': cannot bind UNIX socket: No such file or directory"),
    (f"    log udp@{BAD}:514 local0\n", rf"{{cfg}}:3: log 'udp@{re.escape(BAD)}:514': invalid address: "
                                     rf"'{re.escape(BAD)}' \("),
    ("    log file@/nonexistent/dir/x.log local0\n",
     r"{cfg}:3: log 'file@/nonexistent/dir/x\.log': cannot open '/nonexistent/dir/x\.log' for appending: "
     r"No such file or directory"),
])
def test_a_reload_to_such_a_config_fails_and_keeps_the_workers(start_splicer, tmp_path, lines, error):
    port = free_port()
    sp = start_splicer(config(port), [port])
    before = procs(sp)
    sp.cfg_path.write_text(config(port, lines))
    out = sp.cli("reload", timeout=60)
    pattern = error.format(cfg=re.escape(str(sp.cfg_path)))
    assert out.startswith("Success=0\n--\n") and re.search(pattern, out), out
    assert re.search("reload failed: " + pattern, sp.log())
    assert procs(sp) == before  # the same workers, the same generation
    assert listening(port)
    assert sp.cli("show proc").splitlines()[1].split()[2:5] == ["0", "[failed:", "1]"]


def test_a_reload_binds_added_stats_sockets_and_closes_removed_ones(start_splicer, tmp_path):
    port = free_port()
    first, added = str(tmp_path / "first.sock"), str(tmp_path / "added.sock")
    sp = start_splicer(config(port, f"    stats socket {first}\n"), [port])
    assert unix_listening(first)
    sp.cfg_path.write_text(config(port, f"    stats socket {first}\n    stats socket {added} level user\n"))
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    assert unix_listening(first) and unix_listening(added)
    assert stats_command(added, "show cli level") == "user\n\n"
    sp.cfg_path.write_text(config(port, f"    stats socket {added} level operator\n"))
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    assert not unix_listening(first) and not os.path.exists(first)
    assert stats_command(added, "show cli level") == "operator\n\n"  # the kept socket takes the new level


def stats_command(path: str, line: str, timeout: float = 10) -> str:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(line.encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out.decode()


def test_the_master_keeps_serving_while_a_reload_reads_its_configuration(start_splicer, tmp_path):
    """A reload whose configuration takes long to load (here an `acl -f` FIFO no one writes
    yet; a slow resolver alike) does not stall the master: its CLI answers meanwhile, and the
    reload completes once the file can be read."""
    port = free_port()
    sp = start_splicer(config(port), [port])
    fifo = tmp_path / "paths.fifo"
    os.mkfifo(fifo)
    sp.cfg_path.write_text(config(port, frontend_lines=f"    acl api path_beg -f {fifo}\n"))
    sp.proc.send_signal(signal.SIGUSR2)
    writer_done = threading.Event()

    def feed():  # unblocks the reload's open() of the FIFO if the test fails first
        try:
            with open(fifo, "w") as f:
                f.write("/api\n")
        finally:
            writer_done.set()

    try:
        # logged right before the file is read: from then on the loop would be stuck if the
        # reading ran on it (the FIFO's open() blocks until a writer comes); a master that does
        # not log it has had the time to get there anyway
        deadline = time.monotonic() + 5
        while "master: reload 1: reading " not in sp.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        try:
            answer = sp.cli("show proc", timeout=5)
        except TimeoutError:
            pytest.fail("the master's loop stalled while the reload reads its file")
        assert time.monotonic() - started < 2, "the master's loop stalled while the reload reads its file"
        assert answer.splitlines()[1].split()[1] == "master"
        assert [g for _, g in procs(sp)[0]] == [1]  # still loading: nothing changed yet
    finally:
        threading.Thread(target=feed, daemon=True).start()
        assert writer_done.wait(20)
    wait_for(lambda: [g for _, g in procs(sp)[0]] == [2], 60, "the reload's generation 2")
    assert "master: reload 1: generation 2" in sp.log()

