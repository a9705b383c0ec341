"""Connections that end before their request head is whole, as haproxy's h1 mux treats them
(haproxy 2.6, measured side by side): a new connection closed before it sent a byte, or with
part of a head, is an incomplete request: answered 400 if the client still reads, logged
CR-- with status 400, counted in req_tot, hrsp_4xx and ereq; one that stays silent until
`timeout http-request` gets a 408 (cR--). `option http-ignore-probes` closes the silent ones
in silence. A keep-alive connection's idle end is never logged. Real sockets on 127.0.0.1."""
from __future__ import annotations

import socket
import time

import pytest

from tests.e2e.helpers import recv_all
from tests.e2e.test_access_log import PathOrigin, get, lines_of, parse, start

REQUEST_TIMEOUT = "    timeout http-request 1s\n"


@pytest.fixture(scope="module")
def origin():
    o = PathOrigin()
    yield o
    o.close()


def half_closed(port: int, data: bytes = b"") -> bytes:
    """Connect, send `data`, shut the write side: everything the proxy answers."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        return recv_all(s)
    finally:
        s.close()


def silent(port: int) -> tuple[bytes, float]:
    """Connect and send nothing: (what the proxy answers before it closes, seconds it took)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    t0 = time.monotonic()
    try:
        return recv_all(s), time.monotonic() - t0
    finally:
        s.close()


def counters(sp) -> dict:
    return sp.stats()["frontends"]["www"]


def test_a_connection_that_ends_before_its_head_is_an_incomplete_request(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)], frontend=REQUEST_TIMEOUT)
    before = counters(sp)
    be_before = sp.stats()["backends"]["farm"]
    assert half_closed(sp.port).startswith(b"HTTP/1.1 400 ")
    assert half_closed(sp.port, b"GET /cut HTTP/1.1\r\nHo").startswith(b"HTTP/1.1 400 ")
    got, took = silent(sp.port)
    assert got.startswith(b"HTTP/1.1 408 ") and 0.9 < took < 5
    resp, _ = get(sp.port, "/ok/after")
    assert resp.startswith(b"HTTP/1.1 200 ")
    lines = lines_of(path, 1, "/ok/after")
    with open(path) as f:
        bad = [parse(ln.rstrip("\n")) for ln in f if "<BADREQ>" in ln]
    assert [(f["tsc"], f["ST"], f["s"]) for f in bad[-3:]] == [
        ("CR--", "400", "<NOSRV>"), ("CR--", "400", "<NOSRV>"), ("cR--", "408", "<NOSRV>")]
    assert lines and 900 <= int(bad[-1]["Ta"]) < 5000
    after = counters(sp)
    for name in ("req_tot", "hrsp_4xx", "ereq"):
        assert after[name] - before[name] == (4 if name == "req_tot" else 3), name
    # refused by the frontend before any backend was chosen: the backend counts none of them
    # (haproxy's h1 mux counts its refusals on the frontend only)
    be_after = sp.stats()["backends"]["farm"]
    assert [be_after[n] - be_before[n] for n in ("req_tot", "hrsp_4xx")] == [1, 0]


def test_http_ignore_probes_closes_a_silent_connection_in_silence(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)],
                     frontend=REQUEST_TIMEOUT + "    option http-ignore-probes\n")
    before = counters(sp)
    assert half_closed(sp.port) == b""
    got, took = silent(sp.port)
    assert got == b"" and 0.9 < took < 5
    assert half_closed(sp.port, b"GET /cut HTTP/1.1\r\n").startswith(b"HTTP/1.1 400 ")  # not a probe
    get(sp.port, "/ok/after")
    lines_of(path, 1, "/ok/after")
    with open(path) as f:
        bad = [parse(ln.rstrip("\n")) for ln in f if "<BADREQ>" in ln]
    assert [(f["tsc"], f["ST"]) for f in bad] == [("CR--", "400")]  # the cut head only
    after = counters(sp)
    assert (after["req_tot"] - before["req_tot"], after["ereq"] - before["ereq"]) == (2, 1)


def test_the_idle_end_of_a_keep_alive_connection_is_not_logged(start_splicer, tmp_path, origin):
    sp, path = start(start_splicer, tmp_path, [("o1", origin.port)],
                     frontend=REQUEST_TIMEOUT + "    timeout http-keep-alive 1s\n")
    s = socket.create_connection(("127.0.0.1", sp.port), timeout=10)
    s.sendall(b"GET /ok/kept HTTP/1.1\r\nHost: a\r\n\r\n")
    assert s.recv(65536).startswith(b"HTTP/1.1 200 ")
    before = counters(sp)
    assert s.recv(65536) == b""  # timeout http-keep-alive closes it silently
    s.close()
    get(sp.port, "/ok/next")
    lines = lines_of(path, 2, "/ok/")
    assert [parse(ln)["r"] for ln in lines] == ["GET /ok/kept HTTP/1.1", "GET /ok/next HTTP/1.1"]
    with open(path) as f:
        assert not [ln for ln in f if "<BADREQ>" in ln and "cR--" in ln]
    assert counters(sp)["ereq"] == before["ereq"]
