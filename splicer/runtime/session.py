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
     behind a close), stop writing and drain them before closing (_linger), so the close
     is a FIN, not a reset that would destroy the last response.
Every stream, the ones refused while reading their head included, ends with a Termination,
counted by Stream.record() / stream.record_termination(); nothing here raises past run().
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import TYPE_CHECKING

from splicer.http.errorpages import error_response
from splicer.http.h1 import HeadError, head_complete, parse_request
from splicer.http.rules import StreamInfo
from splicer.http.termination import Cause, Phase, Termination
from splicer.runtime import heads, io
from splicer.runtime.stream import Stream, record_termination
from splicer.runtime.transfer import Side

if TYPE_CHECKING:
    from splicer.runtime.proxy import FrontendRT

log = logging.getLogger("splicer")

LINGER = 1.0
"""Seconds a closing client connection with unread bytes is drained before the close."""


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
        self.route = route = fe.route
        self.t_client = route.t_client
        self.t_request = route.t_request
        self.t_keepalive = route.t_keepalive
        self.t_server = route.t_server
        self.cli = Side(sock, self.t_client)
        self._reset = False         # the client connection is to end with a reset
        self.next_head = None  # (id, future) of the engine job reading the next request head

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
            self.abort_client(reset=True)
            raise
        except Exception:  # a bug: log it, never let it kill the worker
            log.exception("session from %s failed", self.client_ip)
            self.abort_client(reset=True)
        finally:
            if self.next_head is not None:  # the engine must let go of the socket first
                pending, self.next_head = self.next_head, None
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

    async def _refuse(self, cause: Cause, status: int) -> None:
        """End a stream in its request phase (nothing reached a server): answer `status`
        (0: none) and count it on the frontend."""
        fe = self.fe.counters
        if status:
            fe.count_status(status)
            self.be.counters.count_status(status)
            fe.bout += await self.reply_error(status)
        record_termination(Termination(cause, Phase.REQUEST), fe, None, None)

    def stream_info(self) -> StreamInfo | None:
        """What header-rule samples read about this session (None when no rule needs it)."""
        fe = self.fe
        if not self.route.rules:
            return None
        return StreamInfo(self.client_ip, self.client_port, self.local_ip, self.local_port,
                          fe.name, self.be.name)

    # -- one stream ----------------------------------------------------------------------

    async def _stream(self, first: bool) -> bool:
        """Read a request head and serve its stream; True when the session may go on."""
        fe = self.fe
        try:
            pending = self.next_head
            if pending is not None:
                # read by the job that sent the last response (heads.send_with_body)
                self.next_head = None
                head = heads.head_of(await fe.mover.engine.wait(*pending))
            else:
                head = await heads.read_head(fe.mover, self.sock, self.route.bufsize,
                                             self.t_request if first else self.t_keepalive, self.t_request,
                                             skip_empty_lines=True)
        except TimeoutError as exc:
            if getattr(exc, "partial", b""):
                fe.counters.bin += len(exc.partial)
                await self._refuse(Cause.CLIENT_TIMEOUT, 408)
            return False  # an idle keep-alive connection just closes, as haproxy does
        except io.HeadTooLarge as exc:
            await self._refuse(Cause.PROXY, 414 if exc.first_line else 431)
            return False
        if not head_complete(head):
            if head:  # the client closed mid-head (between requests is no stream at all)
                fe.counters.bin += len(head)
                await self._refuse(Cause.CLIENT_ABORT, 0)
            return False
        try:
            req = parse_request(head, self.route.maxhdr)
        except HeadError as exc:
            fe.counters.bin += len(head)
            await self._refuse(Cause.PROXY, exc.status)
            return False
        fe.counters.req_tot += 1
        self.be.counters.req_tot += 1
        stream = Stream(self, req, head)
        try:
            return await stream.run()
        finally:
            stream.record()

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
