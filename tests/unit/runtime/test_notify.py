"""runtime/notify.py: sd_notify datagrams (-Ws), to a socket the test owns."""
import os
import socket

from splicer.runtime import notify


def test_address_forms():
    assert notify.address({}) is None
    assert notify.address({"NOTIFY_SOCKET": "/run/systemd/notify"}) == "/run/systemd/notify"
    assert notify.address({"NOTIFY_SOCKET": "@abstract"}) == "\0abstract"


def test_messages():
    assert notify.message("ready", 42) == b"READY=1\nMAINPID=42\n"
    assert notify.message("stopping", 42) == b"STOPPING=1\nMAINPID=42\n"
    lines = notify.message("reloading", 42).decode().splitlines()
    assert lines[:2] == ["RELOADING=1", "MAINPID=42"] and lines[2].startswith("MONOTONIC_USEC=")


def test_notify_sends_one_datagram_and_never_fails(tmp_path):
    path = str(tmp_path / "n.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(path)
        assert notify.notify("ready", {"NOTIFY_SOCKET": path})
        assert s.recv(100) == f"READY=1\nMAINPID={os.getpid()}\n".encode()
    assert not notify.notify("ready", {})
    assert not notify.notify("ready", {"NOTIFY_SOCKET": str(tmp_path / "missing.sock")})
