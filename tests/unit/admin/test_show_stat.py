"""`show stat`'s filter: `[domain proxy] [{<iid>|<proxy>} <type> <sid>] [typed] [up|no-maint]`
parsed as haproxy 2.6 parses it (src/stats.c cli_parse_show_stat()) and the rows it selects
(stats_dump_proxy_to_buffer()), in the CSV and the typed form, over the summed workers."""
import pytest

from splicer.admin.commands import Answer, Command, Level, StatFilter, atoi, parse, stat_proxy_id
from splicer.admin.merge import combine, select_stat
from splicer.report.csv import HEADER

CTX = {"now": 0.0}


def server(sid, status, req):
    return {"sid": sid, "status": status, "req_tot": req, "stot": req}


def worker(n, req=1):
    """One worker's stats: frontend `fe` (proxy 1), backend `be` (proxy 2) with four servers,
    a `listen web` (proxy 3: a frontend and a backend of one id) with one."""
    return {
        "pid": 100 + n, "worker": n,
        "frontends": {"fe": {"iid": 1, "req_tot": req, "status": "OPEN"},
                      "web": {"iid": 3, "req_tot": req, "status": "OPEN"}},
        "backends": {
            "be": {"iid": 2, "status": "UP", "req_tot": req, "servers": {
                "s1": server(1, "UP", req), "s2": server(2, "MAINT", 0),
                "s3": server(3, "DOWN", 0), "s4": server(4, "DOWN 1/2", 0)}},
            "web": {"iid": 3, "status": "UP", "req_tot": req, "servers": {"w1": server(1, "no check", req)}},
        },
    }


REPLIES = [{"data": {"stats": worker(1, 2)}}, {"data": {"stats": worker(2, 3)}}]


def show(line: str) -> str:
    got = parse(tuple(line.split()), Level.USER, None)
    assert isinstance(got, Command), got
    return combine(got, REPLIES, CTX)


def names(text: str) -> list[tuple[str, str]]:
    """(pxname, svname) of each CSV row, after checking the header is the first line."""
    lines = text.split("\n")
    assert lines[0] + "\n" == HEADER
    return [tuple(r.split(",")[:2]) for r in lines[1:] if r]


def column(text: str, px: str, sv: str, name: str) -> str:
    lines = text.split("\n")
    header = lines[0][2:].split(",")
    row = next(r.split(",") for r in lines[1:] if r.startswith(f"{px},{sv},"))
    return row[header.index(name)]


EVERY = [("fe", "FRONTEND"), ("be", "s1"), ("be", "s2"), ("be", "s3"), ("be", "s4"), ("be", "BACKEND"),
         ("web", "FRONTEND"), ("web", "w1"), ("web", "BACKEND")]


def test_show_stat_type_4_dumps_only_the_servers():
    assert names(show("show stat -1 4 -1")) == [("be", "s1"), ("be", "s2"), ("be", "s3"), ("be", "s4"),
                                                ("web", "w1")]


def test_show_stat_type_1_dumps_only_the_frontends():
    assert names(show("show stat -1 1 -1")) == [("fe", "FRONTEND"), ("web", "FRONTEND")]


def test_show_stat_type_bits_are_ored_and_minus_1_is_every_type():
    assert names(show("show stat")) == EVERY
    assert show("show stat -1 -1 -1") == show("show stat")
    assert names(show("show stat -1 3 -1")) == [("fe", "FRONTEND"), ("be", "BACKEND"), ("web", "FRONTEND"),
                                                ("web", "BACKEND")]
    assert names(show("show stat -1 6 -1")) == [r for r in EVERY if r[1] != "FRONTEND"]
    assert names(show("show stat -1 7 -1")) == EVERY


def test_show_stat_by_backend_name_and_type_2_dumps_its_backend_row():
    out = show("show stat be 2 -1")
    assert names(out) == [("be", "BACKEND")]
    assert column(out, "be", "BACKEND", "req_tot") == "5"  # summed over both workers
    assert column(out, "be", "BACKEND", "status") == "UP"  # no (n/m) without up/no-maint


def test_show_stat_by_proxy_id_and_sid_dumps_one_server_and_its_proxys_own_rows():
    # <sid> selects among the servers only: the proxy's FRONTEND/BACKEND rows stay (haproxy)
    assert names(show("show stat 2 -1 3")) == [("be", "s3"), ("be", "BACKEND")]
    assert names(show("show stat 2 4 3")) == [("be", "s3")]
    assert names(show("show stat web -1 1")) == [("web", "FRONTEND"), ("web", "w1"), ("web", "BACKEND")]
    assert names(show("show stat 3 1 -1")) == [("web", "FRONTEND")]


def test_show_stat_selecting_nothing_prints_only_the_header():
    assert show("show stat 99 -1 -1") == HEADER  # an id no proxy has
    assert show("show stat -2 -1 -1") == HEADER
    assert show("show stat -1 0 -1") == HEADER  # type 0: no object type
    assert show("show stat be x -1") == HEADER  # atoi("x") == 0
    assert show("show stat 2 4 9") == HEADER  # no server 9
    assert show("show stat 2 4 9 typed") == ""  # the typed form has no header


def test_show_stat_no_such_proxy_for_a_name_that_is_no_proxy_and_reads_as_zero():
    assert show("show stat nope 2 -1") == "No such proxy.\n"
    assert show("show stat 0 -1 -1") == "No such proxy.\n"
    assert show("show stat nope 2 -1 typed") == "No such proxy.\n"
    # three words after `show stat` are always <iid> <type> <sid> (haproxy); fewer filter
    # nothing, and a word haproxy does not know there is ignored
    assert show("show stat typed up desc") == "No such proxy.\n"
    assert show("show stat x") == show("show stat")
    assert show("show stat be 2") == show("show stat")
    assert show("show stat json") == show("show stat")


def test_show_stat_up_hides_servers_in_maint_and_down_for_good():
    out = show("show stat up")
    # s2 MAINT and s3 DOWN are left out; s4 (DOWN 1/2: its checks pass) is on its way up
    assert names(out) == [r for r in EVERY if r[1] not in ("s2", "s3")]
    # the backend counts its servers not stopped, of all (haproxy stats_fill_be_stats())
    assert column(out, "be", "BACKEND", "status") == "UP (1/4)"
    assert column(out, "web", "BACKEND", "status") == "UP (1/1)"


def test_show_stat_no_maint_hides_only_servers_in_maint():
    out = show("show stat no-maint")
    assert names(out) == [r for r in EVERY if r[1] != "s2"]
    assert column(out, "be", "BACKEND", "status") == "UP (1/4)"


def test_show_stat_filter_and_up_combine():
    assert names(show("show stat be 4 -1 up")) == [("be", "s1"), ("be", "s4")]
    assert names(show("show stat domain proxy be 4 -1 no-maint")) == [("be", "s1"), ("be", "s3"), ("be", "s4")]


def test_show_stat_typed_shows_the_same_rows():
    typed = show("show stat -1 4 -1 typed").split("\n")
    assert {x[0] for x in typed if x} == {"S"}
    assert "S.2.1.0.pxname.1:KNS:str:be" in typed and "S.3.1.1.svname.1:KNS:str:w1" in typed
    typed = show("show stat be 2 -1 typed").split("\n")
    assert {x[:4] for x in typed if x} == {"B.2."}
    typed = show("show stat 2 -1 1 typed").split("\n")
    assert {x.split(".")[0] + "." + x.split(".")[2] for x in typed if x} == {"S.1", "B.0"}


@pytest.mark.parametrize("line, flt", [
    ("show stat", StatFilter()),
    ("show stat typed", StatFilter()),
    ("show stat -1 4 -1", StatFilter("-1", 4, -1)),
    ("show stat be 2 -1 typed", StatFilter("be", 2, -1)),
    ("show stat 2 -1 3 up", StatFilter("2", -1, 3, up=True)),
    ("show stat domain proxy 2 7 -1 no-maint", StatFilter("2", 7, -1, no_maint=True)),
    ("show stat up no-maint", StatFilter(up=True, no_maint=True)),
    ("show stat x", StatFilter()),
    ("show stat be x 3x", StatFilter("be", 0, 3)),
])
def test_show_stat_arguments_parse_as_haproxys(line, flt):
    got = parse(tuple(line.split()), Level.USER, None)
    assert got.value == flt
    assert got.action == ("typed" if "typed" in line.split()[2:] and flt.proxy != "typed" else "")


@pytest.mark.parametrize("line", ["show stat domain", "show stat domain dns", "show stat domain resolvers -1 4 -1"])
def test_show_stat_other_domains_are_refused(line):
    assert parse(tuple(line.split()), Level.USER, None) == Answer("Invalid statistics domain.\n")


def test_atoi_reads_as_c_does():
    assert [atoi(x) for x in ("-1", "4", "x", "3x", " 7", "+2", "-", "")] == [-1, 4, 0, 3, 7, 2, 0, 0]


def test_stat_proxy_id_prefers_a_name_then_a_number():
    ids = {"be": 2, "7": 1}
    assert stat_proxy_id("be", ids) == 2
    assert stat_proxy_id("7", ids) == 1  # a proxy named "7" is proxy 1
    assert stat_proxy_id("5", ids) == 5 and stat_proxy_id("-1", ids) == -1
    assert stat_proxy_id("nope", ids) is None and stat_proxy_id("0", ids) is None


def test_select_stat_keeps_quoted_values_and_the_unfiltered_text_as_is():
    assert select_stat(HEADER, StatFilter()) is HEADER
    csv = "# pxname,svname,status,iid,sid,type,check_desc,\nbe,s1,MAINT,2,1,2,\"a, \"\"b\"\"\",\n" \
          "be,s2,UP,2,2,2,\"x,y\",\nbe,BACKEND,UP,2,0,1,,\n"
    assert select_stat(csv, StatFilter(no_maint=True)) == (
        "# pxname,svname,status,iid,sid,type,check_desc,\nbe,s2,UP,2,2,2,\"x,y\",\nbe,BACKEND,UP (1/2),2,0,1,,\n")
