"""Buffers touched by a burst of requests give their pages back once the burst is over
(native/src/engine.c spl_trim_hbufs for the engine's head buffers, Engine._trim_outs for the
out buffers), so that the idle connections left after it are not charged for them; the
buffers in use keep theirs.

Read from the kernel's own account: the resident pages of the mapping that holds each kind of
buffer (/proc/self/smaps). Real loopback TCP pairs; every wait is bounded (conftest.settle).
"""
from __future__ import annotations

from splicer.engine.binding import ffi
from splicer.engine.engine import JobEnd, ms
from tests.engine.conftest import engine, run, settle

REQ = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
BURST = 24
PAGE = 4096


def resident_kib(address: int) -> int:
    """Rss (KiB) of the mapping of this process that holds `address` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            first = line.split(" ", 1)[0]
            if "-" in first and ":" not in first:
                lo, hi = (int(x, 16) for x in first.split("-"))
                inside = lo <= address < hi
            elif inside and line.startswith("Rss:"):
                return int(line.split()[1])
    raise AssertionError(f"no mapping holds {address:#x}")


def address(ptr) -> int:
    return int(ffi.cast("uintptr_t", ptr))


def test_a_burst_of_heads_gives_its_buffers_pages_back(net):
    pairs = net.tcp(BURST + 1)
    got = []

    async def main():
        async with engine(maxjobs=64, bufsize=16384, nbufs=64) as e:
            hbufs = address(e._h._hbufs[0])
            before = resident_kib(hbufs)
            for w, src in pairs[:BURST]:  # a burst: every head in at once, each in its own buffer
                w.sendall(REQ)
            for w, src in pairs[:BURST]:
                fd = src.fileno()
                e.submit(fd, -1, 0, 0, head_fd=fd, head_first_ms=ms(5.0), head_ms=5000, head_limit=8000,
                         src_gen=e.gen(src), done=got.append)
            await settle(lambda: len(got) == BURST, what="the burst's heads")
            assert all(c.end is JobEnd.DONE and c.head == REQ for c in got)
            touched = resident_kib(hbufs) - before
            assert touched >= BURST * PAGE // 1024  # a page per head at least: each held its own
            # an idle connection's head job keeps the engine turning (its timeout's ticks)
            w, src = pairs[BURST]
            fd = src.fileno()
            e.submit(fd, -1, 0, 0, head_fd=fd, head_first_ms=ms(5.0), head_ms=5000, head_limit=8000,
                     src_gen=e.gen(src), done=got.append)
            await settle(lambda: resident_kib(hbufs) - before < touched // 4, timeout=4.0,
                         what="the burst's head buffers given back")
    run(main())


def test_a_burst_of_out_buffers_gives_their_pages_back_and_the_next_job_still_works(net):
    pairs = net.tcp(BURST)
    got = []
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + b"x" * 6000  # (bytes to touch two pages)

    async def main():
        async with engine(maxjobs=64, bufsize=16384, nbufs=64) as e:
            obufs = address(e._h._obufs[0])
            before = resident_kib(obufs)
            for w, dst in pairs:
                e.submit(-1, dst.fileno(), 0, 0, out=head, dst_gen=e.gen(dst), done=got.append)
            await settle(lambda: len(got) == BURST, what="the burst's sends")
            assert all(c.end is JobEnd.DONE for c in got)
            touched = resident_kib(obufs) - before
            assert touched >= BURST * 2 * PAGE // 1024
            await settle(lambda: resident_kib(obufs) - before < touched // 4, timeout=4.0,
                         what="the burst's out buffers given back")
            # a buffer given back reads as zeros and is written again: the next send is whole
            got.clear()
            w, dst = pairs[0]
            e.submit(-1, dst.fileno(), 0, 0, out=b"again", dst_gen=e.gen(dst), done=got.append)
            await settle(lambda: got, what="a send after the trim")
            w.setblocking(True)
            w.settimeout(2.0)
            data = b""
            while not data.endswith(b"again"):
                data += w.recv(65536)
            assert data == head + b"again"  # the burst's send, then this one
    run(main())
