"""Syslog framing of log lines (haproxy configuration.txt 4.2 "log", `format`): the
header each format puts before a message, the facility and severity tables, truncation.

Rule: sans-I/O. A Framer turns (level, message, wall-clock seconds) into the bytes of one
message; it reads no clock (the caller passes the time) and opens no socket. Headers that
only change once a second are cached per second, so framing a batch costs one string
concatenation per line.

Formats (haproxy's names):
  local     ``<PRI>Mmm dd hh:mm:ss tag[pid]: msg`` (RFC 3164 without its hostname; the default)
  rfc3164   ``<PRI>Mmm dd hh:mm:ss host tag[pid]: msg`` (RFC 3164 section 4.1)
  rfc5424   ``<PRI>1 2024-06-12T10:09:44.810929+02:00 host tag pid - - msg`` (RFC 5424 section 6)
  priority  ``<PRI>msg``;  short ``<LEVEL>msg``;  timed ``<LEVEL>ISO-date msg``;  iso ``ISO-date msg``
  raw       ``msg``
PRI is facility * 8 + level (RFC 5424 section 6.2.1).
"""
from __future__ import annotations

import time

FACILITIES = ("kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "auth2",
              "ftp", "ntp", "audit", "alert", "cron2", "local0", "local1", "local2", "local3", "local4",
              "local5", "local6", "local7")
"""The 24 syslog facilities, by number (haproxy's names)."""

LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
"""The 8 severities, by number (0 is the most severe)."""

INFO = 6
"""The severity of traffic logs (haproxy: "Connections are logged at level info")."""

FORMATS = ("local", "rfc3164", "rfc5424", "priority", "short", "timed", "iso", "raw")
"""The `format` values splicer frames."""

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _iso(now: float) -> str:
    """RFC 3339 local date with microseconds and the UTC offset: 2024-06-12T10:09:44.810929+02:00."""
    t = time.localtime(now)
    off = t.tm_gmtoff
    sign = "+" if off >= 0 else "-"
    off = abs(off) // 60
    return "%04d-%02d-%02dT%02d:%02d:%02d.%06d%s%02d:%02d" % (
        t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, int(now % 1 * 1e6), sign,
        off // 60, off % 60)


class Framer:
    """Frames messages for one `log` target.

    Args:
        fmt: one of FORMATS.
        facility: facility number (0..23); level / minlevel: the target's filter and cap.
        tag: the syslog tag (the program name, "splicer"); pid: the worker's process id.
        host: the hostname rfc3164 and rfc5424 carry ("-" for none in rfc5424).
        maxlen: most bytes of one message, its "\\n" included (haproxy `len`); 0: no limit.

    Attributes:
        sends_info: False when the target's `level` filters out traffic logs (info).
    """

    def __init__(self, fmt: str, facility: int, level: int = 7, minlevel: int = 0, tag: str = "splicer",
                 pid: int = 0, host: str = "-", maxlen: int = 1024) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown log format {fmt!r}")
        self.fmt, self.facility, self.level, self.minlevel = fmt, facility, level, minlevel
        self.tag, self.pid, self.host, self.maxlen = tag, pid, host or "-", maxlen
        self.sends_info = INFO <= level
        self._sec = -1
        self._heads: dict[int, str] = {}

    def _head(self, level: int, now: float) -> str:
        """The header before a message of severity `level` at `now` (cached per second)."""
        fmt = self.fmt
        if level < self.minlevel:
            level = self.minlevel
        pri = self.facility * 8 + level
        if fmt == "raw":
            return ""
        if fmt == "priority":
            return "<%d>" % pri
        if fmt == "short":
            return "<%d>" % level
        if fmt in ("rfc5424", "timed", "iso"):  # sub-second dates: never cached
            date = _iso(now)
            if fmt == "rfc5424":
                return "<%d>1 %s %s %s %d - - " % (pri, date, self.host, self.tag, self.pid)
            return ("<%d>%s " % (level, date)) if fmt == "timed" else date + " "
        sec = int(now)
        if sec != self._sec:
            self._sec = sec
            self._heads = {}
        head = self._heads.get(pri)
        if head is None:
            t = time.localtime(sec)
            date = "%s %2d %02d:%02d:%02d" % (_MONTHS[t.tm_mon - 1], t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
            host = (self.host + " ") if fmt == "rfc3164" else ""
            head = self._heads[pri] = "<%d>%s %s%s[%d]: " % (pri, date, host, self.tag, self.pid)
        return head

    def frames(self, level: int, messages: list[str], now: float) -> list[bytes]:
        """frame() of each message (one header for the batch: they share `now`)."""
        head = self._head(level, now)
        cut = self.maxlen - 1 if self.maxlen else 0
        out = [(head + m + "\n").encode("ascii", "replace") for m in messages]
        if cut and max(map(len, out), default=0) > self.maxlen:  # (one pass in C when none is too long)
            for i, data in enumerate(out):
                if len(data) > self.maxlen:
                    out[i] = data[:cut] + b"\n"
        return out

    def join(self, level: int, messages: list[str], now: float) -> bytes:
        """Several messages framed and joined, for a stream target without `len` (maxlen 0):
        the same bytes as the frame() of each, concatenated, in one encode."""
        head = self._head(level, now)
        return (head + ("\n" + head).join(messages) + "\n").encode("ascii", "replace")

    def join_block(self, level: int, block: str, now: float) -> bytes:
        """join() of the lines of `block` (each ending in "\\n"), for a framer without `len`:
        the same bytes, the header put before each line by one replace."""
        head = self._head(level, now)
        if head:
            block = head + block[:-1].replace("\n", "\n" + head) + "\n"
        return block.encode("ascii", "replace")

    def fits(self, level: int, messages: list[str], now: float) -> bool:
        """Whether every message, framed, is at most maxlen bytes (so join() gives exactly
        the frames() bytes even with a `len`): one max() over the lengths (the messages
        are ASCII: the renderer escaped everything else)."""
        if not self.maxlen:
            return True
        return not messages or max(map(len, messages)) + len(self._head(level, now)) + 1 <= self.maxlen

    def frame(self, level: int, message: str, now: float) -> bytes:
        """One message as sent: header, message, "\\n", cut to maxlen bytes (the "\\n" kept).

        Args:
            level: the message's severity (0..7); message: the rendered line (ASCII: the
                renderer escaped everything else); now: wall-clock seconds (time.time()).
        """
        data = (self._head(level, now) + message).encode("ascii", "replace")
        if self.maxlen and len(data) >= self.maxlen:
            data = data[:self.maxlen - 1]
        return data + b"\n"
