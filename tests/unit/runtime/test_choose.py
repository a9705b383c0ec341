"""The compiled choose() (route.compile_choose) decides as Switching.choose(), the
reference: the same Decision for every frontend and request, with the same condition calls
in the same order; and it is used only for frontends whose rules it covers."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splicer.config import loads
from splicer.http.actions import LocalRule
from splicer.http.h1 import parse_request
from splicer.http.sample import RequestView, request_view_of
from splicer.runtime.route import Switching, switching_of
from tests.unit.configs import HTTP_DEFAULTS

PRE = HTTP_DEFAULTS + """frontend www
    bind 127.0.0.1:1
"""

CONDS = ["{ path_beg /admin }", "{ path_end .secret }", "{ hdr(host) -i admin.example }",
         "{ url_param(k) -m found }", "{ method POST }", "!{ req.ver 1.1 }", "{ src 10.0.0.0/8 }",
         "{ path_reg ^/api/[0-9]+$ } || { query -m sub x= }", "{ path_beg /a } { method GET }",
         "{ nbsrv(b) lt 1 }", "{ path_dir v1 }"]
ACTIONS = ["deny", "deny deny_status 429", "return status 200", "allow",
           "redirect location /elsewhere code 301", "tarpit"]
BACKENDS = ("a", "b", "c")


@st.composite
def frontends(draw):
    """A frontend's text and its backends': 0-6 http-request rules that only answer or
    allow (conditional mostly), 0-3 use_backend lines (static, dynamic through a map-free
    name, or unconditional), a default_backend or none, backends with and without rules."""
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        cond = draw(st.sampled_from(CONDS + [""]))
        word = draw(st.sampled_from(["if", "unless"]))
        lines.append(f"    http-request {draw(st.sampled_from(ACTIONS))}" + (f" {word} {cond}" if cond else ""))
    for _ in range(draw(st.integers(0, 3))):
        cond = draw(st.sampled_from(CONDS + [""]))
        target = draw(st.sampled_from(list(BACKENDS) + ["%[req.hdr(x-be),lower]", "%[path,field(2,/)]"]))
        lines.append(f"    use_backend {target}" + (f" if {cond}" if cond else ""))
    if draw(st.booleans()) or not any(x.startswith("    use_backend") for x in lines):
        lines.append(f"    default_backend {draw(st.sampled_from(BACKENDS))}")
    if draw(st.booleans()):
        lines.append("    option accept-invalid-http-request")
    text = PRE + "\n".join(lines) + "\n"
    for b in BACKENDS:
        text += f"backend {b}\n    server s 127.0.0.1:2\n"
        if draw(st.integers(0, 3)) == 0:
            text += f"    http-request {draw(st.sampled_from(ACTIONS))} if {draw(st.sampled_from(CONDS))}\n"
        if draw(st.integers(0, 5)) == 0:
            text += "    http-request set-path /changed/../x\n"
    return text


requests = st.fixed_dictionaries({
    "target": st.sampled_from([b"/", b"/admin", b"/admin/1", b"/x.secret", b"/api/12", b"/api/12?x=1",
                               b"/a/b?k=1", b"/v1/c", b"/b", b"/c/x", b"/%2e%2e/admin", b"/a%2Fb"]),
    "host": st.sampled_from([b"admin.example", b"www.example", None]),
    "be": st.sampled_from([b"a", b"B", b"nope", None]),
    "method": st.sampled_from([b"GET", b"POST", b"HEAD"]),
    "version": st.sampled_from([b"1.1", b"1.0"]),
    "src": st.sampled_from(["10.0.0.5", "192.168.3.7"]),
})


def view_of(r, up: int) -> RequestView:
    fields = [(b"Host", r["host"])] if r["host"] is not None else []
    if r["be"] is not None:
        fields.append((b"X-Be", r["be"]))
    return RequestView(r["method"], r["target"], r["target"], r["version"], fields, r["src"], 4000,
                       "127.0.0.1", 80, False, lambda name: up)


def head_view_of(r, up: int) -> RequestView:
    """view_of(), built as the session builds it: from a head's bytes, parsed (with a head
    key: the memos keyed by it are asked). HTTP/1.1 needs a Host: a default one."""
    fields = [(b"Host", r["host"] or b"h.example")]
    if r["be"] is not None:
        fields.append((b"X-Be", r["be"]))
    raw = (b"%s %s HTTP/%s\r\n" % (r["method"], r["target"], r["version"])
           + b"".join(b"%s: %s\r\n" % f for f in fields) + b"\r\n")
    return request_view_of(parse_request(raw), raw, r["src"], 4000, "127.0.0.1", 80, lambda name: up)


@pytest.mark.parametrize("make", [view_of, head_view_of])
@settings(max_examples=150, deadline=None)
@given(text=frontends(), reqs=st.lists(st.tuples(requests, st.integers(0, 2)), min_size=1, max_size=6))
def test_the_compiled_choose_decides_as_choose(make, text, reqs):
    cfg = loads(text)
    sw = switching_of(cfg.frontends[0], cfg.backends)
    if sw is None:
        return
    assert (sw.decide == sw.choose) is (not all(type(r) is LocalRule for r in sw.fe_rules))
    for r, up in reqs + reqs:  # (twice: what the memos keep is asked again)
        a, b = make(r, up), make(r, up)
        assert sw.decide(a) == sw.choose(b)
        # what the backend's rules changed is the same too
        assert (a.target, a.method, a.fields) == (b.target, b.method, b.fields)


class Recorder:
    """A condition that logs its calls and answers from a script."""

    def __init__(self, name: str, log: list, answer: bool) -> None:
        self.name, self.log, self.answer = name, log, answer

    def __call__(self, view) -> bool:
        self.log.append(self.name)
        return self.answer


def test_the_compiled_choose_calls_the_conditions_of_choose_in_its_order():
    for answers in range(1 << 6):
        logs = {"choose": [], "decide": []}
        made = {}
        for k, log in logs.items():
            bit = iter(bool(answers >> i & 1) for i in range(6))
            fe = (LocalRule("deny", 403, Recorder("r0", log, next(bit))),
                  LocalRule("allow", 0, Recorder("r1", log, next(bit))),
                  LocalRule("deny", 403, Recorder("r2", log, next(bit))))
            ub = ((Recorder("u0", log, next(bit)), "b"), (Recorder("u1", log, next(bit)), lambda v: "c"),
                  (Recorder("u2", log, next(bit)), "a"))
            made[k] = Switching(fe, ub, "a", {"a": (), "b": (), "c": ()}, True, "www", False)
        view = RequestView(b"GET", b"/", b"/", b"1.1", [])
        assert made["decide"].decide is not made["decide"].choose
        d1, d2 = made["choose"].choose(view), made["decide"].decide(view)
        # the same rule (by its place: each Switching has rules of its own), backend and cuts
        rules1, rules2 = made["choose"].fe_rules, made["decide"].fe_rules
        assert ((d1.rule and rules1.index(d1.rule)), d1.backend, d1.cut_fe, d1.cut_be) == \
            ((d2.rule and rules2.index(d2.rule)), d2.backend, d2.cut_fe, d2.cut_be), answers
        assert logs["choose"] == logs["decide"], answers


def test_a_frontend_with_rules_that_edit_keeps_choose():
    cfg = loads(PRE + "    http-request set-header X 1\n    http-request deny if { path_beg /a }\n"
                "    default_backend a\nbackend a\n    server s 127.0.0.1:2\n")
    sw = switching_of(cfg.frontends[0], cfg.backends)
    assert sw.decide == sw.choose
