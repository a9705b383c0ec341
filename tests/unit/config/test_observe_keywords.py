"""Server options observe, error-limit, on-error, on-marked-down, on-marked-up, fastinter and
downinter (haproxy configuration.txt 5.2; src/server.c srv_parse_observe() and neighbours)."""
import textwrap

import pytest

from splicer.config import loads
from splicer.errors import ConfigErrors

HEAD = """\
defaults
    mode {mode}
frontend www
    bind 127.0.0.1:8080
    default_backend farm
backend farm
"""


def cfg(body, mode="http"):
    return loads(HEAD.format(mode=mode) + textwrap.dedent(body), "site.cfg", env={})


def errors(body, mode="http"):
    with pytest.raises(ConfigErrors) as info:
        cfg(body, mode)
    return [str(e) for e in info.value.errors]


def test_defaults_are_haproxys():
    s = cfg("server s1 127.0.0.1:8001 check\n").backends["farm"].servers[0]
    assert (s.observe, s.error_limit, s.on_error, s.on_marked_down, s.on_marked_up, s.fastinter,
            s.downinter) == ("", 10, "fail-check", "", "", 0.0, 0.0)


def test_options_on_server_and_default_server_lines():
    b = cfg("""\
        default-server observe layer7 error-limit 3 on-error sudden-death fastinter 100ms downinter 5s
        server s1 127.0.0.1:8001 check on-marked-down shutdown-sessions
        server s2 127.0.0.1:8002 check observe none on-error mark-down on-marked-up shutdown-backup-sessions
        """).backends["farm"]
    s1, s2 = b.servers
    assert (s1.observe, s1.error_limit, s1.on_error, s1.fastinter, s1.downinter, s1.on_marked_down,
            s1.on_marked_up) == ("layer7", 3, "sudden-death", 0.1, 5.0, "shutdown-sessions", "")
    assert (s2.observe, s2.on_error, s2.on_marked_down, s2.on_marked_up) == (
        "", "mark-down", "", "shutdown-backup-sessions")


def test_observe_layer4_in_tcp_mode():
    s = cfg("server s1 127.0.0.1:8001 check observe layer4\n", "tcp").backends["farm"].servers[0]
    assert s.observe == "layer4"


def test_observe_layer7_needs_mode_http():
    assert errors("server s1 127.0.0.1:8001 check observe layer7\n", "tcp") == [
        "site.cfg:7: backend 'farm': server 's1': 'observe layer7' can only be used in http proxies"]


def test_observe_without_check_is_accepted_with_a_warning():
    c = cfg("server s1 127.0.0.1:8001 observe layer4\nserver s2 127.0.0.1:8002 check observe layer7\n")
    assert c.warnings == ("site.cfg:7: backend 'farm': server 's1': 'observe layer4' has no effect "
                          "without 'check'",)


@pytest.mark.parametrize("opts, message", [
    ("observe layer3", "'observe' expects one of 'none', 'layer4', 'layer7' but got 'layer3'"),
    ("observe", "'observe' expects a value"),
    ("on-error fail", "'on-error' expects one of 'fastinter', 'fail-check', 'sudden-death' or "
                      "'mark-down' but got 'fail'"),
    ("on-marked-down shutdown", "'on-marked-down' expects 'shutdown-sessions' but got 'shutdown'"),
    ("on-marked-up shutdown-sessions", "'on-marked-up' expects 'shutdown-backup-sessions' but got "
                                       "'shutdown-sessions'"),
    ("on-marked-up", "'on-marked-up' expects a value"),
    ("error-limit 0", "'error-limit' must be between 1 and 2147483647, got 0"),
    ("error-limit many", "'error-limit' expects an integer, got 'many'"),
    ("fastinter 0", "'fastinter': the interval must be greater than zero"),
    ("downinter 1x", "'downinter': invalid time '1x': unknown unit 'x' (expected us, ms, s, m, h or d)"),
    ("obsrve layer4", "unknown option 'obsrve'; did you mean 'observe'?"),
])
def test_errors_name_file_and_line(opts, message):
    assert errors(f"server s1 127.0.0.1:8001 check {opts}\n") == [f"site.cfg:7: server 's1': {message}"]
