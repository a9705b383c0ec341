"""Edges of the local actions (http/actions.py), the log-format scanner (http/logformat.py)
and the http-response rule evaluation (http/response_actions.py) that the main suites leave
open: exact refusals of an action's words, options in any order, ``hdr`` formats reading
the request, ``%(name)`` and ``%{flags}`` items, and response header rules reading the
stream and the transaction's variables."""
from __future__ import annotations

import re

import pytest

from splicer.http.actions import parse_set_status, reply
from splicer.http.logformat import Message, RuleError, StreamInfo, scan
from splicer.http.response_actions import evaluate
from splicer.http.rules import parse_rule
from splicer.http.sample import RequestView
from splicer.http.variables import Vars

INFO = StreamInfo("192.0.2.1", 4000, "10.0.0.1", 80, "www", "app")
FIELDS = [(b"Host", b"www.example")]


def answer(words: list[str], target: bytes = b"/a?q=1") -> tuple[bytes, bool]:
    rule = parse_rule(words, "request")
    return reply(rule, INFO, Message(b"GET", target), FIELDS, b"1.1", True, {})


# -- local actions: parsing -------------------------------------------------------------------

@pytest.mark.parametrize("words, message", [
    (["return", "content-type"], "'http-request return': 'content-type' expects a type"),
    (["return", "content-type", "a\x01b", "string", "a"],
     ("'http-request return': a content-type is printable ASCII: it cannot hold control characters "
      "(CR, LF, NUL...)")),
    (["return", "lf-string", "%[path]"], "'http-request return': 'lf-string' needs a 'content-type'"),
    (["return", "string", "a"], "'http-request return': 'string' needs a 'content-type'"),
    (["deny", "bogus"], ("'http-request deny': unknown option 'bogus' (supported: deny_status, content-type, "
                         "string, lf-string, file, errorfile, default-errorfiles, hdr)")),
    (["tarpit", "bogus"], ("'http-request tarpit': unknown option 'bogus' (supported: status, deny_status, "
                           "content-type, string, lf-string, file, errorfile, default-errorfiles, hdr)")),
    (["return", "hdr", "Content-Length", "1"],
     "'http-request return': field 'Content-Length' cannot be set (splicer writes the framing)"),
    (["return", "hdr", "Transfer-Encoding", "chunked"],
     "'http-request return': field 'Transfer-Encoding' cannot be set (splicer writes the framing)"),
    (["return", "hdr", "connection", "close"],
     "'http-request return': field 'connection' cannot be set (splicer writes the framing)"),
])
def test_local_action_refusals_are_exact(words, message):
    """A payload without a content-type, a content-type missing or holding a control
    character, an unknown option (the list names the action's status option) and a
    framing field in ``hdr`` are refused at load with these exact messages."""
    with pytest.raises(RuleError) as exc:
        parse_rule(words, "request")
    assert str(exc.value) == message


def test_a_file_payload_needs_a_content_type(tmp_path):
    """``return file <file>`` without ``content-type`` is refused, as ``string`` is
    (haproxy 4.2 "http-request return": both need a content-type)."""
    (tmp_path / "page.txt").write_bytes(b"hello")
    with pytest.raises(RuleError) as exc:
        parse_rule(["return", "file", "page.txt"], "request", str(tmp_path / "site.cfg"))
    assert str(exc.value) == "'http-request return': 'file' needs a 'content-type'"


def test_the_status_option_may_follow_other_options():
    """``status`` is read wherever it stands among the options, and the ones after it
    still apply."""
    data, keep = answer(["return", "content-type", "text/plain", "status", "404", "string", "gone"])
    assert data == b"HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\ncontent-type: text/plain\r\n\r\ngone"
    assert keep is True


def test_every_hdr_is_sent_in_order_and_its_format_reads_the_request_fields():
    """``hdr <name> <fmt>`` may repeat; each field is written in order after the
    content-type, its format rendered against the request (``req.hdr(host)``)."""
    data, _ = answer(["return", "hdr", "X-Host", "%[req.hdr(host)]", "hdr", "X-B", "2"])
    assert data == (b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nX-Host: www.example\r\nX-B: 2\r\n\r\n")


def test_default_errorfiles_answers_the_error_page_of_the_status():
    """``return status 503 default-errorfiles``: the body is the proxy's error page of
    503 (its ``errorfile`` when there is one, sent as-is and closing), else the built-in
    one."""
    data, keep = answer(["return", "status", "503", "default-errorfiles"])
    body = (b"<html><body><h1>503 Service Unavailable</h1>\n"
            b"No server is available to handle this request.\n</body></html>\n")
    assert data == (b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 107\r\ncache-control: no-cache\r\n"
                    b"content-type: text/html\r\n\r\n" + body)
    assert keep is True
    page = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
    rule = parse_rule(["return", "status", "503", "default-errorfiles"], "request")
    assert reply(rule, INFO, Message(b"GET", b"/"), [], b"1.1", True, {503: page}) == (page, False)


def test_a_redirect_location_reads_the_stream():
    """A ``location`` is a log-format string: ``%[src]`` and ``%[src_port]`` are the
    client's address and port."""
    data, _ = answer(["redirect", "location", "/from/%[src]:%[src_port]", "code", "303"])
    assert data == (b"HTTP/1.1 303 See Other\r\ncontent-length: 0\r\nlocation: /from/192.0.2.1:4000\r\n"
                    b"cache-control: no-cache\r\n\r\n")


@pytest.mark.parametrize("text, reason", [("Slow\tDown", b"Slow\tDown"), ("Slow Down", b"Slow Down")])
def test_a_set_status_reason_may_hold_a_tab(text, reason):
    """RFC 9112 section 4: reason-phrase = 1*( HTAB / SP / VCHAR / obs-text ): a tab is
    kept, as a space is."""
    rule = parse_set_status(["503", "reason", text], None)
    assert (rule.status, rule.reason) == (503, reason)


# -- log-format scanning ----------------------------------------------------------------------

@pytest.mark.parametrize("text, items", [
    ("%(host)[req.hdr(host)]", [("fetch", "req.hdr(host)", (), "host")]),
    ("%(n)ci", [("alias", "ci", (), "n")]),
    ("x)%(n)[src]", [("text", "x)"), ("fetch", "src", (), "n")]),
    ("%{+Q,+E}[src]", [("fetch", "src", ("+Q", "+E"), None)]),
    ("%{+Q,}r", [("alias", "r", ("+Q",), None)]),
    ("a}%{+Q}[src]", [("text", "a}"), ("fetch", "src", ("+Q",), None)]),
    ("%(h){+Q}[src] 100%%", [("fetch", "src", ("+Q",), "h"), ("text", " 100%")]),
])
def test_scan_reads_names_and_flags(text, items):
    """configuration.txt 8.2.6: ``%(name)`` before an item names it, ``%{flags}`` holds
    comma-separated flags (empty ones dropped); a ``)`` or ``}`` in the literal text
    before them is text."""
    assert scan(text) == items


# -- http-response rules ----------------------------------------------------------------------

def test_response_header_rules_read_the_stream_and_the_transaction_variables():
    """An http-response header rule's format reads the stream (``%[fe_name]``,
    ``%[src]``) and the variables of the request's view: ``txn`` ones live on, ``req``
    ones are gone once the response phase starts (haproxy 2.8)."""
    store = Vars()
    store.set("txn", "t", b"kept")
    store.set("req", "r", b"gone")
    view = RequestView(b"GET", b"/a", b"/a", b"1.1", FIELDS, "192.0.2.1", 4000, "10.0.0.1", 80, False, {},
                       vars=store)
    rules = tuple(parse_rule(line.split(" "), "response") for line in
                  ("set-header X-Fe %[fe_name]/%[src]", "set-header X-T %[var(txn.t)]",
                   "set-header X-R <%[var(req.r)]>"))
    verdict = evaluate((rules,), 200, b"OK", [(b"Content-Length", b"0")], INFO, b"GET", b"/a", FIELDS, view)
    assert verdict.rule is None
    assert verdict.fields == [(b"Content-Length", b"0"), (b"X-Fe", b"www/192.0.2.1"), (b"X-T", b"kept"),
                              (b"X-R", b"<>")]


@pytest.mark.parametrize("name", ["X A", "X:A", "X-\u00e9", "(x)"])
@pytest.mark.parametrize("action", ["return", "deny", "tarpit"])
def test_a_payload_field_name_that_is_no_token_is_refused(action, name):
    """`hdr <name> <fmt>` of return, deny and tarpit takes a field name (RFC 9110 section
    5.1: a token), as set-header does: one that is not is refused at load, never written
    into a response (`X:A` would be read as field X)."""
    with pytest.raises(RuleError, match=f"'{re.escape(name)}' is not a valid field name"):
        parse_rule([action, "hdr", name, "1"], "request")
    assert parse_rule([action, "hdr", "X-A", "1"], "request") is not None
