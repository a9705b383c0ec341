"""The express lane: a frontend's plain keep-alive requests routed by the engine by itself.

Rule: Python keeps every decision, in one light call per request. A relayed response of a
session whose next requests may take the lane carries the fields that arm it. When such a
request's head is in and qualifies (a whole GET or HEAD head without a body, or a POST, PUT,
PATCH or DELETE whose Content-Length body came whole with it; no Upgrade, Expect or
hop-by-hop field; a plain target), the engine asks for its credit (engine.h "the express
lane", X_WANT) and the lane answers with the connection a stream of that request would get
(the balancer's pick, a connection of that server's idle pool, as `http-reuse` allows a
session's later requests) or a refusal (no idle connection to that server: the request goes
the stream's way, which opens one). The engine then sends the request on it, as the
forwarded head the Python path writes, relays its response and reads the next head; the
credit's completion counts the request here (runtime/accounting.py record_express) and
gives the connection back to its pool. Whatever the engine cannot finish (a response it
does not relay, a timeout, a server that closed) comes back as a handover: the session
starts the request's Stream as its own, on the credit's connection, with what the response
read said (Stream adopts it), so retries, error pages and counting are the stream machine's.
No connection is held ahead of a request: the pools, `pool-max-conn` and the balancer's turn
are the stream path's.

Which frontends have a lane (lane_of()): `mode http`, a default backend and no rule that
decides per request (no Switching), no header rule, no access log, no `option forwarded`,
no `option abortonclose`; a backend balanced by `roundrobin` (no key and no count of
connections in use: a credit takes no slot; a pick that found no idle connection is taken
back, RoundRobin.unpick), without persistence, `observe layer7` or servers with `maxconn`,
with `http-reuse` other than `never`. Any other frontend works as before.

Differences an operator can see: a server's `scur` does not count the express requests in
flight (their connections are lent to the engine, not to a stream), and `show sess` does
not list them.
"""
from __future__ import annotations

from splicer.engine.binding import RELAY_EXPRESS, RELAY_XFF, X_BACKENDS, X_DONE, X_HANDOVER, X_UNUSED
from splicer.engine.engine import JobEnd
from splicer.runtime.accounting import record_express

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
        requests, handovers, refused: requests the engine routed and relayed whole, those it
            handed back (each then counted as a stream), and those that got no credit.
        lends: credits lent so far.
    """

    __slots__ = ("index", "fe", "be", "engine", "lent", "handed", "adopting", "flags", "maxhdr", "requests",
                 "handovers", "refused", "lends", "_closed")

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
        self.refused = 0
        self.lends = 0
        self._closed = False

    def arming(self, peer) -> tuple | None:
        """The express fields of a relayed response (heads.relay_fields's `express`) for the
        session whose client address is `peer` (HttpSession._peer: an int for IPv4), or None
        when its next requests may not take the lane (not IPv4, a stopping worker)."""
        if type(peer) is not int or self._closed or self.fe.proxy.stopping:
            return None
        return self.flags, self.index, peer >> 16, self.maxhdr

    def want(self, session, head_id: int) -> None:
        """The engine asks the connection of `session`'s request, whose head its head job
        `head_id` read (X_WANT): lend it the balancer's pick with an idle connection of that
        server (Backend.credit_lease), or refuse (none: the request goes the stream's way)."""
        lease = None if self._closed else self.be.credit_lease()
        if lease is not None:
            if self.engine.credit(head_id, session.sock, lease.sock, _Credit(self, lease)) is not None:
                self.lent += 1
                self.lends += 1
                return
            self.be.credit_back(lease, True, False)  # (the engine has no room now)
            self.be.balancer.unpick(lease.server.index, self.fe.loop.time())
        self.refused += 1
        self.engine.refuse(head_id, session.sock)

    def ended(self, lease, c) -> None:
        """A credit's completion (Engine callback through _Credit)."""
        self.lent -= 1
        kind = c.xkind
        be = self.be
        if kind == X_DONE:
            self.requests += 1
            record_express(self.fe.counters, be.counters, lease.server.counters, c, lease.reused)
            be.credit_back(lease, True, True)
        elif kind == X_UNUSED:  # its head job was over
            be.credit_back(lease, True, False)
            be.balancer.unpick(lease.server.index, self.fe.loop.time())  # its turn was not used
        elif kind == X_HANDOVER:
            self.handovers += 1
            if c.end is JobEnd.CANCELLED or not self.engine.takes_handover(c.xother):
                be.credit_back(lease, False, True)  # nobody takes the request on: it ends with its client
            else:
                be.credit_adopt(lease)  # a stream's lease now
                self.handed[c.xother] = (lease, c)
        else:  # X_DEAD: the server closed it while it was idle (the request goes the stream's way)
            be.credit_back(lease, False, False)
            be.balancer.unpick(lease.server.index, self.fe.loop.time())

    def close(self) -> None:
        """No more credits (a stopping worker): the requests to come go the stream's way."""
        self._closed = True


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
