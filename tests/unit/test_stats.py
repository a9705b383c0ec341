"""splicer/stats.py: the workers' counters summed into one view (merge_stats), rates and
availability history."""
from splicer.stats import Availability, Rate, merge_stats


def worker(n, req, weight=1, status="UP", up=True, terms=None):
    return {"pid": 100 + n, "worker": n,
            "frontends": {"www": {"req_tot": req, "scur": 1, "terms": terms or {}}},
            "backends": {"farm": {"qcur": 0, "servers": {
                "web1": {"stot": req, "weight": weight, "status": status, "up": up}}}},
            "pipes": {"size": 1 << 20, "used": n}}


def test_counters_add_up_and_dicts_merge():
    m = merge_stats([worker(1, 3, terms={"--": 3}), worker(2, 4, terms={"--": 1, "CD": 2})])
    assert m["frontends"]["www"]["req_tot"] == 7
    assert m["frontends"]["www"]["scur"] == 2
    assert m["frontends"]["www"]["terms"] == {"--": 4, "CD": 2}
    assert m["backends"]["farm"]["servers"]["web1"]["stot"] == 7
    assert m["pipes"] == {"size": 1 << 20, "used": 3}
    assert (m["pid"], m["worker"]) == ([101, 102], [1, 2])


def test_server_state_fields_keep_the_first_workers_value():
    m = merge_stats([worker(1, 1, weight=10, status="DRAIN", up=True), worker(2, 1, weight=10, status="UP", up=True)])
    srv = m["backends"]["farm"]["servers"]["web1"]
    assert srv["weight"] == 10  # not 20: every worker has the same server
    assert srv["status"] == "DRAIN"
    assert srv["up"] is True


def test_one_worker_is_itself():
    w = worker(1, 5)
    m = merge_stats([w])
    assert m["frontends"] == w["frontends"] and m["worker"] == [1]


def _line(worker, scur, status, chkfail, smax):
    return {"pid": 100 + worker, "worker": worker,
            "backends": {"b": {"stot": 10 * worker, "scur": scur, "qmax": smax, "status": "UP",
                               "servers": {"s": {"stot": worker, "scur": scur, "status": status,
                                                 "weight": 3, "chkfail": chkfail, "lastchg": 7,
                                                 "downtime": 2, "smax": smax, "backup": False,
                                                 "admin": ["DRAIN"]}}}}}


def test_merge_sums_counters_keeps_state_of_first_worker():
    m = merge_stats([_line(1, 2, "UP 1/3", 4, 5), _line(2, 3, "DOWN", 6, 9)])
    s = m["backends"]["b"]["servers"]["s"]
    assert (s["stot"], s["scur"]) == (3, 5)
    assert (s["status"], s["weight"], s["chkfail"], s["lastchg"], s["downtime"]) == ("UP 1/3", 3, 4, 7, 2)
    assert (s["smax"], m["backends"]["b"]["qmax"]) == (14, 14)  # maxima: summed, as the gauges
    assert (s["backup"], s["admin"]) == (False, ["DRAIN"])
    assert m["backends"]["b"]["stot"] == 30
    assert (m["pid"], m["worker"]) == ([101, 102], [1, 2])


def test_rate_over_last_second_and_max():
    r = Rate()
    r.sample(0, 10.0)
    assert (r.rate, r.rate_max) == (0, 0)
    r.sample(40, 11.0)
    assert (r.rate, r.rate_max) == (40, 40)
    r.sample(50, 12.0)
    assert (r.rate, r.rate_max) == (10, 40)
    r.sample(70, 14.0)  # a late sample: 20 over 2 s
    assert r.rate == 10


def test_availability_lastchg_downtime_chkdown():
    a = Availability(True, 100.0)
    assert (a.lastchg(105.0), a.downtime(105.0), a.chkdown) == (5, 0, 0)
    a.note(False, 110.0)
    a.note(False, 111.0)  # no change
    assert (a.lastchg(113.5), a.downtime(113.5), a.chkdown) == (3, 3, 1)
    a.note(True, 120.0)
    a.note(False, 130.0)
    assert (a.lastchg(131.0), a.downtime(131.0), a.chkdown) == (1, 11, 2)
