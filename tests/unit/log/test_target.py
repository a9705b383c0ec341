"""splicer.log.target on real descriptors (a pipe): a full pipe drops lines, never blocks,
and the inherited descriptor stays as it was."""
import os
import time

from splicer.config.model import LogTarget
from splicer.log.target import StreamTarget


def test_full_pipe_drops_and_never_blocks():
    r, w = os.pipe()
    try:
        t = StreamTarget(LogTarget("fd", f"fd@{w}", fd=w))
        assert os.get_blocking(w)  # the shared description is left blocking
        line = b"x" * 1000 + b"\n"
        start = time.monotonic()
        for _ in range(200):  # 200 KB into a pipe of 64 KB that nobody reads
            t.send_joined(line, 1)
        assert time.monotonic() - start < 5
        assert t.sent + t.dropped == 200 and t.sent >= 1 and t.dropped >= 100
        got = os.read(r, 1 << 20)
        assert got == line * t.sent  # what was counted as sent arrived, whole lines only
        t.close()
        os.write(w, b"still open\n")  # closing the target left the inherited descriptor open
    finally:
        os.close(r)
        os.close(w)


def test_batch_counts_lines_on_a_short_write():
    r, w = os.pipe()
    try:
        t = StreamTarget(LogTarget("fd", f"fd@{w}", fd=w))
        t.send_joined(b"a" * 60000 + b"\n", 1)  # leaves about 5 KB of room
        t.send_joined((b"b" * 999 + b"\n") * 20, 20)  # 20 KB: a short write, some lines whole
        assert t.sent + t.dropped == 21 and 1 < t.sent < 21
        got = os.read(r, 1 << 20)  # everything written (the pipe holds 64 KiB)
        assert got.endswith(b"\n") and got.count(b"\n") == t.sent  # only whole lines are in the pipe
        t.close()
    finally:
        os.close(r)
        os.close(w)


# -- syslog over a stream socket (SocketTarget): real sockets on 127.0.0.1 ----------------------

import asyncio  # noqa: E402
import socket  # noqa: E402
from dataclasses import replace  # noqa: E402

import pytest  # noqa: E402

from splicer.log.target import SocketTarget, _message_start, _messages  # noqa: E402


@pytest.mark.parametrize("octets", [False, True])
def test_a_cut_message_is_found_from_any_byte_of_it(octets):
    msgs = [b"<134>first", b"<134>a second one", b"<134>3"]
    data = b"".join(b"%d %s" % (len(m), m) for m in msgs) if octets else b"".join(m + b"\n" for m in msgs)
    starts, pos = [], 0
    for m in msgs:
        starts.append(pos)
        pos += len(m) + (len(b"%d " % len(m)) if octets else 1)
    for off in range(1, len(data)):  # a connection lost after `off` bytes: back to its message's start
        start = _message_start(data, off, octets)
        assert start == max(s for s in starts if s <= off)
        assert _messages(data, start, octets) == starts.index(start)


def _listener(rcvbuf: int = 4096) -> socket.socket:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    return ls


def _run(loop, until, timeout: float = 10.0) -> None:
    async def wait():
        deadline = loop.time() + timeout
        while not until():
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
    loop.run_until_complete(wait())


def test_a_server_that_reads_nothing_fills_the_buffer_then_drops_whole_batches():
    ls = _listener()  # accepts (the kernel's backlog) but nobody ever reads
    loop = asyncio.new_event_loop()
    try:
        model = LogTarget("tcp", "tcp@x", host="127.0.0.1", port=ls.getsockname()[1], ring_size=4096)
        t = SocketTarget(model, loop)
        _run(loop, lambda: t.connected)
        batch = (b"<134>" + b"x" * 994 + b"\n") * 10  # 10 messages, 10 KB
        start = time.monotonic()
        for _ in range(2000):  # 20 MB: far more than the kernel's buffers and the target's 4 KB
            t.send_joined(batch, 10)
        assert time.monotonic() - start < 5  # never waits
        assert t.queued <= 4096 + len(batch)  # what waits is bounded
        assert t.dropped > 0 and t.dropped % 10 == 0  # whole batches dropped, counted by message
        assert t.sent + t.dropped + sum(c[1] for c in t._chunks) == 20000
        t.close()
        assert t.sent + t.dropped == 20000  # at close, what waited counts as dropped
    finally:
        loop.close()
        ls.close()


def test_a_stalled_server_is_given_up_after_timeout_server_and_connected_again():
    ls = _listener()
    loop = asyncio.new_event_loop()
    try:
        model = LogTarget("tcp", "tcp@x", host="127.0.0.1", port=ls.getsockname()[1], ring_size=1 << 20,
                          timeout_server=0.2)
        t = SocketTarget(model, loop)
        _run(loop, lambda: t.connected)
        for _ in range(300):  # 3 MB: the socket stops taking, data waits
            t.send_joined(b"<134>" + b"y" * 9994 + b"\n", 1)
        assert t._chunks
        _run(loop, lambda: t.connects >= 2)  # stalled for 0.2 s: dropped, then made again (1 s later)
        assert t.sent + t.dropped + sum(c[1] for c in t._chunks) == 300
        t.close()
    finally:
        loop.close()
        ls.close()


def test_a_server_that_refuses_is_tried_again_with_the_lines_kept():
    port_holder = socket.socket()
    port_holder.bind(("127.0.0.1", 0))
    port = port_holder.getsockname()[1]
    port_holder.close()  # nobody listens on `port` now
    loop = asyncio.new_event_loop()
    try:
        t = SocketTarget(replace(LogTarget("tcp", "tcp@x", host="127.0.0.1", port=port)), loop)
        t.send_joined(b"<134>kept\n", 1)
        loop.run_until_complete(asyncio.sleep(0.3))
        assert not t.connected and t.queued == 10
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", port))
        ls.listen(1)
        try:
            _run(loop, lambda: t.sent == 1)  # tried again within a second, the line sent
            c, _ = ls.accept()
            c.settimeout(5)
            assert c.recv(100) == b"<134>kept\n"
            c.close()
        finally:
            ls.close()
        t.close()
    finally:
        loop.close()
