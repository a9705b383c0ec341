"""Health probes: every `inter` seconds, a TCP connect to each checked server (haproxy's
default layer-4 check) or, with `option httpchk`, an HTTP request whose status line is
judged (health/state.py); the outcome feeds the server's HealthState, and transitions mark
the server up or down in the backend's balancer and are logged. With `observe`, the
traffic feeds the same state (ServerHealth.observe). Each worker probes, and observes its
own traffic, on its own."""
from __future__ import annotations

import asyncio
import logging
import os
import re

from splicer.health.observe import Event, Observer
from splicer.health.state import CheckReport, CheckStatus, HealthState, judge_response
from splicer.runtime import io

log = logging.getLogger("splicer")


async def probe(loop: asyncio.AbstractEventLoop, host: str, port: int, timeout: float) -> tuple[CheckStatus, str]:
    """One layer-4 check: L4OK when a TCP connection opens within `timeout` seconds.

    Returns:
        (status, text): text is haproxy's last_chk, the connect error ("Connection
        refused"), "" otherwise.
    """
    try:
        sock = await io.connect(loop, host, port, timeout)
    except TimeoutError:
        return CheckStatus.L4TOUT, ""
    except OSError as exc:
        return CheckStatus.L4CON, error_text(exc)
    sock.close()
    return CheckStatus.L4OK, ""


def error_text(exc: OSError) -> str:
    """haproxy's last_chk for a failed connection: the errno's text ("Connection refused")."""
    return os.strerror(exc.errno) if exc.errno else str(exc)


_REASON = re.compile(rb"HTTP/1\.[01] [0-9]{3} ?([^\r\n]*)")


def reason_of(data: bytes) -> str:
    """The reason phrase of a status line (haproxy shows it as last_chk), latin-1 decoded;
    "" when `data` holds none."""
    m = _REASON.match(data)
    return m.group(1)[:128].decode("latin-1") if m else ""


STATUS_LINE_MAX = 16384
"""Most bytes read while looking for a check response's status line."""


async def probe_http(loop: asyncio.AbstractEventLoop, host: str, port: int, connect_timeout: float,
                     read_timeout: float, request: bytes,
                     expect: tuple[tuple[int, int], ...]) -> tuple[CheckStatus, int, str]:
    """One layer-7 check (haproxy `option httpchk`): connect, send `request`, judge the
    status line that comes back within `read_timeout` seconds.

    Returns:
        (status, code, text): L4CON/L4TOUT when the connection failed, L7TOUT when no
        status line came in time, else judge_response()'s verdict; text is haproxy's
        last_chk (the reason phrase, or the connect error).
    """
    try:
        sock = await io.connect(loop, host, port, connect_timeout)
    except TimeoutError:
        return CheckStatus.L4TOUT, 0, ""
    except OSError as exc:
        return CheckStatus.L4CON, 0, error_text(exc)
    try:
        deadline = loop.time() + read_timeout
        await io.send_all(loop, sock, request, read_timeout)
        got = b""
        buf = bytearray(4096)
        while b"\n" not in got and len(got) < STATUS_LINE_MAX:
            n = await io.recv_into(loop, sock, buf, max(0.0, deadline - loop.time()))
            if n == 0:
                break
            got += buf[:n]
        return (*judge_response(got, expect), reason_of(got))
    except TimeoutError:
        return CheckStatus.L7TOUT, 0, ""
    except OSError as exc:
        return CheckStatus.L7RSP, 0, error_text(exc)
    finally:
        io.forget(sock)
        sock.close()


class ServerHealth:
    """One checked server's health at run time: its HealthState, fed by its probes, and
    (with `observe`) its Observer, fed by the traffic (health/observe.py). Every transition,
    whichever fed it, goes to Backend.server_state() (balancer, on-marked-down/up) and the
    log.

    Args:
        backend: the runtime Backend.
        server: its runtime Server (`check` set); `server.health` is set to this object.

    Attributes:
        state: the HealthState.
        observer: the Observer, None without `observe`.
    """

    def __init__(self, backend, server) -> None:
        m = server.model
        self.backend = backend
        self.server = server
        self.state = HealthState(m.rise, m.fall)
        self.report = CheckReport()  # the last check's outcome, for the stats
        self.observer = Observer(m.observe, m.error_limit, m.on_error) if m.observe else None
        self._wake: asyncio.Event | None = None  # set when an on-error event wants fastinter
        self.last_status: CheckStatus | None = None  # the last probe's outcome (None: none yet)
        server.health = self

    @property
    def paused(self) -> bool:
        """No check runs: the operator turned them off (`disable health`) or the server is
        in maintenance (haproxy CHK_ST_PAUSED)."""
        return not self.server.checking or "MAINT" in self.server.admin

    def wake(self) -> None:
        """Re-read `paused` now (the runtime API changed it): a paused loop resumes, a
        running one pauses before its next probe."""
        if self._wake is not None:
            self._wake.set()

    def observe(self, event: Event) -> None:
        """Count one observed event; at `error-limit` errors in a row apply `on-error`
        (haproxy __health_adjust()): the health may drop (the server may go DOWN at once)
        and the check loop is woken to bring its next check forward to `fastinter`."""
        if self.observer is None or self.paused:
            return
        mode = self.observer.event(event)
        if mode is None:
            return
        be, m = self.backend, self.server.model
        change = self.state.on_error(mode)
        why = f"Health analyze: {m.error_limit} consecutive errors, last one was: {event.value}"
        log.warning("backend %s server %s: %s (on-error %s)", be.name, m.name, why, mode)
        if change is not None:
            self._changed(change, why)
        if self._wake is not None:
            self._wake.set()

    def _changed(self, up: bool, why: str) -> None:
        be, m = self.backend, self.server.model
        log.warning("backend %s server %s is %s (%s)", be.name, m.name, "UP" if up else "DOWN", why)
        events = be.events
        if events is not None:  # the backend's `log` lines (haproxy: alert when down, notice when up)
            events.add(5 if up else 1, f"Server {be.name}/{m.name} is {'UP' if up else 'DOWN'}, reason: {why}.")
        be.server_state(self.server.index, up)

    def _logged(self, status, code: int, before: bool | None) -> None:
        """`option log-health-checks`: log a check whose result differs from the last one's
        (haproxy's "Health check for server ... succeeded/failed" lines, level info)."""
        events = self.backend.events
        if events is None or not self.backend.model.log_health_checks or before is status.passed:
            return
        st = self.state
        where = (f"{st.health - st.rise + 1}/{st.fall} UP" if st.up else f"{st.health}/{st.rise} DOWN")
        events.add(6, f"Health check for server {self.backend.name}/{self.server.model.name} "
                      f"{'succeeded' if status.passed else 'failed'}, reason: {status.value}"
                      f"{f' {code}' if code else ''}, status: {where}.")

    async def run(self) -> None:
        """Check the server forever (until cancelled). As in haproxy, the connection must
        open within `timeout connect` (or `inter` when shorter), and an `option httpchk`
        response must come within `timeout check` when it is set, else `inter`. The next
        check comes after HealthState.interval(): `inter`, `fastinter` or `downinter`; an
        on-error event brings a later one forward to `fastinter` from now."""
        be, srv = self.backend, self.server
        m, bm, loop, state = srv.model, be.model, be.loop, self.state
        connect_timeout = min(bm.timeouts.connect or m.inter, m.inter)
        read_timeout = bm.timeouts.check or m.inter
        self._wake = asyncio.Event()
        last = None  # the previous check's result (passed), for log-health-checks
        while True:
            while self.paused:  # disable health, or maintenance: no probe until resumed
                self._wake.clear()
                await self._wake.wait()
            code = 0
            began = loop.time()
            if bm.httpchk is None:
                status, text = await probe(loop, srv.addr[0], srv.addr[1], connect_timeout)
            else:
                status, code, text = await probe_http(loop, srv.addr[0], srv.addr[1], connect_timeout,
                                                      read_timeout, bm.httpchk, bm.check_expect)
            self.report.record(status, code, int((loop.time() - began) * 1000), text, state.up)
            self.last_status = status
            if self.paused:
                continue  # turned off while the probe ran: its result is ignored
            if status.passed and self.observer is not None:
                self.observer.reset()
            change = state.result(status)
            self._logged(status, code, last)
            last = status.passed
            if change is not None:
                self._changed(change, f"{status.value}{f' {code}' if code else ''}, "
                                      f"{m.rise if change else m.fall} in a row")
            due = loop.time() + state.interval(m.inter, m.fastinter, m.downinter)
            state.fast = False
            while (left := due - loop.time()) > 0:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), left)
                except TimeoutError:
                    break
                if self.paused:
                    break
                sooner = loop.time() + state.interval(m.inter, m.fastinter, m.downinter)
                state.fast = False
                due = min(due, sooner)

