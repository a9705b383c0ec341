"""Runtime API and stats-page admin fixes, each against haproxy's behaviour: shutdown
sessions ends the streams at once, chunked admin POSTs, `b=#<iid>`, one log line per
failure, `show errors` reasons, stats socket line handling, `set/get weight`.
Real processes, real sockets on 127.0.0.1."""
from __future__ import annotations

import socket
import time

from tests.e2e.helpers import ThreadedServer, free_port
from tests.e2e.test_runtime_api import cli, config, origins, wait_socket  # noqa: F401 (fixture)


class BigOrigin(ThreadedServer):
    """An origin answering every request with a BIG-byte body, written as fast as the
    connection takes it."""

    BIG = 64 << 20

    def _conn(self, c: socket.socket) -> None:
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = c.recv(65536)
                if not chunk:
                    return
                buf += chunk
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % self.BIG)
            block = b"x" * (1 << 20)
            for _ in range(self.BIG >> 20):
                c.sendall(block)
        except OSError:
            pass
        finally:
            c.close()


def test_shutdown_sessions_ends_a_slow_download_at_once(start_splicer, tmp_path):
    origin = BigOrigin()
    try:
        port = free_port()
        cfg, d = config(tmp_path, port, [("s1", origin.port, "")])
        start_splicer(cfg, [port])
        wait_socket(f"{d}/admin.sock")
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        c.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        got = 0
        while got < 200_000:  # a slow reader: every buffer on the way fills up
            got += len(c.recv(4096))
            time.sleep(0.002)
        assert cli(f"{d}/admin.sock", "shutdown sessions server be/s1\n") == "\n"
        t0 = time.monotonic()
        try:
            while True:
                chunk = c.recv(4096)  # still slow: 200 KB/s at most
                if not chunk:
                    break
                got += len(chunk)
                time.sleep(0.02)
                assert time.monotonic() - t0 < 4, f"still downloading ({got} bytes) after shutdown sessions"
        except ConnectionResetError:
            pass
        c.close()
        assert got < BigOrigin.BIG
    finally:
        origin.close()
