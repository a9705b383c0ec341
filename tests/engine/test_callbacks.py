"""Engine jobs whose completions call back (Engine.submit(done=), then(), cancel()).

The session and stream fast path wait for nothing: the reap of a completion calls the
job's callback. Real loopback TCP pairs; every wait is bounded (conftest.run).
"""
from __future__ import annotations

import asyncio

from splicer.engine.binding import JOB_COPY, JOB_THEN_HEAD
from splicer.engine.engine import JobEnd, Phase, ms
from tests.engine.conftest import engine, fd_count, run, settle

REQ = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"


def head_job(e, sock, done, first=5.0):
    fd = sock.fileno()
    return e.submit(fd, -1, 0, 0, head_fd=fd, head_first_ms=ms(first), head_ms=5000, head_limit=4000,
                    src_gen=e.gen(sock), done=done)


def response_job(e, src, dst, done, count=5):
    return e.submit(src.fileno(), dst.fileno(), count, JOB_COPY | JOB_THEN_HEAD, 5000, 5000, RESP, -1,
                    5000, 5000, 4000, src_gen=e.gen(src), dst_gen=e.gen(dst), done=done)


def test_callback_gets_the_completion_and_no_future_is_made(net):
    w, src = net.tcp()
    got = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job_id, fut = head_job(e, src, got.append)
            assert fut is None and job_id > 0
            w.sendall(REQ)
            await settle(lambda: got, what="callback")
            assert len(got) == 1
            assert (got[0].end, got[0].phase, got[0].head) == (JobEnd.DONE, Phase.END, REQ)
            assert not e._futs and not e._cbs  # nothing left behind
    run(main())


def test_chained_job_claimed_before_and_after_it_completes(net):
    origin, src = net.tcp()
    dst, client = net.tcp()
    first, nxt = [], []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            # claimed after: the next head is in before then() is called
            origin.sendall(b"hello")
            response_job(e, src, dst, first.append)
            chained = e.chained
            assert chained[1] is None
            await settle(lambda: first, what="response job")
            assert (first[0].end, first[0].bytes_fwd) == (JobEnd.DONE, 5)
            client.sendall(REQ)
            await settle(lambda: chained[0] in e._early, what="unclaimed completion kept")
            e.then(chained, nxt.append)  # at once
            assert len(nxt) == 1 and nxt[0].head == REQ
            # claimed before: then() first, completion later
            first.clear(), nxt.clear()
            origin.sendall(b"again")
            response_job(e, src, dst, first.append)
            chained = e.chained
            await settle(lambda: first, what="second response job")
            e.then(chained, nxt.append)
            assert nxt == []
            client.sendall(REQ)
            await settle(lambda: nxt, what="chained callback")
            assert nxt[0].head == REQ
            assert not e._early and not e._cbs
    run(main())


def test_then_takes_over_a_job_submitted_with_a_future(net):
    w, src = net.tcp()
    got = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            fd = src.fileno()
            pair = e.submit(fd, -1, 0, 0, head_fd=fd, head_ms=5000, head_limit=4000)
            assert pair[1] is not None
            e.then(pair, got.append)  # in flight: its completion now calls back
            w.sendall(REQ)
            await settle(lambda: got, what="callback")
            assert got[0].head == REQ and not pair[1].done()
            pair = e.submit(fd, -1, 0, 0, head_fd=fd, head_ms=5000, head_limit=4000)
            w.sendall(REQ)
            await asyncio.wait_for(asyncio.shield(pair[1]), 5)
            e.then(pair, got.append)  # already completed: at once
            assert len(got) == 2 and got[1].head == REQ
    run(main())


def test_cancel_calls_back_once_the_engine_let_go(net):
    w, src = net.tcp()
    got, cancelled = [], []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            pair = head_job(e, src, got.append, first=30.0)
            await asyncio.sleep(0.05)
            e.cancel(pair, cancelled.append)
            await settle(lambda: cancelled, what="cancel callback")
            assert got == []  # the job's own callback is not called
            assert cancelled[0].end is JobEnd.CANCELLED
            assert e.stats().jobs_active == 0
            e.cancel(pair, cancelled.append)  # over: called at once, once more
            assert len(cancelled) == 2 and cancelled[1].end is JobEnd.CANCELLED
            w.sendall(REQ)
            assert src.recv(100) == REQ  # the socket is free again, nothing was read
    run(main())


def test_close_cancels_every_pending_callback_job(net):
    pairs = [net.tcp() for _ in range(5)]
    got = []
    before = fd_count()

    async def main():
        e_cm = engine(maxjobs=8, bufsize=4096)
        e = await e_cm.__aenter__()
        for _, src in pairs:
            head_job(e, src, got.append, first=30.0)
        await asyncio.sleep(0.05)
        await e_cm.__aexit__(None, None, None)
        assert [c.end for c in got] == [JobEnd.CANCELLED] * 5
    run(main())
    assert fd_count() == before


def test_a_raising_callback_does_not_lose_the_other_completions(net, caplog):
    a_w, a = net.tcp()
    b_w, b = net.tcp()
    got = []

    def boom(c):
        raise RuntimeError("bug")

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            head_job(e, a, boom)
            head_job(e, b, got.append)
            a_w.sendall(REQ)
            b_w.sendall(REQ)
            await settle(lambda: got, what="second callback")
            assert got[0].head == REQ
    run(main())
    assert "engine completion callback failed" in caplog.text
