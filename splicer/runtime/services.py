"""Serving the worker's own services: the stats page (HTML, `;csv`, admin actions) and the
Prometheus exporter, for requests that a ServiceRule answered (http/service.py).

Rule: this module does the I/O of a service (reading a small form body, gathering the
counters of every worker through the master, sending the answer); what to answer is
decided by http/service.py and drawn by splicer/report/. It never blocks the loop: the
counters come from `await proxy.cluster_stats()` (the master asks every worker), and an
admin action runs `await proxy.cluster_command("set server B/S state X")` on every worker.

Theory of operation (haproxy's stats applet and promex): a GET of the stats URI gets the
page (or the CSV with `;csv`), behind `stats auth` when set (401 with the realm
otherwise); a POST from the page's admin form, when `stats admin` grants the level, runs
the actions and answers 303 to `<uri>;st=<outcome>`, as haproxy does, so a reload of the
page never repeats them. The stream is counted as haproxy counts an applet's: intercepted
on the frontend (and the backend that answered), its status in hrsp_*, its bytes.
"""
from __future__ import annotations

import logging

from splicer import __version__
from splicer.http import actions, errorpages
from splicer.http.chunked import MAX_LINE as CHUNK_LINE_MAX
from splicer.http.chunked import ChunkedReader, Need
from splicer.http.framing import BodyKind, FramingError
from splicer.http.service import ServiceRule, admin_commands, authorized, page_options
from splicer.report import html, prometheus
from splicer.report.csv import render_csv
from splicer.runtime import io
from splicer.runtime.status import proxy_ids
from splicer.stats import merge_stats

log = logging.getLogger("splicer")

FORM_MAX = 16384
"""Largest admin form body read, bytes (haproxy: the request must fit in a buffer)."""


async def cluster_stats(proxy) -> dict:
    """Every worker's counters summed (Proxy.cluster_stats()), or this worker's own when
    the master does not answer (logged): the page is never refused for it."""
    try:
        return await proxy.cluster_stats()
    except Exception as exc:  # the master is gone or slow: show what this worker knows
        log.warning("stats: the counters of the other workers are missing (%s)", exc or type(exc).__name__)
        return merge_stats([proxy.stats()])


def response(status: int, fields: list[tuple[bytes, bytes]], body: bytes, keep: bool,
             head_only: bool = False) -> bytes:
    """A whole HTTP/1.1 response with its Content-Length (and `Connection: close` unless
    `keep`); `head_only`: the answer to a HEAD, without the body (RFC 9110 section 9.3.2)."""
    lines = [b"HTTP/1.1 %d %s" % (status, errorpages.reason_of(status)), b"content-length: %d" % len(body),
             *(n + b": " + v for n, v in fields)]
    if not keep:
        lines.append(b"connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + (b"" if head_only else body)


async def _read_body(session, length: int) -> bytes | None:
    """The request body of `length` bytes (None when the client did not send it in time)."""
    buf = bytearray(length)
    view = memoryview(buf)
    got = 0
    try:
        while got < length:
            n = await io.recv_into(session.loop, session.sock, view[got:], session.t_client or 10.0)
            if n == 0:
                return None
            got += n
    except (OSError, TimeoutError):
        return None
    return bytes(buf)


async def _read_chunked(session, limit: int) -> bytes | None:
    """A chunked request body (RFC 9112 section 7.1), de-chunked, read to its end (trailer
    section included) with http.chunked.ChunkedReader, each read within timeout client.

    Returns:
        The data, or None when it exceeds `limit` bytes (the rest is left unread).

    Raises:
        FramingError: bad chunked syntax; ValueError: a line longer than chunked.MAX_LINE;
        OSError, TimeoutError: the client failed or went silent (as io.recv_line);
        ConnectionError (an OSError): it closed before the end.
    """
    reader = ChunkedReader()
    out = bytearray()
    timeout = session.t_client or 10.0
    while reader.need is not Need.DONE:
        if reader.need is Need.DATA:
            if len(out) + reader.data_left > limit:
                return None
            part = await _read_body(session, reader.data_left)
            if part is None:
                raise ConnectionError("the client closed inside a chunk")
            out += part
            reader.data_done(len(part))
            continue
        line = await io.recv_line(session.loop, session.sock, CHUNK_LINE_MAX, timeout, whole=True)
        if not line.endswith(b"\n"):
            raise ConnectionError("the client closed inside the chunked body")
        reader.feed_line(line)
    return bytes(out)


async def answer(session, req, raw: bytes, rule: ServiceRule, be) -> tuple[int, int, int, bool]:
    """Answer one request with the service of `rule` (the stream machine's Serve job,
    runtime/stream.py): read the request's body, make the page, send it. The stream counts
    and logs it (runtime/accounting.py: haproxy's "intercepted", and "<STATS>" or "<PROMEX>"
    as the log's server).

    Args:
        session: the HttpSession; req: the parsed request (h1.parse_request); raw: its head.
        rule: the ServiceRule that applied.
        be: the runtime Backend whose rules answered (None: the frontend's).

    Returns:
        (status, bytes sent, bytes received (the head and the body read), keep): `status`
        0 when nothing was answered (a broken or missing body), `keep` True when the
        connection stays open for another request.
    """
    proxy = session.fe.proxy
    method = raw.lstrip(b"\r\n").partition(b" ")[0]
    keep = req.keep_alive and req.upgrade is None
    fr = req.framing
    body = b""
    if fr.kind is BodyKind.LENGTH and fr.length > FORM_MAX:
        keep = False  # not read: the session closes in stages (its drain)
        body = None
    elif fr.kind is BodyKind.CHUNKED:
        try:
            body = await _read_chunked(session, FORM_MAX)
        except (FramingError, OSError, TimeoutError, ValueError):
            return 0, 0, len(raw), False  # a broken or missing body: nothing to answer it with, closed
        if body is None:
            keep = False  # too large (left unread: the session closes in stages)
    elif fr.kind is BodyKind.LENGTH and fr.length:
        body = await _read_body(session, fr.length)
        if body is None:
            return 0, 0, len(raw), False
    received = len(raw) + len(body or b"")
    head_only = method == b"HEAD"
    if rule.service == "prometheus-exporter":
        text = prometheus.render_metrics(await cluster_stats(proxy))
        data = response(200, [(b"content-type", prometheus.CONTENT_TYPE.encode()),
                              (b"cache-control", b"no-cache")], text, keep, head_only)
    else:
        data = await _stats(session, req, method, body, rule, keep, head_only)
    status = int(data[9:12])
    try:
        await io.send_all(session.loop, session.sock, data, session.t_client)
    except (OSError, TimeoutError):
        return status, 0, received, False
    return status, len(data), received, keep


async def _stats(session, req, method: bytes, body: bytes | None, rule: ServiceRule, keep: bool,
                 head_only: bool) -> bytes:
    st = rule.stats
    uri = st.uri.decode("latin-1")
    if not authorized(st, req.headers):
        page = errorpages.error_response(401, actions.AUTH_TEXT).partition(b"\r\n\r\n")[2]
        return response(401, [(b"content-type", b"text/html"), (b"cache-control", b"no-cache"),
                              (b"www-authenticate", actions.challenge(st.realm))], page, keep, head_only)
    view = session.view
    admin = view is not None and any(a.cond(view) for a in st.admin)
    if method == b"POST":
        outcome = await _admin(session.fe.proxy, body, admin)
        return response(303, [(b"location", f"{uri};st={outcome}".encode("latin-1")),
                              (b"cache-control", b"no-cache")], b"", keep, head_only)
    opts = page_options(req.target, st.uri)
    stats = await cluster_stats(session.fe.proxy)
    if opts.csv:
        return response(200, [(b"content-type", b"text/plain"), (b"cache-control", b"no-cache")],
                        render_csv(stats).encode("utf-8"), keep, head_only)
    info = html.PageInfo(uri, 0.0 if opts.norefresh else st.refresh, admin, st.show_legends,
                         __version__ if st.show_version else None, st.show_node, st.show_desc,
                         opts.status, opts.up)
    fields = [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-cache")]
    if info.refresh:
        fields.append((b"refresh", b"%d" % int(info.refresh)))
    return response(200, fields, html.render_page(stats, info).encode("utf-8"), keep, head_only)


def one_line(text: str) -> str:
    """`text` (a runtime API answer, one per worker, each of several lines) as one log
    line: its non-empty lines joined with " | ", other control characters escaped as
    \\xNN (one record is one line, as haproxy's logs)."""
    parts = [p.strip() for p in text.splitlines()]
    joined = " | ".join(p for p in parts if p)
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in joined)


async def _admin(proxy, body: bytes | None, admin: bool) -> str:
    """Run an admin form's actions on every worker; haproxy's outcome word."""
    if not admin:
        return "DENY"
    if body is None:
        return "EXCD"
    ids = proxy_ids(proxy)
    commands, outcome = admin_commands(body, {ids[name]: name for name in proxy.backends})
    if outcome:
        return outcome
    failed = 0
    for line in commands:
        try:
            text = await proxy.cluster_command(line)
        except Exception as exc:
            log.warning("stats admin: %r failed: %s", line, one_line(str(exc) or type(exc).__name__))
            failed += 1
            continue
        if text.strip():  # the runtime API answers nothing when a `set server` applies
            log.warning("stats admin: %r: %s", line, one_line(text))
            failed += 1
    if failed == 0:
        return "DONE"
    return "PART" if failed < len(commands) else "ERRP"
