"""Idle server connections kept alive for reuse, per server, and which requests may reuse them.

Rule: `reuse_floor()` alone decides, from the backend's `http-reuse` strategy (haproxy
configuration.txt 4.2 "http-reuse", default `safe`), whether a request may take an idle
connection and how proven that connection must be; IdlePool only keeps the connections.

A connection is put back only after a complete response whose framing allowed reuse. Each
one remembers how many requests it has served. Before
reuse it is checked: one the engine knows to hold nothing (its readiness cache: no byte and
no end of stream came since it found the socket empty) is reused without a syscall; any
other is checked with a non-blocking peek, and a connection the server closed (EOF) or that
has unexpected bytes pending is dropped. Connections idle for longer than `max_idle`
seconds are closed (haproxy's pool-purge-delay, 5 s by default): on the way by get() and
put(), and by purge(), which the backend runs on a timer so that a worker gone quiet lets
go of them too. All the pools of a worker together keep at most HIGH_FD_RATIO of its file
descriptors idle (haproxy's tune.pool-high-fd-ratio, 25 % by default): beyond it a
connection is closed instead of pooled, so that idle connections never starve the accepts
and connects (with `http-reuse safe`, every client session's first request opens one).

Within that share a pool keeps only what the server's traffic needs, as haproxy 2.x does
(server.c: est_need_conns, max_used_conns, srv_add_to_idle_list): it always keeps one idle
connection, and more only while the connections in use plus the idle ones stay within the
estimated need, the most connections in use at once lately. The estimate follows a rise at
once and decays by half toward the period's peak every `max_idle` seconds (pool-purge-delay).
Without it every client session's first request under `http-reuse safe`, which opens a
connection of its own, would leave one more idle connection behind: thousands of idle
clients would hold thousands of idle server connections that no request can take.
"""
from __future__ import annotations

import socket
from collections import deque
from typing import Callable

from splicer.runtime.io import forget

HIGH_FD_RATIO = 0.25
"""Share of the worker's file descriptor limit (RLIMIT_NOFILE) that idle server connections
may hold, all pools together (haproxy tune.pool-high-fd-ratio, default 25)."""

_idle_total = 0        # idle connections in every pool of this process
_idle_limit: int | None = None


def _limit() -> int:
    global _idle_limit
    if _idle_limit is None:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        _idle_limit = int(soft * HIGH_FD_RATIO) if soft != resource.RLIM_INFINITY else 1 << 30
    return _idle_limit

REUSE_STRATEGIES = ("never", "safe", "aggressive", "always")


def reuse_floor(strategy: str, first: bool) -> int | None:
    """Whether a request may go on an idle server connection, by haproxy's `http-reuse`.

    Args:
        strategy: "never", "safe", "aggressive" or "always".
        first: the request is the first of its client session.

    Returns:
        None: it must not (a new connection is opened); else the fewest requests an idle
        connection must have served to be taken: `never` none at all; `safe` none for a
        session's first request (it may be a client's own connection), any for the later
        ones; `aggressive` for a first request only a connection that has been reused
        already (served at least 2 requests: the server is known to keep connections),
        any for the later ones; `always` any, whatever the request's method or body, as
        haproxy (a request that cannot be sent again and is dropped by the server on a
        reused connection is answered 502: runtime/stream.py).
    """
    if strategy == "never":
        return None
    if strategy == "safe":
        return None if first else 0
    if strategy == "aggressive":
        return 2 if first else 0
    return 0


def _close(sock: socket.socket) -> None:
    forget(sock)
    sock.close()


class IdlePool:
    """Idle connections of one server.

    Args:
        max_idle: seconds a connection may stay idle before it is closed.
        max_conns: most idle connections kept (haproxy `pool-max-conn`; -1: no limit, 0: none
            kept); more are closed on put().
    """

    def __init__(self, max_idle: float = 5.0, max_conns: int = -1) -> None:
        self.max_idle = max_idle
        self.max_conns = max_conns
        self._idle: deque[tuple[socket.socket, float, int]] = deque()  # (sock, since, requests served)
        self.need = 0        # connections needed at once, estimated (haproxy est_need_conns)
        self.max_used = 0    # most connections in use at once this period (haproxy max_used_conns)
        self._period = None  # when the estimate's period ends (loop time); None: not started

    def note_used(self, used: int) -> None:
        """`used` connections to the server are in use now (one was just lent): the
        period's peak and the estimate rise to it at once."""
        if used > self.max_used:
            self.max_used = used
            if used > self.need:
                self.need = used

    def _roll(self, now: float, used: int) -> None:
        """End the periods of `max_idle` seconds that are over: each one halves the
        estimate's distance to its peak (never below the peak), and the next period's peak
        starts at the connections in use now (`used`)."""
        if self._period is None:
            self._period = now + self.max_idle
            return
        periods = 0
        while now >= self._period and periods < 32:
            self.need = max((self.need + self.max_used) // 2, self.max_used)
            self.max_used = used
            self._period += self.max_idle
            periods += 1
        if now >= self._period:  # idle for ages: the estimate is the peak of now
            self.need = self.max_used = used
            self._period = now + self.max_idle

    def wanted(self, now: float, used: int) -> bool:
        """Whether one more idle connection is worth keeping, `used` others being in use
        (haproxy srv_add_to_idle_list(): the first one always; more while in use plus idle
        stay within the estimated need)."""
        if self._period is None or now >= self._period:
            self._roll(now, used)
        n = len(self._idle)
        return not n or used + 1 + n <= self.need  # (need >= used + 1: it counts this one's lease)

    def __len__(self) -> int:
        return len(self._idle)

    def _pop(self) -> tuple[socket.socket, float, int]:
        global _idle_total
        _idle_total -= 1
        return self._idle.pop()

    def _popleft(self) -> tuple[socket.socket, float, int]:
        global _idle_total
        _idle_total -= 1
        return self._idle.popleft()

    def get(self, now: float, quiet: Callable[[socket.socket], bool] | None = None) -> socket.socket | None:
        """The most recently used live connection, or None. Stale ones are closed on the way.

        Args:
            now: loop time, seconds.
            quiet: tells, without a syscall, that a socket holds nothing to read
                (Engine.quiet); a socket it does not vouch for is peeked at.
        """
        got = self.take(now, quiet)
        return None if got is None else got[0]

    def take(self, now: float, quiet: Callable[[socket.socket], bool] | None = None,
             min_uses: int = 0) -> tuple[socket.socket, int] | None:
        """get(), for a connection that has served at least `min_uses` requests (the
        others stay pooled); returns (socket, requests it served) or None."""
        global _idle_total
        skipped: list = []
        try:
            return self._take(now, quiet, min_uses, skipped)
        finally:
            self._idle.extend(reversed(skipped))
            _idle_total += len(skipped)

    def _take(self, now, quiet, min_uses, skipped):
        while self._idle:
            sock, since, uses = self._pop()
            if now - since > self.max_idle:
                _close(sock)
                continue
            if uses < min_uses:
                skipped.append((sock, since, uses))
                continue
            if quiet is not None and quiet(sock):
                return sock, uses
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    _close(sock)  # unsolicited bytes: the connection is out of step
                    continue
                _close(sock)  # b"": the server closed it
                continue
            except (BlockingIOError, InterruptedError):
                return sock, uses  # nothing pending: alive and idle
            except OSError:
                _close(sock)
        return None

    def put(self, sock: socket.socket, now: float, uses: int = 1, used: int | None = None) -> None:
        """Keep `sock`, which has served `uses` requests, for reuse; the oldest idle
        connections are closed beyond max_conns. `used`: the server's connections in use
        besides this one, to keep it only when the traffic needs it (wanted()); None keeps
        it whatever the need."""
        global _idle_total
        if _idle_total >= _limit() or (used is not None and not self.wanted(now, used)):
            _close(sock)  # the worker's idle connections hold their share of its fds already,
            return        # or the server's traffic needs no more idle connections
        self._idle.append((sock, now, uses))
        _idle_total += 1
        while self.max_conns >= 0 and len(self._idle) > self.max_conns:
            _close(self._popleft()[0])
        while self._idle and now - self._idle[0][1] > self.max_idle:
            _close(self._popleft()[0])

    def purge(self, now: float) -> float | None:
        """Close the connections idle for `max_idle` seconds or more; returns when the oldest
        one left is due (loop time), None when none is left."""
        while self._idle and now - self._idle[0][1] >= self.max_idle:
            _close(self._popleft()[0])
        return self._idle[0][1] + self.max_idle if self._idle else None

    def close(self) -> None:
        """Close every idle connection."""
        while self._idle:
            _close(self._pop()[0])
