"""admin/merge.py and admin/info.py: one answer from every worker's reply."""
import json

from splicer.admin.commands import Level, parse
from splicer.admin.info import uptime_text
from splicer.admin.merge import combine
from splicer.admin.typed import typed_stat

CTX = {"version": "0.1.0", "pid": 42, "uptime": 3725.0, "start_time": 1000.0, "workers": 2, "maxconn": 100,
       "maxpipes": 25, "listeners": 1, "node": "box", "now": 5000.0}


def stats(req, conns, scur):
    return {"pid": 1, "worker": 1, "frontends": {"fe": {"req_tot": req, "stot": conns, "scur": scur, "bout": 10,
                                                        "copied": 4}},
            "backends": {}, "engine": {"spliced_bytes": 7, "pipes_used": 1, "pipes_free": 2},
            "pipes": {"spliced_bytes": 1, "used": 0, "free": 1}}


def cmd(line):
    return parse(tuple(line.split()), Level.ADMIN, None)


def test_show_info_sums_the_workers():
    replies = [{"data": {"stats": stats(3, 2, 1)}}, {"data": {"stats": stats(4, 5, 0)}}]
    out = combine(cmd("show info"), replies, CTX)
    fields = dict(line.split(": ", 1) for line in out.strip().split("\n"))
    assert (fields["Name"], fields["Pid"], fields["Nbthread"]) == ("splicer", "42", "2")
    assert (fields["CumReq"], fields["CumConns"], fields["CurrConns"]) == ("7", "7", "1")
    assert fields["Uptime"] == "0d 1h02m05s" and fields["Uptime_sec"] == "3725"
    assert fields["TotalSplicdedBytesOut"] == "16"
    assert (fields["PipesUsed"], fields["PipesFree"], fields["Maxpipes"]) == ("2", "6", "50")


def test_show_counters_is_one_json_line():
    out = combine(cmd("show counters"), [{"data": {"stats": stats(3, 2, 1)}}, {"data": {"stats": stats(1, 1, 1)}}],
                  CTX)
    assert out.count("\n") == 1
    assert json.loads(out)["frontends"]["fe"]["req_tot"] == 4


def test_texts_first_answer_each_joined_and_failures_named():
    ok = {"text": "x\n"}
    dead = {"error": "timeout", "worker": 2}
    assert combine(cmd("set server be/s1 weight 2"), [ok, {"text": "x\n"}], CTX) == "x\n"
    assert combine(cmd("show sess"), [{"text": "a\n"}, {"text": "b\n"}], CTX) == "a\nb\n"
    assert combine(cmd("show sess"), [{"text": "a\n"}, dead], CTX) == "a\nworker 2: timeout\n"
    assert combine(cmd("show errors"), [{"data": {"errors": []}}], CTX).endswith("] : 0\n")


def test_uptime_text():
    assert uptime_text(0) == "0d 0h00m00s"
    assert uptime_text(2 * 86400 + 3 * 3600 + 4 * 60 + 5) == "2d 3h04m05s"


def test_typed_stat_from_the_csv():
    csv = ("# pxname,svname,qcur,scur,stot,status,weight,pid,iid,sid,type,\n"
           "fe,FRONTEND,,3,10,OPEN,,1,1,0,0,\n"
           "be,s1,0,1,5,UP,2,1,2,1,2,\n")
    lines = typed_stat(csv).split("\n")
    assert "F.1.0.0.pxname.1:KNS:str:fe" in lines
    assert "F.1.0.4.stot.1:MCP:u64:10" in lines
    assert "S.2.1.3.scur.1:MGP:u32:1" in lines
    assert "S.2.1.5.status.1:SGP:str:UP" in lines
    assert not any(".qcur." in x for x in lines if x.startswith("F."))  # empty values are left out
