"""What the socket answers for a command, from the replies of every worker.

Rule: one function, combine(), turns the workers' replies (runtime/command.py execute():
{"text": ...} or {"data": ...}, or the channel's {"error": ...}) into the command's text,
as its kind says (admin/commands.py): counters are summed (splicer.stats.merge_stats) and
rendered once, captures are put together in time order, per-worker texts are joined, and
a change answers what the first worker answered. `show stat`'s filter (`<iid> <type>
<sid>`, `up`, `no-maint`) picks its rows here, from the summed counters' CSV, so the CSV
and the typed form always show the same rows. Nothing here does I/O.
"""
from __future__ import annotations

import csv
import io
import json

from splicer.admin import info as info_mod
from splicer.admin.commands import (ALL, ANY, CHANGE, EACH, NO_SUCH_PROXY, STATS_TYPE_BE, STATS_TYPE_SO,
                                    STATS_TYPE_SV, Command, StatFilter, atoi, stat_proxy_id)
from splicer.admin.errors import ErrorCapture, render_errors
from splicer.stats import merge_stats


def _failed(replies: list[dict]) -> str:
    return "".join(f"worker {r.get('worker', '?')}: {r['error']}\n" for r in replies if "error" in r)


def _server_up(status: str) -> bool:
    """A server row's `status` says it is not stopped (haproxy cur_state != SRV_ST_STOPPED:
    UP, DRAIN, no check; a server in maintenance is stopped)."""
    return not status.startswith(("DOWN", "MAINT"))


def _hidden(status: str, flt: StatFilter) -> bool:
    """`no-maint` / `up` leave this server row out (haproxy stats_dump_proxy_to_buffer():
    STAT_HIDE_MAINT skips a server in maintenance; STAT_HIDE_DOWN also skips one DOWN and
    not on its way up, i.e. unchecked or at health 0: status "DOWN", not "DOWN 1/2")."""
    if (flt.no_maint or flt.up) and status.startswith("MAINT"):
        return True
    return flt.up and status == "DOWN"


def select_stat(csv_text: str, flt: StatFilter) -> str:
    """The rows of a `show stat` CSV that `flt` selects, under the same header line (haproxy
    2.6 management.txt "show stat"; src/stats.c stats_dump_proxy_to_buffer(),
    stats_dump_fe_stats(), stats_dump_be_stats(), stats_fill_be_stats()).

    With `<iid> <type> <sid>` (flt.bound): only the proxy <iid> (-1: every one); of it, the
    FRONTEND row if <type> has bit 1, the BACKEND row if bit 2, the server rows if bit 4,
    and of these only server <sid> (-1: every one); <sid> selects no frontend or backend.
    `up` and `no-maint` leave servers out (_hidden()), and the BACKEND row's status then
    counts its servers as haproxy does: "UP (1/2)", the servers not stopped of all of them.

    Args:
        csv_text: render_csv()'s text: "# pxname,..." then one row per line.
        flt: the command's StatFilter.

    Returns:
        The CSV (only its header when nothing matches, as haproxy: a proxy id no proxy
        has, a <type> of 0), or NO_SUCH_PROXY when the <iid> word is no proxy's name and
        reads as 0 (`show stat x 2 -1`).
    """
    from splicer.report.csv import field

    if not (flt.bound or flt.up or flt.no_maint):
        return csv_text
    head, _, body = csv_text.partition("\n")
    names = next(csv.reader([head[2:]]))
    col = {n: i for i, n in enumerate(names) if n}
    rows = [r for r in csv.reader(io.StringIO(body)) if r]

    def get(row: list[str], name: str) -> str:
        i = col.get(name)
        return row[i] if i is not None and i < len(row) else ""

    def num(row: list[str], name: str) -> int:
        return atoi(get(row, name))

    iid = -1
    if flt.bound:
        ids: dict[str, int] = {}
        for r in rows:
            ids.setdefault(get(r, "pxname"), num(r, "iid"))
        got = stat_proxy_id(flt.proxy, ids)
        if got is None:
            return NO_SUCH_PROXY
        iid = got
    servers: dict[str, list[int]] = {}  # pxname: [not stopped, all], of every server
    for r in rows:
        if num(r, "type") == STATS_TYPE_SV:
            n = servers.setdefault(get(r, "pxname"), [0, 0])
            n[0] += _server_up(get(r, "status"))
            n[1] += 1
    out = [head + "\n"]
    for r in rows:
        obj = num(r, "type")
        if flt.bound and iid != -1 and num(r, "iid") != iid:
            continue
        if not flt.wants(obj):
            continue
        if obj in (STATS_TYPE_SV, STATS_TYPE_SO) and flt.bound and flt.sid != -1 and num(r, "sid") != flt.sid:
            continue
        if obj == STATS_TYPE_SV and _hidden(get(r, "status"), flt):
            continue
        if obj == STATS_TYPE_BE and (flt.up or flt.no_maint) and "status" in col:
            up, every = servers.get(get(r, "pxname"), (0, 0))
            r = list(r)
            r[col["status"]] = f"{get(r, 'status')} ({up}/{every})"
        out.append(",".join(field(c) for c in r) + "\n")
    return "".join(out)


def show_stat(stats: dict, typed: bool, flt: StatFilter | None = None) -> str:
    """`show stat` of merged counters: haproxy's CSV (splicer.report.csv.render_csv), or the
    typed form (admin/typed.py), of the rows `flt` selects (select_stat(); haproxy 2.6
    management.txt "show stat").

    Returns:
        The text; NO_SUCH_PROXY, in either form, for an <iid> that is no proxy.
    """
    from splicer.report.csv import render_csv

    text = render_csv(stats)
    if flt is not None:
        text = select_stat(text, flt)
        if text == NO_SUCH_PROXY:
            return text
    if not typed:
        return text
    from splicer.admin.typed import typed_stat

    return typed_stat(text)


def combine(cmd: Command, replies: list[dict], context: dict) -> str:
    """The answer to `cmd` from every worker's reply.

    Args:
        cmd: the command that was run.
        replies: one reply per worker, in worker order.
        context: what the master knows and the workers do not: "version", "pid",
            "uptime", "start_time", "workers", "maxconn", "maxpipes", "listeners",
            "node", "now" (UNIX time) -- see admin/info.py.

    Returns:
        The text (without the empty line that ends an answer); a worker that did not
        answer adds "worker N: <error>" lines.
    """
    ok = [r for r in replies if "error" not in r]
    failed = _failed(replies)
    if cmd.kind in (ANY, CHANGE, ALL):
        return (ok[0].get("text", "") if ok else "") + failed
    if cmd.kind == EACH:
        return "".join(r.get("text", "") for r in ok) + failed
    data = [r["data"] for r in ok if "data" in r]
    name = cmd.name
    if name == "show errors":
        captures = [ErrorCapture.from_dict(d) for w in data for d in w.get("errors", ())]
        return render_errors(captures, context["now"]) + failed
    stats = merge_stats([d["stats"] for d in data]) if data else {}
    if name == "show counters":
        return json.dumps(stats, separators=(",", ":"), sort_keys=True) + "\n" + failed
    if name == "show info":
        fields = info_mod.info_fields(
            stats, version=context["version"], pid=context["pid"], uptime=context["uptime"],
            start_time=context["start_time"], workers=len(data), maxconn=context["maxconn"],
            maxpipes=context["maxpipes"], listeners=context["listeners"], node=context["node"])
        return info_mod.render_info(fields) + failed
    if name == "show stat":
        try:
            flt = cmd.value if isinstance(cmd.value, StatFilter) else None
            return show_stat(stats, cmd.action == "typed", flt) + failed
        except ImportError:
            return "show stat: the CSV renderer (splicer.report.csv) is not part of this build\n"
    raise ValueError(f"no merge for {name!r}")
