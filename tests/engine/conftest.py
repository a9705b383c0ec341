"""Helpers for engine-level tests: real loopback TCP pairs and socketpairs, bounded waits.

Every coroutine runs under `run()` (asyncio.run + wait_for), and every wait inside a test is
bounded too, so an engine bug fails a test instead of hanging the run. Naming used by the
tests: bytes go writer `w` -> `src` (the job's src_fd) and the job's `dst` -> reader `r`.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time

import pytest

from splicer.engine.engine import Engine

RUN_TIMEOUT = 30.0


def run(coro, timeout: float = RUN_TIMEOUT):
    """Run `coro` on a fresh event loop; fail (TimeoutError) instead of hanging."""
    async def bounded():
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(bounded())


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def task_ids() -> set[int]:
    return {int(t) for t in os.listdir("/proc/self/task")}


MODE = {"inline": False}
"""The engine mode the running test uses (the `engine_mode` fixture sets it)."""


@pytest.fixture(autouse=True, params=["thread", "inline"])
def engine_mode(request):
    """Every engine test runs twice: with the engine on its own thread, and inline (turned
    by the test's event loop, as a worker pinned to one CPU runs it)."""
    MODE["inline"] = request.param == "inline"
    yield request.param
    MODE["inline"] = False


@contextlib.asynccontextmanager
async def engine(**kw):
    """An Engine on the running loop, closed (thread joined) on exit, before any socket closes;
    inline or on a thread as the `engine_mode` fixture says."""
    kw.setdefault("inline", MODE["inline"])
    e = Engine(asyncio.get_running_loop(), **kw)
    try:
        yield e
    finally:
        e.close()


async def settle(pred, timeout: float = 2.0, what: str = "condition"):
    """Poll `pred()` until true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s (last: {v!r})")
        await asyncio.sleep(0.005)


async def stats_settle(eng, timeout: float = 2.0, **want):
    """Wait until every named engine counter has the wanted value; return the stats."""
    last = {}

    def ok():
        s = eng.stats()
        last["s"] = s
        return s if all(getattr(s, k) == v for k, v in want.items()) else None
    try:
        return await settle(ok, timeout, f"engine stats {want}")
    except AssertionError:
        raise AssertionError(f"engine stats never reached {want}: {last.get('s')}") from None


class Net:
    """Factory of connected non-blocking socket pairs; close_all() closes everything made."""

    def __init__(self) -> None:
        self.made: list[socket.socket] = []

    def _keep(self, *socks):
        for s in socks:
            s.setblocking(False)
            self.made.append(s)

    def unix(self):
        a, b = socket.socketpair()
        self._keep(a, b)
        return a, b

    def tcp(self, n: int | None = None, *, sndbuf: int | None = None, rcvbuf: int | None = None,
            a_rcvbuf: int | None = None, b_sndbuf: int | None = None):
        """Loopback TCP pair(s) (a, b) via a listening socket on 127.0.0.1.

        `sndbuf` is set on a, `rcvbuf` on b (through the listener, so the window is sized at
        the handshake); `a_rcvbuf`/`b_sndbuf` for the other directions. n=None: one pair,
        else a list of n pairs sharing one listener.
        """
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        out = []
        try:
            if rcvbuf:
                lst.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            if b_sndbuf:
                lst.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, b_sndbuf)
            lst.bind(("127.0.0.1", 0))
            lst.listen(128)
            addr = lst.getsockname()
            for _ in range(1 if n is None else n):
                a = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self.made.append(a)
                if sndbuf:
                    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
                if a_rcvbuf:
                    a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a_rcvbuf)
                a.connect(addr)
                b, peer = lst.accept()
                assert peer == a.getsockname()
                self._keep(a, b)
                for x in (a, b):
                    x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                out.append((a, b))
        finally:
            lst.close()
        return out[0] if n is None else out

    def pair(self, kind: str):
        return self.unix() if kind == "unix" else self.tcp()

    def close_all(self) -> None:
        for s in self.made:
            s.close()
        self.made.clear()


@pytest.fixture
def net():
    n = Net()
    yield n
    n.close_all()


@pytest.fixture(scope="session")
def blob() -> bytes:
    """64 MiB of random bytes; tests send slices of it (different offsets catch cross-talk)."""
    return os.urandom(64 << 20)


# ---- byte movers on the running loop ----------------------------------------------------

async def send(sock: socket.socket, data, shut: bool = False) -> None:
    await asyncio.get_running_loop().sock_sendall(sock, data)
    if shut:
        sock.shutdown(socket.SHUT_WR)


async def recv_exact(sock: socket.socket, n: int, chunk: int = 1 << 18) -> bytes:
    """Exactly n bytes; fails if EOF comes first."""
    loop = asyncio.get_running_loop()
    buf = bytearray(n)
    mv = memoryview(buf)
    got = 0
    while got < n:
        k = await loop.sock_recv_into(sock, mv[got:min(n, got + chunk)])
        assert k, f"EOF after {got} of {n} bytes"
        got += k
    return bytes(buf)


async def recv_to_eof(sock: socket.socket, limit: int = 1 << 30, hasher=None) -> int | bytes:
    """Everything until EOF. With `hasher`, feeds it and returns the byte count instead."""
    loop = asyncio.get_running_loop()
    buf = bytearray(1 << 18)
    mv = memoryview(buf)
    out = bytearray()
    total = 0
    while True:
        k = await loop.sock_recv_into(sock, mv)
        if not k:
            return total if hasher is not None else bytes(out)
        total += k
        assert total <= limit, f"more than {limit} bytes"
        if hasher is not None:
            hasher.update(mv[:k])
        else:
            out += mv[:k]


def nothing_to_read(sock: socket.socket) -> bool:
    """True when a non-blocking socket has no data and no EOF queued."""
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    return False  # data, or b"" for EOF

