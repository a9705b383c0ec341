"""Edge cases of the smaller http modules the main tests leave open: cookie persistence
(persist.py), the services' rules (service.py), variables (variables.py), Basic credentials
and userlists (userlist.py), and a few fetches and memos of sample.py (haproxy 2.6
configuration.txt 4.2 "cookie", "set-var", 7.3.6 "url_param", "http_auth_group", "req.cook";
RFC 6265, RFC 7617, RFC 9110 section 5.6.3, RFC 9112 section 2.2)."""
from __future__ import annotations

import base64

import pytest

from splicer.http import sample
from splicer.http.h1 import parse_request
from splicer.http.logformat import RuleError, StreamInfo
from splicer.http.persist import CookiePolicy, request_cookie, s30tob64, server_by_value
from splicer.http.rules import parse_rule
from splicer.http.sample import RequestView, SampleError, parse_fetch, request_view_of
from splicer.http.service import StatsSettings, parse_use_service, stats_rule
from splicer.http.userlist import UserlistError, basic_credentials, parse_user
from splicer.http.variables import Vars

INFO = StreamInfo("192.0.2.7", 40000, "198.51.100.1", 80, "www", "app")


def view(target=b"/", fields=(), **kw):
    return RequestView(b"GET", target, target, b"1.1", list(fields), **kw)


def b64(text: bytes) -> bytes:
    return base64.b64encode(text)


# -- persist.py ------------------------------------------------------------------------------

def test_prefix_cookie_value_may_hold_equal_signs():
    """A cookie's name ends at its first '=' (RFC 6265 section 4.2.1): a prefix-mode value
    holding '=' (base64 padding) designates its server and keeps the rest for the server."""
    rc = request_cookie(CookiePolicy("JSESSIONID", mode="prefix"), [(b"Cookie", b"JSESSIONID=s1~YWJj==")])
    assert (rc.value, rc.present, rc.fields, rc.edited) == (
        b"s1", True, [(b"Cookie", b"JSESSIONID=YWJj==")], True)


def test_insert_indirect_cookie_removed_from_the_request_still_gives_its_dates():
    """insert indirect removes the cookie from the forwarded request; its dates
    (SRV|LAST|FIRST, 4-second units in base64) are still reported for maxidle/maxlife."""
    now, last, first = 1_000_000, 999_992, 999_000
    policy = CookiePolicy("SRV", mode="insert", indirect=True, maxidle=3600, maxlife=3600)
    value = b"SRV=s1|" + s30tob64(last >> 2) + b"|" + s30tob64(first >> 2)
    rc = request_cookie(policy, [(b"Cookie", value), (b"Host", b"h")], now)
    assert (rc.value, rc.last_date, rc.first_date, rc.expired) == (b"s1", last, first, False)
    assert (rc.fields, rc.edited) == ([(b"Host", b"h")], True)


@pytest.mark.parametrize("values, value, index", [
    ({b"s1": 0, b"s2": 1}, b"s2", 1),
    ({b"s1": 0}, b"s3", None),
    ({b"s1": 0, b"": 1}, b"", None),  # a cookie that designates no server never picks one
])
def test_server_by_value(values, value, index):
    """The server whose cookie value the request's cookie designates; b"" designates none."""
    assert server_by_value(values, value) == index


# -- service.py ------------------------------------------------------------------------------

@pytest.mark.parametrize("make, service", [
    (lambda: parse_use_service(["prometheus-exporter"], None, "site.cfg", 3), "prometheus-exporter"),
    (lambda: stats_rule(StatsSettings(), "site.cfg", 3), "stats"),
])
def test_services_answer_as_a_return_rule(make, service):
    """A service answers like an http-request `return` (200) and counts as intercepted."""
    rule = make()
    assert (rule.action, rule.status, rule.service, rule.counter, rule.file, rule.line) == (
        "return", 200, service, "intercepted", "site.cfg", 3)


# -- variables.py ----------------------------------------------------------------------------

@pytest.mark.parametrize("words, side, message", [
    (["set-var(x)", "str(a)"], "request", ("'http-request set-var': 'x' is not a variable name: expected "
                                           "<scope>.<name> with <scope> one of proc, sess, txn, req, res")),
    (["set-var-fmt(txn.a)", "%[status]"], "request",
     "sample fetch 'status' is only available in http-response rules"),
    (["set-var-fmt(txn.a)", "%[res.hdr(x)]"], "request",
     "sample fetch 'res.hdr' is only available in http-response rules"),
])
def test_variable_rule_errors(words, side, message):
    """A one-character variable is read as a name (and refused without a scope); a
    request's set-var-fmt cannot read the response."""
    with pytest.raises(RuleError) as exc:
        parse_rule(words, side)
    assert str(exc.value) == message


def test_unset_var_keeps_where_it_was_written():
    """unset-var rules carry their file and line like the other variable rules."""
    r = parse_rule(["unset-var(txn.a)"], "request", "site.cfg", 9)
    assert (r.action, r.scope, r.name, r.file, r.line) == ("unset-var", "txn", "a", "site.cfg", 9)


def test_response_set_var_fmt_reads_the_request_fields_with_req_hdr():
    """In an http-response set-var-fmt, req.hdr reads the request's fields and res.hdr
    (hdr) the response's."""
    v = view(fields=[(b"Host", b"req.example")], vars=Vars())
    v.vars.response()
    v.status, v.response_fields = 200, [(b"Host", b"resp.example")]
    rule = parse_rule(["set-var-fmt(txn.h)", "%[req.hdr(host)]|%[hdr(host)]"], "response")
    assert rule.edit(v, INFO) is True
    assert v.vars.txn == {"h": b"req.example|resp.example"}


# -- userlist.py -----------------------------------------------------------------------------

@pytest.mark.parametrize("values, creds", [
    ([b"Basic \t" + b64(b"u:p") + b" \t"], (b"u", b"p")),
    ([b"Basic " + b64(b"u:p") + b"\x0b"], None),  # a vertical tab is no whitespace (OWS)
    ([b"Basic " + b64(b"u:p") + b"\x0c"], None),  # nor a form feed
])
def test_basic_credentials_only_space_and_tab_are_whitespace(values, creds):
    """Only SP and HTAB surround the token68 (RFC 9110 section 5.6.3, RFC 7617)."""
    assert basic_credentials(values) == creds


def test_user_groups_with_an_empty_name_are_refused():
    """`groups a,,b` names an empty group: refused, the user named in the message."""
    with pytest.raises(UserlistError) as exc:
        parse_user(["alice", "groups", "a,,b"])
    assert str(exc.value) == "user 'alice': empty name in 'a,,b'"


# -- sample.py: credentials --------------------------------------------------------------------

def test_http_auth_user_and_pass_parts():
    """http_auth_user / http_auth_pass give the decoded Basic user and password, nothing
    without credentials (the functions FETCHES builds them from, at import)."""
    v = view(fields=[(b"Authorization", b"Basic " + b64(b"alice:s3:cret"))])
    assert (sample._basic_part(0)(v), sample._basic_part(1)(v)) == ([b"alice"], [b"s3:cret"])
    assert (sample._basic_part(0)(view()), sample._basic_part(1)(view())) == ([], [])


def test_http_auth_group_outside_acls_without_a_verdict_is_absent():
    """Outside ACLs http_auth_group gives the user name; without a verdict (not
    authenticated) it gives nothing, and it needs a userlist."""
    hdr = [(b"Authorization", b"Basic " + b64(b"tiger:x"))]
    assert parse_fetch("http_auth_group(L)")(view(fields=hdr)) == []
    with pytest.raises(SampleError) as exc:
        parse_fetch("http_auth_group")
    assert str(exc.value) == "fetch 'http_auth_group' expects a userlist: http_auth_group(<userlist>)"


# -- sample.py: fields, cookies, url_param -----------------------------------------------------

def test_cookies_are_read_from_cookie_fields_only():
    """req.cook reads the Cookie fields, never another field that looks like cookies."""
    v = view(fields=[(b"X-Cookie", b"id=1"), (b"Set-Cookie", b"id=2"), (b"Cookie", b"a=3; id=4")])
    assert parse_fetch("req.cook(id)")(v) == [b"4"]
    assert parse_fetch("req.cook()")(v) == [b"3"]
    assert parse_fetch("req.cook_cnt(id)")(v) == [1]


def test_hdr_gives_every_value_of_every_field():
    """hdr() iterates the comma-separated values of each field of that name, in order."""
    v = view(fields=[(b"X", b"1"), (b"X", b"2, 3"), (b"X", b"4")])
    assert parse_fetch("hdr(x)")(v) == [b"1", b"2", b"3", b"4"]
    assert parse_fetch("hdr_cnt(x)")(v) == [4]


def test_a_field_name_that_is_not_ascii_finds_nothing():
    """No field is named with non-ASCII characters: the sample is absent (no error)."""
    assert parse_fetch("req.hdr(h\u00e9)")(view(fields=[(b"Host", b"h")])) == []


@pytest.mark.parametrize("expr, target, samples", [
    ("url_param(,;)", b"/p;a=1;b=2", [b"1", b"2"]),  # the first delimiter starts them
    ("url_param(b,;)", b"/p;a=1;b=2", [b"2"]),
    ("url_param(a,;)", b"/p;?a=1", []),  # the list starts after ';': its first name is '?a'
])
def test_url_param_with_a_delimiter(expr, target, samples):
    """With a delimiter the parameters start after its first occurrence or the '?',
    whichever comes first (haproxy http_find_param_list)."""
    assert parse_fetch(expr)(view(target)) == samples


# -- sample.py: keys and memos -----------------------------------------------------------------

@pytest.mark.parametrize("target, key", [(b"/a?x=1", b"?x=1"), (b"/a?", b"?"), (b"/a", b"")])
def test_query_part_key_keeps_the_question_mark(target, key):
    """The query's key is the target from its '?': an empty query is not an absent one."""
    assert sample.part_key("query")(view(target)) == key


def test_internal_fetch_reads_the_head_alone():
    """req.body_announced is a function of the head (its framing) alone."""
    assert sample.internal_fetch("req.body_announced").reads == ()


def test_a_head_memo_answers_a_repeated_head_without_calling_again():
    """remembered_by_head: a head repeated but for its query is answered from the memo."""
    calls = []

    def fn(v):
        calls.append(v.target)
        return v.values(b"host")[0]
    run = sample.remembered_by_head(fn)
    for q in (b"1", b"2", b"3"):
        raw = b"GET /p?q=" + q + b" HTTP/1.1\r\nHost: h\r\n\r\n"
        assert run(request_view_of(parse_request(raw), raw)) == b"h"
    assert calls == [b"/p?q=1"]
    assert run.memo == {b"GET /p HTTP/1.1\r\nHost: h\r\n\r\n": b"h"}


def test_url_of_an_absolute_form_head_after_empty_lines():
    """Empty lines before the request line are skipped (RFC 9112 section 2.2) when the
    target as sent is read off the request line."""
    head = b"GET http://h.example/a?b HTTP/1.1\r\nHost: h.example\r\n\r\n"
    v = request_view_of(parse_request(head), b"\r\n\r\n" + head)
    assert (v.url, v.target) == (b"http://h.example/a?b", b"/a?b")
    assert parse_fetch("url")(v) == [b"http://h.example/a?b"]
