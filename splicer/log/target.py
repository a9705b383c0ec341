"""Where log messages go: the I/O of one `log` target (haproxy configuration.txt 4.2 "log").

Rule: nothing here ever blocks the worker. Every socket is non-blocking and every write is
tried once: a message the target cannot take now (a full socket buffer or pipe, a syslog
daemon gone, a unix socket removed, an ICMP port-unreachable on UDP) is dropped and counted
in `dropped`, never retried or waited for (haproxy counts the same in DroppedLogs).

Theory of operation. A Target gets the messages of one batch at once (send()):
  - DatagramTarget (UDP syslog, unix datagram sockets): one send() per message on a
    connected socket; a unix socket that is not there (yet, or any more) is looked for
    again at the next batch, at most once a second.
  - StreamTarget (stdout, stderr, fd@<n>, splicer's file@<path>): the batch joined and
    written with one write(); what a short write leaves is dropped. A descriptor is opened
    again through /proc/self/fd, so that its own description is non-blocking (a full pipe
    drops lines; the inherited description is left as it is); a socket descriptor, which
    cannot be reopened so, is written as it is. A file is opened with
    O_APPEND, so several workers' lines never overwrite each other (each write of up to
    PIPE_BUF bytes on a pipe, and each O_APPEND write on a local file, lands whole).
"""
from __future__ import annotations

import os
import select
import socket
import stat
import time

from splicer.config.model import LogTarget

RETRY_CONNECT = 1.0
"""Seconds between two attempts to reach a unix socket target that was not there."""


class Target:
    """One opened target.

    Attributes:
        address: as written in the configuration; sent / dropped: messages so far.
        joins: it takes a batch as one buffer (StreamTarget.send_joined).
    """

    joins = False

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

    def __init__(self, model: LogTarget) -> None:
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
                # the unix socket's reader went away (or another error): drop the rest of
                # the batch, look for the socket again later
                lost = len(frames) - sent
                self.sock.close()
                self.sock = None
                self._next_try = time.monotonic() + RETRY_CONNECT
                break
        self.sent += sent
        self.dropped += lost

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class StreamTarget(Target):
    """A file descriptor (`stdout`, `stderr`, `fd@<n>`) or a file (`file@<path>`)."""

    joins = True  # a batch may be written as one joined buffer (send_joined)
    pipe = False  # the descriptor is a pipe (written in whole lines of at most PIPE_BUF)

    def __init__(self, model: LogTarget) -> None:
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


def open_target(model: LogTarget) -> Target:
    """The Target for a `log` line's target (raises OSError when a file cannot be opened)."""
    if model.kind in ("fd", "file"):
        return StreamTarget(model)
    return DatagramTarget(model)
