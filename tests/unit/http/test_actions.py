"""splicer.http.actions: deny / return / redirect / allow parsed and answered, exact bytes."""
import pytest

from splicer.http.acl import parse_condition
from splicer.http.actions import first_local, reply
from splicer.http.rules import Message, RuleError, StreamInfo, parse_rule
from splicer.http.sample import RequestView

INFO = StreamInfo("192.0.2.1", 4000, "10.0.0.1", 80, "www", "app")
FIELDS = [(b"Host", b"www.example")]


def answer(words: str, target: bytes = b"/a/b?q=1", keep=True, version=b"1.1", pages=None, method=b"GET"):
    rule = parse_rule(words.split(" "), "request")
    return reply(rule, INFO, Message(method, target), FIELDS, version, keep, pages or {}, method)


@pytest.mark.parametrize("words, target, location", [
    ("redirect location /login", b"/a?q=1", b"/login"),
    ("redirect location https://%[req.hdr(host)]%[path]", b"/a?q=1", b"https://www.example/a"),
    ("redirect prefix https://new.example", b"/a/b?q=1", b"https://new.example/a/b?q=1"),
    ("redirect prefix https://new.example drop-query", b"/a/b?q=1", b"https://new.example/a/b"),
    ("redirect prefix / append-slash", b"/a/b?q=1", b"/a/b/?q=1"),
    ("redirect prefix / append-slash drop-query", b"/a/b/?q=1", b"/a/b/"),
    ("redirect scheme https", b"/a/b?q=1", b"https://www.example/a/b?q=1"),
    ("redirect scheme https drop-query append-slash", b"/a?q=1", b"https://www.example/a/"),
])
def test_redirect_locations(words, target, location):
    data, keep = answer(words, target)
    assert data == (b"HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: " + location
                    + b"\r\ncache-control: no-cache\r\n\r\n")
    assert keep is True


@pytest.mark.parametrize("code, reason", [(301, b"Moved Permanently"), (303, b"See Other"),
                                          (307, b"Temporary Redirect"), (308, b"Permanent Redirect")])
def test_redirect_codes(code, reason):
    data, _ = answer(f"redirect location /x code {code}")
    assert data.split(b"\r\n")[0] == b"HTTP/1.1 %d %s" % (code, reason)


def test_deny_page_keep_alive_close_and_http10():
    body = b"<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n</body></html>\n"
    head = b"HTTP/1.1 403 Forbidden\r\ncontent-length: 93\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n"
    assert answer("deny") == (head + b"\r\n" + body, True)
    assert answer("deny", keep=False) == (head + b"connection: close\r\n\r\n" + body, False)
    assert answer("deny", version=b"1.0") == (head + b"connection: keep-alive\r\n\r\n" + body, True)
    assert answer("deny", method=b"HEAD") == (head + b"\r\n", True)


def test_deny_uses_the_errorfile_and_closes():
    page = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno"
    assert answer("deny", pages={403: page}) == (page, False)
    assert answer("deny deny_status 429", pages={403: page})[0].startswith(b"HTTP/1.1 429 Too Many Requests\r\n")


def test_return_payloads(tmp_path):
    assert answer("return") == (b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", True)
    assert answer("return status 404 content-type text/plain string gone hdr X-A %[src]")[0] == (
        b"HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\ncontent-type: text/plain\r\nX-A: 192.0.2.1\r\n\r\ngone")
    assert answer("return status 200 content-type text/plain lf-string %[path]")[0].endswith(b"\r\n\r\n/a/b")
    assert answer("return status 503 default-errorfiles")[0].startswith(
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: ")
    # a status RFC 9110 does not name gets its class's reason, as set-status (haproxy)
    assert answer("return status 299")[0] == b"HTTP/1.1 299 Success\r\ncontent-length: 0\r\n\r\n"
    assert answer("return status 418")[0] == b"HTTP/1.1 418 Client Error\r\ncontent-length: 0\r\n\r\n"
    assert answer("return status 402")[0] == b"HTTP/1.1 402 Payment Required\r\ncontent-length: 0\r\n\r\n"


def test_a_204_or_304_answer_has_no_body_and_no_content_length():
    """RFC 9112 section 6.3 rule 1: the response ends at its head; a body would be read as
    the next response (RFC 9110 sections 8.6, 15.3.5, 15.4.5)."""
    assert answer("return status 204")[0] == b"HTTP/1.1 204 No Content\r\n\r\n"
    assert answer("deny deny_status 204")[0] == (b"HTTP/1.1 204 No Content\r\ncache-control: no-cache\r\n"
                                                 b"content-type: text/html\r\n\r\n")
    assert answer("deny deny_status 304", keep=False)[0] == (
        b"HTTP/1.1 304 Not Modified\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n"
        b"connection: close\r\n\r\n")
    for words in ("return status 204 content-type text/plain string hello",
                  "return status 304 content-type text/plain lf-string %[path]",
                  "deny deny_status 204 content-type text/plain string x",
                  "tarpit status 304 content-type text/plain string x"):
        with pytest.raises(RuleError, match=r"a (204|304) response has no body \(RFC 9110 section 15\.[34]\.5\)"):
            parse_rule(words.split(" "), "request")


def test_a_content_type_with_control_characters_is_refused():
    for ct in ("text/plain\r\nX-Injected: 1", "a\x01b", "a\x7fb", "text/plain\u00e9"):
        with pytest.raises(RuleError, match="a content-type is printable ASCII"):
            parse_rule(["return", "content-type", ct, "string", "a"], "request")


@pytest.mark.parametrize("words, message", [
    ("redirect", "'http-request redirect' expects 'location <loc>', 'prefix <pfx>' or 'scheme <sch>'"),
    ("redirect to /x", "'http-request redirect' expects 'location <loc>', 'prefix <pfx>' or 'scheme <sch>'"),
    ("redirect location /x code", "'http-request redirect': 'code' expects a status code"),
    ("redirect location /x keep-query", "'http-request redirect': unknown option 'keep-query' "
                                        "(supported: code, drop-query, append-slash)"),
    ("redirect location /x set-cookie A=1", "'http-request redirect': option 'set-cookie' is not supported"),
    ("return status 99", "'http-request return': invalid status code '99' (expected 200..599)"),
    ("return status", "'http-request return': 'status' expects a status code"),
    ("return deny_status 403", "'http-request return': unknown option 'deny_status' (use 'status')"),
    ("return content-type text/plain string a string b",
     "'http-request return': 'string' conflicts with 'string' (one payload per rule)"),
    ("return hdr X", "'http-request return': 'hdr' expects a name and a value"),
    ("return hdr Content-Length 5", "'http-request return': field 'Content-Length' cannot be set "
                                    "(splicer writes the framing)"),
    ("return bogus", "'http-request return': unknown option 'bogus' (supported: status, content-type, string, "
                     "lf-string, file, errorfile, default-errorfiles, hdr)"),
    ("deny deny_status 700", "'http-request deny': invalid status code '700' (expected 200..599)"),
    ("deny if", "'http-request deny': 'if' expects a condition (e.g. 'if host_www' or 'if { path_beg /api }')"),
])
def test_action_errors_are_exact(words, message):
    with pytest.raises(RuleError) as exc:
        parse_rule(words.split(" "), "request")
    assert str(exc.value) == message


def test_errorfile_payload_is_checked(tmp_path):
    (tmp_path / "bad.http").write_bytes(b"hello")
    with pytest.raises(RuleError) as exc:
        parse_rule(["return", "errorfile", "bad.http"], "request", str(tmp_path / "site.cfg"))
    assert str(exc.value) == ("'http-request return': 'bad.http' is not an HTTP response "
                              "(status line, fields, empty line, body; CRLF line endings)")
    (tmp_path / "ok.http").write_bytes(b"HTTP/1.1 200 OK\r\n\r\n")
    with pytest.raises(RuleError) as exc:
        parse_rule(["return", "errorfile", "ok.http", "hdr", "A", "b"], "request", str(tmp_path / "site.cfg"))
    assert str(exc.value) == "'http-request return': 'errorfile' is sent as-is: no 'hdr' or 'content-type' with it"


def test_first_local_order_allow_and_cut():
    def rule(text):
        words = text.split(" ")
        r = parse_rule(words, "request")
        return r.__class__(**{**r.__dict__, "cond": r.cond.bind({})}) if r.cond else r
    rules = (rule("set-header A 1"), rule("allow if { path_beg /ok }"), rule("set-header B 2"),
             rule("deny if { path_beg /no }"), rule("redirect location /x"))
    v = lambda p: RequestView(b"GET", p, p, b"1.1", [], "127.0.0.1", 1, "127.0.0.1", 2)  # noqa: E731
    assert first_local(rules, v(b"/ok")) == (None, 1)
    r, i = first_local(rules, v(b"/no"))
    assert (r.action, i) == ("deny", 3)
    r, i = first_local(rules, v(b"/other"))
    assert (r.action, i) == ("redirect", 4)
    assert first_local(rules[:3], v(b"/other")) == (None, 3)


def test_counter_names():
    assert parse_rule(["deny"], "request").counter == "dreq"
    assert parse_rule(["return"], "request").counter == "intercepted"
    assert parse_rule(["redirect", "location", "/"], "request").counter == "intercepted"


def test_conditions_on_header_rules_read_the_view():
    from splicer.http.rules import apply
    r = parse_rule(["set-header", "X-Api", "1", "if", "{", "path_beg", "/api", "}"], "request")
    r = r.__class__(**{**r.__dict__, "cond": r.cond.bind({})})
    v = lambda p: RequestView(b"GET", p, p, b"1.1", [], "127.0.0.1", 1, "127.0.0.1", 2)  # noqa: E731
    assert apply((r,), [], INFO, Message(b"GET", b"/api"), v(b"/api")) == [(b"X-Api", b"1")]
    assert apply((r,), [], INFO, Message(b"GET", b"/x"), v(b"/x")) == []
    assert apply((r,), [], INFO, Message(b"GET", b"/api"), None) == []  # no view: a conditional rule never runs
    assert parse_condition(["if", "TRUE"]).bind({})(v(b"/")) is True
