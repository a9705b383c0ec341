"""io.wait_readable's lasting watches, on real socket pairs and both event loops.

A watch stays registered between waits (no poll handle churn). What must hold: a wait ends
when data arrives, a watch nobody waits on is dropped instead of waking the loop forever, and
a socket closed without forget() cannot leave the next socket with its fd number unwatched.
"""
from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest
import uvloop

from splicer.runtime import io

LOOPS = {"uvloop": uvloop.new_event_loop, "asyncio": asyncio.new_event_loop}


@pytest.fixture(params=list(LOOPS))
def loop(request):
    lp = LOOPS[request.param]()
    yield lp
    lp.close()
    io._WATCHES.clear()


async def read(loop, sock, timeout=2.0) -> bytes:
    """Wait and read as the runtime does: a wake-up without data (allowed) waits again."""
    for _ in range(10):
        await io.wait_readable(loop, sock, timeout)
        try:
            return sock.recv(10)
        except BlockingIOError:
            continue
    raise AssertionError("woken 10 times without data")


def pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def test_wait_ends_when_data_arrives_and_the_watch_stays(loop):
    a, b = pair()

    async def main():
        loop.call_later(0.05, b.send, b"x")
        assert await read(loop, a) == b"x"
        assert io._WATCHES[a.fileno()].sock is a  # kept for the next wait
        loop.call_later(0.05, b.send, b"y")
        assert await read(loop, a) == b"y"

    loop.run_until_complete(main())
    io.forget(a)
    assert a.fileno() not in io._WATCHES
    a.close()
    b.close()


def test_timeout(loop):
    a, b = pair()
    with pytest.raises(TimeoutError):
        loop.run_until_complete(io.wait_readable(loop, a, 0.05))
    io.forget(a)
    a.close()
    b.close()


def test_unread_data_with_nobody_waiting_drops_the_watch(loop):
    a, b = pair()
    calls = []

    async def main():
        b.send(b"left for splice")
        await io.wait_readable(loop, a, 2.0)
        # the bytes stay unread (as a body kept in the kernel does): the loop must not keep
        # waking up for them; the watch is dropped on its first idle wake-up
        for _ in range(20):
            calls.append(a.fileno() in io._WATCHES)
            await asyncio.sleep(0.005)

    loop.run_until_complete(main())
    assert calls[-1] is False
    a.close()
    b.close()


def test_a_socket_closed_without_forget_does_not_blind_the_next_one(loop):
    a, b = pair()
    fd = a.fileno()

    async def first():
        b.send(b"x")
        assert await read(loop, a) == b"x"
        with contextlib.suppress(TimeoutError):
            await io.wait_readable(loop, a, 0.02)  # nothing comes: the watch stays registered

    loop.run_until_complete(first())
    assert fd in io._WATCHES
    a.close()  # no forget(): the watch is stale now
    b.close()
    c, d = pair()
    for s in (c, d):
        if s.fileno() == fd:
            mine, peer = s, (d if s is c else c)
            break
    else:
        pytest.skip("the kernel did not reuse the fd number")

    async def second():
        loop.call_later(0.05, peer.send, b"y")
        assert await read(loop, mine) == b"y"  # would time out if the stale watch were trusted

    loop.run_until_complete(second())
    io.forget(mine)
    c.close()
    d.close()


def test_a_reset_wakes_every_wait_until_the_socket_is_read(loop):
    """libuv stops a poll by itself when the socket reports an error: a wait after the one a
    reset woke must still return (the socket stays readable with its error), or a stream
    that waits again before reading would hang until its timeout."""
    import struct
    ls = socket.create_server(("127.0.0.1", 0))
    c = socket.create_connection(ls.getsockname())
    c.setblocking(False)
    s, _ = ls.accept()

    async def main():
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        loop.call_later(0.02, s.close)
        await io.wait_readable(loop, c, 2.0)   # woken by the reset
        await io.wait_readable(loop, c, 1.0)   # not read yet: must return at once
        with pytest.raises(ConnectionResetError):
            c.recv(10)

    loop.run_until_complete(main())
    io.forget(c)
    c.close()
    ls.close()
