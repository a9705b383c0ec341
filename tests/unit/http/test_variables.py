"""Variables (splicer/http/variables.py): set-var / set-var-fmt / unset-var, their scopes,
and the var() fetch in ACLs, formats and dynamic names, without sockets."""
from __future__ import annotations

import pytest

from splicer.http.acl import parse_acl_expr
from splicer.http.actions import first_local
from splicer.http.h1 import forward_response_head, parse_request, parse_response
from splicer.http.logformat import Message, RuleError, StreamInfo, parse_format, render
from splicer.http.rules import parse_rule
from splicer.http.sample import RequestView, SampleError, parse_fetch, parse_name_format, render_name
from splicer.http.variables import Vars

INFO = StreamInfo("192.0.2.7", 40000, "198.51.100.1", 80, "www", "app")


def view(vars_=None, fields=None):
    fields = [(b"Host", b"Shop.Example"), (b"X-N", b"7")] if fields is None else fields
    return RequestView(b"GET", b"/a?q=1", b"/a?q=1", b"1.1", fields, "192.0.2.7", 40000, "198.51.100.1", 80,
                       vars=Vars() if vars_ is None else vars_)


def run(lines, v, side="request"):
    rules = tuple(parse_rule(line.split(" "), side) for line in lines)
    return first_local(rules, v, INFO)


def test_set_var_takes_a_sample_expression_with_converters():
    v = view()
    run(["set-var(txn.host) req.hdr(host),lower", "set-var(req.n) req.hdr_cnt(x-n)", "set-var(sess.s) str(kept)"], v)
    assert (v.vars.txn, v.vars.req, v.vars.sess) == ({"host": b"shop.example"}, {"n": b"1"}, {"s": b"kept"})


def test_set_var_with_an_absent_sample_leaves_the_variable_as_it_was():
    v = view()
    run(["set-var(txn.x) str(old)", "set-var(txn.x) req.hdr(x-missing)"], v)
    assert v.vars.txn == {"x": b"old"}


def test_set_var_fmt_and_unset_var():
    v = view()
    run(["set-var-fmt(txn.from) %[src]:%[src_port]", "set-var-fmt(txn.empty) %[hdr(x-none)]",
         "set-var(txn.gone) str(1)", "unset-var(txn.gone)", "unset-var(txn.never)"], v)
    assert v.vars.txn == {"from": b"192.0.2.7:40000", "empty": b""}


def test_later_rules_conditions_and_formats_read_the_variables():
    v = view()
    run(["set-var(txn.be) str(blue)", "set-header X-Be %[var(txn.be)]/%[var(txn.none)]/%[var(txn.none,dflt)]",
         "set-header X-Cond yes if { var(txn.be) -m str blue }",
         "set-header X-Not yes if { var(txn.none) -m found }"], v)
    assert v.fields[-2:] == [(b"X-Be", b"blue//dflt"), (b"X-Cond", b"yes")]


def test_var_in_acls_with_every_method():
    store = Vars()
    store.set("txn", "n", b"42")
    store.set("sess", "who", b"Admin")
    v = view(store)
    def acl(text):
        return parse_acl_expr(text.split(" "), "acl a")(v)
    assert [acl("var(txn.n) -m int gt 40"), acl("var(txn.n) 42"), acl("var(sess.who) -i admin"),
            acl("var(sess.who) admin"), acl("var(sess.who),lower -m beg adm"), acl("var(txn.x) -m found"),
            acl("var(txn.x,none) none")] == [True, True, True, False, True, False, True]


def test_var_in_dynamic_names():
    store = Vars()
    store.set("txn", "be", b"be_blue")
    assert render_name(parse_name_format("%[var(txn.be)]"), view(store)) == b"be_blue"
    assert render_name(parse_name_format("x%[var(txn.none)]"), view()) == b"x"


def test_scopes_req_and_res_never_overlap_and_sess_proc_are_shared():
    sess, proc = {}, {}
    a = Vars(sess, proc)
    for scope in ("proc", "sess", "txn", "req"):
        a.set(scope, "x", scope.encode())
    a.set("res", "x", b"ignored: no response yet")
    assert a.get("res", "x") is None
    a.response()
    assert (a.get("req", "x"), a.get("txn", "x")) == (None, b"txn")
    a.set("res", "x", b"res")
    assert a.get("res", "x") == b"res"
    b = Vars(sess, proc)  # the next stream of the same session
    assert (b.get("sess", "x"), b.get("proc", "x"), b.get("txn", "x"), b.get("req", "x")) == (b"sess", b"proc", None, None)
    c = Vars({}, proc)  # another session of the same worker
    assert (c.get("sess", "x"), c.get("proc", "x")) == (None, b"proc")


def test_http_response_set_var_reads_the_response_and_header_rules_read_it():
    req = parse_request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    resp = parse_response(b"HTTP/1.1 200 OK\r\nServer: nginx/1.2\r\nContent-Length: 0\r\n\r\n", b"GET")
    v = RequestView(b"GET", b"/", b"/", b"1.1", req.headers, vars=Vars())
    v.vars.set("txn", "t", b"from-request")
    v.vars.set("req", "r", b"request-only")
    rules = tuple(parse_rule(line.split(" "), "response") for line in [
        "set-var(res.srv) res.hdr(server),lower", "set-header X-Srv %[var(res.srv)]|%[var(txn.t)]|%[var(req.r)]",
        "set-var-fmt(txn.st) %ST", "del-header Server if { var(txn.st) 200 }"])
    head = forward_response_head(resp, b"1.1", True, rules, INFO, req, v)
    assert head == b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Srv: nginx/1.2|from-request|\r\n\r\n"


@pytest.mark.parametrize("words, side, message", [
    (["set-var", "str(a)"], "request", "'http-request set-var' expects a variable: set-var(<scope>.<name>)"),
    (["set-var()", "str(a)"], "request", "'http-request set-var' expects a variable: set-var(<scope>.<name>)"),
    (["set-var(txn)", "str(a)"], "request", "'http-request set-var': 'txn' is not a variable name: expected "
                                            "<scope>.<name> with <scope> one of proc, sess, txn, req, res"),
    (["set-var(tx.a)", "str(a)"], "request", "'http-request set-var': 'tx.a' is not a variable name: expected "
                                             "<scope>.<name> with <scope> one of proc, sess, txn, req, res"),
    (["set-var(txn.a-b)", "str(a)"], "request", "'http-request set-var': variable name 'txn.a-b' may only "
                                                "contain a-z, A-Z, 0-9 and '_' after its scope"),
    (["set-var(txn.a,ifnotempty)", "str(a)"], "request", "'http-request set-var': set-var conditions "
                                                         "('ifnotempty') are not supported"),
    (["set-var(res.a)", "str(a)"], "request", "'http-request set-var(res.a)': a 'res' variable does not live "
                                              "during request processing (haproxy 2.8: 'req' and 'res' never overlap)"),
    (["set-var-fmt(req.a)", "x"], "response", "'http-response set-var-fmt(req.a)': a 'req' variable does not "
                                              "live during response processing (haproxy 2.8: 'req' and 'res' never "
                                              "overlap)"),
    (["set-var(txn.a)"], "request", "'http-request set-var' expects exactly 1 argument(s): "
                                    "set-var(<scope>.<name>) <expr>"),
    (["set-var(txn.a)", "str(a)", "x"], "request", "'http-request set-var' expects exactly 1 argument(s): "
                                                   "set-var(<scope>.<name>) <expr> (quote a value that holds spaces)"),
    (["unset-var(txn.a)", "x"], "request", "'http-request unset-var' expects exactly 0 argument(s): "
                                           "unset-var(<scope>.<name>) (quote a value that holds spaces)"),
    (["set-var(txn.a)", "paht"], "request", "'http-request set-var': unknown fetch method 'paht'; did you "
                                            "mean 'path'?"),
    (["set-var-fmt(txn.a)", "%[var(txn)]"], "request", "'%[var(txn)]': 'txn' is not a variable name: "
                                                       "expected <scope>.<name> with <scope> one of proc, sess, "
                                                       "txn, req, res"),
])
def test_variable_errors_are_exact(words, side, message):
    with pytest.raises(RuleError) as exc:
        parse_rule(words, side)
    assert str(exc.value) == message


def test_var_fetch_errors():
    with pytest.raises(SampleError, match="fetch 'var' expects a variable"):
        parse_fetch("var()")
    with pytest.raises(SampleError, match="fetch 'int': 'x' is not an integer"):
        parse_fetch("int(x)")


def test_formats_without_variables_give_empty():
    fmt = parse_format("[%[var(txn.a)]]", "request")
    assert render(fmt, INFO, Message(b"GET", b"/"), []) == b"[]"


def test_a_value_holding_cr_lf_or_nul_is_never_stored():
    v = view()
    run(["set-var(txn.x) str(kept)", "set-var(txn.x) req.hdr(host),regsub(\\.,\r\n)"], v)
    assert v.vars.txn == {"x": b"kept"}
    run(["set-var(txn.y) req.hdr(host),regsub(\\.,-)"], v)
    assert v.vars.txn["y"] == b"Shop-Example"


@pytest.mark.parametrize("expr, message", [
    ("str(a\r\nb)", "fetch 'str': the text cannot hold control characters (CR, LF, NUL...)"),
    ("var(txn.a,x\ny)", "fetch 'var': the default cannot hold control characters (CR, LF, NUL...)"),
])
def test_constants_cannot_hold_control_characters(expr, message):
    with pytest.raises(SampleError) as exc:
        parse_fetch(expr)
    assert str(exc.value) == message
