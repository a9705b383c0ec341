"""`balance roundrobin`: each server in turn, in proportion to its weight.

Uses smooth weighted round-robin (as nginx): every pick adds each usable server's weight to
its current score, takes the highest, and subtracts the total. Over any window of
sum(weights) picks each server gets exactly its share, and picks of one server are spread
out instead of bunched (haproxy's fwrr gives the same proportions).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from splicer.balance.base import Balancer


class RoundRobin(Balancer):
    """haproxy `balance roundrobin` (weighted; dynamic weights not supported yet)."""

    def __init__(self, weights: Sequence[int], maxconns: Sequence[int] | None = None) -> None:
        super().__init__(weights, maxconns)
        self._current = [0] * len(self.weights)

    def pick(self, avoid: Iterable[int] = ()) -> int | None:
        """See Balancer.pick. Deterministic: same sequence of calls, same picks."""
        avoid = set(avoid)
        best = None
        total = 0
        cur = self._current
        for i, w in enumerate(self.weights):
            if i in avoid or not self.usable(i):
                continue
            cur[i] += w
            total += w
            if best is None or cur[i] > cur[best]:
                best = i
        if best is not None:
            cur[best] -= total
        return best
