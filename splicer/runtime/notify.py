"""systemd's service notification (sd_notify(3)): `-Ws` tells the service manager when
splicer is ready, reloading or stopping, through the datagram socket named by $NOTIFY_SOCKET.

Rule: a notification never blocks and never fails the caller: no $NOTIFY_SOCKET, a full
or missing socket, and the message is dropped (logged once at debug level).
"""
from __future__ import annotations

import logging
import os
import socket
import time

log = logging.getLogger("splicer")

STATES = {"ready": "READY=1", "reloading": "RELOADING=1", "stopping": "STOPPING=1"}
"""Master state -> the sd_notify assignment sent for it (systemd.service Type=notify-reload)."""


def address(env: dict | None = None) -> str | None:
    """$NOTIFY_SOCKET as a socket address (a leading '@' is the abstract namespace), or None."""
    path = (os.environ if env is None else env).get("NOTIFY_SOCKET")
    if not path:
        return None
    return "\0" + path[1:] if path.startswith("@") else path


def message(state: str, pid: int) -> bytes:
    """The datagram for a master `state` ("ready", "reloading", "stopping"): its assignment,
    with MAINPID (the master) and, for RELOADING=1, the MONOTONIC_USEC systemd asks for."""
    lines = [STATES[state], f"MAINPID={pid}"]
    if state == "reloading":
        lines.append(f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}")
    return ("\n".join(lines) + "\n").encode()


def notify(state: str, env: dict | None = None) -> bool:
    """Send the notification for `state` if $NOTIFY_SOCKET is set; True if it was sent."""
    addr = address(env)
    if addr is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.setblocking(False)
            s.sendto(message(state, os.getpid()), addr)
        return True
    except OSError as exc:
        log.debug("sd_notify %s to %s failed: %s", state, addr, exc)
        return False
