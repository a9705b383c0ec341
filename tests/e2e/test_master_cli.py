"""The master CLI (`-S PATH`, haproxy's master socket): show proc, show counters, help, prompt."""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import time

import pytest

from tests.e2e.helpers import free_port, http_config

two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")


def get_ok(port: int, n: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(n):
        conn.request("GET", "/files/1k")
        resp = conn.getresponse()
        assert resp.status == 200 and len(resp.read()) == 1024
    conn.close()


def test_show_counters_sums_every_worker_and_lists_each(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    for _ in range(5):
        get_ok(port, 2)  # five connections, which the two workers share as the kernel pleases
    per = sp.worker_stats()
    assert [w["worker"] for w in per] == [1, 2]
    assert sorted(w["pid"] for w in per) == sorted(sp.worker_pids())
    total = sp.stats()
    assert total["worker"] == [1, 2]
    assert total["frontends"]["www"]["req_tot"] == 10 == sum(w["frontends"]["www"]["req_tot"] for w in per)
    assert total["backends"]["farm"]["servers"]["web1"]["req_tot"] + \
        total["backends"]["farm"]["servers"]["web2"]["req_tot"] == 10


def test_show_proc_lists_the_master_and_its_workers(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    lines = sp.cli("show proc").splitlines()
    assert lines[0].split()[:5] == ["#<PID>", "<type>", "<reloads>", "<uptime>", "<version>"]
    master = lines[1].split()
    assert master[:5] == [str(sp.proc.pid), "master", "0", "[failed:", "0]"]
    assert lines[2] == "# workers"
    workers = [ln.split() for ln in lines[3:lines.index("# old workers")]]
    assert sorted(int(w[0]) for w in workers) == sorted(sp.worker_pids())
    assert all(w[1] == "worker" and w[2] == "0" and w[-1] == "1" for w in workers)  # generation 1
    assert lines[-2:] == ["# programs", ""]  # every answer ends with an empty line


def test_help_unknown_command_and_socat(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    assert "show proc" in sp.cli("help") and "reload" in sp.cli("help")
    assert sp.cli("show nothing").startswith("Unknown command: 'show nothing'")
    # as an operator types it: one command per connection through socat
    out = subprocess.run(["socat", "stdio", f"UNIX-CONNECT:{sp.master_socket}"], input=b"show counters\n",
                         capture_output=True, timeout=20, check=True).stdout
    assert json.loads(out.splitlines()[0])["worker"] == [1]


def test_a_command_for_one_worker_answers_as_its_stats_socket_would(start_splicer, farm):
    """`@<n> <command>` runs the runtime API command on worker n: `help` lists the admin
    level's commands (haproxy's master CLI shows the worker's), `show cli level` says
    admin, `show info` is that worker's; a worker that is not there is named."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    helped = sp.cli("@1 help")
    assert helped.startswith("The following commands are valid at this level:\n")
    assert "show stat" in helped and "set server" in helped and "clear counters [all]" in helped
    assert sp.cli("@1 help show").count("\n") > 3 and "set server" not in sp.cli("@1 help show")
    assert sp.cli("@1 show cli level").strip() == "admin"
    assert f"Pid: {sp.worker_pids()[0]}" in sp.cli("@1 show info")
    assert sp.cli("@9 help").startswith("worker 9:")


def read_until(s: socket.socket, marker: bytes, timeout: float = 10.0) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while not out.endswith(marker):
        assert time.monotonic() < deadline, f"no {marker!r} after {out!r}"
        chunk = s.recv(65536)
        assert chunk, f"closed after {out!r}"
        out += chunk
    return out


def test_prompt_mode_keeps_the_connection_open(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(sp.master_socket)
        s.sendall(b"prompt\n")
        assert read_until(s, b"master> ") == b"master> "
        s.sendall(b"show proc\n")
        assert b"# workers" in read_until(s, b"master> ")
        s.sendall(b"show counters\n")
        out = read_until(s, b"master> ")
        assert json.loads(out.splitlines()[0])["worker"] == [1]
        s.sendall(b"quit\n")
        assert s.recv(100) == b""  # closed by the master


def test_the_socket_is_removed_at_exit(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    assert os.path.exists(sp.master_socket)
    assert sp.stop() == 0
    assert not os.path.exists(sp.master_socket)
