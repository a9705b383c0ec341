"""Idle timeouts: src_idle (silent source), dst_idle (destination that never reads), tunnel idle,
and a slow transfer whose every step stays under the idle limit never times out."""
from __future__ import annotations

import asyncio
import socket
import time

import pytest

from splicer.engine.engine import JobEnd, SpliceJob

from .conftest import engine, nothing_to_read, recv_exact, run, send, stats_settle

MiB = 1 << 20
pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_src_idle_timeout_on_silent_source(net, blob, kind):
    w, src = net.pair(kind)
    dst, r = net.pair(kind)

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            await send(w, blob[:1000])                        # some bytes, then silence
            t0 = time.monotonic()
            c = await asyncio.wait_for(
                eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=MiB, src_idle=0.2)), 5)
            elapsed = time.monotonic() - t0
            got = await asyncio.wait_for(recv_exact(r, 1000), 2)
            return c, elapsed, got, await stats_settle(eng, jobs_active=0, pipes_used=0)

    c, elapsed, got, st = run(main())
    assert (c.end, c.side, c.bytes_fwd, c.bytes_rev) == (JobEnd.TIMEOUT, "src", 1000, 0), c
    assert 0.15 <= elapsed <= 2.0, elapsed
    assert got == blob[:1000]
    assert (st.timeouts, st.pipes_killed) == (1, 0)
    # the fds are Python's again: the source still works
    w.send(b"late")
    assert src.recv(10) == b"late"


def test_dst_idle_timeout_on_destination_that_never_reads(net, blob):
    w, src = net.tcp()
    dst, r = net.tcp(sndbuf=16384, rcvbuf=16384)
    n = 32 * MiB

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            writer = asyncio.create_task(send(w, blob[:n]))   # keeps sending (blocks once all is full)
            t0 = time.monotonic()
            c = await asyncio.wait_for(
                eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=n, dst_idle=0.2)), 5)
            elapsed = time.monotonic() - t0
            assert not writer.done()
            writer.cancel()
            # every byte counted as sent reaches the reader, and nothing more
            got = await asyncio.wait_for(recv_exact(r, c.bytes_fwd), 5)
            await asyncio.sleep(0.05)
            assert nothing_to_read(r)
            return c, elapsed, got, await stats_settle(eng, jobs_active=0, pipes_used=0)

    c, elapsed, got, st = run(main())
    assert (c.end, c.side, c.bytes_rev) == (JobEnd.TIMEOUT, "dst", 0), c
    assert 0 < c.bytes_fwd < n
    assert 0.15 <= elapsed <= 2.0, elapsed
    assert got == blob[:c.bytes_fwd]
    assert st.timeouts == 1
    assert st.pipes_killed == 1        # the pipe still held bytes for dst: closed, not recycled


def test_tunnel_idle_timeout(net):
    ap, a = net.tcp()
    b, bp = net.tcp()

    async def main():
        async with engine(maxjobs=2, maxpipes=4) as eng:
            t = asyncio.create_task(eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True, src_idle=0.2)))
            await send(ap, b"ping")
            assert await asyncio.wait_for(recv_exact(bp, 4), 2) == b"ping"
            await send(bp, b"pong!")
            assert await asyncio.wait_for(recv_exact(ap, 5), 2) == b"pong!"
            t0 = time.monotonic()
            c = await asyncio.wait_for(t, 5)
            return c, time.monotonic() - t0, eng.stats()

    c, elapsed, st = run(main())
    assert (c.end, c.bytes_fwd, c.bytes_rev) == (JobEnd.TIMEOUT, 4, 5), c
    assert 0.15 <= elapsed <= 2.0, elapsed
    assert st.timeouts == 1


def test_slow_but_steady_transfers_never_time_out(net, blob):
    """Each step comes well within the 200 ms idle limit, the whole transfer takes much longer."""
    w1, src1 = net.tcp()          # slow source: 4 KiB every 40 ms
    dst1, r1 = net.tcp()
    w2, src2 = net.tcp()          # slow reader: 16 KiB every 20 ms, small buffers
    dst2, r2 = net.tcp(sndbuf=32768, rcvbuf=32768)
    ap, a = net.tcp()             # tunnel: a ping every 40 ms, alternating ways
    b, bp = net.tcp()
    chunks1, n2, pings = 30, 768 * 1024, 30

    async def slow_write():
        for i in range(chunks1):
            await send(w1, blob[i * 4096:(i + 1) * 4096])
            await asyncio.sleep(0.04)

    async def slow_read(sock, n):
        got = bytearray()
        while len(got) < n:
            await asyncio.sleep(0.02)
            try:
                got += sock.recv(min(16384, n - len(got)))
            except BlockingIOError:
                pass
        return bytes(got)

    async def pingpong():
        for i in range(pings):
            x, y = (ap, bp) if i % 2 == 0 else (bp, ap)
            await send(x, b"%04d" % i)
            assert await asyncio.wait_for(recv_exact(y, 4), 1) == b"%04d" % i
            await asyncio.sleep(0.04)
        ap.shutdown(socket.SHUT_WR)
        bp.shutdown(socket.SHUT_WR)

    async def main():
        async with engine(maxjobs=4, maxpipes=8) as eng:
            t0 = time.monotonic()
            res = await asyncio.wait_for(asyncio.gather(
                eng.splice(SpliceJob(src1.fileno(), dst1.fileno(), max_bytes=chunks1 * 4096, src_idle=0.2)),
                slow_write(), recv_exact(r1, chunks1 * 4096),
                eng.splice(SpliceJob(src2.fileno(), dst2.fileno(), max_bytes=n2, src_idle=0.2, dst_idle=0.2)),
                send(w2, blob[MiB:MiB + n2]), slow_read(r2, n2),
                eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True, src_idle=0.2)), pingpong()), 20)
            return res, time.monotonic() - t0, eng.stats()

    (c1, _, got1, c2, _, got2, c3, _), elapsed, st = run(main())
    assert (c1.end, c1.bytes_fwd) == (JobEnd.DONE, chunks1 * 4096), c1
    assert got1 == blob[:chunks1 * 4096]
    assert (c2.end, c2.bytes_fwd) == (JobEnd.DONE, n2), c2
    assert got2 == blob[MiB:MiB + n2]
    assert (c3.end, c3.bytes_fwd, c3.bytes_rev) == (JobEnd.DONE, 4 * pings // 2, 4 * pings // 2), c3
    assert elapsed > 1.0               # far longer than the idle limit
    assert st.timeouts == 0


def test_trickled_body_times_out_although_bytes_keep_arriving(net):
    """A body trickled a byte every 50 ms never goes 200 ms without a byte, yet it must time
    out: an idle timeout restarts only once 1 KiB moved (shared case 023, A2)."""
    w, src = net.tcp()
    dst, r = net.tcp()

    async def trickle(stop):
        while not stop.is_set():
            try:
                w.send(b"x")
            except OSError:
                return
            await asyncio.sleep(0.05)

    async def main():
        async with engine(maxjobs=2, maxpipes=4) as eng:
            stop = asyncio.Event()
            t = asyncio.create_task(trickle(stop))
            t0 = time.monotonic()
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=100000,
                                                            src_idle=0.2)), 5)
            stop.set()
            await t
            return c, time.monotonic() - t0

    c, elapsed = run(main())
    assert (c.end, c.side) == (JobEnd.TIMEOUT, "src"), c
    assert 0 < c.bytes_fwd < 100
    assert 0.15 <= elapsed <= 2.0, elapsed


def test_many_timeouts_fire_each_at_its_own_deadline(net):
    """The timer wheel: 240 waiting head jobs with first-byte limits spread over 0.1-0.5 s,
    in submission order unlike their deadlines: every one times out, none before its own
    limit; the jobs given a head in time (every fourth, 5 s limit) complete."""
    pairs = net.tcp(240)
    # 0.1 .. 0.5 s, shuffled; every fourth job has 5 s and gets its head in time
    limits = [5.0 if i % 4 == 0 else 0.1 + (i * 37 % 240) / 600 for i in range(240)]
    ended: dict[int, tuple] = {}

    async def main():
        loop = asyncio.get_running_loop()
        async with engine(maxjobs=256, bufsize=4096) as e:
            t0 = loop.time()
            for i, ((w, s), limit) in enumerate(zip(pairs, limits)):
                fd = s.fileno()
                e.submit(fd, -1, 0, 0, head_fd=fd, head_first_ms=int(limit * 1000), head_ms=5000,
                         head_limit=4000, src_gen=e.gen(s),
                         done=lambda c, i=i: ended.__setitem__(i, (c, loop.time() - t0)))
            for w, _ in pairs[::4]:
                w.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            deadline = loop.time() + 10
            while len(ended) < 240 and loop.time() < deadline:
                await asyncio.sleep(0.02)
    run(main())
    assert len(ended) == 240
    for i, (c, at) in ended.items():
        if i % 4 == 0:
            assert (c.end, c.head) == (JobEnd.DONE, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), i
        else:
            assert (c.end, c.head) == (JobEnd.TIMEOUT, None), i
            assert at >= limits[i] - 0.005, (i, at, limits[i])  # never early (ms rounding aside)
