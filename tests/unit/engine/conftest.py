"""Real file descriptors for the native pump: non-blocking socketpairs and loopback TCP pairs.

The pump is a thin layer over splice(2); its contract (EAGAIN on either side, EOF only once
the pipe is empty, exact counts) only means something against real kernel sockets.
"""
import os
import select
import socket

import pytest

from splicer.engine.binding import PipePool


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def wait_for(sock: socket.socket, events: int, timeout: float = 2.0) -> int:
    """poll() one socket; fail the test when nothing happens within `timeout` seconds."""
    p = select.poll()
    p.register(sock, events)
    ready = p.poll(timeout * 1000)
    assert ready, f"fd {sock.fileno()} not ready for {events:#x} within {timeout}s"
    return ready[0][1]


def recv_all_available(sock: socket.socket) -> bytes:
    out = bytearray()
    while True:
        try:
            b = sock.recv(1 << 20)
        except BlockingIOError:
            return bytes(out)
        if not b:
            return bytes(out)
        out += b


@pytest.fixture
def sockets():
    """Factory of connected non-blocking pairs (writer, reader); all closed after the test."""
    made = []

    def unix():
        a, b = socket.socketpair()
        made.extend((a, b))
        a.setblocking(False)
        b.setblocking(False)
        return a, b

    def tcp(sndbuf: int | None = None, rcvbuf: int | None = None):
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if rcvbuf:
                lst.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # inherited by accept()
            lst.bind(("127.0.0.1", 0))
            lst.listen(1)
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            made.append(c)
            if sndbuf:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
            c.connect(lst.getsockname())
            s, _ = lst.accept()
            made.append(s)
        finally:
            lst.close()
        for x in (c, s):
            x.setblocking(False)
            x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return c, s

    yield unix, tcp
    for s in made:
        s.close()


@pytest.fixture
def pool():
    p = PipePool(pipesize=4096, maxpipes=4)
    yield p
    p.close()
