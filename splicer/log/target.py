"""Where log messages go: the I/O of one `log` target (haproxy configuration.txt 4.2 "log").

Rule: nothing here ever blocks the worker. Every socket is non-blocking and every write is
tried once: a message the target cannot take now (a full socket buffer or pipe, a syslog
daemon gone, a unix socket removed, an ICMP port-unreachable on UDP) is dropped and counted
in `dropped`, never retried or waited for (haproxy counts the same in DroppedLogs).

Theory of operation. A Target gets the messages of one batch at once (send()):
  - DatagramTarget (UDP syslog, unix datagram sockets): one send() per message on a
    connected socket; a unix socket that is not there (yet, or any more) is looked for
    again at the next batch, at most once a second.
  - SocketTarget (syslog over TCP, `tcp@host:port`, or a unix stream socket, `uxst@/path`:
    haproxy's implicit ring with one forwarding server; or a `ring` section's server): the
    batch joined and written at once when nothing waits; what the socket does not take
    waits (the rest of a batch it took in part always, so that no message is cut; later
    batches in a buffer of at most `size` bytes, a batch that does not fit dropped whole)
    and the loop's writer callback writes it. Messages end with "\n" (RFC 6587 3.4.2 non-transparent framing,
    haproxy's `log-proto legacy`) or start with their length and a space (RFC 6587 3.4.1
    octet counting, `log-proto octet-count`). The connection is made without waiting
    (`timeout connect`, 1 s by default); a server that takes nothing for `timeout server`
    (5 s) or closes is dropped, and connected again at most once a second, what was queued
    kept: a message cut by a lost connection is sent again whole on the next one.
  - StreamTarget (stdout, stderr, fd@<n>, splicer's file@<path>): the batch joined and
    written with one write(); what a short write leaves is dropped. A descriptor is opened
    again through /proc/self/fd, so that its own description is non-blocking (a full pipe
    drops lines; the inherited description is left as it is); a socket descriptor, which
    cannot be reopened so, is written as it is. A file is opened with
    O_APPEND, so several workers' lines never overwrite each other (each write of up to
    PIPE_BUF bytes on a pipe, and each O_APPEND write on a local file, lands whole).
"""
from __future__ import annotations

import errno
import os
import select
import socket
import stat
import time
from collections import deque

from splicer.engine.binding import send_lines

RETRY_CONNECT = 1.0
"""Seconds between two attempts to reach a unix socket target that was not there."""


class Target:
    """One opened target.

    Attributes:
        address: as written in the configuration; sent / dropped: messages so far.
        joins: it takes a batch as one buffer (StreamTarget.send_joined).
        datagrams: it takes a batch as one buffer of lines sent one datagram each
            (DatagramTarget.send_lines).
    """

    joins = False
    datagrams = False

    def __init__(self, address: str) -> None:
        self.address = address
        self.sent = 0
        self.dropped = 0

    def send(self, frames: list[bytes]) -> None:
        """Send the framed messages of one batch (never blocks; see the module rule)."""
        raise NotImplementedError

    def close(self) -> None:
        """Close what was opened (the process's stdout/stderr stay open)."""


class DatagramTarget(Target):
    """UDP syslog (`host:port`, `udp@host:port`) or a unix datagram socket (`/path`)."""

    datagrams = True

    def __init__(self, model) -> None:
        super().__init__(model.address)
        self.model = model
        self.sock: socket.socket | None = None
        self._next_try = 0.0
        self._connect()

    def _connect(self) -> None:
        m = self.model
        try:
            if m.kind == "unix":
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                addr: object = m.path
            else:
                info = socket.getaddrinfo(m.host, m.port, type=socket.SOCK_DGRAM)[0]
                sock = socket.socket(info[0], socket.SOCK_DGRAM)
                addr = info[4]
        except OSError:
            self._next_try = time.monotonic() + RETRY_CONNECT
            return
        sock.setblocking(False)
        try:
            sock.connect(addr)
        except OSError:
            sock.close()
            self._next_try = time.monotonic() + RETRY_CONNECT
            return
        self.sock = sock

    def send(self, frames: list[bytes]) -> None:
        if self.sock is None:
            if time.monotonic() >= self._next_try:
                self._connect()
            if self.sock is None:
                self.dropped += len(frames)
                return
        send = self.sock.send
        unix = self.model.kind == "unix"
        sent = lost = 0
        for frame in frames:
            try:
                send(frame)
                sent += 1
            except (BlockingIOError, InterruptedError):
                lost += 1  # the socket buffer is full: no waiting
            except OSError as exc:
                if not unix and isinstance(exc, ConnectionRefusedError):
                    lost += 1  # UDP: an earlier datagram met a closed port (ICMP unreachable)
                    continue
                if exc.errno == errno.EMSGSIZE:
                    lost += 1  # larger than a datagram may be: that line only
                    continue
                # the unix socket's reader went away (or another error): drop the rest of
                # the batch, look for the socket again later
                lost = len(frames) - sent
                self.sock.close()
                self.sock = None
                self._next_try = time.monotonic() + RETRY_CONNECT
                break
        self.sent += sent
        self.dropped += lost

    def send_lines(self, data: bytes, count: int, maxlen: int) -> None:
        """Send the `count` framed messages of one batch, joined in `data` (each ending in
        "\\n", none holding another), each as one datagram cut to `maxlen` bytes (0: no
        limit), many per system call (engine.binding.send_lines: sendmmsg(2)); what send()
        does with the frames one by one, with the same drops."""
        if self.sock is None:
            if time.monotonic() >= self._next_try:
                self._connect()
            if self.sock is None:
                self.dropped += count
                return
        sent, lost, err = send_lines(self.sock.fileno(), data, maxlen, skip_refused=self.model.kind != "unix")
        self.sent += sent
        self.dropped += lost
        if err:  # the unix socket's reader went away (or another error): as send()
            self.dropped += count - sent - lost
            self.sock.close()
            self.sock = None
            self._next_try = time.monotonic() + RETRY_CONNECT

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class StreamTarget(Target):
    """A file descriptor (`stdout`, `stderr`, `fd@<n>`) or a file (`file@<path>`)."""

    joins = True  # a batch may be written as one joined buffer (send_joined)
    pipe = False  # the descriptor is a pipe (written in whole lines of at most PIPE_BUF)

    def __init__(self, model) -> None:
        super().__init__(model.address)
        self._own = True
        if model.kind == "file":
            self.fd = os.open(model.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC,
                              0o640)
            return
        # stdout, stderr, fd@<n>: the same pipe, terminal or file opened again through
        # /proc/self/fd, so this description alone is non-blocking (setting O_NONBLOCK on the
        # inherited one would change it for the master, the other workers and whatever else
        # writes there); a socket cannot be opened so, and is written as it is (blocking)
        try:
            self.fd = os.open(f"/proc/self/fd/{model.fd}", os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            self.fd = model.fd
            self._own = False
        try:
            self.pipe = stat.S_ISFIFO(os.fstat(self.fd).st_mode)
        except OSError:
            pass

    def send(self, frames: list[bytes]) -> None:
        self.send_joined(b"".join(frames), len(frames))

    def send_joined(self, data: bytes, count: int) -> None:
        """Write `count` messages already joined in `data` (Framer.join), one write() for
        the batch; on a pipe, in writes of whole lines of at most PIPE_BUF bytes, each of
        which the kernel takes whole or not at all, so a full pipe never gets half a line.
        What cannot be written now is dropped."""
        if not self.pipe:
            try:
                n = os.write(self.fd, data)
            except OSError:  # BlockingIOError included: nothing is waited for
                self.dropped += count
                return
            done = count if n == len(data) else data.count(b"\n", 0, n)
            self.sent += done
            self.dropped += count - done
            return
        done = 0
        start, size = 0, len(data)
        while start < size:
            end = data.rfind(b"\n", start, start + select.PIPE_BUF) + 1
            if end <= start:  # one line longer than PIPE_BUF: alone (it may be cut)
                end = data.find(b"\n", start) + 1
            try:
                n = os.write(self.fd, data[start:end])
            except OSError:
                break
            done += data.count(b"\n", start, start + n)
            if start + n < end:
                break
            start = end
        self.sent += done
        self.dropped += count - done

    def close(self) -> None:
        if self._own:
            os.close(self.fd)
            self._own = False


class SocketTarget(Target):
    """Syslog over a stream socket: TCP (`tcp@`, `tcp4@`, `tcp6@`) or a unix stream socket
    (`uxst@`), directly or as a `ring` section's server (see the module's docstring).

    Args:
        model: the `log` line's target (kind "tcp" or "uxst"; its `ring`: size in bytes,
            octet counting or not, connect and server timeouts in seconds).
        loop: the worker's event loop (the socket's reader and writer callbacks).

    Attributes:
        connects: connections made so far; queued: bytes waiting to be written.
    """

    def __init__(self, model, loop) -> None:
        super().__init__(model.address)
        self.model = model
        self.loop = loop
        self.size = model.ring_size
        self.octets = model.octet_count
        self.joins = not self.octets  # legacy framing: a batch is the framer's joined lines
        self.sock: socket.socket | None = None
        self.connected = False
        self.connects = 0
        self._chunks: deque = deque()  # [data, messages in it], in order
        self._off = 0  # bytes of the first chunk already written
        self.queued = 0
        self._next_try = 0.0
        self._timer = None  # the connect timeout, or the server timeout while data waits
        self._writing = False
        self._connect()

    # -- queueing -------------------------------------------------------------------------

    def send(self, frames: list[bytes]) -> None:
        if self.octets:  # RFC 6587 3.4.1: MSG-LEN SP SYSLOG-MSG (the "\n" is not part of it)
            data = b"".join([b"%d %s" % (len(f) - 1, f[:-1]) for f in frames])
        else:
            data = b"".join(frames)
        self.send_joined(data, len(frames))

    def send_joined(self, data: bytes, count: int) -> None:
        """Write `count` framed messages joined in `data`: at once when nothing waits (what
        the socket does not take is queued, a cut message is always finished), else queued
        behind what waits, or dropped whole when the buffer cannot take them."""
        if self.connected and not self._chunks:
            try:
                n = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                n = 0
            except OSError:
                n = -1
            if n == len(data):
                self.sent += count
                return
            if n >= 0:
                self._chunks.append([data, count])
                self._off = n
                self.queued += len(data) - n
                self._flush()  # (the writer callback takes over)
                return
            self._lost()
        if self.queued + len(data) > self.size:
            self.dropped += count
            return
        self._chunks.append([data, count])
        self.queued += len(data)
        if self.connected:
            if not self._writing:
                self._flush()
        elif self.sock is None and time.monotonic() >= self._next_try:
            self._connect()

    def _flush(self) -> None:
        """Write queued chunks until the socket takes no more (also the writer callback);
        while data waits, the writer callback is on and `timeout server` runs from the
        last write that moved something."""
        sock = self.sock
        moved = False
        while self._chunks:
            chunk = self._chunks[0]
            data = chunk[0]
            try:
                n = sock.send(memoryview(data)[self._off:] if self._off else data)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._lost()
                return
            moved = True
            self._off += n
            self.queued -= n
            if self._off < len(data):
                break
            self._chunks.popleft()
            self.sent += chunk[1]
            self._off = 0
        if self._chunks:
            if not self._writing:
                self._writing = True
                self.loop.add_writer(sock.fileno(), self._flush)
                self._arm(self.model.timeout_server, self._stalled)
            elif moved:
                self._arm(self.model.timeout_server, self._stalled)
        elif self._writing:
            self._writing = False
            self.loop.remove_writer(sock.fileno())
            self._cancel()

    # -- the connection -------------------------------------------------------------------

    def _connect(self) -> None:
        m = self.model
        self._next_try = time.monotonic() + RETRY_CONNECT
        try:
            if m.kind == "uxst":
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                addr: object = m.path
            else:
                family = {"tcp4": socket.AF_INET, "tcp6": socket.AF_INET6}.get(m.family, 0)
                info = socket.getaddrinfo(m.host, m.port, family, socket.SOCK_STREAM)[0]
                sock = socket.socket(info[0], socket.SOCK_STREAM)
                addr = info[4]
        except OSError:
            self._arm(RETRY_CONNECT, self._retry)
            return
        sock.setblocking(False)
        err = sock.connect_ex(addr)
        if err not in (0, errno.EINPROGRESS, errno.EAGAIN):  # a unix socket not there, refused at once
            sock.close()
            self._arm(RETRY_CONNECT, self._retry)
            return
        self.sock = sock
        if err == 0:
            self._up()
            return
        self.loop.add_writer(sock.fileno(), self._connected)
        self._arm(m.timeout_connect, self._lost)

    def _connected(self) -> None:
        sock = self.sock
        self.loop.remove_writer(sock.fileno())
        self._cancel()
        if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            self._lost()
            return
        self._up()

    def _up(self) -> None:
        self.connected = True
        self.connects += 1
        if self.model.kind != "uxst":
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # whole batches: never held back
        self.loop.add_reader(self.sock.fileno(), self._readable)
        self._flush()

    def _readable(self) -> None:
        """The server never speaks: what it sends is read and ignored; its end is ours."""
        try:
            data = self.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._lost()

    def _stalled(self) -> None:
        """`timeout server`: the queued data did not move; the connection is given up."""
        self._timer = None
        self._lost()

    def _lost(self) -> None:
        """The connection failed, closed or stalled: close it, keep what is queued (a
        message cut short is sent whole on the next connection), try again later."""
        self._drop_socket()
        self.connected = self._writing = False
        if self._off:  # back to the start of the message the connection cut
            chunk = self._chunks[0]
            start = _message_start(chunk[0], self._off, self.octets)
            done = _messages(chunk[0], start, self.octets)
            chunk[0] = chunk[0][start:]
            chunk[1] -= done
            self.sent += done
            self.queued += self._off - start
            self._off = 0
        self._next_try = time.monotonic() + RETRY_CONNECT
        self._arm(RETRY_CONNECT, self._retry)

    def _drop_socket(self) -> None:
        """Stop the timer and the loop's callbacks on the socket, and close it."""
        self._cancel()
        sock, self.sock = self.sock, None
        if sock is not None:
            if self._writing or not self.connected:
                self.loop.remove_writer(sock.fileno())
            if self.connected:
                self.loop.remove_reader(sock.fileno())
            sock.close()

    def _retry(self) -> None:
        self._timer = None
        if self.sock is None and self._chunks:
            self._connect()

    def _arm(self, delay: float, fn) -> None:
        self._cancel()
        self._timer = self.loop.call_later(delay, fn)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """Write what the socket takes now (never waiting), then close."""
        if self.connected and self._chunks:
            self._flush()
        self._drop_socket()
        self.dropped += sum(c[1] for c in self._chunks)
        self._chunks.clear()
        self.connected = self._writing = False


def _message_start(data: bytes, off: int, octets: bool) -> int:
    """The offset in `data` (framed messages) where the message holding byte `off` starts."""
    if not octets:
        return data.rfind(b"\n", 0, off) + 1
    pos = 0
    while True:
        sp = data.index(b" ", pos)
        end = sp + 1 + int(data[pos:sp])
        if end > off:
            return pos
        pos = end


def _messages(data: bytes, end: int, octets: bool) -> int:
    """How many whole framed messages data[:end] holds (`end` is a message's start)."""
    if not octets:
        return data.count(b"\n", 0, end)
    n = pos = 0
    while pos < end:
        sp = data.index(b" ", pos)
        pos = sp + 1 + int(data[pos:sp])
        n += 1
    return n


def open_target(model, loop=None) -> Target:
    """The Target for a `log` line's target (raises OSError when a file cannot be opened).
    `loop`: the worker's event loop, which a stream socket target (tcp@, uxst@, a ring's
    server) writes from."""
    if model.kind in ("fd", "file"):
        return StreamTarget(model)
    if model.kind in ("tcp", "uxst"):
        return SocketTarget(model, loop)
    return DatagramTarget(model)
