"""`balance roundrobin`: each server in turn, in proportion to its (dynamic) weight.

Uses smooth weighted round-robin (as nginx): every pick adds each usable server's effective
weight to its current score, takes the highest, and subtracts the total. Over any window of
sum(weights) picks each server gets exactly its share, and picks of one server are spread
out instead of bunched (haproxy's fwrr gives the same proportions). The weights are read at
each pick, so a weight change or a slowstart ramp takes effect at the next request (haproxy:
roundrobin is a dynamic algorithm). Only the group in use takes part (base.py: the active
servers, or the backups when none is up).
"""
from __future__ import annotations

from collections.abc import Iterable

from splicer.balance.base import WEIGHT_SCALE, Balancer


class RoundRobin(Balancer):
    """haproxy `balance roundrobin` (weighted, dynamic weights, backups, slowstart)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._current = [0] * len(self.weights)

    def pick(self, avoid: Iterable[int] = (), key: int | None = None, now: float = 0.0) -> int | None:
        """See Balancer.pick. Deterministic: same sequence of calls, same picks."""
        avoid = set(avoid)
        best = None
        total = 0
        cur = self._current
        ramping = self.ramping
        for i in self.group():
            if i in avoid:
                continue
            if ramping:
                m, w = self.maxconn(i, now), self.eweight(i, now)
            else:  # the common case, spelled out: no slowstart ramp under way
                m, w = self.maxconns[i], self.weights[i] * WEIGHT_SCALE
            if m and self.active[i] >= m:
                continue
            cur[i] += w
            total += w
            if best is None or cur[i] > cur[best]:
                best = i
        if best is not None:
            cur[best] -= total
        return best

    def turn_state(self) -> list[int]:
        """See Balancer.turn_state: the servers' scores."""
        return list(self._current)

    def set_turn_state(self, state: list[int]) -> None:
        self._current[:] = state

    def unpick(self, i: int, now: float = 0.0) -> None:
        """See Balancer.unpick: a pick adds each server of the group its weight and takes the
        total from the one picked; sums commute, so taking them back leaves the scores as if
        that pick had never been, whatever came after (exact while the group and the
        weights are the same as then)."""
        if not self.up[i]:
            return  # (a server gone since starts from a zero score when it comes back)
        cur = self._current
        total = 0
        ramping = self.ramping
        for j in self.group():
            w = self.eweight(j, now) if ramping else self.weights[j] * WEIGHT_SCALE
            cur[j] -= w
            total += w
        cur[i] += total

    def set_up(self, i: int, up: bool, now: float = 0.0) -> None:
        """See Balancer.set_up; a server that comes back starts from a zero score."""
        if up != self.up[i]:
            self._current[i] = 0
        super().set_up(i, up, now)
