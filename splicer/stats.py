"""Counters an operator reads: per frontend, backend and server, plus the pipe pool.

Named after haproxy's `show stat` columns where one exists (stot, req_tot, bin, bout, econ,
eresp, hrsp_5xx...), with splicer's own `spliced` and `copied` bytes: the proof that the
bodies went kernel-to-kernel. Plain integers; no I/O here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Counters:
    """Counters of one frontend, backend or server.

    Attributes:
        scur: (in the stats line) client connections open now on a frontend; on a server,
            the requests it serves now.
        qcur: (backends, in the stats line) requests waiting in the backend's queue now.
        stot: sessions (client connections for a frontend, server connections opened for a
            backend/server).
        req_tot: HTTP requests (streams) handled; tcp mode counts none.
        bin: bytes received from clients (request heads and bodies; tcp: client -> server).
        bout: bytes sent to clients (response heads and bodies; tcp: server -> client).
        spliced: body bytes moved through a pipe (both directions).
        copied: body bytes moved through user space (both directions).
        ereq: request errors (bad request, client timeout).
        dreq: requests denied by an ``http-request deny`` rule (haproxy's dreq).
        intercepted: requests answered by splicer itself with ``http-request return`` or
            ``redirect`` (haproxy's intercepted).
        dresp: responses denied by an ``http-response deny`` rule (haproxy's dresp), on
            the frontend, the backend and the server that sent the response.
        econ: failed connection attempts to servers.
        eresp: response errors (bad response, server timeout, server closed mid-body).
        hrsp_1xx..hrsp_5xx: responses sent to clients by class.
        reused: requests sent on a kept-alive server connection.
        wretr: retries (haproxy's wretr): a connection attempt or a request sent again.
        wredis: retries sent to another server than the failed one (haproxy's wredis).
        cli_abrt: body transfers aborted by the client (haproxy's cli_abrt).
        srv_abrt: body transfers aborted by the server (haproxy's srv_abrt).
        terms: streams by termination state ("--", "SD", "cR"...; http/termination.py).
    """

    stot: int = 0
    req_tot: int = 0
    bin: int = 0
    bout: int = 0
    spliced: int = 0
    copied: int = 0
    ereq: int = 0
    dreq: int = 0
    intercepted: int = 0
    dresp: int = 0
    econ: int = 0
    eresp: int = 0
    hrsp_1xx: int = 0
    hrsp_2xx: int = 0
    hrsp_3xx: int = 0
    hrsp_4xx: int = 0
    hrsp_5xx: int = 0
    reused: int = 0
    wretr: int = 0
    wredis: int = 0
    cli_abrt: int = 0
    srv_abrt: int = 0
    terms: dict = field(default_factory=dict)

    def count_status(self, status: int) -> None:
        """Count one response of `status` in its class (below 100 as 1xx, from 600 as 5xx)."""
        k = status // 100
        self.__dict__[_STATUS_CLASS[k] if 0 < k < 6 else "hrsp_1xx" if k < 1 else "hrsp_5xx"] += 1

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict (for the JSON stats line)."""
        return asdict(self)


_STATUS_CLASS = (None, "hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx")

NOT_SUMMED = frozenset({"pipe_size", "size"})
"""Per-pipe sizes: the merged value is the largest, not a sum."""

MAXIMA = frozenset()
"""Highest values seen (smax, qmax, rate_max...) are summed like the gauges they bound:
haproxy's typed output (nature 'M') says the cluster's maximum lies between the largest
worker's and the sum; the sum is the one that stays above the summed current values (a
page never shows a rate above its max)."""

PER_WORKER = frozenset({
    "status", "weight", "uweight", "act", "bck", "backup", "check_status", "check_code",
    "check_duration", "check_desc", "last_chk", "check_rise", "check_fall", "check_health",
    "lastchg", "downtime", "chkfail", "chkdown", "slim", "qlimit", "rate_lim", "throttle",
    "addr", "mode", "algo", "cookie", "admin", "checked", "sid", "iid", "lastsess",
    "iweight", "rise", "fall", "agent_status",
})
"""State, configuration and health fields (haproxy's typed natures S, C, D, A and a): each
worker checks every server on its own, so these are not added up; the merged value is the
first worker's (a string or list is never summed either)."""

STATE_FIELDS = PER_WORKER
"""The name the master branch gave PER_WORKER."""


class Availability:
    """The UP/DOWN history of a server or a backend (haproxy's lastchg, downtime, chkdown).

    Rule: the caller reports the state with the time; no clock is read here. A server in
    maintenance counts as DOWN (haproxy stops it); a backend is DOWN while no server of it
    is usable.

    Args:
        up: the state at `now`.
        now: seconds, monotonic (the loop's clock).

    Attributes:
        up: the state last reported.
        changed_at: when it last changed (or when the object was made).
        chkdown: UP -> DOWN transitions.
    """

    __slots__ = ("up", "changed_at", "_down_total", "chkdown")

    def __init__(self, up: bool = True, now: float = 0.0) -> None:
        self.up = up
        self.changed_at = now
        self._down_total = 0.0
        self.chkdown = 0

    def note(self, up: bool, now: float) -> None:
        """Report the state at `now`; a change is recorded, the same state is nothing."""
        if up == self.up:
            return
        if up:
            self._down_total += now - self.changed_at
        else:
            self.chkdown += 1
        self.up = up
        self.changed_at = now

    def lastchg(self, now: float) -> int:
        """Whole seconds since the last transition (haproxy lastchg)."""
        return max(0, int(now - self.changed_at))

    def downtime(self, now: float) -> int:
        """Whole seconds spent DOWN, the current stretch included (haproxy downtime)."""
        down = self._down_total + (0.0 if self.up else now - self.changed_at)
        return max(0, int(down))


class Rate:
    """Events per second over the last elapsed second (haproxy's `rate` columns, read from a
    freq_ctr), sampled once a second from a cumulative counter.

    Rule: the caller passes the counter and the time; no clock is read here.

    Attributes:
        rate: events counted during the last whole second sampled.
        rate_max: the highest `rate` seen.
    """

    __slots__ = ("_last", "_at", "rate", "rate_max")

    def __init__(self) -> None:
        self._last: int | None = None
        self._at = 0.0
        self.rate = 0
        self.rate_max = 0

    def sample(self, total: int, now: float) -> None:
        """Record the cumulative count `total` at `now` (seconds, monotonic). The rate is the
        increase since the previous sample scaled to one second (samples come about 1 s
        apart; a late one is not counted as a burst)."""
        if self._last is not None and now > self._at:
            self.rate = max(0, round((total - self._last) / max(now - self._at, 1.0)))
            if self.rate > self.rate_max:
                self.rate_max = self.rate
        self._last = total
        self._at = now


def merge_stats(lines: list[dict]) -> dict:
    """Sum the stats lines of several workers into one: dicts merge key by key.

    Counters, gauges and maxima are summed; PER_WORKER fields
    (server status, weight, check results, lastchg, downtime, limits...) and every
    non-number keep the first worker's value; NOT_SUMMED sizes take the largest.

    Args:
        lines: parsed `splicer-stats` JSON objects (Proxy.stats()), one per worker.

    Returns:
        One object of the same shape; "pid" and "worker" become lists of every worker's.
    """
    def add(a, b, key=""):
        if isinstance(a, dict) and isinstance(b, dict):
            out = dict(a)
            for k, v in b.items():
                out[k] = add(out[k], v, k) if k in out else v
            return out
        if key in PER_WORKER:
            return a
        if key in NOT_SUMMED or key in MAXIMA:
            return max(a, b) if isinstance(a, (int, float)) and isinstance(b, (int, float)) else a
        if isinstance(a, bool) or isinstance(b, bool):
            return a
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a + b
        return a

    merged: dict = {}
    for line in lines:
        rest = {k: v for k, v in line.items() if k not in ("pid", "worker")}
        merged = add(merged, rest) if merged else rest
    merged["pid"] = [line.get("pid") for line in lines]
    merged["worker"] = [line.get("worker") for line in lines]
    return merged
