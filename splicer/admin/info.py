"""`show info`: the process's figures as haproxy's `Key: value` lines, summed over workers.

Rule: the names, their order and how each is computed from the counters live here; the
counters come in as the merged stats dict (splicer.stats.merge_stats() of every worker's
Proxy.stats()), the rest as arguments. haproxy reports one process; splicer's workers are
its threads (Nbthread), and every count is their sum.
"""
from __future__ import annotations


def uptime_text(seconds: int) -> str:
    """haproxy's `Uptime` form: "<d>d <h>h<mm>m<ss>s"."""
    d, rest = divmod(max(0, int(seconds)), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{d}d {h}h{m:02d}m{s:02d}s"


def info_fields(stats: dict, *, version: str, pid: int, uptime: float, start_time: float, workers: int,
                maxconn: int, maxpipes: int, listeners: int, node: str) -> list[tuple[str, object]]:
    """The `show info` fields, in haproxy's order where haproxy has the field.

    Args:
        stats: merged stats of every worker (keys "frontends", "backends", "engine", "pipes").
        version: splicer's version.
        pid: the master's pid (the process an operator signals).
        uptime: seconds since the master started.
        start_time: UNIX time the master started.
        workers: live workers (haproxy's Nbthread).
        maxconn: `maxconn` (global), per worker.
        maxpipes: pipes each worker may hold.
        listeners: listening sockets.
        node: the host name.

    Returns:
        (name, value) pairs. CurrConns, CumConns, CumReq and TotalBytesOut add up the
        frontends' scur, stot, req_tot and bout; PipesUsed/PipesFree the engines' and the
        loops' pools; TotalSplicdedBytesOut (haproxy's spelling) every byte spliced.
    """
    fes = stats.get("frontends", {}).values()
    eng = stats.get("engine", {})
    pipes = stats.get("pipes", {})
    spliced = eng.get("spliced_bytes", 0) + pipes.get("spliced_bytes", 0)
    copied = sum(fe.get("copied", 0) for fe in fes)
    return [
        ("Name", "splicer"),
        ("Version", version),
        ("Nbthread", workers),
        ("Nbproc", 1),
        ("Process_num", 1),
        ("Pid", pid),
        ("Uptime", uptime_text(int(uptime))),
        ("Uptime_sec", int(uptime)),
        ("Maxconn", maxconn),
        ("Hard_maxconn", maxconn),
        ("CurrConns", sum(fe.get("scur", 0) for fe in fes)),
        ("CumConns", sum(fe.get("stot", 0) for fe in fes)),
        ("CumReq", sum(fe.get("req_tot", 0) for fe in fes)),
        ("Maxpipes", maxpipes * workers),
        ("PipesUsed", eng.get("pipes_used", 0) + pipes.get("used", 0)),
        ("PipesFree", eng.get("pipes_free", 0) + pipes.get("free", 0)),
        ("node", node),
        ("Stopping", 0),
        ("Listeners", listeners),
        ("TotalBytesOut", sum(fe.get("bout", 0) for fe in fes)),
        ("TotalSplicdedBytesOut", spliced),
        ("Start_time_sec", int(start_time)),
        ("Workers", workers),
        ("SplicedBytes", spliced),
        ("CopiedBytes", copied),
    ]


def render_info(fields: list[tuple[str, object]]) -> str:
    """The `show info` answer: one "Name: value" line per field."""
    return "".join(f"{name}: {value}\n" for name, value in fields)
