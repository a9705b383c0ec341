"""An HTTP session: one accepted client connection, across keep-alive requests.

Theory of operation: the session reads each request head (phase R of its stream) and hands
it to a new Stream (runtime/stream.py), which forwards it and relays the response, until a
stream ends the session:
  1. Read exactly the request head (peek for its end; the body stays in the kernel) within
     `timeout http-request` (the first byte of a later request within
     `timeout http-keep-alive`); after a response, the engine job that sent it reads the
     next head. Parse it with h11 (http/h1.py); a bad head gets its 4xx and the session
     ends, as does a stream that says so.
  2. When the session ends with bytes from the client still unread (a request pipelined
     behind a close), stop writing and drain them before closing (_drain), so the close
     is a FIN, not a reset that would destroy the last response.
Every stream, the ones refused while reading their head included, ends with a Termination,
counted in runtime/accounting.py.

The session is driven by engine callbacks: each head arrives in __call__() (or, when the
engine cannot take the head job, from a task that reads it on the loop) and goes to one
place, _took(), which routes it and starts its Stream (runtime/stream.py: the stream
machine's driver, which ends by calling stream_over()). Every request is a stream of the
one machine (http/machine.py), whichever door it takes: a routed one (start()), one answered
here by a rule, a service or a 503 for want of a backend (answer_locally()), a head refused
before it was routed (refuse()). Only a credential check (runtime/auth.py) or a head the
engine could not read runs as a task of the session (spawn); an idle keep-alive connection
holds no task. Nothing raises past the callbacks or the task: a bug is logged and the
connection reset.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
from socket import inet_ntoa as _ntoa

from splicer.http import actions
from splicer.http.errorpages import error_response
from splicer.http.h1 import HeadError, head_complete, parse_request
from splicer.http.logformat import StreamInfo
from splicer.http.normalize import ambiguity
from splicer.http.sample import RequestView, request_view_of
from splicer.http.variables import Vars
from splicer.http.termination import Cause
from splicer.engine.binding import X_CLOSED, X_WANT, unpack_peer
from splicer.engine.engine import Completion, JobEnd
from splicer.runtime import heads, io
from splicer.runtime.route import Decision
from splicer.runtime.stream import Stream
from splicer.runtime.transfer import Side


log = logging.getLogger("splicer")

_REFUSED = Decision(actions.BAD_REQUEST, None, 0, 0)
"""A frontend without a Switching refuses an ambiguous request-target with this."""

LINGER = 1.0
"""Seconds a closing client connection with unread bytes is drained before the close."""

HANDED = "handed"
"""What a session's task returns when it handed the connection to a Stream, which goes on
with it (Stream.begin(); the stream's end calls stream_over())."""

IP_TEXT_MAX = 4096
"""Client IPv4 addresses whose text form client_ip keeps (per worker; all forgotten when
full): each request of a keep-alive connection asks for its client's address (X-Forwarded-For,
the log), and the session keeps it packed in one int."""

_IP_TEXT: dict[int, str] = {}

_SINK = bytearray(16384)
"""Where every tarpit hold drops what its client sends (one event loop per process)."""


class HttpSession:
    """One client connection in `mode http`.

    Args:
        fe: the frontend it arrived on (config, backend, counters, mover).
        sock: the accepted non-blocking client socket; the session closes it.
        peer: the client's address: an IPv4 one packed as one int (engine/binding accept():
            address << 16 | port), else the address object of the socket module (a tuple;
            a unix socket's is a string).
    """

    __slots__ = ("fe", "be", "sock", "_peer", "_local", "route", "_reset", "_closing", "_job",
                 "next_head", "view", "rules_in", "streams", "rewritten", "sess_vars", "_memo_addr", "stream",
                 "t_accept", "t_idle", "log_peer", "t_local")

    def __init__(self, fe, sock: socket.socket, peer) -> None:
        self.fe = fe
        self.be = fe.backend
        self.sock = sock
        self._peer = peer  # packed: one int, not a tuple, a string and an int per connection
        self._local = None  # (address, port) of our end, looked up when first needed
        self.route = route = fe.route
        self._reset = False         # the client connection is to end with a reset
        self._closing = False
        self._job = None            # the id of the engine job reading the next head (its callback: the session)
        self.next_head = None  # (id, future) of the engine job reading the next request head
        # set per request when the frontend has rules that decide (_switch); else fixed
        self.view = None                     # the request's sample.RequestView
        self.rules_in = route.request_rules  # the http-request header rules left to apply
        self.rewritten = False               # the rules changed the request's method or fields
        self.streams = 0                     # requests taken: streams and local answers (http-reuse safe, the log's first)
        self.sess_vars = None                # the session's "sess" variables (made when first needed)
        self._memo_addr = None               # the address part of its decisions' memo keys (DecisionMemo.address)
        self.log_peer = None                 # "ip:port" of the client as an access log shows it (collect.py)
        self.t_local = 0.0                   # when the request being answered here was taken (its log's timers)
        self.stream = None                   # its Stream in flight (`show sess`), None between
        self.t_accept = self.t_idle = fe.loop.time()  # the access log's clock: accept, end of the last response

    # what every session of a frontend shares is read from it, not kept per connection
    @property
    def loop(self):
        return self.fe.loop

    @property
    def t_client(self) -> float | None:
        """`timeout client` (the frontend's), seconds."""
        return self.fe.route.t_client

    @property
    def t_request(self) -> float | None:
        """`timeout http-request` (the frontend's), seconds."""
        return self.fe.route.t_request

    @property
    def t_keepalive(self) -> float | None:
        """`timeout http-keep-alive` (the frontend's), seconds."""
        return self.fe.route.t_keepalive

    @property
    def started(self) -> float:
        """When it was accepted (`show sess` age; loop time)."""
        return self.t_accept

    @property
    def cli(self) -> Side:
        """The client socket with its idle timeout (`timeout client`), for transfers (made
        when asked: an idle session does not keep one)."""
        return Side(self.sock, self.t_client)

    @property
    def peer(self):
        """The client's address as the socket module gives it: (address, port, ...) for
        TCP, a string for a unix socket."""
        p = self._peer
        return unpack_peer(p) if type(p) is int else p

    @property
    def client_ip(self) -> str:
        """The client's address ("unknown" on a unix socket)."""
        p = self._peer
        if type(p) is int:
            ip = p >> 16
            text = _IP_TEXT.get(ip)
            if text is None:
                if len(_IP_TEXT) >= IP_TEXT_MAX:
                    _IP_TEXT.clear()
                text = _IP_TEXT[ip] = _ntoa(ip.to_bytes(4, "big"))
            return text
        return p[0] if type(p) is tuple else "unknown"

    @property
    def client_port(self) -> int:
        p = self._peer
        if type(p) is int:
            return p & 0xFFFF
        return p[1] if type(p) is tuple else 0

    def _our_end(self) -> tuple:
        if self._local is None:
            try:
                name = self.sock.getsockname()
            except OSError:
                name = None
            self._local = tuple(name[:2]) if isinstance(name, tuple) else ("unknown", 0)
        return self._local

    @property
    def local_ip(self) -> str:
        """The address the client connected to (getsockname, once)."""
        return self._our_end()[0]

    @property
    def local_port(self) -> int:
        return self._our_end()[1]

    # -- the session's life: engine callbacks, and a task only while one is needed ----------

    def start(self) -> None:
        """Serve the connection: wait for its first request head (an engine job whose
        completion calls back). The session owns the socket from now on and closes it."""
        self._wait_head(True)

    def _wait_head(self, first: bool) -> None:
        """Arrange for the next request head to reach __call__(): the job that sent the last
        response reads it already (next_head), or a head job is submitted; when the engine
        cannot take one, a task reads it on the loop."""
        pending, self.next_head = self.next_head, None
        if not first:
            self.t_idle = self.fe.loop.time()
        engine = self.fe.mover.engine
        if self.fe.idle is not None:  # `no option idle-close-on-response`: a soft stop closes it
            self.fe.idle.add(self)
        if pending is not None:
            self._job = pending[0]
            engine.then(pending, self)
            return
        lane = self.fe.lane
        job = heads.submit_read_head(self.fe.mover, self.sock, self.route.bufsize,
                                     self.t_request if first else self.t_keepalive, self.t_request,
                                     True, self, lane.first(self) if first and lane is not None else None)
        if job is None:
            self.spawn(self._read_head_on_loop(first))
        else:
            self._job = job

    TAKES_HANDOVER = True
    """A request the engine's express lane sent for this session may be handed to it
    (Engine.takes_handover(); runtime/express.py)."""

    def __call__(self, c: Completion) -> None:
        """Engine callback: a request head is in (or the client left, or timed out). The
        session is its head jobs' callback itself, so that an idle connection's engine job
        holds no bound method of its own."""
        job, self._job = self._job, None
        if c.xkind:
            if c.xkind == X_WANT:  # the express lane asks its request's connection (not the job's end)
                self._job = job
                return self.fe.lane.want(self, job, c.bytes_rev)
            if c.xkind == X_CLOSED:  # the lane's request closed the connection (the client asked it)
                return self.close()
            return self._handed(job, c)  # X_HANDOVER: the lane sent this request; its Stream goes on
        failure = "timeout" if c.end is JobEnd.TIMEOUT else "too-large" if c.end is JobEnd.TOO_LARGE else None
        # (after a timeout or an oversized head the engine only peeked the rest: it is unread)
        self._took(c.head or b"", c.index, c.more, failure, c.first_line, True, c.end is JobEnd.CANCELLED)

    def _handed(self, job: int, c: Completion) -> None:
        """The express lane handed over the request `c.head`, which it sent on a credit's
        connection (runtime/express.py): its Stream takes that connection and what the
        response's read said (ExpressLane.adopting, read by Stream.__init__) and goes on
        from there. A head that starts no Stream lets the connection go (closed: its
        response is unread)."""
        lane = self.fe.lane
        handed = lane.handed.pop(job, None) if lane is not None else None
        if handed is None:  # nobody holds its connection any more: it cannot be finished
            self.abort_client(reset=True)
            self.close()
            return
        lane.adopting = handed
        try:  # (c.more: its body's bytes, which the engine sent with it: a whole body)
            self._took(c.head or b"", c.index, c.more, None, False, True, False)
        finally:
            if lane.adopting is not None:
                lease = lane.adopting[0]
                lane.adopting = None
                if lease is not None:
                    self.fe.backend.release(lease, False)

    async def _read_head_on_loop(self, first: bool):
        """The engine could not take the head job: the loop reads the head (heads.read_head),
        and it goes on as the engine's would (_took)."""
        failure, first_line, unread, why = None, False, False, ""
        try:
            head = await heads.read_head(self.fe.mover, self.sock, self.route.bufsize,
                                         self.t_request if first else self.t_keepalive, self.t_request,
                                         skip_empty_lines=True)
        except TimeoutError as exc:
            head, failure = getattr(exc, "partial", b""), "timeout"
        except io.HeadTooLarge as exc:
            head, failure = exc.partial, "too-large"
            first_line, unread, why = exc.first_line, getattr(exc, "unread", False), str(exc)
        self._took(head, None, 0, failure, first_line, unread, False, why)
        return HANDED

    def _took(self, head: bytes, index, more: int, failure: str | None, first_line: bool, unread: bool,
              cancelled: bool, why: str = "head larger than the limit") -> None:
        """What came of reading a request head, from the engine or the loop: route a whole head
        and start its Stream (or answer it here), or refuse it (haproxy's h1 mux: 400, 408,
        414, 431, counted and logged), or close a connection that ended between requests.

        Args:
            head: the bytes read (the head, a part of it, or b"").
            index: the engine tokenizer's index of `head` (None: none).
            more: bytes the socket held behind the head (Completion.more).
            failure: None, "timeout" (`timeout http-request` / `http-keep-alive`) or
                "too-large" (no end of head within tune.bufsize; `first_line`: not even
                the request line ended: 414).
            unread: the rest of an oversized head is still in the socket (`show errors`
                shows it too).
            cancelled: the engine stopped (a hard stop): no stream at all.
            why: what `show errors` says of an oversized head.
        """
        fe = self.fe
        if fe.idle is not None:
            fe.idle.discard(self)
        if failure is None and head and head_complete(head):
            try:
                req = parse_request(head, self.route.maxhdr, index)
            except HeadError as exc:
                fe.counters.bin += len(head)
                fe.proxy.capture_error(fe, self, exc.status, str(exc), head)
                self._refuse(Cause.PROXY, exc.status, len(head))
                return
            self._route(req, head, more)
            return
        if failure == "timeout":
            if head:
                fe.counters.bin += len(head)
                self._refuse(Cause.CLIENT_TIMEOUT, 408, len(head))
            elif self._probe():  # a new connection that sent nothing in time: 408 (cR), as haproxy
                self._refuse(Cause.CLIENT_TIMEOUT, 408, 0)
            else:
                self.close()  # an idle keep-alive connection just closes, as haproxy does
            return
        if failure == "too-large":
            data = head
            if unread:  # what `show errors` prints: the bytes the engine peeked too
                try:
                    data += self.sock.recv(self.route.bufsize, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                except OSError:
                    pass
            status = 414 if first_line else 431
            fe.proxy.capture_error(fe, self, status, why, data)
            self._refuse(Cause.PROXY, status, self.route.bufsize)
            return
        if head:  # the client closed mid-head: haproxy's incomplete request, 400 (CR)
            fe.counters.bin += len(head)
            self._refuse(Cause.CLIENT_ABORT, 400, len(head))
        elif self._probe() and not cancelled:
            # a new connection closed before it sent a byte: as haproxy without `option
            # http-ignore-probes`, an incomplete request: 400 (CR), counted and logged
            # (unless option dontlognull)
            self._refuse(Cause.CLIENT_ABORT, 400, 0)
        else:
            self.close()  # closed between requests (or the engine stopped): no stream at all

    def _route(self, req, head: bytes, more: int) -> None:
        """Decide where a parsed request goes (the frontend's http-request rules) and start
        its Stream, or answer it here (a rule, no backend: 503, an ambiguous target)."""
        fe = self.fe
        fe.counters.req_tot += 1
        if fe.switching is not None:
            view = None
            if fe.auth_lists:  # the rules read credential verdicts: known ones first
                view = self.request_view(req, head)
                missing = fe.proxy.auth.fill(view, fe.auth_lists)
                if missing is not None:  # a hash to verify off the loop first
                    self.spawn(self._verified_stream(req, head, view, missing))
                    return
            d, req = self._switch(req, head, view)
            if d.rule is not None or d.backend is None:
                self._answer(req, head, d)  # answered here, or no backend: 503
                return
        elif fe.strict_uri and ambiguity(req.target) is not None:
            self._answer(req, head, _REFUSED)
            return
        self.be.counters.req_tot += 1
        Stream(self, req, head).begin(more)

    def stream_over(self, keep: bool, pending) -> None:
        """A stream ended: wait for the next request (`pending`: the job that reads it, or
        None), or end the session."""
        self.next_head = pending
        if keep:
            self._wait_head(False)
        elif not self._reset and self._unread():
            self.spawn(self._drain())
        else:
            self.close()

    def spawn(self, work) -> None:
        """Run the coroutine `work` (True: the session goes on; HANDED: a stream took it) as
        the session's task."""
        task = self.loop.create_task(self._task(work))
        tasks = self.fe.proxy.tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _task(self, work) -> None:
        keep = False
        try:
            keep = await work
            if keep is HANDED:
                return  # a Stream goes on with the session (stream_over())
            if not keep and not self._reset and self._unread():
                await self._drain()
        except asyncio.CancelledError:
            # a hard stop: whatever was under way must not look complete to the client
            keep = False
            self.abort_client(reset=True)
            raise
        except Exception:  # a bug: log it, never let it kill the worker
            keep = False
            log.exception("session from %s failed", self.client_ip)
            self.abort_client(reset=True)
        finally:
            if keep is HANDED:
                pass
            elif keep:
                self._wait_head(False)  # idle again: no task until the next head is in
            else:
                self.close()

    @property
    def closing(self) -> bool:
        """close() was called: the session is ending (or ended)."""
        return self._closing

    def close(self) -> None:
        """End the session: the engine lets go of the socket first (a head job is stopped),
        then it is closed and the frontend counts one session less."""
        if self._closing:
            return
        self._closing = True
        if self.fe.idle is not None:
            self.fe.idle.discard(self)
        job = self.next_head if self.next_head is not None else None if self._job is None else (self._job, None)
        self.next_head = self._job = None
        if job is not None:
            self.fe.mover.engine.cancel(job, self._closed)
        else:
            self._closed(None)

    def _closed(self, _c) -> None:
        if self.stream is not None:  # (a stream cancelled at a hard stop: never recorded)
            self.fe.proxy.busy.discard(self)
        io.forget(self.sock)
        self.sock.close()
        self.fe.session_ended()

    # -- helpers -------------------------------------------------------------------------

    def _unread(self) -> bool:
        """True when the client has sent bytes that nobody read (one peek): closing now
        would send a reset (see _drain)."""
        try:
            return bool(self.sock.recv(1, socket.MSG_PEEK))
        except (BlockingIOError, InterruptedError):
            return False  # nothing pending: a plain close sends a FIN
        except OSError:
            return False

    async def _drain(self) -> bool:
        """Close in stages (RFC 9112 section 9.6) when the client still has bytes for us,
        such as a request pipelined behind one that ended the connection: closing with
        unread bytes makes the kernel send a reset, which can destroy the response before
        the client reads it. So stop writing, and read and drop until the client closes,
        for up to LINGER seconds. Returns False: the session ends."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            return False
        buf = bytearray(65536)
        deadline = self.loop.time() + LINGER
        while (left := deadline - self.loop.time()) > 0:
            try:
                if await io.recv_into(self.loop, self.sock, buf, left) == 0:
                    return False
            except (OSError, TimeoutError):
                return False
        return False

    async def reply_error(self, status: int) -> int:
        """Send an error page, then close gracefully: stop writing and drain what the client
        still sends for a moment, so that our close does not reset the answer away.

        Returns:
            The bytes of the page that were sent (0 when the client was gone).
        """
        data = self.route.errorpages.get(status) or error_response(status)
        sent = 0
        try:
            await io.send_all(self.loop, self.sock, data, 1.0 if self.t_client is None else self.t_client)
            sent = len(data)
            self.sock.shutdown(socket.SHUT_WR)
            buf = bytearray(16384)
            deadline = self.loop.time() + 1.0
            while self.loop.time() < deadline:
                if await io.recv_into(self.loop, self.sock, buf, deadline - self.loop.time()) == 0:
                    break
        except (OSError, TimeoutError):
            pass
        return sent

    def _probe(self) -> bool:
        """Whether a connection that ends before it sent a byte is an incomplete request
        (haproxy's h1 mux: a 400 or a 408, counted and logged): on a new connection, unless
        `option http-ignore-probes`, for which such a connection (a browser's pre-connect)
        ends in silence, unlogged and uncounted. On a connection that served a request
        already, the end of an idle wait is never one (haproxy closes it silently)."""
        return not self.streams and not self.fe.model.ignore_probes

    def _refuse(self, cause: Cause, status: int, received: int) -> None:
        """Refuse a request head before it is routed (haproxy's h1 mux: 400, 408, 414, 431):
        a stream of its own (StreamMachine.refuse) answers `status` (0: none) and closes;
        runtime/accounting.py counts it on the frontend only (a request, as haproxy counts one
        its h1 mux refuses: req_tot, the status, ereq from the termination; no backend was
        chosen) and logs it (`received`: bytes the client sent)."""
        fe = self.fe
        if fe.switching is not None:
            # refused before any rule chose a backend: the frontend's default route answers
            self.be, self.route = fe.backend, fe.route
        Stream(self, None, b"", None).begin_refusal(cause, status, received)

    def stream_info(self) -> StreamInfo | None:
        """What header-rule samples read about this session (None when no rule needs it)."""
        fe = self.fe
        if not self.route.rules:
            return None
        return StreamInfo(self.client_ip, self.client_port, self.local_ip, self.local_port,
                          fe.name, self.be.name)

    # -- per-request decisions: use_backend, http-request deny/return/redirect/allow -----

    def request_view(self, req, raw: bytes) -> RequestView:
        """The sample.RequestView that rule conditions read for the request `req` read as `raw`
        (its variables: none when no rule of the configuration sets one, Proxy.vars_used)."""
        a = self._addresses()
        px = self.fe.proxy
        return request_view_of(req, raw, a[0], a[1], a[2], a[3], px.nbsrv, self._vars() if px.vars_used else None)

    def _addresses(self) -> tuple:
        """The connection's addresses (client ip, port, local ip, port), for its requests'
        views."""
        return self.client_ip, self.client_port, self.local_ip, self.local_port

    def _vars(self) -> Vars:
        """A request's variables: its own txn/req/res scopes, the session's and the worker's."""
        if self.sess_vars is None:
            self.sess_vars = {}
        return Vars(self.sess_vars, self.fe.proxy.proc_vars)

    async def _verified_stream(self, req, raw: bytes, view: RequestView, missing: list) -> bool:
        """The rest of __call__ for a request whose credentials need a hash verified first
        (runtime/auth.py, off the loop): then decide and serve it, on the slow path."""
        await self.fe.proxy.auth.verify(view, missing)
        d, req = self._switch(req, raw, view)
        if d.rule is not None or d.backend is None:
            self._answer(req, raw, d)
            return HANDED
        self.be.counters.req_tot += 1
        Stream(self, req, raw).begin()
        return HANDED

    def _switch(self, req, raw: bytes, view: RequestView | None = None) -> tuple[Decision, object]:
        """Run the frontend's http-request rules, in order, on this request
        (route.Switching.choose) and take the chosen backend's Route for the stream
        (precomputed at load, one per frontend and backend pair: nothing is merged here).
        Sets view, rules_in (empty: every http-request rule has run) and rewritten.
        `view`: the request's view when it was built already (its credential verdicts
        filled in, runtime/auth.py). Returns the decision and the request to forward: a
        copy with the target, method and fields the rules left, or `req` itself when they
        left it as it was
        (parse_request's memoized heads are never changed).

        When the frontend's decisions may be remembered (Switching.memo, runtime/decisions.py)
        and `view` is None, a head seen before on a connection with the same address parts
        gets its remembered decision: no view is built (unless a local answer or the
        backend's http-response rules read one later) and no rule runs; a new one is
        decided as above and remembered. While the memo pauses (DecisionMemo.pause: its
        heads did not repeat lately) every request is decided as above, without it."""
        fe = self.fe
        sw = fe.switching
        memo = sw.memo if view is None else None  # (a view built already holds credential verdicts)
        if memo is not None and memo.pause:  # it did not pay lately (decisions.py): not asked
            memo.pause -= 1
            memo = None
        if memo is not None:
            # the decision of a head seen before (runtime/decisions.py): no view, no rule runs
            addr = self._memo_addr
            if addr is None:
                addr = self._memo_addr = memo.address(self._address_part)
            key = memo.key(raw, addr)
            hit = memo.get(key)
            if hit is not None:
                d, self.be, route = hit
                self.route = route
                self.rules_in = ()
                self.rewritten = False
                # what reads a view later: a local answer's formats, the response rules
                self.view = (self.request_view(req, raw) if d.rule is not None or route.response_rules
                             else None)
                return d, req
        if view is None:  # (request_view(), inline: once per request)
            a = self._addresses()
            px = fe.proxy
            view = request_view_of(req, raw, a[0], a[1], a[2], a[3], px.nbsrv, self._vars() if px.vars_used else None)
        d = sw.decide(view)
        self.view = view
        self.rewritten = view.method is not req.method or view.fields is not req.headers
        if view.target is not req.target or self.rewritten:
            req = req.copy()
            req.target, req.method, req.headers = view.target, view.method, view.fields
        if d.backend is not None:
            self.be, route = fe.routes[d.backend]
        else:
            self.be, route = fe.backend, fe.route
        self.route = route
        self.rules_in = ()  # the header rules ran in choose(), in order with the others
        if memo is not None and not self.rewritten and view.target is req.target:
            memo.put(key, len(raw), (d, self.be, route))
        return d, req

    def _address_part(self, part: str):
        """The value of the connection's address part `part` (decisions.ADDRESS_PARTS)."""
        if part == "src":
            return self.client_ip
        if part == "src_port":
            return self.client_port
        if part == "dst":
            return self.local_ip
        if part == "dst_port":
            return self.local_port
        raise ValueError(f"no address part {part!r}")

    def _answer(self, req, raw: bytes, d: Decision) -> None:
        """Answer a request without a server: a stream of its own (StreamMachine.answer_locally)
        carries out the http-request rule d.rule (deny, return, redirect, auth, tarpit, a
        service) or, with no rule, the 503 of a request no use_backend rule matched with no
        default_backend (haproxy). The backend whose rules answered (None: the
        frontend's) counts the request; its error pages and `timeout tarpit` apply. The
        request counts among the session's streams (haproxy's TX_NOT_FIRST for every
        transaction after a connection's first): the next one is not its first."""
        fe = self.fe
        self.t_local = self.loop.time()
        be = fe.routes[d.backend][0] if d.backend is not None else None
        if be is not None:
            be.counters.req_tot += 1  # it reached the backend, whose rules answered it
        pages = self.route.errorpages if be is not None else fe.fe_errorpages
        tarpit = be.model.tarpit if be is not None else fe.model.tarpit
        info = StreamInfo(self.client_ip, self.client_port, self.local_ip, self.local_port, fe.name,
                          be.name if be is not None else "")
        Stream(self, req, raw, be).begin_local(d.rule, info, pages, tarpit)

    async def hold(self, delay: float) -> bool:
        """Hold a tarpitted request for `delay` seconds (haproxy ``timeout tarpit``): a
        timer (loop.call_later) and a reader on the socket, no task of its own and no
        sleep. What the client sends meanwhile is read and dropped into one buffer
        shared by every hold (haproxy drains the request channel the same way): that is
        how a client that closes is noticed at once. True: the time is up and the client
        is still there; False: it closed (or reset) first, and nothing is left to free
        but this coroutine."""
        loop, sock, counters = self.loop, self.sock, self.fe.counters
        fut = loop.create_future()
        fd = sock.fileno()
        io.forget(sock)  # no other watch on this fd while the hold reads it

        def readable() -> None:
            try:
                n = sock.recv_into(_SINK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                n = 0
            counters.bin += n
            if n == 0 and not fut.done():
                fut.set_result(False)

        def expired() -> None:
            if not fut.done():
                fut.set_result(True)
        loop.add_reader(fd, readable)
        timer = loop.call_later(max(delay, 0.0), expired)
        try:
            return await fut
        finally:
            timer.cancel()
            loop.remove_reader(fd)

    async def discard(self, n: int) -> int:
        """Read and drop the next `n` bytes from the client (a body nobody will forward),
        each read within timeout client; returns how many arrived before the client
        closed, failed or went silent."""
        buf = bytearray(min(n, 65536))
        got = 0
        while got < n:
            try:
                k = await io.recv_into(self.loop, self.sock, memoryview(buf)[:min(n - got, len(buf))],
                                       self.t_client)
            except (OSError, TimeoutError):
                break
            if k == 0:
                break
            got += k
        return got

    def client_gone(self) -> bool:
        """True when the client has closed (end of stream or reset pending), without
        consuming anything (haproxy `option abortonclose`)."""
        try:
            return self.sock.recv(1, socket.MSG_PEEK) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    def abort_client(self, reset: bool) -> None:
        """End the client connection now: a FIN after the bytes already sent, or a reset
        (SO_LINGER 0) when only a reset can tell the client that the body is incomplete."""
        self._reset = self._reset or reset
        try:
            if reset:
                # the close at the end of run() then sends a reset (and nothing else may
                # still use the fd: the request body task is ended first)
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
