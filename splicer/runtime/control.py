"""What a worker does with a request from its master (the control channel, runtime/channel.py).

Rule: `handle()` is the ONE entry point for the master's requests; each op is a function
registered in OPS. Ops:
  - "stats": `{"stats": proxy.stats()}`, this worker's counters (the JSON of splicer.stats);
  - "soft-stop": stop accepting, finish what is in flight, then exit (haproxy's soft stop,
    SIGUSR1 to a worker); answers `{"stopping": true}` at once, before the drain.
  - "command": `{"line": "..."}`: run the runtime API line on this worker alone, at
    admin level (runtime/command.py run_line()); answers `{"text": ...}`;
  - "admin": `{"words": [...]}`: one command the master's stats socket parsed and checked
    already (runtime/adminsock.py); answers runtime/command.py execute()'s reply.
An unknown op is answered `{"error": "unknown op 'x'"}`.
"""
from __future__ import annotations

from typing import Awaitable, Callable

from splicer.admin.commands import Answer, Level, parse
from splicer.runtime.command import execute, run_line, server_names


async def _stats(proxy, request: dict) -> dict:
    return {"stats": proxy.stats()}


async def _soft_stop(proxy, request: dict) -> dict:
    proxy.soft_stop()
    return {"stopping": True}


async def _command(proxy, request: dict) -> dict:
    return {"text": run_line(proxy, str(request.get("line", "")))}


async def _admin(proxy, request: dict) -> dict:
    got = parse(tuple(request.get("words", ())), Level.ADMIN, server_names(proxy))
    if isinstance(got, Answer):
        return {"text": got.text}
    return execute(proxy, got)


OPS: dict[str, Callable[[object, dict], Awaitable[dict]]] = {
    "stats": _stats,
    "soft-stop": _soft_stop,
    "command": _command,
    "admin": _admin,
}
"""op name -> `async f(proxy, request) -> reply`."""


async def handle(proxy, request: dict) -> dict:
    """Answer one request of the master.

    Args:
        proxy: this worker's Proxy.
        request: the decoded message, `{"op": name, ...}` (its "id" is the channel's).

    Returns:
        The reply dict (the channel adds the id); `{"error": ...}` for an unknown op.
    """
    op = OPS.get(request.get("op"))
    if op is None:
        return {"error": f"unknown op {request.get('op')!r}"}
    return await op(proxy, request)
