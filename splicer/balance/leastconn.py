"""`balance leastconn`: the server with the fewest active connections relative to its weight.

Ties are broken round-robin, as haproxy does, so equal servers share the load in turn.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from splicer.balance.base import Balancer


class LeastConn(Balancer):
    """haproxy `balance leastconn`: lowest active/weight wins, ties in turn."""

    def __init__(self, weights: Sequence[int], maxconns: Sequence[int] | None = None) -> None:
        super().__init__(weights, maxconns)
        self._next = 0

    def pick(self, avoid: Iterable[int] = ()) -> int | None:
        """See Balancer.pick."""
        avoid = set(avoid)
        n = len(self.weights)
        best = None
        best_load = 0.0
        for k in range(n):
            i = (self._next + k) % n
            if i in avoid or not self.usable(i):
                continue
            load = (self.active[i] + 1) / self.weights[i]
            if best is None or load < best_load:
                best, best_load = i, load
        if best is not None:
            self._next = (best + 1) % n
        return best
