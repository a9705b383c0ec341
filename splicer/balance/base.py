"""The Balancer interface, mirroring haproxy's lb_ops: pick, up/down, weight, take/drop a connection.

Rule: a balancer only decides. It knows each server's weight, whether it is usable, whether
it is a backup, its active connection count and its maxconn; the caller reports every
change. It never reads the clock or touches a socket: time comes in as `now` (float
seconds, any monotonic origin) and randomness from a `random.Random` the caller may seed.

Theory of operation (haproxy src/backend.c recount_servers(), update_backend_weight()):
the servers a pick chooses among are the *group in use*: every active (non-backup) server
that is up with a non-zero weight; when there is none, the backup servers that are up, all
of them with `option allbackups`, else only the first one in declaration order. A server at
its maxconn stays in the group (it is full, not down): a pick that finds the group full
returns None and the request waits in the backend queue. Weights are kept as haproxy's
effective weights, in 1/16 units of the configured weight (BE_WEIGHT_SCALE), so that
`slowstart` can ramp them: a server that comes UP again starts at 1/16 of its weight and
grows linearly to all of it over `slowstart` seconds, and its maxconn from 1 to all of it
(src/server.c server_recalc_eweight(), srv_dynamic_maxconn()). Static algorithms
(static-rr, map-based hashing) ignore the ramp of the weight, as haproxy's do.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

WEIGHT_SCALE = 16
"""Effective weight units per configured weight unit (haproxy BE_WEIGHT_SCALE)."""


class Balancer:
    """Base of the algorithms; servers are referred to by index into the backend's list.

    Args:
        weights: one weight per server (haproxy `weight`, 0..256; 0 = never picked).
        maxconns: one limit per server (haproxy `maxconn`; 0 = unlimited).
        backups: one flag per server (haproxy `backup`); None = no backup server.
        allbackups: haproxy `option allbackups`: every backup takes traffic when all the
            active servers are down, not only the first one.
        slowstarts: seconds per server of haproxy `slowstart` (0 = none); None = none.

    Attributes:
        up: usable flag per server (False: down or in maintenance).
        active: current connections per server.
        active_max: the highest `active` each server reached (haproxy's smax).
    """

    dynamic = True
    """The algorithm follows weight changes at run time (haproxy BE_LB_PROP_DYN)."""

    def __init__(self, weights: Sequence[int], maxconns: Sequence[int] | None = None,
                 backups: Sequence[bool] | None = None, allbackups: bool = False,
                 slowstarts: Sequence[float] | None = None) -> None:
        n = len(weights)
        self.weights = list(weights)
        self.maxconns = list(maxconns) if maxconns is not None else [0] * n
        self.backups = list(backups) if backups is not None else [False] * n
        self.allbackups = allbackups
        self.slowstarts = list(slowstarts) if slowstarts is not None else [0.0] * n
        self.up = [True] * n
        self.active = [0] * n
        self.active_max = [0] * n  # highest `active` seen per server (haproxy smax)
        self._up_at: list[float | None] = [None] * n  # when a slowstart ramp began (None: at full)
        self._group: list[int] | None = None  # group() until the next set_up/set_weight
        self.ramping = 0  # servers whose slowstart ramp is under way (0: every one at full)

    # -- weights ----------------------------------------------------------------------------

    def warming(self, i: int, now: float) -> float | None:
        """The fraction 0..1 of server `i`'s slowstart ramp done at `now`, or None when it
        runs at full weight (no slowstart, never went down, or the ramp is over)."""
        since = self._up_at[i]
        if since is None:
            return None
        span = self.slowstarts[i]
        done = (now - since) / span if span > 0 else 1.0
        if done >= 1.0 or done < 0.0:
            self._up_at[i] = None
            self.ramping -= 1
            return None
        return done

    def eweight(self, i: int, now: float = 0.0) -> int:
        """Server `i`'s effective weight at `now`, in 1/16 units of its weight.

        Returns:
            weight * 16 at full speed; during a slowstart ramp (dynamic algorithms only)
            weight * w with w = floor(16 * done + 1) capped at 16, `done` the fraction of
            the ramp elapsed (haproxy server_recalc_eweight(): 1/16 at once, then linear).
        """
        w = self.weights[i]
        if not self.dynamic:
            return w * WEIGHT_SCALE
        done = self.warming(i, now)
        if done is None:
            return w * WEIGHT_SCALE
        return w * min(WEIGHT_SCALE, int(WEIGHT_SCALE * done) + 1)

    def maxconn(self, i: int, now: float = 0.0) -> int:
        """Server `i`'s connection limit at `now` (0 = unlimited): its maxconn, ramped from
        1 during slowstart (haproxy srv_dynamic_maxconn())."""
        m = self.maxconns[i]
        if m == 0:
            return 0
        done = self.warming(i, now)
        return m if done is None else max(1, int(m * done))

    # -- the group in use -----------------------------------------------------------------

    def alive(self, i: int) -> bool:
        """True when server `i` is up with a non-zero weight (full or not): haproxy's
        srv_willbe_usable()."""
        return self.up[i] and self.weights[i] > 0

    def group(self) -> list[int]:
        """The servers a pick chooses among now, in declaration order (see the module
        docstring): the live active servers, else the live backups (all with
        `option allbackups`, else the first), else none. Do not change the list."""
        if self._group is None:
            self._group = self._compute_group()
        return self._group

    def _compute_group(self) -> list[int]:
        n = len(self.weights)
        active = [i for i in range(n) if not self.backups[i] and self.alive(i)]
        if active:
            return active
        backup = [i for i in range(n) if self.backups[i] and self.alive(i)]
        return backup if self.allbackups else backup[:1]

    def usable(self, i: int, now: float = 0.0) -> bool:
        """True when server `i` is up, has a weight and is under its maxconn."""
        m = self.maxconn(i, now)
        return self.alive(i) and (m == 0 or self.active[i] < m)

    def any_up(self) -> bool:
        """True when at least one server is up with a non-zero weight (full or not)."""
        return any(self.alive(i) for i in range(len(self.weights)))

    # -- the lb_ops --------------------------------------------------------------------------

    def pick(self, avoid: Iterable[int] = (), key: int | None = None, now: float = 0.0) -> int | None:
        """Choose a server for a new request.

        Args:
            avoid: indexes not to choose (servers that already failed for this request).
            key: the request's 32-bit hash for the hashing algorithms (balance/key.py);
                None when the request has none (they fall back to round-robin, as
                haproxy); the other algorithms ignore it.
            now: the current time, seconds (slowstart ramps).

        Returns:
            A server index, or None when no usable server remains (all down, full or avoided).
        """
        raise NotImplementedError

    def turn_state(self):
        """What pick() changes of the algorithm's own state (its turn), for set_turn_state()
        to put back right after a pick that was not used. None: the algorithm keeps none."""
        return None

    def set_turn_state(self, state) -> None:
        """Put back a turn_state() taken just before the last pick()."""

    def unpick(self, i: int, now: float = 0.0) -> None:
        """Take back an earlier pick of server `i` that served no request (an express credit
        given back: runtime/express.py), whatever was picked since, as far as the algorithm
        can; its default takes back nothing."""

    def set_up(self, i: int, up: bool, now: float = 0.0) -> None:
        """Report server `i` as usable or not (haproxy set_server_status_up/down). A server
        that comes back UP with a `slowstart` starts its ramp at `now`."""
        if up and not self.up[i] and self.slowstarts[i] > 0:
            if self._up_at[i] is None:
                self.ramping += 1
            self._up_at[i] = now
        elif not up and self._up_at[i] is not None:
            self._up_at[i] = None
            self.ramping -= 1
        self.up[i] = up
        self._group = None

    def set_weight(self, i: int, weight: int) -> None:
        """Change server `i`'s configured weight, 0..256 (haproxy update_server_eweight;
        static algorithms ignore it while the server stays up)."""
        self.weights[i] = weight
        self._group = None

    def take_conn(self, i: int) -> None:
        """Count a connection (a request being served) on server `i` (haproxy server_take_conn)."""
        a = self.active[i] = self.active[i] + 1
        if a > self.active_max[i]:
            self.active_max[i] = a

    def drop_conn(self, i: int) -> None:
        """Release a connection counted by take_conn (haproxy server_drop_conn)."""
        self.active[i] -= 1
