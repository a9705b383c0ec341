"""Health from live traffic: haproxy's `observe`, `error-limit` and `on-error` (configuration.txt
5.2), as a sans-I/O counter per server.

Rule: events in, an `on-error` mode out; no clock, no socket. The runtime reports what the
traffic to a server showed (a connection opened or failed, a response's status, a response
head that was invalid, timed out or never came) as an `Event`; the server's Observer judges
it with haproxy's table (src/check.c analyze_statuses) for its mode and counts the errors in
a row. The `error-limit`-th one returns the server's `on-error` mode, which the caller applies
to the server's HealthState (health/state.py on_error()), and the count starts again. A
success resets the count, and so does a passed health check (reset()).

Theory of operation (haproxy src/check.c __health_adjust(), src/http_ana.c, src/backend.c):
  layer4: a connection that opens (L4_OK) is a success, one that fails or times out
          (L4_ERR) an error; nothing else counts.
  layer7: a failed connection is an error too, but an opened one is not a success: only a
          response is. A response head whose status is 100..499, 501 or 505 (the two a client
          can bring on itself) is a success (HTTP_OK); any other status is an error
          (HTTP_STS), and so are an invalid head (HTTP_HDRRSP), a body whose framing broke
          (HTTP_RSP), a read error or a close before any response (HTTP_READ_ERROR,
          HTTP_BROKEN_PIPE: not counted on a reused idle connection, which the server may
          close at any time) and `timeout server` before the head (HTTP_READ_TIMEOUT).
"""
from __future__ import annotations

from enum import Enum

MODES = ("layer4", "layer7")
"""haproxy `observe` modes (`none` turns observing off)."""

ON_ERROR = ("fastinter", "fail-check", "sudden-death", "mark-down")
"""haproxy `on-error` modes; the default is fail-check (DEF_HANA_ONERR)."""

DEFAULT_ERROR_LIMIT = 10
"""haproxy's default `error-limit` (DEF_HANA_ERRLIMIT)."""


class Event(Enum):
    """What the traffic to a server showed (haproxy HANA_STATUS_*); the values are
    haproxy's descriptions, used in the log."""

    L4_OK = "L4 successful connection"
    L4_ERR = "L4 unsuccessful connection"
    HTTP_OK = "Correct http response"
    HTTP_STS = "Wrong http response"
    HTTP_HDRRSP = "Invalid http response (headers)"
    HTTP_RSP = "Invalid http response"
    HTTP_READ_ERROR = "Read error (http)"
    HTTP_READ_TIMEOUT = "Read timeout (http)"
    HTTP_BROKEN_PIPE = "Close from server (http)"


_IGNORE, _ERROR, _OK = 0, 1, 2
_TABLE = {  # event -> (layer4, layer7), haproxy src/check.c analyze_statuses
    Event.L4_OK: (_OK, _IGNORE),
    Event.L4_ERR: (_ERROR, _ERROR),
    Event.HTTP_OK: (_IGNORE, _OK),
    Event.HTTP_STS: (_IGNORE, _ERROR),
    Event.HTTP_HDRRSP: (_IGNORE, _ERROR),
    Event.HTTP_RSP: (_IGNORE, _ERROR),
    Event.HTTP_READ_ERROR: (_IGNORE, _ERROR),
    Event.HTTP_READ_TIMEOUT: (_IGNORE, _ERROR),
    Event.HTTP_BROKEN_PIPE: (_IGNORE, _ERROR),
}


def status_event(status: int) -> Event:
    """The Event of a response status (haproxy src/http_ana.c http_wait_for_response()):
    HTTP_OK for 100..499, 501 and 505, HTTP_STS for any other."""
    if status >= 100 and (status < 500 or status in (501, 505)):
        return Event.HTTP_OK
    return Event.HTTP_STS


class Observer:
    """The consecutive-error counter of one observed server.

    Args:
        mode: "layer4" or "layer7" (haproxy `observe`).
        limit: errors in a row that trigger `on_error` (haproxy `error-limit`, >= 1).
        on_error: one of ON_ERROR (haproxy `on-error`).

    Attributes:
        errors: the errors in a row counted so far (haproxy consecutive_errors).
        triggered: how many times the limit was reached (haproxy's hanafail counter).

    Raises:
        ValueError: an unknown mode or on-error mode, or a limit below 1.
    """

    __slots__ = ("mode", "limit", "on_error", "errors", "triggered", "_col")

    def __init__(self, mode: str, limit: int = DEFAULT_ERROR_LIMIT, on_error: str = "fail-check") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown observe mode {mode!r}")
        if on_error not in ON_ERROR:
            raise ValueError(f"unknown on-error mode {on_error!r}")
        if limit < 1:
            raise ValueError(f"error-limit must be at least 1, got {limit}")
        self.mode = mode
        self.limit = limit
        self.on_error = on_error
        self.errors = 0
        self.triggered = 0
        self._col = MODES.index(mode)

    def event(self, e: Event) -> str | None:
        """Count one event.

        Returns:
            The `on-error` mode to apply when this event is the `limit`-th error in a row
            (the count then starts again from 0), else None (a success resets the count;
            an event this mode ignores changes nothing).
        """
        verdict = _TABLE[e][self._col]
        if verdict == _IGNORE:
            return None
        if verdict == _OK:
            self.errors = 0
            return None
        self.errors += 1
        if self.errors < self.limit:
            return None
        self.errors = 0
        self.triggered += 1
        return self.on_error

    def reset(self) -> None:
        """A health check passed: the count starts again (haproxy clears consecutive_errors
        on every passed check)."""
        self.errors = 0
