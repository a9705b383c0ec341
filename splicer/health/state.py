"""Rise/fall state of one server's health check (haproxy `check`, `rise`, `fall`).

Rule: results in, transitions out; no clock, no socket. A server starts UP (as haproxy's do
unless told otherwise); `fall` failed checks in a row take it DOWN, `rise` passed checks in a
row bring it back UP. Check outcomes are named after haproxy's (L4OK, L4CON, L4TOUT).
"""
from __future__ import annotations

from enum import Enum


class CheckStatus(Enum):
    """Outcome of one probe (haproxy HCHK_STATUS_*)."""

    L4OK = "L4OK"        # the TCP connection was established
    L4CON = "L4CON"      # refused, reset, unreachable
    L4TOUT = "L4TOUT"    # no answer within the check timeout

    @property
    def passed(self) -> bool:
        return self is CheckStatus.L4OK


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
