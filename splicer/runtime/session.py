"""An HTTP session: one accepted client connection and its streams (request/response exchanges).

Theory of operation, for each stream of a kept-alive session:
  1. Read exactly the request head (peek for its end; the body stays in the kernel) within
     `timeout http-request` (the first byte of a later request within
     `timeout http-keep-alive`). Parse it with h11 (http/h1.py); a bad head gets its 4xx and
     the session ends.
  2. Get a server connection from the backend (balanced, reused when idle and alive,
     retried per `retries`/`option redispatch`); none -> 503. An idempotent request held
     whole is sent again on the `retry-on` events (empty, junk or late response, listed
     status) as long as no response byte has reached the client.
  3. Send the rewritten request head, then move the request body (spliced or copied, see
     transfer.py) while waiting for the response head; 1xx heads are relayed on the way.
  4. Send the rewritten response head and move the response body. A body that ends early
     (server closed or failed) aborts the client connection at once, so the client sees it
     short of its announced length, never a response that looks complete.
  5. Reuse both connections only when both messages completed with framing that allows it.
  6. When the session ends with bytes from the client still unread (a request pipelined
     behind a close), stop writing and drain them before closing (_linger), so the close
     is a FIN, not a reset that would destroy the last response.
Outcomes are recorded in the counters; nothing here raises past run().
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import TYPE_CHECKING

from splicer.errors import NoServerAvailable
from splicer.http.errorpages import error_response
from splicer.http.framing import BodyKind, Framing
from splicer.http.rules import StreamInfo
from splicer.http.h1 import (HeadError, RequestHead, ResponseHead, forward_request_head, forward_response_head,
                             forwarded_request, forwarded_response, head_complete, parse_request,
                             parse_response)
from splicer.engine.engine import Completion, Phase
from splicer.runtime import heads, io
from splicer.runtime.backend import Lease
from splicer.runtime.transfer import End, Result, Side
from splicer.runtime.tunnel import run_tunnel

if TYPE_CHECKING:
    from splicer.runtime.proxy import FrontendRT

log = logging.getLogger("splicer")

_RETRY = object()  # the reused server connection died before any response byte: retry
_RETRY_ON = object()  # a `retry-on` event before any response byte reached the client: retry

SMALL_BODY = 65536
"""A copied response body up to this size is read at once and sent with its head."""

BODY_GRACE = 0.25
"""Seconds a relayed response waits for its request body's transfer to report its end."""

LINGER = 1.0
"""Seconds a closing client connection with unread bytes is drained before the close."""

IDEMPOTENT = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE", b"PUT", b"DELETE"})
"""Methods whose request may be sent again (RFC 9110 section 9.2.2)."""


class HttpSession:
    """One client connection in `mode http`.

    Args:
        fe: the frontend it arrived on (config, backend, counters, mover).
        sock: the accepted non-blocking client socket; the session closes it.
        peer: the client's address tuple.
    """

    def __init__(self, fe: "FrontendRT", sock: socket.socket, peer) -> None:
        self.fe = fe
        self.be = fe.backend
        self.loop = fe.loop
        self.sock = sock
        self.client_ip = peer[0] if isinstance(peer, tuple) else "unknown"
        self.client_port = peer[1] if isinstance(peer, tuple) else 0
        try:
            self.local_ip, self.local_port = sock.getsockname()[:2]
        except OSError:
            self.local_ip, self.local_port = "unknown", 0
        t = fe.model.timeouts
        self.t_client = t.client
        self.t_request = t.http_request if t.http_request is not None else t.client
        self.t_keepalive = t.http_keep_alive if t.http_keep_alive is not None else self.t_request
        self.t_server = self.be.model.timeouts.server
        self.cli = Side(sock, self.t_client)
        self._reset = False         # the client connection is to end with a reset
        self._may_retry = False     # this attempt's request may be sent again (retry-on)
        self._interim_sent = False  # a 1xx went to the client during this attempt
        self.info: StreamInfo | None = None  # for header-rule samples (set per request)
        self._resp_raw = b""  # the bytes of the final response head being relayed
        self._next_head = None  # (id, future) of the engine job reading the next request head

    async def run(self) -> None:
        """Serve streams until one of them ends the session; always closes the client socket."""
        try:
            first = True
            while await self._stream(first):
                first = False
            if not self._reset:
                await self._linger()
        except asyncio.CancelledError:
            # a hard stop: whatever was under way must not look complete to the client
            self._abort_client(reset=True)
            raise
        except Exception:  # a bug: log it, never let it kill the worker
            log.exception("session from %s failed", self.client_ip)
            self._abort_client(reset=True)
        finally:
            if self._next_head is not None:  # the engine must let go of the socket first
                pending, self._next_head = self._next_head, None
                await self.fe.mover.engine.abandon(*pending)
            io.forget(self.sock)
            self.sock.close()

    # -- helpers -------------------------------------------------------------------------

    async def _linger(self) -> None:
        """Close in stages (RFC 9112 section 9.6) when the client still has bytes for us,
        such as a request pipelined behind one that ended the connection: closing with
        unread bytes makes the kernel send a reset, which can destroy the response before
        the client reads it. So stop writing, and read and drop until the client closes,
        for up to LINGER seconds. The common case (nothing pending) costs one peek."""
        try:
            if not self.sock.recv(1, socket.MSG_PEEK):
                return  # the client closed already
        except (BlockingIOError, InterruptedError):
            return  # nothing pending: a plain close sends a FIN
        except OSError:
            return
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            return
        buf = bytearray(65536)
        deadline = self.loop.time() + LINGER
        while (left := deadline - self.loop.time()) > 0:
            try:
                if await io.recv_into(self.loop, self.sock, buf, left) == 0:
                    return
            except (OSError, TimeoutError):
                return

    async def _reply_error(self, status: int) -> None:
        """Send an error page, then close gracefully: stop writing and drain what the client
        still sends for a moment, so that our close does not reset the answer away."""
        fe = self.fe
        data = self.fe.errorpages.get(status) or error_response(status)
        fe.counters.count_status(status)
        self.be.counters.count_status(status)
        try:
            await io.send_all(self.loop, self.sock, data, 1.0 if self.t_client is None else self.t_client)
            fe.counters.bout += len(data)
            self.sock.shutdown(socket.SHUT_WR)
            buf = bytearray(16384)
            deadline = self.loop.time() + 1.0
            while self.loop.time() < deadline:
                if await io.recv_into(self.loop, self.sock, buf, deadline - self.loop.time()) == 0:
                    break
        except (OSError, TimeoutError):
            pass

    def _stream_info(self) -> StreamInfo | None:
        """What header-rule samples read about this session (None when no rule needs it)."""
        fe = self.fe
        if not (fe.request_rules or fe.response_rules):
            return None
        return StreamInfo(self.client_ip, self.client_port, self.local_ip, self.local_port,
                          fe.name, self.be.name)

    def _account(self, r: Result, to_client: bool, server=None) -> None:
        for c in (self.fe.counters, self.be.counters) + ((server.counters,) if server else ()):
            if to_client:
                c.bout += r.moved
            else:
                c.bin += r.moved
            c.spliced += r.spliced
            c.copied += r.copied

    # -- one stream ----------------------------------------------------------------------

    async def _stream(self, first: bool) -> bool:
        """Serve one request/response; True when the session may go on with another."""
        fe = self.fe
        try:
            pending = self._next_head
            if pending is not None:
                # read by the job that sent the last response (heads.send_with_body)
                self._next_head = None
                head = heads.head_of(await fe.mover.engine.wait(*pending))
            else:
                head = await heads.read_head(fe.mover, self.sock, fe.bufsize,
                                             self.t_request if first else self.t_keepalive, self.t_request,
                                             skip_empty_lines=True)
        except TimeoutError as exc:
            if getattr(exc, "partial", b""):
                fe.counters.ereq += 1
                await self._reply_error(408)
            return False  # an idle keep-alive connection just closes, as haproxy does
        except io.HeadTooLarge as exc:
            fe.counters.ereq += 1
            await self._reply_error(414 if exc.first_line else 431)
            return False
        if not head_complete(head):
            return False  # the client closed (mid-head or between requests)
        fe.counters.bin += len(head)
        try:
            req = parse_request(head, fe.maxhdr)
        except HeadError as exc:
            fe.counters.ereq += 1
            await self._reply_error(exc.status)
            return False
        fe.counters.req_tot += 1
        self.be.counters.req_tot += 1
        return await self._forward(req, head)

    async def _buffer_body(self, req: RequestHead) -> bytes | None:
        """`option http-buffer-request`: wait for the body (all of it up to tune.bufsize, else
        its first tune.bufsize bytes) within `timeout http-request`, before any server is
        chosen; returns those bytes, or None after answering 408/400 (the session ends)."""
        want = min(req.framing.length, self.fe.bufsize)
        deadline = None if self.t_request is None else self.loop.time() + self.t_request
        if req.expect_continue and req.version == b"1.1":
            # the client waits for a 100 before sending its body: give it one now, as haproxy
            # does when it buffers (RFC 9110 section 10.1.1)
            try:
                await io.send_all(self.loop, self.sock, b"HTTP/1.1 100 Continue\r\n\r\n", self.t_client)
            except (OSError, TimeoutError):
                return None
        got = bytearray()
        while len(got) < want:
            try:
                chunk = self.sock.recv(want - len(got))
            except (BlockingIOError, InterruptedError):
                try:
                    left = None if deadline is None else max(0.0, deadline - self.loop.time())
                    await io.wait_readable(self.loop, self.sock, left)
                except TimeoutError:
                    self.fe.counters.ereq += 1
                    await self._reply_error(408)
                    return None
                continue
            except OSError:
                return None
            if not chunk:
                return None  # the client closed before sending its body
            got += chunk
        return bytes(got)

    async def _forward(self, req: RequestHead, raw: bytes) -> bool:
        """Forward the request `req` (parsed from the head bytes `raw`) and relay its response."""
        fe, be = self.fe, self.be
        fwd = None
        if be.model.forwarded:
            fwd = (be.model.forwarded, self.client_ip, self.local_ip)
        self.info = self._stream_info()
        early = None
        if req.framing.kind is BodyKind.LENGTH and fe.http_buffer_request:
            early = await self._buffer_body(req)
            if early is None:
                return False
            fe.counters.bin += len(early)
            if req.expect_continue and req.version == b"1.1":
                # splicer answered the 100-continue itself: the expectation is met and is
                # not forwarded, so the client never gets a second 100 (haproxy does the same)
                req.headers = [(n, v) for n, v in req.headers if n.lower() != b"expect"]
        xff = self.client_ip if fe.forwardfor else None
        if early is None and not fe.request_rules:
            out_head = forwarded_request(raw, req, xff, fwd)  # memoized: no rule reads the stream
        else:
            out_head = forward_request_head(req, xff, fwd, fe.request_rules, self.info)
        if early is not None:
            out_head += early
            req.framing = Framing(BodyKind.LENGTH, req.framing.length - len(early))
        # Only an idempotent request without a body goes on a reused connection: if the server
        # closed that connection meanwhile, such a request alone may be sent again (RFC 9110
        # section 9.2.2; haproxy never replays a POST). An upgrade gets a connection of its own.
        allow_reuse = (req.framing.kind is BodyKind.NONE and req.method in IDEMPOTENT
                       and req.upgrade is None)
        # `retry-on` beyond conn-failure sends the request again, so only a request held whole
        # (no body left in the client socket) of an idempotent method qualifies: a POST is
        # never replayed, whatever retry-on says (haproxy's manual warns; splicer enforces).
        replayable = (req.method in IDEMPOTENT and req.upgrade is None
                      and (req.framing.kind is BodyKind.NONE
                           or (req.framing.kind is BodyKind.LENGTH and req.framing.length == 0)))
        left = be.model.retries  # retries this request may still use (haproxy `retries`)
        avoid: set[int] = set()
        failed = None  # the server whose response (retry-on) made this attempt a retry
        self._interim_sent = False  # per request: after a 1xx reached the client, no retry
        while True:
            try:
                lease = await be.acquire(avoid, allow_reuse=allow_reuse, retries=left)
            except NoServerAvailable as exc:
                log.warning("%s", exc)
                await self._reply_error(503)
                return False
            left -= lease.failures
            if failed is not None and lease.server is not failed:
                be.counters.wredis += 1
                failed.counters.wredis += 1
            failed = None
            self._may_retry = replayable and left > 0
            if lease.reused:
                be.counters.reused += 1
                lease.server.counters.reused += 1
            lease.server.counters.req_tot += 1
            reusable = False
            try:
                outcome, reusable = await self._exchange(req, out_head, lease)
            finally:
                # always given back, whatever happened (a bug, a cancellation): a lease
                # never released would hold a server slot (maxconn) forever
                be.release(lease, reusable)
            if outcome is _RETRY:
                allow_reuse = False
                continue
            if outcome is _RETRY_ON:
                left -= 1
                be.counters.wretr += 1
                lease.server.counters.wretr += 1
                failed = lease.server
                if be.model.redispatch:
                    avoid.add(lease.server.index)
                continue
            return outcome

    async def _exchange(self, req: RequestHead, out_head: bytes, lease: Lease) -> tuple[object, bool]:
        """Send one request on `lease` and relay the response.

        Returns:
            (outcome, reusable): outcome is True (the session goes on), False (it ends) or
            _RETRY (a reused connection was dead: try another); reusable tells whether the
            server connection may go back to the idle pool. The caller releases the lease;
            the request body task never outlives this call.
        """
        loop, be = self.loop, self.be
        srv = Side(lease.sock, self.t_server)
        if be.model.abortonclose and self._client_gone():
            self.fe.counters.ereq += 1
            return False, True  # nothing was sent: the server connection is still clean
        if req.framing.kind is BodyKind.NONE:
            # the common case: one engine job sends the head and brings the response head back
            c = await heads.send_then_read_head(self.fe.mover, lease.sock, out_head, self.t_server,
                                                self.fe.bufsize, self.t_server, self.t_server)
            if c is not None:
                if c.phase is Phase.SEND:
                    if lease.reused:
                        return _RETRY, False
                    be.counters.eresp += 1
                    await self._reply_error(502)
                    return False, False
                return await self._relay_response(req, srv, lease, None, c)
        try:
            await io.send_all(loop, lease.sock, out_head, self.t_server)
        except (OSError, TimeoutError):
            if lease.reused:
                return _RETRY, False
            be.counters.eresp += 1
            await self._reply_error(502)
            return False, False

        body_task = None
        if req.framing.kind is not BodyKind.NONE:
            body_task = loop.create_task(self._request_body(req, srv, lease))
        try:
            return await self._relay_response(req, srv, lease, body_task)
        finally:
            await self._end_task(body_task)

    async def _relay_response(self, req: RequestHead, srv: Side, lease: Lease, body_task,
                              first: Completion | None = None) -> tuple[object, bool]:
        """Read the response (relaying 1xx), send its head and body to the client.

        `first`: the completion of the engine job that sent the request and read the first
        response head (None: read it here)."""
        be = self.be
        resp, status, event = await self._response_head(req, srv, lease, body_task, first)
        if resp is _RETRY:
            return _RETRY, False
        if resp is None:
            await self._end_task(body_task)
            if self._retry_on(event, lease):
                return _RETRY_ON, False
            if status:
                await self._reply_error(status)
            return False, False
        if resp.status in be.model.retry_on and self._retry_on(resp.status, lease):
            return _RETRY_ON, False  # the response is dropped with its connection

        if resp.status == 101:
            return await self._switch_protocols(req, resp, lease, body_task)

        # the final response
        fr = resp.framing
        dechunk = fr.kind is BodyKind.CHUNKED and req.version == b"1.0"
        srv_reuse = resp.keep_alive and fr.kind is not BodyKind.CLOSE
        cli_keep = req.keep_alive and fr.kind is not BodyKind.CLOSE and not dechunk
        early = body_task is not None and not body_task.done() and not 200 <= resp.status < 300
        if early:
            # an error (or redirect) before the request body was all sent: the client
            # connection ends after this response, and the response says so (RFC 9112
            # section 9.6); the session then closes in stages (_linger), never with a reset
            # under the response
            cli_keep = False
        if not self.fe.response_rules:
            head = forwarded_response(self._resp_raw, resp, req, cli_keep)  # memoized, as above
        else:
            head = forward_response_head(resp, req.version, cli_keep, self.fe.response_rules,
                                         self.info, req)
        policy = self.fe.splice_response
        length = fr.length if fr.kind is BodyKind.LENGTH else 0
        taken = None
        if not dechunk:
            # one engine job: the head, then the body (copied or spliced), to the client
            # and, when the client connection goes on, the same job then reads its next
            # request head (the server connection is let go of first)
            nxt = (self.t_keepalive, self.t_request, self.fe.bufsize) if cli_keep and body_task is None else None
            mover = self.fe.mover
            if fr.kind is BodyKind.LENGTH:
                taken = await heads.send_with_body(mover, srv, self.cli, head, length, False,
                                                   policy.wants(length), nxt)
            elif fr.kind is BodyKind.CLOSE:
                taken = await heads.send_with_body(mover, srv, self.cli, head, None, False,
                                                   policy.wants(None), nxt)
            elif fr.kind is BodyKind.CHUNKED:
                taken = await heads.send_with_body(mover, srv, self.cli, head, None, True,
                                                   policy.wants(None), nxt)
            else:
                taken = await heads.send_with_body(mover, srv, self.cli, head, 0, False, False, nxt)
        if taken is not None:
            sent, r, self._next_head = taken
            if not sent:
                return False, False
            self.fe.counters.bout += len(head)
            for c in (self.fe.counters, be.counters, lease.server.counters):
                c.count_status(resp.status)
        else:
            r = await self._send_response_on_loop(srv, lease, resp, head, length, policy, dechunk)
            if r is None:
                return False, False
        self._account(r, True, lease.server)
        ok = r.end is End.DONE
        if not ok:
            if r.end in (End.SRC_EOF, End.SRC_ERROR, End.SRC_TIMEOUT, End.BAD_FRAMING):
                be.counters.eresp += 1
                lease.server.counters.eresp += 1
            # abort: the client must see the body end short of what was announced. With a
            # length or chunked framing a FIN shows it and keeps the bytes already sent; a
            # close-delimited (or de-chunked) body has no framing to fall short of, so a
            # failed server side is passed on as a reset.
            self._abort_client(reset=(fr.kind is BodyKind.CLOSE or dechunk) and r.end is not End.DST_ERROR)

        if body_task is not None:
            if not body_task.done() and ok and 200 <= resp.status < 300:
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
                await self._end_task(body_task)
            elif body_task.result().end is not End.DONE:
                ok = False
        return ok and cli_keep, ok and srv_reuse

    async def _send_response_on_loop(self, srv: Side, lease: Lease, resp: ResponseHead, head: bytes,
                                     length: int, policy, dechunk: bool) -> Result | None:
        """Send the response head and move its body on the loop (when the engine cannot take
        the job, or the body is de-chunked or a copied chunked one). None: the head could
        not be sent (the client is gone)."""
        loop, be, fr = self.loop, self.be, resp.framing
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
            await io.send_all(loop, self.sock, head + early if early else head, self.t_client)
        except (OSError, TimeoutError):
            return None
        self.fe.counters.bout += len(head)
        for c in (self.fe.counters, be.counters, lease.server.counters):
            c.count_status(resp.status)

        if fr.kind is BodyKind.LENGTH:
            r = await self.fe.mover.move(srv, self.cli, length - len(early), policy)
            r.moved += len(early)
            r.copied += len(early)
        elif fr.kind is BodyKind.CHUNKED:
            r = await self.fe.mover.move_chunked(srv, self.cli, policy, dechunk=dechunk)
        elif fr.kind is BodyKind.CLOSE:
            r = await self.fe.mover.move(srv, self.cli, None, policy)
        else:
            r = Result(End.DONE)
        return r

    async def _switch_protocols(self, req: RequestHead, resp: ResponseHead, lease: Lease,
                                body_task) -> tuple[object, bool]:
        """101 to an Upgrade request: relay the 101, then tunnel both ways until both sides
        closed (haproxy's tunnel mode; `timeout tunnel` is the idle limit). Only now, once the
        server agreed, does the connection stop being HTTP (case 012)."""
        if body_task is not None and not body_task.done():
            return False, False  # a body still being sent cannot turn into tunnel bytes
        head = forward_response_head(resp, req.version, True, self.fe.response_rules,
                                     self.info, req)
        try:
            await io.send_all(self.loop, self.sock, head, self.t_client)
        except (OSError, TimeoutError):
            return False, False
        self.fe.counters.bout += len(head)
        for c in (self.fe.counters, self.be.counters, lease.server.counters):
            c.count_status(101)
        t_be = self.be.model.timeouts
        idle = t_be.tunnel
        if idle is None:
            known = [t for t in (self.t_client, self.t_server) if t is not None]
            idle = max(known) if known else None
        up, down = await run_tunnel(self.fe.mover, self.sock, lease.sock, idle,
                                    self.fe.splice_request, self.fe.splice_response)
        self._account(up, False, lease.server)
        self._account(down, True, lease.server)
        return False, False

    def _retry_on(self, event: object, lease: Lease) -> bool:
        """True when `event` (a retry-on event name or a status code) sends the request
        again: it is listed in `retry-on`, the request is replayable with retries left, and
        no byte of a response (not even a 1xx) has gone to the client."""
        if event is None or event not in self.be.model.retry_on:
            return False
        if not self._may_retry or self._interim_sent:
            return False
        log.warning("backend %s server %s: %s, retrying", self.be.name, lease.server.model.name,
                    f"status {event}" if isinstance(event, int) else event)
        return True

    def _client_gone(self) -> bool:
        """True when the client has closed (end of stream or reset pending), without
        consuming anything (haproxy `option abortonclose`)."""
        try:
            return self.sock.recv(1, socket.MSG_PEEK) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    def _abort_client(self, reset: bool) -> None:
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

    async def _end_task(self, task) -> None:
        if task is None:
            return
        if not task.done():
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    async def _request_body(self, req: RequestHead, srv: Side, lease: Lease) -> Result:
        """Move the request body client -> server. On failure, shut the server connection
        down so that the wait for the response ends too."""
        policy = self.fe.splice_request
        if req.framing.kind is BodyKind.LENGTH:
            r = await self.fe.mover.move(self.cli, srv, req.framing.length, policy)
        else:
            r = await self.fe.mover.move_chunked(self.cli, srv, policy)
        self._account(r, False, lease.server)
        if r.end is not End.DONE:
            self.fe.counters.ereq += 1
            try:
                lease.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return r

    async def _response_head(self, req: RequestHead, srv: Side, lease: Lease, body_task,
                             first: Completion | None = None):
        """Read the final response head, relaying 1xx ones to the client; `first` is the
        completion of an engine job that already read the first head (None: read it here).

        Returns:
            (ResponseHead, 0, None) on success; (_RETRY, 0, None) when a reused connection
            closed before any byte; (None, status, event) on failure, status being the error
            page to send or 0 when the client must just be closed, and event the `retry-on`
            event it was ("empty-response", "junk-response", "response-timeout") or None.
        """
        loop = self.loop
        while True:
            if body_task is not None and not body_task.done():
                # `timeout server` runs from the end of the request body: a long upload is
                # not the server's silence. Until then wait for a response or the body's end.
                readable = loop.create_task(io.wait_readable(loop, lease.sock, None))
                await asyncio.wait((body_task, readable), return_when=asyncio.FIRST_COMPLETED)
                await self._end_task(readable)
            try:
                if first is not None:
                    head = heads.head_of(first)
                    first = None
                else:
                    head = await heads.read_head(self.fe.mover, lease.sock, self.fe.bufsize,
                                                 self.t_server, self.t_server)
            except TimeoutError:
                self.be.counters.eresp += 1
                # nothing was sent to the client yet, even after a partial head
                return None, 504, "response-timeout"
            except io.HeadTooLarge:
                self.be.counters.eresp += 1
                return None, 502, "junk-response"
            except OSError:
                head = b""
            if not head_complete(head):
                if not head and lease.reused and body_task is None and not self._interim_sent:
                    return _RETRY, 0, None
                if body_task is not None and body_task.done() and body_task.result().end is not End.DONE:
                    # the request body failed first (and shut the server side down)
                    end = body_task.result().end
                    if end is End.SRC_TIMEOUT:
                        return None, 408, None
                    return None, 400 if end is End.BAD_FRAMING else 0, None
                self.be.counters.eresp += 1
                return None, 502, "junk-response" if head else "empty-response"
            try:
                resp = parse_response(head, req.method, req.upgrade is not None)
            except HeadError as exc:
                self.be.counters.eresp += 1
                return None, exc.status, "junk-response"
            if resp.status >= 200 or resp.status == 101:
                self._resp_raw = head
                return resp, 0, None
            if req.version == b"1.0":
                continue  # no 1xx to an HTTP/1.0 client (RFC 9110 section 15.2)
            try:
                interim = forward_response_head(resp, req.version, True)
                self._interim_sent = True
                await io.send_all(loop, self.sock, interim, self.t_client)
                self.fe.counters.bout += len(interim)
                self.fe.counters.count_status(resp.status)
            except (OSError, TimeoutError):
                return None, 0, None
