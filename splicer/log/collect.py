"""What a finished stream (or a request refused before it became one) leaves for the access
log: the LogRecord (record.py) read from the runtime objects, once, when it ends.

Rule: this is the only module of splicer/log that reads runtime objects (Stream,
HttpSession, FrontendRT, Backend); it takes what the format needs and makes the record,
doing no formatting, except httplog_fields, the fast path of `option httplog` (the line's
values read in one pass, without a record, because it runs once per request; the Logger
renders a batch of them at once). The timers follow haproxy 8.4, measured on the loop's clock:
  - first request of a connection: Th = Ti = 0 and TR runs from the accept to the end of
    the request head (splicer reads a head whole, in the engine: the first byte's time is
    not seen apart); a later request on the connection: Ti runs from the end of the
    previous response to its head, and TR is 0;
  - Tw: from the head to a server connection, less Tc; Tc: the successful connect (0 on a
    reused connection); Tr: from the server connection to the final response head;
  - Ta: from the request's start to the end of the stream; Tt = Th + Ti + Ta.
-1 marks an event that never happened.
"""
from __future__ import annotations

from splicer.http.termination import NORMAL, Phase
from splicer.log.format import MEMO, _req
from splicer.log.record import LogRecord

NOSRV = "<NOSRV>"

_new = tuple.__new__  # LogRecord's fields in order, without NamedTuple's keyword-handling __new__


def _ms(seconds: float) -> int:
    return int(seconds * 1000.0 + 0.5) if seconds > 0 else 0


def request_line(raw: bytes) -> bytes:
    """The request line of a head as received (empty lines before it skipped)."""
    start = 0
    while raw.startswith(b"\r\n", start):
        start += 2
    end = raw.find(b"\r\n", start)
    return raw[start:end] if end >= 0 else raw[start:]


def _capture(fields, wanted: tuple) -> tuple:
    """The last occurrence of each captured field, cut to its length (haproxy `capture`)."""
    if not wanted:
        return ()
    found: dict[bytes, bytes] = {}
    names = {n for n, _ in wanted}
    for n, v in fields:
        ln = n.lower()
        if ln in names:
            found[ln] = v
    return tuple(found[n][:k] if n in found else None for n, k in wanted)


def _response_fields(raw: bytes) -> list:
    """The fields of a raw response head (for captures only: the head was parsed already)."""
    out = []
    for line in raw.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if colon:
            out.append((name.strip(), value.strip()))
    return out


def _conns(fe, be, srv) -> tuple[int, int, int, int, int]:
    """(ac, fc, bc, sc, bq) as haproxy's %ac/%fc/%bc/%sc/%bq show them now."""
    proxy = fe.proxy
    if be is None:
        return proxy.active, fe.active, 0, 0, 0
    active = be.balancer.active
    return (proxy.active, fe.active, sum(active), active[srv.index] if srv is not None else 0, be.queued)


_TERMS: dict = {}
"""Termination -> (ts, tsc): its two letters and the four of %tsc (memo; Enum values are slow)."""

_VERSIONS = {b"1.1": b"HTTP/1.1", b"1.0": b"HTTP/1.0"}


def _term(t) -> tuple[str, str]:
    got = _TERMS.get(t)
    if got is None:
        ts = str(t)
        got = _TERMS[t] = (ts, ts + "--")
    return got


def _server_timers(st, t_head: float, now: float) -> tuple[int, int, int]:
    """haproxy's Tw, Tc and Tr of a stream, in ms (configuration.txt 8.4): the queue wait
    (since the end of the head), the connect time and the server's response time; -1 for a
    phase the stream never reached (Tw 0 when it ended in the connect phase)."""
    t_lease = st.t_lease
    if t_lease:
        lease = st.last_lease
        Tc = int(lease.connect * 1000.0 + 0.5) if lease is not None else 0
        Tw = int((t_lease - t_head) * 1000.0 + 0.5) - Tc
        if Tw < 0:
            Tw = 0
        Tr = int((st.t_resp - t_lease) * 1000.0 + 0.5) if st.t_resp else -1
        return Tw, Tc, Tr
    phase = st.term.phase
    return (_ms(now - t_head) if phase is Phase.QUEUE else (0 if phase is Phase.CONNECT else -1)), -1, -1


def stream_record(st, logger, now: float) -> LogRecord:
    """The record of the finished http Stream `st` (runtime/stream.py), at loop time `now`.
    (Called once per request: written for speed, every timer inlined.)"""
    s = st.s
    fe = st.fe
    be = st.be
    t_head = st.t_head
    if st.first:
        start = s.t_accept
        Ti, TR = 0, int((t_head - start) * 1000.0 + 0.5)
    else:
        start = t_head
        Ti, TR = int((t_head - s.t_idle) * 1000.0 + 0.5), 0
    srv = st.server or st.tried  # (haproxy's %s: the last server the connection was sent to)
    Tw, Tc, Tr = _server_timers(st, t_head, now)
    Ta = int((now - start) * 1000.0 + 0.5)
    active = be.balancer.active
    term = st.term
    ts, tsc = ("--", "----") if term is NORMAL else _term(term)  # (hashing a Termination is slow)
    req = st.req
    raw = st.raw
    end = raw.find(b"\r\n")
    line = raw[:end] if end > 0 else request_line(raw)
    caps = fe.captures
    up, down = st.up, st.down
    off = logger.hub.offset
    logger.count += 1
    if logger.needs_dst:
        fi, fp = s.local_ip, s.local_port
    else:
        fi, fp = "", 0
    return _new(LogRecord, (
        s.client_ip, s.client_port, fi, fp, s.t_accept + off, start + off,
        0, Ti, TR, Tw, Tc, Tr, Ta, Ti + Ta,
        fe.name, be.name, srv.model.name if srv is not None else NOSRV,
        st.status or -1, st.head_out + down.moved, st.head_in + up.moved,
        ts, tsc, fe.proxy.active, fe.active, sum(active), active[srv.index] if srv is not None else 0,
        st.retries, st.redispatched, 0, be.queued,
        _capture(req.headers, caps[0]) if caps[0] else (),
        _capture(_response_fields(st.resp_raw), caps[1]) if caps[1] else (),
        line, req.method, req.target, _VERSIONS.get(req.version) or b"HTTP/" + req.version,
        up.spliced + down.spliced, up.copied + down.copied, logger.count, "http"))


HTTPLOG_LINE = '%s [%s] %s %d/%d/%d/%d/%d %d %d - - %s %d/%d/%d/%d/%s%d 0/%d "%s"'
"""format.HTTPLOG with no capture, as a %-template of the httplog_fields tuple."""

HTTPLOG_FIELDS = HTTPLOG_LINE.count("%")
"""Values in an httplog_fields tuple."""


def httplog_fields(st, logger, now: float) -> tuple:
    """The values of the `option httplog` line (format.HTTPLOG, no capture) of the finished
    http Stream `st`, at loop time `now`, in HTTPLOG_LINE's order: HTTPLOG_LINE % fields is
    the text LogFormat(HTTPLOG).render makes of stream_record's LogRecord. The fast path
    of the default format (called once per request, it reads the stream in one pass and
    formats nothing but the memoised date and request line: Logger renders a whole
    batch's fields with one % of the template repeated). What stays the same from request
    to request is remembered: the client's "ip:port" on its session
    (HttpSession.log_peer), "frontend backend/server" in logger.names (by server), the
    date by the request's start on the loop clock (logger.dates), the request line by
    the head's bytes (_HEAD_LINES); the timers of a stream that reached its server are
    computed inline."""
    s = st.s
    t_head = st.t_head
    if st.first:
        start = s.t_accept
        TR = int((t_head - start) * 1000.0 + 0.5)
    else:
        start = t_head
        TR = 0
    srv = st.server or st.tried  # (haproxy's %s: the last server the connection was sent to)
    t_lease = st.t_lease
    t_resp = st.t_resp
    lease = st.last_lease
    if t_resp and t_lease and lease is not None:  # (the common case of _server_timers)
        Tc = int(lease.connect * 1000.0 + 0.5)
        Tw = int((t_lease - t_head) * 1000.0 + 0.5) - Tc
        if Tw < 0:
            Tw = 0
        Tr = int((t_resp - t_lease) * 1000.0 + 0.5)
    else:
        Tw, Tc, Tr = _server_timers(st, t_head, now)
    be = st.be
    fe = st.fe
    active = be.balancer.active
    term = st.term
    raw = st.raw
    logger.count += 1
    peer = s.log_peer
    if peer is None:
        peer = s.log_peer = f"{s.client_ip}:{s.client_port}"
    if srv is not None:
        names = logger.names.get(srv)
        if names is None:
            names = logger.name_of(fe, be, srv)
        sc = active[srv.index]
    else:
        names, sc = f"{fe.name} {be.name}/{NOSRV}", 0
    date = logger.dates.get(start)
    if date is None:
        date = logger.date_of(start)
    line = _HEAD_LINES.get(raw)
    if line is None:
        line = _head_line(raw)
    return (peer, date, names, TR, Tw, Tc, Tr, int((now - start) * 1000.0 + 0.5),
            st.status or -1, st.head_out + st.down.moved, "----" if term is NORMAL else _term(term)[1],
            fe.proxy.active, fe.active, sum(active), sc, "+" if st.redispatched else "", st.retries, len(be.waiting),
            line)


def express_fields(s, fe, be, srv, c, t_head: float, logger, now: float) -> tuple:
    """httplog_fields of a request the engine's express lane served whole (runtime/express.py),
    from its credit's X_DONE completion `c` (its `head`: the request head, binding.RELAY_XLOG),
    at loop time `now`: a later request of the client connection `s` (HttpSession), sent by
    frontend `fe` on an idle connection of server `srv` of backend `be` lent as its head came
    (loop time `t_head`). Its timers are what a stream of that request would show (8.4): TR
    and Tc 0 (not the connection's first request; a reused connection), Tw 0 (its connection
    was lent at once), Tr from the head to the response head's end (the engine's relay_ms
    before `now`), Ta from the head to `now`. Logged after its connection went back, as a
    stream's (bc, sc)."""
    logger.count += 1
    peer = s.log_peer
    if peer is None:
        peer = s.log_peer = f"{s.client_ip}:{s.client_port}"
    names = logger.names.get(srv)
    if names is None:
        names = logger.name_of(fe, be, srv)
    date = logger.dates.get(t_head)
    if date is None:
        date = logger.date_of(t_head)
    raw = c.head or b""
    line = _HEAD_LINES.get(raw)
    if line is None:
        line = _head_line(raw)
    active = be.balancer.active
    Tr = int((now - c.relay_ms / 1000.0 - t_head) * 1000.0 + 0.5)
    return (peer, date, names, 0, 0, 0, Tr if Tr > 0 else 0, int((now - t_head) * 1000.0 + 0.5),
            c.xstatus, c.relayed + c.bytes_fwd, "----", fe.proxy.active, fe.active, sum(active),
            active[srv.index], "", 0, len(be.waiting), line)


_HEAD_LINES: dict[bytes, str] = {}
"""Head bytes -> the escaped request line httplog_fields shows: a head that comes again
(its hash computed already by the forwarded-head memo, h1.forwarded_request) is one
lookup, not a search, a slice and a second lookup; heads of at most HEAD_LINE_BYTES bytes
only, MEMO of them (cleared when full): at most 4 MiB."""

HEAD_LINE_BYTES = 1024


def _head_line(raw: bytes) -> str:
    """The escaped request line of the head `raw` (format._req of its first line),
    remembered in _HEAD_LINES."""
    end = raw.find(b"\r\n")
    line = _req(raw[:end] if end > 0 else request_line(raw))
    if len(raw) <= HEAD_LINE_BYTES:
        if len(_HEAD_LINES) >= MEMO:
            _HEAD_LINES.clear()
        _HEAD_LINES[raw] = line
    return line


def httplog_line(st, logger, now: float) -> str:
    """The `option httplog` line of the finished http Stream `st` (HTTPLOG_LINE of its
    httplog_fields), at loop time `now`."""
    return HTTPLOG_LINE % httplog_fields(st, logger, now)


def refused_record(s, logger, term, status: int, sent: int, received: int, now: float,
                   req=None, raw: bytes = b"", backend: str = "", server: str = NOSRV,
                   first: bool | None = None) -> LogRecord:
    """The record of a request refused (or a connection closed) before any stream: a head
    that was bad, too large, late or cut short (haproxy logs these with "<BADREQ>" and the
    frontend as backend, no backend having been chosen yet); or, with `req` (its head
    `raw`), a request answered by splicer itself (an http-request rule, a 503 for want of a
    backend, an ambiguous target refused), logged with its request line and `backend`,
    and timed as a stream is (8.4), with `server` as its %s (haproxy's "<STATS>" for the
    stats page, "<PROMEX>" for the prometheus exporter; else "<NOSRV>"): on the connection's first request TR runs from the
    accept to its head (HttpSession.t_local: when splicer took it to answer) and Ti is 0;
    on a later one Ti runs from the end of the previous response to its head, TR is 0 and
    the line is dated from its head. `first`: the request was the connection's first (None:
    the session has taken no request yet)."""
    fe = s.fe
    if first is None:
        first = not s.streams
    if req is not None:
        caps = fe.captures
        line, method, uri, version = request_line(raw), req.method, req.target, b"HTTP/" + req.version
        hr = _capture(req.headers, caps[0]) if caps[0] else ()
        if first:
            start, Ti, TR = s.t_accept, 0, _ms(s.t_local - s.t_accept)
        else:
            start, Ti, TR = s.t_local, _ms(s.t_local - s.t_idle), 0
    else:
        line = method = uri = version = b""
        hr = (None,) * len(fe.captures[0])
        TR = -1
        start = s.t_accept if first else s.t_idle
        Ti = -1 if first else 0
    off = logger.hub.offset
    fi, fp = (s.local_ip, s.local_port) if logger.needs_dst else ("", 0)
    caps = fe.captures
    Ta = _ms(now - start)
    return LogRecord(
        s.client_ip, s.client_port, fi, fp, s.t_accept + off, start + off,
        0, Ti, TR, -1, -1, -1, Ta, Ta + Ti if Ti > 0 else Ta,
        fe.name, backend or fe.name, server, status or -1, sent, received,
        str(term), str(term) + "--", fe.proxy.active, fe.active, 0, 0, 0, False, 0, 0,
        hr, (None,) * len(caps[1]), line, method, uri, version, 0, 0, logger.next_id(), "http")


def tunnel_record(fe, peer, lease, term, up, down, t_accept: float, t_lease: float, logger,
                  now: float, tried=None, retries: int = 0) -> LogRecord:
    """The record of a tcp-mode session (`option tcplog`): Tw/Tc up to the server
    connection, Tt the whole session. With no lease: `tried`, the server of the last
    failed connect (haproxy's %s names it), or None (<NOSRV>); `retries`, the connects made
    again (%rc); Tw the queue wait when it ended in the queue, else 0 (the connects' time
    is no queue wait: haproxy 8.4), and Tc -1."""
    ci, cp = (peer[0], peer[1]) if isinstance(peer, tuple) else ("unknown", 0)
    off = logger.hub.offset
    be = fe.backend
    srv = lease.server if lease is not None else tried
    if lease is not None:
        Tc = _ms(lease.connect)
        Tw = max(0, _ms(t_lease - t_accept) - Tc)
    else:
        Tw, Tc = (_ms(now - t_accept) if term.phase is Phase.QUEUE else 0), -1
    Tt = _ms(now - t_accept)
    ac, fc, bc, sc, bq = _conns(fe, be, srv)
    ts = str(term)
    return LogRecord(
        ci, cp, "", 0, t_accept + off, t_accept + off, 0, -1, -1, Tw, Tc, -1, Tt, Tt,
        fe.name, be.name if be is not None else fe.name, srv.model.name if srv is not None else NOSRV,
        -1, down.moved if down is not None else 0, up.moved if up is not None else 0,
        ts, ts + "--", ac, fc, bc, sc, lease.failures if lease is not None else retries,
        bool(lease is not None and lease.redispatched), 0, bq, (), (), b"", b"", b"", b"",
        (up.spliced + down.spliced) if up is not None else 0, (up.copied + down.copied) if up is not None else 0,
        logger.next_id(), "tcp")
