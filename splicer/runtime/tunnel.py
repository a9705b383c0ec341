"""A two-way tunnel: `mode tcp` sessions (and, later, upgraded HTTP connections).

Theory of operation: each direction is one until-EOF transfer (spliced when allowed). When
a direction reaches end of stream, with its pipe flushed, its destination gets a FIN
(shutdown SHUT_WR): each half-close is forwarded on its own and the other direction goes on.
An error on either side ends both. The inactivity timeout fires only when neither direction
moved a byte for that long (haproxy `timeout tunnel`, else the larger of `timeout client` and
`timeout server`).
"""
from __future__ import annotations

import asyncio
import logging
import socket

from splicer.runtime.transfer import Activity, End, Mover, Result, Side, SplicePolicy

log = logging.getLogger("splicer")


async def run_tunnel(mover: Mover, a: socket.socket, b: socket.socket, idle: float | None,
                     a_to_b: SplicePolicy, b_to_a: SplicePolicy) -> tuple[Result, Result]:
    """Relay a <-> b until both directions have ended.

    Args:
        mover: the worker's body mover (loop + pipe pool).
        a, b: connected non-blocking sockets (the caller closes them afterwards).
        idle: seconds without a byte in either direction before both are closed (None: never).
        a_to_b, b_to_a: splice policy of each direction.

    Returns:
        (Result a->b, Result b->a).
    """
    if a_to_b is not SplicePolicy.NEVER and b_to_a is not SplicePolicy.NEVER:
        res = await mover.tunnel(a, b, idle)
        if res is not None:
            return res
    loop = mover.loop
    activity = Activity(loop.time())

    async def one_way(src: socket.socket, dst: socket.socket, policy: SplicePolicy) -> Result:
        r = await mover.move(Side(src, None), Side(dst, None), None, policy, activity)
        if r.end is End.DONE:
            try:
                dst.shutdown(socket.SHUT_WR)  # forward the half-close, pipe already flushed
            except OSError:
                pass
        return r

    fwd = loop.create_task(one_way(a, b, a_to_b))
    rev = loop.create_task(one_way(b, a, b_to_a))
    tasks = {fwd, rev}
    timed_out = False
    while tasks:
        timeout = None if idle is None else max(0.0, activity.last + idle - loop.time())
        done, tasks = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if any(t.result().end is not End.DONE for t in done):
            break  # an error on one side ends the whole tunnel
        if not done and idle is not None and loop.time() - activity.last >= idle:
            timed_out = True
            break
    for t in tasks:
        t.cancel()
    for t in tasks:
        try:
            await t
        except asyncio.CancelledError:
            pass
    results = []
    for t in (fwd, rev):
        if t.cancelled():
            results.append(Result(End.SRC_TIMEOUT if timed_out else End.DST_ERROR))
        else:
            results.append(t.result())
    return results[0], results[1]
