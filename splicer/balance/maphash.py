"""`hash-type map-based`: a request's hash picks slot `hash % len(map)` of the server map.

Rule: the hash algorithms (`source`, `uri`, `url_param`, `hdr()`) give a 32-bit key
(balance/key.py); this balancer maps it onto the map of lbmap.py exactly as haproxy's
map_get_server_hash() does, so the same key and server list give haproxy's server. A
request without a key (no parameter, no header) takes the map's slots in turn (haproxy falls
back to round-robin). When the key's server is full the pick returns None and the request
waits in the queue for it; when it is avoided (it failed this request) the next slot's
server that is not is taken. Most keys move when a server goes up or down (use
`hash-type consistent` to avoid that).
"""
from __future__ import annotations

from collections.abc import Iterable

from splicer.balance.lbmap import MapBalancer


class MapHash(MapBalancer):
    """haproxy `hash-type map-based` for the hash algorithms."""

    def pick(self, avoid: Iterable[int] = (), key: int | None = None, now: float = 0.0) -> int | None:
        """See Balancer.pick."""
        avoid = set(avoid)
        if key is None:
            return self.next_in_turn(avoid, now)
        slots = self.map
        n = len(slots)
        if n == 0:
            return None
        start = key % n
        for k in range(n):
            i = slots[(start + k) % n]
            if i not in avoid:
                return i if self.usable(i, now) else None
        return None
