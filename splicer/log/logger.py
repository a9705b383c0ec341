"""The access logger of a frontend: records queued, rendered and sent in batches.

Rule: logging never blocks the worker and never delays a stream. A finished stream adds a
frozen LogRecord (record.py) to a bounded queue (append only, no formatting), or, for
`option httplog` without captures, the values of its line (collect.httplog_fields: one
pass, no record), rendered with the whole batch's by one % of the repeated template
(collect.HTTPLOG_LINE); a timer FLUSH_DELAY later renders the batch's records (format.py), frames it for each target
(syslog.py) and hands it to the targets (target.py), which write without waiting. A queue
already holding MAX_QUEUE records drops the new one (counted, as a full target's drops).

Theory of operation. One LogHub per worker (Proxy) opens each distinct target once, so a
`log global` target used by several frontends is one socket and one pair of counters;
each frontend with `log` lines gets a Logger with its format, its targets and their
framers. LogHub.stats() is what Proxy.stats() shows under "log".
"""
from __future__ import annotations

import logging
import os
import time

from splicer.log.collect import (HTTPLOG_FIELDS, HTTPLOG_LINE, NOSRV, express_fields, httplog_fields, refused_record,
                                 stream_record)
from splicer.log.format import LogFormat, _date
from splicer.log.record import LogRecord
from splicer.log.syslog import INFO, Framer
from splicer.log.target import Target, open_target

log = logging.getLogger("splicer")

MAX_QUEUE = 10000
"""Records a logger holds before dropping new ones (bounded memory under any load)."""

_MAX_FIELDS = MAX_QUEUE * HTTPLOG_FIELDS
_LINE_NL = HTTPLOG_LINE + "\n"

MAX_NAMES = 4096
"""Servers whose "frontend backend/server" text a logger remembers."""

FLUSH_DELAY = 0.01
"""Seconds between the first record of a batch and its write: under load a batch holds
many lines, written with one syscall per file target."""

OFFSET_SLACK = 0.002
"""Seconds a measure of the wall clock against the loop clock may come later than the last
one before it is taken as the wall clock having moved (LogHub.clock): more than the loop's
usual lag under load, less than a log line's date shows (milliseconds)."""

TAG = "splicer"
"""The syslog tag (haproxy: the program name)."""


class LogHub:
    """Every log target of one worker, opened once each.

    Args:
        loop: the worker's event loop.
    """

    def __init__(self, loop) -> None:
        self.loop = loop
        self.targets: dict[tuple, Target | None] = {}
        self.queue_drops = 0
        self.loggers: list["Logger"] = []
        self.offset = time.time() - loop.time()  # wall clock - loop clock (clock(): once per batch)
        self.dates: dict[float, str] = {}  # loop time -> %tr date at self.offset (Logger.date_of)

    def clock(self) -> None:
        """Measure the wall clock against the loop clock again (once per batch): `offset`
        follows a wall clock set or slewed by NTP. A measure is late by as long as the loop
        took since it last read its clock (never early), so the smallest is kept; one more
        than OFFSET_SLACK later is taken as the clock having moved. A new offset forgets
        the dates remembered at the old one."""
        off = time.time() - self.loop.time()
        if off < self.offset or off - self.offset > OFFSET_SLACK:
            self.offset = off
            self.dates.clear()

    def target(self, model) -> Target | None:
        """The opened Target for `model` (None when it cannot be opened: logged once)."""
        key = (model.kind, model.host, model.port, model.path, model.fd, model.family, model.ring,
               model.octet_count)
        if key not in self.targets:
            try:
                self.targets[key] = open_target(model, self.loop)
            except OSError as exc:
                log.error("log target %s cannot be opened: %s", model.address, exc)
                self.targets[key] = None
        return self.targets[key]

    def logger(self, fmt: LogFormat, targets: tuple, dontlognull: bool) -> "Logger | None":
        """A Logger for a frontend's `log` lines (None: none of them takes traffic logs)."""
        sinks = []
        host = os.uname().nodename
        for m in targets:
            framer = Framer(m.format, m.facility, m.level, m.minlevel, TAG, os.getpid(), host,
                            m.maxlen if (m.explicit_len or m.kind not in ("fd", "file")) else 0)
            t = self.target(m)
            if framer.sends_info and t is not None:
                sinks.append((t, framer))
        if not sinks:
            return None
        lg = Logger(self, fmt, sinks, dontlognull)
        self.loggers.append(lg)
        return lg

    def events(self, targets: tuple) -> "EventLog | None":
        """An EventLog for a backend's `log` lines (None: none can be opened)."""
        host = os.uname().nodename
        sinks = []
        for m in targets:
            t = self.target(m)
            if t is not None:
                sinks.append((t, Framer(m.format, m.facility, m.level, m.minlevel, TAG, os.getpid(), host,
                                        m.maxlen if (m.explicit_len or m.kind not in ("fd", "file")) else 0)))
        if not sinks:
            return None
        ev = EventLog(self, sinks)
        self.loggers.append(ev)
        return ev

    def flush(self) -> None:
        """Write every pending batch now (at stop)."""
        for lg in self.loggers:
            lg.flush()

    def close(self) -> None:
        """Flush, then close the targets."""
        self.flush()
        for t in self.targets.values():
            if t is not None:
                t.close()

    def stats(self) -> dict:
        """{"sent", "dropped" (targets' drops + queue drops), "targets": {address: {"sent", "dropped"}}}."""
        targets = {}
        for t in self.targets.values():
            if t is not None:
                c = targets.setdefault(t.address, {"sent": 0, "dropped": 0})
                c["sent"] += t.sent
                c["dropped"] += t.dropped
        return {"sent": sum(c["sent"] for c in targets.values()),
                "dropped": self.queue_drops + sum(c["dropped"] for c in targets.values()),
                "queue_dropped": self.queue_drops, "targets": targets}


class Logger:
    """A frontend's traffic log: add() records, they are written FLUSH_DELAY later.

    Attributes:
        fmt: the compiled LogFormat; dontlognull: `option dontlognull`.
        needs_dst: records must carry the frontend address (%fi / %fp).
        fast: the format is `option httplog` with no capture (LogFormat.httplog): a stream
            adds its line's values (collect.httplog_fields) to `fields` instead of a
            LogRecord to `queue` (the same line, less work); a record queued after them
            (refused, local, tunnel) first renders them into `queue`, so lines keep the
            order their streams ended in.
    """

    __slots__ = ("hub", "fmt", "sinks", "dontlognull", "needs_dst", "queue", "_timer", "count", "loop", "fast",
                 "fields", "names", "dates")

    def __init__(self, hub: LogHub, fmt: LogFormat, sinks: list[tuple[Target, Framer]], dontlognull: bool) -> None:
        self.hub = hub
        self.fmt = fmt
        self.sinks = sinks
        self.dontlognull = dontlognull
        self.needs_dst = fmt.needs_dst
        self.queue: list = []
        self._timer = None
        self.count = 0  # records taken (the %rt request counter)
        self.loop = hub.loop
        self.fast = fmt.httplog
        self.fields: list = []  # the fast path's queued lines: httplog_fields tuples, concatenated
        self.names: dict = {}  # server -> "frontend backend/server" (collect.httplog_fields)
        self.dates = hub.dates  # loop time -> %tr date (collect.httplog_fields, date_of)

    def next_id(self) -> int:
        """The next value of the %rt request counter."""
        self.count += 1
        return self.count

    def name_of(self, fe, be, srv) -> str:
        """"frontend backend/server" of a stream of frontend `fe` served by `srv` of `be`
        (%ft %b/%s of `option httplog`), remembered in self.names (bounded: cleared past
        MAX_NAMES, as servers come and go with `add server` / `del server`)."""
        if len(self.names) >= MAX_NAMES:
            self.names.clear()
        text = self.names[srv] = f"{fe.name} {be.name}/{srv.model.name}"
        return text

    def date_of(self, start: float) -> str:
        """The %tr date (format._date) of the loop time `start` at the hub's offset,
        remembered in self.dates (the hub's: cleared when the offset changes, or past
        MAX_NAMES entries) for the streams that started in the same millisecond."""
        dates = self.dates
        if len(dates) >= MAX_NAMES:
            dates.clear()
        text = dates[start] = _date(start + self.hub.offset)
        return text

    def stream(self, st) -> None:
        """Log the http Stream `st` that just ended (runtime/stream.py Stream.record)."""
        if self.fast:
            f = self.fields
            if len(f) >= _MAX_FIELDS:
                self.hub.queue_drops += 1
                return
            f += httplog_fields(st, self, self.loop.time())
        else:
            q = self.queue
            if len(q) >= MAX_QUEUE:
                self.hub.queue_drops += 1
                return
            q.append(stream_record(st, self, self.loop.time()))
        if self._timer is None:
            self._timer = self.loop.call_later(FLUSH_DELAY, self.flush)

    def express(self, session, fe, be, srv, c, t_head: float) -> None:
        """Log a request the express lane served whole (collect.express_fields: its credit's
        X_DONE `c`, its head in at loop time `t_head`), as `option httplog` logs its stream;
        the lane takes a frontend with a logger only when its format is that (`fast`)."""
        f = self.fields
        if len(f) >= _MAX_FIELDS:
            self.hub.queue_drops += 1
            return
        f += express_fields(session, fe, be, srv, c, t_head, self, self.loop.time())
        if self._timer is None:
            self._timer = self.loop.call_later(FLUSH_DELAY, self.flush)

    def tunnel(self, record) -> None:
        """Log a tcp-mode connection (collect.tunnel_record); `option dontlognull` skips
        one on which the client sent nothing."""
        if record.U == 0 and self.dontlognull:
            return
        self.add(record)

    def refused(self, session, term, status: int, sent: int, received: int, first: bool | None = None) -> None:
        """Log a request head refused before it was routed (or a connection closed before
        any request); `option dontlognull` skips one on which the client sent nothing.
        `first`: it was the connection's first request (None: none was taken before)."""
        if received == 0 and self.dontlognull:
            return
        self.add(refused_record(session, self, term, status, sent, received, self.loop.time(), first=first))

    def local(self, session, req, raw: bytes, term, status: int, sent: int, received: int, backend: str,
              server: str = NOSRV, first: bool | None = None) -> None:
        """Log a request splicer answered itself (StreamMachine.answer_locally: a rule, a 503
        for want of a backend; with `server` "<STATS>" or "<PROMEX>", a service). `first`:
        it was the connection's first request (None: none was taken before)."""
        self.add(refused_record(session, self, term, status, sent, received, self.loop.time(), req, raw,
                                backend, server, first))

    def add(self, record) -> None:
        """Queue one LogRecord (dropped, and counted, when MAX_QUEUE are waiting), after
        the fast path's lines already waiting (rendered now: the lines keep their order)."""
        q = self.queue
        if len(q) >= MAX_QUEUE:
            self.hub.queue_drops += 1
            return
        if self.fields:
            q.extend(self._block().split("\n")[:-1])
        q.append(record)
        if self._timer is None:
            self._timer = self.hub.loop.call_later(FLUSH_DELAY, self.flush)

    def _block(self) -> str:
        """The fast path's waiting lines, each ending in "\\n" (one % of the repeated
        template, in C), taken from the queue."""
        fields, self.fields = self.fields, []
        try:
            return (_LINE_NL * (len(fields) // HTTPLOG_FIELDS)) % tuple(fields)
        except (TypeError, ValueError):  # a value of the wrong type (a bug): lose its line only
            out = []
            for i in range(0, len(fields), HTTPLOG_FIELDS):
                try:
                    out.append(_LINE_NL % tuple(fields[i:i + HTTPLOG_FIELDS]))
                except (TypeError, ValueError):
                    log.exception("an access log line failed to render")
            return "".join(out)

    def flush(self) -> None:
        """Render and send the queued records."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.queue and not self.fields:
            return
        self.hub.clock()
        now = time.time()
        if not self.queue:  # only the fast path's lines: one block, joined as it is when it can be
            n = len(self.fields) // HTTPLOG_FIELDS
            block = self._block()
            lines = None
            for target, framer in self.sinks:
                if target.joins and not framer.maxlen:
                    target.send_joined(framer.join_block(INFO, block, now), n)
                    continue
                if target.datagrams:  # (the template's lines hold no "\n")
                    target.send_lines(framer.join_block(INFO, block, now), n, framer.maxlen)
                    continue
                if lines is None:
                    lines = block.split("\n")
                    lines.pop()
                self._send(target, framer, lines, now)
            return
        records, self.queue = self.queue, []
        render = self.fmt.render
        lines = []
        for r in records:
            try:
                lines.append(render(r) if type(r) is LogRecord else r)
            except Exception:  # a bug in a format: log it, never lose the batch
                log.exception("log-format failed on a record")
        if self.fields:
            lines.extend(self._block().split("\n")[:-1])
        for target, framer in self.sinks:
            self._send(target, framer, lines, now)

    @staticmethod
    def _send(target: Target, framer: Framer, lines: list[str], now: float) -> None:
        if target.joins and framer.fits(INFO, lines, now):  # (no line to cut: one encode)
            target.send_joined(framer.join(INFO, lines, now), len(lines))
            return
        if target.datagrams:
            data = framer.join(INFO, lines, now)
            if data.count(b"\n") == len(lines):  # (no line holds a "\n" of its own)
                target.send_lines(data, len(lines), framer.maxlen)
                return
        target.send(framer.frames(INFO, lines, now))


class EventLog:
    """A backend's log of events (server state changes, health checks with `option
    log-health-checks`): text lines at a severity each, batched as traffic lines are.
    haproxy's levels: "alert" for a server going down, "notice" for one coming up, "info"
    for a health check result."""

    __slots__ = ("hub", "sinks", "queue", "_timer")

    def __init__(self, hub: LogHub, sinks: list[tuple[Target, Framer]]) -> None:
        self.hub = hub
        self.sinks = sinks
        self.queue: list[tuple[int, str]] = []
        self._timer = None

    def add(self, level: int, text: str) -> None:
        """Queue one line of severity `level` (0..7); dropped and counted past MAX_QUEUE."""
        if len(self.queue) >= MAX_QUEUE:
            self.hub.queue_drops += 1
            return
        self.queue.append((level, text))
        if self._timer is None:
            self._timer = self.hub.loop.call_later(FLUSH_DELAY, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        events, self.queue = self.queue, []
        if not events:
            return
        now = time.time()
        for target, framer in self.sinks:
            frames = [framer.frame(level, text, now) for level, text in events if level <= framer.level]
            if frames:
                target.send(frames)
