"""splicer.stats.merge_stats: the workers' counters summed into one view."""
from splicer.stats import merge_stats


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
