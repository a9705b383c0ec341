"""The logging keywords (haproxy 4.2 "log", "log-format", "capture", option httplog/tcplog/
dontlognull/log-health-checks): snippets -> model, and exact "file:line: msg" errors."""
import textwrap

import pytest

from splicer.config import loads
from splicer.errors import ConfigErrors
from splicer.log.format import HTTPLOG, TCPLOG

TAIL = """
frontend fe
    bind :80
    default_backend be
backend be
    server s1 127.0.0.1:8080
"""


def load(text: str):
    return loads(textwrap.dedent(text), "site.cfg", env={})


def errors(text: str) -> list[str]:
    with pytest.raises(ConfigErrors) as info:
        load(text)
    return [str(e) for e in info.value.errors]


@pytest.mark.parametrize("target, kind, fields", [
    ("stdout", "fd", {"fd": 1}), ("stderr", "fd", {"fd": 2}), ("fd@3", "fd", {"fd": 3}),
    ("file@/var/log/x.log", "file", {"path": "/var/log/x.log"}),
    ("/dev/log", "unix", {"path": "/dev/log"}), ("unix@/run/log.sock", "unix", {"path": "/run/log.sock"}),
    ("10.0.0.1", "udp", {"host": "10.0.0.1", "port": 514}), ("10.0.0.1:1514", "udp", {"host": "10.0.0.1", "port": 1514}),
    ("udp@syslog.example:1514", "udp", {"host": "syslog.example", "port": 1514}),
    ("[::1]:1514", "udp", {"host": "::1", "port": 1514}),
    ("tcp@10.0.0.1:601", "tcp", {"host": "10.0.0.1", "port": 601, "family": "", "octet_count": False,
                                 "ring_size": 16384, "timeout_connect": 1.0, "timeout_server": 5.0}),
    ("tcp6@[::1]:601", "tcp", {"host": "::1", "port": 601, "family": "tcp6"}),
    ("tcp4@syslog.example:601", "tcp", {"host": "syslog.example", "family": "tcp4"}),
    ("uxst@/run/syslog.sock", "uxst", {"path": "/run/syslog.sock"}),
])
def test_log_targets(target, kind, fields):
    (t,) = load(f"global\n    log {target} local0\n").global_.logs
    assert t.kind == kind and t.address == target
    for k, v in fields.items():
        assert getattr(t, k) == v


def test_log_options_and_levels():
    (t,) = load("global\n    log 127.0.0.1 len 4096 format rfc5424 local7 notice err\n").global_.logs
    assert (t.maxlen, t.explicit_len, t.format, t.facility, t.level, t.minlevel) == (4096, True, "rfc5424", 23, 5, 3)


def test_log_global_defaults_and_no_log():
    cfg = load("""\
        global
            log 127.0.0.1:514 local0
        defaults
            mode http
            log global
            log stdout format raw daemon
            option httplog
        frontend a
            bind :80
            default_backend be
        frontend b
            bind :81
            no log
            default_backend be
        frontend c
            bind :82
            no log
            log stderr daemon
            option tcplog
            default_backend be
        backend be
            server s1 127.0.0.1:8080
        """)
    a, b, c = cfg.frontends
    assert [t.address for t in a.logs] == ["127.0.0.1:514", "stdout"] and a.log_format == HTTPLOG
    assert b.logs == () and b.log_format == HTTPLOG
    assert [t.address for t in c.logs] == ["stderr"] and c.log_format == TCPLOG  # the last format line wins
    assert [t.address for t in cfg.backends["be"].logs] == ["127.0.0.1:514", "stdout"]


def test_httplog_in_tcp_mode_falls_back_to_tcplog_with_a_warning():
    cfg = load("defaults\n    mode tcp\nfrontend fe\n    bind :80\n    option httplog\n    default_backend be\n"
               "backend be\n    server s1 127.0.0.1:8080\n")
    assert cfg.frontends[0].log_format == TCPLOG
    assert cfg.warnings == ("site.cfg:5: frontend 'fe': 'option httplog' needs mode http; using 'option tcplog'",)


def test_captures_and_options():
    fe = load("""\
        defaults
            mode http
            option dontlognull
        frontend fe
            bind :80
            capture request header Host len 32
            capture response header Content-Type len 8
            log-format "%ci %{+Q}r %[bytes_spliced]"
            default_backend be
        backend be
            option log-health-checks
            server s1 127.0.0.1:8080
        """).frontends[0]
    assert fe.capture_request == (("host", 32),) and fe.capture_response == (("content-type", 8),)
    assert fe.dontlognull and fe.log_format == "%ci %{+Q}r %[bytes_spliced]"


@pytest.mark.parametrize("line, msg", [
    ("log", "'log' expects a target ('global' or an address) and a facility"),
    ("log 127.0.0.1", "'log 127.0.0.1' expects a facility (kern, user"),
    ("log 127.0.0.1 local9", "'log': unknown facility 'local9'; did you mean 'local7'?"),
    ("log 127.0.0.1 local0 inf", "'log': unknown level 'inf' (known: emerg, alert, crit, err, warning, notice, "
                                 "info, debug); did you mean 'info'?"),
    ("log 127.0.0.1 format json local0", "'log': unknown format 'json' (supported: local, rfc3164, rfc5424, "
                                         "priority, short, timed, iso, raw)"),
    ("log 127.0.0.1 len 10 local0", "'log len' must be between 80 and 65535, got 10"),
    ("log ring@buf local0", "log 'ring@buf': no ring section named 'buf'"),
    ("log backend@logs local0", "log 'backend@logs': target 'backend@' is not supported"),
    ("log tcp@10.0.0.1 local0", "log 'tcp@10.0.0.1': address '10.0.0.1' has no port"),
    ("log uxst@run/x.sock local0", "log 'uxst@run/x.sock': 'uxst@' expects an absolute path"),
    ("log 127.0.0.1 sample 1:2 local0", "'log': 'sample' is not supported"),
    ("log global", "'log global' is only valid in a proxy section"),
])
def test_log_errors_in_global(line, msg):
    (err,) = errors(f"global\n    {line}\n" + TAIL)
    assert err.startswith(f"site.cfg:2: {msg}"), err


@pytest.mark.parametrize("line, msg", [
    ("log-format %ci %cp", "'log-format' expects only one argument (quote the format, or escape its spaces)"),
    ('log-format "%Q"', "'log-format': unknown log-format variable '%Q'"),
    ('log-format "%[nope]"', "'log-format': unknown sample fetch 'nope'"),
    ("capture cookie X len 3", "'capture cookie' is not supported"),
    ("capture request header Host", "'capture request header' expects '<name> len <length>'"),
    ("capture request header Host len 0", "'capture request header len' must be between 1 and 65535, got 0"),
    ("option httplog clf", "'option httplog clf' is not supported"),
])
def test_frontend_log_errors(line, msg):
    (err,) = errors(f"frontend fe\n    bind :80\n    mode http\n    {line}\n    default_backend be\n"
                    "backend be\n    mode http\n    server s1 127.0.0.1:8080\n")
    assert err.startswith(f"site.cfg:4: {msg}"), err


RING = """\
global
    log ring@buf len 2048 local3 notice
ring buf
    description "to the log servers"
    format rfc5424
    maxlen 1200
    size 64k
    timeout connect 2s
    timeout server 10s
    server s1 127.0.0.1:6514 log-proto octet-count
    server s2 uxst@/run/syslog.sock
"""


def test_a_ring_sends_to_each_of_its_servers_with_its_settings():
    cfg = load(RING + TAIL)
    ring = cfg.rings["buf"]
    assert (ring.description, ring.format, ring.maxlen, ring.size, ring.timeout_connect, ring.timeout_server) == (
        "to the log servers", "rfc5424", 1200, 65536, 2.0, 10.0)
    assert [n for n, _ in ring.servers] == ["s1", "s2"]
    s1, s2 = cfg.global_.logs  # one target per server, each with the ring's framing and the log line's levels
    assert (s1.kind, s1.host, s1.port, s1.octet_count) == ("tcp", "127.0.0.1", 6514, True)
    assert (s2.kind, s2.path, s2.octet_count) == ("uxst", "/run/syslog.sock", False)
    for t in (s1, s2):
        assert (t.format, t.maxlen, t.facility, t.level, t.ring, t.ring_size) == ("rfc5424", 1200, 19, 5, "buf", 65536)
        assert (t.timeout_connect, t.timeout_server, t.line) == (2.0, 10.0, 2)
    # defaults of a ring: raw, no maxlen of its own (the log line's len), 16384 bytes, 1 s and 5 s
    (t,) = load("global\n    log ring@r local0\nring r\n    server s 10.0.0.1:514\n" + TAIL).global_.logs
    assert (t.format, t.maxlen, t.ring_size, t.timeout_connect, t.timeout_server, t.octet_count) == (
        "raw", 1024, 16384, 1.0, 5.0, False)


@pytest.mark.parametrize("lines, msg", [
    ("    server s1 127.0.0.1:514 log-proto rfc5424\n", "site.cfg:4: server 's1': 'log-proto' expects 'legacy' or "
                                                        "'octet-count'"),
    ("    server s1 127.0.0.1:514 check\n", "site.cfg:4: server 's1': 'check' is not supported on a ring's server"),
    ("    server s1 udp@127.0.0.1:514\n", "site.cfg:4: server 's1': address prefix 'udp@' is not supported in a ring"),
    ("    server s1 127.0.0.1\n", "site.cfg:4: server 's1': address '127.0.0.1' has no port"),
    ("    backing-file /tmp/ring\n", "site.cfg:4: 'backing-file' is not supported in a ring"),
    ("    size 100\n", "site.cfg:4: 'size': 100 bytes is out of range (1024 to 1g)"),
    ("    timeout client 1s\n", "site.cfg:4: unknown timeout 'client' in ring 'buf'"),
    ("    maxlen 4000\n    size 2k\n    server s1 127.0.0.1:514\n", "site.cfg:3: ring 'buf': maxlen 4000 is more "
                                                                      "than its size 2048"),
    ("    server s1 127.0.0.1:514\n    server s1 127.0.0.1:515\n", "site.cfg:5: ring 'buf': server 's1' is "
                                                                   "declared twice"),
    ("", "site.cfg:2: log 'ring@buf': ring 'buf' has no server"),
    ("    bind :514\n", "site.cfg:4: 'bind' is not allowed in ring 'buf'"),
])
def test_ring_errors(lines, msg):
    errs = errors("global\n    log ring@buf local0\nring buf\n" + lines + TAIL)
    assert any(e.startswith(msg) for e in errs), errs


def test_two_rings_of_one_name_are_an_error():
    errs = errors("ring r\n    server s 10.0.0.1:514\nring r\n    server s 10.0.0.2:514\n" + TAIL)
    assert errs == ["site.cfg:3: ring 'r' has the same name as the ring declared at site.cfg:1"]
