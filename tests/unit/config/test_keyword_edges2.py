"""More edges of splicer.config.keywords parse functions (a second 250-mutant sample of
keywords.py): exact refusal messages (the text after "file:line: "), the line and file the
conditions of use_backend / stats admin / force-persist remember, `unless`, the proxy's
name as the default realm of `http-request auth`, rules without an `action` attribute,
`slowstart 0`, and ring and log targets.

Factories (_header_rule, _persist_rule, _log_option) are called directly, in the test bodies:
the registry holds the closures they made at import time (and a parametrize argument is made
when the tests are collected, before mutmut activates a mutant).
"""
import pytest

from splicer.config import keywords as kw
from splicer.config.keywords import ArgError
from splicer.http.actions import StatusRule
from splicer.http.normalize import NormalizeRule
from tests.unit.config.test_keyword_edges import error_of, settings_of




# --- exact messages of missing or extra arguments ----------------------------------------------

@pytest.mark.parametrize("parse, args, kind, message", [
    (kw._parse_use_server, [], "backend", "'use-server' expects <server> {if | unless} <condition>"),
    (kw._parse_server_state_file, [], "global", "'server-state-file' expects a file name"),
    (kw._ring_format, [], "ring", "'format' expects a log format"),
    (kw._ring_maxlen, ["1024", "x"], "ring", "'maxlen' cannot handle unexpected argument 'x'"),
    (kw._parse_capture, ["request"], "frontend",
     "'capture' expects 'request header <name> len <length>' or 'response header <name> len <length>'"),
])
def test_refusal_messages(parse, args, kind, message):
    """A missing argument, an extra one or a malformed capture line is refused with its exact text."""
    assert error_of(parse, args, kind=kind) == message


@pytest.mark.parametrize("name", ["httplog", "tcplog"])
def test_log_option_takes_no_argument(name):
    """`option httplog` / `option tcplog` take no argument (`clf` aside): a word after them is refused."""
    assert error_of(kw._log_option(name), ["x"], kind="frontend") == (
        f"'option {name}' cannot handle unexpected argument 'x'")


def test_ring_maxlen_records_its_one_value():
    """`maxlen <length>` in a ring records the length."""
    assert settings_of(kw._ring_maxlen, ["1024"], kind="ring", name="r") == [("ring_maxlen", 1024)]


@pytest.mark.parametrize("parse, args, kind, message", [
    (kw._balance_uri, ["lne"], None,
     "'balance uri' only accepts 'len', 'depth', 'path-only' and 'whole' (got 'lne'); did you mean 'len'?"),
    (kw._parse_stats_global, ["socket", "/run/s.sock", "mdoe", "600"], "global",
     "'stats socket': unknown option 'mdoe'; did you mean 'mode'?"),
])
def test_misspelt_option_gets_a_suggestion(parse, args, kind, message):
    """A misspelt `balance uri` or `stats socket` option is refused with the closest valid one."""
    if kind is None:
        with pytest.raises(ArgError) as exc:
            parse(args)
        assert str(exc.value) == message
    else:
        assert error_of(parse, args, kind=kind) == message


# --- log --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("word", ["len", "format"])
def test_log_option_word_without_its_value(word):
    """`log <target> len|format` with nothing after the word names the word."""
    assert error_of(kw._parse_log, ["127.0.0.1", word], kind="global") == f"'log': '{word}' expects a value"


def test_log_word_after_the_minimum_level_is_refused():
    """At most a facility, a level and a minimum level follow the target; a fourth word is named."""
    assert error_of(kw._parse_log, ["127.0.0.1", "local0", "info", "debug", "extra"], kind="global") == (
        "'log': unexpected 'extra' after the facility and levels")


LOG_TARGETS = ("(splicer logs to stdout, stderr, fd@<n>, file@<path>, a unix datagram socket path, "
               "[udp@]<host>[:<port>], tcp@<host>:<port>, uxst@<path> or ring@<name>)")


@pytest.mark.parametrize("target, message", [
    ("ring@", "log 'ring@': 'ring@' expects the name of a ring section"),
    ("ring@a/b", "log 'ring@a/b': 'ring@' expects the name of a ring section"),
    (":514", "log ':514': missing address"),
    ("udp@:514", "log 'udp@:514': missing address"),
] + [
    (f"{prefix}@127.0.0.1", f"log '{prefix}@127.0.0.1': target '{prefix}@' is not supported {LOG_TARGETS}")
    for prefix in ("backend", "ipv4", "ipv6")
])
def test_log_target_refusals(target, message):
    """A ring@ without a valid ring name, a udp target without a host, and haproxy's
    backend@/ipv4@/ipv6@ prefixes are refused with their exact messages."""
    assert error_of(kw._parse_log, [target, "local0"], kind="global") == message


# --- conditions: unless, and where they were written -----------------------------------------

def test_use_backend_unless_condition_remembers_its_line():
    """`use_backend <be> unless <cond>` is read (negated) and the condition keeps the statement's line."""
    (key, rule), = settings_of(kw._parse_use_backend, ["static", "unless", "is_api"], kind="frontend")
    assert (key, rule.backend, rule.cond.unless, rule.cond.text, rule.cond.line) == (
        "use_backend", "static", True, "unless is_api", 7)


def test_use_backend_anonymous_acl_remembers_its_file():
    """An anonymous ACL of a use_backend condition keeps the file and line it was written on."""
    (_, rule), = settings_of(kw._parse_use_backend, ["static", "if", "{", "path_beg", "/s", "}"],
                             kind="frontend", file="conf/a.cfg")
    ((negated, expr),), = rule.cond.terms
    assert (negated, expr.file, expr.line) == (False, "conf/a.cfg", 7)


def test_stats_admin_condition_remembers_its_line():
    """The condition of `stats admin` keeps the statement's line."""
    (_, admin), = settings_of(kw._parse_stats_admin, ["unless", "is_remote"])
    assert (admin.cond.unless, admin.cond.line) == (True, 7)


@pytest.mark.parametrize("kind", ["force-persist", "ignore-persist"])
def test_persist_rule_remembers_its_file(kind):
    """force-persist / ignore-persist rules keep the file they were written in."""
    (_, rule), = settings_of(kw._persist_rule(kind), ["if", "is_static"], file="conf/a.cfg")
    assert (rule.file, rule.line) == ("conf/a.cfg", 7)


# --- http-request / http-response ----------------------------------------------------------------

def test_http_request_auth_realm_defaults_to_the_proxy_name():
    """`http-request auth` without a realm challenges with the proxy's name (haproxy); an
    explicit realm is kept."""
    parse = kw._header_rule("request")
    (key, rule), = settings_of(parse, ["auth"], kind="backend", name="admin_be")
    assert (key, rule.action, rule.realm) == ("http_request", "auth", "admin_be")
    (_, rule), = settings_of(parse, ["auth", "realm", "Private"], kind="backend", name="admin_be")
    assert rule.realm == "Private"


@pytest.mark.parametrize("side, words, cls", [
    ("response", ["set-status", "503"], StatusRule),
    ("request", ["normalize-uri", "path-merge-slashes"], NormalizeRule),
])
def test_rules_without_an_action_attribute_are_recorded(side, words, cls):
    """set-status and normalize-uri rules (classes without an `action` field) are recorded
    under http_<side>."""
    (key, rule), = settings_of(kw._header_rule(side), words)
    assert key == f"http_{side}" and type(rule) is cls and rule.line == 7


# --- ring server, server options ---------------------------------------------------------------------

@pytest.mark.parametrize("address", ["unix@/run/log.sock", "uxst@/run/log.sock", "/run/log.sock"])
def test_ring_server_unix_stream_socket_forms(address):
    """`unix@<path>`, `uxst@<path>` and an absolute path are a unix stream socket server."""
    (key, (name, target)), = settings_of(kw._ring_server, ["s1", address], kind="ring", name="r")
    assert (key, name, target.kind, target.path) == ("ring_server", "s1", "uxst", "/run/log.sock")


def test_slowstart_may_be_zero_but_check_intervals_may_not():
    """`slowstart 0` is its default (no ramp) and accepted; `inter`, `fastinter` and
    `downinter` 0 are refused."""
    assert kw._server_options("server 's1'", ["slowstart", "0"]) == {"slowstart": 0}
    for opt in ("inter", "fastinter", "downinter"):
        with pytest.raises(ArgError) as exc:
            kw._server_options("server 's1'", [opt, "0"])
        assert str(exc.value) == f"server 's1': '{opt}': the interval must be greater than zero"
