"""The real `splicer` command on good and bad configuration files: --check, file:line errors."""
from __future__ import annotations

import socket
import subprocess

from tests.e2e.helpers import free_port, splicer_command


def run(args: list[str], timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(splicer_command() + args, capture_output=True, text=True, timeout=timeout)


def test_check_accepts_the_shipped_config():
    r = run(["-c", "conf/site.cfg", "--check"])
    assert r.returncode == 0, r.stderr
    assert "conf/site.cfg is valid" in r.stdout


def test_check_accepts_the_farm_example():
    r = run(["-c", "conf/farm.cfg", "--check"])
    assert (r.returncode, r.stdout, r.stderr) == (0, "Configuration file conf/farm.cfg is valid\n", "")


def test_check_binds_nothing(tmp_path):
    port = free_port()
    cfg = tmp_path / "ok.cfg"
    cfg.write_text(f"defaults\n    mode http\nfrontend f\n    bind 127.0.0.1:{port}\n    default_backend b\n"
                   "backend b\n    server s 127.0.0.1:1\n")
    # hold the port: --check must not try to bind it
    with socket.create_server(("127.0.0.1", port)):
        r = run(["-c", str(cfg), "--check"])
    assert r.returncode == 0, r.stderr


def test_every_error_reported_with_file_and_line(tmp_path):
    cfg = tmp_path / "site.cfg"
    cfg.write_text(
        "global\n"                          # 1
        "    maxconn abc\n"                 # 2
        "\n"                                # 3
        "defaults\n"                        # 4
        "    mode http\n"                   # 5
        "    timeout clinet 5s\n"           # 6
        "\n"                                # 7
        "frontend www\n"                    # 8
        "    bind 127.0.0.1:8080\n"         # 9
        "    default_backend web\n"         # 10
        "\n"                                # 11
        "backend web\n"                     # 12
        "    blance roundrobin\n"           # 13
        "    server s1 127.0.0.1:99999\n"   # 14
        "    option forwardfr\n"            # 15
    )
    r = run(["-c", str(cfg), "--check"])
    assert r.returncode == 1
    lines = [ln.removeprefix("splicer: ") for ln in r.stderr.splitlines()]
    assert f"{cfg}:2: 'maxconn' expects an integer, got 'abc'" in lines
    assert f"{cfg}:6: unknown timeout 'clinet' in defaults section; did you mean 'client'?" in lines
    assert f"{cfg}:13: unknown keyword 'blance' in backend 'web'; did you mean 'balance'?" in lines
    assert f"{cfg}:14: server 's1': port 99999 is out of range (1..65535)" in lines
    assert f"{cfg}:15: unknown option 'forwardfr' in backend 'web'; did you mean 'forwardfor'?" in lines


def test_missing_backend_is_an_error(tmp_path):
    cfg = tmp_path / "x.cfg"
    cfg.write_text("frontend www\n    mode http\n    bind 127.0.0.1:8080\n    default_backend nowhere\n")
    r = run(["-c", str(cfg), "--check"])
    assert r.returncode == 1
    assert f"{cfg}:4:" in r.stderr and "nowhere" in r.stderr


def test_unreadable_file_is_an_error(tmp_path):
    r = run(["-c", str(tmp_path / "missing.cfg"), "--check"])
    assert r.returncode == 1
    assert "missing.cfg" in r.stderr


def test_starting_with_a_bad_config_exits_1_without_listening(tmp_path):
    port = free_port()
    cfg = tmp_path / "bad.cfg"
    cfg.write_text(f"frontend www\n    bind 127.0.0.1:{port}\n    default_backend b\n    bogus 1\nbackend b\n")
    r = run(["-c", str(cfg)])
    assert r.returncode == 1
    assert f"{cfg}:4: unknown keyword 'bogus'" in r.stderr


def test_port_in_use_is_reported(tmp_path):
    port = free_port()
    cfg = tmp_path / "busy.cfg"
    cfg.write_text(f"frontend www\n    mode http\n    bind 127.0.0.1:{port}\n    default_backend b\n"
                   "backend b\n    mode http\n")
    with socket.create_server(("127.0.0.1", port), reuse_port=False) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        r = run(["-c", str(cfg)])
    assert r.returncode == 3
    assert f"{cfg}:3: cannot bind 127.0.0.1:{port}" in r.stderr


def test_config_without_listener_is_refused(tmp_path):
    cfg = tmp_path / "empty.cfg"
    cfg.write_text("global\n    maxconn 10\n")
    for extra in (["--check"], []):
        r = run(["-c", str(cfg)] + extra)
        assert r.returncode == 1
        assert f"{cfg}: no frontend or listen section: nothing to listen on" in r.stderr


def test_two_frontends_on_one_address_is_an_error(tmp_path):
    cfg = tmp_path / "dup.cfg"
    cfg.write_text("defaults\n    mode http\n"
                   "frontend a\n    bind 127.0.0.1:18123\n    default_backend b\n"
                   "frontend c\n    bind *:18123\n    default_backend b\n"
                   "backend b\n")
    r = run(["-c", str(cfg), "--check"])
    assert r.returncode == 1
    assert (f"{cfg}:7: frontend 'c': bind *:18123 overlaps bind 127.0.0.1:18123 of frontend 'a' at {cfg}:4"
            in r.stderr)


def test_tiny_bufsize_is_refused(tmp_path):
    cfg = tmp_path / "buf.cfg"
    cfg.write_text("global\n    tune.bufsize 10\n")
    r = run(["-c", str(cfg), "--check"])
    assert r.returncode == 1
    assert f"{cfg}:2:" in r.stderr and "tune.bufsize" in r.stderr
