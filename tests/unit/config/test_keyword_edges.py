"""Edges of splicer.config.keywords parse functions that other tests leave open: exact refusal
messages (the text after "file:line: "), the values recorded, and where statements are
remembered (file and line of ACLs, conditions, users, rings).

Factories (_stats_flag, _stats_word, _persist_rule, _log_option, _userlist_line) are called
directly: the registry holds the closures they made at import time.
"""
import pytest

from splicer.config import keywords as kw
from splicer.config.keywords import ArgError, Context
from splicer.http.userlist import Group, User
from splicer.log.format import HTTPLOG, TCPLOG


def ctx(kind="backend", name="be", file="site.cfg"):
    return Context(kind, name, file, 7)


def settings_of(parse, args, **kwargs):
    c = ctx(**kwargs)
    parse(c, list(args))
    return c.settings


def error_of(parse, args, **kwargs):
    with pytest.raises(ArgError) as exc:
        parse(ctx(**kwargs), list(args))
    return str(exc.value)


# --- global section ---------------------------------------------------------------------------

def test_hard_stop_after_takes_one_time_value():
    assert error_of(kw._parse_hard_stop_after, ["1s", "2s"], kind="global") == (
        "'hard-stop-after' cannot handle unexpected argument '2s'")


def test_server_state_base_needs_a_directory():
    assert error_of(kw._parse_server_state_base, [], kind="global") == "'server-state-base' expects a directory"


@pytest.mark.parametrize("path", ["ipv4@127.0.0.1", "ipv6@::1", "127.0.0.1:9999"])
def test_stats_socket_refuses_network_addresses_even_without_a_port(path):
    assert error_of(kw._parse_stats_global, ["socket", path], kind="global") == (
        f"'stats socket': only unix sockets are supported, got '{path}'")


# --- log ------------------------------------------------------------------------------------------

def test_log_unknown_target_prefix_names_the_prefix_only():
    assert error_of(kw._parse_log, ["foo@bar", "local0"], kind="global") == (
        "log 'foo@bar': unknown target prefix 'foo@'")


@pytest.mark.parametrize("target, port", [("::1:1514", 1514), ("[::1]:1515", 1515)])
def test_log_ipv6_target_with_a_port(target, port):
    (key, value), = settings_of(kw._parse_log, [target, "local0"], kind="global")
    assert (key, value.kind, value.host, value.port) == ("log", "udp", "::1", port)


@pytest.mark.parametrize("name, fmt", [("httplog", HTTPLOG), ("tcplog", TCPLOG)])
def test_log_option_selects_its_predefined_format(name, fmt):
    assert settings_of(kw._log_option(name), [], kind="frontend") == [("log_format", (name, fmt))]


# --- acl, use_backend, use-server, force-persist / ignore-persist --------------------------------

def test_acl_remembers_the_file_and_line_it_was_written_on():
    (key, (name, expr)), = settings_of(kw._parse_acl, ["is_api", "path_beg", "/api"], file="conf/a.cfg")
    assert (key, name, expr.file, expr.line) == ("acl", "is_api", "conf/a.cfg", 7)


def test_use_backend_needs_a_name_before_the_condition():
    assert error_of(kw._parse_use_backend, ["if", "is_api"], kind="frontend") == (
        "'use_backend' expects a backend name before the condition")


@pytest.mark.parametrize("word", ["if", "unless"])
def test_use_server_needs_a_name_before_the_condition(word):
    assert error_of(kw._parse_use_server, [word, "is_api"]) == (
        "'use-server' expects a server name before the condition")


def test_use_server_anonymous_acl_remembers_its_file_and_line():
    (key, rule), = settings_of(kw._parse_use_server, ["s1", "if", "{", "path_beg", "/x", "}"], file="conf/a.cfg")
    ((negated, expr),), = rule.cond.terms
    assert (key, rule.server, negated, expr.file, expr.line) == ("use_server", "s1", False, "conf/a.cfg", 7)


@pytest.mark.parametrize("kind, key", [("force-persist", "force_persist"), ("ignore-persist", "ignore_persist")])
def test_persist_rule_records_its_condition(kind, key):
    (got_key, rule), = settings_of(kw._persist_rule(kind), ["unless", "is_static"])
    assert (got_key, rule.kind, rule.cond.text, rule.cond.unless, rule.line) == (
        key, kind, "unless is_static", True, 7)


# --- balance uri, cookie ----------------------------------------------------------------------

@pytest.mark.parametrize("flag, field", [("whole", "uri_whole"), ("path-only", "uri_path_only")])
def test_balance_uri_flag_may_be_followed_by_other_arguments(flag, field):
    (_, (_, value)) = settings_of(kw._parse_balance, ["uri", flag, "depth", "2"])
    assert (getattr(value, field), value.uri_depth) == (True, 2)


def test_cookie_preserve_is_accepted_with_indirect_in_prefix_mode():
    (key, policy), = settings_of(kw._parse_cookie, ["SRV", "prefix", "indirect", "preserve"])
    assert (key, policy.mode, policy.indirect, policy.preserve) == ("cookie", "prefix", True, True)


# --- stats (proxy sections) -------------------------------------------------------------------

def test_stats_auth_records_the_user_and_enables_stats():
    assert settings_of(kw._parse_stats_auth, ["admin:s3cret"]) == [
        ("stats_enable", True), ("stats_auth", (b"admin", b"s3cret"))]
    assert error_of(kw._parse_stats_auth, []) == "'stats auth' expects <user>:<password>"


def test_stats_uri_records_the_prefix_and_enables_stats():
    assert settings_of(kw._parse_stats_uri, ["/st"]) == [("stats_enable", True), ("stats_uri", b"/st")]


@pytest.mark.parametrize("uri", ["/a b", "/a\tb"])
def test_stats_uri_refuses_whitespace(uri):
    assert error_of(kw._parse_stats_uri, [uri]) == (
        f"'stats uri': invalid prefix '{uri}' (an absolute path such as /haproxy?stats)")


def test_stats_refresh_needs_a_delay():
    assert error_of(kw._parse_stats_refresh, []) == "'stats refresh' expects a delay, e.g. 5s"


def test_stats_admin_remembers_its_line():
    (key, admin), = settings_of(kw._parse_stats_admin, ["if", "is_local"], file="conf/a.cfg")
    assert (key, admin.file, admin.line, admin.cond.text) == ("stats_admin", "conf/a.cfg", 7, "if is_local")


def test_stats_flag_takes_no_argument():
    parse = kw._stats_flag("stats_show_legends", "show-legends")
    assert settings_of(parse, []) == [("stats_enable", True), ("stats_show_legends", True)]
    assert error_of(parse, ["x"]) == "'stats show-legends' cannot handle unexpected argument 'x'"


def test_stats_word_records_the_word_and_enables_stats():
    parse = kw._stats_word("stats_realm", "realm", "a realm")
    assert settings_of(parse, ["Private"]) == [("stats_enable", True), ("stats_realm", "Private")]
    assert error_of(parse, ["a", "b"]) == "'stats realm' cannot handle unexpected argument 'b'"


# --- userlist -----------------------------------------------------------------------------------

def test_userlist_user_and_group_lines_are_read_as_such():
    (key, user), = settings_of(kw._userlist_line("user"), ["alice", "insecure-password", "pw"],
                               kind="userlist", name="ul")
    assert (key, user) == ("user", User("alice", "pw", True, (), "site.cfg", 7))
    (key, group), = settings_of(kw._userlist_line("group"), ["admins"], kind="userlist", name="ul")
    assert key == "group" and isinstance(group, Group) and group.name == "admins"


# --- ring sections ------------------------------------------------------------------------------

def test_ring_description_needs_a_text():
    assert error_of(kw._ring_description, [], kind="ring", name="r") == "'description' expects a text"


def test_ring_format_names_the_unknown_format():
    assert error_of(kw._ring_format, ["bogus"], kind="ring", name="r").startswith(
        "'format': unknown format 'bogus' (supported: ")


def test_ring_size_is_at_most_1g():
    assert settings_of(kw._ring_size, ["1g"], kind="ring", name="r") == [("ring_size", 1 << 30)]
    assert error_of(kw._ring_size, ["1025m"], kind="ring", name="r") == (
        "'size': 1074790400 bytes is out of range (1024 to 1g)")


def test_ring_timeout_messages():
    assert error_of(kw._ring_timeout, ["sever", "1s"], kind="ring", name="r") == (
        "unknown timeout 'sever' in ring 'r' (a ring has 'connect' and 'server'); did you mean 'server'?")
    assert error_of(kw._ring_timeout, ["connect", "x"], kind="ring", name="r").startswith(
        "'timeout connect': invalid time 'x'")


@pytest.mark.parametrize("address, family", [
    ("127.0.0.1:514", ""), ("tcp@127.0.0.1:514", ""), ("tcp4@127.0.0.1:514", "tcp4"),
    ("tcp6@[::1]:514", "tcp6"),
])
def test_ring_server_tcp_address_forms(address, family):
    (key, (name, target)), = settings_of(kw._ring_server, ["s1", address], kind="ring", name="r")
    assert (key, name, target.kind, target.port, target.family) == ("ring_server", "s1", "tcp", 514, family)


def test_ring_server_invalid_port_names_the_server():
    assert error_of(kw._ring_server, ["s1", "127.0.0.1:x"], kind="ring", name="r") == (
        "server 's1': invalid port 'x'")
