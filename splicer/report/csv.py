"""haproxy's stats CSV (management.txt 9.1, the `;csv` page and `show stat`).

Rule: the columns are haproxy's static fields, in haproxy's order, then the `-` column that
ends them, then splicer's own (`spliced`, `copied`: body bytes moved through a pipe / through
user space). A field splicer does not have is left empty, as haproxy leaves the fields a row
type does not carry. The column names are those haproxy prints (src/stats-proxy.c
stat_cols_px[]); management.txt spells two of them differently (`agg_server_status_check`,
`h1_sess`...), haproxy's own output is what tools parse.
"""
from __future__ import annotations

COLUMNS = (
    "pxname", "svname", "qcur", "qmax", "scur", "smax", "slim", "stot", "bin", "bout",
    "dreq", "dresp", "ereq", "econ", "eresp", "wretr", "wredis", "status", "weight", "act",
    "bck", "chkfail", "chkdown", "lastchg", "downtime", "qlimit", "pid", "iid", "sid",
    "throttle", "lbtot", "tracked", "type", "rate", "rate_lim", "rate_max", "check_status",
    "check_code", "check_duration", "hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx",
    "hrsp_5xx", "hrsp_other", "hanafail", "req_rate", "req_rate_max", "req_tot", "cli_abrt",
    "srv_abrt", "comp_in", "comp_out", "comp_byp", "comp_rsp", "lastsess", "last_chk",
    "last_agt", "qtime", "ctime", "rtime", "ttime", "agent_status", "agent_code",
    "agent_duration", "check_desc", "agent_desc", "check_rise", "check_fall", "check_health",
    "agent_rise", "agent_fall", "agent_health", "addr", "cookie", "mode", "algo", "conn_rate",
    "conn_rate_max", "conn_tot", "intercepted", "dcon", "dses", "wrew", "connect", "reuse",
    "cache_lookups", "cache_hits", "srv_icur", "src_ilim", "qtime_max", "ctime_max",
    "rtime_max", "ttime_max", "eint", "idle_conn_cur", "safe_conn_cur", "used_conn_cur",
    "need_conn_est", "uweight", "agg_server_status", "agg_server_check_status",
    "agg_check_status", "srid", "sess_other", "h1sess", "h2sess", "h3sess", "req_other",
    "h1req", "h2req", "h3req", "proto", "priv_idle_cur", "reqbin", "reqbout", "resbin",
    "resbout", "cache_hint_hits",
)
"""haproxy's static proxy fields, 0 .. 117, in order."""

EXTRA = ("spliced", "copied")
"""splicer's columns, after the `-` delimiter (where haproxy puts its module fields)."""

HEADER = "# " + ",".join((*COLUMNS, "-", *EXTRA)) + ",\n"
"""The first line: `# ` then every column name followed by a comma (haproxy's form)."""

TYPE_FRONTEND, TYPE_BACKEND, TYPE_SERVER = 0, 1, 2
"""haproxy's `type` column."""

# the columns each row type carries (management.txt 9.1's [LFBS] letters), read from the
# stats dict under the same name
_COMMON = ("scur", "smax", "slim", "stot", "bin", "bout", "status", "mode", "dresp")
_HTTP = ("hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx", "req_tot")
_FRONTEND = (*_COMMON, *_HTTP, "dreq", "ereq", "rate", "rate_max", "req_rate", "req_rate_max",
             "intercepted", "iid")
_BACKEND = (*_COMMON, *_HTTP, "qcur", "qmax", "dreq", "econ", "eresp", "wretr", "wredis",
            "weight", "act", "bck", "chkdown", "lastchg", "downtime", "rate", "rate_max",
            "cli_abrt", "srv_abrt", "algo", "cookie", "intercepted", "uweight", "iid")
_SERVER = (*_COMMON, *_HTTP, "econ", "eresp", "wretr", "wredis", "weight", "act", "bck",
           "lastchg", "qlimit", "sid", "throttle", "rate", "rate_max", "cli_abrt", "srv_abrt",
           "addr", "cookie", "uweight", "idle_conn_cur", "used_conn_cur", "need_conn_est")
_CHECK = ("chkfail", "chkdown", "downtime", "check_status", "check_code", "check_duration",
          "last_chk", "check_desc", "check_rise", "check_fall", "check_health")


def field(value) -> str:
    """One CSV value: empty for None, 0/1 for booleans, a string quoted only when it holds a
    comma, a quote or a line break, its quotes doubled (management.txt 9.1)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _row(values: dict) -> str:
    cells = [field(values.get(c)) for c in COLUMNS]
    cells.append("-")
    cells.extend(field(values.get(c)) for c in EXTRA)
    return ",".join(cells) + ",\n"


def _pick(entry: dict, names) -> dict:
    return {n: entry.get(n) for n in names}


def proxy_names(stats: dict) -> list[str]:
    """The proxy names in the order rows are printed: by proxy id (`iid`, the order of the
    sections in the configuration), a `listen` section's name once."""
    fes, bes = stats.get("frontends", {}), stats.get("backends", {})
    names = list(dict.fromkeys([*fes, *bes]))
    ids = {n: (fes.get(n) or bes.get(n) or {}).get("iid") or 0 for n in names}
    return sorted(names, key=lambda n: ids[n])


def rows(stats: dict) -> list[dict]:
    """The CSV rows as {column: value} dicts (None: empty), in haproxy's order: for each
    proxy its FRONTEND row, its servers, its BACKEND row.

    Args:
        stats: a Proxy.stats() dict, or a merged one (splicer.stats.merge_stats()).
    """
    worker = stats.get("worker")
    pid = worker if isinstance(worker, int) else 1
    fes, bes = stats.get("frontends", {}), stats.get("backends", {})
    out = []
    for name in proxy_names(stats):
        fe = fes.get(name)
        if fe is not None:
            v = _pick(fe, _FRONTEND)
            v.update(pxname=name, svname="FRONTEND", type=TYPE_FRONTEND, pid=pid,
                     conn_rate=fe.get("rate"), conn_rate_max=fe.get("rate_max"),
                     conn_tot=fe.get("stot"), hrsp_other=0,
                     spliced=fe.get("spliced"), copied=fe.get("copied"))
            out.append(v)
        be = bes.get(name)
        if be is None:
            continue
        for sname, s in be.get("servers", {}).items():
            v = _pick(s, _SERVER)
            if s.get("checked"):
                v.update(_pick(s, _CHECK))
                v["check_code"] = s.get("check_code") or None  # only an L7 check has one
            v.update(pxname=name, svname=sname, type=TYPE_SERVER, pid=pid, iid=be.get("iid"),
                     mode=be.get("mode"),
                     qcur=0, qmax=0, hrsp_other=0, connect=s.get("stot", 0) + s.get("econ", 0),
                     reuse=s.get("reused"), srv_icur=s.get("idle"),
                     spliced=s.get("spliced"), copied=s.get("copied"))
            out.append(v)
        v = _pick(be, _BACKEND)
        v.update(pxname=name, svname="BACKEND", type=TYPE_BACKEND, pid=pid, hrsp_other=0,
                 connect=be.get("stot", 0) + be.get("econ", 0), reuse=be.get("reused"),
                 spliced=be.get("spliced"), copied=be.get("copied"))
        out.append(v)
    return out


def render_csv(stats: dict) -> str:
    """The stats as haproxy's CSV: HEADER, then one line per row (rows()).

    Args:
        stats: a Proxy.stats() dict or a merged one (Proxy.cluster_stats()).

    Returns:
        The text, each line ending with ",\\n" as haproxy's.
    """
    return HEADER + "".join(_row(v) for v in rows(stats))
