"""Hostile tests of the engine's chunked relay (SPL_JOB_CHUNKED) on real socket pairs.

The defect found here: spl_run_chunked() only pumps while `dir->left > 0`. When the segment
that takes the body to its end (the last-chunk, or the last trailer lines) has been spliced
*into* the pipe but the destination was full (SPL_STOP_DST_AGAIN with left == 0), the next
run skips the pump, sees SPL_CHUNK_END and finishes DONE: the pipe still holds the end of
the body, is handed back and killed (pipes_killed), and the receiver never gets it.
"""
from __future__ import annotations

import asyncio

import pytest

from splicer.engine.engine import JobEnd, SpliceJob

from .conftest import engine, nothing_to_read, recv_exact, recv_to_eof, run, send


def fill(sock) -> int:
    """Fill a non-blocking socket's send path until it would block; bytes written."""
    n = 0
    while True:
        try:
            n += sock.send(b"F" * 65536)
        except BlockingIOError:
            return n


@pytest.mark.parametrize("body", [
    b"0\r\n\r\n",                                   # the last-chunk alone
    b"0\r\nX-T: 1\r\n\r\n",                         # with a trailer
    b"0\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 900) for i in range(3)) + b"\r\n",
], ids=["last-chunk", "trailer", "big-trailers"])
def test_end_of_body_spliced_while_destination_is_full_is_delivered(net, body):
    """Observed: the job ends DONE with bytes_fwd == 0 (or short), pipes_killed == 1, and the
    reader gets the filler but never the body's last bytes (e.g. b"0\\r\\n\\r\\n"): a client
    waiting for the last-chunk hangs, or reads the next response as chunk data.
    Expected: DONE only once every byte of the body reached dst (bytes_fwd == len(body)),
    no pipe killed, and the reader gets exactly filler + body."""
    w, src = net.tcp()
    dst, r = net.tcp(sndbuf=16384, rcvbuf=16384)

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            pre = fill(dst)                       # the destination cannot take a byte now
            await send(w, body)
            job = asyncio.ensure_future(eng.splice(SpliceJob(src.fileno(), dst.fileno(), chunked=True)))
            await asyncio.sleep(0.1)              # the engine has read the body into its pipe
            reader = asyncio.ensure_future(recv_exact(r, pre))
            c = await asyncio.wait_for(job, 5)
            filler = await asyncio.wait_for(reader, 5)
            dst.close()                           # the job is over: EOF after what it sent
            rest = await asyncio.wait_for(recv_to_eof(r), 5)
            return c, filler, rest, eng.stats()

    c, filler, rest, st = run(main())
    assert filler == b"F" * len(filler)
    assert (c.end, c.bytes_fwd, st.pipes_killed) == (JobEnd.DONE, len(body), 0)
    assert rest == body


def test_body_forwarded_whatever_the_byte_boundary(net):
    """Every cut of a body with extensions and trailers into two segments (the second
    sent after a pause): the same bytes arrive and the pipelined request stays in src."""
    body = b"3;a=\"x;y\"\r\nabc\r\n00000000000000A\r\n0123456789\r\n0 ;q\r\nX-T: 1\r\nY: 2\r\n\r\n"
    nxt = b"GET /next HTTP/1.1\r\nHost: a\r\n\r\n"
    pairs = [(net.tcp(), net.tcp()) for _ in range(len(body) - 1)]

    async def one(eng, cut, w, src, dst, r):
        async def writer():
            await send(w, body[:cut])
            await asyncio.sleep(0.02)
            await send(w, body[cut:] + nxt)
        wt = asyncio.ensure_future(writer())
        rd = asyncio.ensure_future(recv_exact(r, len(body)))
        c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), chunked=True)), 5)
        got = await asyncio.wait_for(rd, 5)
        await wt
        left = await asyncio.wait_for(recv_exact(src, len(nxt)), 5)
        return cut, c.end, c.bytes_fwd, got, left

    async def main():
        async with engine(maxjobs=128, maxpipes=128) as eng:
            return await asyncio.gather(*(one(eng, cut, w, src, dst, r)
                                          for cut, ((w, src), (dst, r)) in zip(range(1, len(body)), pairs)))

    for cut, end, fwd, got, left in run(main()):
        assert (cut, end, fwd, got, left) == (cut, JobEnd.DONE, len(body), body, nxt)
        assert nothing_to_read(pairs[cut - 1][1][1])


@pytest.mark.parametrize("size, count", [(10, 20_000), (4000, 500)], ids=["10B-x20000", "4000B-x500"])
def test_many_chunks_sent_at_once_do_not_stall(net, size, count):
    """A chunked body of ordinary chunks written in one go (300 KB of 10-byte chunks, or
    2 MB of 4000-byte chunks) into a loopback TCP pair with default buffers.
    Observed: the job stops moving after 195,555 (resp. 1,338,338) bytes and ends TIMEOUT
    (src) once src_idle (1 s) is over. `ss -tmi` on src then shows Recv-Q 1 (b"\\r", the start
    of a framing line) but skmem r ~= rb (130,907 of 131,072): the rest of the skb that byte
    sits in still counts against the receive buffer, so the window stays closed and the
    sender's remaining ~1.2 MB never arrives, while the engine waits (peek, no whole line)
    for bytes that cannot come. The loop's relay consumes a partial line (io.recv_line) and
    never deadlocks this way.
    Expected: DONE with every byte forwarded, in well under a second."""
    w, src = net.tcp()
    dst, r = net.tcp()
    body = b"".join(b"%x\r\n%s\r\n" % (size, b"d" * size) for _ in range(count)) + b"0\r\n\r\n"

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            writer = asyncio.ensure_future(send(w, body))
            reader = asyncio.ensure_future(recv_exact(r, len(body)))
            job = SpliceJob(src.fileno(), dst.fileno(), chunked=True, src_idle=1.0)
            c = await asyncio.wait_for(eng.splice(job), 10)
            got = await asyncio.wait_for(reader, 2) if c.end is JobEnd.DONE else None
            writer.cancel()
            reader.cancel()
            return c, got

    c, got = run(main())
    assert (c.end, c.bytes_fwd) == (JobEnd.DONE, len(body))
    assert got == body
