"""Engine transfers on real sockets: exact counts, EOF forwarding, early close, tunnels, slow readers.

Every byte that reaches the far peer is compared with what was sent, so "moved" means "arrived".
"""
from __future__ import annotations

import asyncio
import hashlib
import socket
import time

import pytest

from splicer.engine.engine import JobEnd, SpliceJob

from .conftest import engine, nothing_to_read, recv_exact, recv_to_eof, run, send

MiB = 1 << 20
KINDS = ["unix", "tcp"]
pytestmark = pytest.mark.timeout(60)


def assert_done(c, fwd: int, rev: int = 0) -> None:
    assert (c.end, c.bytes_fwd, c.bytes_rev, c.errno) == (JobEnd.DONE, fwd, rev, 0), c


# ---- 1. exact count: bytes after the count stay in the source (pipelining) ----------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("count", [1, 50_000, 3 * MiB + 13])
def test_exact_count_leaves_pipelined_bytes_in_source(net, blob, kind, count):
    w, src = net.pair(kind)
    dst, r = net.pair(kind)
    body = blob[:count]
    extra = b"GET /next HTTP/1.1\r\nHost: example\r\n\r\n" * 3

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            writer = asyncio.create_task(send(w, body + extra))   # body and next request in one go
            if count < 100_000:
                await asyncio.wait_for(writer, 5)                  # all queued in src before the job starts
            reader = asyncio.create_task(recv_exact(r, count))
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=count)), 10)
            got = await asyncio.wait_for(reader, 10)
            await asyncio.wait_for(writer, 10)
            left = await asyncio.wait_for(recv_exact(src, len(extra)), 5)   # Python reads the rest
            return c, got, left

    c, got, left = run(main())
    assert_done(c, count)
    assert got == body
    assert left == extra
    assert nothing_to_read(src) and nothing_to_read(r)


@pytest.mark.parametrize("kind", KINDS)
def test_count_exactly_reached_before_fin_is_done(net, blob, kind):
    """The peer sends exactly the count and closes: the job ends DONE, not PEER_CLOSED."""
    w, src = net.pair(kind)
    dst, r = net.pair(kind)
    n = 200_000

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            writer = asyncio.create_task(send(w, blob[:n], shut=True))
            reader = asyncio.create_task(recv_exact(r, n))
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=n)), 10)
            return c, await asyncio.wait_for(reader, 5), await asyncio.wait_for(writer, 5)

    c, got, _ = run(main())
    assert_done(c, n)
    assert got == blob[:n]
    assert src.recv(10) == b""          # the FIN was left in src for Python to see
    assert nothing_to_read(r)           # a count job does not forward the FIN


@pytest.mark.parametrize("kind", KINDS)
def test_pipelined_keepalive_bodies_back_to_back(net, blob, kind):
    """20 bodies written in one send(); 20 count jobs in a row each take exactly theirs."""
    w, src = net.pair(kind)
    dst, r = net.pair(kind)
    sizes = [1, 17, 4096, 65535, 65536, 65537, 100_000, 1, 300_000, 7] * 2
    offs = [sum(sizes[:i]) for i in range(len(sizes))]
    stream = blob[:sum(sizes)]

    async def main():
        async with engine(maxjobs=2, maxpipes=1) as eng:
            writer = asyncio.create_task(send(w, stream))
            for i, n in enumerate(sizes):
                reader = asyncio.create_task(recv_exact(r, n))
                c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=n)), 10)
                assert_done(c, n)
                assert await asyncio.wait_for(reader, 5) == stream[offs[i]:offs[i] + n], i
                assert nothing_to_read(r), i
            await asyncio.wait_for(writer, 5)
            s = eng.stats()
            assert (s.jobs_done, s.spliced_bytes) == (len(sizes), len(stream))

    run(main())
    assert nothing_to_read(src)


# ---- 2. until EOF, shut_wr_on_eof --------------------------------------------------------

@pytest.mark.parametrize("kind,size", [("tcp", 64 * MiB), ("unix", 8 * MiB + 5)])
def test_until_eof_forwards_fin_after_every_byte(net, blob, kind, size):
    w, src = net.pair(kind)
    dst, r = net.pair(kind)
    data = memoryview(blob)[:size]
    want = hashlib.sha256(data).hexdigest()

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            h = hashlib.sha256()
            writer = asyncio.create_task(send(w, data, shut=True))
            reader = asyncio.create_task(recv_to_eof(r, limit=size, hasher=h))
            c = await asyncio.wait_for(
                eng.splice(SpliceJob(src.fileno(), dst.fileno(), shut_wr_on_eof=True)), 20)
            n = await asyncio.wait_for(reader, 10)    # returns only once r saw EOF
            await asyncio.wait_for(writer, 5)
            return c, n, h.hexdigest()

    c, n, got = run(main())
    assert_done(c, size)
    assert n == size
    assert got == want


@pytest.mark.parametrize("kind", KINDS)
def test_until_eof_without_shut_flag_keeps_dst_open(net, blob, kind):
    """Without shut_wr_on_eof the FIN is not forwarded: dst stays usable (keep-alive)."""
    w, src = net.pair(kind)
    dst, r = net.pair(kind)
    n = 1 * MiB + 3

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            writer = asyncio.create_task(send(w, blob[:n], shut=True))
            reader = asyncio.create_task(recv_exact(r, n))
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno())), 10)
            got = await asyncio.wait_for(reader, 5)
            await asyncio.wait_for(writer, 5)
            await asyncio.sleep(0.02)
            assert nothing_to_read(r)           # no FIN
            await send(dst, b"trailer")         # Python owns dst again
            assert await asyncio.wait_for(recv_exact(r, 7), 2) == b"trailer"
            return c, got

    c, got = run(main())
    assert_done(c, n)
    assert got == blob[:n]


# ---- 3. the peer closes before the count -------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["shutdown", "close"])
@pytest.mark.parametrize("sent", [0, 300_001])
def test_peer_closes_before_count(net, blob, kind, how, sent):
    w, src = net.pair(kind)
    dst, r = net.pair(kind)

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            async def write():
                await send(w, blob[:sent])
                await asyncio.sleep(0.05)      # the job is running and waiting for more
                if how == "shutdown":
                    w.shutdown(socket.SHUT_WR)
                else:
                    w.close()
            writer = asyncio.create_task(write())
            reader = asyncio.create_task(recv_exact(r, sent))
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=4 * MiB)), 10)
            got = await asyncio.wait_for(reader, 5)
            await asyncio.wait_for(writer, 5)
            await asyncio.sleep(0.02)
            return c, got

    c, got = run(main())
    assert (c.end, c.bytes_fwd, c.bytes_rev) == (JobEnd.PEER_CLOSED, sent, 0), c
    assert got == blob[:sent]
    assert nothing_to_read(r)        # not more, and no FIN forwarded for a count job


# ---- 4. two-way tunnel with half-closes --------------------------------------------------

@pytest.mark.parametrize("copy", [False, True], ids=["spliced", "copied"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("first", ["a", "b"])
def test_tunnel_half_close_then_other_way_continues(net, blob, kind, first, copy):
    """One direction finishes (its writer shuts down write) while the other keeps streaming;
    spliced, or copied through the job's out buffer (SPL_JOB_TUNNEL with SPL_JOB_COPY)."""
    ap, a = net.pair(kind)       # ap: client peer, a: the job's src_fd
    b, bp = net.pair(kind)       # b: the job's dst_fd, bp: server peer
    X, Y = 3 * MiB + 7, 5 * MiB + 11
    xdata, ydata = blob[:X], blob[16 * MiB:16 * MiB + Y]
    # (writer, reader, data) of the way that closes first, then of the other way
    ways = [(ap, bp, xdata), (bp, ap, ydata)]
    if first == "b":
        ways.reverse()

    async def main():
        async with engine(maxjobs=2, maxpipes=4) as eng:
            t = asyncio.create_task(eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True, copy=copy)))
            (w1, r1, d1), (w2, r2, d2) = ways
            # way 1 streams and half-closes; its reader sees EOF right after the last byte
            _, got1 = await asyncio.wait_for(asyncio.gather(send(w1, d1, shut=True), recv_to_eof(r1)), 10)
            assert got1 == d1
            await asyncio.sleep(0.05)
            assert not t.done()
            assert eng.stats().jobs_active == 1
            # way 2 still flows after way 1 is closed
            half = len(d2) // 2
            _, got2a = await asyncio.wait_for(asyncio.gather(send(w2, d2[:half]), recv_exact(r2, half)), 10)
            await asyncio.sleep(0.05)
            assert not t.done()
            _, got2b = await asyncio.wait_for(asyncio.gather(send(w2, d2[half:], shut=True), recv_to_eof(r2)), 10)
            assert got2a + got2b == d2
            return await asyncio.wait_for(t, 5)

    c = run(main())
    assert_done(c, X, Y)


@pytest.mark.parametrize("copy", [False, True], ids=["spliced", "copied"])
@pytest.mark.parametrize("kind", KINDS)
def test_tunnel_both_ways_at_once(net, blob, kind, copy):
    ap, a = net.pair(kind)
    b, bp = net.pair(kind)
    X, Y = 6 * MiB + 1, 4 * MiB + 2
    xdata, ydata = blob[:X], blob[32 * MiB:32 * MiB + Y]

    async def main():
        async with engine(maxjobs=2, maxpipes=4) as eng:
            t = asyncio.create_task(eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True, copy=copy)))
            _, _, gx, gy = await asyncio.wait_for(asyncio.gather(
                send(ap, xdata, shut=True), send(bp, ydata, shut=True), recv_to_eof(bp), recv_to_eof(ap)), 20)
            assert gx == xdata and gy == ydata
            return await asyncio.wait_for(t, 5)

    assert_done(run(main()), X, Y)


def test_tunnel_past_the_fairness_budget_both_ways(net, blob):
    """More than the engine's 16 MiB per-turn budget each way at once (the ready-list path)."""
    ap, a = net.tcp()
    b, bp = net.tcp()
    X, Y = 40 * MiB + 3, 24 * MiB + 9
    xd, yd = memoryview(blob)[:X], memoryview(blob)[len(blob) - Y:]
    hx, hy = hashlib.sha256(xd).digest(), hashlib.sha256(yd).digest()

    async def main():
        async with engine(maxjobs=2, maxpipes=4) as eng:
            gx, gy = hashlib.sha256(), hashlib.sha256()
            c, _, _, nx, ny = await asyncio.wait_for(asyncio.gather(
                eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True)),
                send(ap, xd, shut=True), send(bp, yd, shut=True),
                recv_to_eof(bp, X, gx), recv_to_eof(ap, Y, gy)), 20)
            return c, nx, ny, gx.digest(), gy.digest()

    c, nx, ny, gx, gy = run(main())
    assert_done(c, X, Y)
    assert (nx, ny, gx, gy) == (X, Y, hx, hy)


# ---- 6. a slow reader never stalls a transfer --------------------------------------------

async def slow_read(sock, n: int, chunk: int, every: float) -> bytes:
    got = bytearray()
    while len(got) < n:
        await asyncio.sleep(every)
        try:
            b = sock.recv(min(chunk, n - len(got)))
        except BlockingIOError:
            continue
        assert b, f"EOF after {len(got)} of {n}"
        got += b
    return bytes(got)


def test_slow_reader_completes_byte_exact(net, blob):
    w, src = net.tcp()
    dst, r = net.tcp(sndbuf=16384, rcvbuf=16384)     # small buffers between dst and the reader
    fw, fsrc = net.tcp()                             # a fast transfer next to it
    fdst, fr = net.tcp()
    n, fn = 4 * MiB, 8 * MiB

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            t0 = time.monotonic()
            writer = asyncio.create_task(send(w, blob[:n]))
            reader = asyncio.create_task(slow_read(r, n, 16384, 0.01))
            slow = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=n)))
            # the fast transfer next to the slow one is not held up by it
            fast = await asyncio.wait_for(asyncio.gather(
                eng.splice(SpliceJob(fsrc.fileno(), fdst.fileno(), max_bytes=fn)),
                send(fw, blob[8 * MiB:8 * MiB + fn]), recv_exact(fr, fn)), 10)
            assert not slow.done()
            c = await asyncio.wait_for(slow, 30)
            got = await asyncio.wait_for(reader, 5)
            await asyncio.wait_for(writer, 5)
            return c, got, fast, time.monotonic() - t0, eng.stats()

    c, got, (fc, _, fgot), elapsed, st = run(main(), timeout=45)
    assert_done(c, n)
    assert got == blob[:n]
    assert_done(fc, fn)
    assert fgot == blob[8 * MiB:8 * MiB + fn]
    assert elapsed >= 2.0                 # the reader really was slow (256 reads, 10 ms apart)
    assert st.eagain_waits > 0


# ---- errors -------------------------------------------------------------------------------

def _rst(sock: socket.socket) -> None:
    """Close with SO_LINGER 0: the peer gets a RST."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


def test_source_reset_is_error_on_src(net, blob):
    w, src = net.tcp()
    dst, r = net.tcp()

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            t = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=MiB)))
            await send(w, blob[:1000])
            assert await asyncio.wait_for(recv_exact(r, 1000), 5) == blob[:1000]
            _rst(w)
            return await asyncio.wait_for(t, 5)

    c = run(main())
    assert (c.end, c.side, c.bytes_fwd) == (JobEnd.ERROR, "src", 1000), c
    assert c.errno == 104  # ECONNRESET


def test_destination_gone_is_error_on_dst(net, blob):
    w, src = net.tcp()
    dst, r = net.tcp()

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            _rst(r)
            await asyncio.sleep(0.02)
            writer = asyncio.create_task(send(w, blob[:4 * MiB]))
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=4 * MiB)), 5)
            writer.cancel()
            return c

    c = run(main())
    assert (c.end, c.side) == (JobEnd.ERROR, "dst"), c
    assert c.errno in (32, 104)  # EPIPE, ECONNRESET


def test_tunnel_error_on_dst_side_names_dst(net, blob):
    """A tunnel's B side (dst_fd) resets: the reverse way fails reading it, side must be "dst"."""
    ap, a = net.tcp()
    b, bp = net.tcp()

    async def main():
        async with engine(maxjobs=2, maxpipes=4) as eng:
            t = asyncio.create_task(eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True)))
            await send(bp, b"hello")
            assert await asyncio.wait_for(recv_exact(ap, 5), 5) == b"hello"
            _rst(bp)
            return await asyncio.wait_for(t, 5)

    c = run(main())
    assert (c.end, c.side, c.bytes_fwd, c.bytes_rev) == (JobEnd.ERROR, "dst", 0, 5), c

