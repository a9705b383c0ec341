"""What the access log knows about one finished stream: a frozen LogRecord.

Rule: sans-I/O data. The runtime fills one record when a stream ends (collect.py) and
hands it to the Logger; everything a log-format may show is here, already measured, so
rendering (format.py) needs nothing else and may happen later, in a batch.
Times: `accept` and `start` are wall-clock seconds (time.time() scale); the timers are
integer milliseconds, -1 for an event that never happened (haproxy 8.4).
"""
from __future__ import annotations

from typing import NamedTuple


class LogRecord(NamedTuple):
    """One stream, as haproxy's log-format aliases (8.2.6) read it.

    Attributes:
        ci, cp: client address and port; fi, fp: the address and port it connected to
            ("" / 0 when the format does not show them: they cost a syscall).
        accept: date the connection was accepted; start: date the request began (accept
            + Th + Ti), both wall-clock seconds.
        Th, Ti, TR, Tw, Tc, Tr, Ta, Tt: haproxy's timers (8.4), ms, -1 when not reached.
        ft, b, s: frontend, backend and server names ("<NOSRV>" when no server was used,
            "<NONE>" as backend when none was chosen).
        ST: the status sent to the client (-1: none); B: bytes sent to the client (heads
            included); U: bytes received from the client.
        ts: the two-letter termination state (http/termination.py); tsc: ts plus the two
            persistence cookie characters ("--" when no cookie applies).
        ac, fc, bc, sc: connections of the worker, frontend, backend, server when logged.
        rc: retries; redispatched: the last retry went to another server ("+" before rc).
        sq, bq: requests queued on the server and in the backend when logged.
        hr, hs: captured request / response header values (None: absent), in the order
            of the `capture` lines.
        request: the request line as received (b"": none, logged as "<BADREQ>").
        method, uri, version: the request line's parts (b"" when there is none).
        spliced, copied: body bytes of this stream moved through a pipe / through user space.
        rt: the worker's request counter for this stream.
        mode: "http" or "tcp".
    """

    ci: str
    cp: int
    fi: str
    fp: int
    accept: float
    start: float
    Th: int
    Ti: int
    TR: int
    Tw: int
    Tc: int
    Tr: int
    Ta: int
    Tt: int
    ft: str
    b: str
    s: str
    ST: int
    B: int
    U: int
    ts: str
    tsc: str
    ac: int
    fc: int
    bc: int
    sc: int
    rc: int
    redispatched: bool
    sq: int
    bq: int
    hr: tuple
    hs: tuple
    request: bytes
    method: bytes
    uri: bytes
    version: bytes
    spliced: int
    copied: int
    rt: int
    mode: str
