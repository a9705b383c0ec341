"""Rise/fall state of one server's health check (haproxy `check`, `rise`, `fall`).

Rule: results in, transitions out; no clock, no socket. A server starts UP (as haproxy's do
unless told otherwise); `fall` failed checks in a row take it DOWN, `rise` passed checks in a
row bring it back UP. Check outcomes are named after haproxy's (L4OK, L4CON, L4TOUT, L7OK,
L7STS, L7RSP, L7TOUT). judge_response() turns an `option httpchk` answer into one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
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

    @property
    def desc(self) -> str:
        """haproxy's short description of the status (src/check.c check_statuses[]), shown
        as the stats `check_desc` column."""
        return _DESCS[self]


_DESCS = {
    CheckStatus.L4OK: "Layer4 check passed", CheckStatus.L4CON: "Layer4 connection problem",
    CheckStatus.L4TOUT: "Layer4 timeout", CheckStatus.L7OK: "Layer7 check passed",
    CheckStatus.L7STS: "Layer7 wrong status", CheckStatus.L7RSP: "Layer7 invalid response",
    CheckStatus.L7TOUT: "Layer7 timeout",
}


@dataclass
class CheckReport:
    """What the last check of a server found, as the stats page and CSV show it (haproxy's
    check_status, check_code, check_duration, last_chk, chkfail columns).

    Attributes:
        status: the last CheckStatus value ("INI" before the first check ends, as haproxy).
        code: the HTTP status of an `option httpchk` response (0: none).
        duration_ms: how long the last check took, milliseconds.
        text: haproxy's last_chk: the response's reason phrase, or the connect error's text
            (from outside: a renderer must escape it).
        chkfail: failed checks while the server was UP (haproxy's chkfail).
    """

    status: str = "INI"
    code: int = 0
    duration_ms: int = 0
    text: str = ""
    chkfail: int = 0

    def record(self, status: CheckStatus, code: int, duration_ms: int, text: str, was_up: bool) -> None:
        """Keep one check's outcome; a failure while the server was UP counts in chkfail."""
        self.status = status.value
        self.code = code
        self.duration_ms = duration_ms
        self.text = text
        if not status.passed and was_up:
            self.chkfail += 1


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
    """One server's check health, kept as haproxy keeps it: a counter `health` from 0 to
    rise + fall - 1 (src/check.c set_server_check_status()).

    A server starts UP at full health (rise + fall - 1). A failed check takes one off; when
    health drops below `rise` it falls to 0 and the server is DOWN (so `fall` failures in a
    row from full health take it down). A passed check adds one; when health reaches `rise`
    it jumps to full and the server is UP (so `rise` passes in a row bring it back). The
    observe keyword's `on-error` modes act on the same counter (on_error()), and
    interval() picks `inter`, `fastinter` or `downinter` from it (haproxy srv_getinter()).

    Args:
        rise: passed checks in a row that bring a DOWN server UP (>= 1).
        fall: failed checks in a row that take an UP server DOWN (>= 1).

    Attributes:
        up: the server is UP as far as its checks go.
        health: haproxy's check->health, 0 .. rise + fall - 1.
        fast: haproxy's CHK_ST_FASTINTER: an on-error event asked for the next check to come
            after `fastinter`; the check loop clears it once it has scheduled that check.
    """

    __slots__ = ("rise", "fall", "up", "health", "fast")

    def __init__(self, rise: int, fall: int) -> None:
        self.rise = rise
        self.fall = fall
        self.up = True
        self.health = rise + fall - 1
        self.fast = False

    @property
    def full(self) -> int:
        """The health of a server UP with no failure since its last pass: rise + fall - 1."""
        return self.rise + self.fall - 1

    def result(self, status: CheckStatus) -> bool | None:
        """Record one probe's outcome.

        Returns:
            True when the server just went UP, False when it just went DOWN, None when its
            state did not change.
        """
        return self.passed() if status.passed else self.failed()

    def passed(self) -> bool | None:
        """One passed check (haproxy CHK_RES_PASSED); returns as result()."""
        if self.health < self.full:
            self.health += 1
            if self.health >= self.rise:
                self.health = self.full
        if not self.up and self.health >= self.rise:
            self.up = True
            return True
        return None

    def failed(self) -> bool | None:
        """One failed check (haproxy CHK_RES_FAILED); returns as result()."""
        if self.health > 0:
            self.health -= 1
            if self.health < self.rise:
                self.health = 0
        if self.up and self.health < self.rise:
            self.up = False
            return False
        return None

    def on_error(self, mode: str) -> bool | None:
        """Apply an `on-error` mode after `error-limit` observed errors in a row (haproxy
        src/check.c __health_adjust()). Every mode sets `fast`; then:

        - "fastinter": nothing more;
        - "fail-check": one failed check;
        - "sudden-death": health is first brought down to rise + 1 when above it, then one
          failed check, which leaves the server one failed check from DOWN;
        - "mark-down": health is set to rise, then one failed check: the server is DOWN.

        Returns:
            as result(): False when the server just went DOWN, else None.

        Raises:
            ValueError: an unknown mode.
        """
        self.fast = True
        if mode == "fastinter":
            return None
        if mode == "sudden-death":
            if self.health > self.rise:
                self.health = self.rise + 1
        elif mode == "mark-down":
            self.health = self.rise
        elif mode != "fail-check":
            raise ValueError(f"unknown on-error mode {mode!r}")
        return self.failed()

    def interval(self, inter: float, fastinter: float = 0.0, downinter: float = 0.0) -> float:
        """Seconds until the next check (haproxy srv_getinter(); 0 for fastinter or
        downinter means not set): `inter` at full health, `downinter` for a server fully
        DOWN, `fastinter` in between (going down or coming up) or when `fast` is set."""
        if not self.fast and self.health == self.full:
            return inter
        if not self.up and self.health == 0:
            return downinter or inter
        return fastinter or inter
