"""Engine jobs in phases: send a head, move a body by copying, read a head exactly.

Real loopback TCP pairs; every wait is bounded (conftest.run). Naming: bytes go writer `w`
-> `src` and the job's `dst` -> reader `r`; a head-only job reads from `src`.
"""
from __future__ import annotations

import asyncio
import socket

import pytest

from splicer.engine.engine import JobEnd, Phase, SpliceJob
from splicer.http.h1 import find_head_end
from tests.engine.conftest import engine, fd_count, run, stats_settle

REQ = b"GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n"
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"


def head_job(fd: int, **kw) -> SpliceJob:
    kw.setdefault("head_limit", 4000)
    return SpliceJob(fd, -1, 0, head_fd=-1, **kw)


async def read_all(sock: socket.socket, n: int, timeout: float = 5.0) -> bytes:
    loop = asyncio.get_running_loop()
    got = b""
    while len(got) < n:
        chunk = await asyncio.wait_for(loop.sock_recv(sock, n - len(got)), timeout)
        if not chunk:
            break
        got += chunk
    return got


def test_head_read_exactly_and_body_left_in_socket(net):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(REQ + b"BODY")
            c = await e.splice(head_job(src.fileno()))
            assert (c.end, c.phase, c.head) == (JobEnd.DONE, Phase.END, REQ)
            assert src.recv(100) == b"BODY"  # nothing past the head was read
    run(main())


@pytest.mark.parametrize("split", range(1, len(REQ)))
def test_head_split_at_every_point(net, split):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            task = asyncio.ensure_future(e.splice(head_job(src.fileno(), head_timeout=5)))
            w.sendall(REQ[:split])
            await asyncio.sleep(0.01)
            assert not task.done()
            w.sendall(REQ[split:] + b"GET /next")
            c = await task
            assert (c.end, c.head) == (JobEnd.DONE, REQ)
            assert src.recv(100) == b"GET /next"
    run(main())


def test_head_end_agrees_with_python():
    from splicer.engine.binding import ffi, lib
    cases = [b"", b"\r\n\r\n", b"\n\n", b"a\r\n\r\nb", b"a\n\r\nb", b"a\r\n\nb", b"a\r\r\n\r\n",
             b"a\r\nb\r\n", b"a\n\r\r\n\n", REQ, REQ + b"x", b"x\r\n\rx\n\n"]
    for buf in cases:
        for start in range(0, max(1, len(buf))):
            want = find_head_end(buf, start)
            assert lib.spl_head_end(ffi.from_buffer(buf), len(buf), start) == want, (buf, start)


def test_pipelined_requests_read_one_at_a_time(net):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(REQ * 3)
            for _ in range(3):
                c = await e.splice(head_job(src.fileno()))
                assert (c.end, c.head) == (JobEnd.DONE, REQ)
    run(main())


def test_empty_lines_before_request_are_skipped(net):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(b"\r\n\r\n\n" + REQ)
            c = await e.splice(head_job(src.fileno(), skip_empty=True))
            assert (c.end, c.head) == (JobEnd.DONE, REQ)
    run(main())


@pytest.mark.parametrize("first_line", [True, False])
def test_oversized_head_is_too_large(net, first_line):
    w, src = net.tcp()
    big = b"GET /" + b"a" * 3000 if first_line else b"GET / HTTP/1.1\r\nX: " + b"a" * 3000

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(big)
            c = await e.splice(head_job(src.fileno(), head_limit=1024, head_timeout=2))
            assert c.end is JobEnd.TOO_LARGE and c.phase is Phase.HEAD
            assert c.first_line is first_line
    run(main())


def test_head_exactly_at_the_limit_is_accepted(net):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(REQ)
            c = await e.splice(head_job(src.fileno(), head_limit=len(REQ)))
            assert (c.end, c.head) == (JobEnd.DONE, REQ)
    run(main())


def test_eof_before_and_within_the_head(net):
    w, src = net.tcp()
    w2, src2 = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.close()
            c = await e.splice(head_job(src.fileno()))
            assert (c.end, c.head) == (JobEnd.PEER_CLOSED, None)
            w2.sendall(b"GET / HT")
            w2.shutdown(socket.SHUT_WR)
            c = await e.splice(head_job(src2.fileno()))
            assert (c.end, c.head) == (JobEnd.PEER_CLOSED, b"GET / HT")
    run(main())


def test_first_byte_and_whole_head_timeouts(net):
    w, src = net.tcp()
    w2, src2 = net.tcp()

    async def main():
        loop = asyncio.get_running_loop()
        async with engine(maxjobs=8, bufsize=4096) as e:
            t0 = loop.time()
            c = await e.splice(head_job(src.fileno(), head_first=0.2, head_timeout=5))
            assert (c.end, c.head) == (JobEnd.TIMEOUT, None)
            assert 0.15 < loop.time() - t0 < 2.0
            # started: the whole-head limit runs from the first byte, more bytes do not restart it
            task = asyncio.ensure_future(e.splice(head_job(src2.fileno(), head_first=5, head_timeout=0.3)))
            t0 = loop.time()
            for _ in range(4):
                w2.sendall(b"G")
                await asyncio.sleep(0.1)
            c = await task
            assert c.end is JobEnd.TIMEOUT and c.head and c.head.startswith(b"GG")
            assert 0.25 < loop.time() - t0 < 2.0
    run(main())


def test_send_head_then_read_response_head(net):
    cli, srv = net.tcp()  # cli: splicer's server connection; srv: the origin's side

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            task = asyncio.ensure_future(e.splice(SpliceJob(-1, cli.fileno(), 0, out=REQ, head_fd=cli.fileno(),
                                                            head_first=5, head_limit=4096)))
            assert await read_all(srv, len(REQ)) == REQ
            srv.sendall(RESP + b"hello")
            c = await task
            assert (c.end, c.phase, c.head, c.bytes_fwd) == (JobEnd.DONE, Phase.END, RESP, 0)
            assert cli.recv(100) == b"hello"
    run(main())


@pytest.mark.parametrize("size", [5, 3000, 200_000])
def test_send_head_and_copy_counted_body(net, size):
    origin, src = net.tcp()
    dst, client = net.tcp()
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            loop = asyncio.get_running_loop()
            sender = loop.run_in_executor(None, origin.sendall, body + b"NEXT")
            origin.setblocking(True)
            c = await e.splice(SpliceJob(src.fileno(), dst.fileno(), size, copy=True, out=RESP,
                                         src_idle=5, dst_idle=5))
            await sender
            assert (c.end, c.phase, c.bytes_fwd) == (JobEnd.DONE, Phase.END, size)
            assert await read_all(client, len(RESP) + size) == RESP + body
            assert src.recv(100) == b"NEXT"  # never read past the body
    run(main())


def test_copy_body_peer_closed_early(net):
    origin, src = net.tcp()
    dst, client = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            origin.sendall(b"abc")
            origin.close()
            c = await e.splice(SpliceJob(src.fileno(), dst.fileno(), 10, copy=True, out=RESP))
            assert (c.end, c.phase, c.bytes_fwd) == (JobEnd.PEER_CLOSED, Phase.BODY, 3)
    run(main())


def test_copy_until_eof_shuts_down_dst(net):
    origin, src = net.tcp()
    dst, client = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            origin.sendall(b"z" * 10000)
            origin.close()
            c = await e.splice(SpliceJob(src.fileno(), dst.fileno(), None, copy=True, shut_wr_on_eof=True,
                                         out=b"H"))
            assert (c.end, c.bytes_fwd) == (JobEnd.DONE, 10000)
            assert await read_all(client, 20000) == b"H" + b"z" * 10000
    run(main())


def test_send_to_closed_peer_fails_in_send_phase(net):
    cli, srv = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            srv.close()
            await asyncio.sleep(0.05)
            c = await e.splice(SpliceJob(-1, cli.fileno(), 0, out=REQ * 50, head_fd=cli.fileno(),
                                         head_limit=4096, head_first=2))
            assert c.end in (JobEnd.ERROR, JobEnd.PEER_CLOSED)
            assert c.phase in (Phase.SEND, Phase.HEAD)
    run(main())


def test_invalid_phase_jobs_refused(net):
    from splicer.errors import EngineError
    a, b = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            bad = [SpliceJob(a.fileno(), -1, 0),  # nothing to do
                   # head fd not in the job (a fixed number could be a's or b's in a long run)
                   SpliceJob(a.fileno(), b.fileno(), 0, head_fd=a.fileno() + b.fileno() + 1, head_limit=100),
                   SpliceJob(a.fileno(), -1, 0, head_fd=-1, head_limit=0),  # no limit
                   SpliceJob(a.fileno(), -1, 0, head_fd=-1, head_limit=5000),  # beyond bufsize
                   SpliceJob(a.fileno(), b.fileno(), 10, chunked=True, copy=True)]
            for job in bad:
                with pytest.raises(EngineError):
                    await e.splice(job)
            with pytest.raises(EngineError):
                await e.splice(SpliceJob(-1, b.fileno(), 0, out=b"x" * 5000))
    run(main())


def test_idle_head_jobs_hold_no_buffer_and_leak_nothing(net):
    pairs = net.tcp(200)
    before = fd_count()

    async def main():
        async with engine(maxjobs=256, bufsize=4096, nbufs=256) as e:
            tasks = [asyncio.ensure_future(e.splice(head_job(s.fileno(), head_first=10))) for _, s in pairs]
            await stats_settle(e, 10.0, jobs_active=200)
            for w, _ in pairs:
                w.sendall(REQ)
            done = await asyncio.gather(*tasks)
            assert all(c.end is JobEnd.DONE and c.head == REQ for c in done)
            # every head buffer came back: 256 more head-only jobs can all hold one at once
            for w, _ in pairs:
                w.sendall(b"GET / HTTP/1.1\r\n")
            tasks = [asyncio.ensure_future(e.splice(head_job(s.fileno(), head_timeout=0.2))) for _, s in pairs]
            done = await asyncio.gather(*tasks)
            assert all(c.end is JobEnd.TIMEOUT and c.head == b"GET / HTTP/1.1\r\n" for c in done)
    run(main())
    assert fd_count() == before


def chained_job(e, src, dst, count, out=RESP, first=5.0, whole=5.0):
    """A response job (head + copied body src -> dst) that goes on reading the next request
    head from dst; returns ((id, fut), (next id, next fut))."""
    from splicer.engine.binding import JOB_COPY, JOB_THEN_HEAD
    from splicer.engine.engine import ms
    job = e.submit(src.fileno(), dst.fileno(), count, JOB_COPY | JOB_THEN_HEAD, 5000, 5000, out, -1,
                   ms(first), ms(whole), 4000, src_gen=e.gen(src), dst_gen=e.gen(dst))
    return job, e.chained


def test_chained_job_reads_the_next_request_head(net):
    origin, src = net.tcp()
    dst, client = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            origin.sendall(b"hello")
            job, nxt = chained_job(e, src, dst, 5)
            c = await e.wait(*job)
            assert (c.end, c.phase, c.bytes_fwd) == (JobEnd.DONE, Phase.END, 5)
            assert await read_all(client, len(RESP) + 5) == RESP + b"hello"
            assert e.stats().jobs_active == 1  # the same slot, now the head job
            origin.sendall(b"more")  # src is let go of: its bytes stay where they are
            client.sendall(b"\r\n" + REQ + b"tail")
            n = await e.wait(*nxt)
            assert (n.end, n.head) == (JobEnd.DONE, REQ)
            assert client.recv(0) == b"" and dst.recv(100) == b"tail"
            assert src.recv(100) == b"more"
    run(main())


def test_chained_head_job_is_cancelled_when_the_body_fails(net):
    origin, src = net.tcp()
    dst, client = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            origin.sendall(b"ab")
            origin.close()
            job, nxt = chained_job(e, src, dst, 5)
            c = await e.wait(*job)
            assert c.end is JobEnd.PEER_CLOSED
            n = await e.wait(*nxt)
            assert n.end is JobEnd.CANCELLED and n.head is None
            assert e.stats().jobs_active == 0
    run(main())


def test_chained_head_job_times_out_and_can_be_abandoned(net):
    origin, src = net.tcp()
    dst, client = net.tcp()
    origin2, src2 = net.tcp()
    dst2, client2 = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            origin.sendall(b"hello")
            job, nxt = chained_job(e, src, dst, 5, first=0.2)
            assert (await e.wait(*job)).end is JobEnd.DONE
            assert (await e.wait(*nxt)).end is JobEnd.TIMEOUT  # keep-alive timeout of the next head
            # abandoned before it started (the body waits): the job ends without becoming it
            job2, nxt2 = chained_job(e, src2, dst2, 5)
            await asyncio.sleep(0.05)
            await e.abandon(*nxt2)
            assert nxt2[1].result().end is JobEnd.CANCELLED
            origin2.sendall(b"world")
            assert (await e.wait(*job2)).end is JobEnd.DONE
            await asyncio.sleep(0.05)
            assert e.stats().jobs_active == 0
    run(main())
