"""Engine lifecycle: cancel, EngineBusy, invalid jobs, close, fd accounting, stats, CPU pinning."""
from __future__ import annotations

import asyncio
import errno
import os
import tempfile
import threading
import time

import pytest

from splicer.engine.engine import Engine, JobEnd, SpliceJob
from splicer.errors import EngineBusy, EngineError

from .conftest import (
    Net,
    engine,
    fd_count,
    nothing_to_read,
    recv_exact,
    recv_to_eof,
    run,
    send,
    settle,
    stats_settle,
    task_ids,
)

MiB = 1 << 20
pytestmark = pytest.mark.timeout(60)


async def _usable(w, src, dst, r) -> None:
    """Python can use all four sockets again, both ways."""
    await send(w, b"req-after")
    assert await asyncio.wait_for(recv_exact(src, 9), 2) == b"req-after"
    await send(src, b"back")
    assert await asyncio.wait_for(recv_exact(w, 4), 2) == b"back"
    await send(dst, b"resp-after")
    assert await asyncio.wait_for(recv_exact(r, 10), 2) == b"resp-after"
    await send(r, b"up")
    assert await asyncio.wait_for(recv_exact(dst, 2), 2) == b"up"


# ---- 8. cancel ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_cancel_running_job_frees_fds(net, blob, kind):
    w, src = net.pair(kind)
    dst, r = net.pair(kind)

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            await send(w, blob[:100])                  # some bytes move, then the source is silent
            t = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=MiB)))
            assert await asyncio.wait_for(recv_exact(r, 100), 2) == blob[:100]
            await stats_settle(eng, jobs_active=1)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(t, 2)
            assert t.cancelled()
            # see test_cancel_returns_only_after_the_completion_is_reaped for why this waits
            st = await stats_settle(eng, 1.0, jobs_active=0, jobs_done=1, pipes_used=0)
            assert (st.pipes_killed, st.timeouts) == (0, 0)
            await _usable(w, src, dst, r)
            # and the engine takes the same fds again
            c = await asyncio.wait_for(asyncio.gather(
                eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=5000)),
                send(w, blob[:5000]), recv_exact(r, 5000)), 5)
            assert (c[0].end, c[0].bytes_fwd, c[2]) == (JobEnd.DONE, 5000, blob[:5000])

    run(main())


def test_cancel_with_bytes_in_pipe_kills_the_pipe(net, blob):
    w, src = net.tcp()
    dst, _r = net.tcp(sndbuf=16384, rcvbuf=16384)     # _r never reads

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            writer = asyncio.create_task(send(w, blob[:16 * MiB]))
            t = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=16 * MiB)))
            await settle(lambda: eng.stats().eagain_waits > 0 and eng.stats().spliced_bytes > 0, 2,
                         "destination full")
            await asyncio.sleep(0.05)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(t, 2)
            writer.cancel()
            return await stats_settle(eng, 1.0, jobs_active=0, pipes_used=0)

    st = run(main())
    assert st.pipes_killed == 1 and st.pipes_free == 0


def test_cancel_tunnel(net):
    ap, a = net.tcp()
    b, bp = net.tcp()

    async def main():
        async with engine(maxjobs=2, maxpipes=4) as eng:
            t = asyncio.create_task(eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True)))
            await send(ap, b"x")
            assert await asyncio.wait_for(recv_exact(bp, 1), 2) == b"x"
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(t, 2)
            await stats_settle(eng, 1.0, jobs_active=0, pipes_used=0)
            await _usable(ap, a, b, bp)

    run(main())


def test_cancel_returns_only_after_the_completion_is_reaped(net, blob):
    """Deterministic version of the race: the engine is made slow to act on the cancel (the
    cancel message is delivered 200 ms late, as a busy engine thread would), so a splice() that
    re-raises CancelledError at once is caught with the job still running."""
    w, src = net.tcp()
    dst, r = net.tcp()

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            loop = asyncio.get_running_loop()
            real_cancel = eng._h.cancel

            def late_cancel(job_id):
                real_cancel(job_id)
                if eng.inline:  # nothing else turns an inline engine in this test
                    eng.wake_now()

            def slow_cancel(job_id):
                loop.call_later(0.2, late_cancel, job_id)
                return True
            eng._h.cancel = slow_cancel
            t = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=MiB)))
            await stats_settle(eng, jobs_active=1)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(t, 5)
            active = eng.stats().jobs_active
            # the caller now owns the fds: what it sends to src must stay in src
            await send(w, b"next request")
            await asyncio.sleep(0.05)
            stolen = nothing_to_read(src) and not nothing_to_read(r)
            await asyncio.sleep(0.3)
            assert active == 0, "CancelledError raised while the job was still running"
            assert not stolen, "bytes sent after the cancel were spliced by the engine"

    run(main())


@pytest.mark.parametrize("which", ["first", "second"])
def test_cancel_one_of_two_jobs_sharing_sockets_leaves_the_other_running(net, blob, which):
    """Request and response bodies on the same two sockets: the second job registered dups.
    Cancelling either one (the owner of the plain registrations or of the dups) must not take
    the other job's epoll registrations with it."""
    cp, client = net.tcp()
    server, sp = net.tcp()
    n = 3 * MiB + 1

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            up = asyncio.create_task(eng.splice(SpliceJob(client.fileno(), server.fileno(), max_bytes=n)))
            await stats_settle(eng, jobs_active=1)
            down = asyncio.create_task(eng.splice(SpliceJob(server.fileno(), client.fileno(), max_bytes=n)))
            await stats_settle(eng, jobs_active=2)
            victim, survivor = (up, down) if which == "first" else (down, up)
            victim.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(victim, 2)
            await stats_settle(eng, 1.0, jobs_active=1, pipes_used=1)
            # the survivor only starts moving now: it must still get its events
            w, r, data = (sp, cp, blob[:n]) if survivor is down else (cp, sp, blob[MiB:MiB + n])
            c, _, got = await asyncio.wait_for(asyncio.gather(survivor, send(w, data), recv_exact(r, n)), 10)
            assert (c.end, c.bytes_fwd, got == data) == (JobEnd.DONE, n, True)
            await stats_settle(eng, jobs_active=0, pipes_used=0)

    run(main())


def test_cancel_then_close_ends_the_task_cleanly(net):
    w, src = net.tcp()
    dst, r = net.tcp()

    async def main():
        eng = Engine(asyncio.get_running_loop(), maxjobs=2, maxpipes=2)
        t = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=MiB)))
        await stats_settle(eng, jobs_active=1)
        t.cancel()                      # shutdown: cancel the sessions, then close the engine
        eng.close()
        try:
            await asyncio.wait_for(t, 1)
        except asyncio.CancelledError:
            pass
        except OSError as exc:
            assert exc.errno == errno.ECANCELED
        else:
            raise AssertionError("the task neither was cancelled nor failed")
        await _usable(w, src, dst, r)

    run(main())


# ---- 9. EngineBusy -----------------------------------------------------------------------

def test_more_than_maxjobs_raises_engine_busy_without_blocking(net):
    pairs = [(net.tcp(), net.tcp()) for _ in range(5)]

    async def main():
        async with engine(maxjobs=4, maxpipes=8) as eng:
            tasks = [asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=100)))
                     for (_, src), (dst, _) in pairs[:4]]
            await stats_settle(eng, jobs_active=4)
            (_, src), (dst, _) = pairs[4]
            coro = eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=100))
            t0 = time.monotonic()
            with pytest.raises(EngineBusy) as exc:
                coro.send(None)            # raises in its first step: it never suspends
            assert time.monotonic() - t0 < 0.1
            assert exc.value.errno == errno.EAGAIN
            assert isinstance(exc.value, EngineError)
            # one job ends and is reaped: room for one more
            (w0, _), (_, r0) = pairs[0]
            await send(w0, b"x" * 100)
            c0 = await asyncio.wait_for(tasks[0], 2)
            assert (c0.end, c0.bytes_fwd) == (JobEnd.DONE, 100)
            assert await asyncio.wait_for(recv_exact(r0, 100), 2) == b"x" * 100
            t5 = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=100)))
            (w4, _), (_, r4) = pairs[4]
            await send(w4, b"y" * 100)
            c5 = await asyncio.wait_for(t5, 2)
            assert (c5.end, c5.bytes_fwd) == (JobEnd.DONE, 100)
            assert await asyncio.wait_for(recv_exact(r4, 100), 2) == b"y" * 100
            for i in (1, 2, 3):
                (w, _), _ = pairs[i]
                await send(w, b"z" * 100)
            for c in await asyncio.wait_for(asyncio.gather(*tasks[1:]), 2):
                assert (c.end, c.bytes_fwd) == (JobEnd.DONE, 100)

    run(main())


def test_invalid_jobs_raise_engine_error_einval(net):
    (a, b), (c, d) = net.unix(), net.unix()

    async def main():
        async with engine(maxjobs=2, maxpipes=2) as eng:
            for job in (SpliceJob(b.fileno(), b.fileno(), max_bytes=10),   # src == dst
                        SpliceJob(b.fileno(), c.fileno(), max_bytes=0),    # nothing to move
                        SpliceJob(-1, c.fileno(), max_bytes=10)):
                with pytest.raises(EngineError) as exc:
                    await asyncio.wait_for(eng.splice(job), 1)
                assert exc.value.errno == errno.EINVAL and not isinstance(exc.value, EngineBusy)
            assert eng.stats().jobs_done == 0
            # nothing was counted against maxjobs: two real jobs still fit
            res = await asyncio.wait_for(asyncio.gather(
                eng.splice(SpliceJob(b.fileno(), c.fileno(), max_bytes=3)),
                eng.splice(SpliceJob(d.fileno(), a.fileno(), max_bytes=3)),
                send(a, b"abc"), send(d, b"xyz")), 2)
            assert [(x.end, x.bytes_fwd) for x in res[:2]] == [(JobEnd.DONE, 3)] * 2

    run(main())


def test_non_socket_source_is_an_error_not_a_hang(net):
    dst, _peer = net.unix()
    with tempfile.TemporaryFile() as f:
        f.write(b"data")
        f.flush()

        async def main():
            async with engine(maxjobs=2, maxpipes=2) as eng:
                return await asyncio.wait_for(eng.splice(SpliceJob(f.fileno(), dst.fileno(), max_bytes=4)), 2)

        c = run(main())
    assert (c.end, c.side, c.bytes_fwd) == (JobEnd.ERROR, "src", 0), c
    assert c.errno == errno.EPERM        # epoll refuses regular files


def test_close_with_jobs_in_flight(net):
    """close() fails pending splice() calls with ECANCELED; the fds stay the caller's."""
    w, src = net.tcp()
    dst, r = net.tcp()

    async def main():
        eng = Engine(asyncio.get_running_loop(), maxjobs=2, maxpipes=2)
        t = asyncio.create_task(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=MiB)))
        await stats_settle(eng, jobs_active=1)
        eng.close()
        with pytest.raises(OSError) as exc:
            await asyncio.wait_for(t, 2)
        assert exc.value.errno == errno.ECANCELED
        await _usable(w, src, dst, r)

    run(main())


# ---- 10. no fd leaked --------------------------------------------------------------------

def test_no_fd_leaked_over_100_transfers_with_shared_sockets(blob):
    before = fd_count()
    net = Net()
    try:
        async def main():
            async with engine(maxjobs=16, maxpipes=16) as eng:
                kinds = ["unix", "tcp"]
                # 40 one-way count jobs, 20 until-EOF jobs (fresh sockets each)
                for i in range(60):
                    w, src = net.pair(kinds[i % 2])
                    dst, r = net.pair(kinds[i % 2])
                    n = 1000 + 7919 * i
                    until_eof = i >= 40
                    res = await asyncio.wait_for(asyncio.gather(
                        eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=None if until_eof else n,
                                             shut_wr_on_eof=until_eof)),
                        send(w, blob[i:i + n], shut=until_eof),
                        recv_to_eof(r) if until_eof else recv_exact(r, n)), 5)
                    assert (res[0].end, res[0].bytes_fwd, res[2]) == (JobEnd.DONE, n, blob[i:i + n])
                # 10 tunnels
                for i in range(10):
                    ap, a = net.pair(kinds[i % 2])
                    b, bp = net.pair(kinds[i % 2])
                    res = await asyncio.wait_for(asyncio.gather(
                        eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True)),
                        send(ap, blob[:70_000], shut=True), send(bp, blob[1:50_001], shut=True),
                        recv_to_eof(bp), recv_to_eof(ap)), 5)
                    assert (res[0].end, res[0].bytes_fwd, res[0].bytes_rev) == (JobEnd.DONE, 70_000, 50_000)
                    assert res[3] == blob[:70_000] and res[4] == blob[1:50_001]
                # dup case: request and response bodies at once on the same two sockets, both
                # ways, 15 times on one keep-alive connection pair (30 jobs)
                cp, client = net.tcp()     # client-facing socket and its peer
                server, sp = net.tcp()     # server-facing socket and its peer
                inside = None
                for i in range(15):
                    nreq, nresp = 200_000 + i, 300_000 + 3 * i
                    res = await asyncio.wait_for(asyncio.gather(
                        eng.splice(SpliceJob(client.fileno(), server.fileno(), max_bytes=nreq)),
                        eng.splice(SpliceJob(server.fileno(), client.fileno(), max_bytes=nresp)),
                        send(cp, blob[:nreq]), send(sp, blob[MiB:MiB + nresp]),
                        recv_exact(sp, nreq), recv_exact(cp, nresp)), 5)
                    assert (res[0].end, res[0].bytes_fwd) == (JobEnd.DONE, nreq)
                    assert (res[1].end, res[1].bytes_fwd) == (JobEnd.DONE, nresp)
                    assert res[4] == blob[:nreq] and res[5] == blob[MiB:MiB + nresp]
                    await stats_settle(eng, jobs_active=0)
                    if i == 1:
                        inside = fd_count()
                    elif i > 1:
                        assert fd_count() == inside, f"fd count grew on dup round {i}"
                st = await stats_settle(eng, jobs_active=0, pipes_used=0)
                assert st.jobs_done == 100

        run(main())
    finally:
        net.close_all()
    assert fd_count() == before


def test_no_fd_leaked_when_closing_with_dup_jobs_in_flight():
    before = fd_count()
    net = Net()
    try:
        async def main():
            eng = Engine(asyncio.get_running_loop(), maxjobs=4, maxpipes=4)
            cp, client = net.tcp()
            server, sp = net.tcp()
            t1 = asyncio.create_task(eng.splice(SpliceJob(client.fileno(), server.fileno(), max_bytes=MiB)))
            t2 = asyncio.create_task(eng.splice(SpliceJob(server.fileno(), client.fileno(), max_bytes=MiB)))
            await stats_settle(eng, jobs_active=2, pipes_used=2)
            eng.close()                  # jobs dropped: their pipes and dups must be closed too
            for t in (t1, t2):
                with pytest.raises(OSError):
                    await asyncio.wait_for(t, 2)
            await _usable(cp, client, server, sp)

        run(main())
    finally:
        net.close_all()
    assert fd_count() == before


# ---- 11. stats ---------------------------------------------------------------------------

def test_stats_spliced_bytes_is_the_sum_of_completions(net, blob):
    async def main():
        async with engine(maxjobs=32, maxpipes=64, pipesize=0) as eng:
            st0 = eng.stats()
            assert (st0.spliced_bytes, st0.jobs_done, st0.jobs_active, st0.pipes_used, st0.pipes_max) == \
                (0, 0, 0, 0, 64)
            jobs = []
            for i in range(8):
                w, src = net.tcp()
                dst, r = net.tcp()
                n = 10_000 + 123_457 * i
                jobs.append(asyncio.gather(eng.splice(SpliceJob(src.fileno(), dst.fileno(), max_bytes=n)),
                                           send(w, blob[:n]), recv_exact(r, n)))
            for i in range(4):
                w, src = net.unix()
                dst, r = net.unix()
                n = 5 + 999_999 * i
                jobs.append(asyncio.gather(eng.splice(SpliceJob(src.fileno(), dst.fileno(), shut_wr_on_eof=True)),
                                           send(w, blob[:n], shut=True), recv_to_eof(r)))
            for i in range(4):
                ap, a = net.tcp()
                b, bp = net.tcp()
                jobs.append(asyncio.gather(eng.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True)),
                                           send(ap, blob[:300_000 * i], shut=True),
                                           send(bp, blob[:77_777 * i], shut=True), recv_to_eof(bp), recv_to_eof(ap)))
            res = await asyncio.wait_for(asyncio.gather(*jobs), 20)
            comps = [x[0] for x in res]
            assert all(c.end is JobEnd.DONE for c in comps), comps
            total = sum(c.bytes_fwd + c.bytes_rev for c in comps)
            st = await stats_settle(eng, jobs_active=0, pipes_used=0, jobs_done=len(comps))
            return total, st

    total, st = run(main())
    assert st.spliced_bytes == total
    assert (st.pipes_used, st.jobs_active, st.jobs_nopipe, st.timeouts, st.pipes_killed) == (0, 0, 0, 0, 0)
    assert st.pipes_free >= 1 and st.pipe_size == 65536
    assert st.splice_calls > 0


# ---- 12. pinned engine thread ------------------------------------------------------------

def _cpus_allowed(tid: int) -> str:
    with open(f"/proc/self/task/{tid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    raise AssertionError("no Cpus_allowed_list")


@pytest.mark.parametrize("cpu", [0, 1])
def test_engine_thread_is_pinned(cpu):
    if cpu not in os.sched_getaffinity(0):
        pytest.skip(f"cpu {cpu} not available")

    async def main():
        before = task_ids()
        eng = Engine(asyncio.get_running_loop(), cpu=cpu, maxjobs=2, maxpipes=2)
        try:
            new = task_ids() - before
            assert len(new) == 1, new
            tid = new.pop()
            assert _cpus_allowed(tid) == str(cpu)
            assert _cpus_allowed(threading.get_native_id()) != str(cpu) or len(os.sched_getaffinity(0)) == 1
        finally:
            eng.close()
        # joined; the kernel may list the exited thread for a moment after pthread_join
        await settle(lambda: tid not in task_ids(), 1.0, "engine thread gone")

    run(main())


def test_unpinned_engine_thread_inherits_affinity():
    async def main():
        before = task_ids()
        eng = Engine(asyncio.get_running_loop(), cpu=-1, maxjobs=2, maxpipes=2)
        try:
            (tid,) = task_ids() - before
            assert _cpus_allowed(tid) == _cpus_allowed(threading.get_native_id())
        finally:
            eng.close()
        await settle(lambda: tid not in task_ids(), 1.0, "engine thread gone")

    run(main())


def test_bad_cpu_raises_and_leaks_nothing():
    bad = next(c for c in range(1023, 0, -1) if c not in os.sched_getaffinity(0))

    async def main():
        before_fds, before_tasks = fd_count(), task_ids()
        with pytest.raises(EngineError) as exc:
            Engine(asyncio.get_running_loop(), cpu=bad, maxjobs=2, maxpipes=2)
        assert exc.value.errno == errno.EINVAL
        # no thread of this engine remains (one that an earlier test joined may leave the list
        # meanwhile: the kernel lists an exited thread for a moment after pthread_join)
        await settle(lambda: task_ids() <= before_tasks, 1.0, "engine thread gone")
        assert fd_count() == before_fds

    run(main())
