"""A backend at run time: its servers, balancer, idle connections, queue and counters.

Theory of operation: a stream asks acquire() for a server connection. The balancer picks a
server (skipping down, full and already-failed ones); an idle kept-alive connection to it is
reused if one is alive, otherwise a new one is opened within `timeout connect`. A failed
connect is retried as http/retry.py decides (when `retry-on` lists conn-failure, its
default) within the request's budget of `retries`, on another server when `option
redispatch` is set (on the same one otherwise, after haproxy's turn-around delay of
min(timeout connect, 1 s)).
The balancer chooses among the group in use (balance/base.py: the active servers, or the
backups when none is up) with the request's key for the hash algorithms (key_of()).
When every usable server is at its maxconn, the request waits in the backend queue for up
to `timeout queue` (haproxy falls back to `timeout connect`), in arrival order, or gets 503
at once when the queue holds as many requests as the servers' `maxqueue` add up to. release() gives the
connection back to the idle pool or closes it, and frees the server's slot. While any pool
holds a connection, a timer closes those idle past their pool's max_idle (haproxy purges
idle connections on a task too): a quiet worker does not hold them forever. Whether a
request may take an idle connection at all is the backend's `http-reuse` strategy
(pool.reuse_floor); with `never` no connection is pooled.
Persistence (`cookie`, `use-server`, `force-persist`, `ignore-persist`, `option persist`)
is decided by http/persist.py (persistence()); a request it sends to a given server skips
the balancer's choice but takes that server's connection slot like any other, waiting in
the queue while the server is at its maxconn (acquire(force=)).
Every lease lent is known to its server until it is released, so that a server marked DOWN
with `on-marked-down shutdown-sessions` (or a backup, when an active server with
`on-marked-up shutdown-backup-sessions` comes UP) can end its streams at once
(shutdown_streams(): the connection is shut down under the stream, which sees its server
end early and records the lease's `killed` cause, haproxy's 'D' or 'U'). With `observe`,
each connect attempt is reported to the server's health (runtime/probes.py ServerHealth).
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from splicer.balance import key_function, make_balancer
from splicer.config.model import Backend as BackendModel
from splicer.config.model import Server as ServerModel
from splicer.errors import NoServerAvailable
from splicer.health.observe import Event
from splicer.http import persist
from splicer.http.termination import Cause
from splicer.http.retry import RetryEvent, RetryPolicy, decide
from splicer.runtime import io
from splicer.runtime.pool import IdlePool, reuse_floor
from splicer.stats import Availability, Counters

log = logging.getLogger("splicer")


@dataclass(eq=False)
class Server:
    """One server at run time: its model, resolved address, idle pool and counters.

    Attributes:
        health: its check and observe state (runtime/probes.py ServerHealth), None when it
            has no `check`.
        leases: the connections to it lent to streams now (Backend.acquire .. release).
        credits: the connections to it lent to the engine's express lane now, one request
            each (Backend.credit_lease / credit_connect .. credit_back / credit_adopt).
        admin: its administrative state (haproxy SRV_ADMF_*): "MAINT" (maintenance: no
            traffic, no checks; `disabled`, `set server ... state maint`) and/or "DRAIN"
            (no new balanced session; `set server ... state drain`); empty: ready.
        weight: its weight as the operator set it (haproxy's user weight, `set server ...
            weight`); the balancer holds 0 instead while it drains.
        health_up: what its health says (True without `check`, or while checks are off).
        checking: its health checks run (`disable health` turns them off).
        last_change: when its state last changed (loop time, seconds).
        avail: its UP/DOWN history (stats.Availability: lastchg, downtime, chkdown).
    """

    model: ServerModel
    index: int
    addr: tuple[str, int]
    idle: IdlePool = field(default_factory=IdlePool)
    counters: Counters = field(default_factory=Counters)
    health: object = None
    leases: set = field(default_factory=set)
    credits: set = field(default_factory=set)
    admin: set = field(default_factory=set)
    weight: int = 1
    health_up: bool = True
    checking: bool = True
    last_change: float = 0.0
    avail: Availability = field(default_factory=Availability)

    def observe(self, event: Event) -> None:
        """Report what the traffic to this server showed (haproxy health_adjust(): nothing
        happens unless the server has both `observe` and `check`)."""
        if self.health is not None:
            self.health.observe(event)


@dataclass(slots=True, eq=False)
class Lease:
    """A server connection lent to one stream.

    Attributes:
        server: the server it goes to.
        sock: the connected non-blocking socket.
        reused: True when it was taken from the idle pool (it may have been closed by the
            server meanwhile; a request that got no response byte on it may be retried).
        failures: failed connection attempts before this one succeeded (retries used).
        uses: requests the connection served before this one (0: a new connection).
        killed: why splicer shut the connection down under its stream (Cause.DOWN, UP,
            KILLED: shutdown_streams()), None while it was not.
        client: the client connection of the stream it is lent to (Stream sets it), which
            shutdown_streams() ends too, or None.
    """

    server: Server
    sock: socket.socket
    reused: bool
    failures: int = 0
    uses: int = 0
    killed: Cause | None = None
    connect: float = 0.0        # seconds the successful connect took (0: reused), the log's Tc
    redispatched: bool = False  # a failed connect sent it to another server (the log's "+")
    client: socket.socket | None = None


@dataclass(frozen=True, slots=True)
class Persistence:
    """What persistence decided for one request (Backend.persistence()).

    Attributes:
        choice: the http.persist.Choice (server None: balance the request).
        cookie: what the request's cookie said (None: the backend has no `cookie`).
    """

    choice: persist.Choice
    cookie: persist.RequestCookie | None


def resolve_address(host: str, port: int) -> tuple[str, int]:
    """Resolve a server address once, at start-up, as haproxy does with libc.

    Raises:
        OSError: the name does not resolve.
    """
    if host in ("", "*"):
        host = "127.0.0.1"
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return info[0][4][0], port


class Backend:
    """A backend section at run time.

    Args:
        model: the resolved configuration of the backend.
        loop: the event loop.
        quiet: tells that an idle server connection holds nothing to read, without a
            syscall (Engine.quiet); None: every reuse is checked with a peek.
    """

    def __init__(self, model: BackendModel, loop: asyncio.AbstractEventLoop,
                 quiet: Callable[[socket.socket], bool] | None = None) -> None:
        self.model = model
        self._quiet = quiet
        self.name = model.name
        self.loop = loop
        self.servers = [Server(s, i, resolve_address(s.host, s.port), IdlePool(max_conns=s.pool_max_conn))
                        for i, s in enumerate(model.servers)]
        self.reuse = model.http_reuse
        self.cookie = model.cookie
        self._cookie_values = {s.cookie.encode("latin-1"): i for i, s in enumerate(model.servers) if s.cookie}
        by_name = {s.name: i for i, s in enumerate(model.servers)}
        self._use_server = tuple((r.cond, by_name[r.server]) for r in model.use_server)
        self._force = tuple(r.cond for r in model.force_persist)
        self._ignore = tuple(r.cond for r in model.ignore_persist)
        self.sticky = self.cookie is not None or bool(self._use_server)
        """True when requests may be sent to a server of their own (persistence())."""
        self.observes_responses = any(s.observe == "layer7" and s.check for s in model.servers)
        """Some server has `observe layer7` (and `check`): every response head is judged."""
        self.balancer = make_balancer(model)
        self._key_fn = key_function(model.balance_args, model.hash_type)
        now = loop.time()
        for s in self.servers:
            s.weight = s.model.weight
            s.checking = s.model.check
            s.last_change = loop.time()
            if s.model.disabled:
                s.admin.add("MAINT")
                self.balancer.set_up(s.index, False)
            s.avail = Availability(not s.model.disabled, now)
        self.avail = Availability(self.up, now)
        """The backend's UP/DOWN history: DOWN while no server is usable (haproxy)."""
        self.qmax = 0
        """The most requests its queue held at once (haproxy qmax)."""
        self.counters = Counters()
        self.events = None  # its EventLog (splicer/log/logger.py): its `log` lines, set by the Proxy
        self.waiting: deque[list] = deque()
        """The queue: a [future] per request waiting for a server, in arrival order
        (len(waiting) is haproxy's qcur; `queued` says the same)."""
        # any free slot suits any request: strict FIFO (not so for the hash algorithms, whose
        # request wants its own server, nor random, whose draw may land on a full one)
        self._fifo = self._key_fn is None and model.balance != "random"
        self.policy = RetryPolicy(model.retries, model.retry_on, model.redispatch)
        t = model.timeouts
        self.connect_timeout = t.connect
        self.queue_timeout = t.queue if t.queue is not None else t.connect
        self._purge_timer: asyncio.TimerHandle | None = None

    @property
    def queued(self) -> int:
        """Requests waiting in the queue now (haproxy's qcur)."""
        return len(self.waiting)

    def reuse_floor(self, first: bool) -> int | None:
        """pool.reuse_floor() for this backend's `http-reuse` (None: no idle connection)."""
        return reuse_floor(self.reuse, first)

    def persistence(self, fields, method: bytes, view) -> Persistence:
        """Where a request goes by its use-server rules and its cookie (http/persist.py).

        Args:
            fields: the request's header fields.
            method: its method.
            view: its sample.RequestView for the rule conditions (None when the backend has
                no use-server, force-persist or ignore-persist rule).
        """
        use = next((i for cond, i in self._use_server if cond(view)), None)
        ignore = any(cond(view) for cond in self._ignore)
        force = any(cond(view) for cond in self._force)
        cookie = None
        server = None
        if self.cookie is not None:
            cookie = persist.request_cookie(self.cookie, fields, int(time.time()))  # cookie dates: UNIX time
            server = persist.server_by_value(self._cookie_values, cookie.value)
        up = self.balancer.up
        choice = persist.choose(server, up.__getitem__, persist=self.model.persist, force=force,
                                ignore=ignore, use_server=use)
        return Persistence(choice, cookie)

    def response_fields(self, p: Persistence, lease_server: int, fields, method: bytes):
        """The response's fields with the persistence cookie handled for the request that
        `p` decided and the server `lease_server` answered (None: unchanged)."""
        if self.cookie is None:
            return None
        c = p.cookie
        value = self.servers[lease_server].model.cookie.encode("latin-1")
        return persist.response_fields(self.cookie, fields, value,
                                       direct=p.choice.direct and p.choice.server == lease_server,
                                       present=c.present, method=method, ignore=p.choice.ignore,
                                       now=int(time.time()), last_date=c.last_date, first_date=c.first_date)

    def key_of(self, target: bytes, headers, client_ip: str) -> int | None:
        """The balancing key of a request (balance/key.py), or None when the algorithm
        hashes none or the request has none (the balancer then goes round-robin)."""
        fn = self._key_fn
        return None if fn is None else fn(target, headers, client_ip)

    @property
    def hashes(self) -> bool:
        """The algorithm balances on a key of the request (key_of() may give one)."""
        return self._key_fn is not None

    def _queue_limit(self, candidates: list[int]) -> int | None:
        """How many requests may wait: the sum of the candidates' `maxqueue` when each sets
        one, else None (no limit). haproxy counts maxqueue per server queue; splicer has
        one backend queue, which every candidate server drains."""
        limits = [self.servers[k].model.maxqueue for k in candidates]
        return sum(limits) if limits and all(limits) else None

    def _has_room(self, i: int) -> bool:
        """Server `i` is under its maxconn (up or not: persistence may use a DOWN server)."""
        m = self.balancer.maxconn(i, self.loop.time())
        return m == 0 or self.balancer.active[i] < m

    async def _pick(self, avoid: set[int], key: int | None = None, force: int | None = None) -> int:
        """A server index with a free slot, waiting in the queue while all are full.

        The queue is FIFO: with an algorithm whose slots suit any request (all but the hash
        ones and random), a request arriving while others wait goes behind them, and a
        released slot wakes the first waiter. A woken waiter that still finds no slot (its
        own server is full, or it avoids the one freed) keeps its place and passes the wake
        to the next one. With a hash algorithm or random, a new request whose pick has room
        is served at once. `force`: the one server to take (persistence), whatever its
        state; only its slot is waited for.
        """
        deadline = None
        entry: list | None = None  # [future]: our place in the queue, kept while we wait
        took = False
        try:
            while True:
                if entry is None and self.waiting and self._fifo:
                    i = None  # others are waiting already: behind them
                elif force is not None:
                    i = force if self._has_room(force) else None
                else:
                    i = self.balancer.pick(avoid, key, self.loop.time())
                if i is not None:
                    self.balancer.take_conn(i)
                    took = True
                    return i
                usable = [force] if force is not None else [k for k in self.balancer.group() if k not in avoid]
                if not usable:
                    raise NoServerAvailable(f"backend '{self.name}' has no server available", "SC")
                if entry is None:
                    limit = self._queue_limit(usable)
                    if limit is not None and len(self.waiting) >= limit:
                        raise NoServerAvailable(f"backend '{self.name}': queue full (maxqueue)", "sQ")
                    # every candidate is at its maxconn: queue (haproxy `timeout queue`)
                    if self.queue_timeout is not None:
                        deadline = self.loop.time() + self.queue_timeout
                    entry = [None]
                    self.waiting.append(entry)
                    if len(self.waiting) > self.qmax:
                        self.qmax = len(self.waiting)
                else:
                    self._wake_queue(after=entry)  # woken for nothing: the next one may fit
                fut = entry[0] = self.loop.create_future()
                left = None if deadline is None else deadline - self.loop.time()
                if left is not None and left <= 0:
                    raise NoServerAvailable(f"backend '{self.name}': queue timeout", "sQ")
                try:
                    await asyncio.wait_for(fut, left)
                except TimeoutError:
                    raise NoServerAvailable(f"backend '{self.name}': queue timeout", "sQ") from None
        finally:
            if entry is not None:
                fut = entry[0]
                woken = fut is not None and fut.done() and not fut.cancelled()
                self.waiting.remove(entry)
                if woken and not took:
                    self._wake_queue()  # leaving (a timeout, a cancellation) with a wake unused

    async def _pick_other(self, avoid: set[int], key: int | None = None) -> int:
        """_pick() avoiding the servers that already failed this request; when that leaves
        none, any server again (haproxy retries on the same server when there is no other)."""
        try:
            return await self._pick(avoid, key)
        except NoServerAvailable:
            if not avoid:
                raise
            avoid.clear()
            return await self._pick(avoid, key)

    def _wake_queue(self, after: list | None = None) -> None:
        """Wake the first waiter not woken yet (after the entry `after`, when given)."""
        seen = after is None
        for entry in self.waiting:
            if not seen:
                seen = entry is after
                continue
            fut = entry[0]
            if fut is not None and not fut.done():
                fut.set_result(None)
                return

    def others_usable(self, avoid: set[int]) -> bool:
        """True when some server of the group in use (the active servers, or the backups
        when none is up) outside `avoid` is up with a non-zero weight (full or not)."""
        return any(k not in avoid for k in self.balancer.group())

    def pick_now(self, key: int | None = None) -> int | None:
        """A server index with a free slot, taken, if the balancer has one at once (no queue:
        None when every server is full or down, or requests are queued before this one). Give it to idle_lease(), then to
        acquire(picked=) when it had no idle connection.

        Args:
            key: the request's balancing key (key_of()), None when it has none.
        """
        if self.waiting and self._fifo:
            return None  # others are waiting: this request goes behind them
        i = self.balancer.pick((), key, self.loop.time())
        if i is not None:
            self.balancer.take_conn(i)
        return i

    # -- express credits (runtime/express.py): connections lent to the engine for one
    # request each, not to a stream

    def credit_lease(self, min_uses: int = 0) -> Lease | None:
        """The connection of an express request (runtime/express.py), as its credit: the
        balancer's pick and its slot, as a request's (scur counts it), and an idle live
        connection of that server that served at least `min_uses` requests (reuse_floor();
        reused; health told L4_OK, as for a stream's lease), in the server's `credits`.
        None when requests wait in the queue (they go first), no server is usable, or the
        server picked has no such idle connection: then the pick is taken back (the request
        picks on its way, and opens a connection if it must)."""
        if self.waiting and self._fifo:
            return None
        b = self.balancer
        turn = b.turn_state()
        now = self.loop.time()
        i = b.pick((), None, now)
        if i is None:
            return None
        srv = self.servers[i]
        got = srv.idle.take(now, self._quiet, min_uses) if len(srv.idle) else None
        if got is None:
            b.set_turn_state(turn)
            return None
        b.take_conn(i)
        lease = Lease(srv, got[0], True, 0, got[1])
        srv.credits.add(lease)
        srv.idle.note_used(len(srv.leases) + len(srv.credits))
        srv.observe(Event.L4_OK)
        return lease

    def credit_connect(self) -> tuple[Lease, int] | None:
        """The connection of an express request that may not take an idle one (a client
        session's first request under `http-reuse safe`): the balancer's pick, as
        credit_lease()'s, and a new non-blocking connection to that server whose connect()
        was started (io.start_connect). Returns (lease, errno of a connect that failed at
        once, else 0), or None when requests wait in the queue, no server is usable or no
        socket could be made (the pick is taken back).
        The engine finishes the connect (Engine.credit with `connect`); one that fails is
        the first failed attempt of the request's acquire() (its `failed`)."""
        if self.waiting and self._fifo:
            return None
        i = self.balancer.pick((), None, self.loop.time())
        if i is None:
            return None
        srv = self.servers[i]
        try:
            sock, err = io.start_connect(srv.addr[0], srv.addr[1])
        except OSError:  # no socket (EMFILE...): the request goes the stream's way, which says why
            self.balancer.unpick(i, self.loop.time())
            return None
        self.balancer.take_conn(i)
        lease = Lease(srv, sock, False)
        srv.credits.add(lease)
        srv.idle.note_used(len(srv.leases) + len(srv.credits))
        return lease, err

    def credit_connected(self, lease: Lease) -> None:
        """A credit's new connection carried its request: counted as acquire() counts an
        established connection (stot; health told L4_OK)."""
        srv = lease.server
        srv.counters.stot += 1
        self.counters.stot += 1
        srv.observe(Event.L4_OK)

    def credit_back(self, lease: Lease, reusable: bool, used: bool) -> None:
        """A credit's connection comes back (and its slot): to the pool when `reusable`
        (`used`: it served a request), else closed."""
        srv = lease.server
        srv.credits.discard(lease)
        self.balancer.drop_conn(srv.index)
        if reusable and self.reuse != "never" and lease.killed is None:
            srv.idle.put(lease.sock, self.loop.time(), lease.uses + used, len(srv.leases) + len(srv.credits))
            if self._purge_timer is None:
                self._purge_timer = self.loop.call_at(self.loop.time() + srv.idle.max_idle, self._purge)
        else:
            io.forget(lease.sock)
            lease.sock.close()

    def credit_adopt(self, lease: Lease) -> None:
        """A credit's request was handed back: its connection is a stream's lease from now
        on (its slot too, in `leases`; release() gives them back)."""
        srv = lease.server
        srv.credits.discard(lease)
        srv.leases.add(lease)

    def idle_lease(self, i: int, min_uses: int = 0) -> Lease | None:
        """A Lease of an idle live connection to server `i` (its slot taken by pick_now())
        that has served at least `min_uses` requests, or None when it has none."""
        srv = self.servers[i]
        got = srv.idle.take(self.loop.time(), self._quiet, min_uses)
        return None if got is None else self._lend(Lease(srv, got[0], True, 0, got[1]))

    @staticmethod
    def _lend(lease: Lease) -> Lease:
        """Register `lease` with its server, and report the established connection to its
        health (observe: haproxy reports HANA_STATUS_L4_OK for every stream that gets one,
        a reused idle connection included)."""
        srv = lease.server
        srv.leases.add(lease)
        srv.idle.note_used(len(srv.leases) + len(srv.credits))
        srv.observe(Event.L4_OK)
        return lease

    async def acquire(self, avoid: set[int] | None = None, allow_reuse: bool = True,
                      left: int | None = None, only: int | None = None,
                      picked: int | None = None, key: int | None = None,
                      min_uses: int = 0, force: int | None = None,
                      failed: tuple[int, BaseException] | None = None) -> Lease:
        """Lend a connection to a server of this backend, retrying failed connects as
        http/retry.py decides (the RetryEvent.CONN_FAILURE row of its table).

        Args:
            avoid: server indexes not to use (already failed for this request).
            allow_reuse: False to insist on a new connection (retry after a reused one died).
            left: retries the request may still use (None: `retries`); Lease.failures tells
                how many failed connects used some.
            only: the index of the one server to use (a retry to the same server).
            picked: a server whose slot pick_now() took already (its idle connections
                were looked at: a new one is opened).
            key: the request's balancing key (key_of()), None when it has none.
            min_uses: an idle connection is taken only when it served this many requests
                (reuse_floor()).
            force: the server persistence chose (persistence()): its slot is taken (or
                waited for) whatever its state, unless it is in `avoid` (a redispatch);
                a connect retry without redispatch goes back to it.
            failed: (server index, exception) of a connect the express lane tried for
                this request and that failed (runtime/express.py): it is this acquire's
                first attempt, counted and retried as one of its own.

        Returns:
            A Lease; give it back with release().

        Raises:
            NoServerAvailable: no server up, queue timeout, or the retries ran out (-> 503).
        """
        avoid = set() if avoid is None else set(avoid)
        if left is None:
            left = self.policy.retries
        everyone = set(range(len(self.servers)))
        look_idle = allow_reuse and picked is None  # pick_now()'s caller looked already
        if force is not None and (force in avoid or (only is not None and only != force)):
            force = None  # redispatched: balanced like any request
        if failed is not None:
            i = failed[0]
            self.balancer.take_conn(i)  # (the lane gave its attempt's slot back: it is given up below)
        elif picked is not None:
            i = picked
        elif force is not None:
            i = await self._pick(avoid, key, force)
        else:
            i = await (self._pick(everyone - {only}) if only is not None else self._pick_other(avoid, key))
        used = 0
        redispatched = False
        while True:
            srv = self.servers[i]
            if failed is not None:
                exc, failed = failed[1], None
            else:
                if look_idle:
                    got = srv.idle.take(self.loop.time(), self._quiet, min_uses)
                    if got is not None:
                        return self._lend(Lease(srv, got[0], True, 0, got[1]))
                t0 = self.loop.time()
                try:
                    sock = await io.connect(self.loop, srv.addr[0], srv.addr[1], self.connect_timeout)
                except (OSError, TimeoutError) as err:
                    exc = err
                else:
                    srv.counters.stot += 1
                    self.counters.stot += 1
                    return self._lend(Lease(srv, sock, False, used, connect=self.loop.time() - t0,
                                            redispatched=redispatched))
            # the attempt failed: haproxy's connect retries (retries, option redispatch)
            srv.observe(Event.L4_ERR)
            srv.counters.econ += 1
            self.counters.econ += 1
            log.warning("backend %s server %s: connect failed: %s", self.name, srv.model.name,
                        exc or "timeout")
            self.balancer.drop_conn(i)
            self._wake_queue()
            verdict = decide(self.policy, RetryEvent.CONN_FAILURE, left - used)
            if not verdict.again:
                raise NoServerAvailable(f"backend '{self.name}': no server reachable",
                                        "sC" if isinstance(exc, TimeoutError) else "SC", used, srv) from None
            used += 1
            look_idle = allow_reuse
            self.counters.wretr += 1
            srv.counters.wretr += 1
            if verdict.elsewhere:
                force = None  # option redispatch: persistence gives way
                avoid.add(i)
                if not self.others_usable(avoid):
                    avoid = {i}  # every server failed once: round again, this one last
                if self.others_usable(avoid):
                    i = await self._pick_other(avoid, key)
                    if i != srv.index:
                        self.counters.wredis += 1
                        srv.counters.wredis += 1
                        redispatched = True
                        continue
                    self.balancer.drop_conn(i)  # the same server again: turn around first
                    self._wake_queue()
            await asyncio.sleep(min(self.connect_timeout or 1.0, 1.0))
            # the slot was given up meanwhile: take it again through the queue, so the
            # server's maxconn holds (someone else may have taken it)
            i = await (self._pick(avoid, key, i) if force == i else self._pick(everyone - {i}))

    def release(self, lease: Lease, reusable: bool) -> None:
        """Give a connection back: to the idle pool when `reusable` (and it was not shut
        down under its stream), else closed."""
        srv = lease.server
        srv.leases.discard(lease)
        if reusable and self.reuse != "never" and lease.killed is None:
            srv.idle.put(lease.sock, self.loop.time(), lease.uses + 1, len(srv.leases) + len(srv.credits))
            if self._purge_timer is None:
                self._purge_timer = self.loop.call_at(self.loop.time() + lease.server.idle.max_idle,
                                                      self._purge)
        else:
            io.forget(lease.sock)
            lease.sock.close()
        self.balancer.drop_conn(lease.server.index)
        self._wake_queue()

    def shutdown_streams(self, i: int, cause: Cause, clients: bool = False) -> int:
        """End every stream on server `i` now (haproxy srv_shutdown_streams()): each lent
        connection is shut down both ways and its lease marked `killed` with `cause`; the
        engine or loop moving its bytes sees the server end, and the stream ends the
        client side as for a server that died (a response in flight is cut short, never
        made to look complete; one not begun gets its 502).

        With `clients` (`shutdown sessions server`, which kills the streams: haproxy closes
        both sides at once, silently) each stream's client connection is shut down both
        ways too, with SO_LINGER 0, so the close that ends the stream resets it and drops
        what its send buffer still held: the client sees the end within moments, not after
        the buffers drained at its pace. Returns how many were shut down."""
        n = 0
        srv = self.servers[i]
        for lease in [*srv.leases, *srv.credits]:  # (an express request's too: its stream takes it over)
            if lease.killed is not None:
                continue
            lease.killed = cause
            n += 1
            try:
                lease.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            if clients and lease.client is not None:
                try:
                    lease.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    lease.client.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        return n

    def server_state(self, i: int, up: bool) -> None:
        """Server `i` was just marked UP or DOWN by its health (check or observe): tell the
        balancer (a server in maintenance stays out) and run its on-marked-down /
        on-marked-up action (haproxy srv_update_status()): `shutdown-sessions` ends the
        streams of a server going DOWN; `shutdown-backup-sessions` ends the streams of
        every backup server when this one is active and has a weight above 0."""
        srv = self.servers[i]
        m = srv.model
        srv.health_up = up
        srv.last_change = self.loop.time()
        self.balancer.set_up(i, up and "MAINT" not in srv.admin, self.loop.time())
        self.note_availability()
        if not up and m.on_marked_down == "shutdown-sessions":
            n = self.shutdown_streams(i, Cause.DOWN)
            if n:
                log.warning("backend %s server %s: %d stream(s) shut down (on-marked-down)",
                            self.name, m.name, n)
        elif (up and m.on_marked_up == "shutdown-backup-sessions" and not m.backup
              and self.balancer.alive(i)):
            n = sum(self.shutdown_streams(s.index, Cause.UP) for s in self.servers if s.model.backup)
            if n:
                log.warning("backend %s server %s: %d backup stream(s) shut down (on-marked-up)",
                            self.name, m.name, n)
        if up:
            self._wake_queue()

    # -- the runtime API's changes (runtime/command.py; haproxy server.c srv_adm_set_*) ------

    def set_admin(self, i: int, state: str) -> None:
        """Set server `i`'s administrative state (haproxy `set server B/S state`).

        Args:
            state: "ready": clears maintenance and drain (haproxy srv_adm_set_ready(); a
                server left in maintenance is as its health says); "drain": no new
                balanced session (its weight is 0 for the balancer, as haproxy's eweight),
                persistence may still send it requests, its streams go on, its checks
                too; "maint": no traffic at all, checks stop, it is DOWN (its streams in
                flight finish unless shut down with `shutdown sessions server`).
        """
        srv = self.servers[i]
        was = set(srv.admin)
        if state == "ready":
            srv.admin.clear()
        elif state == "drain":
            srv.admin.discard("MAINT")
            srv.admin.add("DRAIN")
        elif state == "maint":
            srv.admin.discard("DRAIN")
            srv.admin.add("MAINT")
        else:
            raise ValueError(f"unknown server state {state!r}")
        if srv.admin == was:
            return
        now = self.loop.time()
        srv.last_change = now
        self.balancer.set_weight(i, 0 if "DRAIN" in srv.admin else srv.weight)
        self.balancer.set_up(i, srv.health_up and "MAINT" not in srv.admin, now)
        self.note_availability()
        if srv.health is not None:
            srv.health.wake()  # checks stop in maintenance, resume after it
        if "MAINT" not in srv.admin:
            self._wake_queue()

    def set_weight(self, i: int, weight: int) -> None:
        """Set server `i`'s weight, 0..256 (haproxy `set server B/S weight`; a draining
        server keeps 0 in the balancer until it is ready again)."""
        srv = self.servers[i]
        srv.weight = weight
        if "DRAIN" not in srv.admin:
            self.balancer.set_weight(i, weight)
        if weight:
            self._wake_queue()

    def set_address(self, i: int, host: str, port: int) -> None:
        """Send server `i`'s new connections (and checks) to host:port (haproxy `set server
        B/S addr`): its idle connections to the old address are closed; streams in flight
        go on."""
        srv = self.servers[i]
        srv.addr = (host, port)
        srv.idle.close()

    def set_checking(self, i: int, on: bool) -> None:
        """Turn server `i`'s health checks on or off (haproxy `enable|disable health`):
        with checks off, its last result is ignored and it is considered UP."""
        srv = self.servers[i]
        srv.checking = on
        if srv.health is None:
            return
        srv.health.wake()
        up = True if not on else srv.health.state.up
        if up != srv.health_up:
            self.server_state(i, up)

    def note_availability(self) -> None:
        """Bring every server's and the backend's UP/DOWN history (Availability) up to date
        with the balancer's state now: called on each health transition, and before the
        stats are read (so a change made elsewhere, the runtime API's, is seen too)."""
        now = self.loop.time()
        up = self.balancer.up
        for s in self.servers:
            s.avail.note(up[s.index], now)
        self.avail.note(self.up, now)

    @property
    def up(self) -> bool:
        """The backend's state as haproxy's stats show it: UP while a server is usable, or
        when it has no server at all (a `listen` for the stats page alone; haproxy's
        stats_fill_be_stats: `tot_weight > 0 || !px->srv`), else DOWN."""
        return bool(self.balancer.group()) or not self.servers

    def _purge(self) -> None:
        """The purge timer: close the idle connections past their max_idle; again when the
        next one is due, while any is left."""
        now = self.loop.time()
        due = [d for d in (s.idle.purge(now) for s in self.servers) if d is not None]
        self._purge_timer = self.loop.call_at(min(due), self._purge) if due else None

    def close(self) -> None:
        """Close every idle server connection."""
        if self._purge_timer is not None:
            self._purge_timer.cancel()
            self._purge_timer = None
        for s in self.servers:
            s.idle.close()
