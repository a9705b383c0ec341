"""Listeners: the bound, listening sockets of every `bind` line, opened once by the master.

Rule: sockets are bound before any worker starts, so an address in use is reported once,
as `file:line: cannot bind ...`, and no worker starts. Workers inherit the listening sockets
across fork() and all accept on them; a worker that dies loses no queued connection (they
wait in the shared accept queue for the others).
"""
from __future__ import annotations

import socket

from splicer.config.model import Bind, Config

BACKLOG = 1024
"""listen(2) backlog of every listener (haproxy's default `backlog` is maxconn)."""


def bind_address(b: Bind) -> tuple[int, str, int]:
    """The socket address a `bind` line listens on: (family, numeric host, port); '' and '*'
    are 0.0.0.0, a name is resolved (IPv4).

    Raises:
        OSError: the name does not resolve (socket.gaierror).
    """
    host = "0.0.0.0" if b.host in ("", "*") else b.host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if family == socket.AF_INET and not host.replace(".", "").isdigit():
        host = socket.getaddrinfo(host, b.port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    return family, host, b.port


def open_listener(b: Bind) -> socket.socket:
    """Bind and listen on one `bind` address (SO_REUSEADDR; non-blocking).

    Raises:
        OSError: with a "file:line: cannot bind host:port: reason" message.
    """
    family, host, _ = bind_address(b)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, b.port))
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"{b.file}:{b.line}: cannot bind {host}:{b.port}: {exc.strerror}") from None
    return sock


def open_listeners(config: Config) -> dict[str, list[socket.socket]]:
    """Open every frontend's listeners.

    Returns:
        {frontend name: [listening sockets in bind order]}.

    Raises:
        OSError: the first bind that fails; every socket opened so far is closed.
    """
    out: dict[str, list[socket.socket]] = {}
    try:
        for fe in config.frontends:
            out[fe.name] = [open_listener(b) for b in fe.binds]
    except OSError:
        for socks in out.values():
            for s in socks:
                s.close()
        raise
    return out
