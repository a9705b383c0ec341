"""The HTML stats page (haproxy's `stats uri` report): one table per proxy, with its
frontend row, its servers and its backend row.

Rule: a pure function of a stats dict and the page's options. Every text that can come
from outside splicer (server, proxy and node names, check reasons, the URI the request
used) goes through esc() (html.escape, quotes included) before it is written; numbers are
formatted here. The admin form (with `stats admin`) POSTs `b=<backend>`, one
`s=<server>` per checked server and `action=ready|drain|maint` back to the stats URI
(http/service.py admin_commands()).
"""
from __future__ import annotations

from dataclasses import dataclass
from html import escape

from splicer.report.csv import proxy_names

STATUS_MESSAGES = {
    "DONE": ("ok", "Action processed successfully."),
    "PART": ("warn", "Action not processed for every server (see the log)."),
    "NONE": ("warn", "Nothing has changed."),
    "ERRP": ("err", "Action not processed: invalid parameters."),
    "DENY": ("err", "Action denied: the admin level is not granted."),
    "EXCD": ("err", "Action not processed: the request was too large."),
}
"""What the `;st=<status>` suffix shows after an admin action (haproxy's words)."""


@dataclass(frozen=True)
class PageInfo:
    """What the page says about itself.

    Attributes:
        uri: the stats URI (as text) its links and its form use.
        refresh: seconds between reloads (0: none; `;norefresh` turns it off).
        admin: the admin level is granted (server checkboxes and the action form).
        legends: `stats show-legends`: addresses, cookies and ids.
        version: the splicer version to show (None: `stats hide-version`, the default).
        node: `stats show-node` name (None: not shown); desc: `stats show-desc`.
        status: the `;st=` outcome to show ("" none).
        up_only: `;up`: only the servers that are UP.
    """

    uri: str
    refresh: float = 0.0
    admin: bool = False
    legends: bool = False
    version: str | None = None
    node: str | None = None
    desc: str | None = None
    status: str = ""
    up_only: bool = False


def esc(value) -> str:
    """HTML-escape one value for text and for quoted attributes (None: "")."""
    return "" if value is None else escape(str(value), quote=True)


def human_seconds(s) -> str:
    """haproxy's short duration: 0s, 42s, 3m5s, 2h1m, 4d3h."""
    if s is None or s == "":
        return ""
    s = int(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"


def _n(v) -> str:
    if v is None or v == "":
        return ""
    if isinstance(v, bool):
        return "Y" if v else "-"
    return esc(v)


def _row_class(kind: str, st: dict) -> str:
    if kind == "frontend":
        return "frontend"
    if kind == "backend":
        return "backend" + ("" if st.get("status") == "UP" else " down")
    status = str(st.get("status", ""))
    word = status.split(" ", 1)[0]
    role = "backup" if st.get("backup") else "active"
    if word == "MAINT":
        return "maint"
    if word == "DRAIN":
        return "draining"
    if word == "DOWN":
        return f"{role}_down" if " " not in status else f"{role}_going_up"
    if " " in status:
        return f"{role}_going_down"
    return f"{role}_up" if word != "no" else f"{role}_nocheck"


_HEAD = (
    ("Queue", ("Cur", "Max", "Limit")),
    ("Session rate", ("Cur", "Max", "Limit")),
    ("Sessions", ("Cur", "Max", "Limit", "Total")),
    ("Bytes", ("In", "Out")),
    ("Body bytes", ("Spliced", "Copied")),
    ("Denied", ("Req", "Resp")),
    ("Errors", ("Req", "Conn", "Resp")),
    ("Warnings", ("Retr", "Redis")),
    ("Server", ("Status", "LastChk", "Wght", "Act", "Bck", "Chk", "Dwn", "Dwntme", "Thrtle")),
)


def _cells(kind: str, st: dict) -> list[str]:
    """The cells of one row, in _HEAD's order, already escaped."""
    fe, be, srv = kind == "frontend", kind == "backend", kind == "server"
    q = ["", "", ""] if fe else [_n(st.get("qcur")), _n(st.get("qmax")), _n(st.get("qlimit")) if srv else ""]
    rate = [_n(st.get("rate")), _n(st.get("rate_max")), ""]
    sess = [_n(st.get("scur")), _n(st.get("smax")), _n(st.get("slim")), _n(st.get("stot"))]
    byt = [_n(st.get("bin")), _n(st.get("bout"))]
    body = [_n(st.get("spliced")), _n(st.get("copied"))]
    denied = [_n(st.get("dreq")) if not srv else "", _n(st.get("dresp"))]
    errors = [_n(st.get("ereq")) if fe else "", "" if fe else _n(st.get("econ")), "" if fe else _n(st.get("eresp"))]
    warn = ["", ""] if fe else [_n(st.get("wretr")), _n(st.get("wredis"))]
    if fe:
        server = [esc(st.get("status")), "", "", "", "", "", "", "", ""]
    elif be:
        server = [f"{human_seconds(st.get('lastchg'))} {esc(st.get('status'))}", "",
                  _n(st.get("weight")), _n(st.get("act")), _n(st.get("bck")), "",
                  _n(st.get("chkdown")), human_seconds(st.get("downtime")), ""]
    else:
        checked = st.get("checked")
        lastchk = ""
        if checked:
            code = st.get("check_code")
            lastchk = (f'<span class="chk" title="{esc(st.get("check_desc"))}">'
                       f'{esc(st.get("check_status"))}{"/" + esc(code) if code else ""}'
                       f' in {_n(st.get("check_duration"))}ms</span>')
            if st.get("last_chk"):
                lastchk += f' <span class="lastchk">{esc(st.get("last_chk"))}</span>'
        throttle = st.get("throttle")
        server = [f"{human_seconds(st.get('lastchg'))} {esc(st.get('status'))}", lastchk,
                  f"{_n(st.get('weight'))}/{_n(st.get('uweight'))}",
                  "-" if st.get("backup") else "Y", "Y" if st.get("backup") else "-",
                  _n(st.get("chkfail")) if checked else "", _n(st.get("chkdown")) if checked else "",
                  human_seconds(st.get("downtime")) if checked else "",
                  f"{throttle} %" if throttle is not None else "-"]
    return [*q, *rate, *sess, *byt, *body, *denied, *errors, *warn, *server]


def _table(name: str, fe: dict | None, be: dict | None, info: PageInfo) -> str:
    admin = info.admin and be is not None and bool(be.get("servers"))
    out = [f'<table class="proxy" id="px-{esc(name)}">',
           f'<caption><a name="{esc(name)}"></a>{esc(name)}'
           + (f' <span class="legend">mode {esc((fe or be).get("mode"))}'
              + (f', balance {esc(be.get("algo"))}' if be is not None and be.get("algo") else "")
              + "</span>" if info.legends else "") + "</caption>",
           "<thead><tr>" + ('<th rowspan="2"></th>' if admin else "") + '<th rowspan="2">Name</th>'
           + "".join(f'<th colspan="{len(cols)}">{g}</th>' for g, cols in _HEAD) + "</tr><tr>"
           + "".join(f"<th>{c}</th>" for _, cols in _HEAD for c in cols) + "</tr></thead><tbody>"]

    def row(kind: str, label: str, st: dict, check: str = "") -> None:
        lead = f"<td>{check}</td>" if admin else ""
        title = ""
        if info.legends and kind == "server":
            title = f' title="{esc(st.get("addr"))}{", cookie " + esc(st.get("cookie")) if st.get("cookie") else ""}"'
        out.append(f'<tr class="{_row_class(kind, st)}">{lead}<td class="name"{title}>{esc(label)}</td>'
                   + "".join(f"<td>{c}</td>" for c in _cells(kind, st)) + "</tr>")
    if fe is not None:
        row("frontend", "Frontend", fe)
    if be is not None:
        for sname, srv in be.get("servers", {}).items():
            if info.up_only and not str(srv.get("status", "")).startswith(("UP", "no check")):
                continue
            box = f'<input type="checkbox" name="s" value="{esc(sname)}">' if admin else ""
            row("server", sname, srv, box)
        row("backend", "Backend", be)
    out.append("</tbody></table>")
    table = "\n".join(out)
    if not admin:
        return table
    return (f'<form method="post" action="{esc(info.uri)}">{table}\n'
            '<div class="actions">Choose the action to perform on the checked servers: '
            '<select name="action"><option value="">(none)</option>'
            '<option value="ready">Set state to READY</option>'
            '<option value="drain">Set state to DRAIN</option>'
            '<option value="maint">Set state to MAINT</option></select> '
            f'<input type="hidden" name="b" value="{esc(name)}">'
            '<input type="submit" value="Apply"></div></form>')


_STYLE = """
body { font-family: arial, helvetica, sans-serif; font-size: 11px; background: #fff; color: #000; }
h1 { font-size: 20px; margin: 0 0 4px 0; } h2 { font-size: 14px; margin: 4px 0 10px 0; color: #333; }
table.proxy { border-collapse: collapse; margin-bottom: 14px; }
table.proxy caption { text-align: left; font-weight: bold; font-size: 14px; background: #20a0ff;
  color: #fff; padding: 2px 6px; }
table.proxy th { background: #ddd; border: 1px solid #999; padding: 1px 3px; font-weight: normal; }
table.proxy td { border: 1px solid #bbb; padding: 1px 3px; text-align: right; white-space: nowrap; }
table.proxy td.name { text-align: left; font-weight: bold; }
tr.frontend, tr.backend { background: #e8e8d0; } tr.backend.down { background: #ff9090; }
tr.active_up { background: #c0ffc0; } tr.backup_up { background: #b0d0ff; }
tr.active_going_down, tr.backup_going_down { background: #ffffa0; }
tr.active_going_up, tr.backup_going_up { background: #ffd020; }
tr.active_down, tr.backup_down { background: #ff9090; } tr.maint { background: #c07820; }
tr.draining { background: #20a0ff; } tr.active_nocheck, tr.backup_nocheck { background: #e0e0e0; }
td.active_up { background: #c0ffc0; } td.backup_up { background: #b0d0ff; }
td.active_going_down { background: #ffffa0; } td.active_going_up { background: #ffd020; }
td.active_down { background: #ff9090; } td.draining { background: #20a0ff; } td.maint { background: #c07820; }
td.active_nocheck { background: #e0e0e0; }
span.lastchk { color: #700; display: block; white-space: normal; max-width: 18em; } div.msg { padding: 4px; margin: 6px 0; border: 1px solid #999; }
div.msg.ok { background: #c0ffc0; } div.msg.warn { background: #ffffa0; } div.msg.err { background: #ff9090; }
table.legend td { padding: 1px 6px; border: 1px solid #bbb; }
"""


def render_page(stats: dict, info: PageInfo) -> str:
    """The whole HTML page.

    Args:
        stats: a Proxy.stats() dict or a merged one (Proxy.cluster_stats()).
        info: the page's options (PageInfo).

    Returns:
        The document, UTF-8 text.
    """
    pids = stats.get("pid")
    pids = pids if isinstance(pids, list) else [pids]
    workers = stats.get("worker")
    nworkers = len(workers) if isinstance(workers, list) else 1
    head = ['<!DOCTYPE html>', '<html><head><meta charset="utf-8">',
            '<title>Statistics Report for splicer</title>']
    if info.refresh:
        head.append(f'<meta http-equiv="refresh" content="{int(info.refresh)}">')
    head.append(f"<style>{_STYLE}</style></head><body>")
    body = [f"<h1>splicer{' version ' + esc(info.version) if info.version else ''}</h1>",
            f"<h2>Statistics Report for pid {esc(', '.join(str(p) for p in pids))}"
            f"{' on ' + esc(info.node) if info.node else ''}</h2>"]
    if info.desc:
        body.append(f'<p class="desc">{esc(info.desc)}</p>')
    uri = esc(info.uri)
    links = [f'<a href="{uri};csv">CSV export</a>']
    if info.refresh:
        links.append(f'<a href="{uri};norefresh">Stop refresh</a>')
    links.append(f'<a href="{uri};up">Hide DOWN servers</a>' if not info.up_only
                 else f'<a href="{uri}">Show all servers</a>')
    body.append(f'<p class="info">{nworkers} worker(s), counters summed over all of them. '
                + " | ".join(links) + "</p>")
    if info.status in STATUS_MESSAGES:
        cls, text = STATUS_MESSAGES[info.status]
        body.append(f'<div class="msg {cls}" id="status">{esc(text)}</div>')
    fes, bes = stats.get("frontends", {}), stats.get("backends", {})
    for name in proxy_names(stats):
        body.append(_table(name, fes.get(name), bes.get(name), info))
    if info.legends:
        body.append('<table class="legend"><tr>' + "".join(
            f'<td class="{cls}">{text}</td>' for cls, text in (
                ("active_up", "active UP"), ("backup_up", "backup UP"),
                ("active_going_down", "going DOWN (UP n/m)"), ("active_going_up", "going UP (DOWN n/m)"),
                ("active_down", "DOWN"), ("draining", "DRAIN"), ("maint", "MAINT"),
                ("active_nocheck", "no check"))) + "</tr></table>")
    body.append("</body></html>\n")
    return "\n".join(head + body)
