"""The Balancer interface, mirroring haproxy's lb_ops: pick, up/down, take/drop a connection.

Rule: a balancer only decides. It knows each server's weight, whether it is usable, its
active connection count and its maxconn; the caller reports every change. It never reads
the clock or touches a socket.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence


class Balancer:
    """Base of the algorithms; servers are referred to by index into the backend's list.

    Args:
        weights: one weight per server (haproxy `weight`, 0..256; 0 = never picked).
        maxconns: one limit per server (haproxy `maxconn`; 0 = unlimited).

    Attributes:
        up: usable flag per server (False: down or in maintenance).
        active: current connections per server.
    """

    def __init__(self, weights: Sequence[int], maxconns: Sequence[int] | None = None) -> None:
        self.weights = list(weights)
        self.maxconns = list(maxconns) if maxconns is not None else [0] * len(self.weights)
        self.up = [True] * len(self.weights)
        self.active = [0] * len(self.weights)

    def usable(self, i: int) -> bool:
        """True when server `i` is up, has a weight and is under its maxconn."""
        m = self.maxconns[i]
        return self.up[i] and self.weights[i] > 0 and (m == 0 or self.active[i] < m)

    def any_up(self) -> bool:
        """True when at least one server is up with a non-zero weight (full or not)."""
        return any(u and w > 0 for u, w in zip(self.up, self.weights))

    def pick(self, avoid: Iterable[int] = ()) -> int | None:
        """Choose a server for a new request.

        Args:
            avoid: indexes not to choose (servers that already failed for this request).

        Returns:
            A server index, or None when no usable server remains (all down, full or avoided).
        """
        raise NotImplementedError

    def set_up(self, i: int, up: bool) -> None:
        """Report server `i` as usable or not (haproxy set_server_status_up/down)."""
        self.up[i] = up

    def take_conn(self, i: int) -> None:
        """Count a connection (a request being served) on server `i` (haproxy server_take_conn)."""
        self.active[i] += 1

    def drop_conn(self, i: int) -> None:
        """Release a connection counted by take_conn (haproxy server_drop_conn)."""
        self.active[i] -= 1
