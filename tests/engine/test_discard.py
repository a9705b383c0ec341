"""SPL_JOB_DISCARD: the engine reads a socket and drops the bytes (a lingering close, RFC 9112
section 9.6; a body answered without being read), until a count or the end of stream,
bounded per wait (src_idle_ms) and as a whole (dst_idle_ms). Real loopback TCP pairs."""
from __future__ import annotations

import asyncio
import os

import pytest

from splicer.engine.binding import JOB_DISCARD
from splicer.engine.engine import JobEnd, UNTIL_EOF

from .conftest import engine, recv_exact, run, send

MiB = 1 << 20
pytestmark = pytest.mark.timeout(60)


def discard(e, sock, count=UNTIL_EOF, idle_ms=0, whole_ms=0):
    """A discard job on `sock`; its future."""
    return e.submit(sock.fileno(), -1, count, JOB_DISCARD, idle_ms, whole_ms, src_gen=e.gen(sock))[1]


def test_until_the_end_of_stream(net, blob):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=4, bufsize=4096) as e:
            fut = discard(e, src)
            await send(w, blob[:5 * MiB], shut=True)
            return await asyncio.wait_for(fut, 10)

    c = run(main())
    assert (c.end, c.bytes_fwd) == (JobEnd.DONE, 5 * MiB)


def test_a_count_leaves_what_follows_in_the_socket(net, blob):
    w, src = net.tcp()
    after = b"GET /next HTTP/1.1\r\n\r\n"

    async def main():
        async with engine(maxjobs=4, bufsize=4096) as e:
            await send(w, blob[:300_000] + after)
            c = await asyncio.wait_for(discard(e, src, 300_000), 10)
            return c, await asyncio.wait_for(recv_exact(src, len(after)), 5)

    c, rest = run(main())
    assert (c.end, c.bytes_fwd) == (JobEnd.DONE, 300_000)
    assert rest == after


def test_a_count_cut_short_by_the_peer(net):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=4, bufsize=4096) as e:
            fut = discard(e, src, 10_000)
            await send(w, b"x" * 4000, shut=True)
            return await asyncio.wait_for(fut, 10)

    c = run(main())
    assert (c.end, c.bytes_fwd) == (JobEnd.PEER_CLOSED, 4000)


def test_a_silent_peer_times_out_per_wait(net):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=4, bufsize=4096) as e:
            return await asyncio.wait_for(discard(e, src, idle_ms=200), 10)

    c = run(main())
    assert (c.end, c.side) == (JobEnd.TIMEOUT, "src")


def test_a_peer_that_never_stops_sending_meets_the_whole_limit(net):
    """A trickle keeps every wait short; the whole discard's limit still ends it."""
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=4, bufsize=4096) as e:
            fut = discard(e, src, idle_ms=200, whole_ms=500)
            t0 = asyncio.get_running_loop().time()
            while not fut.done() and asyncio.get_running_loop().time() - t0 < 5:
                w.send(b"y" * 2048)
                await asyncio.sleep(0.02)
            return await asyncio.wait_for(fut, 5), asyncio.get_running_loop().time() - t0

    c, took = run(main())
    assert c.end == JobEnd.TIMEOUT and c.bytes_fwd > 0
    assert took < 4  # the whole limit, not the trickle, ended it


def test_bad_discard_jobs_are_refused(net):
    w, src = net.tcp()
    _, dst = net.tcp()

    async def main():
        async with engine(maxjobs=4, bufsize=4096) as e:
            for args in [(src.fileno(), dst.fileno(), 10, JOB_DISCARD),  # a destination
                         (src.fileno(), -1, 0, JOB_DISCARD)]:               # nothing to drop
                with pytest.raises(OSError):
                    e.submit(*args, src_gen=e.gen(src))
    run(main())
    assert os.get_blocking(src.fileno()) is False
