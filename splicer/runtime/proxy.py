"""The proxy at run time: listeners, frontends and backends built from a Config, one loop.

Rule: runtime objects are built from the immutable model (config/model.py) and never edit
it. This module owns the listening sockets, the accept path (with haproxy's global and
per-frontend `maxconn`: a full listener stops accepting until a session ends), the pipe
pool, and the operator's view: SIGHUP prints the counters as one JSON line on stderr, the
master's control channel asks for them (runtime/control.py), SIGUSR1 is a soft stop (stop
accepting, finish what is in flight, exit), SIGTERM/SIGINT stop the proxy at once and print
the counters a last time.
"""
from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import signal
import socket
import sys
import time
from collections import deque
from types import MappingProxyType

from splicer import __version__
from splicer.admin.errors import CAPTURES, ErrorCapture, plain_reason

from splicer.config.model import Backend as BackendModel, Config, Frontend
from splicer.engine.binding import PipePool, accept as accept_batch, unpack_peer
from splicer.engine.engine import Engine
from splicer.runtime.probes import ServerHealth
from splicer.runtime import command, control, io, status
from splicer.runtime.backend import Backend
from splicer.runtime.channel import Channel
from splicer.runtime.session import HttpSession
from splicer.http.termination import Cause, Phase, Termination
from splicer.runtime.auth import Authenticator, userlists_of
from splicer.runtime.route import backend_names, route_of, switching_of
from splicer.http.machine import tunnel_termination
from splicer.runtime.accounting import record_termination
from splicer.runtime.transfer import Mover
from splicer.runtime.express import lane_of
from splicer.runtime.heads import client_times
from splicer.runtime.tunnel import run_tunnel
from splicer.errors import NoServerAvailable
from splicer.http.variables import VarRule
from splicer.log.collect import tunnel_record
from splicer.log.format import DEFAULT, LogFormat
from splicer.log.logger import LogHub
from splicer.stats import Counters, merge_stats

log = logging.getLogger("splicer")

ACCEPT_BATCH = 64
"""Connections accepted per readiness event of a listener."""

ACCEPT_BACKOFF_MIN = 0.1
ACCEPT_BACKOFF_MAX = 1.0
"""Least and most seconds a frontend stops accepting after an EMFILE (doubling between)."""

_NONBLOCKING_STREAM = socket.SOCK_STREAM | socket.SOCK_NONBLOCK
"""The type an accepted socket object is made with: its timeout is 0 (non-blocking, as
accept() made the fd) without a system call."""

DEFAULT_PIPESIZE = 1 << 20
"""Bytes per pipe when `tune.pipesize` is not set (haproxy keeps the kernel's 64 KiB):
measured with haproxy itself on this machine, 1 MiB pipes moved 256 MiB bodies for 0.23
CPU-s/GiB against 0.56 with 64 KiB ones (fewer splice calls per GiB)."""

KILL_GRACE = 2.0
"""Seconds a hard stop waits for the streams it shut down to end and be counted."""

EXPRESS_REQUESTS = 512
"""Express requests (runtime/express.py) the engine may run at once, per worker; more wait
for the Python path. Each holds two head buffers beyond its job's."""

HEAD_ROOM = 4096
"""Bytes of an engine buffer beyond tune.bufsize: a forwarded head may grow by the fields
splicer adds (X-Forwarded-For, Forwarded, header rules); a larger one is sent by the loop."""


class FrontendRT:
    """A frontend at run time: its listeners, its backends, and what its sessions read.

    Attributes:
        backend: the default_backend (None: none; then only use_backend rules route).
        route: the Route of the default backend (or of no backend: the frontend's own
            settings, for requests no rule routes).
        routes: {backend name: (runtime Backend, Route)} for every backend it may pick.
        switching: its per-request decisions (route.switching_of()), or None when every
            request goes to the default backend without any rule to evaluate.
        fe_errorpages: the frontend's own `errorfile` pages (for answers given before a
            backend was chosen).
        strict_uri: a request whose target is ambiguous (http/normalize.py ambiguity) is
            refused with 400 (not with `option accept-invalid-http-request`); with a
            Switching, its choose() checks it after the rules.
        auth_lists: the userlists its rules' conditions (and its backends') read: a
            request's credentials are checked against them before the rules run
            (runtime/auth.py); empty: nothing to check.
    """

    def __init__(self, proxy: "Proxy", model: Frontend, backend: Backend | None) -> None:
        self.proxy = proxy
        self.model = model
        self.name = model.name
        self.loop = proxy.loop
        self.backend = backend
        self.mover = proxy.mover
        self.counters = Counters()
        g = proxy.config.global_
        self.maxconn = model.maxconn or g.maxconn
        # what its streams read, merged once per (frontend, backend) pair
        self.routes = {}
        for name in backend_names(model, proxy.config.backends):
            be = proxy.backends[name]
            self.routes[name] = (be, route_of(g, model, be.model))
        self.route = (self.routes[backend.name][1] if backend is not None
                      else route_of(g, model, BackendModel(name="", mode=model.mode)))
        self.switching = switching_of(model, proxy.config.backends) if model.mode == "http" else None
        r = self.route  # the client side's timeouts, as the engine takes them in a relay
        self.relay_times = client_times(r.t_client, r.t_keepalive, r.t_request)
        self.fe_errorpages = MappingProxyType(dict(model.errorfiles))
        self.strict_uri = not model.accept_invalid_http_request
        be_models = [be.model for be, _ in self.routes.values()]
        self.auth_lists = userlists_of([*model.http_request, *model.http_response, *model.use_backend,
                                        *(r for b in be_models for r in (*b.http_request, *b.http_response))])
        self.http = model.mode == "http"
        # the access log (splicer/log): None when the frontend has no `log` line
        self.captures = (tuple((n.encode("ascii"), k) for n, k in model.capture_request),
                         tuple((n.encode("ascii"), k) for n, k in model.capture_response))
        self.logger = (proxy.logs.logger(LogFormat(model.log_format or DEFAULT,
                                                   (len(self.captures[0]), len(self.captures[1]))),
                                         model.logs, model.dontlognull) if model.logs else None)
        self.listeners: list[socket.socket] = []
        self.active = 0
        self.smax = 0  # the most client connections open at once (haproxy smax)
        self.paused = False
        self._backoff = 0.0  # seconds accepting pauses after an EMFILE (0: accepting), _accept()
        # the sessions waiting for a request, tracked only when a soft stop is to close them
        # (`no option idle-close-on-response`); None: kept until their next response
        self.idle: set | None = None if model.idle_close_on_response else set()
        self.lane = None  # its express lane (runtime/express.py), set by the Proxy

    def open(self, listeners: list[socket.socket]) -> None:
        """Start accepting on the listening sockets opened for this frontend (listener.py)."""
        self.listeners = list(listeners)
        self.resume()

    def resume(self) -> None:
        """Accept on every listener again (after maxconn was reached)."""
        for s in self.listeners:
            self.loop.add_reader(s.fileno(), self._accept, s)
        self.paused = False

    def pause(self) -> None:
        """Stop accepting on every listener (maxconn reached); queued connections wait in the backlog."""
        for s in self.listeners:
            self.loop.remove_reader(s.fileno())
        self.paused = True

    def close(self) -> None:
        """Stop accepting and close this worker's copies of the listening sockets."""
        for s in self.listeners:
            if not self.paused:
                self.loop.remove_reader(s.fileno())
            s.close()
        self.listeners = []

    def _full(self) -> bool:
        return self.active >= self.maxconn or self.proxy.active >= self.proxy.maxconn

    def _accept(self, lsock: socket.socket) -> None:
        """A listener is readable: take what waits, up to ACCEPT_BATCH connections and as
        many as maxconn (the frontend's and the global one) leaves room for (engine/binding
        accept(): non-blocking, close-on-exec and TCP_NODELAY from the start)."""
        room = min(ACCEPT_BATCH, self.maxconn - self.active, self.proxy.maxconn - self.proxy.active)
        if room <= 0:
            self.proxy.pause_full()
            return
        family = lsock.family
        try:
            taken = accept_batch(lsock.fileno(), room, family != socket.AF_UNIX)
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                self._out_of_resources(exc)
            else:
                log.error("frontend %s: accept failed: %s", self.name, exc)
            return
        if not taken:
            return
        if self._backoff:
            log.warning("frontend %s: accepting again", self.name)
            self._backoff = 0.0
        n = len(taken)
        self.active += n
        if self.active > self.smax:
            self.smax = self.active
        self.proxy.active += n
        self.counters.stot += n
        for fd, peer in taken:
            sock = socket.socket(family, _NONBLOCKING_STREAM, 0, fd)
            if peer < 0:  # not IPv4: the address object the socket module makes
                try:
                    peer = sock.getpeername()
                except OSError:
                    peer = ""  # reset already: the session's first read fails
            if self.http:
                HttpSession(self, sock, peer).start()  # it calls session_ended() at its end
                continue
            task = self.loop.create_task(self._session(sock, unpack_peer(peer) if type(peer) is int else peer))
            self.proxy.tasks.add(task)
            task.add_done_callback(self.proxy.tasks.discard)
        if self._full():
            self.proxy.pause_full()

    def _out_of_resources(self, exc: OSError) -> None:
        """Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): stop accepting
        (the connections wait in the backlog) for a delay that doubles from ACCEPT_BACKOFF_MIN
        up to ACCEPT_BACKOFF_MAX seconds, or until a session ends (haproxy's listener
        limiting: it retries after 100 ms, or when a connection is released), instead of
        being woken again at once by a listener that stays readable. Logged once, and once
        more when accepting works again."""
        if not self._backoff:
            log.error("frontend %s: cannot accept (%s); pausing", self.name, exc.strerror or exc)
        self._backoff = min(max(self._backoff * 2, ACCEPT_BACKOFF_MIN), ACCEPT_BACKOFF_MAX)
        if not self.paused:
            self.pause()
        self.loop.call_later(self._backoff, self._retry_accept)

    def _retry_accept(self) -> None:
        if self.paused and self.listeners and not self._full() and not self.proxy.stopping:
            self.resume()

    def session_ended(self) -> None:
        """A client connection of this frontend was closed: count it out, accept again."""
        self.active -= 1
        self.proxy.active -= 1
        if self.proxy.stopping:
            if self.proxy.active == 0:
                self.proxy.stop()
            return
        self.proxy.resume_if_room()

    async def _session(self, sock: socket.socket, peer=None) -> None:
        try:
            await self._tcp_session(sock, peer)
        finally:
            self.session_ended()

    async def _tcp_session(self, sock: socket.socket, peer=None) -> None:
        """`mode tcp`: balance the connection to a server (`balance source` hashes the
        client address `peer`) and tunnel both ways until EOF."""
        be = self.backend
        t_accept = self.loop.time()
        try:
            try:
                ip = peer[0] if isinstance(peer, tuple) else "unknown"
                lease = await be.acquire(allow_reuse=False, key=be.key_of(b"", (), ip))
            except NoServerAvailable as exc:
                log.warning("%s", exc)
                t = Termination.parse(exc.termination)
                record_termination(t, self.counters, be.counters, None)
                if self.logger is not None:
                    self.logger.tunnel(tunnel_record(self, peer, None, t, None, None, t_accept, 0.0, self.logger,
                                                  self.loop.time(), exc.server, exc.retries))
                return
            t_lease = self.loop.time()
            route = self.route
            try:
                up, down = await run_tunnel(self.mover, sock, lease.sock, route.t_tunnel,
                                            route.splice_request, route.splice_response)
            finally:
                be.release(lease, False)
            t = tunnel_termination(up, down)
            if lease.killed is not None:  # on-marked-down / on-marked-up ended it
                t = Termination(lease.killed, t.phase if not t.normal else Phase.DATA)
            record_termination(t, self.counters, be.counters, lease.server.counters)
            for c in (self.counters, be.counters, lease.server.counters):
                c.bin += up.moved
                c.bout += down.moved
                c.spliced += up.spliced + down.spliced
                c.copied += up.copied + down.copied
            if self.logger is not None:
                self.logger.tunnel(tunnel_record(self, peer, lease, t, up, down, t_accept, t_lease, self.logger,
                                              self.loop.time()))
        except Exception:
            log.exception("tcp session on %s failed", self.name)
        finally:
            io.forget(sock)
            sock.close()


def engine_inline(cpu: int) -> bool:
    """Whether this worker's engine runs inline, turned by the event loop, rather than on a
    thread of its own: when the worker may run on one CPU only (its `cpu-map` entry, or the
    one CPU the master gives each worker) and no other CPU is asked for the engine, a thread
    would only share that CPU with the loop, at the price of a wake-up and two thread
    switches per batch of jobs. The environment variable SPLICER_ENGINE (`thread` or
    `inline`) overrides the choice, for measurements and tests."""
    forced = os.environ.get("SPLICER_ENGINE")
    if forced in ("thread", "inline"):
        return forced == "inline"
    cpus = os.sched_getaffinity(0)
    return len(cpus) == 1 and cpu in (-1, *cpus)


class Proxy:
    """Every frontend and backend of one Config, served by one event loop.

    Args:
        config: the resolved configuration.
        loop: the event loop to run on.
        listeners: {frontend name: listening sockets} (listener.open_listeners()).
        cpu: CPU to pin the engine thread to (-1: it inherits the worker's affinity).
        worker: this worker's number (from 1), shown in the stats line.
        channel: this worker's end of its control channel to the master (runtime/channel.py),
            served from serve(); None: a lone proxy without a master.
        changes: the runtime API changes the master remembers (lists of words, oldest
            first), applied after the server-state-file (runtime/command.py).

    Attributes:
        busy: the http sessions with a stream in flight now (`show sess`; an idle keep-alive
            connection is not in it).
        errors: the last refused request heads (admin.errors.ErrorCapture; `show errors`).
    """

    def __init__(self, config: Config, loop: asyncio.AbstractEventLoop, listeners: dict[str, list[socket.socket]],
                 cpu: int = -1, worker: int = 1, channel: socket.socket | None = None,
                 changes: tuple = ()) -> None:
        self.config = config
        self._channel_sock = channel
        self.channel: Channel | None = None
        self.stopping = False
        self.listeners = listeners
        self.worker = worker
        self.loop = loop
        g = config.global_
        self.maxconn = g.maxconn
        self.active = 0
        self.tasks: set[asyncio.Task] = set()
        self.proc_vars: dict = {}  # the worker's "proc" variables (http/variables.py)
        # whether a rule may set a variable: without one, every variable is absent and the
        # requests' views carry no variables.Vars (sample.RequestView.vars None)
        self.vars_used = any(isinstance(r, VarRule) for px in (*config.frontends, *config.backends.values())
                             for r in (*px.http_request, *px.http_response))
        self.logs = LogHub(loop)  # the access log's targets, opened once per worker
        maxpipes = g.maxpipes if g.maxpipes is not None else max(g.maxconn // 4, 1)
        # the loop's own pool only serves transfers the engine could not take: a quarter
        pipesize = g.pipesize or DEFAULT_PIPESIZE
        self.pool = PipePool(pipesize, max(maxpipes // 4, 1))
        # heads are read into and written from the engine's buffers: room for the largest head
        # accepted (tune.bufsize) plus the fields splicer adds when forwarding it
        maxjobs = 2 * g.maxconn + 64
        # head buffers beyond one a job: what the express lane's requests hold (two each)
        self.engine = Engine(loop, cpu, pipesize, maxpipes, maxjobs=maxjobs, bufsize=g.bufsize + HEAD_ROOM,
                             nbufs=maxjobs + 2 * min(g.maxconn, EXPRESS_REQUESTS), inline=engine_inline(cpu))
        self.mover = Mover(loop, self.pool, self.engine)
        self.backends = {name: Backend(b, loop, self.engine.quiet) for name, b in config.backends.items()}
        for be in self.backends.values():  # server state changes and health checks go to its `log` lines
            be.events = self.logs.events(be.model.logs) if be.model.logs else None
        self.auth = Authenticator(config.userlists, loop)  # http_auth verdicts (runtime/auth.py)
        self.frontends = [FrontendRT(self, f, self.backends[f.default_backend] if f.default_backend else None)
                          for f in config.frontends]
        # the express lanes (runtime/express.py), one per frontend that may have one
        self.lanes = []
        if os.environ.get("SPLICER_EXPRESS", "on") != "off":
            for fe in self.frontends:
                fe.lane = lane_of(fe, len(self.lanes), self.engine)
                if fe.lane is not None:
                    self.lanes.append(fe.lane)
        self.rates = status.RateSampler(self)  # rate/rate_max columns, sampled each second
        self._stopped = asyncio.Event()
        # the http sessions with a stream in flight (`show sess`, a hard stop's wait): an
        # idle keep-alive connection is in no set (memory per connection)
        self.busy: set = set()
        self.errors: deque = deque(maxlen=CAPTURES)
        self.error_events = 0
        self.started = time.time()
        command.load_server_state_file(self)
        command.apply_changes(self, changes)

    def capture_error(self, fe: FrontendRT, session, code: int, reason: str, data: bytes) -> None:
        """Remember a request head refused with status `code` (`show errors`)."""
        data = bytes(data[:self.config.global_.bufsize])
        text, pos = plain_reason(reason, data)
        self.errors.append(ErrorCapture(time.time(), fe.name, status.proxy_ids(self)[fe.name],
                                        f"{session.client_ip}:{session.client_port}", self.error_events,
                                        self.worker, code, text, data, pos=pos))
        self.error_events += 1

    def admin_context(self) -> dict:
        """What admin.merge.combine() needs to know of this worker alone (`show info`
        run through the "command" op; the master passes its own over the workers)."""
        g = self.config.global_
        now = time.time()
        return {"version": __version__, "pid": os.getpid(), "uptime": now - self.started,
                "start_time": self.started, "workers": 1, "maxconn": g.maxconn,
                "maxpipes": g.maxpipes if g.maxpipes is not None else max(g.maxconn // 4, 1),
                "listeners": sum(len(v) for v in self.listeners.values()), "node": socket.gethostname(),
                "now": now}

    def nbsrv(self, backend: str) -> int:
        """haproxy's nbsrv(<backend>): the backend's usable servers (up, weight above 0);
        0 for a name that is not a backend."""
        be = self.backends.get(backend)
        if be is None:
            return 0
        b = be.balancer
        return sum(1 for k in range(len(be.servers)) if b.up[k] and b.weights[k] > 0)

    def pause_full(self) -> None:
        """Stop accepting on every listener while the global maxconn is reached."""
        for fe in self.frontends:
            if not fe.paused:
                fe.pause()

    def resume_if_room(self) -> None:
        """Accept again on paused listeners once there is room."""
        for fe in self.frontends:
            if fe.paused and not fe._full():
                fe.resume()

    def stats(self) -> dict:
        """Every counter, as printed on SIGHUP and asked by the master ("stats"): frontends,
        backends (with servers), pipes, the password hashes verified (auth.verified) and
        verdicts cached, the express lanes' requests. Each frontend, backend and server entry carries its state too
        (runtime/status.py: status, check results, weight, lastchg, downtime, limits, rates)."""
        p = self.pool.stats()
        e = self.engine.stats()
        now = self.loop.time()
        ids = status.proxy_ids(self)
        return {
            "pid": os.getpid(),
            "worker": self.worker,
            "frontends": {fe.name: status.frontend_stats(fe, self.rates, ids[fe.name]) for fe in self.frontends},
            "backends": {be.name: status.backend_stats(be, now, self.rates, ids[be.name])
                         for be in self.backends.values()},
            "engine": {"spliced_bytes": e.spliced_bytes, "splice_calls": e.splice_calls,
                       "eagain_waits": e.eagain_waits, "jobs_done": e.jobs_done, "jobs_active": e.jobs_active,
                       "jobs_nopipe": e.jobs_nopipe, "timeouts": e.timeouts, "pipes_used": e.pipes_used,
                       "pipes_free": e.pipes_free, "pipes_max": e.pipes_max, "pipe_size": e.pipe_size,
                       "pipes_killed": e.pipes_killed},
            "pipes": {"used": p.pipes_used, "free": p.pipes_free, "max": p.pipes_max, "size": p.pipe_size,
                      "killed": p.pipes_killed, "spliced_bytes": p.spliced_bytes, "splice_calls": p.splice_calls,
                      "eagain_waits": p.eagain_waits, "failures": p.pipe_failures},
            "auth": {"verified": self.auth.verified, "cached": len(self.auth.cache)},
            "log": self.logs.stats(),
            # the express lanes (runtime/express.py): requests the engine routed and relayed
            # by itself, those it handed back to a stream, those refused a credit, the
            # credits lent now and so far, and of those the new connections; `streams`: the
            # frontend's other requests (req_tot less `requests`), which went the stream's way
            "express": {lane.fe.name: {"requests": lane.requests, "handovers": lane.handovers,
                                       "refused": lane.refused, "credits": lane.lent, "lends": lane.lends,
                                       "connects": lane.connects,
                                       "streams": lane.fe.counters.req_tot - lane.requests}
                        for lane in self.lanes},
        }

    def print_stats(self) -> None:
        """Write the counters as one line `splicer-stats {json}` to stderr."""
        sys.stderr.write("splicer-stats " + json.dumps(self.stats(), separators=(",", ":")) + "\n")
        sys.stderr.flush()

    async def cluster_stats(self) -> dict:
        """The counters of every worker of the current generation, summed
        (splicer.stats.merge_stats), asked of the master over the control channel; a lone
        proxy (no master) gives its own, in the same shape.

        Raises:
            TimeoutError, channel.ChannelClosed: the master did not answer.
        """
        if self.channel is None:
            return merge_stats([self.stats()])
        reply = await self.channel.ask({"op": "cluster-stats"}, timeout=5.0)
        return reply["stats"]

    async def cluster_command(self, line: str) -> str:
        """Run the runtime API command `line` on every worker (through the master, which
        sends each a "command" op, control.py) and return their combined answers; a lone
        proxy runs it on itself.

        Raises:
            TimeoutError, channel.ChannelClosed: the master did not answer.
        """
        if self.channel is None:
            return (await control.handle(self, {"op": "command", "line": line})).get("text", "")
        reply = await self.channel.ask({"op": "cluster-command", "line": line}, timeout=5.0)
        return reply.get("text", "")

    def soft_stop(self) -> None:
        """haproxy's soft stop: close the listeners (new connections go to the other workers,
        or wait in the backlog for a new generation), finish the sessions in flight, and
        return from serve() once the last one has ended. A keep-alive connection gets
        `Connection: close` on its next response and ends after it; an idle one is kept
        until then (`option idle-close-on-response`, on by default here), or closed at once
        with `no option idle-close-on-response` (haproxy's default)."""
        if self.stopping:
            return
        self.stopping = True
        log.info("worker %d (pid %d): soft stop, %d connection(s) to finish", self.worker, os.getpid(), self.active)
        for lane in self.lanes:  # the requests to come go the stream's way: each says Connection: close
            lane.close()
        for fe in self.frontends:
            fe.close()
            if fe.idle:  # `no option idle-close-on-response`: idle connections close now
                for session in list(fe.idle):
                    session.close()
        if self.active == 0:
            self.stop()

    def stop(self) -> None:
        """Ask serve() to return."""
        self._stopped.set()

    async def _kill_streams(self) -> None:
        """At a hard stop (SIGTERM: the master's stop or `hard-stop-after`): end the streams
        still in flight as `shutdown sessions server` does (Backend.shutdown_streams(), cause
        KILLED), so each one ends through its usual path with its bytes and status counted
        and its termination "K" plus the phase it was in ("KD" while moving a body), then wait
        at most KILL_GRACE seconds for them to be recorded. A stream still running then (one
        that holds no server connection) is cancelled by serve(), and counted killed there."""
        n = sum(be.shutdown_streams(i, Cause.KILLED) for be in self.backends.values() for i in range(len(be.servers)))
        if not n:
            return
        deadline = self.loop.time() + KILL_GRACE
        # (an express request ends through its stream once the engine hands it over)
        while self.loop.time() < deadline and (self.busy or any(lane.lent for lane in self.lanes)):
            await asyncio.sleep(0.01)

    async def serve(self) -> None:
        """Open every listener and serve until stop() (or SIGTERM/SIGINT)."""
        for fe in self.frontends:
            fe.open(self.listeners[fe.name])
        # after the listeners: a worker that answers its master accepts (a reload waits for it)
        if self._channel_sock is not None:
            self.channel = Channel(self._channel_sock, lambda req: control.handle(self, req),
                                   name=f"worker {self.worker}")
            await self.channel.start()
        # each checked server's health exists before the first request (observe feeds it)
        checks = [self.loop.create_task(ServerHealth(be, srv).run()) for be in self.backends.values()
                  for srv in be.servers if srv.model.check]
        self.rates.start()
        self.loop.add_signal_handler(signal.SIGUSR1, self.soft_stop)
        self.loop.add_signal_handler(signal.SIGHUP, self.print_stats)
        self.loop.add_signal_handler(signal.SIGTERM, self.stop)
        self.loop.add_signal_handler(signal.SIGINT, self.stop)
        # blocked since the fork (master.py): pending ones are delivered to the handlers now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1, signal.SIGHUP, signal.SIGTERM, signal.SIGINT})
        log.info("worker %d (pid %d) serving on CPUs %s", self.worker, os.getpid(),
                 ",".join(map(str, sorted(os.sched_getaffinity(0)))))
        try:
            await self._stopped.wait()
        finally:
            for fe in self.frontends:
                fe.close()
            for lane in self.lanes:
                lane.close()
            self.rates.stop()
            for t in checks:
                t.cancel()
            await self._kill_streams()
            for t in list(self.tasks):
                t.cancel()
            if self.tasks:
                await asyncio.wait(self.tasks, timeout=2.0)
            # the engine's jobs end now (CANCELLED): a fast-path stream still in flight (engine
            # callbacks, no task) is recorded and logged by its callback, before the last
            # batch of the log is written and the counters are printed
            self.engine.close()
            for be in self.backends.values():
                be.close()
            self.logs.close()  # the last batch is written before the counters are printed
            if log.isEnabledFor(logging.INFO):  # not under -q (quiet: warnings and errors only)
                self.print_stats()
            if self.channel is not None:
                self.channel.close()
            self.auth.close()
            self.pool.close()
