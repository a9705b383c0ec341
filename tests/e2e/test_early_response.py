"""An early response: the server answers before it has read the whole request body, as
HTTP/1.1 allows (RFC 9112 section 9.3: a server may respond before the request is complete;
nginx's `return 204` does, then reads and drops the body to keep the connection).

After a 2xx the rest of the body is still forwarded and both connections stay reusable;
after an error status splicer closes cleanly (FIN after the response, the upload drained),
never with a reset under the response. Both with the body spliced and copied.
"""
from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.e2e.helpers import ThreadedServer, free_port, http_config, read_response

UPLOAD = 24 * 1024 * 1024


class EarlyOrigin(ThreadedServer):
    """Reads a request head, answers `status` at once, then reads and drops the body (its
    Content-Length) and serves the next request on the connection the same way."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.bodies: list[int] = []  # body bytes read per request
        self.lock = threading.Lock()
        super().__init__()

    def _conn(self, c: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = c.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                reason = b"No Content" if self.status == 204 else b"Payload Too Large"
                c.sendall(b"HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n" % (self.status, reason))
                got = min(len(buf), length)
                buf = buf[got:]
                while got < length:
                    chunk = c.recv(min(1 << 20, length - got))
                    if not chunk:
                        return
                    got += len(chunk)
                with self.lock:
                    self.bodies.append(got)
        except OSError:
            pass
        finally:
            c.close()


def upload(sock: socket.socket, size: int, errors: list) -> None:
    """Send a request with a `size`-byte body over about a second (well past any grace a
    proxy might give a body after the response); record a send failure in `errors`."""
    head = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size
    try:
        sock.sendall(head)
        block = b"u" * (1 << 20)
        left = size
        while left:
            n = min(left, len(block))
            sock.sendall(block[:n])
            left -= n
            time.sleep(0.04)
    except OSError as exc:
        errors.append(exc)


@pytest.mark.parametrize("splice", ["splice-request", "no-splice"])
def test_early_2xx_upload_completes_and_connection_is_reused(start_splicer, splice):
    origin = EarlyOrigin(204)
    port = free_port()
    opt = "    option splice-request\n" if splice == "splice-request" else "    no option splice-auto\n"
    sp = start_splicer(http_config(port, [("o", origin.port)], extra_defaults=opt), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        for _ in range(2):  # the second upload shows the client connection was kept
            errors: list = []
            t = threading.Thread(target=upload, args=(s, UPLOAD, errors))
            t.start()
            head, body = read_response(s)  # the 204 arrives while the upload goes on
            assert head.startswith(b"HTTP/1.1 204 ")
            t.join(30)
            assert not t.is_alive() and errors == []
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _ = read_response(s)
        assert head.startswith(b"HTTP/1.1 204 ")
        s.close()
        deadline = time.monotonic() + 10
        while len(origin.bodies) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        # every upload reached the origin whole, and its server connection was kept: the
        # second upload and the GET went on it (http-reuse safe: any request after a client
        # connection's first may take an idle connection, whatever its method or body)
        assert origin.bodies == [UPLOAD, UPLOAD, 0]
        st = sp.stats()
        assert st["backends"]["farm"]["stot"] == 1
        assert st["backends"]["farm"]["reused"] == 2
    finally:
        origin.close()


def test_early_error_closes_cleanly_after_the_response(start_splicer):
    origin = EarlyOrigin(413)
    port = free_port()
    sp = start_splicer(http_config(port, [("o", origin.port)]), [port])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        errors: list = []
        t = threading.Thread(target=upload, args=(s, UPLOAD, errors))
        t.start()
        head, body = read_response(s)
        assert head.startswith(b"HTTP/1.1 413 ")
        assert b"connection: close" in head.lower()
        # then the connection ends with a FIN, not a reset that could destroy the response
        s.settimeout(10)
        tail = b""
        while chunk := s.recv(65536):
            tail += chunk
        assert tail == b""
        t.join(30)
        s.close()
        assert sp.proc.poll() is None
    finally:
        origin.close()
