"""Log-format rendering (haproxy configuration.txt 8.2.3 "HTTP log format", 8.2.2 "TCP log
format", 8.2.6 "Custom log format"): a format string is compiled once into a Python
function that turns a LogRecord (record.py) into one line of printable ASCII.

Rule: sans-I/O. The `%` items are read by the one scanner of splicer (http/logformat.py
scan); this module only says what each alias and fetch shows. Compiling generates the
source of one f-string per format, so rendering a line is one call and no loop over items
(the access log's cost per request stays small: benchmarks/accesslog.py).

What it renders, as haproxy: timers and counters as integers (-1: not reached), `%r` the
request line escaped (escape.py) and "<BADREQ>" when there is none, `%hr` / `%hs` the
captures between braces separated by "|", `%rc` the retries with "+" before them when the
last one was redispatched. Flags (on one item with ``%{...}``, on every later item with
``%{...}o``): ``Q`` quotes strings, ``E`` escapes ``"``, ``\\`` and ``]`` (RFC 5424
structured data), ``json`` makes the line one JSON object of the named items
(``%(name)item``; unnamed items and literal text are left out, as haproxy does), ``X`` is
accepted and ignored. Runs of spaces in the literal text are merged, and `%hr` / `%hs`
vanish with a space when no header is captured (haproxy's httplog line has no `{}` then).
"""
from __future__ import annotations

import json
import os
import time

from splicer.http.logformat import RuleError, scan
from splicer.log.escape import escape, escape_header, escape_sd

HTTPLOG = ("%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc "
           "%sq/%bq %hr %hs %{+Q}r")
"""haproxy's `option httplog` (8.2.3), exactly."""

TCPLOG = "%ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq"
"""haproxy's `option tcplog` (8.2.2), exactly."""

DEFAULT = "%ci:%cp [%t] %ft %b/%s"
"""What a frontend with `log` lines and no format logs (haproxy's basic "default format"
logs the connection at accept; splicer logs the same fields at the stream's end)."""

# alias -> (python expression over the record `r`, kind: "num" or "str")
_ALIASES: dict[str, tuple[str, str]] = {
    "ci": ("r.ci", "str"), "cp": ("r.cp", "num"), "fi": ("r.fi", "str"), "fp": ("r.fp", "num"),
    "t": ("_date(r.accept)", "str"), "tr": ("_date(r.start)", "str"),
    "T": ("_dateg(r.accept)", "str"), "trg": ("_dateg(r.start)", "str"),
    "Tl": ("_datel(r.accept)", "str"), "trl": ("_datel(r.start)", "str"),
    "Ts": ("int(r.accept)", "num"), "ms": ("_msec(r.accept)", "str"),
    "Th": ("r.Th", "num"), "Ti": ("r.Ti", "num"), "TR": ("r.TR", "num"), "Tw": ("r.Tw", "num"),
    "Tc": ("r.Tc", "num"), "Tr": ("r.Tr", "num"), "Ta": ("r.Ta", "num"), "Tt": ("r.Tt", "num"),
    "Tq": ("_tq(r)", "num"), "Td": ("_td(r)", "num"), "Tu": ("_tu(r)", "num"),
    "B": ("r.B", "num"), "U": ("r.U", "num"), "CC": ("_DASH", "str"), "CS": ("_DASH", "str"),
    "H": ("_HOST", "str"), "HM": ("_esc(r.method)", "str"), "HU": ("_esc(r.uri)", "str"),
    "HP": ("_path(r.uri)", "str"), "HPO": ("_path(r.uri)", "str"),
    "HQ": ("_query(r.uri)", "str"), "HV": ("_esc(r.version)", "str"),
    "ST": ("r.ST", "num"), "ac": ("r.ac", "num"), "fc": ("r.fc", "num"), "bc": ("r.bc", "num"),
    "sc": ("r.sc", "num"), "sq": ("r.sq", "num"), "bq": ("r.bq", "num"), "rt": ("r.rt", "num"),
    "b": ("r.b", "str"), "s": ("r.s", "str"), "f": ("r.ft", "str"), "ft": ("r.ft", "str"),
    "hr": ("_caps(r.hr)", "str"), "hs": ("_caps(r.hs)", "str"),
    "hrl": ("_capl(r.hr)", "str"), "hsl": ("_capl(r.hs)", "str"),
    "pid": ("_PID", "num"), "r": ("_req(r.request)", "str"),
    "rc": ("_PLUS[r.redispatched]}{r.rc", "str"),  # (two items of the f-string)
    "ts": ("r.ts", "str"), "tsc": ("r.tsc", "str"),
}
"""Every log-format alias splicer renders (haproxy 8.2.6's table, minus SSL and cookies:
%CC and %CS always show "-", as with no `capture cookie`)."""

_FETCHES: dict[str, tuple[str, str]] = {
    "bytes_spliced": ("r.spliced", "num"), "bytes_copied": ("r.copied", "num"),
    "src": ("r.ci", "str"), "src_port": ("r.cp", "num"), "dst": ("r.fi", "str"), "dst_port": ("r.fp", "num"),
    "fe_name": ("r.ft", "str"), "be_name": ("r.b", "str"), "srv_name": ("r.s", "str"),
    "method": ("_esc(r.method)", "str"), "url": ("_esc(r.uri)", "str"),
    "path": ("_path(r.uri)", "str"), "query": ("_qs(r.uri)", "str"),
    "status": ("r.ST", "num"), "pid": ("_PID", "num"), "txn.status": ("r.ST", "num"),
    "txn.timer.total": ("r.Ta", "num"), "res.timer.hdr": ("r.Tr", "num"), "req.timer.hdr": ("r.TR", "num"),
    "req.timer.queue": ("r.Tw", "num"), "bc.timer.connect": ("r.Tc", "num"), "fc.timer.total": ("r.Tt", "num"),
    "req.bytes_in": ("r.U", "num"), "res.bytes_in": ("r.B", "num"), "txn.sess_term_state": ("r.ts", "str"),
}
"""The sample fetches a log-format may use in ``%[...]``: haproxy's, plus splicer's
``bytes_spliced`` / ``bytes_copied`` (body bytes of the stream moved through a pipe / copied
through user space)."""

NEEDS_DST = ("r.fi", "r.fp")
"""Record fields that cost a getsockname(): collected only when a format shows them."""

_FLAGS = frozenset({"Q", "E", "X", "json"})

_PID = os.getpid()
_HOST = os.uname().nodename
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_dates: dict[int, str] = {}
_dates_ms: dict[int, str] = {}
_lines: dict[bytes, str] = {}
MEMO = 4096
"""Entries of the per-millisecond date and request-line memos (cleared when full): under
load many lines share a millisecond, and hot request lines repeat."""


def _date(t: float) -> str:
    """haproxy's %t / %tr: local time with milliseconds, 06/Feb/2009:12:14:14.655."""
    ms = int(t * 1000)
    got = _dates_ms.get(ms)
    if got is not None:
        return got
    sec = ms // 1000
    base = _dates.get(sec)
    if base is None:
        if len(_dates) > 64:
            _dates.clear()
        lt = time.localtime(sec)
        base = _dates[sec] = "%02d/%s/%04d:%02d:%02d:%02d" % (lt.tm_mday, _MONTHS[lt.tm_mon - 1], lt.tm_year,
                                                              lt.tm_hour, lt.tm_min, lt.tm_sec)
    if len(_dates_ms) >= MEMO:
        _dates_ms.clear()
    got = _dates_ms[ms] = "%s.%03d" % (base, ms % 1000)
    return got


def _zone(lt: time.struct_time) -> str:
    off = lt.tm_gmtoff
    sign = "+" if off >= 0 else "-"
    off = abs(off) // 60
    return "%s%02d%02d" % (sign, off // 60, off % 60)


def _stamp(lt: time.struct_time) -> str:
    return "%02d/%s/%04d:%02d:%02d:%02d %s" % (lt.tm_mday, _MONTHS[lt.tm_mon - 1], lt.tm_year, lt.tm_hour,
                                               lt.tm_min, lt.tm_sec, _zone(lt))


def _dateg(t: float) -> str:
    """%T / %trg: UTC with its zone, 06/Feb/2009:12:14:14 +0000."""
    return _stamp(time.gmtime(int(t)))


def _datel(t: float) -> str:
    """%Tl / %trl: local time with its zone, 06/Feb/2009:13:14:14 +0100."""
    return _stamp(time.localtime(int(t)))


def _valid(*timers: int) -> int:
    return -1 if any(x < 0 for x in timers) else sum(timers)


def _tq(r) -> int:
    return _valid(r.Th, r.Ti, r.TR)


def _td(r) -> int:
    if r.Ta < 0:
        return -1
    return max(0, r.Ta - sum(x for x in (r.TR, r.Tw, r.Tc, r.Tr) if x > 0))


def _tu(r) -> int:
    return max(0, r.Tt - max(r.Ti, 0))


def _esc(data: bytes) -> str:
    return escape(data) if data else ""


def _path(uri: bytes) -> str:
    return _esc(uri.split(b"?", 1)[0])


def _qs(uri: bytes) -> str:
    return _esc(uri.partition(b"?")[2])


def _msec(t: float) -> str:
    return "%03d" % (int(t * 1000) % 1000)


def _query(uri: bytes) -> str:
    i = uri.find(b"?")
    return "" if i < 0 else escape(uri[i:])


def _req(line: bytes) -> str:
    got = _lines.get(line)
    if got is None:
        if len(_lines) >= MEMO:
            _lines.clear()
        got = _lines[line] = escape(line) if line else "<BADREQ>"
    return got


def _caps(values: tuple) -> str:
    return "{" + "|".join("" if v is None else escape_header(v) for v in values) + "}"


def _capl(values: tuple) -> str:
    return " ".join('"-"' if v is None else '"%s"' % escape_header(v) for v in values)


def _quote(text: str) -> str:
    return '"' + text + '"'


_NAMESPACE = {"_DASH": "-", "_PLUS": ("", "+"), "_path": _path, "_qs": _qs, "_msec": _msec, "_date": _date, "_dateg": _dateg, "_datel": _datel, "_tq": _tq, "_td": _td, "_tu": _tu,
              "_esc": _esc, "_query": _query, "_req": _req, "_caps": _caps, "_capl": _capl, "_PID": _PID,
              "_HOST": _HOST, "_sd": escape_sd, "_json": json.dumps, "_quote": _quote}


class LogFormat:
    """A compiled log-format.

    Args:
        text: the format as written (``log-format "..."``), or HTTPLOG / TCPLOG / DEFAULT.
        captures: (request, response) numbers of `capture ... header` lines of the frontend.

    Attributes:
        text: the format; render: LogRecord -> str, the line (no "\\n", no syslog header).
        needs_dst: the format shows %fi / %fp (the record must carry them).
        httplog: the format is HTTPLOG with no capture: streams may be logged through
            collect.httplog_fields (the same line, its values read in one pass, no LogRecord).

    Raises:
        RuleError: an unknown alias, fetch or flag, or a `%` that starts nothing
            (str() is the message that follows "file:line: ").
    """

    def __init__(self, text: str, captures: tuple[int, int] = (0, 0)) -> None:
        self.text = text
        self.httplog = text == HTTPLOG and not any(captures)  # collect.httplog_fields
        items = scan(text)
        pieces: list[tuple[str, str]] = []  # ("lit", text) or ("expr", python source)
        named: list[tuple[str, str, str]] = []  # json: (name, expression, kind)
        sticky: set[str] = set()
        use_json = False
        for item in items:
            if item[0] == "text":
                pieces.append(("lit", " ".join(item[1].split(" ")) if "  " not in item[1]
                               else _merge_spaces(item[1])))
                continue
            kind_, what, flags, name = item
            on = set(sticky)
            for f in flags:
                sign, f = (f[0], f[1:]) if f[:1] in "+-" else ("+", f)
                if f not in _FLAGS:
                    raise RuleError(f"unknown log-format flag '{f}' in '{text}' (known: E, Q, X, json)")
                (on.add if sign == "+" else on.discard)(f)
            if kind_ == "alias" and what == "o":
                sticky = on  # %o: its flags apply to every later item; it shows nothing
                use_json = use_json or "json" in on
                pieces.append(("drop", ""))
                continue
            if kind_ == "alias":
                entry = _ALIASES.get(what)
                if entry is None:
                    raise RuleError(f"unknown log-format variable '%{what}' (supported: "
                                    + ", ".join("%" + a for a in sorted(_ALIASES)) + ")")
                if what in ("hr", "hs", "hrl", "hsl") and not captures[0 if what[1] == "r" else 1]:
                    pieces.append(("drop", ""))  # nothing captured: no "{}" (and one space less)
                    continue
            else:
                entry = _FETCHES.get(what)
                if entry is None:
                    raise RuleError(f"unknown sample fetch '{what}' in a log-format (supported: "
                                    + ", ".join(sorted(_FETCHES)) + ")")
            expr, kind = entry
            if "json" in on:
                use_json = True
                if name:
                    if what == "rc" and kind_ == "alias":
                        expr = "_PLUS[r.redispatched] + str(r.rc)"
                    named.append((name, expr, kind))
                continue
            quote = False
            if kind == "str":
                if "E" in on:
                    expr = f"_sd({expr})"
                quote = "Q" in on
            if quote:
                pieces.append(("lit", '"'))
            pieces.append(("expr", expr))
            if quote:
                pieces.append(("lit", '"'))
        if use_json:
            body = ", ".join("%s: {%s}" % (json.dumps(n).replace("{", "{{").replace("}", "}}"),
                                           e if k == "num" else f"_json({e})") for n, e, k in named)
            source = 'f"{{' + body.replace('"', '\\"') + '}}"' if named else '"{}"'
        else:
            source = _fstring(_drop_spaces(pieces))
        self.needs_dst = any(f in source for f in NEEDS_DST)
        code = compile(f"lambda r: {source}", "<log-format>", "eval")
        self.render = eval(code, dict(_NAMESPACE))  # noqa: S307 - source built from the tables above


def _merge_spaces(text: str) -> str:
    while "  " in text:
        text = text.replace("  ", " ")
    return text


def _drop_spaces(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Remove the dropped items with one space next to them, then merge spaces across pieces."""
    out: list[tuple[str, str]] = []
    for i, (kind, value) in enumerate(pieces):
        if kind == "drop":
            if out and out[-1][0] == "lit" and out[-1][1].endswith(" "):
                out[-1] = ("lit", out[-1][1][:-1])
            elif i + 1 < len(pieces) and pieces[i + 1][0] == "lit" and pieces[i + 1][1].startswith(" "):
                pieces[i + 1] = ("lit", pieces[i + 1][1][1:])
            continue
        if kind == "lit" and out and out[-1][0] == "lit":
            out[-1] = ("lit", _merge_spaces(out[-1][1] + value))
        else:
            out.append((kind, value))
    return out


def _fstring(pieces: list[tuple[str, str]]) -> str:
    parts = []
    for kind, value in pieces:
        if kind == "lit":
            parts.append(value.replace("{", "{{").replace("}", "}}"))
        else:
            parts.append("{" + value + "}")
    return "f" + repr("".join(parts))
