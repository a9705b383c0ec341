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
