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
    ("deny", "'http-request deny' is not supported"),
    ("set-hdr A b", "unknown 'http-request' action 'set-hdr'"),
    ("set-header A", "expects exactly 2 argument(s)"),
    ("set-header A b c", "quote a value that holds spaces"),
    ("set-header A b if TRUE", "ACL conditions ('if'/'unless') are not supported"),
    ("del-header A unless TRUE", "ACL conditions ('if'/'unless') are not supported"),
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
