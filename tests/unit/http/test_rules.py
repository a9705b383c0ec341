"""Header rules (splicer/http/rules.py): parsing and application, without sockets."""
from __future__ import annotations

import pytest

from splicer.http.rules import Message, RuleError, StreamInfo, apply, parse_rule

STREAM = StreamInfo("192.0.2.7", 40000, "198.51.100.1", 80, "www", "app")
GET = Message(b"GET", b"/shop/cart?id=3")


def run(lines: list[str], fields, side: str = "request", msg: Message = GET):
    rules = tuple(parse_rule(line.split(" "), side) for line in lines)
    return apply(rules, fields, STREAM, msg)


def test_set_header_replaces_every_field_of_that_name_in_any_case():
    out = run(["set-header X-Forwarded-Proto http"],
              [(b"Host", b"a"), (b"x-forwarded-proto", b"https"), (b"X-FORWARDED-PROTO", b"ftp")])
    assert out == [(b"Host", b"a"), (b"X-Forwarded-Proto", b"http")]


def test_add_header_appends_and_del_header_removes():
    out = run(["add-header Via 1.1", "del-header Cookie"],
              [(b"Via", b"1.0 a"), (b"cookie", b"x=1"), (b"Cookie", b"y=2")])
    assert out == [(b"Via", b"1.0 a"), (b"Via", b"1.1")]


def test_samples_and_variables():
    fields = [(b"Host", b"shop.example"), (b"Accept", b"a, b"), (b"Accept", b"c")]
    out = run(["set-header X-F %[req.hdr(host)]|%ci:%cp|%fi:%fp|%f/%b|%HM|%HP|%HQ|%HU",
               "set-header X-A %[req.hdr(accept,1)]-%[hdr(accept)]-%[req.hdr(accept,-2)]",
               "set-header X-None <%[req.hdr(absent)]>"], fields)
    got = dict(out)
    assert got[b"X-F"] == (b"shop.example|192.0.2.7:40000|198.51.100.1:80|www/app|GET|/shop/cart"
                           b"|id=3|/shop/cart?id=3")
    assert got[b"X-A"] == b"a-c-b"
    assert got[b"X-None"] == b"<>"


def test_each_rule_sees_what_the_previous_one_left():
    out = run(["set-header X-Host %[req.hdr(host)]", "del-header Host", "set-header X-Gone <%[req.hdr(host)]>"],
              [(b"Host", b"a")])
    assert out == [(b"X-Host", b"a"), (b"X-Gone", b"<>")]


def test_response_samples():
    out = run(["set-header X-Status %[status]/%ST", "set-header X-Len %[res.hdr(content-length)]"],
              [(b"Content-Length", b"5")], "response", Message(b"GET", b"/", 404))
    assert dict(out)[b"X-Status"] == b"404/404"
    assert dict(out)[b"X-Len"] == b"5"


@pytest.mark.parametrize("words, message", [
    ("", "'http-request' expects an action"),
    ("silent-drop", "'http-request silent-drop' is not supported"),
    ("set-hdr A b", "unknown 'http-request' action 'set-hdr'"),
    ("set-header A", "expects exactly 2 argument(s)"),
    ("set-header A b c", "quote a value that holds spaces"),
    ("set-header A b if", "'http-request set-header': 'if' expects a condition"),
    ("del-header A unless { path_beg /a", "'http-request del-header': missing '}' in condition"),
    ("del-header -m beg X-", "'http-request del-header -m' is not supported"),
    ("set-header Bad:Name v", "'Bad:Name' is not a valid field name"),
    ("set-header Content-Length 0", "'Content-Length' cannot be rewritten"),
    ("del-header transfer-encoding", "'transfer-encoding' cannot be rewritten"),
    ("add-header Connection close", "'Connection' cannot be rewritten"),
    ("set-header A %[status]", "'status' is only available in http-response rules"),
    ("set-header A %ST", "'status' is only available in http-response rules"),
    ("set-header A %[res.hdr(x)]", "'res.hdr' is only available in http-response rules"),
    ("set-header A %[req.hdr(host),lower]", "converters are not supported"),
    ("set-header A %[src,ipmask(24)]", "converters are not supported"),
    ("set-header A %[nope]", "unknown sample fetch 'nope'"),
    ("set-header A %[src(1)]", "sample fetch 'src' takes no argument"),
    ("set-header A %[req.hdr]", "'req.hdr' expects a field name"),
    ("set-header A %[req.hdr(a;b)]", "expected a field name and an optional occurrence"),
    ("set-header A %[src", "unclosed '%['"),
    ("set-header A %{+Q}ci", "log-format flags"),
    ("set-header A %zz", "unknown log-format variable '%zz'"),
    ("set-header A 100%", "a '%' must start a sample"),
])
def test_bad_rules_are_refused_with_the_reason(words, message):
    with pytest.raises(RuleError) as exc:
        parse_rule(words.split(" ") if words else [], "request")
    assert message in str(exc.value)


def test_control_characters_are_refused_in_literals():
    with pytest.raises(RuleError, match="control characters"):
        parse_rule(["set-header", "A", "x\r\nInjected: 1"], "request")
    with pytest.raises(RuleError, match="ASCII"):
        parse_rule(["set-header", "A", "caf\u00e9"], "request")


# --- exact values and messages (mutation-testing gaps) --------------------------------------------

def rule_error(words, side="request"):
    with pytest.raises(RuleError) as exc:
        parse_rule(words, side)
    return str(exc.value)


def test_parse_rule_defaults_to_no_file_and_line_zero():
    rule = parse_rule(["del-header", "X-A"], "request")
    assert (rule.file, rule.line) == ("", 0)
    assert parse_rule(["del-header", "X-A"], "request", "a.cfg", 3).file == "a.cfg"


@pytest.mark.parametrize("words, message", [
    ([], "'http-request' expects an action (supported: set-header, add-header, del-header, allow, deny, return, redirect, auth, tarpit, normalize-uri, replace-header, replace-value, set-path, set-pathq, set-query, set-uri, set-method, replace-path, replace-pathq, replace-uri, set-var, set-var-fmt, unset-var, use-service)"),
    (["set-hdr"], "unknown 'http-request' action 'set-hdr' (supported: set-header, add-header, del-header, allow, deny, return, redirect, auth, tarpit, normalize-uri, replace-header, replace-value, set-path, set-pathq, set-query, set-uri, set-method, replace-path, replace-pathq, replace-uri, set-var, set-var-fmt, unset-var, use-service)"),
    (["silent-drop"], "'http-request silent-drop' is not supported (supported: set-header, add-header, del-header, allow, deny, return, redirect, auth, tarpit, normalize-uri, replace-header, replace-value, set-path, set-pathq, set-query, set-uri, set-method, replace-path, replace-pathq, replace-uri, set-var, set-var-fmt, unset-var, use-service)"),
    (["del-header"], "'http-request del-header' expects exactly 1 argument(s): del-header <name>"),
    (["del-header", "A", "B"], "'http-request del-header' expects exactly 1 argument(s): del-header <name>"
                               " (quote a value that holds spaces)"),
    (["set-header", "A"], "'http-request set-header' expects exactly 2 argument(s): set-header <name> <fmt>"),
    (["add-header", "A", "b", "c", "if"], "'http-request add-header' expects exactly 2 argument(s): "
                                          "add-header <name> <fmt> (quote a value that holds spaces)"),
    (["set-header", "X\u00e9", "v"], "'X\u00e9' is not a valid field name (RFC 9110 section 5.1)"),
    (["set-header", "Upgrade", "v"], "'Upgrade' cannot be rewritten: splicer writes the framing and "
                                     "connection fields itself"),
    (["set-header", "A", "x\x7fy"], "field values cannot hold control characters (CR, LF, NUL...)"),
    (["set-header", "A", "%[]"], "unknown sample fetch '' (supported: src, src_port, dst, dst_port, fe_name, "
                                 "be_name, method, path, query, url, status, req.hdr(<name>[,<occ>]), "
                                 "res.hdr(<name>[,<occ>]), hdr(<name>[,<occ>]), "
                                 "var(<scope>.<name>[,<default>]))"),
    (["set-header", "A", "%[hdr(host]"], "'hdr' expects a field name: '%[hdr(<name>)]'"),
    (["set-header", "A", "%zz"], "unknown log-format variable '%zz' (supported: %ci, %cp, %fi, %fp, %f, %b, "
                                 "%HM, %HP, %HQ, %HU, %ST)"),
])
def test_rule_errors_are_exact(words, message):
    assert rule_error(words) == message


@pytest.mark.parametrize("value", ["a b", "a\tb", "~!"])
def test_space_and_tab_and_visible_ascii_are_allowed_in_literals(value):
    assert parse_rule(["set-header", "A", value], "request").value == (value.encode(),)


def test_percent_percent_is_a_literal_percent():
    assert run(["set-header X-A 100%%-%%%HM%%"], []) == [(b"X-A", b"100%-%GET%")]


def test_literal_text_after_the_last_sample_is_kept_whole():
    assert run(["add-header X-A <%[src]>-yz"], []) == [(b"X-A", b"<192.0.2.7>-yz")]


def test_path_and_query_split_at_the_first_question_mark():
    out = run(["set-header X-P %HP", "set-header X-Q %HQ"], [], msg=Message(b"GET", b"/a?b?c"))
    assert out == [(b"X-P", b"/a"), (b"X-Q", b"b?c")]


def test_query_of_a_target_without_question_mark_is_empty():
    assert run(["set-header X-Q <%HQ>"], [], msg=Message(b"GET", b"/a")) == [(b"X-Q", b"<>")]


def test_header_occurrence_zero_or_beyond_the_values_is_empty():
    fields = [(b"X", b"a, b")]
    assert run(["set-header Y <%[req.hdr(x,0)]><%[req.hdr(x,3)]><%[req.hdr(x,-3)]><%[req.hdr(x,2)]>"],
               fields) == [(b"X", b"a, b"), (b"Y", b"<><><><b>")]


def test_add_header_renders_its_samples_from_the_stream_the_message_and_the_fields():
    assert run(["add-header X-A %ci|%HM|%[req.hdr(x)]"], [(b"X", b"1")]) == [
        (b"X", b"1"), (b"X-A", b"192.0.2.7|GET|1")]


def test_in_a_response_hdr_reads_the_response_and_req_hdr_the_request():
    msg = Message(b"GET", b"/", 200, [(b"X", b"from-request")])
    out = run(["set-header Y %[hdr(x)]/%[res.hdr(x)]/%[req.hdr(x)]"], [(b"X", b"from-response")], "response", msg)
    assert out == [(b"X", b"from-response"), (b"Y", b"from-response/from-response/from-request")]


def test_in_a_response_req_hdr_without_request_fields_is_empty():
    out = run(["set-header Y <%[req.hdr(x)]>"], [(b"X", b"r")], "response", Message(b"GET", b"/", 200))
    assert out == [(b"X", b"r"), (b"Y", b"<>")]


def test_in_a_request_hdr_reads_the_request_fields_being_rewritten():
    assert run(["set-header Y %[hdr(x)]"], [(b"X", b"1")]) == [(b"X", b"1"), (b"Y", b"1")]


# --- plain_edits: the rules the engine's express lane makes itself ------------------------------

def _rules(*words: list[str]) -> tuple:
    return tuple(parse_rule(list(w), "request") for w in words)


def test_plain_edits_of_each_header_action():
    from splicer.http.rules import plain_edits
    assert plain_edits(()) == ()
    assert plain_edits(_rules(["set-header", "X-Forwarded-Proto", "http"])) == (
        ("del", b"x-forwarded-proto"), ("add", b"X-Forwarded-Proto", (b"http",)))
    assert plain_edits(_rules(["add-header", "Via", "1.1 splicer"])) == (("add", b"Via", (b"1.1 splicer",)),)
    assert plain_edits(_rules(["del-header", "X-Debug"])) == (("del", b"x-debug"),)
    assert plain_edits(_rules(["add-header", "X-Real-IP", "%[src]"], ["add-header", "X-C", "%ci"])) == (
        ("add", b"X-Real-IP", ("src",)), ("add", b"X-C", ("src",)))
    assert plain_edits(_rules(["set-header", "X-H", "a%[req.hdr(host)]b%[hdr(Accept,2)]%%"])) == (
        ("del", b"x-h"), ("add", b"X-H", (b"a", ("hdr", b"host", -1), b"b", ("hdr", b"accept", 2), b"%")))


@pytest.mark.parametrize("words", [
    ["set-header", "X-A", "%[path]"],
    ["set-header", "X-A", "%[src_port]"],
    ["add-header", "X-A", "%cp"],
    ["set-header", "X-A", "%[var(txn.x)]"],
    ["replace-header", "X-A", "a", "b"],
    ["replace-value", "X-A", "a", "b"],
    ["set-header", "X-A", "1", "if", "{", "path", "/x", "}"],
    ["del-header", "X-A", "unless", "{", "path", "/x", "}"],
    ["set-header", "X-A", "%[req.hdr(connection)]"],
    ["set-header", "X-A", "%[req.hdr(keep-alive)]"],
    ["set-header", "X-A", "%[req.hdr(content-length)]"],
    ["set-header", "X-A", "%[req.hdr(transfer-encoding)]"],
    ["set-path", "/x"],
    ["set-var(txn.x)", "str(a)"],
])
def test_plain_edits_refuse_what_the_engine_does_not_make(words):
    from splicer.http.rules import plain_edits
    assert plain_edits(_rules(["add-header", "X-Before", "1"], words)) is None


def test_plain_edits_read_a_field_only_as_received():
    from splicer.http.rules import plain_edits
    for first in (["add-header", "X-A", "1"], ["set-header", "x-a", "1"], ["del-header", "X-A"]):
        assert plain_edits(_rules(first, ["set-header", "X-B", "%[req.hdr(x-a)]"])) is None
    assert plain_edits(_rules(["add-header", "X-B", "1"], ["set-header", "X-C", "%[req.hdr(x-a)]"])) is not None
    assert plain_edits(_rules(["set-header", "X-A", "<%[req.hdr(x-a)]>"])) == (
        ("del", b"x-a"), ("add", b"X-A", (b"<", ("hdr", b"x-a", -1), b">")))


def test_plain_edits_do_what_apply_does():
    """The edits, made on a field list as the engine makes them, give apply()'s fields."""
    from splicer.http.logformat import _last
    from splicer.http.rules import plain_edits
    rules = _rules(["set-header", "X-Forwarded-Proto", "http"], ["set-header", "X-Forwarded-Host", "%[req.hdr(host)]"],
                   ["add-header", "Via", "1.1 splicer"], ["del-header", "Cookie"], ["add-header", "X-T", "1"],
                   ["add-header", "x-t", "2"], ["del-header", "X-T"], ["add-header", "X-T", "3 %ci %[req.hdr(a,-2)]"])
    fields = [(b"Host", b"example.com"), (b"X-Forwarded-Proto", b"https"), (b"Cookie", b"a=1"),
              (b"A", b"1, 2 ,3"), (b"via", b"1.0 c")]
    info = StreamInfo("192.0.2.1", 1234, "127.0.0.1", 80, "fe", "be")
    want = apply(rules, fields, info, Message(b"GET", b"/"))
    orig, added = list(fields), []
    for edit in plain_edits(rules):
        if edit[0] == "del":
            orig = [(n, v) for n, v in orig if n.lower() != edit[1]]
            added = [(n, v) for n, v in added if n.lower() != edit[1]]
        else:
            value = b"".join(p if isinstance(p, bytes) else info.src.encode() if p == "src"
                             else _last(fields, p[1], p[2]) for p in edit[2])
            added.append((edit[1], value))
    assert orig + added == want
