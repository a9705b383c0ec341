"""Compiled rule runs (actions.merge_runs, acl.any_of) answer exactly as the rules one by
one: the same rule (or none) for every request, whatever the ACLs, their flags, the
conditions' shapes (if/unless, AND, ||, !, anonymous ACLs, several lines per name) and the
request; and what the compiled form remembers never leaks from one request to another."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splicer.config import loads
from splicer.http import acl as acl_mod
from splicer.http.actions import LocalRule, first_local, merge_runs
from splicer.http.h1 import HeadError, parse_request
from splicer.http.sample import RequestView, request_view_of
from tests.unit.configs import HTTP_DEFAULTS

PRE = HTTP_DEFAULTS + """frontend www
    bind 127.0.0.1:1
"""
POST = """    default_backend app
backend app
    server o 127.0.0.1:2
"""

WORDS = ["admin", "api", "Admin", "x", "static", "v1", "secret", "a.b", "ex"]

ACL_KINDS = [
    lambda w: f"path_beg /{w}",
    lambda w: f"path_end .{w}",
    lambda w: f"path_reg ^/{w}/[0-9]+$",
    lambda w: f"path_reg -i (?:/{w})+",
    lambda w: f"path_dir {w}",
    lambda w: f"path_sub {w}",
    lambda w: f"path -m str /{w}",
    lambda w: f"hdr(host) -i {w}.example",
    lambda w: f"hdr(host) {w}.example",
    lambda w: f"hdr_dom(host) -i {w}",
    lambda w: f"hdr_beg(user-agent) {w}",
    lambda w: f"hdr(user-agent) -m sub -i {w}",
    lambda w: f"req.hdr_cnt(x-{w}) gt 0",
    lambda w: f"url_param({w}) -m found",
    lambda w: f"url_param(k) -m str {w}",
    lambda w: f"url_param({w},,i) -m found",
    lambda w: f"urlp({w},;) -m found",
    lambda w: f"query -m sub {w}=",
    lambda w: f"url_beg http://{w}",
    lambda w: f"method {w.upper()} GET",
    lambda w: "req.ver 1.0",
    lambda w: f"src 10.0.0.{len(w)}/31 192.168.{len(w)}.0/24",
    lambda w: f"src_port {len(w) * 1000}:",
    lambda w: f"req.cook({w}) -m found",
    lambda w: "nbsrv(app) lt 1",
]

acl_line = st.tuples(st.sampled_from(range(len(ACL_KINDS))), st.sampled_from(WORDS))


@st.composite
def configs(draw):
    """(acl lines, rule lines) of one frontend: 1-6 named ACLs (some with several lines),
    then 2-10 rules, mostly deny runs, with an occasional different rule between them."""
    names = [f"a{i}" for i in range(draw(st.integers(1, 6)))]
    # a few kinds per example, so that ACLs often read the same part of the request
    kinds = draw(st.lists(st.sampled_from(range(len(ACL_KINDS))), min_size=1, max_size=4, unique=True))
    line = st.tuples(st.sampled_from(kinds), st.sampled_from(WORDS))
    acls = []
    for n in names:
        for kind, w in draw(st.lists(line, min_size=1, max_size=3)):
            acls.append(f"    acl {n} {ACL_KINDS[kind](w)}")

    def literal():
        if draw(st.booleans()) and draw(st.booleans()):
            kind, w = draw(line)
            return ("!" if draw(st.booleans()) else "") + "{ " + ACL_KINDS[kind](w) + " }"
        return ("!" if draw(st.booleans()) else "") + draw(st.sampled_from(names))

    rules = []
    for _ in range(draw(st.integers(2, 10))):
        terms = [" ".join(literal() for _ in range(draw(st.integers(1, 2))))
                 for _ in range(draw(st.integers(1, 2)))]
        cond = f"{draw(st.sampled_from(['if', 'unless']))} {' || '.join(terms)}"
        action = draw(st.sampled_from(["deny", "deny", "deny", "deny deny_status 429",
                                       "return status 200", "allow"]))
        if draw(st.integers(0, 9)) == 0:
            cond = ""  # an unconditional rule
        rules.append(f"    http-request {action} {cond}".rstrip())
    return acls, rules


requests = st.fixed_dictionaries({
    "target": st.sampled_from([b"/", b"/admin", b"/admin/1", b"/Admin/x", b"/api/12", b"/x.secret",
                               b"/static/a.b", b"/api/v1?k=x", b"/s?admin=1&k=ex", b"/a//admin",
                               b"/%61dmin/2", b"/v1/x?secret=", b"/s;ADMIN=1?api=2", b"/s?EX=1;v1="]),
    "absolute": st.booleans(),
    "host": st.sampled_from([b"admin.example", b"ADMIN.example", b"x.example:80", b"ex.example.",
                             b"www.a.b", None]),
    "ua": st.sampled_from([b"static-bot", b"curl", b"Mozilla ADMIN", None]),
    "method": st.sampled_from([b"GET", b"POST", b"API", b"HEAD", b"X"]),
    "version": st.sampled_from([b"1.1", b"1.0"]),
    "src": st.sampled_from(["10.0.0.5", "10.0.0.6", "192.168.3.7", "127.0.0.1", "::ffff:10.0.0.4"]),
    "src_port": st.sampled_from([1000, 4000, 40000]),
    "extra": st.sampled_from([[], [(b"X-Api", b"1")], [(b"Cookie", b"admin=1; x=2")]]),
})


NEIGHBOURS = [("method", b"GET"), ("method", b"POST"), ("version", b"1.0"), ("version", b"1.1"),
              ("absolute", True), ("absolute", False), ("host", b"ADMIN.example"), ("ua", b"Mozilla ADMIN"),
              ("src", "10.0.0.5"), ("src", "192.168.3.7"), ("src_port", 4000), ("extra", [(b"X-Api", b"1")]),
              # the same path with another query, and another path with the same query
              ("target", b"/admin?k=x"), ("target", b"/admin"), ("target", b"/admin?"), ("target", b"/x?k=x"),
              ("target", b"/api/v1?secret="), ("target", b"/static/a.b?admin=1&k=ex")]
"""(part, value) pairs: each request is also tried with one part changed to each of these."""


def view_of(r) -> RequestView:
    fields = [(b"Host", r["host"])] if r["host"] is not None else []
    if r["ua"] is not None:
        fields.append((b"User-Agent", r["ua"]))
    fields += r["extra"]
    url = b"http://" + (r["host"] or b"h") + r["target"] if r["absolute"] else r["target"]
    return RequestView(r["method"], url, r["target"], r["version"], fields, r["src"], r["src_port"],
                       "127.0.0.1", 80, False, lambda name: 0)


def head_view_of(r) -> RequestView | None:
    """view_of(r), built as the session builds it: from the bytes of a head, parsed (so it
    has a head key, RequestView.head_key); None when the parser refuses the head."""
    fields = [(b"Host", r["host"])] if r["host"] is not None else []
    if r["ua"] is not None:
        fields.append((b"User-Agent", r["ua"]))
    fields += r["extra"]
    url = b"http://" + (r["host"] or b"h") + r["target"] if r["absolute"] else r["target"]
    raw = (b"%s %s HTTP/%s\r\n" % (r["method"], url, r["version"])
           + b"".join(b"%s: %s\r\n" % f for f in fields) + b"\r\n")
    try:
        req = parse_request(raw)
    except HeadError:
        return None
    return request_view_of(req, raw, r["src"], r["src_port"], "127.0.0.1", 80, lambda name: 0)


def outcome(rules, view):
    """What the rules decide: (action, status) of the answering rule, or None, and
    whether an allow stopped them."""
    rule, cut = first_local(rules, view)
    stopped = cut < len(rules)
    return (None if rule is None else (rule.action, rule.status)), stopped and rule is None


@pytest.mark.parametrize("make", [view_of, head_view_of])
@settings(max_examples=100, deadline=None)
@given(cfg=configs(), reqs=st.lists(requests, min_size=1, max_size=8))
def test_merged_rules_decide_as_the_rules_one_by_one(make, cfg, reqs):
    acls, rules = cfg
    fe = loads(PRE + "\n".join(acls + rules) + "\n" + POST).frontends[0]
    plain = tuple(fe.http_request)
    merged = merge_runs(plain)
    assert len(merged) <= len(plain)
    # one compiled form for every request, and for each request its neighbours (the same
    # request but for one part): what the compiled form remembers must never leak into a
    # request that differs only in a part it did not key on
    seen = []
    for r in reqs:
        seen.append(r)
        seen += [dict(r, **{k: v}) for k, v in NEIGHBOURS if r[k] != v]
    for r in seen + seen[::-1]:
        if make(r) is None:
            continue  # a head the parser refuses never reaches the rules
        assert outcome(merged, make(r)) == outcome(plain, make(r)), r


def test_a_run_of_denies_becomes_one_rule_and_other_rules_split_runs():
    fe = loads(PRE + """    acl a path_beg /a
    acl b path_beg /b
    acl c hdr(host) -i c.example
    http-request deny if a
    http-request deny if b
    http-request deny deny_status 429 if c
    http-request deny if c
    http-request set-header X-Y 1
    http-request deny if a
    http-request deny if b
""" + POST).frontends[0]
    merged = merge_runs(tuple(fe.http_request))
    kinds = [(type(r).__name__, getattr(r, "status", None)) for r in merged]
    assert kinds == [("LocalRule", 403), ("LocalRule", 429), ("LocalRule", 403), ("HeaderRule", None),
                     ("LocalRule", 403)]
    assert isinstance(merged[0].cond, acl_mod.AnyOf)
    # the merged rule is the first of its run: where it was written stays known
    assert merged[0].line == fe.http_request[0].line


def test_an_unconditional_rule_in_a_run_makes_the_merged_rule_unconditional():
    fe = loads(PRE + """    http-request deny if { path_beg /a }
    http-request deny
""" + POST).frontends[0]
    (rule,) = merge_runs(tuple(fe.http_request))
    assert isinstance(rule, LocalRule) and rule.cond is None


def test_lines_on_one_fetch_are_merged_into_one_test():
    fe = loads(PRE + "".join(f"    http-request deny if {{ path_beg /p{i} }}\n" for i in range(20))
               + "".join(f"    http-request deny if {{ path_reg ^/r{i}/ }}\n" for i in range(20))
               + "".join(f"    http-request deny if {{ hdr(host) -i h{i}.example }}\n" for i in range(20))
               + POST).frontends[0]
    (rule,) = merge_runs(tuple(fe.http_request))
    # the path's tests read one source (the request line), the Host's another
    assert len(rule.cond.tests) == 2
    for target, host, denied in [(b"/p7/x", b"a", True), (b"/r19/", b"a", True), (b"/q", b"H3.example", True),
                                 (b"/q", b"h3.example:8080", True), (b"/p", b"h20.example", False)]:
        v = RequestView(b"GET", target, target, b"1.1", [(b"Host", host)])
        assert (first_local((rule,), v)[0] is not None) is denied, (target, host)


def test_a_regex_with_a_backreference_is_not_joined_but_still_matches():
    fe = loads(PRE + """    http-request deny if { path_reg ^/(a+)/\\1$ }
    http-request deny if { path_reg ^/z }
    http-request deny if { path_reg (?i)^/CASE }
""" + POST).frontends[0]
    (rule,) = merge_runs(tuple(fe.http_request))
    for target, denied in [(b"/aa/aa", True), (b"/aa/a", False), (b"/z1", True), (b"/case", True),
                           (b"/x/case", False)]:
        v = RequestView(b"GET", target, target, b"1.1", [])
        assert (first_local((rule,), v)[0] is not None) is denied, target


def test_remembered_results_follow_server_state():
    """nbsrv() reads server state, never the request: a condition on it is never
    remembered, so a server going down changes the next decision."""
    fe = loads(PRE + """    http-request deny if { nbsrv(app) lt 1 }
    http-request deny if { path_beg /x }
""" + POST).frontends[0]
    (rule,) = merge_runs(tuple(fe.http_request))
    up = {"n": 1}
    def view():
        return RequestView(b"GET", b"/", b"/", b"1.1", [], nbsrv=lambda name: up["n"])
    assert first_local((rule,), view())[0] is None
    up["n"] = 0
    assert first_local((rule,), view())[0] is not None


LEAKS = [
    # (two ACLs on one part of the request, a request, the same request but for that part)
    ("method POST", "path_beg /zzz", {"method": b"POST"}, {"method": b"GET"}),
    ("req.ver 1.0", "path_beg /zzz", {"version": b"1.0"}, {"version": b"1.1"}),
    ("path_beg /admin", "method PUT", {"target": b"/admin"}, {"target": b"/x"}),
    ("url_beg http://", "path_beg /zzz", {"absolute": True}, {"absolute": False}),
    ("url_param(k) -m found", "path_beg /zzz", {"target": b"/?k=1"}, {"target": b"/?j=1"}),
    ("hdr(host) -i admin.example", "hdr_end(host) .zzz", {"host": b"admin.example"}, {"host": b"x.example"}),
    ("hdr_sub(user-agent) bot", "hdr_beg(user-agent) zzz", {"ua": b"a bot"}, {"ua": b"curl"}),
    ("req.cook(admin) -m found", "req.cook(zzz) -m found", {"extra": [(b"Cookie", b"admin=1")]},
     {"extra": [(b"Cookie", b"x=1")]}),
    ("src 10.0.0.0/24", "src 192.0.2.1", {"src": "10.0.0.5"}, {"src": "192.168.3.7"}),
    ("src_port 4000", "src_port 1", {"src_port": 4000}, {"src_port": 40000}),
    # the request line's tests are remembered by the part each reads (sample.line_part): a
    # part's memo must never answer a request whose line differs in that part only (two
    # ACLs on one part where one alone would be a single probe, never remembered)
    ("path_beg /admin", "query -m sub zzz", {"target": b"/admin?k=1"}, {"target": b"/x?k=1"}),
    ("path_end .php", "url_param(zzz) -m found", {"target": b"/a.php?k=1"}, {"target": b"/a.phpx?k=1"}),
    ("path_reg ^/[0-9]+$", "method PUT", {"target": b"/12"}, {"target": b"/12/"}),
    ("query -m sub k=", "path_beg /zzz", {"target": b"/a?k=1"}, {"target": b"/a?j=1"}),
    ("query -m found", "query -m sub zzz", {"target": b"/a?"}, {"target": b"/a"}),
    ("query -m str k=1", "url_param(zzz) -m found", {"target": b"/a?k=1"}, {"target": b"/a?k=2"}),
    ("url_param(k) -m str 1", "path_beg /zzz", {"target": b"/a?k=1"}, {"target": b"/a?k=2"}),
    ("url_param(k) -m found", "query -m sub zzz", {"target": b"/a?k=1"}, {"target": b"/a?K=1"}),
    ("url_param(k,;) -m found", "url_param(zzz) -m found", {"target": b"/a;k=1"}, {"target": b"/a;j=1"}),
    ("url_param(k,,i) -m found", "url_param(zzz) -m found", {"target": b"/a?K=1"}, {"target": b"/a?J=1"}),
    ("url_param(k,;) -m found", "url_param(j) -m found", {"target": b"/a;k=1?x=1"}, {"target": b"/a;x=1?k"}),
    ("url_param(K,,i) -m found", "url_param(j) -m found", {"target": b"/a?k=1"}, {"target": b"/a?x=1"}),
    ("url_param(k,|) -m found", "url_param(j) -m found", {"target": b"/a?x=1|k=1"}, {"target": b"/a?x=1|j"}),
    # url_param reads the URL as sent: an absolute-form URL's authority included
    ("url_param(k,;) -m found", "url_param(j) -m found", {"absolute": True, "host": b"u;k=1@h"},
     {"absolute": False, "host": b"u;k=1@h"}),
    ("url_end .php", "path_beg /zzz", {"target": b"/a.php"}, {"target": b"/a.phpx"}),
    ("url_sub //h", "url_beg /zzz", {"absolute": True}, {"absolute": False}),
    ("method POST", "method PUT", {"method": b"POST"}, {"method": b"GET"}),
    ("req.ver 1.0", "req.ver 0.9", {"version": b"1.0"}, {"version": b"1.1"}),
]


def test_what_a_merged_test_remembers_never_answers_a_request_that_differs_in_its_part():
    base = {"target": b"/", "absolute": False, "host": b"h.example", "ua": b"curl", "method": b"GET",
            "version": b"1.1", "src": "127.0.0.1", "src_port": 40000, "extra": []}
    for a, b, hit, miss in LEAKS:
        fe = loads(PRE + f"    acl a {a}\n    acl b {b}\n    http-request deny if a\n"
                   "    http-request deny if b\n" + POST).frontends[0]
        (rule,) = merge_runs(tuple(fe.http_request))
        assert len(rule.cond.tests) == 1, a  # both read the same part: one remembered test
        for first, second in ((hit, miss), (miss, hit), (hit, miss)):
            for r, denied in ((first, first is hit), (second, second is hit)):
                got = first_local((rule,), view_of(dict(base, **r)))[0] is not None
                assert got is denied, (a, r)


@pytest.mark.parametrize("make", [view_of, head_view_of])
@settings(max_examples=60, deadline=None)
@given(cfg=configs(), reqs=st.lists(requests, min_size=1, max_size=6), response=st.booleans())
def test_the_compiled_disjunction_is_its_parts_evaluated_one_by_one(make, cfg, reqs, response):
    """acl.any_of's compiled call (http/disjunction.py) against AnyOf.__call__, the loop
    over the same parts with their own memos: equal for every request, in both orders,
    for request views and for views with response fields (whose field parts are not keyed)."""
    acls, rules = cfg
    fe = loads(PRE + "\n".join(acls + rules) + "\n" + POST).frontends[0]
    conds = [r.cond for r in merge_runs(tuple(fe.http_request)) if isinstance(r.cond, acl_mod.AnyOf)]
    seen = [dict(r, **{k: v}) for r in reqs for k, v in NEIGHBOURS + [("method", r["method"])]]
    for r in seen + seen[::-1]:
        view = make(r)
        if view is None:
            continue  # a head the parser refuses never reaches the rules
        if response:
            view.response_fields = [(b"Server", b"o")]
        for cond in conds:
            assert bool(cond(view)) == bool(acl_mod.AnyOf.__call__(cond, view)), (cond.text, r)


def test_a_compiled_disjunction_reads_each_part_once_and_keeps_the_order():
    fe = loads(PRE + """    acl a path_beg /a
    acl q query -m sub k=
    acl h hdr(host) -i a.example
    acl s src 10.0.0.0/8
    http-request deny if a
    http-request deny if h
    http-request deny if q
    http-request deny if s
    http-request deny if { path_end .x }
""" + POST).frontends[0]
    cond = merge_runs(tuple(fe.http_request))[0].cond
    fn = type(cond).__call__
    # by source in the order each first appears: the request line's parts (the path, then
    # the query) together, then the Host field, then the client address
    assert [p.key for p in fn.parts] == ["path", "query", "field", "src"]
    assert fn.source.count("view.path()") == 1  # the two path ACLs share one part
    r = {"host": b"b.example", "ua": None, "method": b"GET", "version": b"1.1", "src": "192.168.3.7",
         "src_port": 1000, "extra": [], "absolute": False, "target": b"/b"}
    assert not cond(view_of(r))
    assert cond(view_of(dict(r, target=b"/b.x"))) and cond(view_of(dict(r, target=b"/b?k=1")))
    assert cond(view_of(dict(r, host=b"A.example"))) and cond(view_of(dict(r, src="10.1.2.3")))
    assert not cond(view_of(r))  # nothing remembered leaks from the requests before


def test_a_sparse_part_pauses_its_memo_while_it_does_not_pay_and_still_decides():
    """A query part whose values never repeat fills its memo within disjunction.PAY_CALLS
    calls: it is paused (no probe, no insert) for PAUSE_CALLS calls, then watched again;
    the verdicts stay those of the tests, paused or not. A path part (not sparse) always
    remembers."""
    from splicer.http import disjunction as dj
    from splicer.http.sample import MEMO_SIZE
    fe = loads(PRE + """    acl a path_beg /a
    acl q query -m sub k=
    http-request deny if a
    http-request deny if q
""" + POST).frontends[0]
    cond = merge_runs(tuple(fe.http_request))[0].cond
    fn = type(cond).__call__
    assert [p.key for p in fn.parts] == ["path", "query"]
    g = fn.__globals__
    r = {"host": b"h", "ua": None, "method": b"GET", "version": b"1.1", "src": "192.0.2.1", "src_port": 1,
         "extra": [], "absolute": False}
    for i in range(MEMO_SIZE):  # unique query strings: every probe misses
        assert not cond(view_of(dict(r, target=b"/b?n=%d" % i)))
    assert len(g["m1"]) == MEMO_SIZE and g["p1"] == 0  # full, not yet judged
    assert cond(view_of(dict(r, target=b"/b?k=1")))  # the insert that finds it full
    assert g["p1"] == g["n"] + dj.PAUSE_CALLS - 0 and len(g["m1"]) == 1
    paused_at = g["n"]
    for i in range(100):  # paused: the memo is left alone, the verdicts are the tests'
        assert cond(view_of(dict(r, target=b"/b?n=x%d" % i))) is False
        assert cond(view_of(dict(r, target=b"/b?zk=%d" % i)))
    assert len(g["m1"]) == 1 and g["n"] == paused_at + 200
    assert len(g["m0"]) == 1  # the path's memo kept remembering "/b" all along
    g["n"] = g["p1"]  # the pause is over: probes and inserts again
    assert not cond(view_of(dict(r, target=b"/b?n=y")))
    assert len(g["m1"]) == 2


def test_a_sparse_part_whose_values_repeat_keeps_its_memo():
    from splicer.http.sample import MEMO_SIZE
    fe = loads(PRE + "    acl q query -m sub k=\n    acl a path_beg /a\n    http-request deny if q\n"
               "    http-request deny if a\n" + POST).frontends[0]
    cond = merge_runs(tuple(fe.http_request))[0].cond
    g = type(cond).__call__.__globals__
    r = {"host": b"h", "ua": None, "method": b"GET", "version": b"1.1", "src": "192.0.2.1", "src_port": 1,
         "extra": [], "absolute": False}
    for i in range(3 * MEMO_SIZE):  # each query seen twice before the memo fills: half the probes hit
        cond(view_of(dict(r, target=b"/b?n=%d" % (i // 2))))
    assert g["p0"] == 0 and g["c0"] > 0  # it filled, was judged worth it, and goes on


HEAD_RULES = """    acl a path_beg /a
    acl h hdr(host) -i a.example
    acl q query -m sub k=
    acl s src 10.0.0.0/8
    http-request deny if a
    http-request deny if h
    http-request deny if q
    http-request deny if s
"""


def test_head_parts_are_remembered_together_by_the_head_without_its_query():
    """The path, Host and client-address parts of a disjunction on a view built from a head
    are looked up with one probe, keyed by the head's bytes without the query and the
    client address; the query part still runs for every request."""
    cond = merge_runs(tuple(loads(PRE + HEAD_RULES + POST).frontends[0].http_request))[0].cond
    g = type(cond).__call__.__globals__
    r = {"host": b"b.example", "ua": None, "method": b"GET", "version": b"1.1", "src": "192.168.3.7",
         "src_port": 1000, "extra": [], "absolute": False}
    for i in range(50):  # one head but for its query: one entry
        assert not cond(head_view_of(dict(r, target=b"/b?n=%d" % i)))
    assert cond(head_view_of(dict(r, target=b"/b?k=1")))  # the query's test ran
    assert len(g["mh"]) == 1
    v = head_view_of(dict(r, target=b"/b?n=x"))
    cond(v)  # the key the compiled code reads inline is RequestView.head_key()'s
    assert v._hk == head_view_of(dict(r, target=b"/b?n=x")).head_key() != b""
    assert list(g["mh"]) == [(b"GET /b HTTP/1.1\r\nHost: b.example\r\n\r\n", "192.168.3.7")]
    # a part of the head, or the address, that differs is another entry, with its verdict
    assert cond(head_view_of(dict(r, target=b"/a?n=1"))) and cond(head_view_of(dict(r, host=b"A.example",
                                                                                     target=b"/b")))
    assert cond(head_view_of(dict(r, src="10.1.2.3", target=b"/b")))
    assert not cond(head_view_of(dict(r, src_port=2000, target=b"/b?x")))  # a port no part reads
    assert len(g["mh"]) == 4


def test_head_parts_memo_pauses_when_heads_do_not_repeat():
    from splicer.http import disjunction as dj
    from splicer.http.sample import MEMO_SIZE
    cond = merge_runs(tuple(loads(PRE + HEAD_RULES + POST).frontends[0].http_request))[0].cond
    g = type(cond).__call__.__globals__
    r = {"host": b"b.example", "ua": None, "method": b"GET", "version": b"1.1", "src": "192.168.3.7",
         "src_port": 1000, "extra": [], "absolute": False}
    for i in range(MEMO_SIZE + 1):  # a path of its own each time: every probe misses
        assert not cond(head_view_of(dict(r, target=b"/b%d" % i)))
    assert g["hp"] == g["n"] + dj.PAUSE_CALLS - 0 and len(g["mh"]) == 1
    for i in range(100):  # paused: the parts run one by one, the verdicts are the same
        assert not cond(head_view_of(dict(r, target=b"/c%d" % i)))
        assert cond(head_view_of(dict(r, target=b"/a%d" % i)))
    assert len(g["mh"]) == 1


def test_a_view_a_rule_changed_has_no_head_key():
    r = {"host": b"b.example", "ua": None, "method": b"GET", "version": b"1.1", "src": "192.168.3.7",
         "src_port": 1000, "extra": [], "absolute": False, "target": b"/b?x=1"}
    assert head_view_of(r).head_key() == b"GET /b HTTP/1.1\r\nHost: b.example\r\n\r\n"
    # an absolute-form head is its own key, query and all: parse_request makes the path of
    # one without a path ("*" for OPTIONS, else "/"), and a query changes which
    assert head_view_of(dict(r, absolute=True)).head_key() == (
        b"GET http://b.example/b?x=1 HTTP/1.1\r\nHost: b.example\r\n\r\n")
    assert view_of(r).head_key() == b""  # not built from a head
    for change in (lambda v: v.set_target(b"/c"), lambda v: v.set_fields([(b"Host", b"c")]),
                   lambda v: v.set_method(b"POST")):
        v = head_view_of(r)
        v.head_key()
        change(v)
        assert v.head_key() == b"" and v._hk == b""
    v = head_view_of(r)  # what a rule leaves as it was keeps the key
    v.set_target(b"/b?x=1")
    v.set_method(b"GET")
    v.set_fields(v.fields)
    assert v.head_key()


def test_a_changed_view_is_decided_by_its_parts():
    """A rule that rewrote the path or a field before the disjunction: the memo of heads
    is not asked (the head's bytes are no longer the request), the parts decide."""
    cond = merge_runs(tuple(loads(PRE + HEAD_RULES + POST).frontends[0].http_request))[0].cond
    r = {"host": b"b.example", "ua": None, "method": b"GET", "version": b"1.1", "src": "192.168.3.7",
         "src_port": 1000, "extra": [], "absolute": False, "target": b"/b"}
    assert not cond(head_view_of(r))
    v = head_view_of(r)
    v.set_target(b"/a/x")
    assert cond(v)
    v = head_view_of(r)
    v.set_fields([(b"Host", b"a.example")])
    assert cond(v)


def test_a_query_prefilter_stands_before_the_query_parts():
    """After the head memo, one search of the target (and of the URL as sent) for the
    strings the query's tests need tells a request none of them can match; a request that
    holds one runs the tests themselves."""
    from splicer.http.acl import query_prefilter
    cond = merge_runs(tuple(loads(PRE + """    acl a path_beg /a
    acl h hdr(host) -i a.example
    acl q query -m sub -i Debug=
    acl t url_param(token) -m found
    acl u url_param(Tok,,i) -m found
    http-request deny if a
    http-request deny if h
    http-request deny if q
    http-request deny if t
    http-request deny if u
""" + POST).frontends[0].http_request))[0].cond
    fn = type(cond).__call__
    assert "PRE(t)" in fn.source
    pre = fn.__globals__["PRE"]
    assert pre(b"/x?debug=1") and pre(b"/x?TOKEN=") and pre(b"/x?tok=") and not pre(b"/x?n=1&token")
    r = {"host": b"b.example", "ua": None, "method": b"GET", "version": b"1.1", "src": "192.168.3.7",
         "src_port": 1000, "extra": [], "absolute": False}
    for target, denied in ((b"/b?n=1", False), (b"/b?x=DEBUG=", True), (b"/b?token=", True),
                           (b"/b?xtoken=1", False), (b"/b?a=1&TOK=2", True), (b"/b?token", False),
                           (b"/token=?n=1", False), (b"/b?n=debug", False)):
        for absolute in (False, True):
            assert bool(cond(head_view_of(dict(r, target=target, absolute=absolute)))) is denied, target
    # a test whose match no literal stands for: no prefilter
    assert query_prefilter(()) is None
    cond = merge_runs(tuple(loads(PRE + "    acl q query -m reg d=\n    acl a path_beg /a\n"
                                  "    acl h hdr(host) -i a\n    http-request deny if q\n"
                                  "    http-request deny if a\n    http-request deny if h\n"
                                  + POST).frontends[0].http_request))[0].cond
    assert "PRE(" not in type(cond).__call__.source


def test_absolute_form_heads_without_a_path_are_not_one_head_but_for_the_query():
    """OPTIONS http://h has the path "*" and OPTIONS http://h?x the path "/" (parse_request):
    the verdict of one must never answer the other (found by a fresh tester: the memo gave
    the first request the second's verdict)."""
    cond = merge_runs(tuple(loads(PRE + """    http-request deny if !{ path_beg / }
    http-request deny if { hdr_sub(user-agent) -i bot }
""" + POST).frontends[0].http_request))[0].cond

    def view(target: bytes):
        raw = b"OPTIONS " + target + b" HTTP/1.1\r\nHost: h\r\nUser-Agent: curl\r\n\r\n"
        req = parse_request(raw)
        return request_view_of(req, raw, "127.0.0.1", 1000, "127.0.0.1", 80), req.target
    for order in ((b"http://h?x", b"http://h", b"http://h?", b"*"), (b"http://h", b"http://h?x", b"*", b"http://h?")):
        for target in order:
            v, parsed = view(target)
            assert bool(cond(v)) is (not parsed.startswith(b"/")), (target, parsed)
