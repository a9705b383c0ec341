"""Awaitable primitives on raw non-blocking sockets: wait, send, receive a head, connect.

Rule: the shell uses raw sockets and loop.add_reader/add_writer rather than asyncio
transports, so that a socket's unread bytes stay in the kernel for splice(2). Every
operation tries the syscall first and waits only on EAGAIN. Timeouts are float seconds
(None = no timeout) and raise TimeoutError; a peer reset raises OSError.
"""
from __future__ import annotations

import asyncio
import errno
import socket

from splicer.http.h1 import find_head_end


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


class _Watch:
    """A socket the loop watches for readability, kept registered between waits.

    Registering a reader and removing it around every wait costs uvloop a poll handle each
    time (epoll_ctl ADD and DEL, an ioctl, a handle close: about 8 syscalls per wait). A
    watch stays registered after its wait ends (each wait re-arms it, which costs nothing
    while the poll runs); the loop's callback drops it the first time it fires with nobody
    waiting (the fd is level-triggered, so data left unread, such as a body kept in the
    kernel for splice, would otherwise wake the loop again and again).
    """

    __slots__ = ("loop", "sock", "fd", "fut", "woken")

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, fd: int) -> None:
        self.loop, self.sock, self.fd = loop, sock, fd
        self.fut: asyncio.Future | None = None
        self.woken = False  # the waiter was woken and has not run yet


_WATCHES: dict[int, _Watch] = {}
"""Watches by fd (one event loop per process; a stale entry is detected by its socket)."""


def _on_readable(w: _Watch) -> None:
    fut = w.fut
    if fut is not None:
        w.fut = None
        w.woken = True
        if not fut.done():
            fut.set_result(None)
    elif not w.woken:
        _drop(w)  # readable with nobody waiting: stop watching until the next wait


def _drop(w: _Watch) -> None:
    if _WATCHES.get(w.fd) is w:
        del _WATCHES[w.fd]
    try:
        w.loop.remove_reader(w.fd)
    except (RuntimeError, ValueError, OSError):
        pass  # a closed loop or fd: nothing is watched any more


def forget(sock: socket.socket) -> None:
    """Stop watching `sock`; call it before closing a socket that wait_readable() waited on
    (a later socket may get the same fd number)."""
    fd = sock.fileno()
    w = _WATCHES.get(fd) if fd >= 0 else None
    if w is not None and w.sock is sock:
        _drop(w)


async def wait_readable(loop: asyncio.AbstractEventLoop, sock: socket.socket, timeout: float | None) -> None:
    """Wait until `sock` is readable (data, EOF or error pending). One waiter per socket.

    It may return early, without the socket being readable: a readiness the loop saw before
    the previous wait's reader consumed the bytes. Every caller reads and waits again on
    EAGAIN.

    Raises:
        TimeoutError: nothing happened within `timeout` seconds.
    """
    fd = sock.fileno()
    w = _WATCHES.get(fd)
    if w is None or w.sock is not sock or w.loop is not loop:
        if w is not None:
            _drop(w)  # stale: an earlier socket (closed without forget) had this fd number
        w = _Watch(loop, sock, fd)
        _WATCHES[fd] = w
    # Armed on every wait: when the socket reports an error (a reset), libuv stops the poll
    # and uvloop closes it, and only a new one watches again. On a poll still running,
    # uvloop's add_reader just swaps the callback handle: no syscall.
    try:
        loop.add_reader(fd, _on_readable, w)
    except RuntimeError:  # "the handler is closed": replace the poll uvloop closed
        loop.remove_reader(fd)
        loop.add_reader(fd, _on_readable, w)
    fut = loop.create_future()
    w.fut = fut
    w.woken = False
    timer = loop.call_later(timeout, _expire, fut) if timeout is not None else None
    try:
        await fut
    finally:
        w.woken = False
        if w.fut is fut:
            w.fut = None
        if timer is not None:
            timer.cancel()


async def wait_writable(loop: asyncio.AbstractEventLoop, fd: int, timeout: float | None) -> None:
    """Wait until `fd` can take more bytes (or has an error pending).

    Raises:
        TimeoutError: still blocked after `timeout` seconds.
    """
    fut = loop.create_future()
    try:
        loop.add_writer(fd, _wake, fut)
    except RuntimeError:  # uvloop closed the fd's poll after a socket error: start anew
        w = _WATCHES.get(fd)
        if w is not None:
            _drop(w)
        else:
            loop.remove_reader(fd)
        loop.add_writer(fd, _wake, fut)
    timer = loop.call_later(timeout, _expire, fut) if timeout is not None else None
    try:
        await fut
    finally:
        loop.remove_writer(fd)
        if timer is not None:
            timer.cancel()


async def send_all(loop: asyncio.AbstractEventLoop, sock: socket.socket, data, timeout: float | None) -> None:
    """Send every byte of `data` (bytes-like).

    Raises:
        TimeoutError: the peer took nothing for `timeout` seconds.
        OSError: the connection failed (EPIPE, ECONNRESET...).
    """
    view = memoryview(data)
    while view:
        try:
            n = sock.send(view)
        except (BlockingIOError, InterruptedError):
            await wait_writable(loop, sock.fileno(), timeout)
            continue
        view = view[n:]


async def recv_into(loop: asyncio.AbstractEventLoop, sock: socket.socket, buf, timeout: float | None) -> int:
    """Receive at most len(buf) bytes into `buf`; 0 means end of stream.

    Raises:
        TimeoutError: nothing arrived within `timeout` seconds.
        OSError: the connection failed.
    """
    while True:
        try:
            return sock.recv_into(buf)
        except (BlockingIOError, InterruptedError):
            await wait_readable(loop, sock, timeout)


async def recv_line(loop: asyncio.AbstractEventLoop, sock: socket.socket, limit: int,
                    timeout: float | None, whole: bool = False) -> bytes:
    """Read exactly one line (through its LF) without reading past it.

    Peeks for the LF, then reads exactly the line; bytes after it stay in the socket.
    With `whole`, `timeout` bounds the whole line rather than each wait (a line trickled a
    byte at a time cannot hold the stream).

    Returns:
        The line with its ending; shorter than a line (no LF) only at end of stream.

    Raises:
        ValueError: no LF within `limit` bytes.
        TimeoutError, OSError: as recv_into.
    """
    got = bytearray()
    end = loop.time() + timeout if whole and timeout is not None else None
    while True:
        try:
            peek = sock.recv(limit - len(got), socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            await wait_readable(loop, sock, timeout if end is None else max(0.0, end - loop.time()))
            continue
        i = peek.find(b"\n")
        if i >= 0:
            got += sock.recv(i + 1)
            return bytes(got)
        if not peek:
            return bytes(got)
        if len(got) + len(peek) >= limit:
            raise ValueError("line too long")
        # an incomplete line: take what is there (it all belongs to this line, and a peek
        # would leave the socket readable), then wait for more
        got += sock.recv(len(peek))
        await wait_readable(loop, sock, timeout if end is None else max(0.0, end - loop.time()))


class HeadTooLarge(ValueError):
    """No end of head within the size limit (haproxy `tune.bufsize`).

    Attributes:
        first_line: True when not even the start line ended within the limit (a request
            then gets 414 URI Too Long, RFC 9112 section 3, rather than 431).
    """

    def __init__(self, msg: str, first_line: bool = False) -> None:
        super().__init__(msg)
        self.first_line = first_line
        self.partial = b""  # the bytes read (or peeked) when the limit struck
        self.unread = False  # True: only those read are in `partial`, the rest is in the socket


async def recv_head(loop: asyncio.AbstractEventLoop, sock: socket.socket, limit: int,
                    first_timeout: float | None, timeout: float | None, skip_empty_lines: bool = False,
                    wait_first: bool = False) -> bytes:
    """Read exactly one HTTP head, leaving any following bytes (the body) in the kernel.

    Peeks to find the empty line that ends the head, then reads exactly that many bytes, so
    the body can be spliced. While the head is incomplete, its bytes are consumed (they are
    all head bytes) so the socket does not stay readable.

    Args:
        limit: largest head accepted, bytes (tune.bufsize).
        first_timeout: seconds to wait for the first byte (keep-alive idle, or None).
        timeout: seconds for the whole head once it has started (timeout http-request).
        skip_empty_lines: drop empty lines before the head (a request: RFC 9112 section 2.2
            says a server SHOULD ignore at least one empty line before the request-line).
        wait_first: wait for readability before the first peek, when the head is unlikely
            to be there yet (a response just asked for, the next request on a kept-alive
            connection): saves a peek that would fail with EAGAIN.

    Returns:
        The head; b"" when the peer closed (or reset) before sending any byte; a non-empty
        value without an end of head when the peer closed mid-head.

    Raises:
        HeadTooLarge: the head exceeds `limit`.
        TimeoutError: first byte or whole head did not arrive in time; `.partial` holds
            the bytes consumed so far (b"" when none).
    """
    got = bytearray()
    deadline = None
    if wait_first:
        try:
            await wait_readable(loop, sock, first_timeout)
        except TimeoutError as exc:
            exc.partial = b""
            raise
    while True:
        try:
            peek = sock.recv(limit - len(got) + 1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            try:
                if not got and deadline is None:
                    await wait_readable(loop, sock, first_timeout)
                else:
                    if deadline is None:
                        deadline = loop.time() + timeout if timeout is not None else None
                    left = None if deadline is None else max(0.0, deadline - loop.time())
                    await wait_readable(loop, sock, left)
            except TimeoutError as exc:
                exc.partial = bytes(got)
                raise
            continue
        except ConnectionError:
            return b"" if not got else bytes(got)
        if not peek:
            return bytes(got)
        if skip_empty_lines and not got and peek[:1] in (b"\r", b"\n"):
            blank = len(peek) - len(peek.lstrip(b"\r\n"))
            sock.recv(blank)  # bytes before any request byte: not part of the head
            continue
        if deadline is None and timeout is not None:
            deadline = loop.time() + timeout
        start = max(0, len(got) - 3)
        end = find_head_end(got + peek, start) if got else find_head_end(peek)
        if end >= 0:
            need = end - len(got)
            got += sock.recv(need)
            return bytes(got)
        if len(got) + len(peek) > limit:
            exc = HeadTooLarge(f"head larger than {limit} bytes", first_line=b"\n" not in got and b"\n" not in peek)
            exc.partial = bytes(got + peek)[:limit]  # what `show errors` prints
            raise exc
        got += sock.recv(len(peek))
        try:
            await wait_readable(loop, sock, None if deadline is None else max(0.0, deadline - loop.time()))
        except TimeoutError as exc:
            exc.partial = bytes(got)
            raise


async def connect(loop: asyncio.AbstractEventLoop, host: str, port: int, timeout: float | None) -> socket.socket:
    """Open a non-blocking TCP connection with TCP_NODELAY set.

    Raises:
        TimeoutError: not established within `timeout` seconds (haproxy `timeout connect`).
        OSError: refused, unreachable...
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.connect((host, port))
        except BlockingIOError:
            await wait_writable(loop, sock.fileno(), timeout)
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, f"connect to {host}:{port}: {errno.errorcode.get(err, err)}")
        return sock
    except BaseException:
        sock.close()
        raise


def start_connect(host: str, port: int) -> tuple[socket.socket, int]:
    """Start a TCP connection without waiting for it: a non-blocking socket with
    TCP_NODELAY whose connect() was called. Returns (socket, errno): 0 when the connect is
    under way or done, else the error it failed with at once (the socket is still returned,
    for its owner to close). Who finishes the connect waits for it to be writable (the
    engine: spl_credit with connect_ms).

    Raises:
        OSError: no socket could be made (EMFILE, ENFILE, ENOBUFS...).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = sock.connect_ex((host, port))
    except OSError as exc:
        return sock, exc.errno or errno.EINVAL
    return sock, 0 if err in (0, errno.EINPROGRESS) else err
