"""Worker processes: one per `nbthread`, pinned to CPUs, restarted when they die, all stopped by SIGTERM."""
from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import time

import pytest

from splicer.stats import merge_stats
from tests.e2e.helpers import free_port, http_config

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")


def cpus_of(pid: int) -> str:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split()[1]
    raise AssertionError("no Cpus_allowed_list")


def thread_cpus(pid: int) -> set[str]:
    return {cpus_of_task(pid, tid) for tid in os.listdir(f"/proc/{pid}/task")}


PF_IO_WORKER = 0x10
"""A task's flag (/proc/PID/task/TID/stat, field 9; linux/sched.h) for the kernel's io_uring
workers ("iou-wrk-*"): libuv batches its epoll_ctl calls through an io_uring, and one the
kernel cannot do at once (a nested epoll's global mutex taken, as when two workers start
together) goes to such a worker, a task of the process that is none of its own threads."""


def own_threads(pid: int) -> list[str]:
    """The process's threads, without the kernel's io_uring workers, as "tid:comm"."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if not int(stat[stat.rindex(")") + 2:].split()[6]) & PF_IO_WORKER:
            out.append(f"{tid}:{comm}")
    return out


def cpus_of_task(pid: int, tid: str) -> str:
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split()[1]
    raise AssertionError("no Cpus_allowed_list")


def wait_workers(sp, n: int, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = sp.worker_pids()
        if len(pids) == n and all(f"worker {i} (pid" in sp.log() for i in range(1, n + 1)):
            return pids
        time.sleep(0.05)
    raise AssertionError(f"expected {n} workers, have {sp.worker_pids()}")


def get_ok(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/files/1k")
    resp = conn.getresponse()
    assert resp.status == 200 and len(resp.read()) == 1024
    conn.close()


def test_each_worker_and_its_engine_thread_pinned_to_its_cpu(start_splicer, farm):
    """With the engine on a thread of its own (SPLICER_ENGINE=thread), that thread is pinned
    to its worker's CPU like the loop thread."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2,
                       env={"SPLICER_ENGINE": "thread"})
    pids = wait_workers(sp, 2)
    time.sleep(0.3)  # let both finish starting their engine threads
    assert sorted(cpus_of(p) for p in pids) == ["0", "1"]
    for p in pids:
        assert len(os.listdir(f"/proc/{p}/task")) >= 2  # the loop thread and the engine thread
        assert thread_cpus(p) == {cpus_of(p)}
    stats = sp.stats()
    assert sorted(stats["worker"]) == [1, 2]


def test_each_worker_pinned_to_its_cpu_runs_its_engine_inline(start_splicer, farm):
    """By default a worker pinned to one CPU turns its engine from its loop (runtime/proxy.py
    engine_inline): no engine thread, and every thread it has is on its CPU."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    pids = wait_workers(sp, 2)
    time.sleep(0.3)
    assert sorted(cpus_of(p) for p in pids) == ["0", "1"]
    for p in pids:
        assert len(own_threads(p)) == 1, own_threads(p)  # the loop thread turns the engine
        assert thread_cpus(p) == {cpus_of(p)}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(4):
        conn.request("GET", "/files/1k")
        r = conn.getresponse()
        assert (r.status, len(r.read())) == (200, 1024)
    conn.close()


def test_cpu_map_is_honoured(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, [(o.name, o.port) for o in farm], nbthread=2).replace(
        "    nbthread 2\n", "    nbthread 2\n    cpu-map 1/1 1\n    cpu-map 1/2 0\n")
    sp = start_splicer(cfg, [port], workers=2)
    wait_workers(sp, 2)
    lines = [ln for ln in sp.log().splitlines() if "serving on CPUs" in ln]
    deadline = time.monotonic() + 5
    while len(lines) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
        lines = [ln for ln in sp.log().splitlines() if "serving on CPUs" in ln]
    assert any("worker 1 " in ln and ln.endswith("CPUs 1") for ln in lines)
    assert any("worker 2 " in ln and ln.endswith("CPUs 0") for ln in lines)


def test_killed_worker_is_restarted_and_traffic_continues(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    pids = wait_workers(sp, 2)
    for _ in range(10):
        get_ok(port)
    os.kill(pids[0], signal.SIGKILL)
    # traffic goes on through the other worker at once, and the master restarts the dead one
    for _ in range(10):
        get_ok(port)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = sp.worker_pids()
        if len(now) == 2 and pids[0] not in now:
            break
        time.sleep(0.05)
    now = sp.worker_pids()
    assert len(now) == 2 and pids[0] not in now and pids[1] in now
    assert "killed by signal 9; restarting it" in sp.log()
    for _ in range(10):
        get_ok(port)


def test_sigterm_stops_master_and_every_worker(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    pids = wait_workers(sp, 2)
    get_ok(port)
    assert sp.stop() == 0
    for p in pids:
        assert not os.path.exists(f"/proc/{p}") or open(f"/proc/{p}/stat").read().split()[2] == "Z"
    assert sp.log().count("splicer-stats ") >= 2  # each worker printed its counters on the way out


def _gone(pid: int) -> bool:
    """The process `pid` has exited (reaped, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_sighup_keeps_master_and_workers_and_prints_the_counters(start_splicer, farm):
    """Issue 10: SIGHUP used to kill the master and orphan its workers (still holding the
    port). Now it is haproxy's dump: every worker prints its counters, nothing stops."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    pids = wait_workers(sp, 2)
    for _ in range(6):
        get_ok(port)
    sp.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while len(lines := re.findall(r"^splicer-stats (.*)$", sp.log(), re.M)) < 2:
        assert time.monotonic() < deadline, "not every worker printed its counters after SIGHUP"
        time.sleep(0.02)
    assert merge_stats([json.loads(x) for x in lines])["frontends"]["www"]["req_tot"] == 6
    assert sp.proc.poll() is None
    assert sorted(sp.worker_pids()) == sorted(pids)
    for _ in range(6):
        get_ok(port)
    assert sp.stats()["frontends"]["www"]["req_tot"] == 12


def test_workers_die_with_a_killed_master_and_free_the_port(start_splicer, farm):
    """A master killed with SIGKILL (no chance to stop its workers) leaves no worker
    behind: each gets SIGTERM from the kernel (PR_SET_PDEATHSIG) and the port is free."""
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm], nbthread=2), [port], workers=2)
    pids = wait_workers(sp, 2)
    get_ok(port)
    sp.proc.kill()
    sp.proc.wait(5)
    deadline = time.monotonic() + 10
    while not all(_gone(p) for p in pids):
        assert time.monotonic() < deadline, "a worker outlived its master"
        time.sleep(0.02)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))  # nothing holds the listening socket any more
