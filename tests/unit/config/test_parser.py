"""splicer.config.parser + keywords: statements -> sections; exact "file:line: message" errors.

Every configuration here is otherwise valid, so each test sees only the error it is about.
"""
import textwrap

import pytest

from splicer.config import loads
from splicer.config.lexer import tokenize
from splicer.config.parser import Entry, RawSection, parse
from splicer.config.model import ForwardFor
from splicer.errors import ConfigError, ConfigErrors

TAIL = """
frontend fe
    bind :80
    default_backend be
backend be
    server s1 127.0.0.1:8080
"""
"""A minimal valid configuration appended after snippets that need one."""


def errors_of(text, path="site.cfg", env=None):
    """Every error message of a configuration, as the user sees them."""
    with pytest.raises(ConfigErrors) as info:
        loads(textwrap.dedent(text), path, env={} if env is None else env)
    assert all(isinstance(e, ConfigError) for e in info.value.errors)
    return [str(e) for e in info.value.errors]


def warnings_of(text, path="site.cfg"):
    return list(loads(textwrap.dedent(text), path, env={}).warnings)


def raw_sections(text, path="site.cfg"):
    statements, lex_errors = tokenize(textwrap.dedent(text), env={})
    return parse(statements, path, lex_errors).sections


# --- sections ---------------------------------------------------------------------------------

def test_sections_keep_entries_with_file_and_line():
    sections = raw_sections("""\
        global
            maxconn 100
        defaults
            retries 5
        backend be
            timeout server 2s
        """)
    assert [(s.kind, s.name, s.line) for s in sections] == [
        ("global", "", 1), ("defaults", "", 3), ("backend", "be", 5)]
    assert sections[0].entries == [Entry("maxconn", 100, "site.cfg", 2)]
    assert sections[2].entries == [Entry("timeout.server", 2.0, "site.cfg", 6)]
    assert sections[2].defaults is sections[1]


def test_each_proxy_remembers_the_defaults_section_above_it():
    first, be1, second, be2 = raw_sections("""\
        defaults first
        backend one
        defaults
        backend two
        """)
    assert (first.name, second.name) == ("first", "")
    assert be1.defaults is first
    assert be2.defaults is second
    assert isinstance(be2.defaults, RawSection)


def test_proxy_before_any_defaults_has_none():
    (backend,) = raw_sections("backend be\n")
    assert backend.defaults is None


def test_keyword_outside_any_section():
    assert errors_of("maxconn 100\n" + TAIL) == [
        ("site.cfg:1: 'maxconn' is outside any section (a section starts with 'global', "
        "'defaults', 'frontend', 'backend' or 'listen')")]


def test_unknown_section_name_suggests_the_closest_one():
    assert errors_of("globl\n    maxconn 5\n" + TAIL) == [
        "site.cfg:1: unknown section 'globl'; did you mean 'global'?"]


def test_unknown_section_inside_another_section_skips_its_lines():
    # Line 8 would be an error in frontend 'fe'; it is skipped with the mistyped section.
    assert errors_of(TAIL + "backnd web\n    server s1 10.0.0.1:80\n") == [
        "site.cfg:7: unknown section 'backnd'; did you mean 'backend'?"]


def test_unsupported_haproxy_section_is_refused_once():
    assert errors_of("peers mypeers\n    peer a 10.0.0.1:1024\n" + TAIL) == [
        "site.cfg:1: section 'peers' is not supported"]


@pytest.mark.parametrize("header, message", [
    ("frontend", "'frontend' expects a name"),
    ("backend", "'backend' expects a name"),
    ("listen", "'listen' expects a name"),
    ("backend a/b", "character '/' is not permitted in backend name 'a/b'"),
    ("defaults d$x", "character '$' is not permitted in defaults name 'd$x'"),
    ("global extra", "'global' cannot handle unexpected argument 'extra'"),
    ("backend be2 extra", "'backend' cannot handle unexpected argument 'extra'"),
    ("listen web *:80", ("'listen' cannot handle unexpected argument '*:80' (addresses go on a "
                        "'bind' line)")),
    ("frontend fe2 from base", ("'frontend fe2 from ...' (inheriting from a named defaults "
                               "section) is not supported")),
])
def test_bad_section_lines(header, message):
    # The broken section's own lines (a bind in a backend) are skipped, not reported.
    assert errors_of(header + "\n    bind :81\n" + TAIL) == [f"site.cfg:1: {message}"]


def test_unnamed_and_named_defaults_are_accepted():
    sections = raw_sections("defaults\ndefaults base\n" + TAIL)
    assert [(s.kind, s.name) for s in sections] == [
        ("defaults", ""), ("defaults", "base"), ("frontend", "fe"), ("backend", "be")]
    assert sections[2].defaults is sections[1]


# --- unknown keywords and "did you mean" -------------------------------------------------------

@pytest.mark.parametrize("section, line, message", [
    ("backend web", "blance roundrobin",
     "unknown keyword 'blance' in backend 'web'; did you mean 'balance'?"),
    ("frontend www", "bnd :80", "unknown keyword 'bnd' in frontend 'www'; did you mean 'bind'?"),
    ("defaults", "retires 3", ("unknown keyword 'retires' in defaults section; did you mean "
                              "'retries'?")),
    ("global", "nbthreads 4", ("unknown keyword 'nbthreads' in global section; did you mean "
                              "'nbthread'?")),
    ("global", "tune.bufsiz 1", ("unknown keyword 'tune.bufsiz' in global section; did you mean "
                                "'tune.bufsize'?")),
    ("listen lb", "sever s1 1.2.3.4:80",
     "unknown keyword 'sever' in listen 'lb'; did you mean 'server'?"),
    ("backend web", "http-request silent-drop",
     "'http-request silent-drop' is not supported (supported: set-header, add-header, del-header, allow, deny, return, redirect, auth, tarpit, normalize-uri, replace-header, replace-value, set-path, set-pathq, set-query, set-uri, set-method, replace-path, replace-pathq, replace-uri, set-var, set-var-fmt, unset-var, use-service)"),
    ("backend web", "stick-table type ip", "unknown keyword 'stick-table' in backend 'web'"),
])
def test_unknown_keyword_suggests_a_keyword_of_that_section(section, line, message):
    assert errors_of(f"{section}\n    {line}\n" + TAIL) == [f"site.cfg:2: {message}"]


def test_suggestions_only_come_from_the_section():
    # 'bind' is close to 'bnd' but not valid in a backend, so nothing is suggested.
    assert errors_of("backend web\n    bnd x\n" + TAIL) == [
        "site.cfg:2: unknown keyword 'bnd' in backend 'web'"]


@pytest.mark.parametrize("section, line, message", [
    ("frontend www", "option forwardfr",
     "unknown option 'forwardfr' in frontend 'www'; did you mean 'forwardfor'?"),
    ("defaults", "option splice-aut",
     "unknown option 'splice-aut' in defaults section; did you mean 'splice-auto'?"),
    ("backend web", "option redispach",
     "unknown option 'redispach' in backend 'web'; did you mean 'redispatch'?"),
    ("defaults", "no option redispach",
     "unknown option 'redispach' in defaults section; did you mean 'redispatch'?"),
    ("defaults", "option frobnicate", "unknown option 'frobnicate' in defaults section"),
    ("defaults", "option httpslog", "option 'httpslog' is not supported"),
    ("defaults", "option http-server-close", "option 'http-server-close' is not supported"),
    ("defaults", "timeout clinet 5s",
     "unknown timeout 'clinet' in defaults section; did you mean 'client'?"),
    ("frontend www", "timeout http-requst 5s",
     "unknown timeout 'http-requst' in frontend 'www'; did you mean 'http-request'?"),
    ("backend web", "timeout conect 5s",
     "unknown timeout 'conect' in backend 'web'; did you mean 'connect'?"),
    ("defaults", "timeout client-fin 5s", "timeout 'client-fin' is not supported"),
    ("backend web", "balance roundrobn",
     "unknown balance algorithm 'roundrobn'; did you mean 'roundrobin'?"),
    ("backend web", "balance leastcon",
     "unknown balance algorithm 'leastcon'; did you mean 'leastconn'?"),
    ("backend web", "balance zzz",
     "unknown balance algorithm 'zzz' (supported: roundrobin, static-rr, leastconn, first, source, uri, url_param, hdr(<name>), random)"),
    ("defaults", "mode htp", "unknown mode 'htp'; did you mean 'http'?"),
    ("defaults", "mode tpc", "unknown mode 'tpc'; did you mean 'tcp'?"),
    ("defaults", "mode quic", "unknown mode 'quic' (supported: http, tcp)"),
    ("backend web", "server s1 1.2.3.4:80 wieght 3",
     "server 's1': unknown option 'wieght'; did you mean 'weight'?"),
    ("backend web", "server s1 1.2.3.4:80 disable",
     "server 's1': unknown option 'disable'; did you mean 'disabled'?"),
    ("backend web", "server s1 1.2.3.4:80 chek",
     "server 's1': unknown option 'chek'; did you mean 'check'?"),
    ("backend web", "server s1 1.2.3.4:80 zzz", "server 's1': unknown option 'zzz'"),
    ("frontend www", "option forwardfor hedaer X-Client",
     "'option forwardfor': unknown argument 'hedaer'; did you mean 'header'?"),
])
def test_unknown_sub_keyword_suggests(section, line, message):
    assert errors_of(f"{section}\n    {line}\n" + TAIL) == [f"site.cfg:2: {message}"]


@pytest.mark.parametrize("algo", ["rdp-cookie", "rdp-cookie(mstshash)", "hash", "log-hash", "sticky"])
def test_other_haproxy_balance_algorithms_are_refused(algo):
    assert errors_of(f"backend web\n    balance {algo}\n" + TAIL) == [
        (f"site.cfg:2: balance algorithm '{algo}' is not supported "
        "(supported: roundrobin, static-rr, leastconn, first, source, uri, url_param, hdr(<name>), random)")]


@pytest.mark.parametrize("mode", ["health", "log", "spop"])
def test_other_haproxy_modes_are_refused(mode):
    assert errors_of(f"defaults\n    mode {mode}\n" + TAIL) == [
        f"site.cfg:2: mode '{mode}' is not supported (supported: http, tcp)"]


# --- keywords in the wrong section ------------------------------------------------------------

@pytest.mark.parametrize("section, line, message", [
    ("backend web", "bind :80",
     "'bind' is not allowed in backend 'web' (allowed in: frontend, listen)"),
    ("defaults", "bind :80",
     "'bind' is not allowed in defaults section (allowed in: frontend, listen)"),
    ("global", "bind :80",
     "'bind' is not allowed in global section (allowed in: frontend, listen)"),
    ("frontend www", "server s1 1.2.3.4:80",
     "'server' is not allowed in frontend 'www' (allowed in: listen, backend, ring)"),
    ("defaults", "server s1 1.2.3.4:80",
     "'server' is not allowed in defaults section (allowed in: listen, backend, ring)"),
    ("backend web", "default_backend x",
     ("'default_backend' is not allowed in backend 'web' (allowed in: defaults, frontend, "
     "listen)")),
    ("frontend www", "balance roundrobin",
     "'balance' is not allowed in frontend 'www' (allowed in: defaults, listen, backend)"),
    ("frontend www", "retries 3",
     "'retries' is not allowed in frontend 'www' (allowed in: defaults, listen, backend)"),
    ("backend web", "maxconn 10",
     ("'maxconn' is not allowed in backend 'web' (allowed in: global, defaults, frontend, "
     "listen)")),
    ("frontend www", "tune.bufsize 1024",
     "'tune.bufsize' is not allowed in frontend 'www' (allowed in: global)"),
    ("defaults", "daemon", "'daemon' is not allowed in defaults section (allowed in: global)"),
    ("global", "mode http",
     ("'mode' is not allowed in global section (allowed in: defaults, frontend, listen, "
     "backend)")),
    ("global", "option forwardfor",
     ("'option' is not allowed in global section (allowed in: defaults, frontend, listen, "
     "backend)")),
    ("global", "timeout client 1s",
     ("'timeout' is not allowed in global section (allowed in: defaults, frontend, listen, "
     "backend, ring)")),
    ("frontend www", "option redispatch",
     ("'option redispatch' is not allowed in frontend 'www' (allowed in: defaults, listen, "
     "backend)")),
    ("frontend www", "no option redispatch",
     ("'option redispatch' is not allowed in frontend 'www' (allowed in: defaults, listen, "
     "backend)")),
])
def test_keyword_in_wrong_section(section, line, message):
    assert errors_of(f"{section}\n    {line}\n" + TAIL) == [f"site.cfg:2: {message}"]


@pytest.mark.parametrize("name", ["client", "http-request", "http-keep-alive"])
def test_client_side_timeouts_refused_in_backend(name):
    assert errors_of(f"backend web\n    timeout {name} 5s\n" + TAIL) == [
        (f"site.cfg:2: 'timeout {name}' is not allowed in backend 'web' "
        "(allowed in: defaults, frontend, listen)")]


@pytest.mark.parametrize("name", ["server", "connect", "queue", "tunnel", "check"])
def test_server_side_timeouts_refused_in_frontend(name):
    assert errors_of(f"frontend www\n    timeout {name} 5s\n" + TAIL) == [
        (f"site.cfg:2: 'timeout {name}' is not allowed in frontend 'www' "
        "(allowed in: defaults, listen, backend)")]


@pytest.mark.parametrize("section", ["defaults", "frontend www", "backend web", "listen lb"])
def test_options_valid_everywhere_but_global(section):
    text = f"""\
        {section}
            option forwardfor
            option splice-auto
            option splice-request
            option splice-response
            option http-keep-alive
            no option http-keep-alive
        """
    assert raw_sections(text)[0].entries == [
        Entry("forwardfor", ForwardFor(), "site.cfg", 2),
        Entry("splice_auto", True, "site.cfg", 3),
        Entry("splice_request", True, "site.cfg", 4),
        Entry("splice_response", True, "site.cfg", 5),
    ]


# --- arguments --------------------------------------------------------------------------------

@pytest.mark.parametrize("section, line, message", [
    ("global", "maxconn abc", "'maxconn' expects an integer, got 'abc'"),
    ("global", "maxconn 0", "'maxconn' must be between 1 and 2147483647, got 0"),
    ("global", "maxconn", "'maxconn' expects an integer argument"),
    ("global", "maxconn 10 20", "'maxconn' cannot handle unexpected argument '20'"),
    ("global", "nbthread 0", "'nbthread' must be between 1 and 4096, got 0"),
    ("global", "nbthread 0x10", "'nbthread' expects an integer, got '0x10'"),
    ("global", "tune.bufsize 16k", "'tune.bufsize' expects an integer, got '16k'"),
    ("global", "tune.http.maxhdr 40000",
     "'tune.http.maxhdr' must be between 1 and 32767, got 40000"),
    ("global", "tune.pipesize 64x",
     "'tune.pipesize': invalid size '64x': unknown suffix 'x' (expected k, m or g)"),
    ("global", "tune.pipesize 0", "'tune.pipesize' must be between 1 and 2147483647 bytes, got 0"),
    ("global", "tune.pipesize 4g",
     "'tune.pipesize' must be between 1 and 2147483647 bytes, got 4294967296"),
    ("global", "tune.maxpipes -5", "'tune.maxpipes' expects an integer, got '-5'"),
    ("global", "user", "'user' expects a user name"),
    ("global", "daemon now", "'daemon' cannot handle unexpected argument 'now'"),
    ("global", "stats", "'stats' expects 'socket' and a path, e.g. 'stats socket /run/splicer.sock'"),
    ("defaults", "maxconn +5", "'maxconn' expects an integer, got '+5'"),
    ("defaults", "maxconn 1.5", "'maxconn' expects an integer, got '1.5'"),
    ("defaults", "retries three", "'retries' expects an integer, got 'three'"),
    ("defaults", "retries 99999999999", ("'retries' must be between 0 and 2147483647, got "
                                        "99999999999")),
    ("defaults", "mode", "'mode' expects 'http' or 'tcp'"),
    ("defaults", "mode http tcp", "'mode' cannot handle unexpected argument 'tcp'"),
    ("defaults", "balance", "'balance' expects an algorithm (supported: roundrobin, static-rr, leastconn, first, source, uri, url_param, hdr(<name>), random)"),
    ("defaults", "balance roundrobin x",
     "'balance roundrobin' cannot handle unexpected argument 'x'"),
    ("defaults", "default_backend", "'default_backend' expects a backend name"),
    ("defaults", "default_backend a b", "'default_backend' cannot handle unexpected argument 'b'"),
    ("defaults", "timeout client", "'timeout client' expects a time value (default unit: ms)"),
    ("defaults", "timeout client 5s 6s", "'timeout client' cannot handle unexpected argument '6s'"),
    ("defaults", "timeout client 5x",
     "'timeout client': invalid time '5x': unknown unit 'x' (expected us, ms, s, m, h or d)"),
    ("defaults", "timeout server 30d",
     "'timeout server': time '30d' is too large (maximum is 2147483647 ms, about 24.8 days)"),
    ("defaults", "timeout", "'timeout' expects a timeout name and a value"),
    ("defaults", "timeout check", "'timeout check' expects a time value (default unit: ms)"),
    ("defaults", "timeout check 5x",
     "'timeout check': invalid time '5x': unknown unit 'x' (expected us, ms, s, m, h or d)"),
    ("defaults", "option", "'option' expects an option name"),
    ("defaults", "option redispatch 3",
     "'option redispatch' cannot handle unexpected argument '3'"),
    ("defaults", "option splice-auto on",
     "'option splice-auto' cannot handle unexpected argument 'on'"),
    ("defaults", "option forwardfor header", "'option forwardfor header' expects a value"),
    ("defaults", "option forwardfor except", "'option forwardfor except' expects a value"),
    ("defaults", "no option forwardfor", "negation is not supported for option 'forwardfor'"),
    ("defaults", "no maxconn 5", "negation is not supported for 'maxconn'"),
    ("defaults", "no timeout client", "negation is not supported for 'timeout'"),
    ("defaults", "no", "'no' expects a keyword"),
    ("defaults", "default option redispatch", "the 'default' prefix is not supported"),
])
def test_argument_errors(section, line, message):
    assert errors_of(f"{section}\n    {line}\n" + TAIL) == [f"site.cfg:2: {message}"]


@pytest.mark.parametrize("line, message", [
    ("bind", "'bind' expects [ADDR]:PORT[,[ADDR]:PORT...]"),
    ("bind 80", "bind: address '80' has no port (expected [ADDR]:PORT)"),
    ("bind :0", "bind: port 0 is out of range (1..65535)"),
    ("bind :65536", "bind: port 65536 is out of range (1..65535)"),
    ("bind :", "bind: missing port"),
    ("bind :http", "bind: invalid port 'http'"),
    ("bind :80-85", ("bind: port '80-85' is not supported (splicer needs one port number, no "
                    "ranges or offsets)")),
    ("bind example.com:80", ("bind: invalid address 'example.com' (expected an IP address, '*', "
                            "'localhost' or nothing)")),
    ("bind 10.0.0.256:80", ("bind: invalid address '10.0.0.256' (expected an IP address, '*', "
                           "'localhost' or nothing)")),
    ("bind [::1:80", "bind: missing ']' in address '[::1:80'"),
    ("bind [::1]", "bind: address '[::1]' has no port (expected [ADDR]:PORT)"),
    ("bind /run/x.sock", ("bind: address '/run/x.sock' is not supported (splicer uses TCP "
                         "[ADDR]:PORT addresses only)")),
    ("bind fd@3", ("bind: address 'fd@3' is not supported (splicer uses TCP [ADDR]:PORT "
                  "addresses only)")),
    ("bind ipv4@:80", ("bind: address 'ipv4@:80' is not supported (splicer uses TCP "
                      "[ADDR]:PORT addresses only)")),
    ("bind :80,,:81", "bind: empty address in ':80,,:81'"),
    ("bind :80 ssl crt /x.pem", ("unknown bind option 'ssl' (splicer's 'bind' takes only "
                                "[ADDR]:PORT[,[ADDR]:PORT...])")),
    ("bind :80 , :81", ("unknown bind option ',' (splicer's 'bind' takes only "
                       "[ADDR]:PORT[,[ADDR]:PORT...])")),
])
def test_bind_errors(line, message):
    assert errors_of(f"frontend www\n    {line}\n    default_backend be\n" + TAIL) == [
        f"site.cfg:2: {message}"]


@pytest.mark.parametrize("line, message", [
    ("server", "'server' expects <name> <addr>:<port> [options]"),
    ("server s1", "'server' expects <name> <addr>:<port> [options]"),
    ("server s/1 1.2.3.4:80", "character '/' is not permitted in server name 's/1'"),
    ("server s1 web", "server 's1': address 'web' has no port (expected [ADDR]:PORT)"),
    ("server s1 :80", "server 's1': address ':80' has no host"),
    ("server s1 *:80", "server 's1': address '*:80' has no host"),
    ("server s1 bad_host!:80", "server 's1': invalid host 'bad_host!'"),
    ("server s1 1.2.3.4:0", "server 's1': port 0 is out of range (1..65535)"),
    ("server s1 1.2.3.4:65536", "server 's1': port 65536 is out of range (1..65535)"),
    ("server s1 1.2.3.4:+1", ("server 's1': port '+1' is not supported (splicer needs one port "
                             "number, no ranges or offsets)")),
    ("server s1 unix@/x.sock", ("server 's1': address 'unix@/x.sock' is not supported (splicer "
                               "uses TCP [ADDR]:PORT addresses only)")),
    ("server s1 1.2.3.4:80 weight", "server 's1': 'weight' expects a value"),
    ("server s1 1.2.3.4:80 weight 257", ("server 's1': 'weight' must be between 0 and 256, "
                                        "got 257")),
    ("server s1 1.2.3.4:80 weight -1", "server 's1': 'weight' expects an integer, got '-1'"),
    ("server s1 1.2.3.4:80 weight heavy", ("server 's1': 'weight' expects an integer, got "
                                          "'heavy'")),
    ("server s1 1.2.3.4:80 maxconn x", "server 's1': 'maxconn' expects an integer, got 'x'"),
    ("server s1 1.2.3.4:80 inter 0", ("server 's1': 'inter': the interval must be greater than "
                                     "zero")),
    ("server s1 1.2.3.4:80 inter 2q", ("server 's1': 'inter': invalid time '2q': unknown unit "
                                      "'q' (expected us, ms, s, m, h or d)")),
    ("server s1 1.2.3.4:80 rise 0", ("server 's1': 'rise' must be between 1 and 2147483647, "
                                    "got 0")),
    ("server s1 1.2.3.4:80 fall", "server 's1': 'fall' expects a value"),
    ("server s1 1.2.3.4:80 agent-check", "server 's1': option 'agent-check' is not supported"),
    ("server s1 1.2.3.4:80 ssl verify none", "server 's1': option 'ssl' is not supported"),
])
def test_server_errors(line, message):
    assert errors_of(f"backend web\n    {line}\n" + TAIL) == [f"site.cfg:2: {message}"]


# --- several errors at once -------------------------------------------------------------------

def test_every_error_is_reported_with_its_line():
    text = """\
        global
            maxconn abc
            nbthread 4
        defaults
            timeout clinet 30s
            mode http
        frontend www
            bind :80 ssl
            option forwardfr
            default_backend web
        backend web
            blance roundrobin
            server s1 10.0.0.1:8080 weight 300
            server s2 "10.0.0.2:8080
            server s3 10.0.0.3:8080
        """
    assert errors_of(text) == [
        "site.cfg:2: 'maxconn' expects an integer, got 'abc'",
        "site.cfg:5: unknown timeout 'clinet' in defaults section; did you mean 'client'?",
        ("site.cfg:8: unknown bind option 'ssl' (splicer's 'bind' takes only "
        "[ADDR]:PORT[,[ADDR]:PORT...])"),
        "site.cfg:9: unknown option 'forwardfr' in frontend 'www'; did you mean 'forwardfor'?",
        "site.cfg:12: unknown keyword 'blance' in backend 'web'; did you mean 'balance'?",
        "site.cfg:13: server 's1': 'weight' must be between 0 and 256, got 300",
        "site.cfg:14: unmatched double quote starting at column 15",
    ]


def test_messages_use_the_path_as_given():
    assert errors_of("global\n    maxconn x\n" + TAIL, path="conf/../conf/site.cfg") == [
        "conf/../conf/site.cfg:2: 'maxconn' expects an integer, got 'x'"]


def test_environment_expansion_feeds_keywords():
    config = loads(textwrap.dedent("""\
        frontend fe
            bind "${ADDR}:${PORT}"
            default_backend be
        backend be
            server s1 "${BACKEND_HOST-127.0.0.1}:8080" "${OPTS[*]}"
        """), "site.cfg", env={"ADDR": "127.0.0.1", "PORT": "8443", "OPTS": "weight 5"})
    assert (config.frontends[0].binds[0].host, config.frontends[0].binds[0].port) == (
        "127.0.0.1", 8443)
    server = config.backends["be"].servers[0]
    assert (server.host, server.port, server.weight) == ("127.0.0.1", 8080, 5)


# --- warnings ---------------------------------------------------------------------------------

def test_ignored_global_keywords_warn():
    text = """\
        global
            daemon
            log 127.0.0.1:514 local0 notice
            user haproxy
            group haproxy
            chroot /var/empty
            pidfile /run/haproxy.pid
            stats socket /run/haproxy.sock mode 600 level admin
            stats timeout 30s
        """
    assert warnings_of(text + TAIL) == [
        "site.cfg:2: 'daemon' is accepted for haproxy compatibility and ignored",
        "site.cfg:4: 'user' is accepted for haproxy compatibility and ignored",
        "site.cfg:5: 'group' is accepted for haproxy compatibility and ignored",
        "site.cfg:6: 'chroot' is accepted for haproxy compatibility and ignored",
        "site.cfg:7: 'pidfile' is accepted for haproxy compatibility and ignored",
        "site.cfg:9: 'stats timeout' is accepted for haproxy compatibility and ignored",
    ]  # `stats socket` (line 8) is supported: tests/unit/config/test_stats_socket_keywords.py


def test_global_log_line_is_a_target_not_a_warning():
    config = loads(textwrap.dedent("""\
        global
            log 127.0.0.1:514 local0 notice
        """ + TAIL), "site.cfg", env={})
    (target,) = config.global_.logs
    assert (target.kind, target.host, target.port, target.facility, target.level) == ("udp", "127.0.0.1", 514, 16, 5)
    assert config.frontends[0].logs == ()  # no `log global` in the frontend: not logged


def test_log_lines_do_not_warn_and_timeout_check_and_health_check_settings_do_not():
    text = """\
        defaults
            log global
            no log
            timeout check 5s
            mode http
        frontend fe
            bind :80
            default_backend be
            option forwardfor header X-Client except 10.0.0.0/8 if-none
        backend be
            server s1 127.0.0.1:8080 check inter 2s rise 2 fall 3
        """
    assert warnings_of(text) == []  # (the forwardfor arguments work: nothing is ignored)


def test_server_health_check_settings_are_stored():
    from splicer.config import loads
    text = "backend be\n    server s1 127.0.0.1:8080 check inter 500ms rise 3 fall 2\n    server s2 127.0.0.1:8081\n"
    s1, s2 = loads(text).backends["be"].servers
    assert (s1.check, s1.inter, s1.rise, s1.fall) == (True, 0.5, 3, 2)
    assert (s2.check, s2.inter, s2.rise, s2.fall) == (False, 2.0, 2, 3)


def test_empty_word_ends_the_statement_like_haproxy():
    # "${WEIGHT}" is unset: haproxy stops the argument list there and warns about the rest.
    text = """\
        backend be
            server s1 127.0.0.1:8080 "${WEIGHT}" disabled
            server s2 127.0.0.1:8081 "${WEIGHT}"
        frontend fe
            bind :80
            default_backend be
        """
    config = loads(textwrap.dedent(text), "site.cfg", env={})
    assert config.warnings == (
        ("site.cfg:2: word 4 (column 30) is empty and ends the statement; the words after it "
        "are ignored"),)
    assert [s.disabled for s in config.backends["be"].servers] == [False, False]


# --- suggestions and section heads (mutation-testing gaps) ---------------------------------------

def test_word_closer_to_a_section_than_to_a_keyword_is_taken_for_a_mistyped_section():
    # in a frontend 'bakend' is close to 'bind' (0.6) but closer to 'backend' (0.92)
    assert errors_of("frontend fe\n    bakend x\n" + TAIL) == [
        "site.cfg:2: unknown section 'bakend'; did you mean 'backend'?"]


def test_outside_any_section_only_a_close_word_is_taken_for_a_section():
    # 'defs' is 0.67 similar to 'defaults': below the section cutoff (0.8)
    assert errors_of("defs\n" + TAIL) == [
        "site.cfg:1: 'defs' is outside any section (a section starts with 'global', 'defaults', "
        "'frontend', 'backend' or 'listen')"]


def test_extra_word_after_a_frontend_name_points_at_bind_but_not_after_a_backend_name():
    assert errors_of("frontend fe 1.2.3.4:80\n" + TAIL) == [
        "site.cfg:1: 'frontend' cannot handle unexpected argument '1.2.3.4:80' (addresses go on a 'bind' line)"]
    assert errors_of("backend b 1.2.3.4:80\n" + TAIL) == [
        "site.cfg:1: 'backend' cannot handle unexpected argument '1.2.3.4:80'"]


def test_global_section_has_no_defaults_section():
    sections = raw_sections("defaults\nglobal\nbackend be\n")
    assert [s.kind for s in sections] == ["defaults", "global", "backend"]
    assert sections[1].defaults is None
    assert sections[2].defaults is sections[0]
