"""`balance first`: the first server, in declaration order, that has a free connection slot.

Rule: servers are tried from the first declared (haproxy: the lowest id, which defaults to
the position in the backend) to the last; one under its maxconn (or without one) takes the
request, so the smallest number of servers is used. Weights are ignored, except that weight
0 takes no traffic (haproxy src/lb_fas.c). Only the group in use (base.py) takes part.
"""
from __future__ import annotations

from collections.abc import Iterable

from splicer.balance.base import Balancer


class First(Balancer):
    """haproxy `balance first`."""

    def pick(self, avoid: Iterable[int] = (), key: int | None = None, now: float = 0.0) -> int | None:
        """See Balancer.pick."""
        avoid = set(avoid)
        for i in self.group():
            if i not in avoid and self.usable(i, now):
                return i
        return None
