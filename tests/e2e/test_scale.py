"""10,000 concurrent keep-alive client connections through one splicer worker: every response
exact, all connections idle at once, then a second request on each; afterwards the worker
holds exactly the file descriptors it held before (no client or server connection leaked).

The clients run in this process (uvloop, raw non-blocking sockets), the origin in a process
of its own (tests/e2e/path_origin.py: each response's body names its request's path), and
splicer with `nbthread 1` and `maxconn 10000`: the 10,000 connections fill it exactly.
Connections are opened, and requests sent, WINDOW at a time, well under the listener's
backlog (splicer.runtime.listener.BACKLOG). The client connections come from four loopback
addresses (127.0.0.1-4), 2,500 each, so that even with the TIME_WAIT entries of earlier runs
no ephemeral port range is short.

File descriptors are counted by kind in /proc/PID/fd, each TCP socket classified through
/proc/net/tcp (client connection, server connection, listener); the worker's census after
the clients closed, and its idle server connections were purged, must equal its census
before the load. The origin's open connections must fall back to none. RSS (VmRSS) of the
worker and of the master is printed before the load and with every connection idle.
"""
from __future__ import annotations

import asyncio
import collections
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import uvloop

from splicer.runtime.pool import IdlePool
from tests.e2e.helpers import free_port
from tests.e2e.path_origin import answer

N = 10_000
"""Client connections, all open at once (splicer's maxconn)."""
WINDOW = 256
"""Connections being opened, or requests in flight, at once."""
EXCHANGE_TIMEOUT = 15.0
"""Seconds one connection's connect and exchange may take (a lost response fails it)."""
SOURCES = [f"127.0.0.{k}" for k in range(1, 5)]
"""Source addresses of the client connections (round robin)."""
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)
"""bind() a source address without taking a port: connect() picks it per destination."""
POOL_PURGE = IdlePool().max_idle
"""Seconds after which splicer closes an idle server connection."""
SPARE_FDS = 1024
"""File descriptors beyond the connections, for this process and for the worker."""

CONFIG = """
global
    nbthread 1
    maxconn {n}

defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 30s
    timeout http-request 10s
    timeout http-keep-alive 60s

frontend www
    bind 127.0.0.1:{port}
    default_backend farm

backend farm
    server web1 127.0.0.1:{origin}
"""


@pytest.fixture
def nofile():
    """This process holds N client sockets: raise the soft RLIMIT_NOFILE to the hard limit
    (splicer raises its own from maxconn, up to the same hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        with open("/proc/sys/fs/nr_open") as f:
            target = int(f.read())
    if target < N + WINDOW + 256 + SPARE_FDS:
        # the worker holds N client and up to WINDOW + 256 (the idle pool) server connections
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {N + WINDOW + 256 + SPARE_FDS}: "
                    f"{N} connections cannot be held by this process and splicer's worker")
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    yield target
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def origin():
    """The path origin in a process of its own; yields (port, Popen)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.e2e.path_origin", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            cwd=str(Path(__file__).resolve().parents[2]))
    line = proc.stdout.readline()
    assert line == b"listening\n", (line, proc.poll())
    yield port, proc
    proc.kill()
    proc.wait(5)


def tcp_table() -> dict[int, tuple[int, int, int]]:
    """{socket inode: (local port, remote port, state)} of every TCP socket (/proc/net/tcp)."""
    out = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(name) as f:
            next(f)
            for line in f:
                p = line.split()
                out[int(p[9])] = (int(p[1].rsplit(":", 1)[1], 16), int(p[2].rsplit(":", 1)[1], 16), int(p[3], 16))
    return out


LISTEN = 0x0A


def census(pid: int, fe_port: int, origin_port: int) -> collections.Counter:
    """The file descriptors of process `pid`, counted by kind: TCP sockets as client
    connections (to fe_port), server connections (to origin_port) or listeners, anything
    else by its /proc/PID/fd link with the inode number dropped ("pipe", "anon_inode:[eventfd]")."""
    tcp = tcp_table()
    kinds: collections.Counter = collections.Counter()
    d = f"/proc/{pid}/fd"
    for fd in os.listdir(d):
        try:
            link = os.readlink(f"{d}/{fd}")
        except FileNotFoundError:
            continue  # closed while we looked
        if link.startswith("socket:["):
            t = tcp.get(int(link[8:-1]))
            if t is None:
                kinds["socket"] += 1
            elif t[2] == LISTEN:
                kinds[f"listen:{t[0]}"] += 1
            elif t[0] == fe_port:
                kinds["client"] += 1
            elif t[1] == origin_port:
                kinds["server"] += 1
            else:
                kinds["tcp-other"] += 1
        elif link.startswith("pipe:["):
            kinds["pipe"] += 1
        else:
            kinds[link] += 1
    return kinds


def vm_rss(pid: int) -> int:
    """Resident set size of `pid`, bytes (/proc/PID/status VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def request(i: int, k: int) -> tuple[bytes, bytes]:
    """Request number k (1, 2) of connection i, and the exact response it must get."""
    target = b"/conn/%d/req/%d" % (i, k)
    return b"GET %s HTTP/1.1\r\nHost: scale.test\r\nUser-Agent: test_scale\r\n\r\n" % target, answer(target)


async def exchange(loop, s: socket.socket, req: bytes, want: bytes) -> None:
    """Send `req` on `s`, read one response (Content-Length framed) and compare it, bytes
    for bytes, with `want`; nothing may come after it."""
    await loop.sock_sendall(s, req)
    data = b""
    while True:
        chunk = await loop.sock_recv(s, 4096)
        if not chunk:
            raise AssertionError(f"closed after {data!r}, expected {want!r}")
        data += chunk
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            head = data[:end].lower()
            if b"content-length:" not in head:
                raise AssertionError(f"no Content-Length in {data!r}")
            length = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
            if len(data) >= end + 4 + length:
                break
    if data != want:
        raise AssertionError(f"got {data!r}, expected {want!r}")


async def open_one(loop, port: int, i: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        s.bind((SOURCES[i % len(SOURCES)], 0))
        await loop.sock_connect(s, ("127.0.0.1", port))
        await exchange(loop, s, *request(i, 1))
    except BaseException:
        s.close()
        raise
    return s


async def windowed(fn, count: int) -> list:
    """fn(i) for i in range(count), WINDOW at a time; returns results and exceptions by i."""
    sem = asyncio.Semaphore(WINDOW)

    async def one(i):
        async with sem, asyncio.timeout(EXCHANGE_TIMEOUT):
            return await fn(i)

    return await asyncio.gather(*(one(i) for i in range(count)), return_exceptions=True)


def failures(results: list) -> list[str]:
    bad = [f"{i}: {r!r}" for i, r in enumerate(results) if isinstance(r, BaseException)]
    return bad[:5] + ([f"... {len(bad)} in all"] if len(bad) > 5 else [])


def still_idle(s: socket.socket) -> bool:
    """True when the connection is open with nothing pending (no byte, no EOF, no error)."""
    try:
        s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def settle(cond, timeout: float, what: str, last=lambda: "?"):
    """Poll cond() until it returns a true value (returned) or `timeout` passes (fails,
    showing last())."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() > deadline:
            assert v, f"{what} within {timeout} s (last: {last()})"
            return v
        time.sleep(0.1)


@pytest.mark.timeout(60)
def test_ten_thousand_keepalive_connections_exact_responses_no_fd_leak(nofile, origin, start_splicer):
    origin_port, origin_proc = origin
    port = free_port()
    sp = start_splicer(CONFIG.format(n=N, port=port, origin=origin_port), ports=[port])
    worker = sp.worker_pids()[0]
    master = sp.proc.pid
    t0 = time.monotonic()
    before = census(worker, port, origin_port)
    origin_before = census(origin_proc.pid, port, origin_port)
    rss_before = vm_rss(worker), vm_rss(master)
    assert before["client"] == 0 and before["server"] == 0, before
    timing = {}

    async def load():
        loop = asyncio.get_running_loop()
        t = time.monotonic()
        opened = await windowed(lambda i: open_one(loop, port, i), N)
        conns = [s for s in opened if isinstance(s, socket.socket)]
        timing["open"] = time.monotonic() - t
        try:
            assert not failures(opened), failures(opened)
            # every connection open and idle at the same time, on both sides
            assert sum(map(still_idle, conns)) == N
            idle = settle(lambda: (c := census(worker, port, origin_port))["client"] == N and c, 5,
                          f"the worker holding {N} client connections")
            st = sp.stats()
            assert st["frontends"]["www"]["scur"] == N
            rss_idle = vm_rss(worker), vm_rss(master)
            timing["idle"] = (idle, rss_idle)
            t = time.monotonic()
            second = await windowed(lambda i: exchange(loop, conns[i], *request(i, 2)), N)
            timing["second"] = time.monotonic() - t
            assert not failures(second), failures(second)
            assert sum(map(still_idle, conns)) == N
        finally:
            for s in conns:
                s.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(asyncio.wait_for(load(), 40))
    t = time.monotonic()
    # the sessions end, then the pool purges the idle server connections (POOL_PURGE)
    fd_dir = f"/proc/{worker}/fd"
    after = settle(lambda: len(os.listdir(fd_dir)) == sum(before.values())
                   and (c := census(worker, port, origin_port)) == before and c, POOL_PURGE + 5,
                   f"the worker's fds back to {dict(before)}", lambda: dict(census(worker, port, origin_port)))
    settle(lambda: census(origin_proc.pid, port, origin_port) == origin_before, 5,
           "the origin's connections all closed", lambda: dict(census(origin_proc.pid, port, origin_port)))
    timing["settle"] = time.monotonic() - t
    st = sp.stats()
    fe = st["frontends"]["www"]
    assert (fe["scur"], fe["req_tot"], fe["ereq"]) == (0, 2 * N, 0), fe
    assert sp.worker_pids() == [worker]
    # nothing went wrong on the way; the one warning: this machine's hard RLIMIT_NOFILE is
    # below what maxconn 10000 would need with every pipe in use (splicer runs with it)
    lines = [x for x in sp.log().splitlines() if " WARNING " in x or " ERROR " in x or "Traceback" in x]
    assert [x for x in lines if "file descriptors but the hard limit is" not in x] == []
    idle, rss_idle = timing["idle"]
    print(f"\nscale: open+first {timing['open']:.1f} s, second {timing['second']:.1f} s, "
          f"settle {timing['settle']:.1f} s, total {time.monotonic() - t0:.1f} s; "
          f"worker fds {sum(before.values())} -> {sum(idle.values())} ({idle['client']} client, "
          f"{idle['server']} server connections) -> {sum(after.values())}; "
          f"RSS worker {rss_before[0] >> 10} -> {rss_idle[0] >> 10} KiB "
          f"({(rss_idle[0] - rss_before[0]) / N:.0f} B/conn), master {rss_before[1] >> 10} -> "
          f"{rss_idle[1] >> 10} KiB")
