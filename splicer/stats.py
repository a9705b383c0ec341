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
        """Count one response of `status` in its class."""
        name = _STATUS_CLASS[min(max(status // 100, 1), 5)]
        setattr(self, name, getattr(self, name) + 1)

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict (for the JSON stats line)."""
        return asdict(self)


_STATUS_CLASS = (None, "hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx")

NOT_SUMMED = frozenset({"pipe_size", "size"})
"""Per-pipe sizes: the merged value is the largest, not a sum."""

STATE_FIELDS = frozenset({"weight", "uweight", "iweight", "lastchg", "downtime", "check_duration", "check_code",
                          "last_chk", "rise", "fall", "status", "check_status", "agent_status"})
"""Numbers that describe a server's state rather than count events (each worker has its own
copy of the same value): the merged value is the first worker's, as for strings and
booleans."""


def merge_stats(lines: list[dict]) -> dict:
    """Sum the stats lines of several workers into one: every counter adds up, dicts merge
    key by key, and state fields (strings, booleans, STATE_FIELDS) keep the first worker's
    value; NOT_SUMMED sizes keep the largest.

    Args:
        lines: parsed `splicer-stats` JSON objects, one per worker.

    Returns:
        One object of the same shape; "pid" and "worker" become lists of every worker's.
    """
    def add(a, b, key=""):
        if isinstance(a, dict) and isinstance(b, dict):
            out = dict(a)
            for k, v in b.items():
                out[k] = add(out[k], v, k) if k in out else v
            return out
        if key in STATE_FIELDS or isinstance(a, bool) or isinstance(b, bool):
            return a
        if key in NOT_SUMMED:
            return max(a, b)
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
