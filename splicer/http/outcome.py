"""How a body transfer ended: the outcome a stream's body moves report (pure data).

Rule: a transfer (runtime/transfer.py, the engine's body jobs) reports its end and its byte
counts as a Result; the stream machine (http/machine.py) and the counters read them. Nothing
here does I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class End(Enum):
    """How a transfer ended."""

    DONE = "done"                # every byte moved (or EOF reached for an until-EOF transfer)
    SRC_EOF = "src-eof"          # the source closed before the announced length
    SRC_ERROR = "src-error"      # reading the source failed (reset...)
    DST_ERROR = "dst-error"      # writing the destination failed
    SRC_TIMEOUT = "src-timeout"  # the source sent nothing within its timeout
    DST_TIMEOUT = "dst-timeout"  # the destination took nothing within its timeout
    BAD_FRAMING = "bad-framing"  # a chunked body was malformed


@dataclass(slots=True)
class Result:
    """Outcome of a transfer: `moved` bytes written to the destination, of which `spliced`
    went through a pipe and `copied` through user space."""

    end: End
    moved: int = 0
    spliced: int = 0
    copied: int = 0

    def add(self, other: "Result") -> None:
        """Add another part's byte counts to this one and take its end (chunked relays)."""
        self.moved += other.moved
        self.spliced += other.spliced
        self.copied += other.copied
        self.end = other.end
