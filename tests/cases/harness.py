"""Raw-byte case harness: each Case runs through the real `splicer` process in front of a
scripted, recording origin, and the checks compare exactly what the client and the origin got.

Pieces:
  - Case: the client bytes (or a list of steps: writes, pauses, awaits, half-close), the origin
    script (one entry per request received, or a callable), and the expectations.
  - RecordingOrigin: one listening socket shared by every case; `begin(script)` switches the
    script, clears the log and cuts every connection of the previous case (so a server
    connection splicer pooled earlier is never answered with an old script). It records the raw
    bytes received on each connection and the requests it parsed from them.
  - run_case(env, case): starts the client, reads what comes back (responses are parsed so the
    read stops as soon as the expected ones are complete), probes the connection when the case
    says it must stay open, checks that a fresh connection is still served, and evaluates the
    expectations (the base one or any of `alternatives`).

Every wait is bounded (case.timeout, socket timeouts); every address is 127.0.0.1.
"""
from __future__ import annotations

import re
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------------------------
# step markers


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


SHUT_WR = _Marker("SHUT_WR")  # client step: half-close (shutdown SHUT_WR)
BODY = _Marker("BODY")        # origin step: read the request body now (default: before step 1)
NOBODY = _Marker("NOBODY")    # origin step: do not read the body before the other steps
CLOSE = _Marker("CLOSE")      # origin step: close the connection (FIN)
RESET = _Marker("RESET")      # origin step: reset the connection (SO_LINGER 0)
ECHO = _Marker("ECHO")        # origin step: echo every received byte until EOF, then close
HOLD = _Marker("HOLD")        # origin step: send nothing more until the case ends
SETTLE = _Marker("SETTLE")    # origin step: wait 100 ms, record bytes that came after the request


@dataclass(frozen=True)
class Await:
    """Client step: read until `pattern` has been received (bounded by `timeout`)."""

    pattern: bytes
    timeout: float = 2.0


PROBE_TARGET = b"/__probe"
PROBE_REQUEST = b"GET /__probe HTTP/1.1\r\nHost: probe.example\r\n\r\n"
PROBE_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nprobe-ok"
DEFAULT_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

SPLICER_ERRORS = frozenset({400, 405, 408, 413, 414, 431, 501, 502, 503, 504, 505})
"""Statuses only splicer generates in these cases (no origin script sends them)."""

_HEAD_END = re.compile(rb"\r?\n\r?\n")


# --------------------------------------------------------------------------------------------
# the case


@dataclass
class Case:
    """One raw-byte case.

    Attributes:
        name: test id.
        client: bytes written at once, or a list of steps: bytes (write), float (pause,
            reading meanwhile), SHUT_WR, Await(pattern).
        origin: None (every request gets DEFAULT_RESPONSE), a list with one entry per request
            received (in arrival order over all connections; requests beyond it get
            DEFAULT_RESPONSE), or a callable(request) -> entry used for every request. An
            entry is bytes, a list of origin steps (bytes, float, BODY, NOBODY, CLOSE, RESET,
            ECHO, HOLD, SETTLE, callable(sock, request)), or a callable(request) -> entry.
        config: which splicer configuration (conftest.CONFIGS) serves the case.
        methods: request methods of the final responses in order (only HEAD matters to the
            response parser); default GET for all.
        client_status: statuses received in order, 1xx included; an element may be a set of
            accepted statuses.
        client_bodies: bodies of the final responses in order (de-chunked).
        client_bytes: exact bytes received (before any probe), or a predicate on them.
        client_check: predicate on the ClientResult.
        client_closed: True: the proxy closed the connection; False: it stays open and a probe
            request on it is answered correctly.
        origin_receives: exact bytes the origin received (all connections, probes removed;
            b"" = nothing at all), or a predicate on the OriginLog.
        within: the proxy closed the connection at most this many seconds after connect.
        allow_incomplete: a response cut short (or bytes that are no response) is expected.
        alternatives: other acceptable expectations, each a dict overriding the fields above
            (a case passes when the base expectation or any alternative holds).
        timeout: bound on the whole exchange, seconds.
        rcvbuf: client SO_RCVBUF.
        xfail: reason, when the case fails against splicer today (strict xfail).
        ref: where the rule comes from.
    """

    name: str
    client: Any
    origin: Any = None
    config: str = "default"
    methods: list[bytes] | None = None
    client_status: list | None = None
    client_bodies: list[bytes] | None = None
    client_bytes: Any = None
    client_check: Callable | None = None
    client_closed: bool | None = None
    origin_receives: Any = None
    within: float | None = None
    allow_incomplete: bool = False
    alternatives: list[dict] = field(default_factory=list)
    timeout: float = 3.0
    rcvbuf: int | None = None
    xfail: str | None = None
    ref: str = ""


EXPECT_FIELDS = ("client_status", "client_bodies", "client_bytes", "client_check", "client_closed",
                 "origin_receives", "within", "allow_incomplete")


def params(cases: list[Case]):
    """pytest parameters for a case table, with strict xfail marks where a case has `xfail`."""
    import pytest
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate case names: {dup}"
    return [pytest.param(c, id=c.name,
                         marks=[pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else [])
            for c in cases]


# --------------------------------------------------------------------------------------------
# the recording origin


def _tokens(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    out = []
    for n, v in headers:
        if n.lower() == name:
            out += [t.strip().lower() for t in v.split(b",") if t.strip()]
    return out


@dataclass
class OriginRequest:
    """A request as the origin parsed it."""

    conn: int
    head: bytes
    method: bytes
    target: bytes
    version: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""       # de-chunked
    raw_body: bytes = b""   # as received
    complete: bool = False  # the whole body arrived (per its own framing)
    probe: bool = False
    early: bytes | None = None  # SETTLE: bytes beyond this request received before answering

    def values(self, name: bytes) -> list[bytes]:
        return [v for n, v in self.headers if n.lower() == name.lower()]


@dataclass
class OriginConn:
    index: int
    raw: bytearray = field(default_factory=bytearray)
    requests: list[OriginRequest] = field(default_factory=list)
    eof: bool = False  # the proxy closed (or reset) this connection
    probe_spans: list[tuple[int, int]] = field(default_factory=list)

    def case_raw(self) -> bytes:
        out, pos = bytearray(), 0
        for a, b in self.probe_spans:
            out += self.raw[pos:a]
            pos = b
        out += self.raw[pos:]
        return bytes(out)


@dataclass
class OriginLog:
    conns: list[OriginConn] = field(default_factory=list)

    @property
    def requests(self) -> list[OriginRequest]:
        return [r for c in self.conns for r in c.requests if not r.probe]

    @property
    def raw(self) -> bytes:
        return b"".join(c.case_raw() for c in self.conns)

    @property
    def case_conns(self) -> list[OriginConn]:
        """Connections that carried case bytes (not only probes)."""
        return [c for c in self.conns if c.case_raw()]


class _Reader:
    def __init__(self, sock: socket.socket, rec: OriginConn) -> None:
        self.sock, self.rec = sock, rec
        self.buf = bytearray()
        self.pos = 0  # bytes consumed since the connection started

    def fill(self) -> bool:
        try:
            data = self.sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            data = b""
        if not data:
            self.rec.eof = True
            return False
        self.rec.raw += data
        self.buf += data
        return True

    def drain_nonblocking(self) -> None:
        self.sock.setblocking(False)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    self.rec.eof = True
                    break
                self.rec.raw += data
                self.buf += data
        except (BlockingIOError, InterruptedError, ConnectionResetError):
            pass
        finally:
            self.sock.settimeout(10)

    def take(self, n: int) -> bytes:
        out = bytes(self.buf[:n])
        del self.buf[:n]
        self.pos += n
        return out

    def head(self) -> bytes | None:
        while True:
            m = _HEAD_END.search(self.buf)
            if m:
                return self.take(m.end())
            if len(self.buf) > (4 << 20) or not self.fill():
                return None

    def line(self) -> bytes | None:
        while b"\n" not in self.buf:
            if len(self.buf) > (1 << 20) or not self.fill():
                return None
        return self.take(self.buf.index(b"\n") + 1)

    def exact(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            if not self.fill():
                return None
        return self.take(n)


def _parse_request_head(head: bytes, conn: int) -> OriginRequest:
    lines = re.split(rb"\r?\n", head)
    parts = lines[0].split(b" ")
    method, target = (parts + [b"", b""])[:2]
    version = parts[2] if len(parts) > 2 else b""
    headers = []
    for ln in lines[1:]:
        if not ln:
            continue
        n, _, v = ln.partition(b":")
        headers.append((n, v.strip(b" \t")))
    return OriginRequest(conn, head, method, target, version, headers)


def _read_body(rd: _Reader, req: OriginRequest) -> bool:
    """Read the request body per its framing; False when the connection cannot go on."""
    te = _tokens(req.headers, b"transfer-encoding")
    if te:
        if te[-1] != b"chunked":
            return False
        raw, body = bytearray(), bytearray()
        while True:
            line = rd.line()
            if line is None:
                req.raw_body = bytes(raw)
                return False
            raw += line
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                req.raw_body = bytes(raw)
                return False
            if size == 0:
                while True:
                    t = rd.line()
                    if t is None:
                        req.raw_body = bytes(raw)
                        return False
                    raw += t
                    if t in (b"\r\n", b"\n"):
                        break
                break
            data = rd.exact(size + 2)
            if data is None:
                raw += rd.buf
                req.raw_body = bytes(raw)
                return False
            raw += data
            body += data[:size]
        req.raw_body, req.body, req.complete = bytes(raw), bytes(body), True
        return True
    cls = [v.strip() for n, v in req.headers if n.lower() == b"content-length" for v in v.split(b",")]
    if cls:
        if any(v != cls[0] for v in cls) or not cls[0].isdigit():
            return False
        n = int(cls[0])
        data = rd.exact(n)
        if data is None:
            req.raw_body = req.body = bytes(rd.buf)
            return False
        req.raw_body = req.body = data
    req.complete = True
    return True


class RecordingOrigin:
    """The scripted origin every case talks to (see the module docstring)."""

    def __init__(self) -> None:
        self.lsock = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.port = self.lsock.getsockname()[1]
        self._lock = threading.Lock()
        self._gen = 0
        self._script: Any = None
        self._next = 0
        self._socks: set[socket.socket] = set()
        self._hold = threading.Event()
        self.log = OriginLog()
        threading.Thread(target=self._accept, daemon=True).start()

    def begin(self, script: Any) -> None:
        """Start a new case: new script, empty log, previous connections cut."""
        with self._lock:
            self._gen += 1
            self._script = script
            self._next = 0
            self.log = OriginLog()
            old, self._socks = self._socks, set()
            self._hold.set()
            self._hold = threading.Event()
        for s in old:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.begin(None)
        self.lsock.close()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            with self._lock:
                gen, hold = self._gen, self._hold
                rec = OriginConn(len(self.log.conns))
                self.log.conns.append(rec)
                self._socks.add(c)
            threading.Thread(target=self._serve, args=(c, gen, rec, hold), daemon=True).start()

    def _entry(self, req: OriginRequest, gen: int):
        with self._lock:
            if gen != self._gen:
                return None
            i = self._next
            self._next += 1
            script = self._script
        if script is None:
            entry = DEFAULT_RESPONSE
        elif callable(script):
            entry = script(req)
        else:
            entry = script[i] if i < len(script) else DEFAULT_RESPONSE
        if callable(entry):
            entry = entry(req)
        return [entry] if isinstance(entry, (bytes, bytearray)) else list(entry)

    def _serve(self, c: socket.socket, gen: int, rec: OriginConn, hold: threading.Event) -> None:
        c.settimeout(10)
        rd = _Reader(c, rec)
        try:
            while True:
                start = rd.pos
                head = rd.head()
                if head is None:
                    return
                req = _parse_request_head(head, rec.index)
                if req.target == PROBE_TARGET:
                    req.probe = True
                    rec.requests.append(req)
                    if not _read_body(rd, req):
                        return
                    rec.probe_spans.append((start, rd.pos))
                    c.sendall(PROBE_RESPONSE)
                    continue
                rec.requests.append(req)
                steps = self._entry(req, gen)
                if steps is None:
                    return
                if BODY not in steps and NOBODY not in steps and not _read_body(rd, req):
                    return
                for step in steps:
                    if isinstance(step, (bytes, bytearray)):
                        c.sendall(step)
                    elif isinstance(step, (int, float)):
                        time.sleep(step)
                    elif step is BODY:
                        if not _read_body(rd, req):
                            return
                    elif step is NOBODY:
                        pass
                    elif step is SETTLE:
                        time.sleep(0.1)
                        rd.drain_nonblocking()
                        req.early = bytes(rd.buf)
                    elif step is CLOSE:
                        c.shutdown(socket.SHUT_WR)
                        rd.drain_nonblocking()  # unread bytes would turn the close into a reset
                        return
                    elif step is RESET:
                        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        return
                    elif step is ECHO:
                        if rd.buf:
                            c.sendall(rd.take(len(rd.buf)))
                        while rd.fill():
                            c.sendall(rd.take(len(rd.buf)))
                        c.shutdown(socket.SHUT_WR)
                        return
                    elif step is HOLD:
                        hold.wait(10)
                        return
                    elif callable(step):
                        if step(c, req) is False:
                            return
                    else:
                        raise TypeError(f"unknown origin step {step!r}")
        except OSError:
            pass
        finally:
            with self._lock:
                self._socks.discard(c)
            try:
                c.close()
            except OSError:
                pass


# --------------------------------------------------------------------------------------------
# the client side


@dataclass
class Response:
    status: int
    head: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""
    complete: bool = True

    @property
    def interim(self) -> bool:
        return 100 <= self.status < 200 and self.status != 101

    def values(self, name: bytes) -> list[bytes]:
        return [v for n, v in self.headers if n.lower() == name.lower()]


_STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3})(?: [^\r\n]*)?\r\n")


def _parse_chunked(data: bytes, pos: int) -> tuple[bytes, int] | None:
    body = bytearray()
    while True:
        nl = data.find(b"\r\n", pos)
        if nl < 0:
            return None
        try:
            size = int(data[pos:nl].split(b";")[0], 16)
        except ValueError:
            raise ValueError("bad chunk size line") from None
        pos = nl + 2
        if size == 0:
            while True:
                nl = data.find(b"\r\n", pos)
                if nl < 0:
                    return None
                line, pos = data[pos:nl], nl + 2
                if not line:
                    return bytes(body), pos
        if len(data) < pos + size + 2:
            return None
        body += data[pos:pos + size]
        if data[pos + size:pos + size + 2] != b"\r\n":
            raise ValueError("chunk data not followed by CRLF")
        pos += size + 2


def parse_responses(data: bytes, methods: list[bytes] | None, eof: bool) -> tuple[list[Response], bytes, bool]:
    """Responses in `data`: (responses, garbage, clean). `garbage` holds bytes that are no
    response; `clean` is True when the data ends exactly at a message boundary (or in a tunnel
    after a 101, where everything else is tunnel data)."""
    out: list[Response] = []
    pos, finals = 0, 0
    while pos < len(data):
        m = _HEAD_END.search(data, pos)
        if not m:
            rest = data[pos:]
            plausible = rest[:7] == b"HTTP/1."[:len(rest[:7])]
            if eof or not plausible:
                return out, rest, False  # bytes that are no (start of a) response
            return out, b"", False
        head = data[pos:m.end()]
        sm = _STATUS_LINE.match(head)
        if sm is None:
            return out, data[pos:], False
        status = int(sm.group(1))
        headers = []
        for ln in re.split(rb"\r?\n", head[sm.end():]):
            if ln:
                n, _, v = ln.partition(b":")
                headers.append((n, v.strip(b" \t")))
        r = Response(status, head, headers)
        out.append(r)
        pos = m.end()
        if r.interim:
            continue
        if status == 101:
            r.body = data[pos:]
            return out, b"", True
        method = methods[finals] if methods and finals < len(methods) else b"GET"
        finals += 1
        te = _tokens(headers, b"transfer-encoding")
        cl = r.values(b"content-length")
        if method == b"HEAD" or status in (204, 304):
            continue
        if te and te[-1] == b"chunked":
            try:
                got = _parse_chunked(data, pos)
            except ValueError:
                r.complete = False
                return out, data[pos:], False
            if got is None:
                r.complete, r.body = False, data[pos:]
                return out, b"", False
            r.body, pos = got
        elif cl and not te:
            try:
                n = int(cl[0])
            except ValueError:
                r.complete = False
                return out, data[pos:], False
            r.body = data[pos:pos + n]
            if len(r.body) < n:
                r.complete = False
                return out, b"", False
            pos += n
        else:
            r.body = data[pos:]
            r.complete = eof
            return out, b"", eof
    return out, b"", True


@dataclass
class ClientResult:
    data: bytes                 # everything received before the probe request
    closed: bool                # EOF or reset seen
    reset: bool
    elapsed: float              # seconds from connect to EOF (or to the end of reading)
    send_error: str | None
    responses: list[Response]
    garbage: bytes
    clean: bool
    probe: str | None = "not sent"  # None: the probe on this connection was answered correctly

    @property
    def statuses(self) -> list[int]:
        return [r.status for r in self.responses]

    @property
    def finals(self) -> list[Response]:
        return [r for r in self.responses if not r.interim]


class _Client:
    def __init__(self, port: int, rcvbuf: int | None) -> None:
        self.s = socket.socket()
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(2)
        self.s.connect(("127.0.0.1", port))
        self.s.setblocking(False)
        self.data = bytearray()
        self.eof = False
        self.reset = False
        self.t_eof: float | None = None
        self.send_error: str | None = None

    def _recv(self) -> None:
        try:
            chunk = self.s.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk, self.reset = b"", True
        if chunk:
            self.data += chunk
        else:
            self.eof = True
            self.t_eof = time.monotonic()

    def pump(self, until: float, stop: Callable[[], bool] | None = None) -> None:
        """Read until `until` (monotonic), EOF, or `stop()`."""
        while not self.eof:
            if stop is not None and stop():
                return
            left = until - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select([self.s], [], [], min(left, 0.5))
            if r:
                self._recv()

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view and not self.eof and self.send_error is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self.send_error = "send timed out"
                return
            r, w, _ = select.select([self.s], [self.s], [], min(left, 0.5))
            if r:
                self._recv()
            if w and not self.eof:
                try:
                    n = self.s.send(view[:65536])
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as exc:
                    self.send_error = f"send failed: {exc!r}"
                    return
                view = view[n:]
        if view and self.send_error is None:
            self.send_error = "peer closed before the whole request was sent"

    def close(self) -> None:
        try:
            self.s.close()
        except OSError:
            pass


def _expected_finals(case: Case) -> int | None:
    counts = []
    for exp in _expectations(case):
        st = exp.get("client_status")
        if st is not None:
            counts.append(sum(1 for x in st if not _is_interim(x)))
        elif exp.get("client_bodies") is not None:
            counts.append(len(exp["client_bodies"]))
    return max(counts) if counts else None


def _is_interim(x) -> bool:
    vals = x if isinstance(x, (set, frozenset, tuple, list)) else (x,)
    return all(100 <= v < 200 and v != 101 for v in vals)


def _wants_close(r: Response) -> bool:
    return r.status in SPLICER_ERRORS or any(b"close" in v.lower() for v in r.values(b"connection"))


def run_client(port: int, case: Case) -> tuple[ClientResult, _Client]:
    cl = _Client(port, case.rcvbuf)
    t0 = time.monotonic()
    deadline = t0 + case.timeout
    steps = case.client if isinstance(case.client, list) else [case.client]
    for step in steps:
        if cl.eof or time.monotonic() >= deadline:
            break
        if isinstance(step, (bytes, bytearray)):
            cl.send(bytes(step), deadline)
            if cl.send_error:
                break
        elif isinstance(step, (int, float)):
            cl.pump(min(deadline, time.monotonic() + step))
        elif step is SHUT_WR:
            try:
                cl.s.shutdown(socket.SHUT_WR)
            except OSError as exc:
                cl.send_error = f"shutdown failed: {exc!r}"
        elif isinstance(step, Await):
            pat = step.pattern
            cl.pump(min(deadline, time.monotonic() + step.timeout), lambda pat=pat: pat in cl.data)
        else:
            raise TypeError(f"unknown client step {step!r}")

    want = _expected_finals(case)
    while not cl.eof and time.monotonic() < deadline:
        resps, garbage, clean = parse_responses(bytes(cl.data), case.methods, False)
        finals = [r for r in resps if not r.interim and r.complete]
        if want is not None and clean and not garbage and len(finals) >= want and resps:
            last = resps[-1]
            if _wants_close(last) or all(e["client_closed"] is True for e in _expectations(case)):
                cl.pump(deadline)
                break
            if last.status == 101:
                break
            # a short settle for stray bytes; later ones would still show in the probe's answer
            before = len(cl.data)
            cl.pump(time.monotonic() + 0.02, lambda before=before: len(cl.data) > before)
            if len(cl.data) == before:
                break
            continue
        before = len(cl.data)
        cl.pump(deadline, lambda before=before: len(cl.data) > before)

    data = bytes(cl.data)
    resps, garbage, clean = parse_responses(data, case.methods, cl.eof)
    end = cl.t_eof if cl.t_eof is not None else time.monotonic()
    res = ClientResult(data, cl.eof, cl.reset, end - t0, cl.send_error, resps, garbage, clean)
    return res, cl


def probe_same_connection(cl: _Client, res: ClientResult) -> None:
    """Send a probe request on the connection; res.probe = None when it is answered correctly."""
    if cl.eof:
        res.probe = "connection already closed"
        return
    start = len(cl.data)
    cl.send(PROBE_REQUEST, time.monotonic() + 2)
    def answered() -> bool:
        r, _, _ = parse_responses(bytes(cl.data[start:]), None, False)
        return bool(r) and r[0].complete
    cl.pump(time.monotonic() + 2, answered)
    cl.pump(time.monotonic() + 0.02)
    got = bytes(cl.data[start:])
    resps, garbage, clean = parse_responses(got, None, cl.eof)
    if (len(resps) == 1 and resps[0].status == 200 and resps[0].body == b"probe-ok"
            and clean and not garbage):
        res.probe = None
    else:
        res.probe = f"probe on the same connection got {got[:300]!r}"


def fresh_probe(port: int, no_server: bool = False) -> str | None:
    """A new connection is served normally (the proxy survived the case); with `no_server`
    (a backend without servers) "normally" means a well-formed 503."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            s.sendall(PROBE_REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
    except OSError as exc:
        return f"fresh connection failed: {exc!r}"
    if no_server:
        resps, garbage, _ = parse_responses(got, None, True)
        if [r.status for r in resps] != [503] or garbage or not resps[0].complete:
            return f"fresh connection got {got[:300]!r}"
        return None
    if not (got.startswith(b"HTTP/1.1 200 ") and got.endswith(b"\r\n\r\nprobe-ok")):
        return f"fresh connection got {got[:300]!r}"
    return None


# --------------------------------------------------------------------------------------------
# evaluation


def _expectations(case: Case) -> list[dict]:
    base = {f: getattr(case, f) for f in EXPECT_FIELDS}
    return [base] + [dict(base, **alt) for alt in case.alternatives]


def _status_match(expected: list, got: list[int]) -> bool:
    if len(expected) != len(got):
        return False
    for e, g in zip(expected, got):
        if isinstance(e, (set, frozenset, tuple, list)):
            if g not in e:
                return False
        elif e != g:
            return False
    return True


def _pred(fn, arg) -> str | None:
    try:
        ok = fn(arg)
    except AssertionError as exc:
        return f"{getattr(fn, '__name__', 'predicate')}: {exc}"
    if ok is False:
        return f"{getattr(fn, '__name__', 'predicate')} is false"
    return None


def check_expectation(exp: dict, res: ClientResult, olog: OriginLog) -> list[str]:
    errs = []
    if exp["client_status"] is not None and not _status_match(exp["client_status"], res.statuses):
        errs.append(f"client statuses {res.statuses}, expected {exp['client_status']}")
    if exp["client_bodies"] is not None:
        bodies = [r.body for r in res.finals]
        if bodies != exp["client_bodies"]:
            errs.append(f"client bodies {[b[:80] for b in bodies]}, expected {exp['client_bodies']}")
    cb = exp["client_bytes"]
    if cb is not None:
        if isinstance(cb, (bytes, bytearray)):
            if res.data != cb:
                errs.append(f"client bytes differ: got {res.data[:600]!r}")
        elif (e := _pred(cb, res.data)) is not None:
            errs.append("client bytes: " + e)
    if exp["client_check"] is not None and (e := _pred(exp["client_check"], res)) is not None:
        errs.append("client: " + e)
    if exp["client_closed"] is True and not res.closed:
        errs.append("client connection not closed by the proxy")
    if exp["client_closed"] is False:
        if res.closed:
            errs.append("client connection closed by the proxy")
        elif res.probe is not None:
            errs.append(res.probe)
    if not exp["allow_incomplete"]:
        if res.garbage:
            errs.append(f"client received bytes that are no response: {res.garbage[:200]!r}")
        bad = [r.status for r in res.responses if not r.complete]
        if bad:
            errs.append(f"incomplete response(s) {bad}")
        elif not res.clean and not res.garbage:
            errs.append("client data ends inside a response head")
    if exp["within"] is not None and not (res.closed and res.elapsed <= exp["within"]):
        errs.append(f"closed={res.closed} after {res.elapsed:.2f}s, expected within {exp['within']}s")
    orc = exp["origin_receives"]
    if orc is not None:
        if isinstance(orc, (bytes, bytearray)):
            if olog.raw != orc:
                errs.append(f"origin received {olog.raw[:800]!r}")
        elif (e := _pred(orc, olog)) is not None:
            errs.append("origin: " + e)
    return errs


def generic_errors(res: ClientResult) -> list[str]:
    """Checks that hold in every case: splicer's error responses are well-formed and final."""
    errs = []
    for i, r in enumerate(res.responses):
        if r.status not in SPLICER_ERRORS:
            continue
        cl = r.values(b"content-length")
        if len(cl) != 1 or not cl[0].isdigit() or int(cl[0]) != len(r.body) or not r.complete:
            errs.append(f"error {r.status}: Content-Length {cl} but body of {len(r.body)} bytes")
        if not any(v.strip().lower() == b"close" for v in r.values(b"connection")):
            errs.append(f"error {r.status} without 'connection: close'")
        if i != len(res.responses) - 1:
            errs.append(f"error {r.status} followed by more responses")
        elif not res.closed:
            errs.append(f"connection not closed after error {r.status}")
    return errs


def run_case(env, case: Case) -> None:
    """Run `case` against env.splicer(case.config) and env.origin; assert its expectations."""
    sp = env.splicer(case.config)
    origin = env.origin
    log_start = len(sp.log())
    origin.begin(case.origin)
    res, cl = run_client(sp.port, case)
    try:
        if not res.closed and any(e["client_closed"] is False for e in _expectations(case)):
            probe_same_connection(cl, res)
    finally:
        cl.close()
    time.sleep(0.03)  # let the last forwarded bytes reach the origin
    olog = origin.log
    outcomes = [check_expectation(e, res, olog) for e in _expectations(case)]
    errs = generic_errors(res)
    if all(outcomes):
        errs += outcomes[0] if len(outcomes) == 1 else [
            f"alternative {i}: {'; '.join(o)}" for i, o in enumerate(outcomes)]
    if (e := fresh_probe(sp.port, case.config in getattr(env, "no_server", ()))) is not None:
        errs.append(e)
    if sp.proc.poll() is not None:
        errs.append(f"splicer exited with {sp.proc.returncode}")
    new_log = sp.log()[log_start:]
    if "Traceback" in new_log:
        errs.append("splicer logged a traceback:\n" + new_log[-2000:])
    if errs:
        raise AssertionError(
            f"case {case.name}: " + "\n  ".join(errs)
            + f"\n  client got ({'closed' if res.closed else 'open'}, {res.elapsed:.2f}s"
            + (f", {res.send_error}" if res.send_error else "") + f"): {res.data[:1000]!r}"
            + f"\n  origin got: {olog.raw[:1000]!r}")


# --------------------------------------------------------------------------------------------
# request / response builders and origin predicates used by the tables

H = b"Host: example.com\r\n"
XFF = b"X-Forwarded-For: 127.0.0.1\r\n"


def response(body: bytes = b"ok", status: bytes = b"200 OK", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 " + status + b"\r\n" + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


def requests_are(*targets: bytes, complete: bool = True):
    """The origin parsed exactly these request targets, in order, each with a complete body."""
    def requests_are(log: OriginLog) -> bool:
        got = [r.target for r in log.requests]
        assert got == list(targets), f"origin requests {got}, expected {list(targets)}"
        if complete:
            assert all(r.complete for r in log.requests), "a request body was incomplete"
        return True
    return requests_are
