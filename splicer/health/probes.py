"""Health probes: a TCP connect to each checked server every `inter` seconds (haproxy's
default layer-4 check), fed to its HealthState; transitions mark the server up or down in
the backend's balancer and are logged. Each worker probes on its own."""
from __future__ import annotations

import asyncio
import logging

from splicer.health.state import CheckStatus, HealthState
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


async def check_server(backend, server) -> None:
    """Check `server` of `backend` forever (until cancelled), every `server.model.inter`
    seconds; the check's timeout is `timeout connect` when set, else `inter` (haproxy)."""
    m = server.model
    state = HealthState(m.rise, m.fall)
    timeout = backend.model.timeouts.connect or m.inter
    while True:
        status = await probe(backend.loop, server.addr[0], server.addr[1], min(timeout, m.inter))
        change = state.result(status)
        if change is not None:
            backend.balancer.set_up(server.index, change and not m.disabled)
            log.warning("backend %s server %s is %s (%s, %d in a row)", backend.name, m.name,
                        "UP" if change else "DOWN", status.value, m.rise if change else m.fall)
        await asyncio.sleep(m.inter)
