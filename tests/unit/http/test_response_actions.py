"""splicer.http.response_actions: http-response set-status / deny / return / redirect / allow
parsed, evaluated in order with the header rules (haproxy 4.2 "http-response", 4.4), and
the framing a changed status leaves (RFC 9110 section 15.3.5 / 15.4.5, RFC 9112 section 6.3)."""
import pytest

from splicer.http.actions import reply
from splicer.http.framing import BodyKind, Framing
from splicer.http.logformat import Message, RuleError, StreamInfo
from splicer.http.response_actions import StatusRule, Verdict, evaluate, reason_of, reframe
from splicer.http.rules import parse_rule
from splicer.http.sample import RequestView

INFO = StreamInfo("192.0.2.1", 4000, "10.0.0.1", 80, "www", "app")
REQ_FIELDS = [(b"Host", b"www.example")]


def rules(*lines: str) -> tuple:
    return tuple(parse_rule(line.split(" "), "response", "site.cfg", i + 1) for i, line in enumerate(lines))


def view() -> RequestView:
    return RequestView(b"GET", b"/a", b"/a", b"1.1", REQ_FIELDS, "192.0.2.1", 4000, "10.0.0.1", 80, False, {})


def run(sets, status=200, fields=None, reason=b"OK") -> Verdict:
    fields = [(b"Content-Length", b"5")] if fields is None else fields
    return evaluate(sets, status, reason, fields, INFO, b"GET", b"/a", REQ_FIELDS, view())


# -- parsing ---------------------------------------------------------------------------------

def test_set_status_parsed_with_and_without_reason():
    assert parse_rule(["set-status", "431"], "response") == StatusRule(431, None)
    rule = parse_rule(["set-status", "503", "reason", "Slow Down", "if", "{", "status", "200", "}"], "response",
                      "site.cfg", 7)
    assert (rule.status, rule.reason, rule.file, rule.line, rule.cond is not None) == (
        503, b"Slow Down", "site.cfg", 7, True)


@pytest.mark.parametrize("words, message", [
    ("set-status", "'http-response set-status' expects a status code: set-status <status> [reason <str>]"),
    ("set-status abc", "'http-response set-status': invalid status code 'abc' (expected 200..999)"),
    ("set-status 1000", "'http-response set-status': invalid status code '1000' (expected 200..999)"),
    ("set-status 99", "'http-response set-status': invalid status code '99' (expected 200..999)"),
    ("set-status 103", "'http-response set-status': invalid status code '103' (expected 200..999) "
                       "(a 1xx is an interim response: a client would wait for another)"),
    ("set-status 200 reason", "'http-response set-status': 'reason' expects a text (quote it if it holds spaces)"),
    ("set-status 200 reason Slow Down",
     "'http-response set-status': unexpected 'Down' after the reason (quote a reason that holds spaces)"),
    ("set-status 200 because x", "'http-response set-status': unknown option 'because' (supported: reason)"),
    ("redirect prefix /x", "'http-response redirect prefix' is not allowed: a response may only be "
                           "redirected with 'location <loc>' (haproxy)"),
    ("redirect scheme https", "'http-response redirect scheme' is not allowed: a response may only be "
                              "redirected with 'location <loc>' (haproxy)"),
    ("redirect", "'http-response redirect' expects 'location <loc>'"),
    ("allow now", "'http-response allow' takes no argument, got 'now'"),
    ("deny status 403", "'http-response deny': unknown option 'status' (use 'deny_status')"),
    ("return deny_status 403", "'http-response return': unknown option 'deny_status' (use 'status')"),
    ("return string x", "'http-response return': 'string' needs a 'content-type'"),
    ("deny deny_status 99", "'http-response deny': invalid status code '99' (expected 200..599)"),
])
def test_parse_errors(words, message):
    with pytest.raises(RuleError) as exc:
        parse_rule(words.split(" "), "response")
    assert str(exc.value) == message


def test_set_status_reason_must_be_one_ascii_line():
    with pytest.raises(RuleError) as exc:
        parse_rule(["set-status", "200", "reason", "a\r\nX-Evil: 1"], "response")
    assert str(exc.value) == "'http-response set-status': a reason is printable ASCII text on one line (RFC 9112 section 4)"


def test_set_status_is_not_a_request_action():
    with pytest.raises(RuleError) as exc:
        parse_rule(["set-status", "200"], "request")
    assert str(exc.value).startswith("unknown 'http-request' action 'set-status'")


def test_response_deny_defaults_to_502_and_counts_dresp():
    deny = parse_rule(["deny"], "response")
    assert (deny.action, deny.status, deny.default_errorfiles, deny.side, deny.counter) == (
        "deny", 502, True, "response", "dresp")
    assert parse_rule(["deny", "deny_status", "503"], "response").status == 503
    assert parse_rule(["return"], "response").counter == ""
    assert parse_rule(["redirect", "location", "/x"], "response").counter == ""
    assert parse_rule(["deny"], "request").counter == "dreq"  # the request side unchanged


def test_response_formats_may_read_the_response():
    rule = parse_rule(["return", "content-type", "text/plain", "lf-string", "was %[status] %[res.hdr(x)]"],
                      "response")
    data, keep = reply(rule, INFO, Message(b"GET", b"/", 404, REQ_FIELDS), [(b"X", b"y")], b"1.1", True, {})
    assert (data, keep) == (b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\ncontent-type: text/plain\r\n\r\nwas 404 y",
                            True)


def test_standard_reasons():
    assert (reason_of(431), reason_of(503), reason_of(204)) == (
        b"Request Header Fields Too Large", b"Service Unavailable", b"No Content")
    # a status without a phrase of its own: its class's, as haproxy names them
    assert [reason_of(n) for n in (299, 399, 499, 599, 600, 999)] == [
        b"Success", b"Redirection", b"Client Error", b"Server Error", b"Other", b"Other"]


# -- evaluation ------------------------------------------------------------------------------

def test_set_status_changes_status_reason_and_what_later_rules_read():
    v = run((rules("set-status 503", "set-header X-St %[status]",
                   "set-header X-Was-503 yes if { status 503 }", "set-header X-Was-200 yes if { status 200 }"),))
    assert (v.rule, v.status, v.reason) == (None, 503, b"Service Unavailable")
    assert v.fields == [(b"Content-Length", b"5"), (b"X-St", b"503"), (b"X-Was-503", b"yes")]
    assert run((rules("set-status 404 reason Gone-Away"),)).reason == b"Gone-Away"


def test_header_rules_change_what_later_conditions_read():
    v = run((rules("set-header X-A 1", "deny if { res.hdr(x-a) 1 }"),))
    assert v.rule is not None and v.rule.action == "deny"
    v = run((rules("del-header X-A", "deny if { res.hdr(x-a) -m found }"),), fields=[(b"X-A", b"1")])
    assert v.rule is None and v.fields == []


def test_the_first_answering_rule_wins_and_later_rules_do_not_run():
    v = run((rules("set-header X-1 a", "return status 201 if { status 200 }", "deny", "set-header X-2 b"),))
    assert (v.rule.action, v.rule.status) == ("return", 201)
    assert v.fields == [(b"Content-Length", b"5"), (b"X-1", b"a")]


def test_conditions_that_do_not_hold_skip_the_rule():
    v = run((rules("deny if { status 500 }", "redirect location /x unless { status 200 }"),))
    assert v == Verdict(None, 200, b"OK", [(b"Content-Length", b"5")])
    assert run((rules("deny if { status 500 }"),), status=500).rule.status == 502


def test_allow_stops_its_own_set_only():
    backend = rules("set-header X-B 1", "allow if { status 200 }", "deny", "set-header X-B2 1")
    frontend = rules("set-header X-F 1")
    v = run((backend, frontend))
    assert v.rule is None
    assert v.fields == [(b"Content-Length", b"5"), (b"X-B", b"1"), (b"X-F", b"1")]
    v = run((backend, rules("deny")))
    assert v.rule is not None  # the frontend's set still runs after the backend's allow
    assert run((backend, frontend), status=404).rule is not None  # the allow's condition fails


def test_backend_set_runs_before_frontend_set():
    v = run((rules("set-status 404"), rules("set-header X-F %[status]", "deny if { status 404 }")))
    assert v.rule is not None and v.fields == [(b"Content-Length", b"5"), (b"X-F", b"404")]


def test_a_rule_with_a_condition_and_no_view_does_not_run():
    v = evaluate((rules("deny if { status 200 }", "set-status 201"),), 200, b"OK", [], INFO, b"GET", b"/",
                 REQ_FIELDS, None)
    assert (v.rule, v.status, v.reason) == (None, 201, b"Created")


# -- framing ---------------------------------------------------------------------------------

LEN5 = Framing(BodyKind.LENGTH, 5)


@pytest.mark.parametrize("method, framing, server, status, fields, out", [
    # unchanged status: unchanged
    (b"GET", LEN5, 200, 200, [(b"Content-Length", b"5")], (LEN5, [(b"Content-Length", b"5")], False)),
    # a body status to another: unchanged
    (b"GET", LEN5, 200, 503, [(b"Content-Length", b"5")], (LEN5, [(b"Content-Length", b"5")], False)),
    # to 204: no framing field, the body dropped
    (b"GET", LEN5, 200, 204, [(b"Content-Length", b"5"), (b"A", b"b")],
     (Framing(BodyKind.NONE, 0), [(b"A", b"b")], True)),
    (b"GET", Framing(BodyKind.CHUNKED), 200, 204, [(b"Transfer-Encoding", b"chunked")],
     (Framing(BodyKind.NONE, 0), [], True)),
    (b"GET", Framing(BodyKind.CLOSE), 200, 204, [], (Framing(BodyKind.NONE, 0), [], True)),
    # an empty body has nothing to drop
    (b"GET", Framing(BodyKind.LENGTH, 0), 200, 204, [(b"Content-Length", b"0")],
     (Framing(BodyKind.NONE, 0), [], False)),
    # to 304: Content-Length kept (the representation's), Transfer-Encoding gone
    (b"GET", LEN5, 200, 304, [(b"Content-Length", b"5")],
     (Framing(BodyKind.NONE, 0), [(b"Content-Length", b"5")], True)),
    (b"GET", Framing(BodyKind.CHUNKED), 200, 304, [(b"Transfer-Encoding", b"chunked")],
     (Framing(BodyKind.NONE, 0), [], True)),
    # the server's 204 / 304 given a status with a body: an empty one, said so
    (b"GET", Framing(BodyKind.NONE, 0), 204, 200, [(b"A", b"b")],
     (Framing(BodyKind.LENGTH, 0), [(b"A", b"b"), (b"Content-Length", b"0")], False)),
    (b"GET", Framing(BodyKind.NONE, 0), 304, 200, [(b"Content-Length", b"1234")],
     (Framing(BodyKind.LENGTH, 0), [(b"Content-Length", b"0")], False)),
    # HEAD: no body either way; the Content-Length stays, but not in a 204
    (b"HEAD", Framing(BodyKind.NONE, 0), 200, 404, [(b"Content-Length", b"9")],
     (Framing(BodyKind.NONE, 0), [(b"Content-Length", b"9")], False)),
    (b"HEAD", Framing(BodyKind.NONE, 0), 200, 204, [(b"Content-Length", b"9")],
     (Framing(BodyKind.NONE, 0), [], False)),
])
def test_reframe(method, framing, server, status, fields, out):
    assert reframe(method, framing, server, status, fields) == out
