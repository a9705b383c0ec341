"""A worker out of file descriptors (EMFILE on accept): it stops accepting for a while instead
of being woken again and again by a listener that stays readable, logs it once, and accepts
the connections that waited in the backlog once descriptors are free again (haproxy limits
its listener the same way and retries after 100 ms or when a connection is released)."""
from __future__ import annotations

import os
import resource
import socket
import time

from tests.e2e.helpers import free_port, http_config

REQ = b"GET /files/0 HTTP/1.1\r\nHost: x\r\n\r\n"


def served(s: socket.socket) -> bool:
    """Send one request on `s` and read its whole answer (200, empty body)."""
    s.sendall(REQ)
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            return False
        got += chunk
    return got.startswith(b"HTTP/1.1 200")


def test_out_of_descriptors_pauses_accepting_and_resumes(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    (worker,) = sp.worker_pids()
    first = socket.create_connection(("127.0.0.1", port), timeout=10)
    assert served(first)  # a server connection is open and pooled: the room left is for clients
    room = 6
    limit = len(os.listdir(f"/proc/{worker}/fd")) + room
    resource.prlimit(worker, resource.RLIMIT_NOFILE, (limit, limit))
    # `room` connections fill the worker's descriptors; two more wait in the backlog
    clients = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(room + 2)]
    try:
        time.sleep(1.5)  # the accepts that fail, and what the worker does meanwhile
        log = sp.log()
        assert log.count("cannot accept (Too many open files); pausing") == 1, log[-2000:]
        assert "accept failed" not in log
        # free descriptors (7; each waiting client needs 2: its socket and a new server
        # connection for its first request): they are accepted and served
        first.close()
        for c in clients[:room]:
            c.close()
        for c in clients[room:]:
            assert served(c)
        assert sp.log().count("accepting again") == 1
    finally:
        for c in clients:
            c.close()
        first.close()
