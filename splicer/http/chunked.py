"""Chunked transfer coding (RFC 9112 section 7.1), read as a sequence of steps.

Theory of operation: the relay never reads past the end of a chunked message (the next
pipelined request, or a reused server connection, must stay in the socket). So the reader
does not take arbitrary bytes; it says what it needs next:

  - Need.LINE: one line (chunk-size line, the CRLF after chunk data, or a trailer line).
    The shell peeks, cuts at the first LF, reads exactly that, and calls feed_line().
  - Need.DATA: `data_left` bytes of chunk data, which the shell moves as it likes
    (copy, or splice for big chunks) and reports with data_done(n).
  - Need.DONE: the message ended (last-chunk and trailer section read).

Lines are forwarded verbatim; the rules are RFC 9112's, strict: hex sizes without sign or
overflow, line endings CRLF, no control character but HTAB, bounded chunk extensions and
trailer section. native/src/chunked.c applies the same rules for the engine's chunked relay
(tests/unit/engine/test_chunk_line.py feeds both the same lines).
Nothing here does I/O.
"""
from __future__ import annotations

import re
from enum import Enum

from splicer.http.framing import FramingError


class Need(Enum):
    """What the chunked reader needs next."""

    LINE = "line"
    DATA = "data"
    DONE = "done"


MAX_LINE = 4096
"""Longest chunk-size line or trailer line accepted, in bytes (with its CRLF)."""
MAX_TRAILERS = 16384
"""Largest trailer section accepted, in bytes."""
_MAX_SIZE_DIGITS = 16  # 64-bit sizes: bodies larger than 4 GiB work, overflow is refused
_MAX_SIZE = 2**63 - 1  # the same bound as Content-Length (framing.py)

_HEX = frozenset(b"0123456789abcdefABCDEF")
_FIELD_NAME = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+:")  # RFC 9110 section 5.1 token, then ":"
_CTL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # every control character but HTAB


class ChunkedReader:
    """Step-by-step reader of one chunked body.

    Raises FramingError (status 400 for a request, the caller maps it for a response) on
    any syntax error; the message must then be abandoned and the connection closed.
    """

    __slots__ = ("need", "data_left", "_state", "_trailer_bytes", "total_data")

    def __init__(self) -> None:
        self.need = Need.LINE
        self.data_left = 0
        self.total_data = 0
        self._state = "size"        # size | data-crlf | trailer
        self._trailer_bytes = 0

    def feed_line(self, line: bytes) -> None:
        """Consume one whole line, ending with CRLF.

        Args:
            line: the bytes up to and including the first LF.

        Raises:
            FramingError: bad syntax, overflow, or a line or trailer section too long.
        """
        if not line.endswith(b"\r\n"):
            raise FramingError("chunked line does not end with CRLF")
        if len(line) > MAX_LINE:
            raise FramingError("chunked line too long")
        body = line[:-2]
        if _CTL.search(body):
            raise FramingError("control character in a chunked line")  # CR, NUL... (RFC 9110 5.5)
        if self._state == "size":
            size_part = body.split(b";", 1)[0]
            if b";" in body:
                size_part = size_part.rstrip(b" \t")  # BWS before ';' (RFC 9112 section 7.1.1)
            if not size_part or len(size_part) > _MAX_SIZE_DIGITS or not set(size_part) <= _HEX:
                raise FramingError("invalid chunk size")
            size = int(size_part, 16)
            if size > _MAX_SIZE:
                raise FramingError("chunk size too large")
            if size == 0:
                self._state = "trailer"
            else:
                self.data_left = size
                self.need = Need.DATA
        elif self._state == "data-crlf":
            if body:
                raise FramingError("chunk data not followed by CRLF")
            self._state = "size"
        else:  # trailer section: field lines until an empty line
            if not body:
                self.need = Need.DONE
                return
            self._trailer_bytes += len(line)
            if self._trailer_bytes > MAX_TRAILERS:
                raise FramingError("trailer section too large")
            if not _FIELD_NAME.match(body):
                raise FramingError("invalid trailer field")  # a field line: token ":" value

    def data_done(self, n: int) -> None:
        """Record that `n` bytes of chunk data were moved (0 < n <= data_left)."""
        if not 0 < n <= self.data_left:
            raise ValueError(f"data_done({n}) with {self.data_left} left")
        self.data_left -= n
        self.total_data += n
        if self.data_left == 0:
            self.need = Need.LINE
            self._state = "data-crlf"
