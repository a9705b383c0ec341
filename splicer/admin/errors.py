"""`show errors`: the last invalid requests a worker refused, with their bytes escaped.

Rule: what a captured error holds (ErrorCapture) and how it is printed live here; the worker
records one where it answers 400, 414, 431 or 501 to a request head it could not accept
(runtime/session.py) and keeps the last CAPTURES of them (haproxy keeps the last error per
proxy and direction; splicer keeps the last few per worker, requests only).

Printing follows haproxy's (management.txt, "show errors"): a header per event, then the
bytes, one input line per output line prefixed with the offset of its first byte; a line
too long for 79 columns goes on in continuation lines whose offset is followed by '+'.
Bytes outside printable ASCII are escaped: \\t \\n \\r \\e, '\\\\' for a backslash, \\xNN
for the rest, so the dump is plain text whatever the client sent.
"""
from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass

CAPTURES = 16
"""Refused requests each worker remembers."""

WIDTH = 79
"""Widest dump line (haproxy)."""


@dataclass(frozen=True)
class ErrorCapture:
    """One refused request head.

    Attributes:
        when: UNIX time it was refused, seconds.
        frontend / fe_id: the frontend's name and number (its position, from 1).
        src: the client's "address:port".
        event: the worker's error counter at this event (from 0).
        worker: the worker's number.
        status: the status it was answered with (400, 414, 431, 501).
        reason: why (the parser's message).
        data: the bytes received, up to the limit of the head buffer.
        backend: the backend's name when one was chosen ("" : none).
        pos: where in `data` the fault is (haproxy's "error at position"), -1: unknown.
    """

    when: float
    frontend: str
    fe_id: int
    src: str
    event: int
    worker: int
    status: int
    reason: str
    data: bytes
    backend: str = ""
    pos: int = -1

    def as_dict(self) -> dict:
        """The capture as JSON-able data (bytes as latin-1 text)."""
        return {"when": self.when, "frontend": self.frontend, "fe_id": self.fe_id, "src": self.src,
                "event": self.event, "worker": self.worker, "status": self.status, "reason": self.reason,
                "data": self.data.decode("latin-1"), "backend": self.backend, "pos": self.pos}

    @classmethod
    def from_dict(cls, d: dict) -> "ErrorCapture":
        """The inverse of as_dict()."""
        return cls(d["when"], d["frontend"], d["fe_id"], d["src"], d["event"], d["worker"], d["status"],
                   d["reason"], d["data"].encode("latin-1"), d.get("backend", ""),
                   d.get("pos", -1))


# a Python bytes repr inside a parser's message (h11: "illegal request line: bytearray(b'...')")
_BYTES_REPR = re.compile(r"""(?::\s*)?(?:bytearray\()?(b(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"))\)?""")


def plain_reason(message: str, data: bytes) -> tuple[str, int]:
    """A parser's message as `show errors` prints a reason: plain text, without the Python
    repr of the offending bytes that h11 puts in it (the bytes belong in the dump), and
    where those bytes start in `data` (haproxy's "error at position").

    Args:
        message: the parser's message, e.g. "illegal request line: bytearray(b'GET / x')".
        data: the captured bytes.

    Returns:
        (reason, position): e.g. ("illegal request line", 0); position -1 when unknown.
    """
    pos = -1
    for m in _BYTES_REPR.finditer(message):
        try:
            quoted = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):
            continue
        if pos < 0 and quoted:
            pos = data.find(quoted)
    text = _BYTES_REPR.sub("", message).strip() or "invalid request"
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text), pos


_ESCAPES = {9: "\\t", 10: "\\n", 13: "\\r", 27: "\\e", 92: "\\\\"}


def escape_byte(b: int) -> str:
    """One byte as `show errors` prints it."""
    if b in _ESCAPES:
        return _ESCAPES[b]
    if 0x20 <= b < 0x7F:
        return chr(b)
    return f"\\x{b:02X}"


def dump_lines(data: bytes) -> list[str]:
    """The byte dump of `data`: "  OOOOO  text" lines, continuation lines "  OOOOO+ text",
    none wider than WIDTH columns; an input line ends after its \\n."""
    out: list[str] = []
    pos = 0
    n = len(data)
    while pos < n:
        start = pos
        cont = False
        line_start = pos
        text = ""
        while pos < n:
            e = escape_byte(data[pos])
            prefix = 2 + 5 + 2
            if prefix + len(text) + len(e) > WIDTH:
                out.append(f"  {line_start:05d}{'+' if cont else ' '} {text}")
                cont, line_start, text = True, pos, ""
            text += e
            pos += 1
            if data[pos - 1] == 10:
                break
        out.append(f"  {line_start:05d}{'+' if cont else ' '} {text}")
        assert pos > start
    return out


def date_text(when: float) -> str:
    """haproxy's log date form, local time: "02/Dec/2026:15:41:23.855"."""
    t = time.localtime(when)
    months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    return (f"{t.tm_mday:02d}/{months[t.tm_mon - 1]}/{t.tm_year}:{t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d}.{int(when * 1000) % 1000:03d}")


def render_errors(captures: list[ErrorCapture], now: float) -> str:
    """The `show errors` answer: the total, then each capture, oldest first.

    Args:
        captures: every worker's captures (any order: sorted by time here).
        now: the UNIX time of the dump (in the first line).
    """
    lines = [f"Total events captured on [{date_text(now)}] : {len(captures)}"]
    for c in sorted(captures, key=lambda c: c.when):
        be = f"backend {c.backend}" if c.backend else "backend <NONE> (#-1)"
        lines += [
            " ",  # haproxy never prints an empty line inside an answer
            f"[{date_text(c.when)}] frontend {c.frontend} (#{c.fe_id}): invalid request",
            f"  {be}, server <NONE> (#-1), event #{c.event}, src {c.src}",
            f"  worker {c.worker}, answered {c.status}: {c.reason}",
            f"  len {len(c.data)}" + (f", error at position {c.pos}" if c.pos >= 0 else ""),
            "  ",
            *dump_lines(c.data),
        ]
    return "\n".join(lines) + "\n"
