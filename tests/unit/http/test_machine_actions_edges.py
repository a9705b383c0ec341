"""Edges of the stream machine (http/machine.py) and of the local actions (http/actions.py)
that the main suites leave open: where a response-rule answer leaves both connections, a
HEAD response whose status a rule changes, persistence heads that no memo may answer, what
a stream starts with; the files, boundaries, messages and origins of parsed actions."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from splicer.http.actions import PAYLOAD_MAX, merge_runs, parse_action, reply
from splicer.http.h1 import parse_request
from splicer.http.logformat import StreamInfo
from splicer.http.machine import Finish, RelayTerms, Release, Reply, Respond, StreamMachine, keep_alive_terms
from splicer.http.outcome import End, Result
from splicer.http.retry import RetryPolicy
from splicer.http.rules import Message, RuleError, parse_rule
from splicer.runtime.transfer import SplicePolicy

INFO = StreamInfo("192.0.2.1", 4000, "10.0.0.1", 80, "www", "farm")
OK_5 = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"


def server(index=0, name="web1"):
    return SimpleNamespace(index=index, model=SimpleNamespace(name=name),
                           counters=SimpleNamespace(wretr=0, wredis=0, reused=0, req_tot=0))


def lease(name="web1"):
    return SimpleNamespace(server=server(0, name), reused=False, failures=0, redispatched=False, killed=None)


def route(**kw):
    base = {"bufsize": 16384, "splice_request": SplicePolicy.AUTO, "splice_response": SplicePolicy.AUTO,
            "response_rules": (), "response_sets": (), "errorpages": {}, "http_buffer_request": False,
            "abortonclose": False}
    base.update(kw)
    return SimpleNamespace(**base)


def response_rules(*lines: str) -> dict:
    rules = tuple(parse_rule(line.split(" "), "response", "site.cfg", i + 1) for i, line in enumerate(lines))
    return {"response_rules": rules, "response_sets": (rules,)}


def sending(raw=b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", cls=StreamMachine, via=None, **kw):
    """A machine (health not observed) whose request went out: in SEND."""
    m = cls(parse_request(raw, 100), raw, route(**kw), RetryPolicy(), SimpleNamespace(wretr=0, wredis=0, reused=0),
            "farm", True)
    m.info = INFO
    m.start()
    m.leased(via or lease())
    return m


# -- the stream machine ------------------------------------------------------------------------

def test_a_stream_starts_unobserved_with_no_local_answer_held():
    """What the driver does not set: no `observe layer7` (no Observe job), no tarpit answer
    held, nothing to drain, not a local answer, no relay terms."""
    raw = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
    m = StreamMachine(parse_request(raw, 100), raw, route(), RetryPolicy(), None, "farm", True)
    assert (m.observing, m.reply, m.drain, m.local, m.relaying) == (False, b"", 0, None, None)
    m.start()
    m.leased(lease())
    assert m.head(b"", None, "timeout", 1.0) == [Release(False), Reply(None, 504)]


def test_a_killed_stream_holds_no_connection():
    """The lease attribute is None between attempts, and after a hard stop."""
    m = sending()
    m.killed()
    assert m.lease is None


def test_a_response_rule_answer_after_the_whole_body_keeps_both_connections():
    """The request body went all out before the head: the request was whole, so an empty
    response's connection is reused and the client's goes on (no `connection: close`)."""
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    m = sending(raw, **response_rules("deny"))
    assert m.body_ended(Result(End.DONE, 100, 100, 0)) == []
    jobs = m.head(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert jobs[0] == Release(True) and type(jobs[1]) is Reply and len(jobs) == 2
    assert jobs[1].data.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"connection: close" not in jobs[1].data
    assert m.replied(len(jobs[1].data)) == [Finish(True, False)]


def test_a_body_failing_after_a_response_rule_answer_shuts_no_server_side():
    """The answer gave the server connection back: the body's later end has nothing to shut
    down, and the answer's termination stays."""
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    m = sending(raw, **response_rules("deny"))
    m.head(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert m.lease is None
    assert m.body_ended(Result(End.SRC_EOF, 10)) == []
    assert str(m.term) == "PH"


def test_a_head_response_whose_status_a_rule_sets_keeps_its_content_length():
    """A response to HEAD has no body either way; its Content-Length describes the
    resource (RFC 9110 section 9.3.2): set-status leaves it as the server wrote it."""
    m = sending(b"HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n", **response_rules("set-status 404"))
    (job,) = m.head(OK_5, None, None, 1.0)
    assert job == Respond(b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\n", 0, False, False, False, True)
    assert m.reusable is True


def test_a_response_header_rule_reads_the_request_target():
    """http-response set-header formats read the request's URL (%[url])."""
    m = sending(b"GET /p?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", **response_rules("set-status 203", "set-header X-U %[url]"))
    (job,) = m.head(OK_5, None, None, 1.0)
    assert job.head == b"HTTP/1.1 203 Non-Authoritative Information\r\nContent-Length: 5\r\nX-U: /p?q=1\r\n\r\n"


class Persisting(StreamMachine):
    """A backend whose persistence cookie names the server the response came from."""
    __slots__ = ()

    def persist_fields(self, resp):
        return [(b"Content-Length", b"5"), (b"Set-Cookie", b"SRV=" + self.server.model.name.encode())]


def test_each_persisted_response_gets_its_own_cookie_for_the_same_server_head():
    """A head edited by persistence is built anew each time: two identical server heads
    from two servers carry each its own cookie, never one remembered from the other."""
    heads = []
    for name in ("s1", "s2"):
        m = sending(cls=Persisting, via=lease(name))
        m.persisting = True
        (job,) = m.head(OK_5, None, None, 1.0)
        heads.append(job.head)
    assert heads == [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: SRV=s1\r\n\r\n",
                     b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: SRV=s2\r\n\r\n"]


# -- local actions: payload files --------------------------------------------------------------------

def test_an_errorfile_payload_is_answered_as_it_is_and_closes(tmp_path):
    """`return errorfile <file>`: a whole HTTP response, sent as-is; the connection ends."""
    page = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
    (tmp_path / "busy.http").write_bytes(page)
    rule = parse_rule(["return", "errorfile", "busy.http"], "request", str(tmp_path / "site.cfg"))
    assert (rule.raw, rule.body, rule.content_type) == (page, None, None)
    assert reply(rule, INFO, Message(b"GET", b"/"), [], b"1.1", True, {}) == (page, False)


@pytest.mark.parametrize("payload", ["file", "errorfile"])
def test_an_unreadable_payload_file_is_refused_with_its_reason(tmp_path, payload):
    """The file is read when the rule is; a missing one names the action and the OS reason."""
    words = ["return", "content-type", "text/plain", payload, "missing.txt"] if payload == "file" else \
        ["return", payload, "missing.txt"]
    with pytest.raises(RuleError) as exc:
        parse_rule(words, "request", str(tmp_path / "site.cfg"))
    assert str(exc.value) == "'http-request return': cannot read 'missing.txt': No such file or directory"


def test_a_payload_file_of_at_most_payload_max_bytes_is_taken_whole(tmp_path):
    """PAYLOAD_MAX (1 MiB) is the largest `file` accepted, whole; one byte more is refused."""
    (tmp_path / "max.txt").write_bytes(b"a" * PAYLOAD_MAX)
    (tmp_path / "over.txt").write_bytes(b"a" * (PAYLOAD_MAX + 1))
    rule = parse_rule(["return", "content-type", "text/plain", "file", "max.txt"], "request",
                      str(tmp_path / "site.cfg"))
    assert len(rule.body) == PAYLOAD_MAX == 1 << 20
    with pytest.raises(RuleError) as exc:
        parse_rule(["return", "content-type", "text/plain", "file", "over.txt"], "request", str(tmp_path / "site.cfg"))
    assert str(exc.value) == "'http-request return': 'over.txt' is larger than 1048576 bytes"


def test_an_auth_errorfile_has_every_challenge_replaced_even_one_holding_a_colon():
    """haproxy 4.2 "http-request auth": the proxy's 401 errorfile, its WWW-Authenticate
    fields (whatever their value holds) replaced with one Basic challenge; sent as-is."""
    page = (b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"api:v1\"\r\n"
            b"Content-Length: 0\r\nwww-authenticate: Basic realm=\"a:b\"\r\n\r\n")
    rule = parse_rule(["auth", "realm", "shop"], "request")
    data, keep = reply(rule, INFO, Message(b"GET", b"/"), [], b"1.1", True, {401: page})
    assert data == (b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n"
                    b"www-authenticate: Basic realm=\"shop\"\r\n\r\n")
    assert keep is False


# -- local actions: parsing -----------------------------------------------------------------------

@pytest.mark.parametrize("action, args, side", [
    ("allow", [], "request"), ("allow", [], "response"), ("deny", [], "request"), ("deny", [], "response"),
    ("return", [], "request"), ("tarpit", [], "request"), ("redirect", ["location", "/x"], "request"),
    ("redirect", ["location", "/x"], "response"), ("auth", [], "request"),
])
def test_a_parsed_action_keeps_where_it_was_written_and_its_side(action, args, side):
    """LocalRule.file, .line: where the rule was written; .side: request or response."""
    rule = parse_action(action, args, None, "", "site.cfg", 12, side)
    assert (rule.action, rule.file, rule.line, rule.side) == (action, "site.cfg", 12, side)


def test_redirect_options_after_the_code_still_apply():
    """`code` may come before drop-query and append-slash (haproxy 4.2 "redirect")."""
    rule = parse_rule(["redirect", "prefix", "/p", "code", "301", "drop-query", "append-slash"], "request")
    assert (rule.status, rule.drop_query, rule.append_slash) == (301, True, True)
    data, _ = reply(rule, INFO, Message(b"GET", b"/a?q=1"), [], b"1.1", True, {})
    assert data == b"HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\nlocation: /p/a/\r\ncache-control: no-cache\r\n\r\n"


def test_default_errorfiles_after_another_payload_is_refused_exactly():
    """One payload per rule: default-errorfiles conflicts with a string given before it."""
    with pytest.raises(RuleError) as exc:
        parse_rule(["return", "content-type", "text/plain", "string", "a", "default-errorfiles"], "request")
    assert str(exc.value) == "'http-request return': 'default-errorfiles' conflicts with 'string' (one payload per rule)"


def bound(text: str):
    r = parse_rule(text.split(" "), "request")
    return r.__class__(**{**r.__dict__, "cond": r.cond.bind({})})


def test_merge_runs_leaves_a_rule_outside_any_run_as_it_is():
    """Only runs of two or more rules are merged; a lone rule comes back itself, and a
    proxy whose rules do not merge gets its own tuple back."""
    rules = (bound("deny if { path /a }"), bound("deny if { path /b }"), bound("return if { path /c }"))
    merged = merge_runs(rules)
    assert len(merged) == 2 and merged[1] is rules[2]
    assert merged[0].action == "deny" and merged[0].cond is not rules[0].cond
    lone = (rules[0], rules[2])
    assert merge_runs(lone) is lone


def test_keep_alive_terms_are_a_keep_alive_get_streams_relay_terms():
    """keep_alive_terms (what arms a connection's first head on the express lane) are the
    RelayTerms relay_terms() gives a keep-alive HTTP/1.1 GET under the same retry-on set
    and response splice policy: the largest status relayed is below the first status
    retry-on names."""
    assert keep_alive_terms(frozenset(), SplicePolicy.AUTO) == RelayTerms(599, False, 32768)
    assert keep_alive_terms(frozenset({503}), SplicePolicy.AUTO) == RelayTerms(502, False, 32768)
