"""Helpers for the end-to-end tests: ports, waiting, hashing, the splicer command, configs."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path


_PORTS = (20000, 32000)
"""free_port()'s range: below Linux's ephemeral ports (ip_local_port_range, 32768-60999 by
default), which the kernel gives to every outgoing connection and to bind(port 0). A port
found free there and bound a moment later by splicer could be taken meanwhile by any test's
connect(): seen as `cannot bind 127.0.0.1:47427: Address already in use` under -n 2."""
_next_port: list[int] = []


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing is bound to right now, for a server the test
    starts: from _PORTS, in a slice of its own per xdist worker (PYTEST_XDIST_WORKER gwN), in
    turn, so that no other test process and no outgoing connection picks it meanwhile."""
    if not _next_port:
        worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
        workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
        span = (_PORTS[1] - _PORTS[0]) // workers
        lo = _PORTS[0] + (worker % workers) * span
        _next_port.extend([lo, lo, lo + span])  # (next, slice start, slice end)
    for _ in range(_next_port[2] - _next_port[1]):
        port = _next_port[0]
        _next_port[0] = port + 1 if port + 1 < _next_port[2] else _next_port[1]
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use (by something outside the tests): the next one
            return port
    raise RuntimeError(f"no free port in {_next_port[1]}-{_next_port[2] - 1}")


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


def listening(port: int) -> bool:
    """Whether a TCP socket of this network namespace listens on `port` (any address), read
    from /proc/net/tcp and tcp6: no connection is made, so a proxy counts nothing (a
    connection that sends nothing is an incomplete request to splicer, as to haproxy)."""
    want = f":{port:04X}"
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[1].endswith(want) and fields[3] == "0A":  # TCP_LISTEN
                        return True
        except FileNotFoundError:
            continue
    return False


def wait_listening(port: int, proc: subprocess.Popen | None = None, timeout: float = 15.0) -> None:
    """wait_port() without connecting: until something listens on `port` (listening())."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        if listening(port):
            return
        time.sleep(0.02)
    raise TimeoutError(f"nothing listens on port {port}")


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
                nbthread: int = 1, extra_frontend: str = "") -> str:
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
    # (without it a check's timeout is `inter`, 100 ms in many tests: on a loaded machine a
    # healthy origin's thread may answer later; the tests of check timeouts set their own)
    timeout check 5s
{extra_defaults}

frontend www
    bind 127.0.0.1:{port}
    default_backend farm
{extra_frontend}

backend farm
    balance {balance}
{extra_backend}
{srv}
"""


def recv_all(s: socket.socket) -> bytes:
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except ConnectionResetError:
        out += b"<RST>"
    return out


def head_fields(head: bytes) -> list[tuple[bytes, bytes]]:
    """(lower-case name, value) pairs of the first head in `head` (bytes as received)."""
    out = []
    for line in head.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        out.append((name.strip().lower(), value.strip()))
    return out


def head_values(head: bytes, name: bytes) -> list[bytes]:
    """Every value of field `name` (lower case) in the first head of `head`."""
    return [v for n, v in head_fields(head) if n == name]


def exchange(port: int, request: bytes, timeout: float = 10) -> bytes:
    """Send `request` on a new connection to 127.0.0.1:port; everything until the close."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(request)
        return recv_all(s)
    finally:
        s.close()


def read_response(s: socket.socket) -> tuple[bytes, bytes]:
    """One response with a Content-Length: (head, body). Reads exactly that response (the
    head's end is found with MSG_PEEK), so a response pipelined behind it stays in the
    socket for the next call."""
    head = b""
    while True:
        peek = s.recv(65536, socket.MSG_PEEK)
        assert peek, "closed before the end of the head"
        seen = head + peek
        end = seen.find(b"\r\n\r\n")
        take = len(peek) if end < 0 else end + 4 - len(head)
        head += recv_exactly(s, take)
        if end >= 0:
            break
    head = head[:-4]
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    return head, recv_exactly(s, length)


def recv_exactly(s: socket.socket, n: int) -> bytes:
    """Exactly `n` bytes from `s` (fails if it closes first)."""
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        assert chunk, "closed before the end of the body"
        got += chunk
    return got


class ThreadedServer:
    """A listening socket on a free 127.0.0.1 port; each accepted connection is handed to
    `_conn(sock)` in a thread of its own. close() stops accepting."""

    def __init__(self) -> None:
        self.port = free_port()
        self.lsock = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._conn, args=(c,), daemon=True).start()

    def _conn(self, c: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.lsock.close()


class ScriptedOrigin(ThreadedServer):
    """An origin that reads one request head, then runs `script(conn)`; one thread per connection."""

    def __init__(self, script) -> None:
        self.script = script
        self.requests: list[bytes] = []
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                c.close()
                return
            data += chunk
        self.requests.append(data)
        try:
            self.script(c)
        except OSError:
            pass
        finally:
            c.close()


class KeepAliveOrigin(ThreadedServer):
    """An origin that serves several requests per connection.

    script(conn_no, req_no, head) -> (bytes to send, close after?); conn_no counts from 1
    over the origin's life, req_no from 0 on each connection. `requests` records
    (conn_no, req_no, head), or with `bodies` (conn_no, req_no, head + CRLF CRLF + body):
    each request's Content-Length body is read too before the script answers.
    """

    def __init__(self, script, bodies: bool = False) -> None:
        self.script = script
        self.bodies = bodies
        self.requests: list[tuple[int, int, bytes]] = []
        self.conns = 0
        self.lock = threading.Lock()
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        with self.lock:
            self.conns += 1
            conn_no = self.conns
        buf, req_no = b"", 0
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = c.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                if self.bodies:
                    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                    want = int(m.group(1)) if m else 0
                    while len(buf) < want:
                        chunk = c.recv(65536)
                        if not chunk:
                            return
                        buf += chunk
                    self.requests.append((conn_no, req_no, head + b"\r\n\r\n" + buf[:want]))
                    buf = buf[want:]
                else:
                    self.requests.append((conn_no, req_no, head))
                out, close = self.script(conn_no, req_no, head)
                req_no += 1
                if out:
                    c.sendall(out)
                if close:
                    return
        except OSError:
            pass
        finally:
            c.close()


RULES_DEFAULTS = """
global
    nbthread 1
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
    timeout http-request 5s
    timeout http-keep-alive 5s
"""
"""The global and defaults sections the rule and routing tests put above their proxies."""


def named_origin(name: bytes) -> KeepAliveOrigin:
    """An origin answering every request with 200 and its name as the body."""
    return KeepAliveOrigin(lambda c, r, head: (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                                               % (len(name), name), False))
