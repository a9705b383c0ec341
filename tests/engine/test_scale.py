"""1,000 concurrent spliced transfers on loopback TCP, with fewer pipes than jobs (NOPIPE)."""
from __future__ import annotations

import asyncio
import random
import resource

import pytest

from splicer.engine.engine import JobEnd, SpliceJob

from .conftest import Net, engine, nothing_to_read, run, send, settle, stats_settle

KiB, MiB = 1 << 10, 1 << 20
N, MAXPIPES, MAXJOBS = 1000, 600, 1024


async def recv_compare(sock, blob: bytes, off: int, n: int) -> int:
    """Read exactly n bytes and compare them, chunk by chunk, with blob[off:off + n]."""
    loop = asyncio.get_running_loop()
    buf = bytearray(256 * KiB)
    mv = memoryview(buf)
    got = 0
    while got < n:
        k = await loop.sock_recv_into(sock, mv[:min(len(buf), n - got)])
        assert k, f"EOF after {got} of {n}"
        if buf[:k] != blob[off + got:off + got + k]:
            raise AssertionError(f"bytes differ in [{got}, {got + k}) of {n}")
        got += k
    return got


@pytest.fixture
def nofile():
    """Raise RLIMIT_NOFILE's soft limit to the hard limit for the test, then restore it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        with open("/proc/sys/fs/nr_open") as f:
            target = int(f.read())
    if target < 5000:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < 5000")
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    yield target
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.timeout(60)
def test_thousand_concurrent_transfers_and_nopipe_retry(nofile, blob):
    rng = random.Random(20240601)
    sizes = [rng.randint(64 * KiB, MiB) for _ in range(N)]
    offs = [rng.randrange(0, len(blob) - MiB) for _ in range(N)]
    net = Net()
    try:
        ins = net.tcp(N)           # (w, src) per transfer
        outs = net.tcp(N)          # (dst, r) per transfer

        async def main():
            async with engine(maxjobs=MAXJOBS, maxpipes=MAXPIPES) as eng:
                jobs = [SpliceJob(ins[i][1].fileno(), outs[i][0].fileno(), max_bytes=sizes[i]) for i in range(N)]
                # all 1000 submitted before any byte is written: the first MAXPIPES get a pipe
                # and wait for data, the others find none
                tasks = [asyncio.create_task(eng.splice(j)) for j in jobs]
                await stats_settle(eng, 5.0, jobs_active=MAXPIPES, jobs_nopipe=N - MAXPIPES)
                await settle(lambda: sum(t.done() for t in tasks) == N - MAXPIPES, 5.0, "NOPIPE completions")
                nop = [i for i, t in enumerate(tasks) if t.done()]
                ran = [i for i, t in enumerate(tasks) if not t.done()]
                for i in nop:
                    c = tasks[i].result()
                    assert (c.end, c.bytes_fwd, c.bytes_rev) == (JobEnd.NOPIPE, 0, 0), (i, c)

                writers = [asyncio.create_task(send(ins[i][0], memoryview(blob)[offs[i]:offs[i] + sizes[i]]))
                           for i in range(N)]
                readers = [asyncio.create_task(recv_compare(outs[i][1], blob, offs[i], sizes[i])) for i in ran]
                first = await asyncio.wait_for(asyncio.gather(*(tasks[i] for i in ran)), 40)
                assert await asyncio.wait_for(asyncio.gather(*readers), 10) == [sizes[i] for i in ran]
                ends = [tasks[i].result().end for i in range(N)]
                assert ends.count(JobEnd.DONE) + ends.count(JobEnd.NOPIPE) == N
                assert (ends.count(JobEnd.DONE), ends.count(JobEnd.NOPIPE)) == (MAXPIPES, N - MAXPIPES)
                for i, c in zip(ran, first):
                    assert (c.end, c.bytes_fwd, c.bytes_rev) == (JobEnd.DONE, sizes[i], 0), (i, c)
                # the NOPIPE transfers moved nothing: their readers have not seen a byte
                assert all(nothing_to_read(outs[i][1]) for i in nop)
                st = await stats_settle(eng, 2.0, jobs_active=0, pipes_used=0)
                assert st.spliced_bytes == sum(sizes[i] for i in ran)

                # after the others finished, the NOPIPE ones go again and all complete
                again = [asyncio.create_task(eng.splice(jobs[i])) for i in nop]
                readers = [asyncio.create_task(recv_compare(outs[i][1], blob, offs[i], sizes[i])) for i in nop]
                second = await asyncio.wait_for(asyncio.gather(*again), 40)
                assert await asyncio.wait_for(asyncio.gather(*readers), 10) == [sizes[i] for i in nop]
                for i, c in zip(nop, second):
                    assert (c.end, c.bytes_fwd, c.bytes_rev) == (JobEnd.DONE, sizes[i], 0), (i, c)
                await asyncio.wait_for(asyncio.gather(*writers), 10)
                assert all(nothing_to_read(s) for _, s in ins)     # no byte over-read ...
                assert all(nothing_to_read(r) for _, r in outs)    # ... and none extra delivered
                st = await stats_settle(eng, 2.0, jobs_active=0, pipes_used=0)
                assert st.spliced_bytes == sum(sizes)
                assert (st.jobs_done, st.jobs_nopipe) == (N + len(nop), N - MAXPIPES)
                assert (st.timeouts, st.pipes_killed) == (0, 0)
                assert st.pipes_free == MAXPIPES

        run(main(), timeout=55)
    finally:
        net.close_all()
