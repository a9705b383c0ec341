"""What a worker does with a request from its master (the control channel, runtime/channel.py).

Rule: `handle()` is the ONE entry point for the master's requests; each op is a function
registered in OPS. Ops:
  - "stats": `{"stats": proxy.stats()}`, this worker's counters (the JSON of splicer.stats);
  - "soft-stop": stop accepting, finish what is in flight, then exit (haproxy's soft stop,
    SIGUSR1 to a worker); answers `{"stopping": true}` at once, before the drain.
An unknown op is answered `{"error": "unknown op 'x'"}`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

if TYPE_CHECKING:
    from splicer.runtime.proxy import Proxy


async def _stats(proxy: "Proxy", request: dict) -> dict:
    return {"stats": proxy.stats()}


async def _soft_stop(proxy: "Proxy", request: dict) -> dict:
    proxy.soft_stop()
    return {"stopping": True}


OPS: dict[str, Callable[["Proxy", dict], Awaitable[dict]]] = {
    "stats": _stats,
    "soft-stop": _soft_stop,
}
"""op name -> `async f(proxy, request) -> reply`."""


async def handle(proxy: "Proxy", request: dict) -> dict:
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
