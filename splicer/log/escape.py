"""haproxy's escaping of what a client or server sent, in log lines (configuration.txt 8.6
"Non-printable characters"): every byte outside 32..126 becomes ``#XX`` (two upper-case hex
digits), and so do ``#`` itself and ``"``; in captured headers ``{``, ``|`` and ``}`` too,
since they delimit the captures. A log line therefore stays one line of printable ASCII
whatever the request held, and the quotes around ``%{+Q}r`` cannot be closed from inside.

Rule: sans-I/O, pure functions of bytes.
"""
from __future__ import annotations

import re

_LINE = re.compile(rb'[^\x20-\x7e]|["#]')
_HEADER = re.compile(rb'[^\x20-\x7e]|["#{|}]')
_SAFE_LINE = bytes(b for b in range(0x20, 0x7F) if b not in b'"#')
_SAFE_HEADER = bytes(b for b in range(0x20, 0x7F) if b not in b'"#{|}')
# (bytes.translate deleting the safe bytes is the fast test: nothing left, nothing to escape)


def _hex(m: re.Match) -> bytes:
    return b"#%02X" % m.group()[0]


def escape(data: bytes) -> str:
    """A request line, URI or other client text as a log line shows it.

    Args:
        data: the bytes as received.

    Returns:
        Printable ASCII: ``b'GET /a"b\\x1b HTTP/1.1'`` -> ``'GET /a#22b#1B HTTP/1.1'``.
    """
    if not data.translate(None, _SAFE_LINE):
        return data.decode("ascii")
    return _LINE.sub(_hex, data).decode("ascii")


def escape_header(data: bytes) -> str:
    """A captured header value (haproxy also encodes ``{``, ``|`` and ``}`` there)."""
    if not data.translate(None, _SAFE_HEADER):
        return data.decode("ascii")
    return _HEADER.sub(_hex, data).decode("ascii")


def escape_sd(text: str) -> str:
    """The ``E`` flag (RFC 5424 section 6.3.3 PARAM-VALUE): ``"``, ``\\`` and ``]`` get a
    backslash before them."""
    if '"' not in text and "\\" not in text and "]" not in text:
        return text
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")
