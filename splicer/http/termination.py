"""How a stream ended: haproxy's termination state, as data.

Rule: every outcome of a stream (one request/response exchange, or one tcp-mode tunnel) is
one `Termination(cause, phase)`; nothing here does I/O. The runtime records it when the
stream ends, and the counters it implies are derived here (`counted`), in one place, so that
the access log and the counters can never disagree.

The vocabulary is haproxy's (configuration manual, section 8.5 "Session state at
disconnection"): the first letter says who or what ended the stream, the second what the
stream was doing then. "--" is a normal end; "cR" a client that timed out while sending its
request (408); "SC" a server that refused the connection (503); "sH" a server that timed out
before its response head (504); "SD" a server that closed in the middle of its body.
"""
from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class Cause(Enum):
    """The first letter: who or what ended the stream (haproxy section 8.5)."""

    NONE = "-"              # a normal end
    CLIENT_ABORT = "C"      # the client closed or reset the connection
    CLIENT_TIMEOUT = "c"    # timeout client / http-request / http-keep-alive struck
    SERVER_ABORT = "S"      # the server closed, reset or refused, or sent no response
    SERVER_TIMEOUT = "s"    # timeout connect / server / queue struck
    PROXY = "P"             # splicer refused it: a bad request or response, a limit
    LOCAL = "L"             # answered by splicer itself (a 100-continue, a redirect)
    RESOURCE = "R"          # splicer ran out of something (fds, engine slots, pipes)
    INTERNAL = "I"          # a bug, caught and logged
    DOWN = "D"              # the server was marked down under the stream (on-marked-down)
    UP = "U"                # an active server came up: a backup's stream was ended (on-marked-up)
    KILLED = "K"            # stopped by the operator (a hard stop)


class Phase(Enum):
    """The second letter: what the stream was doing when it ended (haproxy section 8.5)."""

    NONE = "-"     # past the end of the data: a normal end
    REQUEST = "R"  # reading the request head (nothing was sent to a server)
    QUEUE = "Q"    # waiting in the backend queue for a server slot
    CONNECT = "C"  # connecting to the server
    HEADERS = "H"  # waiting for the server's response head
    DATA = "D"     # moving a body (either direction) or a tunnel
    LAST = "L"     # sending the last of the response to the client after the server finished
    TARPIT = "T"   # held by a tarpit


class Termination(NamedTuple):
    """The termination state of one stream: `Termination(Cause.SERVER_ABORT, Phase.DATA)`
    is haproxy's "SD". `str()` gives the two letters as haproxy logs them."""

    cause: Cause
    phase: Phase

    def __str__(self) -> str:
        return self.cause.value + self.phase.value

    @property
    def normal(self) -> bool:
        """True for "--": the stream ran to its end."""
        return self.cause is Cause.NONE

    @classmethod
    def parse(cls, code: str) -> "Termination":
        """The Termination of a two-letter code ("sD").

        Raises:
            ValueError: not two letters of haproxy's vocabulary.
        """
        if len(code) != 2:
            raise ValueError(f"a termination state is two letters, not {code!r}")
        return cls(Cause(code[0]), Phase(code[1]))


NORMAL = Termination(Cause.NONE, Phase.NONE)
"""A stream that ran to its end ("--")."""


def counted(t: Termination) -> tuple[str, ...]:
    """The error counters (stats.Counters field names) that a stream ending with `t` adds one
    to, on its frontend, backend and server alike; () for a normal end.

    haproxy's meanings (management guide, section 9.1 "CSV format"):
      - ereq: request errors: a request refused, the client timing out or closing before
        its request was whole (head or body);
      - eresp: response errors: a response refused, the server timing out or closing
        before its response was whole;
      - cli_abrt / srv_abrt: data transfers aborted by the client / by the server.
    Failed connection attempts (econ) are counted per attempt, not per stream, so a stream
    that succeeded on its second server still counts its first failure; they are not here.
    """
    c, p = t
    if c is Cause.NONE or c is Cause.LOCAL:
        return ()
    if p is Phase.REQUEST:
        # a client that closed before its request head was whole too (haproxy's
        # h1_handle_incomplete_req); with `option http-ignore-probes` a connection that
        # sent nothing is no stream at all, so nothing is counted for it
        return ("ereq",)
    if p is Phase.HEADERS:
        if c in (Cause.SERVER_ABORT, Cause.SERVER_TIMEOUT, Cause.PROXY):
            return ("eresp",)
        if c in (Cause.CLIENT_ABORT, Cause.CLIENT_TIMEOUT):
            return ("ereq",)  # the request body did not arrive whole
        return ()
    if p in (Phase.DATA, Phase.LAST):
        if c in (Cause.SERVER_ABORT, Cause.SERVER_TIMEOUT):
            return ("eresp", "srv_abrt")
        if c in (Cause.CLIENT_ABORT, Cause.CLIENT_TIMEOUT):
            return ("cli_abrt",)
        if c is Cause.PROXY:
            return ("eresp",)  # a body whose framing broke (bad chunk size)
        return ()
    if p in (Phase.QUEUE, Phase.CONNECT) and c in (Cause.CLIENT_ABORT, Cause.CLIENT_TIMEOUT):
        return ("ereq",)  # haproxy `option abortonclose`: the client left while we waited
    return ()
