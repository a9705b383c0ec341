"""The express lane: a frontend's plain keep-alive requests routed by the engine by itself.

Rule: Python keeps every decision. The lane only hands the engine what it decided ahead of
time: with each relayed response of a session whose next requests may take the lane, the
fields that arm it; and, while the session waits for its next request, a credit
(engine.h "the express lane"): the server connection that request will use, the one a
stream of it would use (the balancer's pick, a connection of that server's idle pool, as
`http-reuse` allows a session's later requests; no credit when that server has none).

The engine sends the request, if it qualifies (a whole GET or HEAD head without a body, or
a POST, PUT, PATCH or DELETE whose Content-Length body came whole with it; no Upgrade,
Expect or hop-by-hop field; a plain target), on its credit, as the forwarded head the
Python path writes, relays its response and reads the next head: no Python call but the
credit's completion, which counts the request here (runtime/accounting.py
record_express), gives the connection back to its pool and lends the session its next
credit. A credit its session did not use comes back before the session hears of its next
head or its end, so the pool has it again for whatever comes next. Whatever the engine
cannot finish (a response it does not relay, a timeout, a server that closed) comes back
as a handover: the session starts the request's Stream as its own, on the credit's
connection, with what the response read said (Stream adopts it), so retries, error pages
and counting are the stream machine's.

Which frontends have a lane (lane_of()): `mode http`, a default backend and no rule that
decides per request (no Switching), no header rule, no access log, no `option forwarded`,
no `option abortonclose`; a backend balanced by `roundrobin` (no key, no count of
connections in use: a credit is picked ahead and holds no slot; a credit given back unused
takes its pick back, RoundRobin.unpick), without persistence, `observe layer7` or servers
with `maxconn`, with `http-reuse` other than `never`. Any other frontend works as before.

Differences an operator can see: a server's `scur` does not count the express requests in
flight (their connections are lent to the engine, not to a stream), and `show sess` does
not list them; a client between two requests holds its credit's connection for up to
CREDIT_HOLD seconds, so a backend may open more server connections than the stream path
would (about one per busy keep-alive client, as under load anyway), which the pool's
estimate of needed connections counts.
"""
from __future__ import annotations

from splicer.engine.binding import RELAY_EXPRESS, RELAY_XFF, X_BACKENDS, X_DONE, X_HANDOVER, X_UNUSED
from splicer.engine.engine import JobEnd
from splicer.runtime.accounting import record_express

CREDIT_HOLD = 1.0
"""Seconds a lane lets its credits wait for their requests: then those not used come back
to the pools (a flush), so that idle keep-alive clients do not hold server connections."""


class ExpressLane:
    """The express lane of one frontend (engine.h) and its credits.

    Args:
        index: its express backend number in the engine (< binding.X_BACKENDS).
        fe: the frontend (runtime/proxy.py FrontendRT); be: its default backend (Backend).
        engine: the worker's Engine.

    Attributes:
        lent: credits lent to the engine now.
        handed: {client head job id: (lease, completion)} of requests the engine handed
            back, until the session takes them (HttpSession.__call__).
        adopting: the (lease, completion) of the handed request whose Stream the session
            is starting now (Stream.__init__ takes it), else None.
        requests, handovers: requests the engine routed and relayed whole, and those it
            handed back (each then counted as a stream).
        lends: credits lent so far.
    """

    __slots__ = ("index", "fe", "be", "engine", "lent", "handed", "adopting", "flags", "maxhdr", "requests",
                 "handovers", "lends", "_closed", "_timer")

    def __init__(self, index: int, fe, be, engine) -> None:
        self.index = index
        self.fe = fe
        self.be = be
        self.engine = engine
        self.lent = 0
        self.handed: dict = {}
        self.adopting = None
        self.flags = RELAY_EXPRESS | (RELAY_XFF if fe.route.forwardfor else 0)
        self.maxhdr = fe.route.maxhdr
        self.requests = 0
        self.handovers = 0
        self.lends = 0
        self._closed = False
        self._timer = None  # the next return of the credits not used (CREDIT_HOLD)
        be.watchers.append(self.flush)

    def arming(self, peer) -> tuple | None:
        """The express fields of a relayed response (heads.relay_fields's `express`) for the
        session whose client address is `peer` (HttpSession._peer: an int for IPv4), or None
        when its next requests may not take the lane (not IPv4, a stopping worker)."""
        if type(peer) is not int or self._closed or self.fe.proxy.stopping:
            return None
        return self.flags, self.index, peer >> 16, self.maxhdr

    def lend(self, session, head_id: int) -> None:
        """Lend the engine the connection of `session`'s next request, which its head job
        `head_id` waits for (Backend.credit_lease: the balancer's pick and an idle
        connection of that server); none when the pick has no idle connection (the request
        goes the stream's way)."""
        if self._closed:
            return
        lease = self.be.credit_lease()
        if lease is None:
            return
        if self.engine.credit(head_id, session.sock, lease.sock, _Credit(self, lease)) is None:
            self.be.credit_back(lease, True, False)  # (the engine has no room now)
            self.be.balancer.unpick(lease.server.index, self.fe.loop.time())
            return
        self.lent += 1
        self.lends += 1
        if self._timer is None:
            self._timer = self.fe.loop.call_later(CREDIT_HOLD, self._hold_over)

    def _hold_over(self) -> None:
        self._timer = None
        self.flush()

    def ended(self, lease, c) -> None:
        """A credit's completion (Engine callback through _Credit)."""
        self.lent -= 1
        kind = c.xkind
        be = self.be
        if kind == X_DONE:
            self.requests += 1
            record_express(self.fe.counters, be.counters, lease.server.counters, c, lease.reused)
            be.credit_back(lease, True, True)
            session = self.engine.waiting(c.xother)
            if getattr(session, "TAKES_HANDOVER", False):  # its next request's credit
                self.lend(session, c.xother)
        elif kind == X_UNUSED:
            be.credit_back(lease, True, False)
            be.balancer.unpick(lease.server.index, self.fe.loop.time())  # its turn was not used
        elif kind == X_HANDOVER:
            self.handovers += 1
            if c.end is JobEnd.CANCELLED or not self.engine.takes_handover(c.xother):
                be.credit_back(lease, False, True)  # nobody takes the request on: it ends with its client
            else:
                be.credit_adopt(lease)  # a stream's lease now
                self.handed[c.xother] = (lease, c)
        else:  # X_DEAD: the server closed it while it was lent (the request picks anew)
            be.credit_back(lease, False, False)
            be.balancer.unpick(lease.server.index, self.fe.loop.time())

    def flush(self) -> None:
        """Have the engine give back the credits it has not used (a server's state or the
        backend's changed, its idle connections are purged, the worker stops): the next
        ones follow the balancer's new state."""
        if self.lent:
            self.engine.credit_flush(self.index)

    def close(self) -> None:
        """No more credits (a stopping worker); those lent come back."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.flush()


class _Credit:
    """The callback of one credit's completion: its lane and lease."""

    __slots__ = ("lane", "lease")

    def __init__(self, lane: ExpressLane, lease) -> None:
        self.lane = lane
        self.lease = lease

    def __call__(self, c) -> None:
        self.lane.ended(self.lease, c)


def lane_of(fe, index: int, engine) -> ExpressLane | None:
    """The express lane of frontend `fe` (runtime/proxy.py FrontendRT) as express backend
    `index`, or None when it may have none (see the module's rule) or the worker has no
    engine."""
    if engine is None or index >= X_BACKENDS or not fe.http or fe.backend is None or fe.switching is not None:
        return None
    r, be = fe.route, fe.backend
    m = be.model
    if (fe.logger is not None or r.rules or r.forwarded or r.abortonclose or be.hashes
            or be.sticky or be.observes_responses or be.reuse == "never" or m.balance != "roundrobin"
            or any(s.maxconn for s in m.servers) or m.mode != "http"):
        return None
    return ExpressLane(index, fe, be, engine)


__all__ = ["ExpressLane", "lane_of"]
