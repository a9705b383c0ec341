"""A stream: one request/response exchange of an HTTP session, in explicit phases.

Theory of operation. A session (runtime/session.py) reads a request head and hands it to a
new Stream, which goes through haproxy's phases (http/termination.py Phase) and ends with
exactly one Termination, recorded with the stream's byte and status counts in one place
(`record()`), when the stream is over:
  QUEUE/CONNECT  get a server connection from the backend (balanced, reused when idle and
                 alive, failed connects retried as http/retry.py decides); none -> 503.
  HEADERS        send the rewritten request head, move the request body (spliced or copied,
                 transfer.py) while waiting for the response head; 1xx heads are relayed on
                 the way. An idempotent request held whole is sent again on the `retry-on`
                 events, as http/retry.py decides, while no response byte reached the client.
                 The final head goes through the http-response rules
                 (http/response_actions.py) before any of it moves: a deny, return or
                 redirect answers instead (the server's body never read for the client,
                 its connection closed unless the response had none), a status set to
                 204/304 drops the server's body.
  DATA           send the rewritten response head and move the response body. A body that
                 ends early (server closed or failed) aborts the client connection at once,
                 so the client sees it short of its announced length, never complete.
Both connections are kept only when both messages completed with framing that allows it.
With `observe layer7`, what the server's response showed (its status, an invalid or missing
head, a timeout, a body whose framing broke) is reported to the server's health
(Server.observe, health/observe.py). A stream whose server connection splicer shut down
under it (on-marked-down / on-marked-up, Backend.shutdown_streams) ends as the server's
early end makes it end, and is recorded with the lease's cause ('D' or 'U').
Nothing here raises past run(); outcomes are data.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from typing import TYPE_CHECKING

from splicer.engine.engine import Completion, JobEnd, Phase as JobPhase
from splicer.errors import NoServerAvailable
from splicer.health.observe import Event, status_event
from splicer.http import actions
from splicer.http.framing import BodyKind, Framing
from splicer.http.h1 import (HeadError, RequestHead, ResponseHead, forward_request_head, forward_response_head,
                             forwarded_request, forwarded_response, head_complete, parse_response,
                             response_fields)
from splicer.http.logformat import Message
from splicer.http.response_actions import Verdict, evaluate, reframe
from splicer.http.retry import GIVE_UP, Retry, RetryEvent, decide
from splicer.http.termination import NORMAL, Cause, Phase, Termination, counted
from splicer.runtime import heads, io
from splicer.runtime.backend import Lease
from splicer.runtime.transfer import End, Result, Side, result_of
from splicer.runtime.tunnel import run_tunnel

if TYPE_CHECKING:
    from splicer.runtime.session import HttpSession

log = logging.getLogger("splicer")

SMALL_BODY = 65536
"""A copied response body up to this size is read at once and sent with its head."""

BODY_GRACE = 0.25
"""Seconds a relayed response waits for its request body's transfer to report its end."""

IDEMPOTENT = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE", b"PUT", b"DELETE"})
"""Methods whose request may be sent again (RFC 9110 section 9.2.2)."""

_SERVER_END = {End.SRC_EOF: Cause.SERVER_ABORT, End.SRC_ERROR: Cause.SERVER_ABORT,
               End.SRC_TIMEOUT: Cause.SERVER_TIMEOUT, End.BAD_FRAMING: Cause.PROXY,
               End.DST_ERROR: Cause.CLIENT_ABORT, End.DST_TIMEOUT: Cause.CLIENT_TIMEOUT}
"""Who ended a response body (moved server -> client), by the transfer's end."""

_CLIENT_END = {End.SRC_EOF: Cause.CLIENT_ABORT, End.SRC_ERROR: Cause.CLIENT_ABORT,
               End.SRC_TIMEOUT: Cause.CLIENT_TIMEOUT, End.BAD_FRAMING: Cause.CLIENT_ABORT,
               End.DST_ERROR: Cause.SERVER_ABORT, End.DST_TIMEOUT: Cause.SERVER_TIMEOUT}
"""Who ended a request body (moved client -> server). A client whose chunked framing broke
has aborted its own message, as haproxy counts it."""


NO_BODY = Result(End.DONE)
"""A stream's transfer before (or without) a body; shared, never changed."""


class _Failed(Exception):
    """An attempt failed with a retry event (a flow signal inside Stream, never raised out):
    `event`, the response status for RetryEvent.STATUS, the Termination and error status
    to answer with when no retry is made (0: just close)."""

    def __init__(self, event: RetryEvent | None, term: Termination, status: int = 0,
                 response: int = 0) -> None:
        self.event, self.term, self.status, self.response = event, term, status, response


class Stream:
    """One request/response exchange of `session`.

    Args:
        session: the client connection (HttpSession) it belongs to.
        req: the parsed request head.
        raw: the request head's bytes, as read.

    Attributes:
        phase: where the stream is (http/termination.py Phase).
        term: how it ended (NORMAL until something else happens).
        server: the runtime Server of the last attempt (None before any).
        status: the final status sent to the client (0: none).
        retries: retries made (haproxy's %rc).
    """

    __slots__ = ("s", "fe", "be", "loop", "req", "raw", "phase", "term", "server", "status", "retries",
                 "route", "head_in", "head_out", "up", "down", "interim", "info", "_answered", "_resp_raw",
                 "_replayable", "_left", "_out_head", "_allow_reuse", "_picked", "_lease", "_fast",
                 "_chained", "view", "rules_in", "_first", "_persist", "_last", "_answer", "_rewritten",
                 "t_head", "t_lease", "t_resp", "redispatched", "_handed", "tried", "_fast_body")

    def __init__(self, session: "HttpSession", req: RequestHead, raw: bytes) -> None:
        self.s = session
        session.stream = self
        self.fe = session.fe
        self.be = session.be
        self.loop = session.loop
        self.route = session.route
        self.req, self.raw = req, raw
        self.phase = Phase.QUEUE
        self.term = NORMAL
        self.server = None
        self.tried = None  # the server of the last failed connect, when none was reached (the log's %s)
        self.status = 0
        self.retries = 0
        self.head_in = len(raw)   # bytes of heads (and buffered body) read from the client
        self.head_out = 0         # bytes of heads and error pages sent to the client
        self.up = NO_BODY         # the request body's transfer (a Result)
        self.down = NO_BODY       # the response body's transfer
        self.interim: list[int] = []  # 1xx statuses relayed to the client
        self.info = session.stream_info()
        self.view = session.view          # what rule conditions read (None: no rule has one)
        self.rules_in = session.rules_in  # the http-request header rules left to apply
        self._rewritten = session.rewritten if session.view is not None else False  # rules changed the head
        self._answered = False    # a byte of a response (a 1xx) went to the client
        self._resp_raw = b""      # the bytes of the final response head being relayed
        self._replayable = False
        self._left = 0            # retries left for the attempt under way
        self._out_head = b""      # the forwarded request head (prepare())
        self._allow_reuse = False
        self._fast_body = 0  # bytes of request body the fast path's job copies (start_fast)
        self._picked = None       # a server whose slot the fast path took for the slow one
        self._lease = None        # the fast path's server connection
        self._fast = None         # the fast path's response under way
        self._chained = 0         # the fast path's chained next-head job
        self._first = not session.streams  # the session's first request (http-reuse)
        session.streams += 1
        self._persist = None      # the backend's persistence decision (Backend.persistence)
        self._last = None         # the last Lease lent to this stream (its `killed` is read at the end)
        self._answer = None       # the http-response rule that answered instead of the server
        self._handed = None       # (status, head bytes) of a response head handed to a send job
        self.t_head = session.loop.time()  # loop times for the access log's timers (0: not reached)
        self.t_lease = self.t_resp = 0.0
        self.redispatched = False  # the last retry went to another server (the log's "+")

    # -- outcome ---------------------------------------------------------------------------

    def end(self, cause: Cause, phase: Phase | None = None) -> None:
        """Record how the stream ended (the first end recorded wins)."""
        if self.term is NORMAL:
            self.term = Termination(cause, self.phase if phase is None else phase)

    def record(self) -> None:
        """Add this stream to the counters of its frontend, backend and server: bytes,
        statuses and its termination state, all in this one place."""
        if self.s.stream is self:
            self.s.stream = None  # over: `show sess` no longer shows it, an idle session holds none
        if self._handed is not None and not self.status and self.term.cause is Cause.KILLED:
            # killed (a hard stop) while its response went out: the head went to the client
            self.status, n = self._handed
            self.head_out += n
        last = self._last
        if last is not None and last.killed is not None and not self.term.normal:
            # the connection was shut down under the stream: its end is the server's state change
            self.term = Termination(last.killed, self.term.phase)
        fe, be, srv = self.fe.counters, self.be.counters, self.server.counters if self.server else None
        up, down = self.up, self.down
        # the bytes the client sent and got, heads included, on the frontend, the backend and
        # the server alike (haproxy's stream_process_counters: req.total and res.total)
        b_in, b_out = self.head_in + up.moved, self.head_out + down.moved
        for st in self.interim:
            fe.count_status(st)
        spliced, copied, status = up.spliced + down.spliced, up.copied + down.copied, self.status
        for c in (fe, be, srv):
            if c is None:
                continue
            c.bin += b_in
            c.bout += b_out
            c.spliced += spliced
            c.copied += copied
            if status:
                c.count_status(status)
        if self._answer is not None:
            record_local(self.term, self._answer.counter, fe, be, srv)
        else:
            record_termination(self.term, fe, be, srv)
        if self.fe.logger is not None:
            self.fe.logger.stream(self)

    async def reply_error(self, status: int) -> None:
        """Answer with an error page (the session then closes gracefully)."""
        self.status = status
        self.head_out += await self.s.reply_error(status)

    # -- the exchange ----------------------------------------------------------------------

    async def run(self) -> bool:
        """Forward the request and relay its response; True when the session may go on."""
        req = self.req
        early = None
        if req.framing.kind is BodyKind.LENGTH and self.route.http_buffer_request:
            self.phase = Phase.REQUEST
            early = await self._buffer_body()
            if early is None:
                return False
            self.phase = Phase.QUEUE
            self.head_in += len(early)
            if req.expect_continue and req.version == b"1.1":
                # splicer answered the 100-continue itself: the expectation is met and is
                # not forwarded, so the client never gets a second 100 (haproxy does the same)
                req.headers = [(n, v) for n, v in req.headers if n.lower() != b"expect"]
        self.prepare(early)
        return await self.attempts()

    def prepare(self, early: bytes | None = None) -> None:
        """Build the forwarded request head (with the buffered body bytes `early`, if any)
        and decide what the request allows: reuse of an idle connection, a replay."""
        req, route, s = self.req, self.route, self.s
        fwd = None
        if route.forwarded:
            fwd = (route.forwarded, s.client_ip, s.local_ip)
        xff = s.client_ip if route.forwardfor else None
        edited = self._rewritten  # the rules changed the method or fields: no memoized head
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
        if early is None and not self.rules_in and not edited:
            out_head = forwarded_request(self.raw, req, xff, fwd)  # memoized: no rule reads the stream
        else:
            out_head = forward_request_head(req, xff, fwd, self.rules_in, self.info, self.view)
        if early is not None:
            out_head += early
            req.framing = Framing(BodyKind.LENGTH, req.framing.length - len(early))
        self._out_head = out_head
        # Any request may go on an idle connection that `http-reuse` allows (haproxy: the
        # strategy, not the method, decides). Should the server drop one that cannot be sent
        # again (a body, a method that is not idempotent) without a byte of response, it is
        # answered 502, never replayed (RFC 9110 section 9.2.2; haproxy closes the client
        # connection instead). An upgrade gets a connection of its own.
        self._allow_reuse = req.upgrade is None
        # a request held whole (no body left in the client socket) of an idempotent method
        # may be sent again (http/retry.py)
        self._replayable = (req.method in IDEMPOTENT and req.upgrade is None
                            and (req.framing.kind is BodyKind.NONE
                                 or (req.framing.kind is BodyKind.LENGTH and req.framing.length == 0)))

    async def attempts(self, lease: Lease | None = None, first: Completion | None = None) -> bool:
        """Make the attempts of the prepared request until one gets a response relayed or
        the retries are over (http/retry.py decides); True when the session may go on.

        Args:
            lease, first: the fast path's attempt under way: the request was sent on
                `lease` and `first` is the completion of the job that read the response
                head (None: start with a server connection from the backend).
        """
        be = self.be
        out_head = self._out_head
        floor = be.reuse_floor(self._first)  # http-reuse: None when no idle connection may serve
        allow_reuse = self._allow_reuse and floor is not None
        force = self._persist.choice.server if self._persist is not None else None
        left = be.policy.retries  # retries this request may still use (haproxy `retries`)
        avoid: set[int] = set()
        only = None
        failed = None  # the server whose failed attempt made this one a retry
        key = be.key_of(self.req.target, self.req.headers, self.s.client_ip)  # balance hash
        while True:
            if lease is None:
                self.phase = Phase.QUEUE
                picked, self._picked = self._picked, None
                try:
                    lease = await be.acquire(avoid, allow_reuse=allow_reuse, left=left, only=only,
                                             picked=picked, key=key, min_uses=floor or 0, force=force)
                except NoServerAvailable as exc:
                    log.warning("%s", exc)
                    self.retries += exc.retries
                    self.tried = exc.server
                    self.end(*Termination.parse(exc.termination))
                    await self.reply_error(503)
                    return False
                self._leased(lease)
                left -= lease.failures
                self.redispatched = lease.redispatched
                if failed is not None and lease.server is not failed:
                    be.counters.wredis += 1
                    failed.counters.wredis += 1
                    self.redispatched = True
                failed = None
            reusable = False
            self._left = left
            try:
                if first is not None:
                    self.phase = Phase.HEADERS
                    c, first = first, None
                    if c.phase is JobPhase.SEND:
                        raise self._send_failed(lease)
                    keep, reusable = await self._relay_response(Side(lease.sock, self.s.t_server), lease, None, c)
                else:
                    keep, reusable = await self._exchange(out_head, lease)
            except _Failed as f:
                verdict = self._verdict(f, left, lease)
                if not verdict.again:
                    self.end(f.term.cause, f.term.phase)
                    if f.status:
                        await self.reply_error(f.status)
                    return False
                allow_reuse = allow_reuse and not verdict.fresh
                if verdict.counted:
                    left -= 1
                    self.retries += 1
                    be.counters.wretr += 1
                    lease.server.counters.wretr += 1
                    failed = lease.server
                only = lease.server.index if verdict.same_server else None
                if verdict.elsewhere:
                    avoid.add(lease.server.index)
                continue
            finally:
                # always given back, whatever happened (a bug, a cancellation): a lease
                # never released would hold a server slot (maxconn) forever
                be.release(lease, reusable)
                lease = None
            return keep

    def _leased(self, lease: Lease) -> None:
        """Count a server connection lent to this stream."""
        self.retries += lease.failures
        self.server = lease.server
        self._last = lease
        lease.client = self.s.sock  # shutdown_streams() ends both sides
        self.t_lease = self.loop.time()
        if lease.reused:
            self.be.counters.reused += 1
            lease.server.counters.reused += 1
        lease.server.counters.req_tot += 1

    # -- the fast path: callbacks from the engine's reap, no task ---------------------------

    def start_fast(self, more: int = 0) -> bool:
        """Start the stream on the fast path when it can take it: a request without a body,
        or with a small Content-Length body that came whole with its head, on an idle
        server connection, sent and answered by engine jobs whose completions call back
        (no task, no future). False: run() it (a slow-path task) instead; a server slot may
        then be held for it (self._picked).

        Args:
            more: bytes the client socket held behind the head when the engine read it
                (Completion.more): a body of at most that many bytes is all there, so the
                job that sends the head copies it at once and goes on reading the response
                head (nothing can make it wait for the client).
        """
        req, be, route = self.req, self.be, self.route
        fr = req.framing
        body = 0
        if fr.kind is BodyKind.LENGTH:
            body = fr.length
            if (body > more or body > route.bufsize or req.expect_continue or route.http_buffer_request):
                return False  # a body still to come, large, or to buffer first: the slow path
        elif fr.kind is not BodyKind.NONE:
            return False  # chunked: the slow path (its framing is checked on the way)
        if (req.upgrade is not None or route.abortonclose or be.sticky or be.observes_responses):
            # (persistence runs on the slow path: it edits both heads; so does observe
            # layer7, which judges every response head there)
            return False
        floor = be.reuse_floor(self._first)
        i = be.pick_now(be.key_of(req.target, req.headers, self.s.client_ip))
        if i is None:
            return False  # every server full or down: the slow path queues or answers 503
        lease = None if floor is None else be.idle_lease(i, floor)
        if lease is None:
            self._picked = i  # its slot is taken: the slow path opens a connection to it
            return False
        self.prepare()
        route, s = self.route, self.s
        self.phase = Phase.HEADERS
        self._lease = lease
        self._leased(lease)
        if body:
            self._fast_body = body
            taken = heads.submit_request_with_body(self.fe.mover, s.cli, lease.sock, self._out_head, body,
                                                   s.t_server, route.bufsize, s.t_server, s.t_server,
                                                   self._on_response_head)
        else:
            taken = heads.submit_send_then_read_head(self.fe.mover, lease.sock, self._out_head, s.t_server,
                                                     route.bufsize, s.t_server, s.t_server, self._on_response_head)
        if not taken:
            self._fast_body = 0
            be.release(lease, True)  # nothing was sent on it
            self._lease = None
            self.server = None
            lease.server.counters.req_tot -= 1
            if lease.reused:
                be.counters.reused -= 1
                lease.server.counters.reused -= 1
            return False
        return True

    def _slow(self, first: Completion) -> None:
        """Go on from the response head's completion `first` on the slow path (a task)."""
        lease, self._lease = self._lease, None
        self.s.spawn(self._rest(lease, first))

    async def _rest(self, lease: Lease, first: Completion) -> bool:
        try:
            return await self.attempts(lease, first)
        except asyncio.CancelledError:
            self.end(Cause.KILLED)  # a hard stop cut it: killed where it was ("KD"), never "--"
            raise
        finally:
            self.record()

    def _on_response_head(self, c: Completion) -> None:
        """Engine callback: the request went out and the response head is in (or not)."""
        head = c.head
        if c.end is JobEnd.CANCELLED:  # the engine was closed (a hard stop): end here
            lease, self._lease = self._lease, None
            self.end(Cause.KILLED)
            self.be.release(lease, False)
            self.record()
            return self.s.stream_over(False, None)
        if self._fast_body and c.phase is not JobPhase.SEND:
            # the job copied a request body before it read the response head
            if c.phase is JobPhase.BODY:
                return self._body_failed(c)
            n = self._fast_body
            self.up = Result(End.DONE, n, 0, n)
        if c.end is not JobEnd.DONE or not head or not head_complete(head):
            return self._slow(c)  # no head (retries, 502, 504): the slow path decides
        req, route = self.req, self.route
        try:
            resp = parse_response(head, req.method, False, c.index)
        except HeadError:
            return self._slow(c)
        self.t_resp = self.loop.time()
        status = resp.status
        fr = resp.framing
        if (status < 200 or status in self.be.policy.retry_on or fr.kind is BodyKind.CLOSE
                or (fr.kind is BodyKind.CHUNKED and (req.version == b"1.0"
                                                     or not route.splice_response.wants(None)))):
            return self._slow(c)  # 1xx, retry-on, close-delimited or de-chunked bodies
        self._resp_raw = head
        # a soft-stopping worker answers with Connection: close (idle-close-on-response)
        cli_keep = req.keep_alive and not self.s.fe.proxy.stopping
        if not route.response_rules:
            out = forwarded_response(head, resp, req, cli_keep)  # memoized
        else:
            v, ruled, drop = self.response_verdict(resp)
            if v.rule is not None or ruled.framing != fr:
                return self._slow(c)  # answered by a rule, or a body to drop: the slow path does it
            resp = ruled
            out = forward_response_head(resp, req.version, cli_keep, fields=v.fields)
        s = self.s
        lease = self._lease
        policy = route.splice_response
        if fr.kind is BodyKind.LENGTH:
            count, chunked, splice = fr.length, False, policy.wants(fr.length)
        elif fr.kind is BodyKind.CHUNKED:
            count, chunked, splice = None, True, True
        else:
            count, chunked, splice = 0, False, False
        nxt = (s.t_keepalive, s.t_request, route.bufsize) if cli_keep else None
        self.phase = Phase.DATA
        self._handed = (resp.status, len(out))
        self._fast = (c, resp, len(out), not splice and not chunked, cli_keep)
        chained = heads.submit_send_with_body(self.fe.mover, Side(lease.sock, s.t_server), s.cli, out, count,
                                              chunked, splice, nxt, self._on_response_sent)
        if chained is None:
            self.phase = Phase.HEADERS
            return self._slow(c)
        self._chained = chained

    def _body_failed(self, c: Completion) -> None:
        """The fast path's job failed while it copied the request body (the client or the
        server broke off): as the slow path's _request_body() and _response_head() end it."""
        r = result_of(c, True)
        self.up = r
        lease, self._lease = self._lease, None
        self.end(_CLIENT_END[r.end], Phase.DATA)
        self.be.release(lease, False)  # part of a request went on it: never reused
        self.s.spawn(self._answer_body_failure(r))

    async def _answer_body_failure(self, r: Result) -> bool:
        try:
            if r.end is End.SRC_TIMEOUT:
                await self.reply_error(408)  # the client's body did not come in time
            return False
        finally:
            self.record()

    def _on_response_sent(self, c: Completion) -> None:
        """Engine callback: the response head and body went to the client (or not)."""
        first, resp, head_len, copied, cli_keep = self._fast
        self._fast = None
        chained, self._chained = self._chained, 0
        taken = heads.body_of(c, copied)
        s, be = self.s, self.be
        if taken is None:  # no pipe: nothing was sent; the slow path copies instead
            if chained:
                self.fe.mover.engine.cancel((chained, None), _ignore)
            self.phase = Phase.HEADERS
            return self._slow(first)
        lease, self._lease = self._lease, None
        sent, r = taken
        keep = False
        if not sent:
            self.end(Cause.CLIENT_ABORT)
        else:
            self.head_out += head_len
            self.status = resp.status
            self.down = r
            if r.end is End.DONE:
                keep = cli_keep
            else:
                self.end(_SERVER_END[r.end])
                s.abort_client(reset=False)  # a counted or chunked body: the FIN shows it short
        ok = sent and r.end is End.DONE
        be.release(lease, ok and resp.keep_alive)
        self.record()
        s.stream_over(keep, (chained, None) if chained else None)

    def _verdict(self, f: _Failed, left: int, lease: Lease) -> Retry:
        """http/retry.py's verdict on the failed attempt `f` on `lease`."""
        if f.event is None:
            return GIVE_UP
        verdict = decide(self.be.policy, f.event, left, status=f.response, replayable=self._replayable,
                         answered=self._answered)
        if verdict.again and f.event is not RetryEvent.IDLE_CLOSED:
            log.warning("backend %s server %s: %s, retrying", self.be.name, lease.server.model.name,
                        f"status {f.response}" if f.event is RetryEvent.STATUS else f.event.value)
        return verdict

    async def _buffer_body(self) -> bytes | None:
        """`option http-buffer-request`: wait for the body (all of it up to tune.bufsize, else
        its first tune.bufsize bytes) within `timeout http-request`, before any server is
        chosen; returns those bytes, or None after answering 408 (the session ends)."""
        s, req = self.s, self.req
        want = min(req.framing.length, self.route.bufsize)
        deadline = None if s.t_request is None else self.loop.time() + s.t_request
        if req.expect_continue and req.version == b"1.1":
            # the client waits for a 100 before sending its body: give it one now, as haproxy
            # does when it buffers (RFC 9110 section 10.1.1)
            try:
                await io.send_all(self.loop, s.sock, b"HTTP/1.1 100 Continue\r\n\r\n", s.t_client)
            except (OSError, TimeoutError):
                self.end(Cause.CLIENT_ABORT)
                return None
        got = bytearray()
        while len(got) < want:
            try:
                chunk = s.sock.recv(want - len(got))
            except (BlockingIOError, InterruptedError):
                try:
                    left = None if deadline is None else max(0.0, deadline - self.loop.time())
                    await io.wait_readable(self.loop, s.sock, left)
                except TimeoutError:
                    self.end(Cause.CLIENT_TIMEOUT)
                    await self.reply_error(408)
                    return None
                continue
            except OSError:
                self.end(Cause.CLIENT_ABORT)
                return None
            if not chunk:
                self.end(Cause.CLIENT_ABORT)  # the client closed before sending its body
                return None
            got += chunk
        return bytes(got)

    async def _exchange(self, out_head: bytes, lease: Lease) -> tuple[bool, bool]:
        """Send the request on `lease` and relay the response.

        Returns:
            (keep, reusable): whether the session goes on, and whether the server
            connection may go back to the idle pool. The caller releases the lease; the
            request body task never outlives this call.

        Raises:
            _Failed: the attempt failed before any response byte reached the client.
        """
        loop, req, s = self.loop, self.req, self.s
        srv = Side(lease.sock, s.t_server)
        self.phase = Phase.CONNECT
        if self.route.abortonclose and s.client_gone():
            self.end(Cause.CLIENT_ABORT)
            return False, True  # nothing was sent: the server connection is still clean
        self.phase = Phase.HEADERS
        if req.framing.kind is BodyKind.NONE:
            # the common case: one engine job sends the head and brings the response head back
            c = await heads.send_then_read_head(self.fe.mover, lease.sock, out_head, s.t_server,
                                                self.route.bufsize, s.t_server, s.t_server)
            if c is not None:
                if c.phase is JobPhase.SEND:
                    raise self._send_failed(lease)
                return await self._relay_response(srv, lease, None, c)
        try:
            await io.send_all(loop, lease.sock, out_head, s.t_server)
        except (OSError, TimeoutError):
            raise self._send_failed(lease) from None

        body_task = None
        if req.framing.kind is not BodyKind.NONE:
            body_task = loop.create_task(self._request_body(srv, lease))
        try:
            return await self._relay_response(srv, lease, body_task)
        finally:
            await end_task(body_task)

    def _send_failed(self, lease: Lease) -> _Failed:
        """The request head could not be sent: a reused connection was closed by the server
        while idle (sent again on a new one), else the server is gone (502)."""
        if lease.reused:
            return _Failed(RetryEvent.IDLE_CLOSED, Termination(Cause.SERVER_ABORT, Phase.HEADERS), 502)
        return _Failed(None, Termination(Cause.SERVER_ABORT, Phase.HEADERS), 502)

    async def _relay_response(self, srv: Side, lease: Lease, body_task,
                              first: Completion | None = None) -> tuple[bool, bool]:
        """Read the response (relaying 1xx), send its head and body to the client.

        `first`: the completion of the engine job that sent the request and read the first
        response head (None: read it here)."""
        be, req, s = self.be, self.req, self.s
        try:
            resp = await self._response_head(srv, lease, body_task, first)
        except _Failed:
            await end_task(body_task)
            raise
        if resp.status in be.policy.retry_on and decide(
                be.policy, RetryEvent.STATUS, self._left, status=resp.status,
                replayable=self._replayable, answered=self._answered).again:
            raise _Failed(RetryEvent.STATUS, NORMAL, 0, resp.status)  # dropped with its connection
        if resp.status == 101:
            return await self._switch_protocols(resp, lease, body_task)

        # the final response
        server_status = resp.status
        edited = False
        if self._persist is not None:
            fields = be.response_fields(self._persist, lease.server.index, resp.headers, req.method)
            if fields is not None:  # the persistence cookie set or changed (http/persist.py)
                resp = resp.copy()
                resp.headers = fields
                edited = True
        ruled = None
        drop = False
        srv_fr = resp.framing
        if self.route.response_rules:
            # the http-response rules decide before any byte of the response moves
            ruled, resp, drop = self.response_verdict(resp)
            if ruled.rule is not None:
                return await self._answer_response(ruled, resp, body_task)
        self.phase = Phase.DATA
        fr = resp.framing
        dechunk = fr.kind is BodyKind.CHUNKED and req.version == b"1.0"
        # a body dropped unread (a status set to 204/304) leaves the server connection unusable
        srv_reuse = resp.keep_alive and srv_fr.kind is not BodyKind.CLOSE and not drop
        cli_keep = (req.keep_alive and fr.kind is not BodyKind.CLOSE and not dechunk
                    and not s.fe.proxy.stopping)  # soft stop: this response closes
        early = body_task is not None and not body_task.done() and not 200 <= server_status < 300
        if early:
            # an error (or redirect) before the request body was all sent: the client
            # connection ends after this response, and the response says so (RFC 9112
            # section 9.6); the session then closes in stages (session._drain), never with a
            # reset under the response
            cli_keep = False
        if ruled is not None:
            head = forward_response_head(resp, req.version, cli_keep, fields=ruled.fields)
        elif not edited:
            head = forwarded_response(self._resp_raw, resp, req, cli_keep)  # memoized, as above
        else:
            head = forward_response_head(resp, req.version, cli_keep)
        policy = self.route.splice_response
        length = fr.length if fr.kind is BodyKind.LENGTH else 0
        taken = None
        if not dechunk:
            # one engine job: the head, then the body (copied or spliced), to the client
            # and, when the client connection goes on, the same job then reads its next
            # request head (the server connection is let go of first)
            nxt = (s.t_keepalive, s.t_request, self.route.bufsize) if cli_keep and body_task is None else None
            mover = self.fe.mover
            self._handed = (resp.status, len(head))
            if fr.kind is BodyKind.LENGTH:
                taken = await heads.send_with_body(mover, srv, s.cli, head, length, False,
                                                   policy.wants(length), nxt)
            elif fr.kind is BodyKind.CLOSE:
                taken = await heads.send_with_body(mover, srv, s.cli, head, None, False,
                                                   policy.wants(None), nxt)
            elif fr.kind is BodyKind.CHUNKED:
                taken = await heads.send_with_body(mover, srv, s.cli, head, None, True,
                                                   policy.wants(None), nxt)
            else:
                taken = await heads.send_with_body(mover, srv, s.cli, head, 0, False, False, nxt)
        if taken is not None:
            sent, r, s.next_head = taken
            if not sent:
                self.end(Cause.CLIENT_ABORT)
                return False, False
            self.head_out += len(head)
            self.status = resp.status
        else:
            r = await self._send_response_on_loop(srv, lease, resp, head, length, policy, dechunk)
            if r is None:
                self.end(Cause.CLIENT_ABORT)
                return False, False
        self.down = r
        ok = r.end is End.DONE
        if not ok:
            if r.end is End.BAD_FRAMING:
                lease.server.observe(Event.HTTP_RSP)
            self.end(_SERVER_END[r.end])
            # abort: the client must see the body end short of what was announced. With a
            # length or chunked framing a FIN shows it and keeps the bytes already sent; a
            # close-delimited (or de-chunked) body has no framing to fall short of, so a
            # failed server side is passed on as a reset.
            s.abort_client(reset=(fr.kind is BodyKind.CLOSE or dechunk) and r.end is not End.DST_ERROR)

        if body_task is not None:
            if not body_task.done() and ok and 200 <= server_status < 300:
                # An early 2xx (RFC 9112 section 9.3 lets a server answer before it has the
                # whole request; nginx's `return 204` reads and drops the body afterwards):
                # the rest of the body is still forwarded, within its own idle timeouts, and
                # both connections may be kept once it is through.
                await asyncio.wait((body_task,))
            if not body_task.done():
                # An engine job may have moved the whole body and not be reaped yet (the
                # server can answer between the last splice and the completion): give the
                # completion a moment before concluding that the server answered early.
                try:
                    await asyncio.wait_for(asyncio.shield(body_task), BODY_GRACE)
                except (TimeoutError, asyncio.TimeoutError):
                    pass
            if not body_task.done():
                # the server answered before taking the whole body: neither side can go on
                ok = False
                await end_task(body_task)
            elif body_task.result().end is not End.DONE:
                ok = False
        return ok and cli_keep, ok and srv_reuse

    def response_verdict(self, resp: ResponseHead) -> tuple[Verdict, ResponseHead, bool]:
        """Run the route's http-response rules on the final response `resp`
        (http/response_actions.py evaluate(), then reframe()).

        Returns:
            (verdict, the response to forward: `resp` itself when nothing changed, else a
            copy with the verdict's status, reason, fields and framing; drop: the server's
            body must not be forwarded and its connection not reused).
        """
        req = self.req
        fields = response_fields(resp, req.version)
        v = evaluate(self.route.response_sets, resp.status, resp.reason, fields, self.info, req.method,
                     req.target, req.headers, self.view)
        if v.rule is not None:
            return v, resp, True
        framing, fields, drop = reframe(req.method, resp.framing, resp.status, v.status, v.fields)
        out = resp.copy()
        out.status, out.reason, out.headers, out.framing = v.status, v.reason, fields, framing
        return Verdict(None, v.status, v.reason, fields), out, drop

    async def _answer_response(self, v: Verdict, resp: ResponseHead, body_task) -> tuple[bool, bool]:
        """Answer with the http-response rule v.rule (deny, return, redirect) instead of the
        server's response `resp`, none of which reaches the client (haproxy 4.4 "deny",
        "return", "redirect"); termination "PH" for a deny (counted in dresp), "LH"
        otherwise. The server connection is reused only when `resp` has no body and allows
        it; the client connection stays open when the request was whole and allows it.

        Returns:
            (keep, reusable), as _relay_response.
        """
        req, s = self.req, self.s
        rule = v.rule
        if self.term is NORMAL:  # (a request body that failed first keeps its own termination)
            self._answer = rule
            self.end(Cause.PROXY if rule.action == "deny" else Cause.LOCAL, Phase.HEADERS)
        whole = body_task is None or (body_task.done() and body_task.result().end is End.DONE)
        fr = resp.framing
        reusable = (whole and resp.keep_alive
                    and (fr.kind is BodyKind.NONE or (fr.kind is BodyKind.LENGTH and fr.length == 0)))
        keep = req.keep_alive and whole and not self.s.fe.proxy.stopping
        store = self.view.vars if self.view is not None else None
        data, keep = actions.reply(rule, self.info, Message(req.method, req.target, v.status, req.headers, store),
                                   v.fields, req.version, keep, self.route.errorpages, req.method)
        await end_task(body_task)  # a request body still under way goes no further
        try:
            await io.send_all(self.loop, s.sock, data, s.t_client)
        except (OSError, TimeoutError):
            return False, reusable
        self.head_out += len(data)
        self.status = int(data[9:12])
        return keep, reusable

    async def _send_response_on_loop(self, srv: Side, lease: Lease, resp: ResponseHead, head: bytes,
                                     length: int, policy, dechunk: bool) -> Result | None:
        """Send the response head and move its body on the loop (when the engine cannot take
        the job, or the body is de-chunked or a copied chunked one). None: the head could
        not be sent (the client is gone)."""
        loop, fr, s = self.loop, resp.framing, self.s
        early = b""
        if 0 < length <= SMALL_BODY and not policy.wants(length):
            # a small copied body is usually in the socket already: take it now and send it
            # with the head in one write (one syscall and one segment fewer per response)
            try:
                early = lease.sock.recv(length)
            except (BlockingIOError, InterruptedError):
                early = b""
            except OSError:
                early = b""  # the transfer below meets the error again and reports it
        try:
            await io.send_all(loop, s.sock, head + early if early else head, s.t_client)
        except (OSError, TimeoutError):
            return None
        self.head_out += len(head)
        self.status = resp.status

        mover = self.fe.mover
        if fr.kind is BodyKind.LENGTH:
            r = await mover.move(srv, s.cli, length - len(early), policy)
            r.moved += len(early)
            r.copied += len(early)
        elif fr.kind is BodyKind.CHUNKED:
            r = await mover.move_chunked(srv, s.cli, policy, dechunk=dechunk)
        elif fr.kind is BodyKind.CLOSE:
            r = await mover.move(srv, s.cli, None, policy)
        else:
            r = Result(End.DONE)
        return r

    async def _switch_protocols(self, resp: ResponseHead, lease: Lease, body_task) -> tuple[bool, bool]:
        """101 to an Upgrade request: relay the 101, then tunnel both ways until both sides
        closed (haproxy's tunnel mode; `timeout tunnel` is the idle limit). Only now, once the
        server agreed, does the connection stop being HTTP (case 012)."""
        s, req = self.s, self.req
        if body_task is not None and not body_task.done():
            self.end(Cause.PROXY)
            return False, False  # a body still being sent cannot turn into tunnel bytes
        head = forward_response_head(resp, req.version, True, self.route.response_rules,
                                     self.info, req, self.view)
        self.phase = Phase.DATA
        try:
            await io.send_all(self.loop, s.sock, head, s.t_client)
        except (OSError, TimeoutError):
            self.end(Cause.CLIENT_ABORT)
            return False, False
        self.head_out += len(head)
        self.status = 101
        up, down = await run_tunnel(self.fe.mover, s.sock, lease.sock, self.route.t_tunnel,
                                    self.route.splice_request, self.route.splice_response)
        self.up = up
        self.down = down
        t = tunnel_termination(up, down)
        if not t.normal:
            self.end(t.cause, t.phase)
        return False, False

    async def _request_body(self, srv: Side, lease: Lease) -> Result:
        """Move the request body client -> server. On failure, shut the server connection
        down so that the wait for the response ends too."""
        policy, req, s = self.route.splice_request, self.req, self.s
        if req.framing.kind is BodyKind.LENGTH:
            r = await self.fe.mover.move(s.cli, srv, req.framing.length, policy)
        else:
            r = await self.fe.mover.move_chunked(s.cli, srv, policy)
        self.up = r
        if r.end is not End.DONE:
            self.end(_CLIENT_END[r.end], Phase.DATA)
            try:
                lease.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return r

    async def _response_head(self, srv: Side, lease: Lease, body_task,
                             first: Completion | None = None) -> ResponseHead:
        """Read the final response head, relaying 1xx ones to the client; `first` is the
        completion of an engine job that already read the first head (None: read it here).

        Returns:
            The final (or 101) response head.

        Raises:
            _Failed: no valid response head; its event says which retry-on event it was,
            its status the error page to send (0: just close the client connection).
        """
        loop, s, req = self.loop, self.s, self.req
        H = Phase.HEADERS
        while True:
            if body_task is not None and not body_task.done():
                # `timeout server` runs from the end of the request body: a long upload is
                # not the server's silence. Until then wait for a response or the body's end.
                readable = loop.create_task(io.wait_readable(loop, lease.sock, None))
                await asyncio.wait((body_task, readable), return_when=asyncio.FIRST_COMPLETED)
                await end_task(readable)
            try:
                if first is not None:
                    head = heads.head_of(first)
                    first = None
                else:
                    head = await heads.read_head(self.fe.mover, lease.sock, self.route.bufsize,
                                                 s.t_server, s.t_server)
            except TimeoutError:
                # nothing was sent to the client yet, even after a partial head
                lease.server.observe(Event.HTTP_READ_TIMEOUT)
                raise _Failed(RetryEvent.RESPONSE_TIMEOUT, Termination(Cause.SERVER_TIMEOUT, H), 504) from None
            except io.HeadTooLarge:
                lease.server.observe(Event.HTTP_HDRRSP)
                raise _Failed(RetryEvent.JUNK_RESPONSE, Termination(Cause.PROXY, H), 502) from None
            except OSError:
                head = None
            if head is None or not head_complete(head):
                body_failed = (body_task is not None and body_task.done()
                               and body_task.result().end is not End.DONE)
                # observe layer7: a close or read error on a reused connection is the
                # keep-alive race, not the server's fault (haproxy skips SF_SRV_REUSED);
                # nor is one that followed a failed request body, or splicer's own shutdown
                if head:
                    lease.server.observe(Event.HTTP_HDRRSP)
                elif not (lease.reused or body_failed or lease.killed):
                    lease.server.observe(Event.HTTP_BROKEN_PIPE if head is not None else Event.HTTP_READ_ERROR)
                head = head or b""
                if not head and lease.reused and body_task is None:
                    raise _Failed(RetryEvent.IDLE_CLOSED, Termination(Cause.SERVER_ABORT, H), 502)
                if body_failed:
                    # the request body failed first (and shut the server side down); its
                    # termination is recorded already
                    end = body_task.result().end
                    if end is End.SRC_TIMEOUT:
                        raise _Failed(None, self.term, 408)
                    raise _Failed(None, self.term, 400 if end is End.BAD_FRAMING else 0)
                raise _Failed(RetryEvent.JUNK_RESPONSE if head else RetryEvent.EMPTY_RESPONSE,
                              Termination(Cause.SERVER_ABORT, H), 502)
            try:
                resp = parse_response(head, req.method, req.upgrade is not None)
            except HeadError as exc:
                lease.server.observe(Event.HTTP_HDRRSP)
                raise _Failed(RetryEvent.JUNK_RESPONSE, Termination(Cause.PROXY, H), exc.status) from None
            lease.server.observe(status_event(resp.status))
            if resp.status >= 200 or resp.status == 101:
                self._resp_raw = head
                self.t_resp = self.loop.time()
                return resp
            if req.version == b"1.0":
                continue  # no 1xx to an HTTP/1.0 client (RFC 9110 section 15.2)
            try:
                interim = forward_response_head(resp, req.version, True)
                self._answered = True
                await io.send_all(loop, s.sock, interim, s.t_client)
                self.head_out += len(interim)
                self.interim.append(resp.status)
            except (OSError, TimeoutError):
                raise _Failed(None, Termination(Cause.CLIENT_ABORT, H), 0) from None


def tunnel_termination(up: Result, down: Result) -> Termination:
    """The termination state of a tunnel (tcp mode, or after a 101) from the results of its
    two directions: a timeout or an error of either side ends it in the data phase ("cD",
    "sD", "CD", "SD"); both sides closing is a normal end."""
    for r, who in ((up, _CLIENT_END), (down, _SERVER_END)):
        if r.end in _TUNNEL_FAILURES:
            return Termination(who[r.end], Phase.DATA)
    return NORMAL


_TUNNEL_FAILURES = frozenset({End.SRC_TIMEOUT, End.SRC_ERROR, End.DST_TIMEOUT, End.DST_ERROR})


def record_termination(t: Termination, fe, be, srv) -> None:
    """Count a stream's termination state: in `terms` on each of the frontend, backend and
    server counters given (None: not involved), and the error counters it implies
    (http/termination.py counted()): ereq on the frontend, the others on the backend and
    server, as in haproxy's stats columns."""
    info = _TERM_INFO.get(t)
    if info is None:
        names = counted(t)
        info = _TERM_INFO[t] = (str(t), tuple(n for n in names if n == "ereq"),
                                tuple(n for n in names if n != "ereq"))
    code, on_fe, on_be = info
    for c in (fe, be, srv):
        if c is None:
            continue
        terms = c.terms
        terms[code] = terms.get(code, 0) + 1
        for n in (on_fe if c is fe else on_be):
            setattr(c, n, getattr(c, n) + 1)


def record_local(t: Termination, counter: str, fe, be, srv=None) -> None:
    """Count a stream answered by a rule: its termination state in `terms` of the frontend
    and, when involved, of the backend and the server, and `counter` on each (actions.LocalRule
    counter: "dreq" for an http-request deny, "intercepted" for its return or redirect,
    "dresp" for an http-response deny, "" for none). A deny ("PR", "PH") is not a request or
    response error: haproxy counts it in dreq / dresp, not in ereq / eresp."""
    code = str(t)
    for c in (fe, be, srv):
        if c is None:
            continue
        c.terms[code] = c.terms.get(code, 0) + 1
        if counter:
            setattr(c, counter, getattr(c, counter) + 1)


_TERM_INFO: dict[Termination, tuple[str, tuple, tuple]] = {}
"""record_termination()'s memo: (two letters, frontend counters, backend/server counters)."""


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
