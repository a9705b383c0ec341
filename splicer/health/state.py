"""Rise/fall state of one server's health check (haproxy `check`, `rise`, `fall`).

Rule: results in, transitions out; no clock, no socket. A server starts UP (as haproxy's do
unless told otherwise); `fall` failed checks in a row take it DOWN, `rise` passed checks in a
row bring it back UP. Check outcomes are named after haproxy's (L4OK, L4CON, L4TOUT, L7OK,
L7STS, L7RSP, L7TOUT). judge_response() turns an `option httpchk` answer into one.
"""
from __future__ import annotations

import re
from enum import Enum


class CheckStatus(Enum):
    """Outcome of one probe (haproxy HCHK_STATUS_*)."""

    L4OK = "L4OK"        # the TCP connection was established (layer-4 check)
    L4CON = "L4CON"      # refused, reset, unreachable
    L4TOUT = "L4TOUT"    # no connection within the check timeout
    L7OK = "L7OK"        # option httpchk: a response with an expected status
    L7STS = "L7STS"      # a response with another status
    L7RSP = "L7RSP"      # no valid HTTP status line (garbage, or closed before one)
    L7TOUT = "L7TOUT"    # connected, but no status line within the check timeout

    @property
    def passed(self) -> bool:
        return self in (CheckStatus.L4OK, CheckStatus.L7OK)


DEFAULT_EXPECT = ((200, 399),)
"""Statuses an `option httpchk` check accepts when no `http-check expect` is set (haproxy:
2xx and 3xx)."""

_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-5][0-9][0-9])(?: [^\r\n]*)?\r?\n")


def judge_response(data: bytes, expect: tuple[tuple[int, int], ...] = ()) -> tuple[CheckStatus, int]:
    """Judge the start of a check response (haproxy `option httpchk`, `http-check expect`).

    Args:
        data: the bytes received, at least through the status line's end (or all there was).
        expect: (low, high) status ranges that pass; empty means DEFAULT_EXPECT.

    Returns:
        (status, code): L7OK or L7STS with the response's status code, or (L7RSP, 0) when
        `data` does not start with an HTTP/1.x status line.
    """
    m = _STATUS_LINE.match(data)
    if m is None:
        return CheckStatus.L7RSP, 0
    code = int(m.group(1))
    ok = any(lo <= code <= hi for lo, hi in expect or DEFAULT_EXPECT)
    return (CheckStatus.L7OK if ok else CheckStatus.L7STS), code


class HealthState:
    """Consecutive-result counter with haproxy's rise/fall hysteresis.

    Args:
        rise: passed checks in a row that bring a DOWN server UP (>= 1).
        fall: failed checks in a row that take an UP server DOWN (>= 1).
    """

    __slots__ = ("rise", "fall", "up", "_streak")

    def __init__(self, rise: int, fall: int) -> None:
        self.rise = rise
        self.fall = fall
        self.up = True
        self._streak = 0  # results in a row that go against the current state

    def result(self, status: CheckStatus) -> bool | None:
        """Record one probe's outcome.

        Returns:
            True when the server just went UP, False when it just went DOWN, None when its
            state did not change.
        """
        if status.passed == self.up:
            self._streak = 0
            return None
        self._streak += 1
        if self._streak >= (self.rise if not self.up else self.fall):
            self.up = not self.up
            self._streak = 0
            return self.up
        return None
