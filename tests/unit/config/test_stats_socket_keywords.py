"""`stats socket`, `server-state-file` (global) and `load-server-state-from-file` (defaults,
backend): haproxy configuration.txt 3.1 and 4.2, management.txt 9.3."""
import textwrap

import pytest

from splicer.config import loads
from splicer.config.model import StatsSocket
from splicer.errors import ConfigErrors

TAIL = """\
defaults
    mode http
frontend www
    bind 127.0.0.1:8080
    default_backend farm
backend farm
    server s1 127.0.0.1:8001
"""


def cfg(text):
    return loads(textwrap.dedent(text) + TAIL, "site.cfg", env={})


def errors(text):
    with pytest.raises(ConfigErrors) as info:
        cfg(text)
    return [str(e) for e in info.value.errors]


def test_stats_sockets_add_up_with_haproxys_defaults():
    g = cfg("""\
        global
            stats socket /run/a.sock mode 600 level operator
            stats socket unix@/run/b.sock expose-fd listeners
            stats socket /run/c.sock level user
        """).global_
    assert g.stats_sockets == (
        StatsSocket("/run/a.sock", 0o600, "operator", False, "site.cfg", 2),
        StatsSocket("/run/b.sock", None, "admin", True, "site.cfg", 3),
        StatsSocket("/run/c.sock", None, "user", False, "site.cfg", 4),
    )


def test_no_stats_socket_by_default():
    assert cfg("global\n").global_.stats_sockets == ()


@pytest.mark.parametrize("line, message", [
    ("stats socket", "site.cfg:2: 'stats socket' expects a path"),
    ("stats socket /a level root", "site.cfg:2: 'stats socket': 'level' expects 'user', 'operator' or 'admin', "
                                   "got 'root'"),
    ("stats socket /a mode 999", "site.cfg:2: 'stats socket': 'mode' expects octal permissions such as 600, "
                                 "got '999'"),
    ("stats socket /a mode", "site.cfg:2: 'stats socket': 'mode' expects a value"),
    ("stats socket /a expose-fd all", "site.cfg:2: 'stats socket': 'expose-fd' expects 'listeners', got 'all'"),
    ("stats socket /a levl admin", "site.cfg:2: 'stats socket': unknown option 'levl'; did you mean 'level'?"),
    ("stats socket ipv4@127.0.0.1:9999", "site.cfg:2: 'stats socket': only unix sockets are supported, "
                                         "got 'ipv4@127.0.0.1:9999'"),
    ("stats sockt /a", "site.cfg:2: unknown keyword 'stats sockt' in global section; supported: 'stats socket'; "
                       "did you mean 'socket'?"),
])
def test_stats_socket_errors(line, message):
    assert errors(f"global\n    {line}\n") == [message]


def test_stats_tunings_are_ignored_with_a_warning():
    c = cfg("global\n    stats timeout 2m\n    stats maxconn 10\n")
    assert list(c.warnings) == ["site.cfg:2: 'stats timeout' is accepted for haproxy compatibility and ignored",
                          "site.cfg:3: 'stats maxconn' is accepted for haproxy compatibility and ignored"]


def test_server_state_file_and_its_loading():
    c = loads(textwrap.dedent("""\
        global
            server-state-file /var/lib/splicer/state
        defaults
            mode http
            load-server-state-from-file global
        frontend www
            bind 127.0.0.1:8080
            default_backend farm
        backend farm
            server s1 127.0.0.1:8001
        backend other
            load-server-state-from-file none
            server s1 127.0.0.1:8001
        """), "site.cfg", env={})
    assert c.global_.server_state_file == "/var/lib/splicer/state"
    assert c.backends["farm"].load_server_state == "global"
    assert c.backends["other"].load_server_state == "none"
    assert cfg("global\n").backends["farm"].load_server_state == "none"


def test_local_state_files_and_their_names():
    c = loads(textwrap.dedent("""\
        global
            server-state-base /var/lib/splicer
        defaults
            mode http
            load-server-state-from-file local
        frontend www
            bind 127.0.0.1:8080
            default_backend farm
        backend farm
            server s1 127.0.0.1:8001
        backend named
            server-state-file-name /tmp/named.state
            server s1 127.0.0.1:8001
        backend byname
            server-state-file-name use-backend-name
            server s1 127.0.0.1:8001
        """), "site.cfg", env={})
    assert c.global_.server_state_base == "/var/lib/splicer"
    assert [(b.load_server_state, b.server_state_file_name) for b in c.backends.values()] == [
        ("local", ""), ("local", "/tmp/named.state"), ("local", "")]


@pytest.mark.parametrize("line, message", [
    ("load-server-state-from-file all", "'load-server-state-from-file' expects 'global', 'local' or 'none', "
                                        "got 'all'"),
    ("load-server-state-from-file", "'load-server-state-from-file' expects 'global', 'local' or 'none'"),
    ("server-state-file-name a b", "'server-state-file-name' cannot handle unexpected argument 'b'"),
])
def test_load_server_state_errors(line, message):
    with pytest.raises(ConfigErrors) as info:
        loads(TAIL + f"    {line}\n", "site.cfg", env={})
    assert [str(e) for e in info.value.errors] == [f"site.cfg:8: {message}"]


def test_load_server_state_is_refused_in_a_frontend():
    with pytest.raises(ConfigErrors) as info:
        loads(TAIL.replace("    default_backend farm\n", "    default_backend farm\n"
                           "    load-server-state-from-file global\n"), "site.cfg", env={})
    assert "load-server-state-from-file" in str(info.value.errors[0])
