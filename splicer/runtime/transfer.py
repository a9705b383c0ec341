"""Body movers: one message body (or one tunnel direction) from a source to a destination socket.

Theory of operation: a body is moved either by splicing (socket -> pipe -> socket in the
kernel) or by copying through a user-space buffer. Splicing is used when the direction
allows it (haproxy `option splice-request/response/auto`) and the body is big enough to pay
for it. A spliced body is handed to the engine thread (splicer.engine.engine) when there is
one; when the engine is busy or out of pipes, the loop drives the splice pump itself with
its own pipe pool, and when that pool is exhausted too, the body is copied: a transfer never
stalls for lack of a pipe. A counted
transfer never reads past its end, so the next pipelined message stays in the socket.
Outcomes (done, premature end of stream, errors and timeouts on either side) are returned
as data, never raised.
"""
from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from enum import Enum

from splicer.engine.binding import JOB_CHUNKED, JOB_COPY, UNTIL_EOF, PipePool, Stop
from splicer.engine.engine import Engine, JobEnd, SpliceJob, ms
from splicer.errors import EngineBusy, EngineError
from splicer.http.chunked import MAX_LINE, ChunkedReader, Need
from splicer.http.framing import FramingError
from splicer.http.outcome import End, Result
from splicer.runtime import io

MIN_SPLICE_FORWARD = 4096
"""Bodies smaller than this are never spliced (haproxy's MIN_SPLICE_FORWARD)."""
SPLICE_AUTO_MIN = 32768
"""`option splice-auto` splices bodies of at least this many bytes (or of unknown length).

Measured (benchmarks/crossover.py, 2026-12-01, this 2-CPU machine, 3 rounds), now that the
engine copies small bodies too (it was the loop, and the break-even 128-224 KiB): splicing
cost 10-22 us more CPU per request than copying up to 16 KiB, and saved 23 us at 32 KiB,
84 us at 64 KiB, 160 us at 128 KiB and 1.25 ms at 1 MiB (A below B in 3 of 3 rounds from
32 KiB on)."""
CHUNK_SPLICE_AUTO_MIN = 131072
"""When a chunked body is relayed by the loop (no engine, or no pipe for it), `option
splice-auto` splices the data of a chunk of at least this many bytes. (With the engine, the
whole body is one job, cheaper than copying at every chunk size: see Mover.move_chunked.)

Measured (benchmarks/chunk_crossover.py, 2026-11-29, this 2-CPU machine, 4 MiB bodies):
splicing chunk data cost more CPU than copying it up to 64 KiB chunks and saved CPU on the
medians from 128 KiB (+32 us per chunk; 4 of 5 rounds in a confirmation run), in every round
from 192 KiB. Lower than SPLICE_AUTO_MIN because copying chunked data costs more per byte."""
BUDGET = 8 * 1024 * 1024
"""Bytes one pump call may write before yielding to the event loop (fairness)."""
COPY_BUF = 65536
"""User-space copy buffer, bytes."""


@dataclass(frozen=True, slots=True)
class Side:
    """One end of a transfer: its socket and its inactivity timeout in seconds (None = none)."""

    sock: socket.socket
    timeout: float | None


class SplicePolicy(Enum):
    """When a direction splices (haproxy's option splice-request/-response/-auto)."""

    NEVER = "never"
    AUTO = "auto"
    ALWAYS = "always"

    def wants(self, count: int | None, chunk: bool = False) -> bool:
        """True when a body of `count` bytes (None = unknown, until EOF) should be spliced;
        `chunk`: it is the data of one chunk (splice-auto's threshold is then
        CHUNK_SPLICE_AUTO_MIN)."""
        if self is SplicePolicy.NEVER:
            return False
        if count is None:
            return True
        if self is SplicePolicy.AUTO:
            return count >= (CHUNK_SPLICE_AUTO_MIN if chunk else SPLICE_AUTO_MIN)
        return count >= MIN_SPLICE_FORWARD

    def threshold(self) -> int:
        """The smallest counted body wants() splices (UNTIL_EOF: none), in the engine's form
        (struct spl_job.splice_min)."""
        if self is SplicePolicy.NEVER:
            return UNTIL_EOF
        return SPLICE_AUTO_MIN if self is SplicePolicy.AUTO else MIN_SPLICE_FORWARD


def result_of(c, copied: bool) -> Result:
    """A body's Result from the engine completion `c` (engine.Completion) of the job that moved
    it: bytes_fwd as moved, spliced or `copied`; the end from how and on which side it ended."""
    n = c.bytes_fwd
    res = Result(End.DONE, n, 0 if copied else n, n if copied else 0)
    if c.end is JobEnd.DONE:
        return res
    if c.end is JobEnd.BAD_FRAMING:
        res.end = End.BAD_FRAMING
    elif c.end is JobEnd.PEER_CLOSED:
        res.end = End.SRC_EOF
    elif c.end is JobEnd.TIMEOUT:
        res.end = End.SRC_TIMEOUT if c.side == "src" else End.DST_TIMEOUT
    else:
        res.end = End.SRC_ERROR if c.side == "src" else End.DST_ERROR
    return res


MIN_PROGRESS = 1024
"""Bytes that must move for an idle timeout to start over (the engine's SPL_MIN_PROGRESS):
a peer that trickles a byte now and then is timed out instead of holding the stream forever
(a minimum rate of 1 KiB per `timeout client` / `timeout server`)."""


class Deadline:
    """An idle timeout that restarts only once MIN_PROGRESS bytes have moved.

    Args:
        loop: the event loop (its clock).
        timeout: seconds, or None for no timeout.
    """

    __slots__ = ("loop", "timeout", "end", "progress")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float | None) -> None:
        self.loop = loop
        self.timeout = timeout
        self.end = None if timeout is None else loop.time() + timeout
        self.progress = 0

    def left(self) -> float | None:
        """Seconds left (0 when expired), None without a timeout."""
        return None if self.end is None else max(0.0, self.end - self.loop.time())

    def moved(self, n: int) -> None:
        """Record `n` bytes moved; restart the timeout once MIN_PROGRESS are reached."""
        self.progress += n
        if self.progress >= MIN_PROGRESS and self.timeout is not None:
            self.end = self.loop.time() + self.timeout
            self.progress = 0


class Activity:
    """Time of the last byte moved, shared by the two directions of a tunnel, so that an
    inactivity timeout fires only when neither direction moves (haproxy `timeout tunnel`)."""

    __slots__ = ("last",)

    def __init__(self, now: float) -> None:
        self.last = now


class Mover:
    """Moves bodies for one worker: holds the loop and the pipe pool.

    Args:
        loop: the event loop.
        pool: the loop's own pipe pool, used when the engine cannot take a job; None
            disables splicing entirely.
        engine: the engine thread that runs spliced transfers; None: the loop splices.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: PipePool | None, engine: Engine | None = None) -> None:
        self.loop = loop
        self.pool = pool
        self.engine = engine

    async def move(self, src: Side, dst: Side, count: int | None, policy: SplicePolicy,
                   activity: Activity | None = None, chunk: bool = False) -> Result:
        """Move `count` bytes (None: until the source's end of stream) from src to dst.

        Args:
            src, dst: the two sockets with their timeouts.
            count: bytes to move, or None for "until EOF".
            policy: whether this direction may splice.
            activity: updated with the loop time whenever bytes move (tunnels).
            chunk: the bytes are one chunk's data (SplicePolicy.wants).

        Returns:
            Result; End.DONE when all `count` bytes (or everything up to EOF) were written.
        """
        if count == 0:
            return Result(End.DONE)
        splice = policy.wants(count, chunk)
        if self.engine is not None and self.pool is not None and splice:
            res = await self._engine_move(src, dst, count, activity)
            if res is not None:
                return res
        if self.engine is not None and not splice and activity is None:
            # copied, still on the engine thread (recv/send through its buffer): the loop
            # copies only what the engine cannot take
            res = await self._engine_move(src, dst, count, None, copy=True)
            if res is not None:
                return res
        if self.pool is not None and splice:
            try:
                pipe = self.pool.get()
            except EngineError:
                pipe = None  # pool exhausted or pipe2() failed: copy instead, never stall
            if pipe is not None:
                try:
                    return await self._splice(pipe, src, dst, count, activity)
                finally:
                    self.pool.put(pipe)
        return await self._copy(src, dst, count, activity)

    async def _engine_move(self, src: Side, dst: Side, count: int | None, activity: Activity | None,
                           chunked: bool = False, copy: bool = False) -> Result | None:
        """Run the transfer on the engine thread; None when it could not take it (nothing moved).

        With `chunked`, the job is a whole chunked body (SPL_JOB_CHUNKED, `count` ignored):
        the engine checks the framing lines with native/src/chunked.c (ChunkedReader's rules)
        and forwards lines and data verbatim; a framing error ends it End.BAD_FRAMING. With
        `copy`, the engine copies the bytes through its buffer (SPL_JOB_COPY) instead."""
        eng = self.engine
        flags = (JOB_CHUNKED if chunked else 0) | (JOB_COPY if copy else 0)
        try:
            # named with the sockets' generations: they stay registered in the engine
            job = eng.submit(src.sock.fileno(), dst.sock.fileno(),
                             UNTIL_EOF if chunked or count is None else count, flags, ms(src.timeout),
                             ms(dst.timeout), src_gen=eng.gen(src.sock), dst_gen=eng.gen(dst.sock))
        except EngineBusy:
            return None
        c = await eng.wait(*job)
        if c.end is JobEnd.NOPIPE:
            return None
        if activity is not None:
            activity.last = self.loop.time()
        return result_of(c, copy)

    async def tunnel(self, a: socket.socket, b: socket.socket, idle: float | None) -> tuple[Result, Result] | None:
        """Run a two-way tunnel on the engine thread until both directions reached EOF.

        Returns:
            (a->b, b->a) results, or None when the engine could not take it (nothing moved;
            the caller runs the tunnel on the loop).
        """
        if self.engine is None:
            return None
        try:
            c = await self.engine.splice(SpliceJob(a.fileno(), b.fileno(), tunnel=True, src_idle=idle))
        except EngineBusy:
            return None
        if c.end is JobEnd.NOPIPE:
            return None
        if c.end is JobEnd.DONE:
            end = End.DONE
        elif c.end is JobEnd.TIMEOUT:
            end = End.SRC_TIMEOUT
        else:
            end = End.SRC_ERROR if c.side == "src" else End.DST_ERROR
        return Result(end, c.bytes_fwd, c.bytes_fwd, 0), Result(end, c.bytes_rev, c.bytes_rev, 0)

    async def _splice(self, pipe, src: Side, dst: Side, count: int | None, activity: Activity | None) -> Result:
        loop = self.loop
        sfd, dfd = src.sock.fileno(), dst.sock.fileno()
        res = Result(End.DONE)
        left = UNTIL_EOF if count is None else count
        while True:
            mv = pipe.pump(sfd, dfd, left, BUDGET)
            res.moved += mv.bytes_out
            res.spliced += mv.bytes_out
            if activity is not None and (mv.bytes_in or mv.bytes_out):
                activity.last = loop.time()
            if count is not None:
                left -= mv.bytes_in
            how = mv.how
            try:
                if how is Stop.SRC_AGAIN:
                    await io.wait_readable(loop, src.sock, src.timeout)
                elif how is Stop.DST_AGAIN:
                    await io.wait_writable(loop, dfd, dst.timeout)
                elif how is Stop.BUDGET:
                    await asyncio.sleep(0)
                elif how is Stop.DONE:
                    return res
                elif how is Stop.EOF:
                    res.end = End.DONE if count is None else End.SRC_EOF
                    return res
                elif how is Stop.SRC_ERROR:
                    res.end = End.SRC_ERROR
                    return res
                else:
                    res.end = End.DST_ERROR
                    return res
            except TimeoutError:
                res.end = End.SRC_TIMEOUT if how is Stop.SRC_AGAIN else End.DST_TIMEOUT
                return res

    async def _copy(self, src: Side, dst: Side, count: int | None, activity: Activity | None) -> Result:
        loop = self.loop
        # one buffer per transfer: concurrent transfers must never share one across awaits
        buf = memoryview(bytearray(COPY_BUF if count is None else min(count, COPY_BUF)))
        res = Result(End.DONE)
        left = count
        src_idle = Deadline(loop, src.timeout)
        while left is None or left > 0:
            want = len(buf) if left is None else min(left, len(buf))
            try:
                n = await io.recv_into(loop, src.sock, buf[:want], src_idle.left())
            except TimeoutError:
                res.end = End.SRC_TIMEOUT
                return res
            except OSError:
                res.end = End.SRC_ERROR
                return res
            if n == 0:
                res.end = End.DONE if count is None else End.SRC_EOF
                return res
            try:
                await io.send_all(loop, dst.sock, buf[:n], dst.timeout)
            except TimeoutError:
                res.end = End.DST_TIMEOUT
                return res
            except OSError:
                res.end = End.DST_ERROR
                return res
            res.moved += n
            res.copied += n
            src_idle.moved(n)
            if activity is not None:
                activity.last = loop.time()
            if left is not None:
                left -= n
        return res

    async def move_chunked(self, src: Side, dst: Side, policy: SplicePolicy, dechunk: bool = False) -> Result:
        """Relay one chunked body verbatim, never reading past its end.

        When the direction splices (any policy but NEVER) and the engine runs, the whole
        body is one engine job (SPL_JOB_CHUNKED): the engine reads each framing line with a
        peek, checks it (native/src/chunked.c, the same rules as ChunkedReader), and splices
        lines and chunk data verbatim, with no Python step per chunk. Otherwise (no engine,
        no pipe, or `dechunk`), size lines, the CRLF after each chunk and trailers are read
        line by line here (peek, then exact reads) and forwarded as received, and chunk data
        goes through move(), so a big chunk is spliced and a small one copied. With
        `dechunk`, only the chunk data is forwarded (for an HTTP/1.0 client; the connection
        end delimits it).

        Returns:
            Result; End.BAD_FRAMING for a malformed body (the caller closes both sides).
        """
        if not dechunk and self.engine is not None and self.pool is not None and policy.wants(None):
            res = await self._engine_move(src, dst, None, None, chunked=True)
            if res is not None:
                return res
        reader = ChunkedReader()
        res = Result(End.DONE)
        loop = self.loop
        # One idle clock for the whole body, restarted only once MIN_PROGRESS bytes moved (the
        # engine's rule): a body trickled in tiny chunks cannot restart it line by line.
        mark, progress = loop.time(), 0

        def left() -> float | None:
            return None if src.timeout is None else max(0.0, mark + src.timeout - loop.time())

        while reader.need is not Need.DONE:
            if progress >= MIN_PROGRESS:
                mark, progress = loop.time(), 0
            if reader.need is Need.DATA:
                r = await self.move(Side(src.sock, left()), dst, reader.data_left, policy, chunk=True)
                res.add(r)
                if r.end is not End.DONE:
                    return res
                reader.data_done(r.moved)
                progress += r.moved
                continue
            try:
                line = await io.recv_line(loop, src.sock, MAX_LINE, left(), whole=True)
            except TimeoutError:
                res.end = End.SRC_TIMEOUT
                return res
            except ValueError:
                res.end = End.BAD_FRAMING
                return res
            except OSError:
                res.end = End.SRC_ERROR
                return res
            if not line.endswith(b"\n"):
                res.end = End.SRC_EOF
                return res
            try:
                reader.feed_line(line)
            except FramingError:
                res.end = End.BAD_FRAMING
                return res
            progress += len(line)
            if dechunk:
                continue
            try:
                await io.send_all(loop, dst.sock, line, dst.timeout)
            except TimeoutError:
                res.end = End.DST_TIMEOUT
                return res
            except OSError:
                res.end = End.DST_ERROR
                return res
            res.moved += len(line)
            res.copied += len(line)
        res.end = End.DONE
        return res
