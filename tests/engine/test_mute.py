"""Muting (native/src/engine.c spl_mute): a spliced direction waiting for room at its
destination is not woken by bytes arriving at its source, and loses none of them.

Each test fills the destination (its reader does not read), then sends small segments to
the source one by one, each of which is an edge of the edge-triggered epoll: an engine that
listened to the source would run the job once per segment (one splice call each, ending in
EAGAIN at the full destination). Then the reader drains everything, and every byte, and the
end of stream, must arrive. Real loopback TCP pairs; every wait is bounded.
"""
from __future__ import annotations

import asyncio
import socket
import time

import pytest

from splicer.engine.engine import JobEnd, SpliceJob

from .conftest import engine, recv_exact, recv_to_eof, run, send

KiB = 1 << 10
MiB = 1 << 20
SEGMENTS = 100
pytestmark = pytest.mark.timeout(60)


async def steady(eng, quiet_for: float = 0.3, timeout: float = 10.0):
    """The engine's stats once its splice calls stopped changing for `quiet_for` seconds."""
    deadline = time.monotonic() + timeout
    last, since = eng.stats().splice_calls, time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        now = eng.stats().splice_calls
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_for:
            return eng.stats()
    raise AssertionError("the engine never stopped splicing")


async def trickle(w: socket.socket, data: bytes, pieces: int) -> None:
    """`data` in `pieces` separate segments (TCP_NODELAY, a pause between them)."""
    step = len(data) // pieces
    for i in range(pieces):
        piece = data[i * step:(i + 1) * step if i < pieces - 1 else len(data)]
        assert w.send(piece) == len(piece)  # it fits: the source's buffer has room
        await asyncio.sleep(0.002)


async def muted_window(eng, w: socket.socket, first: bytes, late: bytes):
    """Sends `first` (the destination fills), waits until the engine stops, then trickles
    `late` in SEGMENTS segments: the engine's stats (before, during) around the segments."""
    await send(w, first)
    before = await steady(eng)
    await trickle(w, late, SEGMENTS)
    await asyncio.sleep(0.1)
    return before, eng.stats()


def fill_pairs(net):
    """(w, src), (dst, r): the destination's buffers small, so that it fills early, and the
    source's large, so that the segments sent later arrive (and bring events) at once."""
    w, src = net.tcp(rcvbuf=4 * MiB)
    dst, r = net.tcp(sndbuf=16 * KiB, rcvbuf=16 * KiB)
    return w, src, dst, r


def test_counted_body_is_not_run_by_source_bytes_while_destination_is_full(net, blob):
    w, src, dst, r = fill_pairs(net)
    first, late = blob[:256 * KiB], blob[MiB:MiB + SEGMENTS * KiB]
    n = len(first) + len(late)

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            job = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=n)))
            before, during = await muted_window(eng, w, first, late)
            got = await asyncio.wait_for(recv_exact(r, n), 20)
            return before, during, await asyncio.wait_for(job, 5), got

    before, during, c, got = run(main())
    # waiting for room at dst, the job made no splice call for the segments arriving at src
    # (one per segment, each ending in EAGAIN at dst, when src is listened to)
    assert during.splice_calls - before.splice_calls <= 3, (before, during)
    assert during.eagain_waits - before.eagain_waits <= 3, (before, during)
    assert (c.end, c.bytes_fwd) == (JobEnd.DONE, n), c
    assert got == first + late


def test_end_of_stream_arriving_while_muted_is_forwarded(net, blob):
    """An until-EOF body: the source's FIN comes while the job is muted; once the reader
    drains, the bytes and then the FIN get through (the FIN is re-read when unmuted)."""
    w, src, dst, r = fill_pairs(net)
    first, late = blob[2 * MiB:2 * MiB + 256 * KiB], blob[3 * MiB:3 * MiB + SEGMENTS * KiB]

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            job = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=None,
                                                           shut_wr_on_eof=True)))
            before, during = await muted_window(eng, w, first, late)
            w.shutdown(socket.SHUT_WR)  # the FIN too arrives while muted (a state change: one
            # event for a muted socket's EPOLLOUT, which a tunnel's other way needs)
            got = await asyncio.wait_for(recv_to_eof(r), 20)
            return before, during, await asyncio.wait_for(job, 5), got

    before, during, c, got = run(main())
    assert during.splice_calls - before.splice_calls <= 3, (before, during)
    assert (c.end, c.bytes_fwd) == (JobEnd.DONE, len(first) + len(late)), c
    assert got == first + late


def test_tunnel_direction_is_muted_and_the_other_way_still_flows(net, blob):
    """A tunnel a <-> b: the a -> b way waits for room (b's reader does not read) while the
    b -> a way keeps moving; segments arriving at a wake nothing, and all arrive later."""
    wa, a = net.tcp(rcvbuf=4 * MiB)
    b, rb = net.tcp(sndbuf=16 * KiB, rcvbuf=16 * KiB)
    first, late = blob[4 * MiB:4 * MiB + 256 * KiB], blob[5 * MiB:5 * MiB + SEGMENTS * KiB]
    back = blob[6 * MiB:6 * MiB + 256 * KiB]

    async def main():
        async with engine(maxjobs=2, maxpipes=4) as eng:
            job = asyncio.create_task(eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True)))
            before, during = await muted_window(eng, wa, first, late)
            # the other way is not muted: it moves while a -> b still waits
            await send(rb, back, shut=True)
            echoed = await asyncio.wait_for(recv_exact(wa, len(back)), 10)
            wa.shutdown(socket.SHUT_WR)
            got = await asyncio.wait_for(recv_to_eof(rb), 20)
            assert await asyncio.wait_for(recv_to_eof(wa), 5) == b""
            return before, during, await asyncio.wait_for(job, 5), got, echoed

    before, during, c, got, echoed = run(main())
    assert during.splice_calls - before.splice_calls <= 3, (before, during)
    assert echoed == back
    assert got == first + late
    assert (c.end, c.bytes_fwd, c.bytes_rev) == (JobEnd.DONE, len(first) + len(late), len(back)), c
