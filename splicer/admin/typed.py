"""`show stat typed`: haproxy's typed output format (management.txt 9.2) of the CSV.

Rule: made from the CSV text render_csv() produced, so both forms always agree. Each
non-empty value becomes one line "<T>.<iid>.<sid>.<pos>.<name>.<proc>:<ONS>:<type>:<value>":
T is F, B, S or L (the row's `type` column 0..3), iid and sid its columns, pos the column's
position (from 0), proc 1 (the counters are the sum over every worker); ONS the origin,
nature and scope letters and type the value's type, as haproxy gives them for that column.
"""
from __future__ import annotations

import csv
import io

_OBJ = {"0": "F", "1": "B", "2": "S", "3": "L"}

_NAMES = ("pxname", "svname")
_STATUS = ("status", "check_status", "last_chk", "last_agt", "agent_status", "addr", "cookie", "mode",
           "algo", "check_desc", "agent_desc")
_GAUGES = ("qcur", "scur", "throttle", "lbtot_cur", "conn_cur")
_MAXIMA = ("qmax", "smax", "rate_max", "req_rate_max", "conn_rate_max", "ctime_max", "qtime_max",
           "rtime_max", "ttime_max", "eint_max")
_LIMITS = ("qlimit", "slim", "rate_lim")
_RATES = ("rate", "req_rate", "conn_rate")
_AVERAGES = ("weight", "act", "bck", "qtime", "ctime", "rtime", "ttime")
_DURATIONS = ("downtime", "lastchg", "check_duration", "lastsess")
_KEYS = ("pid", "iid", "sid", "type")


def field_type(name: str, value: str) -> str:
    """The "ONS:type" of column `name` (haproxy's stats fields' origin, nature, scope and
    type); counters that are not otherwise known are cumulative 64-bit metrics."""
    if name in _NAMES:
        return "KNS:str"
    if name in _STATUS:
        return "SGP:str" if name in ("status", "check_status") else "CON:str" if name == "addr" else "SOP:str"
    if name in _KEYS:
        return ("KGP" if name == "pid" else "KGS" if name in ("iid", "sid") else "CGS") + ":u32"
    if name in _GAUGES:
        return "MGP:u32"
    if name in _MAXIMA:
        return "MMP:u32"
    if name in _LIMITS:
        return "CLP:u32"
    if name in _RATES:
        return "MRP:u32"
    if name in _AVERAGES:
        return "MAP:u32" if name in ("weight", "act", "bck") else "MaP:u32"
    if name in _DURATIONS:
        return "MDP:u32" if name != "lastsess" else "MAP:s32"
    if not value.lstrip("-").isdigit():
        return "MOP:str"
    return "MCP:u64"


def typed_stat(csv_text: str) -> str:
    """The typed form of a `show stat` CSV (its first line "# pxname,svname,...")."""
    lines = csv_text.splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ValueError("not a show stat CSV: no '# pxname,...' header")
    header = next(csv.reader([lines[0][2:]]))
    pos = {name: i for i, name in enumerate(header)}
    out = []
    for row in csv.reader(io.StringIO("\n".join(lines[1:]))):
        if not row:
            continue
        row += [""] * (len(header) - len(row))
        obj = _OBJ.get(row[pos["type"]] if "type" in pos else "", "F")
        iid = row[pos["iid"]] if "iid" in pos else "0"
        sid = row[pos["sid"]] if "sid" in pos else "0"
        for i, (name, value) in enumerate(zip(header, row)):
            if value == "" or not name:
                continue
            out.append(f"{obj}.{iid or 0}.{sid or 0}.{i}.{name}.1:{field_type(name, value)}:{value}")
    return "".join(line + "\n" for line in out)
