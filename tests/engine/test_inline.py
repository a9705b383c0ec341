"""An inline engine (turned by the event loop) never holds the loop for long: a turn moves
at most SPL_INLINE_BUDGET bytes per job direction (and SPL_TURN_BUDGET in all), then gives
the loop back, and the job goes on in the next turn, which the engine asks for
(SPL_POLL_AGAIN).

Checked turn by turn with spl_engine_poll() called directly: the source holds 10 MiB before
the first turn (socket buffers enlarged with SO_SNDBUFFORCE/SO_RCVBUFFORCE, which needs
CAP_NET_ADMIN), so only the budget can end a turn early.
"""
from __future__ import annotations

import asyncio
import socket

import pytest

from splicer.engine.binding import EngineHandle
from splicer.engine.engine import Engine, JobEnd, SpliceJob
from tests.engine.conftest import run

MiB = 1 << 20
BUDGET = 4 * MiB  # SPL_INLINE_BUDGET
PIPE = 64 << 10  # the kernel's default pipe size (pipesize 0): a pump may overshoot by one


@pytest.fixture(autouse=True)
def engine_mode():
    """This module's engines are inline by construction: it runs once, not once per mode."""
    yield "inline"


def big_pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    try:
        for s in (a, b):
            s.setsockopt(socket.SOL_SOCKET, 32, 16 * MiB)  # SO_SNDBUFFORCE
            s.setsockopt(socket.SOL_SOCKET, 33, 16 * MiB)  # SO_RCVBUFFORCE
    except PermissionError:
        a.close(), b.close()
        pytest.skip("SO_SNDBUFFORCE needs CAP_NET_ADMIN")
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def test_inline_turn_moves_at_most_its_budget():
    w, src = big_pair()
    dst, r = big_pair()
    data = b"x" * (10 * MiB)
    assert w.send(data) == len(data)  # all of it waits in the socket before the first turn

    async def main():
        e = Engine(asyncio.get_running_loop(), maxjobs=4, maxpipes=4, inline=True)
        moved, flags = [], []
        poll = e._poll_now

        def measured_poll():  # every turn, whoever takes it (the loop, a wake)
            before = e.stats().spliced_bytes
            flags.append(poll())
            moved.append(e.stats().spliced_bytes - before)
            return flags[-1]
        e._poll_now = measured_poll
        try:
            c = await e.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=len(data)))
            return c, moved, flags
        finally:
            e.close()

    try:
        c, moved, flags = run(main())
    finally:
        got = 0
        while True:
            try:
                got += len(r.recv(8 * MiB))
            except BlockingIOError:
                break
        for s in (w, src, dst, r):
            s.close()
    assert (c.end, c.bytes_fwd, got) == (JobEnd.DONE, len(data), len(data))
    assert sum(moved) == len(data)
    assert max(moved) <= BUDGET + PIPE, moved  # never the whole 10 MiB in one turn
    assert len(moved) >= 3, moved
    # every turn that stopped on its budget asked for another one
    assert all(f & EngineHandle.POLL_AGAIN for f, m in zip(flags[:-1], moved[:-1]) if m >= BUDGET), (flags, moved)
