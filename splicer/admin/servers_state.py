"""`show servers state` and the server-state-file: haproxy's version-1 format, both ways.

Rule: the text format lives here, rendered and parsed; which state a runtime server is in,
and how a saved state is applied to it, is runtime/command.py's business.

The format (haproxy management.txt, "show servers state"): a first line "1" (the version),
a second line naming the columns after '#', then one line per server, fields separated by
one space, "-" for an empty string. Lines starting with '#' are comments. haproxy reads a
state back by backend and server name (the ids must agree when both are forced by the
configuration; splicer has no `id` keyword, so names decide).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

VERSION = "1"

COLUMNS = ("be_id", "be_name", "srv_id", "srv_name", "srv_addr", "srv_op_state", "srv_admin_state",
           "srv_uweight", "srv_iweight", "srv_time_since_last_change", "srv_check_status",
           "srv_check_result", "srv_check_health", "srv_check_state", "srv_agent_state",
           "bk_f_forced_id", "srv_f_forced_id", "srv_fqdn", "srv_port", "srvrecord", "srv_use_ssl",
           "srv_check_port", "srv_check_addr", "srv_agent_addr", "srv_agent_port")
"""The version-1 columns, in order."""

# srv_op_state (haproxy enum srv_state)
SRV_ST_STOPPED = 0
SRV_ST_STARTING = 1
SRV_ST_RUNNING = 2
SRV_ST_STOPPING = 3

# srv_admin_state (haproxy enum srv_admin: a mask)
SRV_ADMF_FMAINT = 0x01   # forced into maintenance (CLI, state file)
SRV_ADMF_CMAINT = 0x04   # in maintenance by the configuration (`disabled`)
SRV_ADMF_FDRAIN = 0x08   # forced into drain
SRV_ADMF_MAINT = SRV_ADMF_FMAINT | SRV_ADMF_CMAINT

# srv_check_result (haproxy CHK_RES_*)
CHK_RES_UNKNOWN = 0
CHK_RES_FAILED = 2
CHK_RES_PASSED = 3

# srv_check_state (haproxy CHK_ST_*: a mask)
CHK_ST_CONFIGURED = 0x02
CHK_ST_ENABLED = 0x04
CHK_ST_PAUSED = 0x08

CHECK_STATUS_CODES = {
    "UNKNOWN": 0, "INI": 1, "START": 2, "CHECKED": 3, "HANA": 4, "SOCKERR": 5,
    "L4OK": 6, "L4TOUT": 7, "L4CON": 8, "L6OK": 9, "L6TOUT": 10, "L6RSP": 11,
    "L7TOUT": 12, "L7RSP": 13, "L57DATA": 14, "L7OK": 15, "L7OKC": 16, "L7STS": 17,
}
"""srv_check_status: haproxy's HCHK_STATUS_* numbers by name (L7OK is haproxy's L7OKD)."""


@dataclass(frozen=True)
class ServerState:
    """One line of the format. Field names are the columns without their `srv_`/`be_`
    prefixes where that is unambiguous; strings "" are written "-"."""

    be_id: int
    be_name: str
    srv_id: int
    srv_name: str
    srv_addr: str
    op_state: int = SRV_ST_RUNNING
    admin_state: int = 0
    uweight: int = 1
    iweight: int = 1
    time_since_last_change: int = 0
    check_status: int = CHECK_STATUS_CODES["INI"]
    check_result: int = CHK_RES_UNKNOWN
    check_health: int = 0
    check_state: int = 0
    agent_state: int = 0
    bk_f_forced_id: int = 0
    srv_f_forced_id: int = 0
    fqdn: str = ""
    port: int = 0
    srvrecord: str = ""
    use_ssl: int = 0
    check_port: int = 0
    check_addr: str = ""
    agent_addr: str = ""
    agent_port: int = 0


_FIELDS = fields(ServerState)
assert len(_FIELDS) == len(COLUMNS)


def render(states: list[ServerState]) -> str:
    """The `show servers state` answer for `states` (version line, header, one line each)."""
    lines = [VERSION, "# " + " ".join(COLUMNS)]
    for s in states:
        values = []
        for f in _FIELDS:
            v = getattr(s, f.name)
            values.append("-" if v == "" else str(v))
        lines.append(" ".join(values))
    return "\n".join(lines) + "\n"


class StateFileError(ValueError):
    """A server-state-file that cannot be read: its message says which line and why."""


def parse(text: str) -> list[ServerState]:
    """Read a `show servers state` dump (a server-state-file).

    Args:
        text: the whole file.

    Returns:
        The servers' states in file order; comment lines and empty lines are skipped.

    Raises:
        StateFileError: the version is not 1, or a line has too few fields or a number
            that is not one ("line N: ...").
    """
    lines = text.splitlines()
    body = [(n, ln) for n, ln in enumerate(lines, 1) if ln.strip()]
    if not body:
        return []
    n, first = body[0]
    if first.strip() != VERSION:
        raise StateFileError(f"line {n}: unsupported version '{first.strip()}' (only version 1 is known)")
    out = []
    for n, line in body[1:]:
        if line.lstrip().startswith("#"):
            continue
        words = line.split()
        if len(words) < 19:  # haproxy requires the columns up to srv_port
            raise StateFileError(f"line {n}: {len(words)} fields, version 1 has {len(COLUMNS)}")
        values = {}  # the columns a short line leaves out keep their defaults
        for f, w in zip(_FIELDS, words):
            if f.type in ("int", int):
                try:
                    values[f.name] = int(w)
                except ValueError:
                    raise StateFileError(f"line {n}: {f.name} '{w}' is not a number") from None
            else:
                values[f.name] = "" if w == "-" else w
        out.append(ServerState(**values))
    return out
