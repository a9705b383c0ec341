"""Idle server connections kept alive for reuse, per server (haproxy `http-reuse safe`).

A connection is put back only after a complete response whose framing allowed reuse. Before
reuse it is checked: one the engine knows to hold nothing (its readiness cache: no byte and
no end of stream came since it found the socket empty) is reused without a syscall; any
other is checked with a non-blocking peek, and a connection the server closed (EOF) or that
has unexpected bytes pending is dropped. Connections idle for longer than `max_idle`
seconds are closed (haproxy's pool-purge-delay, 5 s by default): on the way by get() and
put(), and by purge(), which the backend runs on a timer so that a worker gone quiet lets
go of them too.
"""
from __future__ import annotations

import socket
from collections import deque
from typing import Callable

from splicer.runtime.io import forget


def _close(sock: socket.socket) -> None:
    forget(sock)
    sock.close()


class IdlePool:
    """Idle connections of one server.

    Args:
        max_idle: seconds a connection may stay idle before it is closed.
        max_conns: most idle connections kept; more are closed on put().
    """

    def __init__(self, max_idle: float = 5.0, max_conns: int = 256) -> None:
        self.max_idle = max_idle
        self.max_conns = max_conns
        self._idle: deque[tuple[socket.socket, float]] = deque()

    def __len__(self) -> int:
        return len(self._idle)

    def get(self, now: float, quiet: Callable[[socket.socket], bool] | None = None) -> socket.socket | None:
        """The most recently used live connection, or None. Stale ones are closed on the way.

        Args:
            now: loop time, seconds.
            quiet: tells, without a syscall, that a socket holds nothing to read
                (Engine.quiet); a socket it does not vouch for is peeked at.
        """
        while self._idle:
            sock, since = self._idle.pop()
            if now - since > self.max_idle:
                _close(sock)
                continue
            if quiet is not None and quiet(sock):
                return sock
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    _close(sock)  # unsolicited bytes: the connection is out of step
                    continue
                _close(sock)  # b"": the server closed it
                continue
            except (BlockingIOError, InterruptedError):
                return sock  # nothing pending: alive and idle
            except OSError:
                _close(sock)
        return None

    def put(self, sock: socket.socket, now: float) -> None:
        """Keep `sock` for reuse; the oldest idle connections are closed beyond max_conns."""
        self._idle.append((sock, now))
        while len(self._idle) > self.max_conns:
            _close(self._idle.popleft()[0])
        while self._idle and now - self._idle[0][1] > self.max_idle:
            _close(self._idle.popleft()[0])

    def purge(self, now: float) -> float | None:
        """Close the connections idle for `max_idle` seconds or more; returns when the oldest
        one left is due (loop time), None when none is left."""
        while self._idle and now - self._idle[0][1] >= self.max_idle:
            _close(self._idle.popleft()[0])
        return self._idle[0][1] + self.max_idle if self._idle else None

    def close(self) -> None:
        """Close every idle connection."""
        while self._idle:
            _close(self._idle.pop()[0])
