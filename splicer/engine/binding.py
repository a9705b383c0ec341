"""The only importer of splicer._engine: ABI check, cdata handling, rc -> exception.

Everything outside this module sees PipePool, Pipe and Move objects. cffi releases the GIL
around every call into C (documented since cffi 0.3), so a long spl_pump() never blocks
other Python threads, only the event loop that called it (bounded by its `budget`).
"""
from __future__ import annotations

import errno as _errno
import os
import struct
from socket import AF_INET, inet_ntoa as _ntoa
from dataclasses import dataclass
from enum import IntEnum

from splicer.errors import EngineBusy, EngineError, TlsError

try:
    from splicer._engine import ffi, lib
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(
        "splicer's native engine is not built; install with `pip install .` (needs gcc and Python headers)"
    ) from exc

ABI = 16
if lib.SPL_ENGINE_ABI != ABI:  # pragma: no cover - only on a stale build
    raise ImportError(f"splicer._engine ABI {lib.SPL_ENGINE_ABI} does not match binding ABI {ABI}; rebuild")

_JOB = struct.Struct("=QiiQIIIIiiIIIIIIQiIIIIIQIIII")
"""struct spl_job as bytes: id, src_fd, dst_fd, max_bytes, flags, src_idle_ms, dst_idle_ms,
out_len, out_buf, head_fd, head_first_ms, head_ms, head_limit, src_gen, dst_gen,
relay_status_max, next_id, cli_fd, cli_gen, cli_idle_ms, next_first_ms, next_ms, relay_flags,
splice_min, xbe, xaddr, xmaxhdr, tls_ctx (native byte order, the offsets the compiler gave; checked below)."""
_JOB_FIELDS = ("id", "src_fd", "dst_fd", "max_bytes", "flags", "src_idle_ms", "dst_idle_ms", "out_len",
               "out_buf", "head_fd", "head_first_ms", "head_ms", "head_limit", "src_gen", "dst_gen",
               "relay_status_max", "next_id", "cli_fd", "cli_gen", "cli_idle_ms", "next_first_ms", "next_ms",
               "relay_flags", "splice_min", "xbe", "xaddr", "xmaxhdr", "tls_ctx")
_offsets = [struct.calcsize("=" + _JOB.format[1:i]) for i in range(1, len(_JOB_FIELDS) + 1)]
if _JOB.size != ffi.sizeof("struct spl_job") or _offsets != [ffi.offsetof("struct spl_job", f)
                                                              for f in _JOB_FIELDS]:  # pragma: no cover
    raise ImportError("struct spl_job's layout does not match binding._JOB; update both together")

_DONE = struct.Struct("=QQQiIIIiIIIIIIIIIQ")
"""struct spl_done as bytes: id, bytes_fwd, bytes_rev, res, how, side, phase, head_buf,
head_len, head_info, head_more, relayed, relay_flags, relay_ms, xkind, xstatus, xreq, xother
(checked below): a batch is
unpacked in one call, not field by field."""
_NO_RELAY = (0, -1, 0, 0, 0, 0, 0, 0)
"""struct spl_job's relay fields of a job without JOB_RELAY."""
NO_RELAY = _NO_RELAY
_NO_EXPRESS = (0, 0, 0)
"""struct spl_job's xbe, xaddr and xmaxhdr of a job that does not arm the express lane
(a `relay` tuple of 8 fields)."""
_DONE_FIELDS = ("id", "bytes_fwd", "bytes_rev", "res", "how", "side", "phase", "head_buf", "head_len",
                "head_info", "head_more", "relayed", "relay_flags", "relay_ms", "xkind", "xstatus", "xreq", "xother")
_offsets = [struct.calcsize("=" + _DONE.format[1:i]) for i in range(1, len(_DONE_FIELDS) + 1)]
if _DONE.size != ffi.sizeof("struct spl_done") or _offsets != [ffi.offsetof("struct spl_done", f)
                                                                for f in _DONE_FIELDS]:  # pragma: no cover
    raise ImportError("struct spl_done's layout does not match binding._DONE; update both together")

UNTIL_EOF = 2**64 - 1
"""`max_in` value meaning "until the source reaches end of stream"."""


class Stop(IntEnum):
    """Why a pump returned (C enum spl_stop)."""

    DONE = lib.SPL_STOP_DONE
    SRC_AGAIN = lib.SPL_STOP_SRC_AGAIN
    DST_AGAIN = lib.SPL_STOP_DST_AGAIN
    EOF = lib.SPL_STOP_EOF
    BUDGET = lib.SPL_STOP_BUDGET
    SRC_ERROR = lib.SPL_STOP_SRC_ERROR
    DST_ERROR = lib.SPL_STOP_DST_ERROR


@dataclass(frozen=True, slots=True)
class Move:
    """Result of one pump call.

    Attributes:
        bytes_in: bytes read from the source into the pipe.
        bytes_out: bytes written from the pipe to the destination (the only bytes "sent").
        how: why it stopped.
        err: positive errno for SRC_ERROR/DST_ERROR, else 0.
    """

    bytes_in: int
    bytes_out: int
    how: Stop
    err: int


@dataclass(frozen=True, slots=True)
class PoolStats:
    """Counters of one pipe pool (haproxy `show info`: PipesUsed, PipesFree, TotalSplicedBytesOut)."""

    spliced_bytes: int
    splice_calls: int
    eagain_waits: int
    pipes_used: int
    pipes_free: int
    pipes_max: int
    pipe_size: int
    pipes_killed: int
    pipe_failures: int


H1_OK, H1_REFUSE, H1_UNSURE = lib.SPL_H1_OK, lib.SPL_H1_REFUSE, lib.SPL_H1_UNSURE
H1_HDR_WORDS, H1_FIELD_WORDS = lib.SPL_H1_HDR_WORDS, lib.SPL_H1_FIELD_WORDS
_h1_idx = ffi.new("uint32_t[]", lib.SPL_H1_INDEX_WORDS)


def h1_index(head: bytes) -> list[int]:
    """The C tokenizer's index of a whole head (spl_h1_parse, native/src/h1.c), as the
    engine hands it with a head it read: word 0 is H1_OK, H1_REFUSE or H1_UNSURE; with H1_OK
    the list is 8 + 5 x fields long (layout: engine.h), else 8 words.

    Args:
        head: the head's bytes, through the empty line that ends it.
    """
    ix = _h1_idx
    rc = lib.spl_h1_parse(head, len(head), ix)
    if rc < 0:  # pragma: no cover - only for NULL arguments
        _raise(rc, "spl_h1_parse")
    return ffi.unpack(ix, H1_HDR_WORDS + (H1_FIELD_WORDS * ix[2] if rc == H1_OK else 0))


def h1_relay(head: bytes, max_status: int, no_body: bool, connection: bytes = b"") -> tuple[bytes, int] | None:
    """What the engine does with the response head `head` of a JOB_RELAY job
    (spl_h1_relay, native/src/h1.c): (the head as it forwards it, the body's bytes), or None
    when it leaves the head to Python. Exposed for the tests that hold it to
    splicer/http/h1.py forwarded_response().

    Args:
        max_status: the highest status relayed (struct spl_job.relay_status_max).
        no_body: the request was HEAD (SPL_RELAY_NO_BODY).
        connection: the Connection field added: b"close" (SPL_RELAY_CLOSE_CLIENT),
            b"keep-alive" (SPL_RELAY_KEEP_ALIVE) or b"" (none).
    """
    ix = _h1_idx
    lib.spl_h1_parse(head, len(head), ix)
    out = ffi.new("char[]", len(head) + 64)
    body = ffi.new("uint64_t *")
    flags = (RELAY_NO_BODY if no_body else 0) | _RELAY_CONNECTION[connection]
    n = lib.spl_h1_relay(head, len(head), ix, max_status, flags, out, len(head) + 64, body)
    if n < 0:  # pragma: no cover - only for NULL arguments
        _raise(n, "spl_h1_relay")
    return (ffi.unpack(out, n), body[0]) if n else None


def xhead(head: bytes, program: bytes = b"", addr: int = 0, xff: bool = False, maxhdr: int = 101) -> bytes | None:
    """What the engine sends for the request head `head` on the express lane (spl_xhead_ok,
    spl_xhead_write, native/src/xhead.c) of a client of IPv4 address `addr` (an int, host
    order): the head as forwarded, with the request rules `program` (xrules_program()) made
    on it and, when `xff`, X-Forwarded-For; None when the head does not take the lane.

    Raises:
        EngineError: a bad program (EINVAL).
    """
    rc = lib.spl_xrules_check(program, len(program))
    if rc != 0:
        _raise(rc, "spl_xrules_check")
    ix = _h1_idx
    lib.spl_h1_parse(head, len(head), ix)
    no_body, body, close = ffi.new("int *"), ffi.new("uint64_t *"), ffi.new("int *")
    if not lib.spl_xhead_ok(head, ix, maxhdr, no_body, body, close):
        return None
    cap = 2 * len(head) + len(program) * 4 + 64
    out = ffi.new("char[]", cap)
    n = lib.spl_xhead_write(head, len(head), ix, program, len(program), xff, addr, out, cap)
    return ffi.unpack(out, n) if n else None


def xrules_program(edits: tuple) -> bytes | None:
    """The engine's program (engine.h spl_xrules) of an express backend's request rules, or
    None when they do not fit it (too long, too many added fields, a name or literal too
    long, an occurrence beyond -128..127).

    Args:
        edits: http/rules.py plain_edits(): ("del", name) and ("add", name, parts), parts
            each bytes, "src" or ("hdr", name, occ).
    """
    out = bytearray()
    adds = 0
    for edit in edits:
        name = edit[1]
        if not 0 < len(name) < 256:
            return None
        if edit[0] == "del":
            out += bytes((lib.SPL_XOP_DEL, len(name))) + name
            continue
        adds += 1
        parts = edit[2]
        if len(parts) > 255:
            return None
        out += bytes((lib.SPL_XOP_ADD, len(name))) + name + bytes((len(parts),))
        for part in parts:
            if isinstance(part, bytes):
                if len(part) > 0xFFFF:
                    return None
                out += struct.pack("<BH", lib.SPL_XPART_LIT, len(part)) + part
            elif part == "src":
                out.append(lib.SPL_XPART_SRC)
            else:
                _, field, occ = part
                if not -128 <= occ <= 127 or not 0 < len(field) < 256:
                    return None
                out += struct.pack("<BbB", lib.SPL_XPART_HDR, occ, len(field)) + field
    if adds > lib.SPL_XRULES_ADDS or len(out) > lib.SPL_XRULES_MAX:
        return None
    return bytes(out)


def _raise(rc: int, what: str) -> None:
    if rc == -_errno.EAGAIN:
        raise EngineBusy(_errno.EAGAIN, f"{what}: no pipe free")
    raise EngineError(-rc, f"{what}: {os.strerror(-rc)}")


class Pipe:
    """One kernel pipe lent by a PipePool; give it back with PipePool.put().

    Attributes:
        data: bytes currently held in the pipe (owed to the destination).
        size: capacity in bytes.
    """

    __slots__ = ("_c", "_pool", "_mv")

    def __init__(self, cpipe, pool: "PipePool") -> None:
        self._c = cpipe
        self._pool = pool
        self._mv = ffi.new("struct spl_move *")

    @property
    def data(self) -> int:
        """Bytes held in the pipe now."""
        return self._c.data

    @property
    def size(self) -> int:
        """The pipe's capacity in bytes (as F_SETPIPE_SZ granted it)."""
        return self._c.size

    def pump(self, src: int, dst: int, max_in: int = UNTIL_EOF, budget: int = 0) -> Move:
        """Splice up to `max_in` bytes src -> pipe -> dst, flushing what the pipe holds first.

        Args:
            src: fd of a non-blocking socket to read from.
            dst: fd of a non-blocking socket to write to.
            max_in: bytes still to read from src (UNTIL_EOF for "until end of stream").
            budget: stop after writing this many bytes (0 = no limit), for loop fairness.

        Returns:
            Move. EOF is reported only once the pipe is empty (haproxy #2505).

        Raises:
            EngineError: bad arguments (a closed pipe or negative fd).
        """
        if self._c is None:
            raise EngineError(_errno.EINVAL, "spl_pump: the pipe was given back to its pool")
        mv = self._mv
        rc = lib.spl_pump(self._pool._c, self._c, src, dst, max_in, budget, mv)
        if rc != 0:
            _raise(rc, "spl_pump")
        return Move(mv.bytes_in, mv.bytes_out, Stop(mv.how), mv.err)


class PipePool:
    """A bounded pool of kernel pipes (haproxy `tune.pipesize`, `tune.maxpipes`).

    Args:
        pipesize: bytes per pipe, set with F_SETPIPE_SZ; 0 = kernel default (64 KiB).
        maxpipes: pipes at most; beyond that get() raises EngineBusy and callers copy.

    Raises:
        EngineError: the pool could not be allocated.
    """

    def __init__(self, pipesize: int = 0, maxpipes: int = 1024) -> None:
        out = ffi.new("struct spl_pool **")
        rc = lib.spl_pool_new(pipesize, maxpipes, out)
        if rc != 0:
            _raise(rc, "spl_pool_new")
        self._c = out[0]
        self._stats = ffi.new("struct spl_stats *")

    def get(self) -> Pipe:
        """Lend an empty pipe.

        Raises:
            EngineBusy: the pool is at maxpipes (copy in user space instead).
            EngineError: pipe2() failed (e.g. EMFILE).
        """
        out = ffi.new("struct spl_pipe **")
        rc = lib.spl_pipe_get(self._c, out)
        if rc != 0:
            _raise(rc, "spl_pipe_get")
        return Pipe(out[0], self)

    def put(self, pipe: Pipe) -> None:
        """Return a pipe. One still holding data is closed, never lent again (haproxy put_pipe)."""
        if pipe._c is not None:
            lib.spl_pipe_put(self._c, pipe._c)
            pipe._c = None

    def stats(self) -> PoolStats:
        """Current counters of this pool."""
        s = self._stats
        lib.spl_pool_stats(self._c, s)
        return PoolStats(s.spliced_bytes, s.splice_calls, s.eagain_waits, s.pipes_used, s.pipes_free,
                         s.pipes_max, s.pipe_size, s.pipes_killed, s.pipe_failures)

    def close(self) -> None:
        """Close every pipe and free the pool; the pool is unusable afterwards."""
        if self._c is not None:
            lib.spl_pool_free(self._c)
            self._c = None


@dataclass(frozen=True, slots=True)
class EngineStats:
    """Counters of one engine (C struct spl_engine_stats), read without stopping it.

    Byte counts are bytes; pipes_* are pipe counts; jobs_* and timeouts are job counts.
    """

    spliced_bytes: int
    splice_calls: int
    eagain_waits: int
    jobs_done: int
    jobs_nopipe: int
    timeouts: int
    jobs_active: int
    pipes_used: int
    pipes_free: int
    pipes_max: int
    pipe_size: int
    pipes_killed: int


class EngineHandle:
    """The C engine (spl_engine_*) with cdata kept inside: ints in, tuples out.

    Args:
        cpu: CPU to pin the engine thread to (-1: not pinned).
        pipesize: bytes per pipe (tune.pipesize; 0 = kernel default).
        maxpipes: pipes at most (tune.maxpipes).
        maxjobs: jobs in flight at most; submit() raises EngineBusy beyond.
        bufsize: bytes of each head and out buffer (tune.bufsize; a head read by the engine
            is at most this long).
        nbufs: out buffers and head buffers, each (0: no job may send or read a head).
        inline: no engine thread: the caller's loop turns the engine with poll() whenever
            `pollfd` is readable (SPL_ENGINE_INLINE); `cpu` is then not used.

    Raises:
        EngineError: the engine could not start (EINVAL for a bad CPU, EMFILE...).
    """

    REAP_BATCH = 64

    POLL_AGAIN, POLL_TIMERS, POLL_DONE = lib.SPL_POLL_AGAIN, lib.SPL_POLL_TIMERS, lib.SPL_POLL_DONE
    POLL_TICK = lib.SPL_POLL_TICK_MS / 1000

    def __init__(self, cpu: int, pipesize: int, maxpipes: int, maxjobs: int, bufsize: int = 0,
                 nbufs: int = 0, inline: bool = False) -> None:
        cfg = ffi.new("struct spl_cfg *", {"cpu": cpu, "pipesize": pipesize, "maxpipes": maxpipes,
                                           "maxjobs": maxjobs, "bufsize": bufsize, "nbufs": nbufs,
                                           "flags": lib.SPL_ENGINE_INLINE if inline else 0})
        out = ffi.new("struct spl_engine **")
        rc = lib.spl_engine_new(cfg, out)
        if rc != 0:
            _raise(rc, "spl_engine_new")
        self._e = out[0]
        self.bufsize = bufsize
        self.nbufs = nbufs
        self._job = ffi.new("struct spl_job *")
        self._jobbuf = ffi.buffer(self._job)
        self._done = ffi.new("struct spl_done[]", self.REAP_BATCH)
        self._donebuf = ffi.buffer(self._done)
        self._stats = ffi.new("struct spl_engine_stats *")
        self.eventfd = lib.spl_engine_eventfd(self._e)
        self.pollfd = lib.spl_engine_pollfd(self._e)
        self.inline = inline
        # inline, the loop calls this on every event of the engine's sockets: the C function
        # itself, bound to the engine, so that an event that completes nothing costs one call
        self.poll_now = (lambda e=self._e, f=lib.spl_engine_poll: f(e)) if inline else None
        self._obufs = [lib.spl_engine_obuf(self._e, i) for i in range(nbufs)]
        self._hbufs = [lib.spl_engine_hbuf(self._e, i) for i in range(nbufs)]
        self._hidx = [lib.spl_engine_hidx(self._e, i) for i in range(nbufs)]

    def submit(self, job_id: int, src_fd: int, dst_fd: int, max_bytes: int, flags: int,
               src_idle_ms: int, dst_idle_ms: int, out_buf: int = -1, out_len: int = 0,
               head_fd: int = -1, head_first_ms: int = 0, head_ms: int = 0, head_limit: int = 0,
               src_gen: int = 0, dst_gen: int = 0, next_id: int = 0, relay: tuple = _NO_RELAY,
               tls_ctx: int = 0) -> None:
        """Queue a job (see struct spl_job; out_buf must hold out_len bytes, put_out()),
        without waking the engine: call wake() once after a batch of submits. `relay`: with
        JOB_RELAY, the job's (relay_status_max, cli_fd, cli_gen, cli_idle_ms, next_first_ms,
        next_ms, relay_flags, splice_min), optionally followed by (xbe, xaddr, xmaxhdr, 0)
        for RELAY_EXPRESS (the fourth is not read). `tls_ctx`: 0, or 1 + the index of a
        context given with tls_ctx(): head_fd is the server side of a TLS session with it.

        Raises:
            EngineBusy: maxjobs already in flight.
            EngineError: invalid job (EINVAL).
        """
        # one packed copy into the struct rather than 17 cffi field stores (the hot path:
        # two jobs per request); _JOB's layout is checked against the cdef at import
        try:
            _JOB.pack_into(self._jobbuf, 0, job_id, src_fd, dst_fd, max_bytes, flags, src_idle_ms,
                           dst_idle_ms, out_len, out_buf, head_fd, head_first_ms, head_ms, head_limit,
                           src_gen, dst_gen, relay[0], next_id, *relay[1:8], *(relay[8:11] or _NO_EXPRESS),
                           tls_ctx)
        except struct.error as exc:  # a value out of its field's range
            raise EngineError(_errno.EINVAL, f"spl_submit: {exc}") from None
        rc = lib.spl_push(self._e, self._job)
        if rc != 0:
            _raise(rc, "spl_submit")

    def wake(self) -> None:
        """Wake the engine for the jobs queued since the last wake (no syscall while it is busy)."""
        if self._e is not None:
            lib.spl_wake(self._e)

    def poll(self) -> int:
        """Inline mode: one non-blocking turn of the engine (spl_engine_poll): queued jobs
        started, ready socket events handled, timeouts due fired, completions published.
        Returns POLL_AGAIN / POLL_TIMERS / POLL_DONE bits (see engine.h).

        Raises:
            EngineError: the engine is closed, in thread mode (EINVAL), or its epoll failed.
        """
        if self._e is None:
            raise EngineError(_errno.EBADF, "spl_engine_poll: the engine is closed")
        rc = lib.spl_engine_poll(self._e)
        if rc < 0:
            _raise(rc, "spl_engine_poll")
        return rc

    def put_out(self, idx: int, data: bytes) -> None:
        """Copy `data` (at most bufsize bytes) into out buffer `idx` for the next job naming it."""
        ffi.memmove(self._obufs[idx], data, len(data))

    def drop_out(self, idx: int) -> None:
        """Give the pages of out buffer `idx`, which no job names, back to the kernel
        (spl_engine_obuf_drop: madvise MADV_DONTNEED); it reads as zeros when next used."""
        lib.spl_engine_obuf_drop(self._e, idx)

    def fd_quiet(self, fd: int, gen: int) -> bool:
        """True when the engine knows socket `fd` of generation `gen` (registered by an
        earlier job, used by none now) holds nothing to read: spl_fd_quiet(), no syscall."""
        return self._e is not None and lib.spl_fd_quiet(self._e, fd, gen) == 1

    def relaying(self, job_id: int) -> bool:
        """True when the JOB_RELAY job `job_id` is sending its response on by itself now
        (spl_job_relaying: a scan of the jobs, for the runtime API)."""
        return self._e is not None and lib.spl_job_relaying(self._e, job_id) == 1

    def credit(self, head_id: int, cli_fd: int, credit_id: int, fd: int, gen: int, connect_ms: int = 0) -> bool:
        """Lend the engine the server connection `fd` (generation `gen`) as credit
        `credit_id` for the express request head job `head_id` (reading client socket
        `cli_fd`) asked one for (X_WANT), or refuse it with fd -1 (spl_credit; wake() after a
        batch). `connect_ms` > 0: `fd` is a new connection whose non-blocking connect may be
        under way, to be established within that many ms; 0: an idle one. False when the
        engine has no room for it now.

        Raises:
            EngineError: a bad argument (EINVAL) or a closed engine.
        """
        if self._e is None:
            raise EngineError(_errno.EBADF, "spl_credit: the engine is closed")
        rc = lib.spl_credit(self._e, head_id, cli_fd, credit_id, fd, gen, connect_ms)
        if rc == -_errno.EAGAIN:
            return False
        if rc != 0:
            _raise(rc, "spl_credit")
        return True

    def xrules(self, xbe: int, program: bytes) -> None:
        """Give express backend `xbe` the request rules `program` (xrules_program(); b"":
        none), before any job names it (spl_xrules).

        Raises:
            EngineError: a bad program or backend (EINVAL), or a closed engine.
        """
        if self._e is None:
            raise EngineError(_errno.EBADF, "spl_xrules: the engine is closed")
        rc = lib.spl_xrules(self._e, xbe, program, len(program))
        if rc != 0:
            _raise(rc, "spl_xrules")

    def tls_ctx(self, idx: int, ctx: "TlsContext") -> None:
        """Give the engine TLS context `idx` (jobs name it with tls_ctx=idx + 1), before any
        job names it; `ctx` must outlive the engine (spl_engine_tls_ctx).

        Raises:
            EngineError: a bad index (EINVAL), one set already (EBUSY), a closed engine or
                context (EBADF).
        """
        if self._e is None or ctx._c is None:
            raise EngineError(_errno.EBADF, "spl_engine_tls_ctx: the engine or the context is closed")
        rc = lib.spl_engine_tls_ctx(self._e, idx, ctx._c)
        if rc != 0:
            _raise(rc, "spl_engine_tls_ctx")

    def tls_info(self, fd: int, gen: int) -> "TlsInfo | None":
        """What the handshake of the TLS session on `fd` (generation `gen`) settled, once the
        job that completed it was reaped; None: no session, or no handshake through yet
        (spl_tls_info)."""
        out = ffi.new("struct spl_tls_info *")
        if self._e is None or lib.spl_tls_info(self._e, fd, gen, out) != 0:
            return None
        return TlsInfo({0x0303: "TLSv1.2", 0x0304: "TLSv1.3"}.get(out.version, hex(out.version)),
                       bool(out.reused), ffi.string(out.cipher).decode("ascii", "replace"),
                       ffi.string(out.sni).decode("ascii", "replace"),
                       ffi.string(out.alpn).decode("ascii", "replace"), bool(out.cert_used), out.verify,
                       ffi.string(out.c_s_dn).decode("utf-8", "replace"),
                       ffi.string(out.c_i_dn).decode("utf-8", "replace"),
                       bytes(ffi.buffer(out.c_sha1, 20)) if out.cert_used else b"")

    def cancel(self, job_id: int) -> bool:
        """Ask the engine to stop a job; False when its queue is full (reap, then retry).

        Raises:
            EngineError: the engine is closed, or another failure than a full queue.
        """
        if self._e is None:
            raise EngineError(_errno.EBADF, "spl_cancel: the engine is closed")
        rc = lib.spl_cancel(self._e, job_id)
        if rc == -_errno.EAGAIN:
            return False
        if rc != 0:
            _raise(rc, "spl_cancel")
        return True

    def reap(self) -> list[tuple]:
        """Every completion ready now, as (id, bytes_fwd, bytes_rev, res, how, side, phase,
        head, head_info, index, head_more, relayed, relay_flags, relay_ms) tuples; `head` is
        the bytes the job's head phase read (None when it read none), `index` the engine's
        tokenization of a whole head as a list of ints (spl_h1_parse; splicer.http.h1.INDEX_OK)
        when the tokenizer accepted it, else None, `head_more` the bytes the socket held behind
        the head; a JOB_RELAY job's `relayed` the bytes of the response head it forwarded (0:
        none; then `head` is that response head), `relay_flags` RELAY_SPLICED, `relay_ms` the
        ms from that head's end to the completion; then the express lane's `xkind` (X_*: 0
        for a job's completion), `xstatus`, `xreq` and `xother` (struct spl_done); a
        credit's X_DONE under RELAY_XLOG has its request head as `head`, without index. Each
        head buffer is copied out and given back to the engine here."""
        out = []
        d = self._done
        e = self._e
        size = _DONE.size
        while True:
            n = lib.spl_reap(e, d, self.REAP_BATCH)
            for job_id, fwd, rev, res, how, side, phase, hb, hlen, info, more, relayed, rflags, rms, xkind, \
                    xstatus, xreq, xother in _DONE.iter_unpack(self._donebuf[:n * size]):
                head = index = None
                if hb >= 0:
                    head = ffi.unpack(self._hbufs[hb], hlen)
                    ix = self._hidx[hb]
                    if ix[0] == H1_OK and xkind != X_DONE:  # (an X_DONE's request head: its line only)
                        index = ffi.unpack(ix, H1_HDR_WORDS + H1_FIELD_WORDS * ix[2])
                    lib.spl_hbuf_release(e, hb)
                out.append((job_id, fwd, rev, res, how, side, phase, head, info, index, more, relayed, rflags, rms,
                            xkind, xstatus, xreq, xother))
            if n < self.REAP_BATCH:
                return out

    def stats(self) -> EngineStats:
        """The engine's counters now."""
        s = self._stats
        lib.spl_engine_stats(self._e, s)
        return EngineStats(s.spliced_bytes, s.splice_calls, s.eagain_waits, s.jobs_done, s.jobs_nopipe,
                           s.timeouts, s.jobs_active, s.pipes_used, s.pipes_free, s.pipes_max, s.pipe_size,
                           s.pipes_killed)

    def close(self) -> None:
        """Stop and join the engine thread and free it (jobs in flight are dropped)."""
        if self._e is not None:
            lib.spl_engine_free(self._e)
            self._e = None


class ChunkLines:
    """The C chunked-framing checker (native/src/chunked.c, spl_chunk_line), one per body.

    The engine uses it for SPL_JOB_CHUNKED jobs; Python uses it only in tests, to prove
    that it and splicer/http/chunked.py's ChunkedReader agree line by line.
    """

    SIZE, DATA, CRLF, TRAILER, END = (lib.SPL_CHUNK_SIZE, lib.SPL_CHUNK_DATA, lib.SPL_CHUNK_CRLF,
                                      lib.SPL_CHUNK_TRAILER, lib.SPL_CHUNK_END)

    def __init__(self) -> None:
        self._c = ffi.new("struct spl_chunk *")

    @property
    def state(self) -> int:
        """Where the reader is (SIZE, DATA, CRLF, TRAILER or END)."""
        return self._c.state

    @property
    def data(self) -> int:
        """In state DATA: the chunk's size, bytes."""
        return self._c.data

    def feed(self, line: bytes) -> bool:
        """Feed one line through its first LF; False for a framing error (-EPROTO).

        Raises:
            EngineError: fed in state DATA or END (-EINVAL).
        """
        rc = lib.spl_chunk_line(self._c, line, len(line))
        if rc == -_errno.EPROTO:
            return False
        if rc != 0:
            _raise(rc, "spl_chunk_line")
        return True

    def data_done(self) -> None:
        """The chunk's data was moved: a CRLF line comes next."""
        self._c.data = 0
        self._c.state = lib.SPL_CHUNK_CRLF


JOB_TUNNEL = lib.SPL_JOB_TUNNEL
JOB_SHUT_WR_ON_EOF = lib.SPL_JOB_SHUT_WR_ON_EOF
JOB_CHUNKED = lib.SPL_JOB_CHUNKED
JOB_COPY = lib.SPL_JOB_COPY
JOB_SKIP_EMPTY = lib.SPL_JOB_SKIP_EMPTY
JOB_THEN_HEAD = lib.SPL_JOB_THEN_HEAD
JOB_RELAY = lib.SPL_JOB_RELAY
JOB_TLS_CLOSE = lib.SPL_JOB_TLS_CLOSE
JOB_DISCARD = lib.SPL_JOB_DISCARD
TLS_CONTEXTS = lib.SPL_TLS_CTXS
"""TLS contexts one engine holds (tls_ctx indexes 0 .. TLS_CONTEXTS - 1)."""
TLS = bool(lib.spl_tls_available())
"""True when the engine was built with OpenSSL (native/src/tls.c); False: every TLS call fails."""


@dataclass(frozen=True, slots=True)
class TlsInfo:
    """What a TLS session's handshake settled (C struct spl_tls_info), for haproxy's fetches:
    version (ssl_fc_protocol: "TLSv1.2", "TLSv1.3"), reused (ssl_fc_session_reused), cipher
    (ssl_fc_cipher), sni (ssl_fc_sni, "" = none), alpn (ssl_fc_alpn), cert_used
    (ssl_c_used), verify (ssl_c_verify: the X509_V_* result, 0 = OK), c_s_dn / c_i_dn
    (ssl_c_s_dn / ssl_c_i_dn), c_sha1 (ssl_c_sha1: 20 bytes, b"" without a certificate)."""

    version: str
    reused: bool
    cipher: str
    sni: str
    alpn: str
    cert_used: bool
    verify: int
    c_s_dn: str
    c_i_dn: str
    c_sha1: bytes


class TlsContext:
    """A server-side TLS context of the engine (OpenSSL's SSL_CTX, native/src/tls.c): one
    certificate chain and its private key from PEM files, checked to match (haproxy's `crt`:
    both in one file when `key_file` is None). TLS 1.2 at least, no renegotiation.

    Raises:
        TlsError: a file missing, unreadable or not PEM, a key that does not match, or an
            engine built without OpenSSL; the message names the file and OpenSSL's reason.
    """

    def __init__(self, cert_file: str, key_file: str | None = None) -> None:
        out = ffi.new("struct spl_tls_ctx **")
        err = ffi.new("char[512]")
        rc = lib.spl_tls_ctx_new(os.fsencode(cert_file), os.fsencode(key_file) if key_file else ffi.NULL,
                                 err, 512, out)
        if rc != 0:
            raise TlsError(ffi.string(err).decode("utf-8", "replace") or os.strerror(-rc))
        self._c = out[0]
        self._others: list[TlsContext] = []  # the contexts sni() hands names on to

    def names(self) -> list[str]:
        """The server names its certificate answers to: its subjectAltName DNS names, or its
        subject's CN when it has none (spl_tls_ctx_names)."""
        buf = ffi.new("char[8192]")
        rc = lib.spl_tls_ctx_names(self._c, buf, 8192)
        if rc < 0:
            _raise(rc, "spl_tls_ctx_names")
        return ffi.string(buf).decode("ascii", "replace").splitlines()

    def sni(self, name: str, other: "TlsContext") -> None:
        """As the default context of a bind, answer server name `name` (exact, or "*.x" for
        one first label) with `other`, which must outlive this one (spl_tls_ctx_sni).

        Raises:
            EngineError: an empty, too long or malformed name (EINVAL).
        """
        self._others.append(other)
        rc = lib.spl_tls_ctx_sni(self._c, name.encode("ascii"), other._c)
        if rc != 0:
            _raise(rc, "spl_tls_ctx_sni")

    def alpn(self, protocols: list[str]) -> None:
        """Offer `protocols` in ALPN, in order of preference (haproxy's `alpn`); [] offers
        none (spl_tls_ctx_alpn).

        Raises:
            EngineError: a name empty or over 255 bytes, or a list over 255 bytes (EINVAL).
        """
        wire = b"".join(bytes([len(p)]) + p for p in (x.encode("ascii") for x in protocols)
                        if 0 < len(p) < 256)
        if len(wire) != sum(1 + len(x) for x in protocols):
            raise EngineError(_errno.EINVAL, "spl_tls_ctx_alpn: a protocol name empty or over 255 bytes")
        rc = lib.spl_tls_ctx_alpn(self._c, wire, len(wire))
        if rc != 0:
            _raise(rc, "spl_tls_ctx_alpn")

    def verify(self, mode: str, ca_file: str | None = None, crl_file: str | None = None) -> None:
        """Client certificates: haproxy's bind `verify none|optional|required` with `ca-file`
        and `crl-file` (spl_tls_ctx_verify).

        Raises:
            TlsError: an unknown mode, optional or required without a ca-file, or a file that
                cannot be loaded, with OpenSSL's reason.
        """
        modes = {"none": lib.SPL_TLS_VERIFY_NONE, "optional": lib.SPL_TLS_VERIFY_OPTIONAL,
                 "required": lib.SPL_TLS_VERIFY_REQUIRED}
        if mode not in modes:
            raise TlsError(f"unknown verify mode {mode!r} (none, optional or required)")
        err = ffi.new("char[512]")
        rc = lib.spl_tls_ctx_verify(self._c, modes[mode], os.fsencode(ca_file) if ca_file else ffi.NULL,
                                    os.fsencode(crl_file) if crl_file else ffi.NULL, err, 512)
        if rc != 0:
            raise TlsError(ffi.string(err).decode("utf-8", "replace") or os.strerror(-rc))

    VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}
    """haproxy's names of the TLS versions splicer speaks (ssl-min-ver / ssl-max-ver)."""

    def tune(self, min_ver: str | None = None, max_ver: str | None = None, ciphers: str | None = None,
             ciphersuites: str | None = None, curves: str | None = None, cache_size: int = 0,
             lifetime: int = 0) -> None:
        """Versions (haproxy's ssl-min-ver / ssl-max-ver: "TLSv1.2", "TLSv1.3"), the TLS 1.2
        cipher list (`ciphers`), the TLS 1.3 suites (`ciphersuites`), the groups (`curves`),
        the session cache's entries (`tune.ssl.cachesize`) and a session's lifetime in
        seconds (`tune.ssl.lifetime`); None or 0 leaves OpenSSL's (spl_tls_ctx_tune).

        Raises:
            TlsError: an unknown version, cipher, suite or curve, with OpenSSL's reason.
        """
        vers = []
        for v in (min_ver, max_ver):
            if v is not None and v not in self.VERSIONS:
                raise TlsError(f"unknown TLS version {v!r} (splicer speaks {', '.join(self.VERSIONS)})")
            vers.append(self.VERSIONS.get(v, 0))
        err = ffi.new("char[512]")
        enc = [x.encode("ascii") if x else ffi.NULL for x in (ciphers, ciphersuites, curves)]
        rc = lib.spl_tls_ctx_tune(self._c, vers[0], vers[1], *enc, cache_size, lifetime, err, 512)
        if rc != 0:
            raise TlsError(ffi.string(err).decode("utf-8", "replace") or os.strerror(-rc))

    def close(self) -> None:
        """Free the context (once no engine uses it any more)."""
        if self._c is not None:
            lib.spl_tls_ctx_free(self._c)
            self._c = None
RELAY_NO_BODY = lib.SPL_RELAY_NO_BODY
RELAY_SPLICED = lib.SPL_RELAY_SPLICED
RELAY_CLOSE_CLIENT = lib.SPL_RELAY_CLOSE_CLIENT
RELAY_KEEP_ALIVE = lib.SPL_RELAY_KEEP_ALIVE
RELAY_EXPRESS = lib.SPL_RELAY_EXPRESS
RELAY_XFF = lib.SPL_RELAY_XFF
RELAY_XLOG = lib.SPL_RELAY_XLOG
RELAY_SERVER_CLOSE = lib.SPL_RELAY_SERVER_CLOSE
X_NONE, X_DONE, X_UNUSED, X_DEAD, X_HANDOVER, X_WANT, X_CLOSED = (
    lib.SPL_X_NONE, lib.SPL_X_DONE, lib.SPL_X_UNUSED, lib.SPL_X_DEAD, lib.SPL_X_HANDOVER, lib.SPL_X_WANT,
    lib.SPL_X_CLOSED)
X_BACKENDS = lib.SPL_X_BACKENDS
"""The express lane (engine.h): what a credit's or head job's completion says (struct
spl_done.xkind), and how many express backends an engine has."""
_RELAY_CONNECTION = {b"": 0, b"close": RELAY_CLOSE_CLIENT, b"keep-alive": RELAY_KEEP_ALIVE}
PHASE_SEND = lib.SPL_PHASE_SEND
PHASE_BODY = lib.SPL_PHASE_BODY
PHASE_HEAD = lib.SPL_PHASE_HEAD
PHASE_END = lib.SPL_PHASE_END
END_TOO_LARGE = lib.SPL_END_TOO_LARGE
END_DONE = lib.SPL_END_DONE
END_PEER_CLOSED = lib.SPL_END_PEER_CLOSED
END_ERROR = lib.SPL_END_ERROR
END_TIMEOUT = lib.SPL_END_TIMEOUT
END_CANCELLED = lib.SPL_END_CANCELLED
END_NOPIPE = lib.SPL_END_NOPIPE
END_BAD_FRAMING = lib.SPL_END_BAD_FRAMING
SIDE_SRC = lib.SPL_SIDE_SRC


_lines = ffi.new("struct spl_lines *")  # (one per process: called from the event loop's thread only)


def send_lines(fd: int, data: bytes, maxlen: int = 0, skip_refused: bool = False) -> tuple[int, int, int]:
    """Send `data` on the connected, non-blocking datagram socket `fd` as one datagram per
    line (through each LF), a line longer than `maxlen` bytes cut to maxlen - 1 bytes and
    its LF (0: no limit), up to 64 datagrams per sendmmsg(2) call (native/src/datagram.c).
    Never waits. Returns (sent, lost, err): datagrams the kernel took, datagrams dropped
    because the socket could not take them now (EAGAIN, ENOBUFS; with `skip_refused` also
    ECONNREFUSED, UDP's ICMP unreachable) or one was larger than a datagram may be
    (EMSGSIZE: over 65,507 bytes on UDP/IPv4), and 0 or the errno that stopped the sending (the
    datagrams after sent + lost were not sent).

    Raises:
        EngineError: a bad argument (-EINVAL: fd < 0, maxlen 1).
    """
    out = _lines
    rc = lib.spl_send_lines(fd, data, len(data), maxlen, lib.SPL_LINES_SKIP_REFUSED if skip_refused else 0, out)
    if rc != 0:
        _raise(rc, "spl_send_lines")
    return out.sent, out.lost, out.err


ACCEPT_MAX = 64
"""Most connections accept() takes per call."""

_accepted = ffi.new("struct spl_accepted[]", ACCEPT_MAX)  # (one per process, as _lines)


def accept(lfd: int, max_conns: int, nodelay: bool) -> list[tuple[int, int]]:
    """Take up to `max_conns` (at most ACCEPT_MAX) connections waiting on the non-blocking
    listening socket `lfd`, each non-blocking and close-on-exec already, with TCP_NODELAY
    set on TCP ones when `nodelay` (accept4(2) in a loop: native/src/accept.c).

    Returns a list of (fd, peer): the caller owns each fd; `peer` is an IPv4 peer's address
    and port packed as one int, ``address << 16 | port`` (see unpack_peer()), or -1 for
    another family (ask getpeername(2)). An empty list: none waits.

    Raises:
        OSError: the first accept failed (EMFILE, ENFILE, ENOBUFS, ENOMEM, ...), errno set;
            a failure after some were taken ends the list and comes again on the next call.
    """
    out = _accepted
    n = lib.spl_accept(lfd, out, min(max_conns, ACCEPT_MAX), lib.SPL_ACCEPT_NODELAY if nodelay else 0)
    if n < 0:
        raise OSError(-n, os.strerror(-n))
    return [(a.fd, a.addr << 16 | a.port if a.family == AF_INET else -1) for a in (out[i] for i in range(n))]


def unpack_peer(peer: int) -> tuple[str, int]:
    """(address, port) of a peer packed by accept(): dotted IPv4 text and the port."""
    return _ntoa((peer >> 16).to_bytes(4, "big")), peer & 0xFFFF
