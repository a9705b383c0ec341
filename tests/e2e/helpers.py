"""Helpers for the end-to-end tests: ports, waiting, hashing, the splicer command, configs."""
from __future__ import annotations

import hashlib
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 15.0) -> None:
    """Wait until 127.0.0.1:port accepts connections (fails early if `proc` exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def splicer_command() -> list[str]:
    """The installed `splicer` console script (beside this Python), else `python -m splicer`."""
    exe = Path(sys.executable).with_name("splicer")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("splicer")
    return [found] if found else [sys.executable, "-m", "splicer"]


def http_config(port: int, servers: list[tuple[str, int]], *, balance: str = "roundrobin",
                extra_defaults: str = "", extra_backend: str = "", server_opts: str = "",
                nbthread: int = 1) -> str:
    """A one-frontend, one-backend HTTP config for tests."""
    srv = "\n".join(f"    server {name} 127.0.0.1:{p} {server_opts}" for name, p in servers)
    return f"""
global
    nbthread {nbthread}
    maxconn 1000
    tune.pipesize 1048576

defaults
    mode http
    option splice-auto
    option forwardfor
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout http-request 5s
    timeout http-keep-alive 5s
{extra_defaults}

frontend www
    bind 127.0.0.1:{port}
    default_backend farm

backend farm
    balance {balance}
{extra_backend}
{srv}
"""
