"""The stats CSV against haproxy's column list (management.txt 9.1, typed in here)."""
from __future__ import annotations

import csv
import io

from splicer.report.csv import HEADER, render_csv

# management.txt 9.1 "the list of static fields", 0 .. 118, typed from the document. Two
# entries are spelled there otherwise than haproxy prints them (src/stats-proxy.c, and the
# header of the installed haproxy 2.6): 101 "agg_server_status_check" is printed
# "agg_server_check_status", and 104..106 "h1_sess", "h2_sess", "h3_sess" are printed
# "h1sess", "h2sess", "h3sess". Tools parse what haproxy prints: those spellings are kept.
MANAGEMENT_9_1 = """
pxname svname qcur qmax scur smax slim stot bin bout dreq dresp ereq econ eresp wretr wredis
status weight act bck chkfail chkdown lastchg downtime qlimit pid iid sid throttle lbtot
tracked type rate rate_lim rate_max check_status check_code check_duration hrsp_1xx hrsp_2xx
hrsp_3xx hrsp_4xx hrsp_5xx hrsp_other hanafail req_rate req_rate_max req_tot cli_abrt srv_abrt
comp_in comp_out comp_byp comp_rsp lastsess last_chk last_agt qtime ctime rtime ttime
agent_status agent_code agent_duration check_desc agent_desc check_rise check_fall
check_health agent_rise agent_fall agent_health addr cookie mode algo conn_rate conn_rate_max
conn_tot intercepted dcon dses wrew connect reuse cache_lookups cache_hits srv_icur src_ilim
qtime_max ctime_max rtime_max ttime_max eint idle_conn_cur safe_conn_cur used_conn_cur
need_conn_est uweight agg_server_status agg_server_check_status agg_check_status srid
sess_other h1sess h2sess h3sess req_other h1req h2req h3req proto priv_idle_cur reqbin reqbout
resbin resbout cache_hint_hits
""".split()

SERVER = {
    "stot": 7, "req_tot": 9, "bin": 100, "bout": 2000, "spliced": 1500, "copied": 600,
    "econ": 1, "eresp": 0, "wretr": 2, "wredis": 1, "hrsp_2xx": 9, "scur": 1, "smax": 3,
    "slim": None, "qlimit": 5, "status": "UP 1/3", "weight": 2, "uweight": 2, "act": 1,
    "bck": 0, "checked": True, "check_status": "L7STS", "check_code": 503,
    "check_duration": 4, "check_desc": "Layer7 wrong status",
    "last_chk": 'Service "down", really', "check_rise": 2, "check_fall": 3,
    "check_health": 3, "chkfail": 4, "chkdown": 1, "lastchg": 12, "downtime": 30,
    "rate": 3, "rate_max": 8, "addr": "127.0.0.1:8080", "sid": 1, "reused": 2, "idle": 1,
}
STATS = {
    "pid": 4242, "worker": 1,
    "frontends": {"www": {"stot": 5, "req_tot": 9, "scur": 2, "smax": 4, "slim": 1000,
                          "status": "OPEN", "bin": 100, "bout": 2000, "rate": 1, "rate_max": 2,
                          "req_rate": 3, "req_rate_max": 4, "ereq": 1, "mode": "http",
                          "spliced": 1500, "copied": 600}},
    "backends": {"farm": {"stot": 7, "status": "UP", "weight": 2, "act": 1, "bck": 0,
                          "qcur": 0, "qmax": 2, "mode": "http", "algo": "roundrobin",
                          "lastchg": 99, "downtime": 0, "spliced": 1500, "copied": 600,
                          "servers": {"web,1": SERVER}}},
}


def parse(text: str) -> list[dict]:
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    names = lines[0][2:].split(",")
    return [dict(zip(names, r)) for r in csv.reader(io.StringIO("\n".join(lines[1:]) + "\n"))]


def test_header_is_haproxys_static_columns_then_delimiter():
    names = HEADER[2:].rstrip("\n").split(",")
    assert names[:len(MANAGEMENT_9_1)] == MANAGEMENT_9_1
    assert names[len(MANAGEMENT_9_1):] == ["-", "spliced", "copied", ""]


def test_rows_in_haproxy_order_with_types():
    rows = parse(render_csv(STATS))
    assert [(r["pxname"], r["svname"], r["type"]) for r in rows] == [
        ("www", "FRONTEND", "0"), ("farm", "web,1", "2"), ("farm", "BACKEND", "1")]
    assert all(r["-"] == "-" for r in rows)
    assert all(len(r) == len(MANAGEMENT_9_1) + 4 for r in rows)


def test_server_row_fields():
    fe, srv, be = parse(render_csv(STATS))
    assert (srv["status"], srv["weight"], srv["check_status"], srv["check_code"]) == ("UP 1/3", "2", "L7STS", "503")
    assert (srv["last_chk"], srv["check_desc"]) == ('Service "down", really', "Layer7 wrong status")
    assert (srv["chkfail"], srv["chkdown"], srv["lastchg"], srv["downtime"]) == ("4", "1", "12", "30")
    assert (srv["qlimit"], srv["slim"], srv["smax"], srv["rate_max"]) == ("5", "", "3", "8")
    assert (srv["spliced"], srv["copied"], srv["connect"], srv["reuse"]) == ("1500", "600", "8", "2")
    assert (srv["ereq"], srv["dreq"]) == ("", "")  # [LF..] / [LFB.]: never on a server
    assert (fe["status"], fe["slim"], fe["req_rate_max"], fe["conn_tot"], fe["econ"]) == ("OPEN", "1000", "4", "5", "")
    assert (be["status"], be["qmax"], be["algo"], be["lastchg"], be["chkfail"]) == ("UP", "2", "roundrobin", "99", "")


def test_quoting_as_haproxy():
    text = render_csv(STATS)
    assert '"Service ""down"", really"' in text and ',"web,1",' in text
