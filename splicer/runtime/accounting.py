"""Counting and logging a stream's end: every counter a stream adds to, and its log line, in one place.

Rule: a stream (runtime/stream.py: a routed request, one answered before any server, a
head refused before it was routed) and a tcp-mode tunnel (runtime/proxy.py) end here:
their bytes, statuses and termination state (http/termination.py) go to the counters of the
frontend, backend and server (haproxy's stats columns), and the stream to the access log.
Nothing here does I/O but handing the log line to the frontend's logger.
"""
from __future__ import annotations

from splicer.http.termination import Cause, Termination, counted
from splicer.log.collect import NOSRV


def record_stream(st) -> None:
    """Add the stream `st` (runtime/stream.py Stream) to the counters of its frontend,
    backend and server: bytes, statuses and its termination state, and log it."""
    s = st.s
    if s.stream is st:
        s.stream = None  # over: `show sess` no longer shows it, an idle session holds none
        s.fe.proxy.busy.discard(s)
    if st.local is not None:
        return _record_local(st)
    if st.handed is not None and not st.status and st.term.cause is Cause.KILLED:
        # killed (a hard stop) while its response went out: the head went to the client
        st.status, n = st.handed
        st.head_out += n
    last = st.last_lease
    if last is not None and last.killed is not None and not st.term.normal:
        # the connection was shut down under the stream: its end is the server's state change
        st.term = Termination(last.killed, st.term.phase)
    fe, be, srv = st.fe.counters, st.be.counters, st.server.counters if st.server else None
    up, down = st.up, st.down
    # the bytes the client sent and got, heads included, on the frontend, the backend and
    # the server alike (haproxy's stream_process_counters: req.total and res.total)
    b_in, b_out = st.head_in + up.moved, st.head_out + down.moved
    for code in st.interim:
        fe.count_status(code)
    spliced, copied, status = up.spliced + down.spliced, up.copied + down.copied, st.status
    for c in (fe, be, srv):
        if c is None:
            continue
        c.bin += b_in
        c.bout += b_out
        c.spliced += spliced
        c.copied += copied
        if status:
            c.count_status(status)
    if st.answer is not None:
        record_local(st.term, st.answer.counter, fe, be, srv)
    else:
        record_termination(st.term, fe, be, srv)
    if st.fe.logger is not None:
        st.fe.logger.stream(st)


def record_express(fe, be, srv, c, reused: bool) -> None:
    """Count a request the engine routed and relayed whole by itself (runtime/express.py:
    its credit's X_DONE completion `c`) on the counters of the frontend, backend and server
    `fe`, `be`, `srv`, as a stream of the same request counts (record_stream and the
    machine's lease): one request (on a `reused` connection: `reused` too), its head's
    and body's bytes in (a body copied whole with its head: http/machine.py whole_body),
    the response head's and body's bytes out, its status, termination "--"."""
    body = c.bytes_fwd
    b_in = c.xreq + c.bytes_rev
    b_out = c.relayed + body
    spliced = c.spliced
    status = c.xstatus
    fe.req_tot += 1
    be.req_tot += 1
    srv.req_tot += 1
    if reused:
        be.reused += 1
        srv.reused += 1
    for x in (fe, be, srv):
        x.bin += b_in
        x.bout += b_out
        x.copied += c.bytes_rev
        if spliced:
            x.spliced += body
        else:
            x.copied += body
        x.count_status(status)
        terms = x.terms
        terms["--"] = terms.get("--", 0) + 1


def _record_local(st) -> None:
    """A stream that reached no server (StreamMachine.local): a request answered here
    ("answer": an http-request rule, a service, a 503 for want of a backend), counted on the
    frontend and the backend whose rules answered (bytes, status, its termination and the
    rule's counter), or a head refused before it was routed ("refused"), counted on the
    frontend only, as haproxy counts what its h1 mux refuses before any backend is chosen
    (req_tot, the status, ereq; its bytes in were counted as they came). Each is logged as
    haproxy logs them (<NOSRV>, <BADREQ>, <STATS>, <PROMEX>)."""
    fe = st.fe.counters
    be = st.be.counters if st.be is not None else None
    status, lg = st.status, st.fe.logger
    if st.local == "refused":
        fe.req_tot += 1
        fe.bout += st.head_out
        if status:
            fe.count_status(status)
        record_termination(st.term, fe, None, None)
        if lg is not None:
            lg.refused(st.s, st.term, status, st.head_out, st.head_in, st.first)
        return
    for c in (fe, be):
        if c is None:
            continue
        c.bin += st.head_in
        c.bout += st.head_out
        if status:
            c.count_status(status)
    rule = st.answer
    if rule is not None:
        record_local(st.term, rule.counter, fe, be)
    else:
        record_termination(st.term, fe, None, None)
    if lg is not None:
        service = getattr(rule, "service", "")
        server = ("<PROMEX>" if service == "prometheus-exporter" else "<STATS>") if service else NOSRV
        lg.local(st.s, st.req, st.raw, st.term, status, st.head_out, st.head_in,
                 st.be.name if st.be is not None else "", server, st.first)


def record_termination(t: Termination, fe, be, srv) -> None:
    """Count a stream's termination state: in `terms` on each of the frontend, backend and
    server counters given (None: not involved), and the error counters it implies
    (http/termination.py counted()): ereq on the frontend, the others on the backend and
    server, as in haproxy's stats columns."""
    info = _TERM_INFO.get(t)
    if info is None:
        names = counted(t)
        info = _TERM_INFO[t] = (str(t), tuple(n for n in names if n == "ereq"),
                                tuple(n for n in names if n != "ereq"))
    code, on_fe, on_be = info
    for c in (fe, be, srv):
        if c is None:
            continue
        terms = c.terms
        terms[code] = terms.get(code, 0) + 1
        for n in (on_fe if c is fe else on_be):
            setattr(c, n, getattr(c, n) + 1)


def record_local(t: Termination, counter: str, fe, be, srv=None) -> None:
    """Count a stream answered by a rule: its termination state in `terms` of the frontend
    and, when involved, of the backend and the server, and `counter` on each (actions.LocalRule
    counter: "dreq" for an http-request deny, "intercepted" for its return or redirect,
    "dresp" for an http-response deny, "" for none). A deny ("PR", "PH") is not a request or
    response error: haproxy counts it in dreq / dresp, not in ereq / eresp."""
    code = str(t)
    for c in (fe, be, srv):
        if c is None:
            continue
        c.terms[code] = c.terms.get(code, 0) + 1
        if counter:
            setattr(c, counter, getattr(c, counter) + 1)


_TERM_INFO: dict[Termination, tuple[str, tuple, tuple]] = {}
"""record_termination()'s memo: (two letters, frontend counters, backend/server counters)."""
