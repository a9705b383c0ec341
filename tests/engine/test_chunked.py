"""The engine's chunked relay (SPL_JOB_CHUNKED) on real socket pairs: bodies forwarded
verbatim however the bytes are cut, never a byte past the last chunk, and every way a body
can go wrong ends the job with the right outcome instead of a hang."""
from __future__ import annotations

import asyncio
import random

import pytest

from splicer.engine.engine import JobEnd, SpliceJob
from splicer.errors import EngineError

from .conftest import engine, nothing_to_read, recv_exact, recv_to_eof, run, send

KINDS = ["tcp", "unix"]
NEXT = b"GET /next HTTP/1.1\r\nHost: example\r\n\r\n"


def chunked(sizes: list[int], seed: int = 1) -> bytes:
    rnd = random.Random(seed)
    out = b""
    for n in sizes:
        out += b"%x;ext=%d\r\n%s\r\n" % (n, n, rnd.randbytes(n))
    return out + b"0\r\nX-Trailer: done\r\n\r\n"


async def trickle(sock, data: bytes, cuts: list[int], pause: float = 0.002) -> None:
    """Send `data` in pieces cut at `cuts` (offsets), pausing between them."""
    last = 0
    for cut in [*cuts, len(data)]:
        await send(sock, data[last:cut])
        last = cut
        await asyncio.sleep(pause)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sizes", [[1], [5, 4096, 70_000], [1] * 300, [3 << 20, 17]])
def test_body_forwarded_verbatim_and_next_request_left_in_source(net, kind, sizes):
    w, src = net.pair(kind)
    dst, r = net.pair(kind)
    body = chunked(sizes)

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            writer = asyncio.create_task(send(w, body + NEXT))
            reader = asyncio.create_task(recv_exact(r, len(body)))
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), chunked=True)), 20)
            got = await asyncio.wait_for(reader, 10)
            await asyncio.wait_for(writer, 10)
            left = await asyncio.wait_for(recv_exact(src, len(NEXT)), 5)
            return c, got, left

    c, got, left = run(main())
    assert (c.end, c.bytes_fwd) == (JobEnd.DONE, len(body))
    assert got == body
    assert left == NEXT
    assert nothing_to_read(r)


@pytest.mark.parametrize("seed", range(4))
def test_any_cut_of_the_bytes(net, seed):
    """Lines and data cut at random places (every line split somewhere), sent with pauses:
    the engine waits for whole lines and forwards the same bytes."""
    w, src = net.tcp()
    dst, r = net.tcp()
    body = chunked([3, 1, 200, 10, 1, 9000, 2], seed)
    rnd = random.Random(seed)
    cuts = sorted(rnd.sample(range(1, len(body)), 60))

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            writer = asyncio.create_task(trickle(w, body + NEXT, cuts))
            reader = asyncio.create_task(recv_exact(r, len(body)))
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), chunked=True)), 20)
            got = await asyncio.wait_for(reader, 10)
            await asyncio.wait_for(writer, 10)
            left = await asyncio.wait_for(recv_exact(src, len(NEXT)), 5)
            return c, got, left

    c, got, left = run(main())
    assert c.end is JobEnd.DONE
    assert got == body and left == NEXT


@pytest.mark.parametrize("bad, forwarded", [
    (b"5\r\nhello\r\nzz\r\nsmuggled\r\n0\r\n\r\n", (b"5\r\nhello", b"5\r\nhello\r\n")),
    (b"5\r\nhelloXX0\r\n\r\n", (b"5\r\nhello",)),                # no CRLF after the data
    (b"5\nhello\r\n0\r\n\r\n", (b"",)),                          # bare LF
    (b"5;a\x00b\r\nhello\r\n0\r\n\r\n", (b"",)),                 # NUL in an extension
    (b"10000000000000000\r\n", (b"",)),                          # 17 hex digits
    (b"0\r\nno colon\r\n\r\n", (b"", b"0\r\n")),            # bad trailer (the valid line may go first)
    (b"1;" + b"e" * 5000 + b"\r\n", (b"",)),                     # line too long, no LF in 4 KiB
])
def test_bad_framing_ends_the_job_and_nothing_after_it_is_forwarded(net, bad, forwarded):
    w, src = net.tcp()
    dst, r = net.tcp()

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            await send(w, bad)
            c = await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), chunked=True)), 10)
            dst.close()
            return c, await asyncio.wait_for(recv_to_eof(r), 5)

    c, got = run(main())
    assert c.end is JobEnd.BAD_FRAMING
    assert got in forwarded


@pytest.mark.parametrize("sent", [b"5\r\nhel", b"5\r\nhello\r\n", b"5\r\nhello\r\n3;cut-h"])
def test_peer_closing_mid_body_is_peer_closed(net, sent):
    w, src = net.tcp()
    dst, r = net.tcp()

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            await send(w, sent, shut=True)
            return await asyncio.wait_for(eng.splice(SpliceJob(src.fileno(), dst.fileno(), chunked=True)), 5)

    c = run(main())
    assert c.end is JobEnd.PEER_CLOSED


def test_a_partial_line_that_never_ends_times_out(net):
    w, src = net.tcp()
    dst, r = net.tcp()

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            await send(w, b"5\r\nhello\r\n3;never-ending")
            job = SpliceJob(src.fileno(), dst.fileno(), chunked=True, src_idle=0.3)
            return await asyncio.wait_for(eng.splice(job), 5)

    c = run(main())
    assert (c.end, c.side) == (JobEnd.TIMEOUT, "src")


def test_chunked_with_tunnel_or_shut_flags_is_refused(net):
    a, b = net.tcp()

    async def main():
        async with engine(maxjobs=4, maxpipes=4) as eng:
            for job in (SpliceJob(a.fileno(), b.fileno(), chunked=True, tunnel=True),
                        SpliceJob(a.fileno(), b.fileno(), chunked=True, shut_wr_on_eof=True)):
                with pytest.raises(EngineError):
                    await eng.splice(job)

    run(main())
