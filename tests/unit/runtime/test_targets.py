"""splicer.runtime.targets through load_checked(): a log target's host name must resolve (haproxy
resolves it with the system resolver when it parses the line: "invalid address"), an IP
literal is never resolved, and a `file@` target must open for appending, each error at its
`file:line`. Only names that resolve locally are used: `localhost` (/etc/hosts) and `.invalid`
ones (RFC 6761: they never resolve; with no network the resolver fails at once)."""
import os
import textwrap
import time

import pytest

from splicer.config import loads
from splicer.runtime.targets import check_targets
from splicer.runtime.targets import load_checked as load
from splicer.errors import ConfigErrors

BAD = "no.such.host.invalid"

TAIL = """\
frontend fe
    bind 127.0.0.1:8080
    default_backend be
backend be
    server s1 127.0.0.1:8001
"""

pytestmark = pytest.mark.timeout(30)


def write(tmp_path, text: str) -> str:
    path = tmp_path / "site.cfg"
    path.write_text(textwrap.dedent(text))
    return str(path)


def errors(tmp_path, text: str) -> list[str]:
    path = write(tmp_path, text)
    started = time.monotonic()
    with pytest.raises(ConfigErrors) as info:
        load(path)
    assert time.monotonic() - started < 20, "the resolver took too long: is the test machine's DNS broken?"
    return [str(e).removeprefix(f"{path}:") for e in info.value.errors]


@pytest.mark.parametrize("target", [f"udp@{BAD}:514", f"{BAD}:514", BAD, f"udp4@{BAD}:514",
                                    f"tcp@{BAD}:601", f"tcp6@{BAD}:601"])
def test_a_log_host_that_does_not_resolve_is_an_error_at_its_line(tmp_path, target):
    (err,) = errors(tmp_path, f"global\n    log {target} local0\n" + TAIL)
    assert err.startswith(f"2: log '{target}': invalid address: '{BAD}' ("), err


def test_a_frontends_and_a_backends_log_hosts_are_resolved_too(tmp_path):
    errs = errors(tmp_path, f"""\
        frontend fe
            bind 127.0.0.1:8080
            log udp@{BAD}:514 local0
            default_backend be
        backend be
            log tcp@{BAD}:601 local1
            server s1 127.0.0.1:8001
        """)
    assert [e.split(" (")[0] for e in errs] == [f"3: log 'udp@{BAD}:514': invalid address: '{BAD}'",
                                                f"6: log 'tcp@{BAD}:601': invalid address: '{BAD}'"]


def test_localhost_resolves(tmp_path):
    cfg = load(write(tmp_path, "global\n    log localhost:514 local0\n    log tcp@localhost:601 local0\n"
                               "ring r\n    server s localhost:6514\n" + TAIL))
    assert [(t.kind, t.host) for t in cfg.global_.logs] == [("udp", "localhost"), ("tcp", "localhost")]


def test_a_global_log_line_is_checked_once_however_many_proxies_use_it(tmp_path):
    errs = errors(tmp_path, f"global\n    log udp@{BAD}:514 local0\ndefaults\n    log global\n" + TAIL)
    assert len(errs) == 1 and errs[0].startswith("2: ")


def test_ip_literals_never_ask_the_resolver(tmp_path):
    asked = []
    cfg = loads("global\n    log 10.0.0.1 local0\n    log udp@10.0.0.1:514 local0\n    log [::1]:514 local0\n"
                "    log tcp@10.0.0.9:601 local0\n    log tcp6@[2001:db8::1]:601 local0\n"
                "    log tcp4@127.0.0.1:601 local0\n    log udp6@[::1]:514 local0\n"
                "ring r\n    server s 10.0.0.2:6514\n    server t [::1]:6514\n" + TAIL, "site.cfg", env={})
    assert check_targets(cfg, lambda host, port, family: asked.append(host)) == []
    assert asked == []
    # a name is asked, once for all the lines naming it with the same family
    cfg = loads(f"global\n    log {BAD} local0\n    log udp@{BAD}:515 local1\n" + TAIL, "site.cfg", env={})
    assert [str(e) for e in check_targets(cfg, lambda host, port, family: asked.append(host))] == []
    assert asked == [BAD]


def test_a_resolver_failure_is_reported_with_its_reason():
    def refuse(host, port, family):
        raise OSError(-2, "Name or service not known")

    cfg = loads(f"global\n    log udp@{BAD}:514 local0\nring r\n    server s1 {BAD}:6514\n" + TAIL,
                "site.cfg", env={})
    assert [str(e) for e in check_targets(cfg, refuse)] == [
        f"site.cfg:2: log 'udp@{BAD}:514': invalid address: '{BAD}' (Name or service not known)",
        f"site.cfg:4: server 's1': invalid address: '{BAD}' (Name or service not known)",
    ]


@pytest.mark.parametrize("target, msg", [
    ("tcp6@10.0.0.1:601", "invalid address: '10.0.0.1' is not an IPv6 address"),
    ("tcp4@[::1]:601", "invalid address: '::1' is not an IPv4 address"),
    ("udp6@10.0.0.1:514", "invalid address: '10.0.0.1' is not an IPv6 address"),
])
def test_a_forced_family_refuses_a_literal_of_the_other(tmp_path, target, msg):
    assert errors(tmp_path, f"global\n    log {target} local0\n" + TAIL) == [f"2: log '{target}': {msg}"]


def test_a_ring_server_that_does_not_resolve_is_an_error_at_its_line(tmp_path):
    # used or not, a ring's servers are resolved (haproxy parses them with SRV_PARSE_INITIAL_RESOLVE)
    errs = errors(tmp_path, f"""\
        global
            log ring@central local0
        ring central
            server ok 127.0.0.1:6514
            server s1 tcp@{BAD}:6514
        ring unused
            server s2 {BAD}:6514
        """ + TAIL)
    assert [e.split(" (")[0] for e in errs] == [f"5: server 's1': invalid address: '{BAD}'",
                                                f"7: server 's2': invalid address: '{BAD}'"]


def test_a_log_file_in_a_missing_directory_is_an_error(tmp_path):
    assert errors(tmp_path, "global\n    log file@/nonexistent/dir/x.log local0\n" + TAIL) == [
        "2: log 'file@/nonexistent/dir/x.log': cannot open '/nonexistent/dir/x.log' for appending: "
        "No such file or directory"]


def test_a_log_file_that_is_a_directory_is_an_error(tmp_path):
    (err,) = errors(tmp_path, f"frontend fe\n    bind 127.0.0.1:8080\n    log file@{tmp_path} local0\n"
                              "    default_backend be\nbackend be\n")
    assert err == f"3: log 'file@{tmp_path}': cannot open '{tmp_path}' for appending: Is a directory"


def test_a_log_file_is_opened_for_appending_and_created(tmp_path):
    kept = tmp_path / "kept.log"
    kept.write_bytes(b"earlier line\n")
    new = tmp_path / "new.log"
    cfg = load(write(tmp_path, f"global\n    log file@{kept} local0\n    log file@{new} local0\n" + TAIL))
    assert [t.path for t in cfg.global_.logs] == [str(kept), str(new)]
    assert kept.read_bytes() == b"earlier line\n"  # appended to, never truncated
    assert new.read_bytes() == b"" and oct(new.stat().st_mode & 0o777) == oct(0o640 & ~current_umask())


def test_a_fifo_without_reader_fails_at_once_instead_of_blocking(tmp_path):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    (err,) = errors(tmp_path, f"global\n    log file@{fifo} local0\n" + TAIL)
    assert err == f"2: log 'file@{fifo}': cannot open '{fifo}' for appending: No such device or address"


def test_loads_asks_nothing_of_the_system():
    cfg = loads(f"global\n    log udp@{BAD}:514 local0\n    log file@/nonexistent/dir/x.log local0\n" + TAIL,
                "site.cfg", env={})
    assert [t.address for t in cfg.global_.logs] == [f"udp@{BAD}:514", "file@/nonexistent/dir/x.log"]


def test_target_errors_wait_for_a_config_that_resolves(tmp_path):
    # a configuration with other errors reports those only (as resolve's checks wait for a clean parse)
    assert errors(tmp_path, f"global\n    log udp@{BAD}:514 local0\n    maxconn many\n" + TAIL) == [
        "3: 'maxconn' expects an integer, got 'many'"]


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
