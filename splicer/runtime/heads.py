"""Heads on the wire through the engine: read a head off a socket, send a head with its body.

Rule: everything here hands the socket work of one step of a stream to the engine thread as
one job (C enum spl_phase: send a head, move a body, read a head), so that the loop makes no
socket call for it; when the engine cannot take the job (EngineBusy, no pipe, a head larger
than its buffers), the same step runs on the loop (runtime/io.py, runtime/transfer.py) with
the same outcome. Results are the loop primitives' own: a head's bytes, TimeoutError with
`.partial`, io.HeadTooLarge; a body's transfer.Result.
"""
from __future__ import annotations

import socket

from splicer.engine.binding import (JOB_CHUNKED, JOB_COPY, JOB_RELAY, JOB_SKIP_EMPTY, JOB_THEN_HEAD,
                                    RELAY_CLOSE_CLIENT, RELAY_KEEP_ALIVE, RELAY_NO_BODY, UNTIL_EOF)
from splicer.engine.engine import Completion, JobEnd, Phase, ms
from splicer.errors import EngineBusy, EngineError
from splicer.runtime import io
from splicer.runtime.transfer import End, Mover, Result, result_of

NOT_TAKEN = None
"""What the engine-backed steps return when the engine did not take the job: nothing was
sent or read, and the caller runs the step on the loop."""


def head_of(c: Completion) -> bytes:
    """The head a job's head phase read, with io.recv_head()'s outcomes.

    Returns:
        The head; b"" when the peer closed (or reset) before any byte, or the bytes read
        before it closed mid-head (a value without an end of head).

    Raises:
        TimeoutError: the head's first byte, or the whole head, did not come in time;
            `.partial` holds the bytes read (b"" when none).
        io.HeadTooLarge: no end of head within the limit (`first_line` as io.recv_head).
    """
    if c.end is JobEnd.TIMEOUT:
        exc = TimeoutError()
        exc.partial = c.head or b""
        exc.unread = True  # the engine peeked the rest: it is still in the socket
        raise exc
    if c.end is JobEnd.TOO_LARGE:
        exc = io.HeadTooLarge("head larger than the limit", first_line=c.first_line)
        exc.partial = c.head or b""
        exc.unread = True  # the engine peeked the rest: it is still in the socket
        raise exc
    return c.head or b""


async def read_head(mover: Mover, sock: socket.socket, limit: int, first_timeout: float | None,
                    timeout: float | None, skip_empty_lines: bool = False) -> bytes:
    """Read exactly one head from `sock` (io.recv_head's contract), on the engine thread.

    Args:
        limit: largest head accepted, bytes (tune.bufsize).
        first_timeout: seconds to wait for the first byte (None: no limit).
        timeout: seconds for the whole head from its first byte (None: no limit).
        skip_empty_lines: drop empty lines before the head (RFC 9112 section 2.2).
    """
    job = _read_head_job(mover, sock, limit, first_timeout, timeout, skip_empty_lines, None)
    if job is not None:
        return head_of(await mover.engine.wait(*job))
    return await io.recv_head(mover.loop, sock, limit, first_timeout, timeout,
                              skip_empty_lines=skip_empty_lines, wait_first=True)


# -- jobs whose completion calls back (runtime/stream.py, the stream machine's driver) ------

def submit_send_then_read_head(mover: Mover, sock: socket.socket, out: bytes, send_timeout: float | None,
                               limit: int, first_timeout: float | None, timeout: float | None,
                               done, relay: tuple | None = None) -> int | None:
    """Send `out` (a request head without a body) on `sock`, then read the response head
    from it, in one engine job whose Completion goes to `done(c)` from the engine's reap
    (phase SEND with an end other than DONE: the send failed; else head_of() reads it).
    With `relay` (relay_fields()), the engine may send a plain response on to the client by
    itself (binding.JOB_RELAY: Completion.relayed).

    Returns:
        None when the engine did not take it (nothing was sent); else, with `relay`, the id
        of the client's chained next-head job (Engine.then() claims its completion), or 0.
    """
    job = _send_then_read_head_job(mover, sock, out, send_timeout, limit, first_timeout, timeout, done, relay)
    if job is None:
        return None
    return mover.engine.chained[0] if relay is not None else 0


def client_times(cli_timeout: float | None, next_first: float | None, next_whole: float | None) -> tuple:
    """The client's timeouts in a relay (struct spl_job cli_idle_ms, next_first_ms, next_ms):
    its idle timeout (`timeout client`) and its next request head's (`timeout
    http-keep-alive`, `timeout http-request`), in seconds (None: none). The same for every
    session of a frontend: the frontend keeps them."""
    return ms(cli_timeout), ms(next_first), ms(next_whole)


def relay_fields(terms, cli_fd: int, cli_gen: int, times: tuple, express: tuple | None = None) -> tuple:
    """struct spl_job's relay fields (binding.EngineHandle.submit's `relay`) for the
    machine's http/machine.py RelayTerms `terms`, the client socket's fd and generation
    (Engine.gen()) and its client_times(). `express`: (relay flags, express backend, client
    IPv4 address, most header fields) when the client's next requests may take the express
    lane (runtime/express.py ExpressLane.arming()); None: they may not."""
    flags = ((RELAY_NO_BODY if terms.no_body else 0) | (RELAY_CLOSE_CLIENT if terms.close else 0)
             | (RELAY_KEEP_ALIVE if terms.announce else 0))
    if express is None or terms.close:
        return (terms.status_max, cli_fd, cli_gen, *times, flags, terms.splice_min)
    return (terms.status_max, cli_fd, cli_gen, *times, flags | express[0], terms.splice_min, express[1], express[2],
            express[3], 0)


def submit_send_with_body(mover: Mover, src, dst, head: bytes, count: int | None, chunked: bool,
                          splice: bool, next_head: tuple | None, done) -> int | None:
    """Send `head` to dst, then move the body src -> dst, in one engine job whose Completion
    goes to `done(c)` from the engine's reap (body_of() reads it).

    Args:
        src, dst: transfer.Side (socket and idle timeout) of the body's source and of the
            socket the head and body go to.
        count: body bytes (0: no body; None: until src's end of stream); ignored if chunked.
        chunked: a chunked body, forwarded verbatim (the engine checks its framing lines).
        splice: move the body through a pipe; else copy it (a counted body that fits
            behind the head leaves with it in one send).
        next_head: (first_timeout, timeout, limit): once the body is through, the same job
            goes on reading the next request head from dst (SPL_JOB_THEN_HEAD), as
            read_head(dst.sock, limit, first_timeout, timeout, skip_empty_lines=True) would.

    Returns:
        None when the engine did not take it (nothing was sent), else the id of the chained
        next-head job with `next_head` (Engine.then() claims its completion,
        Engine.cancel() stops it) or 0."""
    if _send_with_body_job(mover, src, dst, head, count, chunked, splice, next_head, done) is None:
        return None
    return mover.engine.chained[0] if next_head is not None else 0


def submit_request_with_body(mover: Mover, cli, sock: socket.socket, out: bytes, count: int,
                             send_timeout: float | None, limit: int, first_timeout: float | None,
                             timeout: float | None, done, relay: tuple | None = None) -> int | None:
    """One job for a request with a small body: send the head `out` on the server socket
    `sock`, copy `count` body bytes from the client (Side `cli`: its socket and idle
    timeout) behind it, then read the response head from `sock` (head_of() reads it);
    its Completion goes to `done(c)` from the engine's reap. c.phase tells where it ended:
    SEND (nothing of the body was read), BODY (transfer.result_of(c, True) says how the body
    ended), HEAD or END (the body went through). `relay` and the result as
    submit_send_then_read_head()'s; a relayed completion's bytes_fwd is the response body's."""
    engine = mover.engine
    if engine is None or len(out) > engine.bufsize or limit > engine.bufsize:
        return None
    fd = sock.fileno()
    try:
        engine.submit(cli.sock.fileno(), fd, count, JOB_COPY | (JOB_RELAY if relay is not None else 0),
                      ms(cli.timeout), ms(send_timeout), out, fd, ms(first_timeout), ms(timeout), limit,
                      src_gen=engine.gen(cli.sock), dst_gen=engine.gen(sock), done=done,
                      relay=relay)
    except (EngineBusy, EngineError):
        return None
    return engine.chained[0] if relay is not None else 0


def body_of(c: Completion, copied: bool) -> tuple[bool, Result] | None:
    """What a submit_send_with_body() job's completion says: (sent, result): sent is False
    when the head could not be sent (the peer is gone; nothing of the body moved), result
    is the body's Result; or NOT_TAKEN when it ended NOPIPE (nothing was sent; its chained
    job, if any, ended CANCELLED with it)."""
    if c.end is JobEnd.NOPIPE:
        return NOT_TAKEN
    if c.phase is Phase.SEND:
        return False, Result(End.DST_ERROR)
    return True, result_of(c, copied)


def submit_read_head(mover: Mover, sock: socket.socket, limit: int, first_timeout: float | None,
                     timeout: float | None, skip_empty_lines: bool, done, express: tuple | None = None) -> int | None:
    """read_head() as a job whose Completion goes to `done(c)` from the engine's reap
    (head_of() reads it). `express`: (relay fields, server timeout in seconds) when the head
    may take the express lane already (express_fields(); engine.h "the express lane": a
    head-only job armed from its own head on). Returns the job id, or None when the engine
    did not take it."""
    job = _read_head_job(mover, sock, limit, first_timeout, timeout, skip_empty_lines, done, express)
    return None if job is None else job[0]


def express_fields(terms, cli_fd: int, cli_gen: int, times: tuple, express: tuple) -> tuple:
    """The relay fields that arm a head-only job for the express lane (relay_fields() of a
    response under `terms`, a http/machine.py RelayTerms, with the lane's `express`,
    ExpressLane.arming()): its requests' responses are relayed under those terms."""
    return (terms.status_max, cli_fd, cli_gen, *times, express[0], terms.splice_min, express[1], express[2],
            express[3], 0)


# -- the jobs themselves: one builder per shape, for the future and the callback forms ----

def _read_head_job(mover: Mover, sock, limit, first_timeout, timeout, skip_empty_lines, done, express=None):
    """Submit a head-only job; (id, future or None), or None when not taken."""
    engine = mover.engine
    if engine is None or limit > engine.bufsize:
        return None
    fd = sock.fileno()
    try:
        if express is None:
            return engine.submit(fd, -1, 0, JOB_SKIP_EMPTY if skip_empty_lines else 0, head_fd=fd,
                                 head_first_ms=ms(first_timeout), head_ms=ms(timeout), head_limit=limit,
                                 src_gen=engine.gen(sock), done=done)
        return engine.submit(fd, -1, 0, JOB_SKIP_EMPTY if skip_empty_lines else 0, dst_idle_ms=ms(express[1]),
                             head_fd=fd, head_first_ms=ms(first_timeout), head_ms=ms(timeout), head_limit=limit,
                             src_gen=engine.gen(sock), done=done, relay=express[0])
    except EngineBusy:
        return None


def _send_then_read_head_job(mover: Mover, sock, out, send_timeout, limit, first_timeout, timeout, done,
                             relay=None):
    """Submit a send-then-read-head job; (id, future or None), or None when not taken."""
    engine = mover.engine
    if engine is None or len(out) > engine.bufsize or limit > engine.bufsize:
        return None
    fd = sock.fileno()
    try:
        if relay is None:
            return engine.submit(-1, fd, 0, 0, 0, ms(send_timeout), out, fd, ms(first_timeout), ms(timeout), limit,
                                 dst_gen=engine.gen(sock), done=done)
        return engine.submit(-1, fd, 0, JOB_RELAY, 0, ms(send_timeout), out, fd, ms(first_timeout), ms(timeout),
                             limit, dst_gen=engine.gen(sock), done=done, relay=relay)
    except (EngineBusy, EngineError):
        return None


def _send_with_body_job(mover: Mover, src, dst, head, count, chunked, splice, next_head, done):
    """Submit a head-then-body job (chained to a next-head job with `next_head`);
    (id, None), or None when not taken."""
    engine = mover.engine
    if engine is None or len(head) > engine.bufsize or (chunked and not splice):
        return None
    flags = (JOB_CHUNKED if chunked else 0) | (JOB_COPY if not splice and not chunked else 0)
    first = whole = limit = 0
    if next_head is not None:
        flags |= JOB_THEN_HEAD
        first, whole, limit = ms(next_head[0]), ms(next_head[1]), next_head[2]
    try:
        return engine.submit(src.sock.fileno(), dst.sock.fileno(), UNTIL_EOF if count is None else count, flags,
                             ms(src.timeout), ms(dst.timeout), head, -1, first, whole, limit,
                             src_gen=engine.gen(src.sock), dst_gen=engine.gen(dst.sock), done=done)
    except (EngineBusy, EngineError):
        return None
