"""The master CLI's limits and line rules (`-S PATH`): idle clients are dropped, concurrent
clients are bounded, EMFILE on accept is logged once and survived, an overlong line ends the
connection however it arrives, `quit` ends its line, a NUL byte refuses its line, and
`@!<pid>` targets a worker by pid (haproxy management.txt, "master CLI"). Real processes,
raw unix sockets."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import time

import pytest

from tests.e2e.helpers import free_port, http_config

two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")


def connect(path: str, timeout: float = 30.0) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def read_to_eof(s: socket.socket) -> bytes:
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    return out


def closed_unanswered(s: socket.socket) -> bool:
    """The master closed `s` without answering (a reset: it closed with our line unread)."""
    try:
        return read_to_eof(s) == b""
    except ConnectionResetError:
        return True


def started(start_splicer, farm, nbthread: int = 1):
    port = free_port()
    return start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=nbthread), [port],
                         workers=nbthread)


def test_an_idle_client_is_disconnected_after_the_idle_timeout(start_splicer, farm):
    sp = started(start_splicer, farm)
    with connect(sp.master_socket, timeout=60) as s:
        t0 = time.monotonic()
        assert s.recv(1) == b""  # closed by the master (no timeout here: it would raise)
        assert time.monotonic() - t0 >= 9.5  # mastercli.IDLE_TIMEOUT: 10 s
    with connect(sp.master_socket) as s:  # interactive sessions too
        s.sendall(b"prompt\n")
        t0 = time.monotonic()
        assert read_to_eof(s) == b"master> "
        assert time.monotonic() - t0 >= 9.5


def test_clients_beyond_the_bound_are_closed_at_once(start_splicer, farm):
    sp = started(start_splicer, farm)
    held = []
    try:
        for _ in range(100):  # mastercli.MAX_CLIENTS idle sessions
            s = connect(sp.master_socket)
            s.sendall(b"prompt\n")
            held.append(s)
        for s in held:  # each one is a session (it answered its prompt)
            assert s.recv(64) == b"master> "
        with connect(sp.master_socket) as extra:
            extra.sendall(b"show proc\n")
            assert closed_unanswered(extra)
        held.pop().close()
        deadline = time.monotonic() + 30
        while True:  # the slot freed is taken again once the master saw that close
            with connect(sp.master_socket) as s:
                s.sendall(b"show proc\n")
                try:
                    if read_to_eof(s).startswith(b"#<PID>"):
                        break
                except ConnectionResetError:
                    pass  # still refused: the master has not seen the close yet
            assert time.monotonic() < deadline, "no session after one was freed"
            time.sleep(0.05)
    finally:
        for s in held:
            s.close()


def test_out_of_descriptors_on_accept_logs_once_and_recovers(start_splicer, farm):
    sp = started(start_splicer, farm)
    pid = sp.proc.pid
    soft, hard = (int(x) for x in re.search(r"Max open files\s+(\d+)\s+(\d+)",
                                            open(f"/proc/{pid}/limits").read()).groups())
    opened = len(os.listdir(f"/proc/{pid}/fd"))
    subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={opened}:{hard}"], check=True)
    waiting = [connect(sp.master_socket) for _ in range(3)]  # they wait in the backlog
    for s in waiting:
        s.sendall(b"show proc\n")
    deadline = time.monotonic() + 30
    while "master CLI: cannot accept" not in sp.log():
        assert time.monotonic() < deadline, sp.log()
        time.sleep(0.05)
    time.sleep(5)  # not a synchronisation: several back-off rounds (2 s at most) fail meanwhile
    subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={soft}:{hard}"], check=True)
    for s in waiting:  # served once accepting works again
        assert read_to_eof(s).startswith(b"#<PID>")
        s.close()
    log = sp.log()
    assert log.count("master CLI: cannot accept") == 1, log
    assert "Traceback" not in log and "accepting again" in log
    assert sp.cli("show proc").startswith("#<PID>")


def test_an_overlong_line_ends_the_connection_even_in_several_reads(start_splicer, farm):
    sp = started(start_splicer, farm)
    with connect(sp.master_socket) as s:
        s.sendall(b"show proc;" + b" " * 12000)
        time.sleep(0.2)  # two reads on the master's side, most likely (either way it must close)
        s.sendall(b" " * 12000 + b"\n")
        assert closed_unanswered(s)  # nothing run
    with connect(sp.master_socket) as s:  # one line of 20000 bytes at once
        try:
            s.sendall(b"show proc" + b" " * 20000 + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_unanswered(s)


def test_quit_ends_its_line(start_splicer, farm):
    sp = started(start_splicer, farm)
    out = sp.cli("help;quit;show proc")
    assert "show proc" in out and "#<PID>" not in out  # help ran, show proc did not


def test_a_nul_byte_refuses_the_whole_line(start_splicer, farm):
    sp = started(start_splicer, farm)
    with connect(sp.master_socket) as s:
        s.sendall(b"show proc;he\x00lp\n")
        out = read_to_eof(s).decode()
    assert out == "A NUL byte is not allowed in a command line: none of its commands was run.\n\n"
    with connect(sp.master_socket) as s:  # interactive: the session goes on
        s.sendall(b"prompt\nshow\x00 proc\nshow proc\nquit\n")
        out = read_to_eof(s).decode()
    assert "none of its commands was run" in out and out.count("#<PID>") == 1


@two_cpus
def test_at_bang_pid_targets_the_worker_with_that_pid(start_splicer, farm):
    sp = started(start_splicer, farm, nbthread=2)
    for pid in sp.worker_pids():
        out = sp.cli(f"@!{pid} show info")
        assert f"Pid: {pid}\n" in out, out
    assert sp.cli("@!1 show info") == "Can't find the target PID matching the prefix '@!1'\n\n"
