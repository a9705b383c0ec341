"""runtime/decisions.py: a frontend's routing decisions are remembered only when they are a
pure function of what the memo keys them by (the request head's bytes and the connection's
address parts its rules read), and a remembered decision is always the one the rules would
take: never one of another request that differs in a part the rules read, whatever the
rules, the conditions and the requests."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splicer.config import loads
from splicer.http.h1 import HeadError, parse_request
from splicer.http.sample import request_view_of
from splicer.runtime.decisions import MEMO_ENTRIES, PAUSE, PAY_HITS, PAY_WINDOW, DecisionMemo, decision_reads
from splicer.runtime.route import backend_names, switching_of
from tests.unit.configs import HTTP_DEFAULTS

MAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hosts.map")  # (a fixed path: the same
# test ids in every pytest-xdist worker)

BASE = HTTP_DEFAULTS + """\
userlist users
    user u insecure-password p
frontend www
    bind 127.0.0.1:1
{frontend}
backend app
{app}
    server o 127.0.0.1:2
backend b1
    server o 127.0.0.1:3
backend b2
    server o 127.0.0.1:4
backend be_80
    server o 127.0.0.1:5
"""


def config(frontend: str, app: str = ""):
    return loads(BASE.format(frontend=frontend, app=app))


def reads_of(frontend: str, app: str = ""):
    cfg = config(frontend, app)
    fe = cfg.frontends[0]
    return decision_reads(fe, cfg.backends, backend_names(fe, cfg.backends))


@pytest.mark.parametrize("frontend, app, reads", [
    ("    use_backend b1 if { path_beg /a }\n    default_backend app\n", "", ()),
    ("    http-request deny if { hdr(host) -i x } || { req.cook(c) -m found }\n"
     "    http-request redirect prefix /p if { method POST } HTTP_1.0\n    default_backend app\n", "", ()),
    (f"    use_backend %[req.hdr(host),lower,map({MAP},app)]\n", "", ()),
    ("    http-request deny if { src 10.0.0.0/8 }\n    default_backend app\n", "", ("src",)),
    ("    http-request deny if LOCALHOST\n    default_backend app\n", "", ("src",)),
    ("    use_backend b1 if { dst_port 80 } !{ src_port 1:1024 }\n    default_backend app\n", "",
     ("src_port", "dst_port")),
    ("    use_backend be_%[dst_port]\n    default_backend app\n", "", ("dst_port",)),
    ("    default_backend app\n", "    http-request deny if { dst 127.0.0.2 }\n", ("dst",)),
    ("    http-request tarpit if { path_beg /t }\n    http-request auth if { path_beg /a }\n"
     "    default_backend app\n", "", ()),
    # what may not be remembered: server state, variables, credential verdicts, and rules
    # that change the request the later rules read (and the one forwarded)
    ("    use_backend b1 if { nbsrv(app) lt 1 }\n    default_backend app\n", "", None),
    ("    http-request deny if { var(txn.x) -m found }\n    default_backend app\n", "", None),
    ("    http-request deny unless { http_auth(users) }\n    default_backend app\n", "", None),
    ("    http-request set-var(txn.x) str(1)\n    default_backend app\n", "", None),
    ("    http-request set-header X-A 1\n    use_backend b1 if { path_beg /a }\n    default_backend app\n",
     "", None),
    ("    http-request set-path /x\n    use_backend b1 if { path_beg /a }\n    default_backend app\n", "", None),
    ("    http-request normalize-uri path-merge-slashes\n    use_backend b1 if { path_beg /a }\n"
     "    default_backend app\n", "", None),
    ("    use_backend b1 if { path_beg /a }\n    default_backend app\n", "    http-request set-header X 1\n",
     None),
    ("    use_backend %[var(txn.be)]\n    default_backend app\n", "", None),
])
def test_what_a_frontends_decisions_read(frontend, app, reads):
    assert reads_of(frontend, app) == reads
    sw = switching_of(config(frontend, app).frontends[0], config(frontend, app).backends)
    assert (sw.memo is None) is (reads is None)
    if sw.memo is not None:
        assert sw.memo.reads == reads


def test_the_memo_is_a_bounded_lru():
    m = DecisionMemo((), max_entries=3, max_head=10)
    for k in (b"a", b"b", b"c"):
        m.put(k, 1, k.upper())
    assert m.get(b"a") == b"A"  # now the most recently used: b goes first
    m.put(b"d", 1, b"D")
    assert (m.get(b"b"), m.get(b"a"), m.get(b"c"), m.get(b"d")) == (None, b"A", b"C", b"D")
    m.put(b"long", 11, b"L")  # a head longer than max_head is never kept
    assert m.get(b"long") is None and len(m) == 3
    # heads that never repeat (hostile input) never grow it
    big = DecisionMemo(())
    for i in range(3 * MEMO_ENTRIES):
        big.put(b"GET /%d HTTP/1.1\r\n\r\n" % i, 20, i)
    assert len(big) == MEMO_ENTRIES
    assert big.get(b"GET /%d HTTP/1.1\r\n\r\n" % (3 * MEMO_ENTRIES - 1)) == 3 * MEMO_ENTRIES - 1
    assert big.get(b"GET /0 HTTP/1.1\r\n\r\n") is None


def test_a_memo_whose_heads_never_repeat_pauses_and_then_tries_again():
    m = DecisionMemo(())
    for i in range(PAY_WINDOW - 1):
        assert m.get(b"GET /%d HTTP/1.1\r\n\r\n" % i) is None
        m.put(b"GET /%d HTTP/1.1\r\n\r\n" % i, 20, i)
        assert m.pause == 0
    assert m.get(b"GET /new HTTP/1.1\r\n\r\n") is None  # the window's last lookup: it did not pay
    assert m.pause == PAUSE and len(m) == 0  # its entries are dropped
    # the caller counts the pause down; then a window tries the memo again
    m.pause = 0
    m.put(b"h", 1, "d")
    assert m.get(b"h") == "d"


def test_a_memo_whose_heads_repeat_never_pauses():
    m = DecisionMemo(())
    m.put(b"h", 1, "d")
    for i in range(10 * PAY_WINDOW):
        # one head in eight repeats: just enough to pay (PAY_HITS a window)
        assert m.get(b"h" if i % (PAY_WINDOW // PAY_HITS) == 0 else b"x%d" % i) == ("d" if i % (PAY_WINDOW // PAY_HITS) == 0 else None)
        assert m.pause == 0
    assert m.hits == 10 * PAY_HITS


def test_a_key_is_the_head_and_the_address_parts_read():
    assert DecisionMemo(()).key(b"h", ()) == b"h"
    m = DecisionMemo(("src", "dst_port"))
    parts = {"src": "10.0.0.1", "src_port": 5, "dst": "127.0.0.1", "dst_port": 80}
    assert m.address(parts.__getitem__) == ("10.0.0.1", 80)
    assert m.key(b"h", m.address(parts.__getitem__)) == (b"h", ("10.0.0.1", 80))


# -- a remembered decision is the rules' decision ----------------------------------------------

def head_of(r: dict) -> bytes:
    """The request head of request `r` (the keys of `requests` below)."""
    host = r["host"]
    target = (b"http://" + (host or b"h") + r["target"]) if r["absolute"] else r["target"]
    lines = [r["method"] + b" " + target + b" HTTP/" + r["version"]]
    if host is not None:
        lines.append(b"Host: " + host)
    if r["ua"] is not None:
        lines.append(b"User-Agent: " + r["ua"])
    lines += [n + b": " + v for n, v in r["extra"]]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def view_of(r: dict):
    raw = head_of(r)
    return request_view_of(parse_request(raw), raw, r["src"], r["src_port"], r["dst"], r["dst_port"],
                           lambda name: r["up"])


def summary(d):
    """A Decision in terms that compare across two Switchings of one configuration."""
    rule = None if d.rule is None else (d.rule.action, d.rule.status, d.rule.line)
    return rule, d.backend, d.cut_fe, d.cut_be


def memoized(sw, r: dict):
    """The decision for request `r` as the session takes it (session.py _switch): the
    remembered one when its key is known, else choose()'s, then remembered."""
    memo = sw.memo
    raw = head_of(r)
    key = memo.key(raw, memo.address(r.__getitem__))
    got = memo.get(key)
    if got is None:
        got = sw.choose(view_of(r))
        memo.put(key, len(raw), got)
    return got


BASE_REQUEST = {"target": b"/", "absolute": False, "host": b"h.example", "ua": b"curl", "method": b"GET",
                "version": b"1.1", "extra": [], "src": "127.0.0.1", "src_port": 40000, "dst": "127.0.0.1",
                "dst_port": 80, "up": 1}

LEAKS = [
    # (frontend rules, a request, a request that differs from it in one part the rules read)
    ("    use_backend b1 if { path_beg /admin }\n", {"target": b"/admin/x"}, {"target": b"/x"}),
    ("    use_backend b1 if { hdr(host) -i admin.example }\n", {"host": b"ADMIN.example"}, {"host": b"x.example"}),
    ("    http-request deny if { method POST }\n", {"method": b"POST", "extra": [(b"Content-Length", b"0")]},
     {"method": b"PUT", "extra": [(b"Content-Length", b"0")]}),
    ("    http-request deny if HTTP_1.0\n", {"version": b"1.0"}, {"version": b"1.1"}),
    ("    use_backend b1 if { url_beg http:// }\n", {"absolute": True}, {"absolute": False}),
    ("    http-request deny if { req.cook(admin) -m found }\n", {"extra": [(b"Cookie", b"admin=1")]},
     {"extra": [(b"Cookie", b"x=1")]}),
    ("    http-request deny if REQ_CONTENT\n", {"extra": [(b"Content-Length", b"2")]},
     {"extra": [(b"Content-Length", b"0")]}),
    (f"    use_backend %[req.hdr(host),lower,map({MAP},app)]\n", {"host": b"www.a.b"}, {"host": b"admin.example"}),
    ("    use_backend b1 if { src 10.0.0.0/8 }\n", {"src": "10.1.2.3"}, {"src": "192.168.1.1"}),
    ("    http-request deny if { src_port 4000 }\n", {"src_port": 4000}, {"src_port": 4001}),
    ("    use_backend b1 if { dst 127.0.0.2 }\n", {"dst": "127.0.0.2"}, {"dst": "127.0.0.1"}),
    ("    use_backend b1 if { dst_port 8080 }\n", {"dst_port": 8080}, {"dst_port": 80}),
    ("    use_backend be_%[dst_port]\n", {"dst_port": 80}, {"dst_port": 81}),
    # server state is no part of any key: such rules are never remembered
    ("    use_backend b1 if { nbsrv(app) lt 1 }\n", {"up": 0}, {"up": 1}),
]


@pytest.mark.parametrize("rules, a, b", LEAKS)
def test_a_remembered_decision_never_answers_a_request_that_differs_in_a_part_read(rules, a, b):
    cfg = config(rules + "    default_backend app\n")
    ref = switching_of(cfg.frontends[0], cfg.backends)  # decides every request afresh
    ra, rb = dict(BASE_REQUEST, **a), dict(BASE_REQUEST, **b)
    want_a, want_b = summary(ref.choose(view_of(ra))), summary(ref.choose(view_of(rb)))
    assert want_a != want_b  # the row tells the two requests apart
    sw = switching_of(cfg.frontends[0], cfg.backends)
    if sw.memo is None:  # (the nbsrv row)
        assert decision_reads(cfg.frontends[0], cfg.backends, backend_names(cfg.frontends[0], cfg.backends)) is None
        return
    for first, second in ((ra, rb), (rb, ra), (ra, rb)):
        for r in (first, second, first):
            assert summary(memoized(sw, r)) == summary(ref.choose(view_of(r))), (rules, r)
    assert sw.memo.hits > 0  # what it remembered did answer


WORDS = ["admin", "api", "Admin", "x", "static", "v1", "secret", "a.b", "ex"]

ACL_KINDS = [
    lambda w: f"path_beg /{w}",
    lambda w: f"path_end .{w}",
    lambda w: f"path_reg ^/{w}/[0-9]+$",
    lambda w: f"path_dir {w}",
    lambda w: f"path -m str /{w}",
    lambda w: f"hdr(host) -i {w}.example",
    lambda w: f"hdr_dom(host) -i {w}",
    lambda w: f"hdr(user-agent) -m sub -i {w}",
    lambda w: f"req.hdr_cnt(x-{w}) gt 0",
    lambda w: f"url_param({w}) -m found",
    lambda w: f"query -m sub {w}=",
    lambda w: f"url_beg http://{w}",
    lambda w: f"method {w.upper()} GET",
    lambda w: "req.ver 1.0",
    lambda w: f"req.cook({w}) -m found",
    lambda w: f"src 10.0.0.{len(w)}/31 192.168.{len(w)}.0/24",
    lambda w: f"src_port {len(w) * 1000}:",
    lambda w: f"dst 127.0.0.{len(w) % 3}",
    lambda w: f"dst_port {80 + len(w) % 2}",
    lambda w: "nbsrv(app) lt 1",
]
ADDRESS_KINDS = [15, 16, 17, 18]
"""The ACL_KINDS that read an address of the connection (src, src_port, dst, dst_port)."""


@st.composite
def configs(draw):
    """The frontend section's rules and the app backend's: 1-5 named ACLs, then 1-6
    http-request local rules and 1-3 use_backend rules (static or dynamic names), with
    conditions of every shape; the backend may have local rules too."""
    names = [f"a{i}" for i in range(draw(st.integers(1, 5)))]
    kinds = draw(st.lists(st.sampled_from(range(len(ACL_KINDS))), min_size=1, max_size=4, unique=True))
    if draw(st.booleans()):  # often an address too: what a key holds besides the head
        kinds.append(draw(st.sampled_from(ADDRESS_KINDS)))
    line = st.tuples(st.sampled_from(kinds), st.sampled_from(WORDS))
    acls = [f"    acl {n} {ACL_KINDS[k](w)}" for n in names for k, w in draw(st.lists(line, min_size=1, max_size=3))]

    def cond(named: bool = True):  # (the backend's rules cannot name the frontend's ACLs)
        if draw(st.integers(0, 5)) == 0:
            return ""

        def literal():
            if not named or draw(st.booleans()):
                k, w = draw(line)
                return ("!" if draw(st.booleans()) else "") + "{ " + ACL_KINDS[k](w) + " }"
            return ("!" if draw(st.booleans()) else "") + draw(st.sampled_from(names))
        terms = [" ".join(literal() for _ in range(draw(st.integers(1, 2)))) for _ in range(draw(st.integers(1, 2)))]
        return f" {draw(st.sampled_from(['if', 'unless']))} {' || '.join(terms)}"

    actions = ["deny", "deny deny_status 429", "return status 200", "allow", "redirect prefix /r", "tarpit"]
    rules = [f"    http-request {draw(st.sampled_from(actions))}{cond()}" for _ in range(draw(st.integers(1, 6)))]
    targets = ["b1", "b2", f"%[req.hdr(host),lower,map({MAP},b2)]", "be_%[dst_port]"]
    uses = [f"    use_backend {draw(st.sampled_from(targets))}{cond()}" for _ in range(draw(st.integers(1, 3)))]
    app = [f"    http-request {draw(st.sampled_from(actions))}{cond(False)}" for _ in range(draw(st.integers(0, 2)))]
    return "\n".join(acls + rules + uses) + "\n    default_backend app\n", "\n".join(app) + "\n"


requests = st.fixed_dictionaries({
    "target": st.sampled_from([b"/", b"/admin", b"/admin/1", b"/Admin/x", b"/api/12", b"/x.secret",
                               b"/static/a.b", b"/api/v1?k=x", b"/s?admin=1&k=ex", b"/v1/x?secret="]),
    "absolute": st.booleans(),
    "host": st.sampled_from([b"admin.example", b"ADMIN.example", b"x.example:80", b"ex.example.", b"www.a.b"]),
    "ua": st.sampled_from([b"static-bot", b"curl", b"Mozilla ADMIN", None]),
    "method": st.sampled_from([b"GET", b"POST", b"API", b"HEAD"]),
    "version": st.sampled_from([b"1.1", b"1.0"]),
    "extra": st.sampled_from([[], [(b"X-Api", b"1")], [(b"Cookie", b"admin=1; x=2")]]),
    "src": st.sampled_from(["10.0.0.5", "10.0.0.6", "192.168.3.7", "127.0.0.1"]),
    "src_port": st.sampled_from([1000, 4000, 40000]),
    "dst": st.sampled_from(["127.0.0.1", "127.0.0.2"]),
    "dst_port": st.sampled_from([80, 81]),
    "up": st.sampled_from([0, 1]),
})

NEIGHBOURS = [("method", b"GET"), ("method", b"POST"), ("version", b"1.0"), ("absolute", True),
              ("host", b"ADMIN.example"), ("ua", b"Mozilla ADMIN"), ("src", "10.0.0.5"), ("src", "192.168.3.7"),
              ("src_port", 4000), ("dst", "127.0.0.2"), ("dst_port", 81), ("extra", [(b"X-Api", b"1")]),
              ("target", b"/admin"), ("up", 0), ("up", 1)]
"""(part, value) pairs: each request is also tried with one part changed to each of these."""


@settings(max_examples=300, deadline=None)
@given(configs(), st.lists(requests, min_size=1, max_size=6))
def test_remembered_decisions_are_the_rules_decisions(cfg, reqs):
    frontend, app = cfg
    conf = config(frontend, app)
    fe = conf.frontends[0]
    ref = switching_of(fe, conf.backends)
    sw = switching_of(fe, conf.backends)
    if sw.memo is None:  # only a rule that reads server state forbids remembering here
        assert "nbsrv" in frontend + app
        return
    seen = []
    for r in reqs:
        seen.append(r)
        seen += [dict(r, **{k: v}) for k, v in NEIGHBOURS if r[k] != v]
    for r in seen + seen[::-1]:
        try:
            want = summary(ref.choose(view_of(r)))
        except HeadError:
            continue
        assert summary(memoized(sw, r)) == want, (frontend, app, r)
