"""What the socket answers for a command, from the replies of every worker.

Rule: one function, combine(), turns the workers' replies (runtime/command.py execute():
{"text": ...} or {"data": ...}, or the channel's {"error": ...}) into the command's text,
as its kind says (admin/commands.py): counters are summed (splicer.stats.merge_stats) and
rendered once, captures are put together in time order, per-worker texts are joined, and
a change answers what the first worker answered. Nothing here does I/O.
"""
from __future__ import annotations

import json

from splicer.admin import info as info_mod
from splicer.admin.commands import ALL, ANY, CHANGE, EACH, Command
from splicer.admin.errors import ErrorCapture, render_errors
from splicer.stats import merge_stats


def _failed(replies: list[dict]) -> str:
    return "".join(f"worker {r.get('worker', '?')}: {r['error']}\n" for r in replies if "error" in r)


def show_stat(stats: dict, typed: bool) -> str:
    """`show stat` of merged counters: haproxy's CSV (splicer.report.csv.render_csv), or the
    typed form (admin/typed.py)."""
    from splicer.report.csv import render_csv

    csv = render_csv(stats)
    if not typed:
        return csv
    from splicer.admin.typed import typed_stat

    return typed_stat(csv)


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
            return show_stat(stats, cmd.action == "typed") + failed
        except ImportError:
            return "show stat: the CSV renderer (splicer.report.csv) is not part of this build\n"
    raise ValueError(f"no merge for {name!r}")
