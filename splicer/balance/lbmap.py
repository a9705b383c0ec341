"""The server map of haproxy's static algorithms, and `balance static-rr` which walks it.

Rule: a map is a table of sum(weights) slots (weights divided by their greatest common
divisor), each naming one server of the group in use, spread smoothly and in declaration
order for equal weights; it is rebuilt only when a server goes up or down, never when a
weight changes while it is up (haproxy src/lb_map.c: static-rr and `hash-type map-based`
are static). `static-rr` takes the slots in turn, skipping full servers; map-based hashing
(maphash.py) takes slot `hash % len(map)`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from splicer.balance.base import Balancer


def build_map(weights: dict[int, int]) -> list[int]:
    """Spread servers over one slot per unit of weight.

    Args:
        weights: server index -> weight (> 0), in declaration order; the servers of the
            group in use only.

    Returns:
        The slots, len == sum of the weights after dividing them by their gcd. Each pass
        adds every server's weight to its score and gives the slot to the highest score
        (the first one on a tie), which then loses the total (haproxy recalc_server_map()).
        Empty when `weights` is.
    """
    if not weights:
        return []
    g = 0
    for w in weights.values():
        g = math.gcd(g, w)
    scaled = {i: w // g for i, w in weights.items()}
    tot = sum(scaled.values())
    if tot == 1:
        return [next(iter(scaled))]
    score = dict.fromkeys(scaled, 0)
    slots = []
    for _ in range(tot):
        best, best_v = -1, -1
        for i, w in scaled.items():
            score[i] += w
            v = (score[i] + tot) // tot
            if v > best_v:
                best, best_v = i, v
        slots.append(best)
        score[best] -= tot
    return slots


class MapBalancer(Balancer):
    """Base of the map-based algorithms: keeps the map of the group in use up to date.

    Weights are read when the map is built (at start and when a server goes up or
    down), so a weight change while the server is up waits for the next rebuild.
    """

    dynamic = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._rr = 0
        self._rebuild()

    def _rebuild(self) -> None:
        self.map = build_map({i: self.weights[i] for i in self.group()})

    def set_up(self, i: int, up: bool, now: float = 0.0) -> None:
        """See Balancer.set_up; the map is rebuilt when the state changes."""
        changed = up != self.up[i]
        super().set_up(i, up, now)
        if changed:
            self._rebuild()

    def set_weight(self, i: int, weight: int) -> None:
        """See Balancer.set_weight: only a change to or from 0 takes effect at once (the
        server leaves or joins the map); other changes at the next rebuild (haproxy
        accepts only 0% and 100% on a static algorithm)."""
        changed = (weight == 0) != (self.weights[i] == 0)
        super().set_weight(i, weight)
        if changed:
            self._rebuild()

    def next_in_turn(self, avoid: set[int], now: float) -> int | None:
        """The next slot's server that is not full nor avoided, from the round-robin
        cursor (haproxy map_get_server_rr()); None when every slot is."""
        slots = self.map
        n = len(slots)
        if n == 0:
            return None
        if not 0 <= self._rr < n:
            self._rr = 0
        for k in range(n):
            idx = (self._rr + k) % n
            i = slots[idx]
            if i not in avoid and self.usable(i, now):
                self._rr = (idx + 1) % n
                return i
        return None


class StaticRR(MapBalancer):
    """haproxy `balance static-rr`: the map's slots in turn (weights are static)."""

    def pick(self, avoid: Iterable[int] = (), key: int | None = None, now: float = 0.0) -> int | None:
        """See Balancer.pick."""
        return self.next_in_turn(set(avoid), now)
