"""The engine as the event loop sees it: jobs in, completions out.

Theory of operation: a job goes to the C engine thread (its own epoll, pinned to the
worker's CPU), which does its phases with no GIL: send a head, move a body (spliced through
a pipe or copied), read the next head (C enum spl_phase). `submit()` queues a job in the C
form and returns (id, future); `wait()` awaits its Completion; `splice(SpliceJob)` does both
from the dataclass form. Jobs queued during one loop iteration share one wake-up of the
engine. The engine's eventfd is watched with loop.add_reader; each wake reaps every ready
completion (copying out the heads the engine read) and resolves its future. Between submit
and completion the engine owns the fds: Python neither reads, writes nor closes them. A
cancelled wait asks the engine to stop the job and still waits for its completion before
letting go.
"""
from __future__ import annotations

import array
import asyncio
import errno
import logging
import time
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from splicer.engine import binding
from splicer.engine.binding import UNTIL_EOF, EngineHandle, EngineStats, xrules_program
from splicer.errors import EngineBusy, EngineError

log = logging.getLogger("splicer")


class JobEnd(Enum):
    """How a job ended (C enum spl_end)."""

    DONE = binding.END_DONE
    PEER_CLOSED = binding.END_PEER_CLOSED
    ERROR = binding.END_ERROR
    TIMEOUT = binding.END_TIMEOUT
    CANCELLED = binding.END_CANCELLED
    NOPIPE = binding.END_NOPIPE
    BAD_FRAMING = binding.END_BAD_FRAMING
    TOO_LARGE = binding.END_TOO_LARGE


class Phase(Enum):
    """Where a job ended (C enum spl_phase): END when every phase it asked for completed."""

    SEND = binding.PHASE_SEND
    BODY = binding.PHASE_BODY
    HEAD = binding.PHASE_HEAD
    END = binding.PHASE_END


@dataclass(frozen=True, slots=True)
class SpliceJob:
    """One body (src -> dst) or a two-way tunnel for the engine.

    Attributes:
        src_fd, dst_fd: non-blocking connected sockets (tunnel: the two sides).
        max_bytes: bytes to move; None = until src's end of stream (ignored for tunnels).
        tunnel: move both ways until both directions reached EOF, forwarding each half-close.
        shut_wr_on_eof: for an until-EOF job, shutdown(dst, SHUT_WR) at EOF.
        chunked: one chunked body, forwarded verbatim: the engine checks its framing lines
            (native/src/chunked.c) and splices lines and data; max_bytes is ignored. It ends
            BAD_FRAMING on a framing error.
        src_idle: seconds the job may wait on src for data (None: no limit); for a tunnel,
            seconds without a byte in either direction.
        dst_idle: seconds the job may wait on dst for room (None: no limit).
        copy: move the body by copying it (recv/send through the job's out buffer) rather
            than through a pipe; a counted body that fits behind `out` leaves with it in one
            send.
        out: bytes to write to dst_fd before the body (a head, at most the engine's bufsize).
        head_fd: after the body, read one HTTP head from this fd (src_fd or dst_fd; -1 for
            src_fd alone in a head-only job), exactly to its end (the bytes behind it stay).
        head_first: seconds to wait for the head's first byte (None: no limit).
        head_timeout: seconds for the whole head from its first byte (None: no limit).
        head_limit: largest head accepted, bytes; beyond, the job ends TOO_LARGE.
        skip_empty: drop empty lines before the head (a request, RFC 9112 section 2.2).

    A job's phases run in order, each only when asked for: send `out`, move the body
    (max_bytes 0 = none), read a head (C enum spl_phase).
    """

    src_fd: int
    dst_fd: int
    max_bytes: int | None = None
    tunnel: bool = False
    shut_wr_on_eof: bool = False
    chunked: bool = False
    src_idle: float | None = None
    dst_idle: float | None = None
    copy: bool = False
    out: bytes | None = None
    head_fd: int | None = None
    head_first: float | None = None
    head_timeout: float | None = None
    head_limit: int = 0
    skip_empty: bool = False


class Completion(NamedTuple):
    """A finished job.

    Attributes:
        end: how it ended.
        bytes_fwd: bytes written to dst (body bytes: a head sent first is not counted).
        bytes_rev: tunnel only: bytes written back to src.
        errno: positive errno: the failure for ERROR, ETIMEDOUT for TIMEOUT, ECANCELED for
            CANCELLED, ENOBUFS for NOPIPE; 0 for DONE and PEER_CLOSED.
        side: "src" or "dst": which socket failed or timed out.
        phase: the phase the job ended in; Phase.END when all of them completed.
        head: the bytes the head phase read: the whole head when the job is DONE, else
            those read before it ended (end of stream, timeout); None when it read none.
            A credit's X_DONE: the request head, when the lane logs (RELAY_XLOG), else None.
        first_line: TOO_LARGE only: not even the head's first line ended within the limit.
        index: the engine's index of a whole `head` when its tokenizer accepted it (a list
            of ints, binding.h1_index; what h1.parse_request/parse_response take), else None.
        more: DONE with a head: bytes the socket already held behind the head when it was
            read (a request body that came with its head, a pipelined request), as far as
            the engine's head buffer saw.
        relayed: a JOB_RELAY job that forwarded the response head by itself: that head's
            bytes as sent (0: it did not; then `head` is the response head as read and the
            job ended there). Relayed, `head` is the response head as the server sent it,
            `phase` SEND (the client took none of it) or BODY tells where the relay failed
            (END: all went), bytes_fwd counts the body.
        spliced: relayed, the body went through a pipe (else it was copied).
        relay_ms: relayed, ms from the response head's end to this completion.
        xkind: the express lane's (engine.h; binding.X_*): 0 for a job's completion; a
            credit's X_DONE, X_UNUSED, X_DEAD or X_HANDOVER; X_HANDOVER for the client's
            head job whose request was handed over (`head` is that request head), X_CLOSED
            for one whose express request's response closed the client connection.
        xstatus: X_DONE: the response's status.
        xreq: X_DONE: the request head's bytes as the client sent them.
        xother: a credit's X_DONE or X_HANDOVER: the id of the client's head job.
        xclose: a credit's X_DONE: the response said `Connection: close`, so its server
            connection is not reused (binding.RELAY_SERVER_CLOSE).
    """

    end: JobEnd
    bytes_fwd: int
    bytes_rev: int
    errno: int
    side: str
    phase: Phase = Phase.END
    head: bytes | None = None
    first_line: bool = False
    index: list | None = None
    more: int = 0
    relayed: int = 0
    spliced: bool = False
    relay_ms: int = 0
    xkind: int = 0
    xstatus: int = 0
    xreq: int = 0
    xother: int = 0
    xclose: bool = False


_ENDS = {e.value: e for e in JobEnd}
_PHASES = {p.value: p for p in Phase}
_SIDES = {binding.SIDE_SRC: "src"}
_X_WANT = binding.X_WANT


def ms(seconds: float | None) -> int:
    """A timeout in the engine's form: milliseconds, at least 1; 0 for None (no limit)."""
    if seconds is None:
        return 0
    v = _MS.get(seconds)
    if v is None:
        v = max(1, min(int(seconds * 1000), 2**32 - 1))
        if len(_MS) < 256:  # a config has a handful of timeouts
            _MS[seconds] = v
    return v


_MS: dict[float, int] = {}

_POLL_DONE = EngineHandle.POLL_DONE
_POLL_MORE = EngineHandle.POLL_AGAIN | EngineHandle.POLL_TIMERS

CLOSE_GRACE = 0.2
"""Seconds close() waits at most for an engine thread to report the jobs it cancels."""

_SPLICED = binding.RELAY_SPLICED
_SERVER_CLOSE = binding.RELAY_SERVER_CLOSE

TRIM_AFTER = 1.0
"""Seconds an out buffer stays untaken at the bottom of the free list before its pages go
back to the kernel (Engine._trim_outs; the engine's head buffers: SPL_TRIM_MS)."""
_new = tuple.__new__  # a Completion built without NamedTuple's Python-level __new__
_CHAINS = binding.JOB_THEN_HEAD | binding.JOB_RELAY

_UNCLAIMED = object()
"""In Engine._cbs: a chained job whose callback then() has not given yet."""


class Engine:
    """One engine per worker process.

    Args:
        loop: the worker's event loop (its eventfd is watched there).
        cpu: CPU to pin the engine thread to, -1 for none.
        pipesize: bytes per pipe (haproxy tune.pipesize; 0 = kernel default).
        maxpipes: pipes at most (haproxy tune.maxpipes); a job that finds none ends NOPIPE.
        maxjobs: jobs in flight at most; beyond, splice() raises EngineBusy.
        bufsize: bytes of each head and out buffer (haproxy tune.bufsize).
        nbufs: out and head buffers, each (None: maxjobs, so a job never lacks one).
        inline: no engine thread: this loop turns the engine itself (spl_engine_poll) when
            one of its sockets has an event, after each iteration that submitted jobs, and
            each tick while a job has a timeout. For a worker pinned to one CPU, where an
            engine thread would only share that CPU with the loop, this saves a wake-up and
            two thread switches per batch.

    Raises:
        EngineError: the engine thread could not start.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, cpu: int = -1, pipesize: int = 0,
                 maxpipes: int = 1024, maxjobs: int = 8192, bufsize: int = 16384,
                 nbufs: int | None = None, inline: bool = False) -> None:
        self.loop = loop
        nbufs = maxjobs if nbufs is None else nbufs
        self._h = EngineHandle(cpu, pipesize, maxpipes, maxjobs, bufsize, nbufs, inline)
        self.inline = inline
        self.bufsize = bufsize
        self._free_out = list(range(nbufs - 1, -1, -1))  # out buffers not lent to a job (LIFO)
        # out buffers left untaken for TRIM_AFTER seconds give their pages back (_trim_outs):
        # the free list's lowest depth since the last trim, and how many of its bottom
        # entries were given back already (none was touched yet)
        self._out_low = self._out_trimmed = nbufs
        self._trim: asyncio.TimerHandle | None = None
        self._outs: dict[int, int] = {}  # out buffer of each job in flight that has one
        # gen(): by fd number, the socket object last named with it and its generation (a
        # list and an array of C integers: no tuple, dict entry or int object per connection)
        self._gen_socks: list[object] = []
        self._gen_vals = array.array("I")
        self.chained: tuple[int, asyncio.Future] | None = None  # the last submit()'s chained job
        self._gen_next = 0
        self._futs: dict[int, asyncio.Future] = {}
        self._cbs: dict[int, object] = {}  # job id -> callable(Completion), or _UNCLAIMED
        self._early: dict[int, Completion] = {}  # completions of chained jobs not claimed yet
        self._next = 1
        self._closed = False
        self._wake_due = False  # a wake of the engine is scheduled for this loop iteration
        self._tick: asyncio.TimerHandle | None = None  # inline: the next timeout check
        self._poll_now = self._h.poll_now
        self._reap_due = False  # inline: wake_now() turned the engine, its completions wait
        self._closing = False  # close() cancels the jobs in flight: no new job is taken
        if inline:
            loop.add_reader(self._h.pollfd, self._poll)
        else:
            loop.add_reader(self._h.eventfd, self._on_eventfd)

    def _poll(self) -> None:
        """Inline mode: turn the engine once, then dispatch the completions it published (a
        turn that published none, most turns of a big body, costs one C call and a test)."""
        if self._closed:
            return
        more = self._poll_now()
        if more < 0:
            self._h.poll()  # raises the EngineError
        if more & _POLL_DONE or self._reap_due:
            self._reap_due = False
            self._on_eventfd()
        if not more & _POLL_MORE:
            return
        if more & EngineHandle.POLL_AGAIN and not self._wake_due:
            self._wake_due = True  # work no event will announce: turn again next iteration
            self.loop.call_soon(self._wake)
        if more & EngineHandle.POLL_TIMERS and self._tick is None and not self._closed:
            self._tick = self.loop.call_later(EngineHandle.POLL_TICK, self._on_tick)

    def _trim_outs(self) -> None:
        """Give back the pages of the out buffers that stayed at the bottom of the free list
        (none of them was taken) for TRIM_AFTER seconds: what a burst of requests touched
        is not kept for the idle connections that follow it (the engine does the same with
        its head buffers: native/src/engine.c spl_trim_hbufs). The list hands out its top
        first, so the buffers in use keep theirs."""
        self._trim = None
        if self._closed:
            return
        free = self._free_out
        low = min(self._out_low, len(free))
        for i in range(min(self._out_trimmed, low), low):
            self._h.drop_out(free[i])
        self._out_trimmed = low
        self._out_low = len(free)
        if low < len(free):  # buffers taken this period: they are looked at in the next one
            self._trim = self.loop.call_later(TRIM_AFTER, self._trim_outs)

    def _on_tick(self) -> None:
        self._tick = None
        self._poll()

    def _cancel_job(self, job_id: int) -> bool:
        """Queue the engine's cancel of a job (False: the queue is full); inline, the engine
        is turned in this loop iteration to carry it out (thread mode wakes by itself)."""
        if not self._h.cancel(job_id):
            return False
        if self.inline and not self._wake_due:
            self._wake_due = True
            self.loop.call_soon(self._wake)
        return True

    def _on_eventfd(self) -> None:
        futs, cbs, outs, free_out = self._futs, self._cbs, self._outs, self._free_out
        for job_id, fwd, rev, res, how, side, phase, head, info, index, more, relayed, rflags, rms, xkind, xstatus, \
                xreq, xother in self._h.reap():
            if outs:
                b = outs.pop(job_id, None)
                if b is not None:
                    free_out.append(b)  # the job is over: its out buffer is free again
            cb = cbs.pop(job_id, None)
            if xkind == _X_WANT and cb is not None:
                cbs[job_id] = cb  # (not the job's end: its request waits for a credit)
            if cb is not None:
                c = _new(Completion, (_ENDS[how], fwd, rev, -res, _SIDES.get(side, "dst"), _PHASES[phase], head,
                                      info != 0, index, more, relayed, rflags & _SPLICED != 0, rms, xkind,
                                      xstatus, xreq, xother, rflags & _SERVER_CLOSE != 0))
                if cb is _UNCLAIMED:
                    self._early[job_id] = c  # a chained job's: then() takes it
                    continue
                try:
                    cb(c)
                except Exception:  # a bug in a callback must not lose the other completions
                    log.exception("engine completion callback failed")
                continue
            fut = futs.pop(job_id, None)
            if fut is not None and not fut.done():
                fut.set_result(Completion(_ENDS[how], fwd, rev, -res, _SIDES.get(side, "dst"),
                                          _PHASES[phase], head, info != 0, index, more, relayed,
                                          rflags & _SPLICED != 0, rms, xkind, xstatus, xreq, xother,
                                          rflags & _SERVER_CLOSE != 0))

    def credit(self, head_id: int, cli, sock, done, connect: float | None = None) -> int | None:
        """Lend the engine the server connection `sock` for the express request of head
        job `head_id` (reading client socket `cli`), which asked for it (Completion.xkind
        X_WANT; engine.h, "the express lane"); `done(Completion)` is called with the
        credit's completion (Completion.xkind says how it ended), and until then the engine
        owns the socket. `connect`: None for an idle connection; else `sock` is a new one
        whose non-blocking connect may be under way, and the seconds it has to be
        established (`timeout connect`; 0 or less: the engine's longest). Returns the
        credit's id, or None when the engine has no room for it now (nothing was lent:
        refuse())."""
        if self._closing:
            return None
        credit_id = self._next
        connect_ms = 0 if connect is None else ms(connect) if connect > 0 else 0xFFFFFFFF
        if not self._h.credit(head_id, cli.fileno(), credit_id, sock.fileno(), self.gen(sock), connect_ms):
            return None
        self._next += 1
        self._cbs[credit_id] = done
        if not self._wake_due:
            self._wake_due = True
            self.loop.call_soon(self._wake)
        return credit_id

    def tls_context(self, index: int, ctx: binding.TlsContext) -> None:
        """Give the engine TLS context `index` (< binding.TLS_CONTEXTS), which jobs name with
        tls_ctx=index + 1; `ctx` must outlive the engine (engine.h spl_engine_tls_ctx).

        Raises:
            EngineError: a bad or taken index, or a closed engine or context.
        """
        self._h.tls_ctx(index, ctx)

    def tls_info(self, sock) -> binding.TlsInfo | None:
        """What the handshake of `sock`'s TLS session settled, once the job that completed it
        was reaped; None without a session or before (engine.h spl_tls_info)."""
        return self._h.tls_info(sock.fileno(), self.gen(sock))

    def express_rules(self, index: int, edits: tuple) -> bool:
        """Have the engine make the request rules `edits` (http/rules.py plain_edits()) on
        each request of express backend `index`, before any job names it (engine.h
        spl_xrules). False when they do not fit the engine's program (nothing was set)."""
        program = xrules_program(edits)
        if program is None:
            return False
        self._h.xrules(index, program)
        return True

    def refuse(self, head_id: int, cli) -> None:
        """No credit for the express request of head job `head_id` (reading client socket
        `cli`): its head ends the job as usual and comes to its callback."""
        if self._closed or cli.fileno() < 0:
            return
        if not self._h.credit(head_id, cli.fileno(), 0, -1, 0):  # the queue is full: soon again
            self.loop.call_later(0.001, self.refuse, head_id, cli)
            return
        if not self._wake_due:
            self._wake_due = True
            self.loop.call_soon(self._wake)

    def waiting(self, job_id: int):
        """The callback waiting for job `job_id`'s completion, or None."""
        return self._cbs.get(job_id)

    def takes_handover(self, job_id: int) -> bool:
        """Whether the callback waiting for job `job_id`'s completion takes a request the
        express lane hands over (its class says TAKES_HANDOVER: an HTTP session); not a
        cancel's callback, nor a job nobody waits for."""
        return getattr(self._cbs.get(job_id), "TAKES_HANDOVER", False)

    def then(self, job: tuple, done) -> None:
        """Call `done(Completion)` when the job of the pair `job` = (id, future or None)
        completes, at once if it has: a chained job of a submit() with `done=` (future
        None), or any job whose future nobody awaits (the future is dropped)."""
        c = self._claim(job)
        if c is not None:
            done(c)
        else:
            self._cbs[job[0]] = done

    def _claim(self, job: tuple) -> Completion | None:
        """Move the job of the pair `job` from the future form to the callback form: its
        completion if it is known already (then the job is over), else None."""
        job_id, fut = job
        c = self._early.pop(job_id, None)
        if c is not None:
            return c
        if fut is not None:
            if fut.done():
                if fut.cancelled() or fut.exception() is not None:
                    return Completion(JobEnd.CANCELLED, 0, 0, errno.ECANCELED, "dst")
                return fut.result()
            if self._futs.pop(job_id, None) is fut:
                self._cbs[job_id] = _UNCLAIMED  # in flight: its completion goes to _cbs now
        return None

    def cancel(self, job: tuple, done) -> None:
        """Stop the job of the pair `job` = (id, future or None), in callback, unclaimed
        chained or future form; `done(Completion)` is called instead of its callback once
        the engine has let go of its fds (at once when it already had, or when the job is
        unknown)."""
        c = self._claim(job)
        job_id = job[0]
        if c is None and job_id not in self._cbs:
            c = Completion(JobEnd.CANCELLED, 0, 0, errno.ECANCELED, "dst")  # over and reaped, or unknown
        if c is not None:
            done(c)
            return
        self._cbs[job_id] = done
        if self._closed:
            self._cbs.pop(job_id, None)
            done(Completion(JobEnd.CANCELLED, 0, 0, errno.ECANCELED, "dst"))
            return
        if not self._cancel_job(job_id):  # the queue is full: reap, then try again soon
            self._on_eventfd()
            if job_id in self._cbs:
                self.loop.call_later(0.001, self._retry_cancel, job_id)

    def _retry_cancel(self, job_id: int) -> None:
        if job_id in self._cbs and not self._closed and not self._cancel_job(job_id):
            self._on_eventfd()
            if job_id in self._cbs:
                self.loop.call_later(0.001, self._retry_cancel, job_id)

    def submit(self, src_fd: int, dst_fd: int, max_bytes: int, flags: int, src_idle_ms: int = 0,
               dst_idle_ms: int = 0, out: bytes | None = None, head_fd: int = -1, head_first_ms: int = 0,
               head_ms: int = 0, head_limit: int = 0, src_gen: int = 0,
               dst_gen: int = 0, done=None, relay: tuple | None = None,
               tls_ctx: int = 0) -> tuple[int, asyncio.Future | None]:
        """Queue one job in the C form (struct spl_job: fds, byte count, SPL_JOB_* flags,
        times in ms; generations from gen()) and return (job id, future of its Completion);
        give both to wait(). The engine is woken once per loop iteration, for every job
        queued in it. With binding.JOB_THEN_HEAD in `flags`, the job goes on as the head job
        of the id after its own (head_* describe that head, read from dst_fd): its
        (id, future) pair is self.chained, to be given to wait() or abandon(). With
        binding.JOB_RELAY in `flags` (and `relay`, binding.EngineHandle.submit's relay
        fields), the id after its own is the client's next-head job the same way, which
        only runs when the engine relayed the response (Completion.relayed). `tls_ctx`
        (1 + an index given to tls_context()): head_fd speaks TLS with that context, its
        session kept while its generation lasts; binding.JOB_TLS_CLOSE ends one.

        With `done` (a callable), no future is made: done(Completion) is called from the
        reap of the completion (the future in the pair is None); a chained job's completion
        then waits for then() (or cancel()).

        Raises:
            EngineBusy: maxjobs in flight, or no out buffer free.
            EngineError: the job was refused (EINVAL), or `out` is larger than bufsize.
        """
        if self._closing:
            raise EngineBusy(errno.ESHUTDOWN, "the engine is closing")
        job_id = self._next
        chained = flags & _CHAINS
        self._next += 2 if chained else 1
        out_buf, out_len = -1, 0
        if out is not None or flags & binding.JOB_COPY:
            if not self._free_out:
                raise EngineBusy(errno.EAGAIN, "no engine out buffer free")
            if out is not None and len(out) > self.bufsize:
                raise EngineError(errno.EMSGSIZE, "head larger than the engine's bufsize")
            out_buf = self._free_out.pop()
            if len(self._free_out) < self._out_low:
                self._out_low = len(self._free_out)
                if self._trim is None:
                    self._trim = self.loop.call_later(TRIM_AFTER, self._trim_outs)
            if out:
                out_len = len(out)
                self._h.put_out(out_buf, out)
        try:
            if relay is None and not tls_ctx:
                self._h.submit(job_id, src_fd, dst_fd, max_bytes, flags, src_idle_ms, dst_idle_ms, out_buf,
                               out_len, head_fd, head_first_ms, head_ms, head_limit, src_gen, dst_gen,
                               job_id + 1 if chained else 0)
            else:
                self._h.submit(job_id, src_fd, dst_fd, max_bytes, flags, src_idle_ms, dst_idle_ms, out_buf,
                               out_len, head_fd, head_first_ms, head_ms, head_limit, src_gen, dst_gen,
                               job_id + 1 if chained else 0, relay or binding.NO_RELAY, tls_ctx)
        except BaseException:
            if out_buf >= 0:
                self._free_out.append(out_buf)
            raise
        if out_buf >= 0:
            self._outs[job_id] = out_buf
        if not self._wake_due:
            # one wake-up for every job submitted in this loop iteration
            self._wake_due = True
            self.loop.call_soon(self._wake)
        if done is not None:
            self._cbs[job_id] = done
            if chained:
                nid = job_id + 1  # one int object for the key and the id the caller keeps
                self._cbs[nid] = _UNCLAIMED
                self.chained = (nid, None)
            return job_id, None
        fut = self.loop.create_future()
        self._futs[job_id] = fut
        if chained:
            nfut = self.loop.create_future()
            self._futs[job_id + 1] = nfut
            self.chained = (job_id + 1, nfut)
        return job_id, fut

    async def abandon(self, job_id: int, fut: asyncio.Future) -> None:
        """Stop a job nobody awaits (a chained head job left over) and wait until the
        engine has let go of its fds."""
        if fut.done():
            return
        if not self._cancel_job(job_id):
            self._on_eventfd()
            while not fut.done() and not self._cancel_job(job_id):
                try:
                    await asyncio.sleep(0.001)
                except asyncio.CancelledError:
                    pass  # the engine still owns the fds: go on until it let go
                self._on_eventfd()
        while not fut.done() and not self._closed:
            try:
                await asyncio.shield(fut)
            except asyncio.CancelledError:
                continue
            except OSError:
                return  # the engine was closed: it holds nothing any more

    def gen(self, sock) -> int:
        """The generation to name `sock` with in jobs (struct spl_job src_gen/dst_gen): the
        same for every job on this socket object, so the engine keeps it registered between
        jobs; a new one when its fd number belongs to another socket object than last time
        (the earlier one was closed). Kept by fd number, with the socket object itself, so
        identity, not a reused address, decides."""
        fd = sock.fileno()
        if fd < 0:
            return 0  # closed: a job on it fails at once (EBADF), no registration to keep
        socks = self._gen_socks
        if fd < len(socks):
            if socks[fd] is sock:
                return self._gen_vals[fd]
        else:
            grow = fd + 1 - len(socks) + 64
            socks.extend([None] * grow)
            self._gen_vals.extend([0] * grow)
        self._gen_next = g = self._gen_next % 0xFFFFFFFF + 1  # never 0: that means "this job only"
        socks[fd] = sock
        self._gen_vals[fd] = g
        return g

    def _gen_of(self, sock) -> int:
        """The generation gen() gave `sock`, 0 when it gave it none (or its fd number now
        names another socket object)."""
        fd = sock.fileno()
        return self._gen_vals[fd] if 0 <= fd < len(self._gen_socks) and self._gen_socks[fd] is sock else 0

    def relaying(self, job_id: int) -> bool:
        """True when the JOB_RELAY job `job_id` is sending its response on by itself now
        (for the runtime API: a scan of the engine's jobs)."""
        return not self._closed and self._h.relaying(job_id)

    def quiet(self, sock) -> bool:
        """True when the engine knows that `sock`, used by earlier jobs and by none now,
        holds nothing to read (no byte, no end of stream) since a read found it empty: its
        readiness cache, read without a syscall. False when it does not know (a socket no job
        has used, or one an event came for since): look with a peek instead."""
        g = self._gen_of(sock)
        return g != 0 and self._h.fd_quiet(sock.fileno(), g)

    async def wait(self, job_id: int, fut: asyncio.Future) -> Completion:
        """The Completion of a job from submit().

        Raises:
            asyncio.CancelledError: the awaiting task was cancelled; the job was stopped and
                its completion reaped first, so the fds are free again.
            OSError: ECANCELED, the engine was closed.
        """
        try:
            return await fut
        except asyncio.CancelledError:
            if self._closed or job_id not in self._futs:
                raise  # the completion was already reaped: the fds are free
            # `fut` went with the task: a new future takes the completion, once the engine
            # has stopped the job (until then the engine owns the fds)
            done = self.loop.create_future()
            self._futs[job_id] = done
            while not self._cancel_job(job_id):  # the queue is full: reap, then try again
                self._on_eventfd()
                if done.done():
                    raise
                try:
                    await asyncio.sleep(0.001)
                except asyncio.CancelledError:
                    pass  # cancelled again: the engine still owns the fds, go on
                if self._closed:
                    raise
            while not done.done():
                try:
                    await asyncio.shield(done)
                except asyncio.CancelledError:
                    continue
            raise

    async def splice(self, job: SpliceJob) -> Completion:
        """Run `job` on the engine thread and return its completion.

        Raises:
            EngineBusy: maxjobs in flight (or no out buffer free); move the bytes another way.
            EngineError: the job was refused (EINVAL).
            asyncio.CancelledError: the awaiting task was cancelled; the job was stopped and
                its completion reaped first, so the fds are free again.
        """
        flags = ((binding.JOB_TUNNEL if job.tunnel else 0) | (binding.JOB_SHUT_WR_ON_EOF if job.shut_wr_on_eof else 0)
                 | (binding.JOB_CHUNKED if job.chunked else 0) | (binding.JOB_COPY if job.copy else 0)
                 | (binding.JOB_SKIP_EMPTY if job.skip_empty else 0))
        head_fd = -1
        if job.head_fd is not None:
            head_fd = job.src_fd if job.head_fd == -1 else job.head_fd
        job_id, fut = self.submit(job.src_fd, job.dst_fd, UNTIL_EOF if job.max_bytes is None else job.max_bytes,
                                  flags, ms(job.src_idle), ms(job.dst_idle), job.out, head_fd,
                                  ms(job.head_first), ms(job.head_timeout), job.head_limit)
        return await self.wait(job_id, fut)

    def _wake(self) -> None:
        self._wake_due = False
        if self._closed:
            return
        if self.inline:
            self._poll()
        else:
            self._h.wake()

    def wake_now(self) -> None:
        """Wake the engine for the jobs submitted so far now, not at the end of this loop
        iteration (the scheduled wake-up then finds nothing new and costs nothing). Inline,
        the engine is turned now (its jobs start) and what it published is dispatched in
        the next iteration."""
        if self._closed:
            return
        if self.inline:
            more = self._poll_now()
            if more < 0:
                self._h.poll()  # raises the EngineError
            if more & _POLL_DONE:
                self._reap_due = True
            if more & EngineHandle.POLL_TIMERS and self._tick is None:
                self._tick = self.loop.call_later(EngineHandle.POLL_TICK, self._on_tick)
            if not self._wake_due:
                self._wake_due = True
                self.loop.call_soon(self._wake)
        else:
            self._h.wake()

    def stats(self) -> EngineStats:
        """The engine's counters (spliced bytes, calls, pipes, jobs); once closed, those it
        had when it closed (a worker prints its counters after its engine stopped)."""
        if self._closed:
            return self._final
        return self._h.stats()

    def _cancel_all(self) -> None:
        """Cancel every callback-form job in flight through the engine itself and dispatch
        the completions it posts, so that each job's owner learns where it really was (the
        bytes it had moved, a response it was relaying) rather than a bare CANCELLED. Jobs submitted by
        those owners meanwhile are refused (EngineBusy: closing). An engine thread is given
        CLOSE_GRACE seconds at most."""
        asked: set[int] = set()
        deadline = time.monotonic() + CLOSE_GRACE
        while time.monotonic() < deadline:
            ids = [i for i in self._cbs if i not in asked]
            if not self._cbs:
                return
            for job_id in ids:
                if not self._h.cancel(job_id):
                    break  # the queue is full: let the engine take it first
                asked.add(job_id)
            if self.inline:
                self._h.poll()
            else:
                self._h.wake()
                time.sleep(0.001)
            self._on_eventfd()

    def close(self) -> None:
        """Stop the engine (thread). Callback-form jobs in flight end CANCELLED as the
        engine reports them (their bytes, a relay under way); any left after CLOSE_GRACE with
        nothing known. Pending splice() calls and futures fail with ECANCELED."""
        if self._closed:
            return
        if not self._closing:
            self._closing = True
            self._cancel_all()
        self._final = self._h.stats()
        self._closed = True
        self.loop.remove_reader(self._h.pollfd if self.inline else self._h.eventfd)
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        if self._trim is not None:
            self._trim.cancel()
            self._trim = None
        self._h.close()
        for fut in self._futs.values():
            if not fut.done():
                fut.set_exception(OSError(errno.ECANCELED, "engine closed"))
        self._futs.clear()
        cbs, self._cbs = self._cbs, {}
        for cb in cbs.values():
            if cb is not _UNCLAIMED:
                try:
                    cb(Completion(JobEnd.CANCELLED, 0, 0, errno.ECANCELED, "dst"))
                except Exception:
                    log.exception("engine completion callback failed")
