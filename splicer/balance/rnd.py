"""`balance random[(<draws>)]`: the least loaded of `draws` random points of the consistent ring.

Rule: each draw takes a random 32-bit key and looks it up on the ring of chash.py (weights,
backups, slowstart and `hash-balance-factor` apply); of the servers drawn, the one with the
fewest active connections relative to its weight wins (power of d choices; haproxy
get_server_rnd(), default draws = 2). When the winner is full the pick returns None and the
request waits in the queue. The random numbers come from a `random.Random` the caller gives
(seeded in tests), never from the clock.
"""
from __future__ import annotations

import random as _random
from collections.abc import Iterable

from splicer.balance.chash import ConsistentHash


class Random(ConsistentHash):
    """haproxy `balance random(<draws>)`.

    Args:
        *args, **kwargs: as ConsistentHash.
        draws: points drawn per pick, >= 1 (haproxy default 2).
        rng: the source of random keys (default: a new unseeded random.Random).
    """

    def __init__(self, *args, draws: int = 2, rng: _random.Random | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.draws = max(1, draws)
        self.rng = rng if rng is not None else _random.Random()

    def pick(self, avoid: Iterable[int] = (), key: int | None = None, now: float = 0.0) -> int | None:
        """See Balancer.pick (`key` is ignored: the keys are random)."""
        avoid = set(avoid)
        best = None
        for _ in range(self.draws):
            cur = self.lookup(self.rng.getrandbits(32), avoid, now)
            if cur is None:
                break
            if best is not None and best != cur:
                # the lower active/weight wins; on a tie the later draw (haproxy then
                # compares request rates, which splicer does not keep)
                if self.active[cur] * self.eweight(best, now) > self.active[best] * self.eweight(cur, now):
                    cur = best
            best = cur
        return best if best is not None and self.usable(best, now) else None
