"""Syslog over a stream socket (haproxy's `log tcp@...`, `uxst@...` and `ring` sections,
RFC 6587): real `splicer`, a real origin, and a real syslog receiver listening on
127.0.0.1 or a unix socket, reading what arrives byte by byte. Checked: the framing (a line
feed after each message, or its length before it), one message per request, every ring
server getting every message, a receiver that is not there yet (requests are served at
once, the lines wait and arrive once it listens), and a receiver that goes away (its
lines go to the next connection, none cut, none twice)."""
from __future__ import annotations

import re
import socket
import threading
import time

import pytest

from tests.e2e.helpers import free_port, http_config, recv_all
from tests.e2e.test_access_log import LOCAL, RFC5424, PathOrigin, parse

HTTPLOG = "    option httplog\n    option dontlognull\n"


class Receiver:
    """A syslog server on a stream socket: accepts connections one after the other and
    keeps what each one sent (bytes, in order). `close_after`: bytes after which the
    first connection is closed by the receiver (None: never)."""

    def __init__(self, path: str | None = None, port: int | None = None, close_after: int | None = None) -> None:
        if path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(path)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(("127.0.0.1", port or 0))
            self.port = self.sock.getsockname()[1]
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.close_after = close_after
        self.conns: list[bytearray] = []
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            got = bytearray()
            self.conns.append(got)
            c.settimeout(0.2)
            while not self._stop:
                try:
                    data = c.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    break
                if not data:
                    break
                got += data
                if self.close_after is not None and len(self.conns) == 1 and len(got) >= self.close_after:
                    break
            c.close()

    def data(self) -> bytes:
        return b"".join(bytes(c) for c in self.conns)

    def wait(self, count: int, split, timeout: float = 20.0) -> list[bytes]:
        """The first `count` messages received (split(data) parses them), waiting for them."""
        deadline = time.monotonic() + timeout
        while len(msgs := split(self.data())) < count:
            assert time.monotonic() < deadline, f"{len(msgs)} of {count} messages: {self.data()[-400:]!r}"
            time.sleep(0.02)
        return msgs

    def close(self) -> None:
        self._stop = True
        self._thread.join(5)
        self.sock.close()


def by_line(data: bytes) -> list[bytes]:
    """RFC 6587 3.4.2: each message ends with a line feed (kept)."""
    return [m + b"\n" for m in data.split(b"\n")[:-1]]


def by_length(data: bytes) -> list[bytes]:
    """RFC 6587 3.4.1: MSG-LEN SP SYSLOG-MSG; what follows the last whole one is left."""
    out, pos = [], 0
    while (m := re.compile(rb"([1-9][0-9]*) ").match(data, pos)) is not None:
        end = m.end() + int(m.group(1))
        if end > len(data):
            break
        out.append(data[m.end():end])
        pos = end
    assert pos == len(data) or re.fullmatch(rb"[0-9]* ?.*", data[pos:], re.S), data[pos:]
    return out


@pytest.fixture(scope="module")
def origin():
    o = PathOrigin()
    yield o
    o.close()


def get(port: int, path: str) -> bytes:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".encode())
        return recv_all(s)
    finally:
        s.close()


def test_tcp_target_sends_one_line_per_request_over_one_connection(start_splicer, origin):
    rx = Receiver()
    try:
        port = free_port()
        cfg = http_config(port, [("o1", origin.port)], extra_defaults=HTTPLOG,
                          extra_frontend=f"    log tcp@127.0.0.1:{rx.port} local3\n")
        sp = start_splicer(cfg, [port])
        for i in range(5):
            assert get(port, f"/ok/tcp{i}").endswith(b"ok")
        msgs = rx.wait(5, by_line)
        for i, msg in enumerate(msgs):
            m = LOCAL.match(msg.decode())
            assert m is not None, msg
            assert int(m["pri"]) == 19 * 8 + 6 and int(m["pid"]) in sp.worker_pids()
            assert parse(m["msg"])["r"] == f"GET /ok/tcp{i} HTTP/1.1"
        assert len(rx.conns) == 1  # one connection for all the batches
        deadline = time.monotonic() + 20
        while (st := sp.stats()["log"])["sent"] < 5:
            assert time.monotonic() < deadline, st
            time.sleep(0.05)
        assert (st["sent"], st["dropped"]) == (5, 0)
    finally:
        rx.close()


def test_a_ring_sends_every_line_to_each_server_framed_as_it_says(start_splicer, tmp_path, origin):
    oc = Receiver()
    lf = Receiver(path=str(tmp_path / "syslog.sock"))
    try:
        port = free_port()
        cfg = http_config(port, [("o1", origin.port)], extra_defaults=HTTPLOG + "    log global\n",
                          extra_frontend="")
        cfg = cfg.replace("defaults\n", "ring central\n    description \"two log servers\"\n    format rfc5424\n"
                          f"    maxlen 300\n    size 64k\n    server a 127.0.0.1:{oc.port} log-proto octet-count\n"
                          f"    server b uxst@{tmp_path / 'syslog.sock'}\n\ndefaults\n", 1)
        cfg = cfg.replace("    tune.pipesize", "    log ring@central local0\n    tune.pipesize", 1)
        start_splicer(cfg, [port])
        paths = ["/ok/ring0", "/ok/ring1" + "x" * 400, "/ok/ring2"]
        for p in paths:
            assert get(port, p).endswith(b"ok")
        counted, lined = oc.wait(3, by_length), lf.wait(3, by_line)
        for i, (a, b) in enumerate(zip(counted, lined)):
            assert a + b"\n" == b  # the same message: without, and with, its line feed
            assert len(b) <= 300  # maxlen: cut, the newline kept
            m = RFC5424.match(b.decode())
            assert m is not None, b
            assert int(m["pri"]) == 16 * 8 + 6
            assert m["msg"].endswith(f"GET {paths[i]} HTTP/1.1\"") or i == 1
        assert "/ok/ring1xxx" in lined[1].decode() and not lined[1].decode().endswith('HTTP/1.1"\n')
    finally:
        oc.close()
        lf.close()


def test_a_server_not_there_yet_delays_the_lines_never_a_request(start_splicer, origin):
    rx_port = free_port()
    port = free_port()
    cfg = http_config(port, [("o1", origin.port)], extra_defaults=HTTPLOG,
                      extra_frontend=f"    log tcp@127.0.0.1:{rx_port} local0\n")
    sp = start_splicer(cfg, [port])
    t0 = time.monotonic()
    for i in range(3):  # nobody listens: the requests are served as ever
        assert get(port, f"/ok/early{i}").endswith(b"ok")
    assert time.monotonic() - t0 < 5
    time.sleep(0.3)
    rx = Receiver(port=rx_port)
    try:
        get(port, "/ok/later")
        msgs = rx.wait(4, by_line)  # the queued lines arrive once it listens (retried once a second)
        assert [parse(LOCAL.match(m.decode())["msg"])["r"] for m in msgs] == [
            "GET /ok/early0 HTTP/1.1", "GET /ok/early1 HTTP/1.1", "GET /ok/early2 HTTP/1.1", "GET /ok/later HTTP/1.1"]
        assert sp.stats()["log"]["dropped"] == 0
    finally:
        rx.close()


def test_a_server_that_goes_away_gets_the_rest_on_the_next_connection(start_splicer, origin):
    line_len = len("<128>Dec  3 08:09:14 splicer[12179]: ")  # about one message's header: the cut lands in one
    rx = Receiver(close_after=line_len)
    try:
        port = free_port()
        cfg = http_config(port, [("o1", origin.port)], extra_defaults=HTTPLOG,
                          extra_frontend=f"    log tcp@127.0.0.1:{rx.port} local0\n")
        sp = start_splicer(cfg, [port])
        assert get(port, "/ok/first").endswith(b"ok")
        deadline = time.monotonic() + 20
        while len(rx.conns) < 1 or rx.conns[0][-1:] != b"\n":  # the first line reached the first connection
            assert time.monotonic() < deadline, rx.conns
            time.sleep(0.02)
        time.sleep(0.3)  # the receiver closed it
        for i in range(4):
            assert get(port, f"/ok/next{i}").endswith(b"ok")
            time.sleep(0.05)
        msgs = rx.wait(5, by_line)
        assert len(rx.conns) >= 2  # made again
        got = [parse(LOCAL.match(m.decode())["msg"])["r"] for m in msgs]
        assert got == ["GET /ok/first HTTP/1.1"] + [f"GET /ok/next{i} HTTP/1.1" for i in range(4)]  # none twice
        for c in rx.conns:  # every connection holds whole messages only
            assert bytes(c).endswith(b"\n") or not c
        assert sp.stats()["log"]["dropped"] == 0
    finally:
        rx.close()
