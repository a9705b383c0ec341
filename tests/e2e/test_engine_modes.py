"""The engine on a thread of its own and inline (turned by the worker's event loop), through
the real command: the same traffic, byte-exact, in both modes.

A worker pinned to one CPU runs its engine inline (runtime/proxy.py engine_inline); the
environment variable SPLICER_ENGINE forces either mode. Each mode is checked to be the one
running (an engine thread is one more thread in the worker) and then carries keep-alive
GETs, a spliced 256 MiB body, a chunked response, a POST body, a pipelined pair and a
keep-alive timeout.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import time

import pytest

from tests.e2e.helpers import free_port, http_config, read_response


def worker_threads(sp) -> int:
    (pid,) = sp.worker_pids()
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.mark.parametrize("mode", ["thread", "inline"])
def test_traffic_in_both_engine_modes(start_splicer, farm, www, mode):
    port = free_port()
    cfg = http_config(port, [(o.name, o.port) for o in farm]).replace(
        "timeout http-keep-alive 5s", "timeout http-keep-alive 1s")
    assert "timeout http-keep-alive 1s" in cfg
    sp = start_splicer(cfg, [port], env={"SPLICER_ENGINE": mode})
    threads = worker_threads(sp)
    # keep-alive GETs on one connection, both origins
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for name in ["1k", "0", "1m", "1k"]:
        conn.request("GET", f"/files/{name}")
        r = conn.getresponse()
        body = r.read()
        assert (r.status, hashlib.sha256(body).hexdigest()) == (200, www[1][name]), name
    # a spliced 256 MiB body
    conn.request("GET", "/files/256m")
    r = conn.getresponse()
    h, n = hashlib.sha256(), 0
    while block := r.read(1 << 20):
        h.update(block)
        n += len(block)
    assert (r.status, n, h.hexdigest()) == (200, 256 << 20, www[1]["256m"])
    # a chunked response, then a POST with a body
    conn.request("GET", "/chunked/1m")
    r = conn.getresponse()
    assert (r.status, r.getheader("Transfer-Encoding")) == (200, "chunked")
    assert hashlib.sha256(r.read()).hexdigest() == www[1]["1m"]
    payload = os.urandom(300_000)
    conn.request("POST", "/upload", body=payload)
    r = conn.getresponse()
    got = json.loads(r.read())
    assert (r.status, got["size"], got["sha256"]) == (200, len(payload), hashlib.sha256(payload).hexdigest())
    conn.close()
    # two pipelined requests in one segment: two responses, in order
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /files/1k HTTP/1.1\r\nHost: x\r\n\r\nGET /files/0 HTTP/1.1\r\nHost: x\r\n\r\n")
    head1, body1 = read_response(s)
    head2, body2 = read_response(s)
    assert (head1.split(b"\r\n")[0], len(body1)) == (b"HTTP/1.1 200 OK", 1024)
    assert (head2.split(b"\r\n")[0], body2) == (b"HTTP/1.1 200 OK", b"")
    # the keep-alive timeout (1 s) closes the idle connection: the engine's timer fires
    t0 = time.monotonic()
    assert s.recv(10) == b""
    assert 0.8 < time.monotonic() - t0 < 5
    s.close()
    assert worker_threads(sp) == threads  # no thread came or went with the traffic
    fe = sp.stats()["frontends"]["www"]
    assert fe["spliced"] >= 256 << 20


def test_thread_mode_has_the_engine_thread(start_splicer, farm):
    """The two modes differ by exactly one thread in the worker (the engine's)."""
    counts = {}
    for mode in ("thread", "inline"):
        port = free_port()
        sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port],
                           env={"SPLICER_ENGINE": mode})
        counts[mode] = worker_threads(sp)
        sp.stop()
    assert counts["thread"] == counts["inline"] + 1, counts
