"""`hash-type consistent`: servers as points on a 32-bit ring, a key goes to the closest point.

Rule: each server of the group in use has one point per unit of effective weight (16 per
unit of `weight`, fewer during a slowstart ramp) at `full_hash(id * 4096 + n)`, id being its
1-based position in the backend (haproxy src/lb_chash.c: the default `hash-key id`, and
SRV_EWGHT_RANGE = 4096), so two proxies with the same server list agree. A key picks the
point closest to it, before or after (the one before on a tie). A server going down or up,
or changing weight, removes or adds only its own points: only the keys that were, or will
be, its own move. Active and backup servers have a ring each; with a single backup in use
(no `option allbackups`) it takes every request.

With `hash-balance-factor F` (> 100) a server is skipped, walking on along the ring, while it
serves as many requests as its share of ceil((all served + 1) * F / 100): no server gets
more than F/100 of its weighted mean ("Consistent Hashing with Bounded Loads", Mirrokni,
Thorup and Zadimoghaddam, arXiv:1608.01350; haproxy chash_server_is_eligible()). A request
without a key walks the ring one point further than the last one (haproxy
chash_get_next_server(): weighted round-robin). Pure: no clock, no I/O.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable

from splicer.balance.base import WEIGHT_SCALE, Balancer
from splicer.balance.hashing import MASK, full_hash

ID_RANGE = 256 * WEIGHT_SCALE
"""Points a server id spans on the ring before the next id's (haproxy SRV_EWGHT_RANGE)."""


def point(server: int, n: int) -> int:
    """The ring position of point `n` of the server at index `server` (id = index + 1)."""
    return full_hash(((server + 1) * ID_RANGE + n) & MASK)


class ConsistentHash(Balancer):
    """haproxy `hash-type consistent` for the hash algorithms (and the ring of `random`).

    Args:
        *args, **kwargs: as Balancer.
        balance_factor: haproxy `hash-balance-factor`, 0 (no bound) or > 100.
    """

    def __init__(self, *args, balance_factor: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.balance_factor = balance_factor
        n = len(self.weights)
        self._rings: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])  # active, backup
        self._points = [0] * n            # points of each server on its ring now
        self._last: tuple[int, int] | None = None  # the keyless walk's last point
        for i in range(n):
            self._sync(i, 0.0)

    # -- ring upkeep ---------------------------------------------------------------------------

    def _sync(self, i: int, now: float) -> None:
        """Give server `i` as many points as its effective weight (0 when not alive)."""
        want = self.eweight(i, now) if self.alive(i) else 0
        ring = self._rings[self.backups[i]]
        have = self._points[i]
        while have > want:
            have -= 1
            del ring[bisect.bisect_left(ring, (point(i, have), i))]
        while have < want:
            bisect.insort(ring, (point(i, have), i))
            have += 1
        self._points[i] = have

    def _warm(self, now: float) -> None:
        """Follow the slowstart ramps: resync the servers whose ramp is under way."""
        for i, since in enumerate(self._up_at):
            if since is not None or self._points[i] != (self.eweight(i, now) if self.alive(i) else 0):
                self._sync(i, now)

    def set_up(self, i: int, up: bool, now: float = 0.0) -> None:
        """See Balancer.set_up: adds or removes server `i`'s points only."""
        super().set_up(i, up, now)
        self._sync(i, now)

    def set_weight(self, i: int, weight: int, now: float = 0.0) -> None:
        """See Balancer.set_weight: adds or removes server `i`'s last points only."""
        super().set_weight(i, weight)
        self._sync(i, now)

    # -- lookups -------------------------------------------------------------------------------

    def _ring(self) -> tuple[list[tuple[int, int]] | None, int | None]:
        """(ring, None) for the group in use, or (None, the single backup) or (None, None)."""
        group = self.group()
        if not group:
            return None, None
        if self.backups[group[0]] and not self.allbackups:
            return None, group[0]
        return self._rings[self.backups[group[0]]], None

    def _slots(self, now: float) -> dict[int, int]:
        """Bounded loads: the most requests each server of the group may serve now (module
        docstring): its weighted share of ceil((all served + 1) * factor / 100), the
        remainder spread by cumulative weight, at least 1 (haproxy
        chash_server_is_eligible())."""
        group = self.group()
        weights = [self.eweight(k, now) for k in group]
        tot = sum(weights)
        out: dict[int, int] = {}
        if tot == 0:
            return out
        allowed = ((sum(self.active) + 1) * self.balance_factor + 99) // 100
        per, rem = divmod(allowed, tot)
        before = 0
        for k, w in zip(group, weights):
            slots = w * per + ((before + w) * rem) // tot - (before * rem) // tot
            out[k] = max(slots, 1)
            before += w
        return out

    def eligible(self, i: int, now: float) -> bool:
        """Bounded loads: server `i` is under its share of the allowed total; always True
        without `hash-balance-factor`."""
        if not self.balance_factor:
            return True
        return self.active[i] < self._slots(now).get(i, 0)

    def lookup(self, key: int, avoid: set[int], now: float) -> int | None:
        """The server the ring gives `key` (full or not), skipping avoided and, with a
        balance factor, overloaded servers; None when the group is empty or every
        candidate is avoided (haproxy chash_get_server_hash())."""
        self._warm(now)
        ring, single = self._ring()
        if ring is None:
            return single if single is not None and single not in avoid else None
        if not ring:
            return None
        n = len(ring)
        pos = bisect.bisect_left(ring, (key, -1)) % n
        prev = (pos - 1) % n
        if (key - ring[prev][0]) & MASK <= (ring[pos][0] - key) & MASK:
            pos = prev
        slots = self._slots(now) if self.balance_factor else None
        for k in range(n):
            i = ring[(pos + k) % n][1]
            if i not in avoid and (slots is None or self.active[i] < slots.get(i, 0)):
                return i
        return None

    def next_in_turn(self, avoid: set[int], now: float) -> int | None:
        """The keyless pick: the server of the point after the last one taken, skipping
        full and avoided servers (haproxy chash_get_next_server())."""
        self._warm(now)
        ring, single = self._ring()
        if ring is None:
            return single if single is not None and single not in avoid and self.usable(single, now) else None
        n = len(ring)
        if n == 0:
            return None
        start = 0 if self._last is None else bisect.bisect_right(ring, self._last) % n
        for k in range(n):
            node = ring[(start + k) % n]
            if node[1] not in avoid and self.usable(node[1], now):
                self._last = node
                return node[1]
        return None

    def pick(self, avoid: Iterable[int] = (), key: int | None = None, now: float = 0.0) -> int | None:
        """See Balancer.pick: the key's server, or None when it is full (the request
        waits for it in the queue); keyless requests in turn."""
        avoid = set(avoid)
        if key is None:
            return self.next_in_turn(avoid, now)
        i = self.lookup(key, avoid, now)
        return i if i is not None and self.usable(i, now) else None
