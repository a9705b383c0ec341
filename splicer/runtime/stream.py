"""The driver of a stream: it carries out the jobs of the stream machine and feeds it back.

Rule: what a stream does next is decided by its machine (http/machine.py, pure); this module
only carries the machine's jobs out, each one as an engine job whose completion calls back
(runtime/heads.py) or, when the engine cannot take it (no engine slot or pipe, a head larger
than its buffers, a de-chunked body, a queue wait or a connect), as a task of the loop whose
end feeds the machine the same event. There is one path: the common request is the walk
whose every job the engine took (no task, no future, no socket call in Python), and every
other request walks the same machine with some of its jobs on the loop.

Theory of operation. A session (runtime/session.py) routes a request head and hands it to a
new Stream, whose begin() runs the machine's first jobs. Each job's end is an event fed to
the machine (step()), whose answer is the next jobs. The machine's Finish job ends the
stream: runtime/accounting.py counts it on the frontend, backend and server (bytes,
statuses, its termination) and logs it, then the session reads the next head or closes.
With `observe layer7`, the machine's Observe jobs report what the server's responses showed
to its health (Server.observe). A stream whose server connection splicer shut down under it
(on-marked-down / on-marked-up, Backend.shutdown_streams) ends as the server's early end
makes it end, and is recorded with the lease's cause ('D' or 'U'). A hard stop ends a task
with CancelledError and the engine's jobs with CANCELLED: either is the machine's KILLED
("K" plus the phase). A bug is logged and ends the stream with an internal error ("I").
"""
from __future__ import annotations

import asyncio
import logging
import socket
from splicer.engine.engine import Completion, JobEnd, Phase as JobPhase
from splicer.errors import NoServerAvailable
from splicer.http.framing import BodyKind, Framing
from splicer.http.h1 import forward_request_head, forwarded_request
from splicer.http.machine import (Abort, Ev, Acquire, Discard, EndBody, Finish, Hold, Interim, Observe, ReadHead,
                                  Release, Reply, Respond, Send, Serve, ShutServer, State, StreamMachine, Tunnel, Wait,
                                  Warn, Buffer, whole_body)
from splicer.http.retry import RetryPolicy
from splicer.http.outcome import End, Result
from splicer.http.termination import Cause, Phase
from splicer.runtime import heads, io, services
from splicer.runtime.accounting import record_stream
from splicer.runtime.backend import Lease
from splicer.runtime.transfer import Side, result_of
from splicer.runtime.tunnel import run_tunnel

log = logging.getLogger("splicer")

# engine completion values every request reads, bound once (an Enum member's lookup costs
# about 0.1 us in CPython 3.11)
_CANCELLED, _TIMEOUT, _TOO_LARGE, _DONE = JobEnd.CANCELLED, JobEnd.TIMEOUT, JobEnd.TOO_LARGE, JobEnd.DONE
_SEND, _BODY = JobPhase.SEND, JobPhase.BODY
_DATA = Phase.DATA

SMALL_BODY = 65536
"""A copied response body up to this size is read at once and sent with its head (on the loop)."""

NO_BACKEND_POLICY = RetryPolicy()
"""The retry settings of a stream no backend takes (answered or refused by its frontend):
never read, since such a stream connects nowhere."""

_SESSIONS = object()  # Stream(be=...) not given: the session's backend


class Stream(StreamMachine):
    """One request/response exchange of `session`, driven.

    Args:
        session: the client connection (HttpSession) it belongs to.
        req: the parsed (and routed) request head; None for a head refused before it was
            parsed whole (begin_refusal()).
        raw: the request head's bytes, as read.
        be: the runtime Backend it counts on (default: the session's); None: none (a request
            its frontend answered or refused).

    Started by begin() (a routed request: StreamMachine.start), begin_local()
    (answer_locally) or begin_refusal() (refuse).

    Attributes (besides the machine's):
        s, fe, be: its session, frontend and backend.
        t_head, t_lease: loop times for the access log's timers (0: not reached).
    """

    __slots__ = ("s", "fe", "be", "loop", "t_head", "t_lease", "rules_in", "_rewritten", "_persist", "_lent",
                 "last_lease", "_key", "_chained", "_pending", "_body_task", "_ending", "_timer", "_responding",
                 "_adopt")

    def __init__(self, session, req, raw: bytes, be=_SESSIONS) -> None:
        if be is _SESSIONS:
            be = session.be
        if be is not None:
            super().__init__(req, raw, session.route, be.policy, be.counters, be.name, not session.streams)
        else:
            super().__init__(req, raw, session.route, NO_BACKEND_POLICY, None, "", not session.streams)
        session.streams += 1
        self.s = session
        session.stream = self
        session.fe.proxy.busy.add(session)  # `show sess` lists it
        self.fe = session.fe
        self.be = be
        self.loop = loop = session.fe.loop
        self.t_head = loop.time()
        self.t_lease = 0.0
        self._rewritten = False   # the frontend's rules changed the method or fields
        if session.view is not None:  # the frontend's rules ran: what they read and left
            self.view = session.view
            self._rewritten = session.rewritten
        self.rules_in = session.rules_in  # the http-request header rules left to apply
        self.info = session.stream_info()
        self.observing = be is not None and be.observes_responses
        self.persisting = be is not None and be.sticky
        self._persist = None      # the backend's persistence decision (Backend.persistence)
        self._lent = None         # the Lease of the attempt under way (Release and Finish give it back)
        self.last_lease = None    # the last Lease lent to this stream (its `killed` is read at the end)
        self._key = None          # the request's balancing key (Backend.key_of)
        self._chained = 0         # the id of the next-head job chained to the Respond job
        self._pending = None      # (id, None) of that job once the response went out
        self._body_task = None    # the request body's transfer on the loop
        self._ending = False      # EndBody cancelled the body task (not a hard stop)
        self._timer = None        # a Wait job's timer
        self._responding = None   # the Respond job the engine took (run on the loop if it had no pipe)
        # a request the express lane sent and handed over: [its lease, the completion of its
        # response's read], taken by the first Acquire and Send; or [None, (server index,
        # error)] when the lane's connect for it failed (runtime/express.py)
        lane = session.fe.lane
        if lane is not None and lane.adopting is not None:
            self._adopt = list(lane.adopting)
            lane.adopting = None
        else:
            self._adopt = None

    @property
    def shown_phase(self):
        """The phase `show sess` shows: the machine's, or DATA while the engine relays the
        response by itself (the machine learns of it at the relay's end)."""
        if self.state == State.SEND and self._chained and self.fe.mover.engine.relaying(self._chained - 1):
            return _DATA
        return self.phase

    @property
    def stopping(self) -> bool:
        """The worker soft-stops: its responses say Connection: close (idle-close-on-response)."""
        return self.fe.proxy.stopping

    # -- the machine's hooks -----------------------------------------------------------------

    def prepared(self) -> list:
        """Build the forwarded request head (with the buffered body bytes, if any), decide
        what the request allows (reuse, replay) and ask for a connection."""
        req, route, s = self.req, self.route, self.s
        early = self.early
        fwd = (route.forwarded, s.client_ip, s.local_ip) if route.forwarded else None
        xff = route.xff_for(s.client_ip)
        edited = self._rewritten  # the rules changed the method or fields: not by ranges
        be = self.be
        if be.sticky:
            # cookie / use-server persistence (http/persist.py): decided before the head is
            # built, since insert-indirect and prefix cookies are edited out of it
            view = self.view
            m = be.model
            if view is None and (m.use_server or m.force_persist or m.ignore_persist):
                view = s.request_view(req, self.raw)
            p = self._persist = be.persistence(req.headers, req.method, view)
            if p.cookie is not None and p.cookie.edited:
                req.headers = p.cookie.fields
                edited = True
        if early is None and not self.rules_in and not edited and route.xff_plain:
            out_head = forwarded_request(self.raw, req, xff, fwd)  # by ranges: no rule reads the stream
        else:
            out_head = forward_request_head(req, xff, fwd, self.rules_in, self.info, self.view,
                                            route.xff_header, route.xff_if_none)
        if early is not None:
            out_head += early
            req.framing = Framing(BodyKind.LENGTH, req.framing.length - len(early))
        self.out_head = out_head
        if be.hashes:  # (roundrobin and the like read no field: the fields stay unsliced)
            self._key = be.key_of(req.target, req.headers, s.client_ip)
        self.decide_reuse()
        return self.attempt()

    def persist_fields(self, resp):
        if self._persist is None:
            return None
        return self.be.response_fields(self._persist, self.server.index, resp.headers, self.req.method)

    # -- driving -------------------------------------------------------------------------------

    def begin(self, more: int = 0) -> None:
        """Run the stream (`more`: bytes the client socket held behind the head, Completion.more)."""
        try:
            self._run(self.start(more))
        except Exception:
            self._failed()

    def begin_local(self, rule, info, pages, tarpit: float) -> None:
        """Run a stream answered here (StreamMachine.answer_locally's arguments)."""
        try:
            self._run(self.answer_locally(rule, info, pages, tarpit))
        except Exception:
            self._failed()

    def begin_refusal(self, cause, status: int, received: int) -> None:
        """Run a stream whose head is refused (StreamMachine.refuse's arguments)."""
        try:
            self._run(self.refuse(cause, status, received))
        except Exception:
            self._failed()

    def step(self, ev: Ev, *args) -> None:
        """Feed the machine the event `ev` (its arguments as StreamMachine.feed) and carry out
        its jobs. A bug in either is logged and ends the stream (termination "I..."), never
        the worker."""
        try:
            self._run(self.feed(ev, *args))
        except Exception:
            self._failed()

    def _run(self, jobs: list) -> None:
        """Carry out `jobs` in order (the machine's answer to one event)."""
        for i, job in enumerate(jobs):
            t = type(job)
            if t is Send:
                self._send(job)
            elif t is Respond:
                self._respond(job)
            elif t is Acquire:
                self._acquire(job)
            elif t is Finish:
                lease, self._lent = self._lent, None
                if lease is not None:
                    self.be.release(lease, job.reusable)
                self._over(job.keep)
            elif t is EndBody:
                task = self._body_task
                if task is not None and not task.done():
                    # the body's transfer may be using both sockets: what follows waits for
                    # its end (a cancellation takes a turn of the loop, an engine job's too)
                    self._ending = True
                    task.cancel()
                    rest = jobs[i + 1:]
                    task.add_done_callback(lambda _t, rest=rest: self._resume(rest))
                    return
            else:
                self._do(job)

    def _resume(self, jobs: list) -> None:
        try:
            self._run(jobs)
        except Exception:
            self._failed()

    def _failed(self) -> None:
        log.exception("stream from %s failed", self.s.client_ip)
        if self.state != State.DONE:
            self.state = State.DONE
            self.end(Cause.INTERNAL)
            if self._lent is not None:
                self.be.release(self._lent, False)
                self._lent = None
            self._end_body()
            self.s.abort_client(reset=True)
            self._over(False)

    def _do(self, job) -> None:
        """The jobs of the less common steps (_run does the common ones)."""
        t = type(job)
        if t is Release:
            lease, self._lent = self._lent, None
            if lease is not None:
                self.be.release(lease, job.reusable)
        elif t is Observe:
            self.server.observe(job.event)
        elif t is ReadHead:
            self._spawn(self._read_head())
        elif t is Interim:
            self._spawn(self._interim(job.data, self.interim_status))
        elif t is Reply:
            self._spawn(self._reply(job))
        elif t is Tunnel:
            self._spawn(self._tunnel(job.head))
        elif t is Abort:
            self.s.abort_client(reset=job.reset)
        elif t is ShutServer:
            if self._lent is not None:
                try:
                    self._lent.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        elif t is Wait:
            self._timer = self.loop.call_later(job.seconds, self.step, Ev.TIMER)
        elif t is Warn:
            log.warning("%s", job.text)
        elif t is Buffer:
            self._spawn(self._buffer(job.want, job.cont))
        elif t is Hold:
            self._spawn(self._hold(job.seconds))
        elif t is Discard:
            self._spawn(self._discard(job.n))
        elif t is Serve:
            self._spawn(self._serve(job.rule))
        else:  # pragma: no cover - a job the driver does not know is a bug
            raise TypeError(f"unknown job {job!r}")

    def _spawn(self, work) -> None:
        """Run the coroutine `work` (one job on the loop) as a task of the worker: a hard
        stop cancels it, and the stream ends killed where it was."""
        task = self.loop.create_task(self._job_task(work))
        tasks = self.fe.proxy.tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _job_task(self, work) -> None:
        try:
            await work
        except asyncio.CancelledError:
            if self.state != State.DONE:
                self.step(Ev.KILLED, Cause.KILLED)
            raise

    def _over(self, keep: bool) -> None:
        """The machine's Finish: count and log the stream, then the session goes on."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        record_stream(self)
        pending, self._pending = self._pending, None
        self.s.stream_over(keep, pending)

    # -- QUEUE: a server connection ----------------------------------------------------------

    def _acquire(self, job: Acquire) -> None:
        """An idle connection to the server the balancer picks, at once when there is one;
        else a task asks the backend (queue, connect, connect retries)."""
        adopt = self._adopt
        if adopt is not None:
            if adopt[0] is not None:  # the express lane's connection, the request on it
                lease, adopt[0] = adopt[0], None
                return self._leased(lease)
            # the lane's connect for it failed: the first attempt of its acquire
            self._adopt = None
            floor = self.be.reuse_floor(self.first)
            return self._spawn(self._acquire_on_loop(job, job.allow_reuse and floor is not None, floor, None, None,
                                                     adopt[1]))
        be = self.be
        floor = be.reuse_floor(self.first)  # http-reuse: None when no idle connection may serve
        allow = job.allow_reuse and floor is not None
        force = self._persist.choice.server if self._persist is not None else None
        picked = None
        if force is None and job.only is None and not job.avoid and self._lent is None and self.server is None:
            i = be.pick_now(self._key)
            if i is not None:
                lease = be.idle_lease(i, floor) if allow else None
                if lease is not None:
                    return self._leased(lease)
                picked = i  # its slot is taken: a connection to it is opened
        self._spawn(self._acquire_on_loop(job, allow, floor, picked, force))

    async def _acquire_on_loop(self, job: Acquire, allow: bool, floor, picked, force, failed=None) -> None:
        try:
            lease = await self.be.acquire(set(job.avoid), allow_reuse=allow, left=job.left, only=job.only,
                                          picked=picked, key=self._key, min_uses=floor or 0, force=force,
                                          failed=failed)
        except NoServerAvailable as exc:
            log.warning("%s", exc)
            self.step(Ev.NO_SERVER, exc.termination, exc.retries, exc.server)
            return
        self._leased(lease)

    def _leased(self, lease: Lease) -> None:
        self._lent = self.last_lease = lease
        lease.client = self.s.sock  # shutdown_streams() ends both sides
        self.t_lease = self.loop.time()
        gone = self.route.abortonclose and self.s.client_gone()
        self.step(Ev.LEASED, lease, gone)

    # -- SEND: the request, and its response head ----------------------------------------------

    def _send(self, job: Send) -> None:
        s, route, mover = self.s, self.route, self.fe.mover
        adopt = self._adopt
        if adopt is not None:  # the express lane sent it already: what came back is this Send's end
            self._adopt = None
            return self._on_exchange(adopt[1])
        sock = self._lent.sock
        stream = job.stream
        terms = job.relay
        relay = None
        if terms is not None and mover.engine is not None:
            cli = s.sock
            lane = s.fe.lane
            relay = heads.relay_fields(terms, cli.fileno(), mover.engine.gen(cli), s.fe.relay_times,
                                       None if lane is None else lane.arming(s._peer))
        if job.whole:
            t = route.t_server
            chained = heads.submit_request_with_body(mover, s.cli, sock, job.head, job.whole, t,
                                                     route.bufsize, t, t, self._on_exchange, relay)
            if chained is not None:
                self._chained = chained
                return
            self.whole, self.body, stream = 0, 1, True  # the loop moves it
        elif not stream:
            t = route.t_server
            chained = heads.submit_send_then_read_head(mover, sock, job.head, t, route.bufsize, t, t,
                                                       self._on_exchange, relay)
            if chained is not None:
                self._chained = chained
                return
        self._spawn(self._send_on_loop(job.head, stream))

    def _on_exchange(self, c: Completion) -> None:
        """Engine callback: the request went out (with its small body) and the response head
        is in, or not; or the engine relayed the response by itself (Send.relay)."""
        chained, self._chained = self._chained, 0
        if c.relayed:
            return self._on_relayed(c, chained)
        if chained:  # no relay: the client's next-head job never started (CANCELLED follows)
            self.fe.mover.engine.then((chained, None), _ignore)
        if c.end is _CANCELLED:  # the engine was closed (a hard stop)
            return self.step(Ev.KILLED, Cause.KILLED)
        if self.whole and c.phase is not _SEND:
            # the job copied the body behind the head (or failed while it did)
            failed = c.phase is _BODY
            self.step(Ev.BODY, result_of(c, True) if failed else whole_body(self.whole))
            if failed:
                return self.step(Ev.HEAD, b"", None, None, self.loop.time())
        if c.phase is _SEND:
            return self.step(Ev.SEND_FAILED)
        failure = None
        head = c.head or b""
        if c.end is _TIMEOUT:
            failure = "timeout"
        elif c.end is _TOO_LARGE:
            failure = "too-large"
        self.step(Ev.HEAD, head, c.index, failure, self.loop.time())

    def _on_relayed(self, c: Completion, chained: int) -> None:
        """The engine sent the response on to the client by itself: the machine records it
        as its own Respond's end. The client's next-head job runs when all of it went."""
        went = c.end is _DONE
        if self.state == State.DONE:  # killed meanwhile (a hard stop): the session is gone
            if chained:
                engine = self.fe.mover.engine
                if went:
                    engine.cancel((chained, None), _ignore)
                else:
                    engine.then((chained, None), _ignore)
            return
        killed = c.end is _CANCELLED  # the engine was closed (a hard stop) under the relay
        if chained:
            if went and not self.relaying.close:
                self._pending = (chained, None)
            else:  # (cancelled by the engine: the relay failed, or the client does not go on)
                self.fe.mover.engine.then((chained, None), _ignore)
        if self.whole:  # the body went with the request, whole, before the response came
            self.step(Ev.BODY, whole_body(self.whole))
        ok = c.phase is not _SEND
        self.step(Ev.RELAYED, c.head, c.index, self.loop.time() - c.relay_ms / 1000, c.relayed, ok,
                  result_of(c, not c.spliced) if ok else None, killed)

    async def _send_on_loop(self, head: bytes, stream: bool) -> None:
        try:
            await io.send_all(self.loop, self._lent.sock, head, self.route.t_server)
        except (OSError, TimeoutError):
            self.step(Ev.SEND_FAILED)
            return
        if stream:
            srv = Side(self._lent.sock, self.route.t_server)
            task = self._body_task = self.loop.create_task(self._request_body(srv))
            self.fe.proxy.tasks.add(task)
            task.add_done_callback(self.fe.proxy.tasks.discard)
        await self._read_head()

    async def _read_head(self) -> None:
        """Read a response head on the loop (or with an awaited engine job) and feed it."""
        loop, lease = self.loop, self._lent
        body = self._body_task
        if body is not None and not body.done():
            # `timeout server` runs from the end of the request body: a long upload is not
            # the server's silence. Until then wait for a response or the body's end.
            readable = loop.create_task(io.wait_readable(loop, lease.sock, None))
            try:
                await asyncio.wait((body, readable), return_when=asyncio.FIRST_COMPLETED)
            finally:
                await end_task(readable)
        failure = None
        try:
            route = self.route
            head = await heads.read_head(self.fe.mover, lease.sock, route.bufsize, route.t_server, route.t_server)
        except TimeoutError:
            head, failure = b"", "timeout"
        except io.HeadTooLarge:
            head, failure = b"", "too-large"
        except OSError:
            head = None
        if self.state == State.SEND:  # (a failed body may have ended the stream meanwhile)
            self.step(Ev.HEAD, head, None, failure, loop.time())

    async def _request_body(self, srv: Side) -> None:
        """Move the request body client -> server and report its end."""
        policy, req, s = self.route.splice_request, self.req, self.s
        try:
            if req.framing.kind is BodyKind.LENGTH:
                r = await self.fe.mover.move(s.cli, srv, req.framing.length, policy)
            else:
                r = await self.fe.mover.move_chunked(s.cli, srv, policy)
        except asyncio.CancelledError:
            if not self._ending and self.state != State.DONE:
                self.step(Ev.KILLED, Cause.KILLED)
            raise
        self.step(Ev.BODY, r)

    def _end_body(self) -> None:
        task = self._body_task
        if task is not None and not task.done():
            self._ending = True
            task.cancel()

    async def _interim(self, data: bytes, status: int) -> None:
        s = self.s
        try:
            await io.send_all(self.loop, s.sock, data, s.t_client)
            n = len(data)
        except (OSError, TimeoutError):
            n = 0
        self.step(Ev.INTERIM_SENT, n, status)

    # -- DATA: the response ------------------------------------------------------------------

    def _respond(self, job: Respond) -> None:
        """One engine job sends the head and the body and, when the client connection goes
        on, reads the next request head (the server connection is let go of first)."""
        s = self.s
        if not job.dechunk:
            nxt = (s.t_keepalive, s.t_request, self.route.bufsize) if job.then_head else None
            srv = Side(self._lent.sock, self.route.t_server)
            chained = heads.submit_send_with_body(self.fe.mover, srv, s.cli, job.head, job.count, job.chunked,
                                                  job.splice, nxt, self._response_sent)
            if chained is not None:
                self._chained = chained
                self._responding = job
                return
        self._spawn(self._respond_on_loop(job))

    def _response_sent(self, c: Completion) -> None:
        """Engine callback: the response head and body went to the client (or not)."""
        chained, self._chained = self._chained, 0
        job, self._responding = self._responding, None
        if self.state == State.DONE:  # killed meanwhile (a hard stop): the session is gone
            if chained:
                self.fe.mover.engine.cancel((chained, None), _ignore)
            return
        if c.end is _CANCELLED:
            # the engine was closed (a hard stop) while the body moved: killed where it was,
            # and the client reset (a close-delimited body must not look complete)
            return self.step(Ev.KILLED, Cause.KILLED)
        taken = heads.body_of(c, not job.splice and not job.chunked)
        if taken is None:  # no pipe: nothing was sent; the loop copies instead
            if chained:
                self.fe.mover.engine.cancel((chained, None), _ignore)
            return self._spawn(self._respond_on_loop(job))
        if chained:
            self._pending = (chained, None)
        self.step(Ev.SENT, *taken)

    async def _respond_on_loop(self, job: Respond) -> None:
        """Send the response head and move its body on the loop (when the engine cannot take
        the job, or the body is de-chunked or a copied chunked one)."""
        loop, s, srv = self.loop, self.s, Side(self._lent.sock, self.route.t_server)
        fr = self.resp.framing
        policy = self.route.splice_response
        head = job.head
        length = fr.length if fr.kind is BodyKind.LENGTH else 0
        early = b""
        if 0 < length <= SMALL_BODY and not policy.wants(length):
            # a small copied body is usually in the socket already: take it now and send it
            # with the head in one write (one syscall and one segment fewer per response)
            try:
                early = srv.sock.recv(length)
            except (BlockingIOError, InterruptedError):
                early = b""
            except OSError:
                early = b""  # the transfer below meets the error again and reports it
        try:
            await io.send_all(loop, s.sock, head + early if early else head, s.t_client)
        except (OSError, TimeoutError):
            self.step(Ev.SENT, False, None)
            return
        mover = self.fe.mover
        if fr.kind is BodyKind.LENGTH:
            r = await mover.move(srv, s.cli, length - len(early), policy)
            r.moved += len(early)
            r.copied += len(early)
        elif fr.kind is BodyKind.CHUNKED:
            r = await mover.move_chunked(srv, s.cli, policy, dechunk=job.dechunk)
        elif fr.kind is BodyKind.CLOSE:
            r = await mover.move(srv, s.cli, None, policy)
        else:
            r = Result(End.DONE)
        self.step(Ev.SENT, True, r)

    async def _tunnel(self, head: bytes) -> None:
        s = self.s
        try:
            await io.send_all(self.loop, s.sock, head, s.t_client)
        except (OSError, TimeoutError):
            self.step(Ev.TUNNEL_END, 0, None, None)
            return
        up, down = await run_tunnel(self.fe.mover, s.sock, self._lent.sock, self.route.t_tunnel,
                                    self.route.splice_request, self.route.splice_response)
        self.step(Ev.TUNNEL_END, len(head), up, down)

    # -- ANSWER and REQUEST: splicer's own answers, a buffered body -------------------------------

    async def _reply(self, job: Reply) -> None:
        s = self.s
        if job.data is None:
            n = await s.reply_error(job.status)
        else:
            try:
                await io.send_all(self.loop, s.sock, job.data, s.t_client)
                n = len(job.data)
            except (OSError, TimeoutError):
                n = 0
        self.step(Ev.REPLIED, n)

    async def _hold(self, seconds: float) -> None:
        self.step(Ev.HELD, await self.s.hold(seconds))

    async def _discard(self, n: int) -> None:
        self.step(Ev.DISCARDED, await self.s.discard(n))

    async def _serve(self, rule) -> None:
        self.step(Ev.SERVED, *await services.answer(self.s, self.req, self.raw, rule, self.be))

    async def _buffer(self, want: int, cont: bool) -> None:
        """`option http-buffer-request`: wait for the body (all of it up to tune.bufsize, else
        its first tune.bufsize bytes) within `timeout http-request`, before any server is
        chosen (with a 100 Continue first when the client waits for one: RFC 9110 section
        10.1.1, as haproxy does when it buffers)."""
        s, loop = self.s, self.loop
        deadline = None if s.t_request is None else loop.time() + s.t_request
        if cont:
            try:
                await io.send_all(loop, s.sock, b"HTTP/1.1 100 Continue\r\n\r\n", s.t_client)
            except (OSError, TimeoutError):
                return self.step(Ev.BUFFERED, None, "closed")
        got = bytearray()
        while len(got) < want:
            try:
                chunk = s.sock.recv(want - len(got))
            except (BlockingIOError, InterruptedError):
                try:
                    left = None if deadline is None else max(0.0, deadline - loop.time())
                    await io.wait_readable(loop, s.sock, left)
                except TimeoutError:
                    return self.step(Ev.BUFFERED, None, "timeout")
                continue
            except OSError:
                return self.step(Ev.BUFFERED, None, "closed")
            if not chunk:  # the client closed before sending its body
                return self.step(Ev.BUFFERED, None, "closed")
            got += chunk
        self.step(Ev.BUFFERED, bytes(got), None)

    # -- the end -------------------------------------------------------------------------------


def _ignore(c: Completion) -> None:
    """A completion nobody needs (a chained job cancelled with its first)."""


async def end_task(task) -> None:
    """Cancel `task` if it still runs and wait for it to end (None: nothing to do)."""
    if task is None:
        return
    if not task.done():
        task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
