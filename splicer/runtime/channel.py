"""The control channel between the master and one worker: newline-delimited JSON both ways.

Theory of operation: the master makes one AF_UNIX SOCK_STREAM socketpair per worker before
forking it; the worker keeps one end, the master the other. Either side may send a request
at any time and the other answers it on the same connection:
  - a request is `{"id": N, "op": "...", ...}`; N is chosen by the sender (1, 2, 3...);
  - its reply is `{"id": N, "reply": {...}}`, with the same N.
Ids of the two directions never mix: a message with "reply" resolves the sender's own
pending request, any other message is a request to answer. Each request is answered by its
own task, so a slow one (a worker asking the master for cluster-wide stats, which asks
every worker, this one included) never blocks the others. A request whose handler raises
is answered `{"error": "..."}`; a reply that comes after its asker gave up is dropped.
One message is one line: JSON escapes every newline inside strings.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import socket
from typing import Awaitable, Callable

log = logging.getLogger("splicer")

LINE_LIMIT = 64 << 20
"""Longest message accepted, in bytes (a stats reply of thousands of servers fits)."""

Handler = Callable[[dict], Awaitable[dict]]


class ChannelClosed(ConnectionError):
    """The peer closed the channel (it exited) before answering."""


def socketpair() -> tuple[socket.socket, socket.socket]:
    """A new channel's two ends (AF_UNIX SOCK_STREAM; Python makes them close-on-exec):
    (master's, worker's)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def encode(message: dict) -> bytes:
    """One message as its line (compact JSON and "\\n")."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class Channel:
    """One end of a control channel, served by the running loop.

    Args:
        sock: this side's end of the socketpair (made non-blocking here; owned and closed
            by the Channel).
        handler: `async handler(request) -> reply dict`, for the peer's requests.
        name: shown in log lines ("worker 2").
    """

    def __init__(self, sock: socket.socket, handler: Handler, name: str = "channel") -> None:
        self.sock = sock
        self.handler = handler
        self.name = name
        self.closed = asyncio.Event()
        self._ready = asyncio.Event()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None

    async def start(self) -> None:
        """Begin reading the peer's messages (in a task of the running loop)."""
        self.sock.setblocking(False)
        try:
            reader, self._writer = await asyncio.open_unix_connection(sock=self.sock, limit=LINE_LIMIT)
        except OSError:
            self._shut()
            return
        finally:
            self._ready.set()
        self._reader_task = asyncio.get_running_loop().create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    log.error("%s: control message over %d bytes; closing the channel", self.name, LINE_LIMIT)
                    return
                except ConnectionError:
                    return
                if not line:
                    return
                try:
                    msg = json.loads(line)
                    mid = msg["id"]
                except (ValueError, KeyError, TypeError):
                    log.error("%s: malformed control message %r", self.name, line[:200])
                    continue
                if "reply" in msg:
                    fut = self._pending.pop(mid, None)
                    if fut is not None and not fut.done():
                        fut.set_result(msg["reply"])
                    continue
                task = asyncio.get_running_loop().create_task(self._answer(mid, msg))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        finally:
            self._shut()

    async def _answer(self, mid, request: dict) -> None:
        try:
            reply = await self.handler(request)
        except Exception as exc:  # a bug in a handler must not kill the channel
            log.exception("%s: request %r failed", self.name, request.get("op"))
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        self._send({"id": mid, "reply": reply})

    def _send(self, message: dict) -> None:
        if self._writer is None or self.closed.is_set():
            return
        try:
            self._writer.write(encode(message))
        except (ConnectionError, RuntimeError):
            self._shut()

    async def ask(self, request: dict, timeout: float = 2.0) -> dict:
        """Send `request` (a dict with "op") and wait for its reply.

        Returns:
            The peer's reply dict.

        Raises:
            TimeoutError: no reply within `timeout` seconds.
            ChannelClosed: the channel is (or got) closed before the reply.
        """
        if not self._ready.is_set():  # start() still under way
            await asyncio.wait_for(self._ready.wait(), timeout)
        if self.closed.is_set():
            raise ChannelClosed(f"{self.name}: channel closed")
        mid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[mid] = fut
        self._send({**request, "id": mid})
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"{self.name}: no reply to {request.get('op')!r} in {timeout} s") from None
        finally:
            self._pending.pop(mid, None)

    def _shut(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        self._ready.set()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ChannelClosed(f"{self.name}: channel closed"))
        self._pending.clear()
        if self._writer is not None:
            self._writer.close()
        else:
            self.sock.close()

    def close(self) -> None:
        """Close this end: pending asks fail with ChannelClosed, the peer reads EOF."""
        self._shut()
        if self._reader_task is not None and not self._reader_task.done():
            self._reader_task.cancel()
        for t in list(self._tasks):
            t.cancel()
