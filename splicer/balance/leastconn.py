"""`balance leastconn`: the server with the fewest active connections relative to its weight.

Ties are broken round-robin, as haproxy does, so equal servers share the load in turn. The
effective weight (slowstart ramp included) is read at each pick; only the group in use
(base.py) takes part.
"""
from __future__ import annotations

from collections.abc import Iterable

from splicer.balance.base import Balancer


class LeastConn(Balancer):
    """haproxy `balance leastconn`: lowest (active + 1) / weight wins, ties in turn."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._next = 0

    def pick(self, avoid: Iterable[int] = (), key: int | None = None, now: float = 0.0) -> int | None:
        """See Balancer.pick."""
        avoid = set(avoid)
        n = len(self.weights)
        members = set(self.group())
        best = None
        best_load = 0.0
        for k in range(n):
            i = (self._next + k) % n
            if i not in members or i in avoid or not self.usable(i, now):
                continue
            load = (self.active[i] + 1) / self.eweight(i, now)
            if best is None or load < best_load:
                best, best_load = i, load
        if best is not None:
            self._next = (best + 1) % n
        return best
