"""Health probes: every `inter` seconds, a TCP connect to each checked server (haproxy's
default layer-4 check) or, with `option httpchk`, an HTTP request whose status line is
judged (health/state.py); the outcome feeds the server's HealthState, and transitions mark
the server up or down in the backend's balancer and are logged. Each worker probes on its
own."""
from __future__ import annotations

import asyncio
import logging

from splicer.health.state import CheckStatus, HealthState, judge_response
from splicer.runtime import io

log = logging.getLogger("splicer")


async def probe(loop: asyncio.AbstractEventLoop, host: str, port: int, timeout: float) -> CheckStatus:
    """One layer-4 check: L4OK when a TCP connection opens within `timeout` seconds."""
    try:
        sock = await io.connect(loop, host, port, timeout)
    except TimeoutError:
        return CheckStatus.L4TOUT
    except OSError:
        return CheckStatus.L4CON
    sock.close()
    return CheckStatus.L4OK


STATUS_LINE_MAX = 16384
"""Most bytes read while looking for a check response's status line."""


async def probe_http(loop: asyncio.AbstractEventLoop, host: str, port: int, connect_timeout: float,
                     read_timeout: float, request: bytes,
                     expect: tuple[tuple[int, int], ...]) -> tuple[CheckStatus, int]:
    """One layer-7 check (haproxy `option httpchk`): connect, send `request`, judge the
    status line that comes back within `read_timeout` seconds.

    Returns:
        (status, code): L4CON/L4TOUT when the connection failed, L7TOUT when no status line
        came in time, else judge_response()'s verdict.
    """
    try:
        sock = await io.connect(loop, host, port, connect_timeout)
    except TimeoutError:
        return CheckStatus.L4TOUT, 0
    except OSError:
        return CheckStatus.L4CON, 0
    try:
        deadline = loop.time() + read_timeout
        await io.send_all(loop, sock, request, read_timeout)
        got = b""
        buf = bytearray(4096)
        while b"\n" not in got and len(got) < STATUS_LINE_MAX:
            n = await io.recv_into(loop, sock, buf, max(0.0, deadline - loop.time()))
            if n == 0:
                break
            got += buf[:n]
        return judge_response(got, expect)
    except TimeoutError:
        return CheckStatus.L7TOUT, 0
    except OSError:
        return CheckStatus.L7RSP, 0
    finally:
        io.forget(sock)
        sock.close()


async def check_server(backend, server) -> None:
    """Check `server` of `backend` forever (until cancelled), every `server.model.inter`
    seconds. As in haproxy, the connection must open within `timeout connect` (or `inter`
    when shorter), and an `option httpchk` response must come within `timeout check` when
    it is set, else `inter`."""
    m = server.model
    bm = backend.model
    state = HealthState(m.rise, m.fall)
    connect_timeout = min(bm.timeouts.connect or m.inter, m.inter)
    read_timeout = bm.timeouts.check or m.inter
    while True:
        code = 0
        if bm.httpchk is None:
            status = await probe(backend.loop, server.addr[0], server.addr[1], connect_timeout)
        else:
            status, code = await probe_http(backend.loop, server.addr[0], server.addr[1],
                                            connect_timeout, read_timeout, bm.httpchk,
                                            bm.check_expect)
        change = state.result(status)
        if change is not None:
            backend.balancer.set_up(server.index, change and not m.disabled, backend.loop.time())
            log.warning("backend %s server %s is %s (%s%s, %d in a row)", backend.name, m.name,
                        "UP" if change else "DOWN", status.value,
                        f" {code}" if code else "", m.rise if change else m.fall)
        await asyncio.sleep(m.inter)
