"""The express lane: a frontend's plain requests routed and relayed by the engine by itself.

Rule: Python keeps every decision, in one light call per request. A session's first head
job, and each relayed response of a session whose next requests may take the lane, carry
the fields that arm it. When such a request's head is in and qualifies (a whole GET or HEAD
head without a body, or a POST, PUT, PATCH or DELETE whose Content-Length body came whole
with it; no Upgrade, Expect or hop-by-hop field but `Connection: keep-alive` or `close`; a
plain target), the engine asks for its credit (engine.h "the express lane", X_WANT) and the
lane answers with the connection a stream of that request would get: the balancer's pick
and a connection of that server's idle pool, as `http-reuse` allows the request; for a
session's first request under `http-reuse safe` (and without a body), a new connection to
that server, whose connect the engine finishes (within `timeout connect`); or a refusal
(no idle connection to that server: the request goes the stream's way, which opens one).
The engine then sends the request on it, as the forwarded head the Python path writes,
relays its response and reads the next head (after `Connection: close`, the head job ends
X_CLOSED and the session closes); the credit's completion counts the request here
(runtime/accounting.py record_express) and gives the connection back to its pool. A new
connection whose connect failed comes back handed over in phase SEND: the request's Stream
takes the failure as the first attempt of its acquire (Backend.acquire `failed`: counted,
retried and redispatched as its own). Whatever the engine cannot finish (a response it
does not relay, a timeout, a server that closed) comes back as a handover: the session
starts the request's Stream as its own, on the credit's connection, with what the response
read said (Stream adopts it), so retries, error pages and counting are the stream machine's.
No connection is held ahead of a request: the pools, `pool-max-conn` and the balancer's turn
are the stream path's.

Which frontends have a lane (lane_of()): `mode http`, a default backend and no rule that
decides per request (no Switching), no http-response rule, and http-request header rules
only where the engine makes them itself (http/rules.py plain_edits(): set-header,
add-header and del-header without condition, with literal, `src` and `req.hdr()` values),
no access log but `option httplog` without captures (then each request's X_DONE brings its
head and is logged as its stream would be, log/collect.py express_fields; a connection's
first request goes the stream's way, which times its accept and connect), no `option
forwarded`, no `option forwardfor` but its plain form (an IPv4 `except` network aside: its
clients' sessions are armed without X-Forwarded-For),
no `option abortonclose`; a backend balanced by `roundrobin` (no key, and no decision by
the connections in use; a pick that found no idle connection is taken back,
RoundRobin.unpick), without persistence, `observe layer7` or servers with `maxconn`, with
`http-reuse` other than `never`. Any other frontend works as before.

What an operator sees of them is what a stream shows: a credit takes its server's slot
(scur, smax), `show sess` lists its request (phase DATA while the engine relays the
response, else HEADERS), and `shutdown sessions server`, on-marked-down /
on-marked-up `shutdown-*-sessions` and a hard stop shut its connection down as a stream's
(Backend.shutdown_streams): the engine then hands the request over, and its stream ends it
with the termination state a stream would have.
"""
from __future__ import annotations

import errno
import os

from splicer.engine.binding import RELAY_EXPRESS, RELAY_XFF, RELAY_XLOG, X_BACKENDS, X_DONE, X_HANDOVER, X_UNUSED
from splicer.engine.engine import JobEnd, Phase
from splicer.http.machine import keep_alive_terms
from splicer.http.rules import plain_edits
from splicer.runtime.accounting import record_express
from splicer.runtime.heads import express_fields

class ExpressLane:
    """The express lane of one frontend (engine.h) and its credits.

    Args:
        index: its express backend number in the engine (< binding.X_BACKENDS).
        fe: the frontend (runtime/proxy.py FrontendRT); be: its default backend (Backend).
        engine: the worker's Engine.

    Attributes:
        inflight: the _Credit of each credit lent to the engine now (`show sess` lists
            their requests, a hard stop waits for them); `lent` is how many.
        handed: {client head job id: (lease, completion)} of requests the engine handed
            back, until the session takes them (HttpSession.__call__).
        adopting: the (lease, completion) of the handed request whose Stream the session
            is starting now (Stream.__init__ takes it), else None.
        requests, handovers, refused: requests the engine routed and relayed whole, those it
            handed back (each then counted as a stream), and those that got no credit.
        lends: credits lent so far.
    """

    __slots__ = ("index", "fe", "be", "engine", "inflight", "handed", "adopting", "flags", "maxhdr",
                 "requests", "handovers", "refused", "lends", "connects", "logger", "_terms", "_first_floor",
                 "_closed", "_no_xff")

    def __init__(self, index: int, fe, be, engine) -> None:
        self.index = index
        self.fe = fe
        self.be = be
        self.engine = engine
        self.inflight: set = set()
        self.handed: dict = {}
        self.adopting = None
        # `option httplog` (Logger.fast): each request's X_DONE brings its head, for its line
        self.logger = fe.logger
        self.flags = (RELAY_EXPRESS | (RELAY_XFF if fe.route.forwardfor else 0)
                      | (RELAY_XLOG if fe.logger is not None else 0))
        # `option forwardfor except`: (network, mask) of each IPv4 network whose clients get none
        self._no_xff = tuple((int(n.network_address), int(n.netmask)) for n in fe.route.xff_except)
        self.maxhdr = fe.route.maxhdr
        self.requests = 0
        self.handovers = 0
        self.refused = 0
        self.lends = 0
        self.connects = 0
        # a connection's first head takes the lane too when its response would be relayed (and
        # no access log wants its accept-to-head and connect timers: the stream path has them)
        self._terms = None if fe.logger is not None else keep_alive_terms(be.policy.retry_on,
                                                                           fe.route.splice_response)
        self._first_floor = be.reuse_floor(True)  # http-reuse: None: a first request opens its own
        self._closed = False

    @property
    def lent(self) -> int:
        """Credits lent to the engine now."""
        return len(self.inflight)

    def arming(self, peer) -> tuple | None:
        """The express fields of a relayed response (heads.relay_fields's `express`) for the
        session whose client address is `peer` (HttpSession._peer: an int for IPv4), or None
        when its next requests may not take the lane (not IPv4, a stopping worker)."""
        if type(peer) is not int or self._closed or self.fe.proxy.stopping:
            return None
        addr = peer >> 16
        flags = self.flags
        if self._no_xff and any(addr & mask == net for net, mask in self._no_xff):
            flags &= ~RELAY_XFF
        return flags, self.index, addr, self.maxhdr

    def first(self, session) -> tuple | None:
        """What arms `session`'s first head job (heads.submit_read_head's `express`), or
        None when its first request may not take the lane."""
        terms = self._terms
        if terms is None:
            return None
        x = self.arming(session._peer)
        if x is None:
            return None
        cli = session.sock
        return (express_fields(terms, cli.fileno(), self.engine.gen(cli), self.fe.relay_times, x),
                self.fe.route.t_server)

    def want(self, session, head_id: int, body: int = 0) -> None:
        """The engine asks the connection of `session`'s request, whose head its head job
        `head_id` read (X_WANT; `body`: its body's bytes): lend it the balancer's pick with
        an idle connection of that server as `http-reuse` allows it (Backend.credit_lease),
        or, for a session's first request that must open its own (`safe`) and has no body,
        a new connection (Backend.credit_connect, which the engine finishes); or refuse (no
        idle connection, a body, no server: the request goes the stream's way)."""
        if self._closed:
            lease = None
        elif session.streams:
            lease = self.be.credit_lease()
        elif self._first_floor is not None:
            lease = self.be.credit_lease(self._first_floor)
        elif not body:
            return self._want_new(session, head_id)
        else:  # (its body, read by the engine, could not be sent again if the connect failed)
            lease = None
        if lease is not None:
            credit = _Credit(self, lease, session, head_id)
            if self.logger is not None:
                credit.t_head = self.fe.loop.time()
            if self.engine.credit(head_id, session.sock, lease.sock, credit) is not None:
                self._busy(session, lease, credit)
                self.lends += 1
                return
            self.be.credit_back(lease, True, False)  # (the engine has no room now)
            self.be.balancer.unpick(lease.server.index, self.fe.loop.time())
        self.refused += 1
        self.engine.refuse(head_id, session.sock)

    def _want_new(self, session, head_id: int) -> None:
        """want() for a request that opens a connection of its own."""
        be = self.be
        got = be.credit_connect()
        if got is not None:
            lease, err = got
            credit = _Credit(self, lease, session, head_id, err)
            if self.engine.credit(head_id, session.sock, lease.sock, credit, be.connect_timeout or 0) is not None:
                self._busy(session, lease, credit)
                self.lends += 1
                self.connects += 1
                return
            be.credit_back(lease, False, False)  # (the engine has no room now)
            be.balancer.unpick(lease.server.index, self.fe.loop.time())
        self.refused += 1
        self.engine.refuse(head_id, session.sock)

    def _busy(self, session, lease, credit: _Credit) -> None:
        """`session`'s request is lent `credit`: it is in flight (`show sess`, a hard stop),
        not idle (a soft stop with `no option idle-close-on-response` leaves it be)."""
        lease.client = session.sock  # (shutdown sessions ends both sides)
        self.inflight.add(credit)
        idle = self.fe.idle
        if idle is not None:
            idle.discard(session)

    def ended(self, credit: _Credit, c) -> None:
        """A credit's completion (Engine callback through _Credit)."""
        self.inflight.discard(credit)
        lease = credit.lease
        kind = c.xkind
        be = self.be
        new = not lease.reused
        if kind == X_DONE:
            self.requests += 1
            session = credit.session
            session.streams += 1  # (its next request is not its first)
            if self.fe.idle is not None and not session.closing:
                self.fe.idle.add(session)  # idle again (unless its request closed it: X_CLOSED follows)
            if new:
                be.credit_connected(lease)
            record_express(self.fe.counters, be.counters, lease.server.counters, c, lease.reused)
            be.credit_back(lease, not c.xclose, True)  # (a response that said close: the server closes it)
            if self.logger is not None:  # (after its connection went back, as a stream logs)
                session.t_idle = self.fe.loop.time()
                self.logger.express(session, self.fe, be, lease.server, c, credit.t_head)
        elif kind == X_UNUSED:  # its head job was over
            be.credit_back(lease, not new, False)  # (a new one may not even be connected)
            be.balancer.unpick(lease.server.index, self.fe.loop.time())  # its turn was not used
        elif kind == X_HANDOVER:
            self.handovers += 1
            # (cancelled: the engine closes, a hard stop: the stream counts it killed)
            taken = self.engine.takes_handover(c.xother)
            if new and c.phase is Phase.SEND and lease.killed is None:  # the request did not go: its connect failed
                be.credit_back(lease, False, False)
                if taken:  # the request's acquire counts the attempt and retries it
                    self.handed[c.xother] = (None, (lease.server.index, credit.error(c)))
            elif not taken:
                be.credit_back(lease, False, True)  # nobody takes the request on: it ends with its client
            else:
                if new:
                    be.credit_connected(lease)
                be.credit_adopt(lease)  # a stream's lease now
                self.handed[c.xother] = (lease, c)
        else:  # X_DEAD: the server closed it while it was idle (the request goes the stream's way)
            be.credit_back(lease, False, False)
            be.balancer.unpick(lease.server.index, self.fe.loop.time())

    def close(self) -> None:
        """No more credits (a stopping worker): the requests to come go the stream's way."""
        self._closed = True


class _Credit:
    """The callback of one credit's completion: its lane, lease, session and the session's
    head job (`head_id`), and the errno of a new connection's connect() that failed at once
    (0: none)."""

    __slots__ = ("lane", "lease", "session", "head_id", "err", "t_head")

    def __init__(self, lane: ExpressLane, lease, session, head_id: int, err: int = 0) -> None:
        self.lane = lane
        self.lease = lease
        self.session = session
        self.head_id = head_id
        self.err = err
        self.t_head = 0.0  # loop time its head came (ExpressLane.want), when the lane logs

    def __call__(self, c) -> None:
        self.lane.ended(self, c)

    def error(self, c) -> BaseException:
        """Why the new connection of a credit handed over in phase SEND (`c`) carried no
        request: the connect's error, as io.connect raises it (TimeoutError for `timeout
        connect`)."""
        if c.end is JobEnd.TIMEOUT:
            return TimeoutError()
        code = self.err or c.errno or errno.ECONNREFUSED
        return OSError(code, os.strerror(code))


def lane_of(fe, index: int, engine) -> ExpressLane | None:
    """The express lane of frontend `fe` (runtime/proxy.py FrontendRT) as express backend
    `index`, or None when it may have none (see the module's rule) or the worker has no
    engine."""
    if engine is None or index >= X_BACKENDS or not fe.http or fe.backend is None or fe.switching is not None:
        return None
    r, be = fe.route, fe.backend
    m = be.model
    if ((fe.logger is not None and not fe.logger.fast) or r.response_rules or r.forwarded or r.abortonclose or be.hashes
            or not r.xff_plain or any(n.version != 4 for n in r.xff_except)
            or be.sticky or be.observes_responses or be.reuse == "never" or m.balance != "roundrobin"
            or any(s.maxconn for s in m.servers) or m.mode != "http"):
        return None
    edits = plain_edits(r.request_rules)
    if edits is None or (edits and not engine.express_rules(index, edits)):
        return None
    return ExpressLane(index, fe, be, engine)


__all__ = ["ExpressLane", "lane_of"]
