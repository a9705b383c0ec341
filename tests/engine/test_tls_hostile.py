"""Hostile input and faults against the engine's TLS (native/src/tls.c, the TLS parts of
native/src/engine.c): bad first flights, old protocols, renegotiation, corrupt and cut
records, resets, crowds of stalled handshakes, heads too large or in one-byte records, big
copied bodies with slow readers, and the session's end (SPL_JOB_TLS_CLOSE).

Each test wants a clear end (a job's end and errno), within a bounded time, with no fd left
over (the autouse `no_fd_leak`), and the other connections served. The clients are Python's
ssl module on threads (an SSLSocket, or an SSLObject over memory BIOs when the records must
be cut, bent or refragmented before they go) and `openssl s_client` for what Python's ssl
cannot ask (a TLS 1.2 renegotiation, a TLS 1.3 key update).

The defects this file found when it was written are fixed, and its tests hold them: an
SPL_JOB_TLS_CLOSE freed the session and left the socket's registration plain, so a job after
it, or one still running on the socket, wrote plaintext where the peer expects records (or
read records as a plain head); and OpenSSL's socket BIO wrote with write(2), not
send(MSG_NOSIGNAL), so an inline engine in a process that does not ignore SIGPIPE died
writing to a gone TLS client.
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import hashlib
import os
import pathlib
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import warnings

import pytest

from splicer.engine import binding
from splicer.engine.binding import JOB_COPY, JOB_TLS_CLOSE, TlsContext
from splicer.engine.engine import JobEnd, ms

from .conftest import Net, engine, fd_count, recv_exact, run, send, settle
from .test_tls import read_n

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(not binding.TLS, reason="the engine was built without OpenSSL (libssl-dev)")]

REQ = b"GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n"
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
EPROTO, ECONNRESET, EMSGSIZE, ETIMEDOUT = errno.EPROTO, errno.ECONNRESET, errno.EMSGSIZE, errno.ETIMEDOUT
PROMPT = 3.0
"""Seconds within which an end that needs no timeout must come (the jobs' own timeouts are
longer: a hang shows as a TIMEOUT or as no completion at all, never as a pass)."""

HAS_OPENSSL_CLI = shutil.which("openssl") is not None


# ---- fixtures -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """An ECDSA P-256 certificate for localhost (site.pem: chain and key), and a chain of
    the same leaf followed by 40 copies of an RSA-4096 certificate (about 75 KB: a server
    flight much larger than a socket buffer)."""
    d = tmp_path_factory.mktemp("pki-hostile")

    def req(*args):
        subprocess.run(["openssl", "req", "-x509", "-nodes", "-days", "2", *args], check=True, capture_output=True)
    req("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", str(d / "site.key"),
        "-out", str(d / "site.crt"), "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost")
    req("-newkey", "rsa:4096", "-keyout", str(d / "filler.key"), "-out", str(d / "filler.crt"), "-subj", "/CN=filler")
    (d / "site.pem").write_bytes((d / "site.crt").read_bytes() + (d / "site.key").read_bytes())
    (d / "big.crt").write_bytes((d / "site.crt").read_bytes() + (d / "filler.crt").read_bytes() * 40)
    return d


@pytest.fixture(scope="module")
def site(pki):
    ctx = TlsContext(str(pki / "site.pem"))
    yield ctx
    ctx.close()


def client_ctx(pki, version: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    """A client context trusting the site's certificate, capped at `version` when given."""
    ctx = ssl.create_default_context(cafile=str(pki / "site.crt"))
    if version is not None:
        ctx.maximum_version = version
    return ctx


@pytest.fixture(autouse=True)
def no_fd_leak():
    """Every test ends with the process's fd count it started with (engine, sockets,
    subprocess pipes and the client threads' sockets all closed)."""
    gc.collect()
    before = fd_count()
    yield
    deadline = time.monotonic() + 3
    while True:
        gc.collect()
        now = fd_count()
        if now <= before or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert now <= before, f"fds leaked: {before} before the test, {now} after"


# ---- jobs ---------------------------------------------------------------------------------

def head_job(e, sock, done, first=20.0, total=20.0, limit=4000, tls=True):
    fd = sock.fileno()
    return e.submit(fd, -1, 0, 0, head_fd=fd, head_first_ms=ms(first), head_ms=ms(total), head_limit=limit,
                    src_gen=e.gen(sock), done=done, tls_ctx=1 if tls else 0)


def send_job(e, sock, data, done):
    return e.submit(-1, sock.fileno(), 0, 0, out=data, dst_gen=e.gen(sock), done=done)


def close_job(e, sock, done):
    return e.submit(sock.fileno(), -1, 0, JOB_TLS_CLOSE, src_gen=e.gen(sock), done=done)


class Timed(list):
    """A completion callback that keeps (completion, seconds since `t0`)."""

    def __init__(self, t0: float | None = None):
        super().__init__()
        self.t0 = time.monotonic() if t0 is None else t0

    def __call__(self, c):
        self.append((c, time.monotonic() - self.t0))


# ---- clients ------------------------------------------------------------------------------

def rec(rtype: int, payload: bytes, version: bytes = b"\x03\x03") -> bytes:
    """One TLS record, as is (no protection)."""
    return bytes([rtype]) + version + struct.pack(">H", len(payload)) + payload


def records(flight: bytes):
    """The records of a flight: (type, version, payload) each."""
    i = 0
    while i < len(flight):
        n = struct.unpack(">H", flight[i + 3:i + 5])[0]
        yield flight[i], flight[i + 1:i + 3], flight[i + 5:i + 5 + n]
        i += 5 + n


def one_byte_records(flight: bytes) -> bytes:
    """The flight's handshake records cut into records of one byte of payload each."""
    out = b""
    for rtype, version, payload in records(flight):
        if rtype == 0x16:
            out += b"".join(rec(rtype, payload[k:k + 1], version) for k in range(len(payload)))
        else:
            out += rec(rtype, payload, version)
    return out


def reset(sock: socket.socket) -> None:
    """Close with a RST (SO_LINGER 0)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def blocking(sock: socket.socket, timeout: float = 10) -> socket.socket:
    sock.setblocking(True)
    sock.settimeout(timeout)
    return sock


class Raw:
    """A TLS client as an SSLObject over memory BIOs on a blocking socket: what it would
    send can be cut, bent or refragmented before it goes."""

    def __init__(self, sock: socket.socket, ctx: ssl.SSLContext, server_name: str = "localhost"):
        self.sock = blocking(sock)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_hostname=server_name)

    def hello(self) -> bytes:
        """The first flight (the ClientHello's records), not sent."""
        with contextlib.suppress(ssl.SSLWantReadError):
            self.obj.do_handshake()
        return self.out.read()

    def handshake(self, bend=None, pause: float = 0) -> None:
        """The whole handshake; the first flight goes through bend(flight) when given, and
        the server's answer is read `pause` seconds after it went."""
        flight = self.hello()
        self.sock.sendall(bend(flight) if bend else flight)
        time.sleep(pause)
        while True:
            data = self.sock.recv(1 << 16)
            if not data:
                raise EOFError("the server ended the connection during the handshake")
            self.inc.write(data)
            try:
                self.obj.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                continue
            self._flush()
            return

    def _flush(self) -> None:
        data = self.out.read()
        if data:
            self.sock.sendall(data)

    def seal(self, data: bytes, size: int = 16384) -> bytes:
        """The records that carry `data`, `size` bytes of it each (not sent)."""
        for k in range(0, len(data), size):
            self.obj.write(data[k:k + size])
        return self.out.read()

    def recv_plain(self, n: int) -> bytes:
        got = b""
        while len(got) < n:
            try:
                got += self.obj.read(n - len(got))
            except ssl.SSLWantReadError:
                data = self.sock.recv(1 << 16)
                if not data:
                    raise EOFError(f"end of stream after {len(got)} of {n} bytes") from None
                self.inc.write(data)
        return got

    def outcome(self):
        """Reads until the session fails or ends: the SSLError, "eof" (end of stream
        without close_notify), "close_notify", or "timeout"."""
        try:
            while True:
                try:
                    if self.obj.read(1 << 16) == b"":
                        return "close_notify"
                except ssl.SSLWantReadError:
                    data = self.sock.recv(1 << 16)
                    if not data:
                        return "eof"
                    self.inc.write(data)
        except ssl.SSLZeroReturnError:
            return "close_notify"
        except ssl.SSLError as exc:
            return exc
        except TimeoutError:
            return "timeout"
        except ConnectionResetError:
            return "reset"


def raw_reply(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """What the server sent back to a raw client, until its end of stream, a reset or a
    quiet `timeout` (the test holds the server's socket open: no end of stream comes)."""
    blocking(sock, timeout)
    got = b""
    with contextlib.suppress(OSError):
        while True:
            b = sock.recv(1 << 16)
            if not b:
                break
            got += b
    return got


def tls_client(ctx: ssl.SSLContext, w: socket.socket) -> ssl.SSLSocket:
    return ctx.wrap_socket(blocking(w), server_hostname="localhost")


@contextlib.asynccontextmanager
async def served(site, client, **kw):
    """An engine with `site` as TLS context 1 and `client` on a thread: (engine, task)."""
    kw.setdefault("maxjobs", 16)
    kw.setdefault("bufsize", 16384)
    async with engine(**kw) as e:
        e.tls_context(0, site)
        yield e, asyncio.create_task(asyncio.to_thread(client))


# ---- the handshake: refusals ---------------------------------------------------------------

@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1], ids=["TLSv1.0", "TLSv1.1"])
def test_an_old_protocol_is_refused_with_an_alert(net, pki, site, version):
    """A ClientHello offering only TLS 1.0 or 1.1 (the floor is 1.2): EPROTO at once, the
    client gets a protocol_version alert, no head byte."""
    w, src = net.tcp()
    heads = Timed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ctx.maximum_version = version
    ctx.load_verify_locations(str(pki / "site.crt"))
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # let this OpenSSL speak TLS 1.0/1.1 at all

    def client():
        try:
            tls_client(ctx, w).close()
        except ssl.SSLError as exc:
            return exc
        return None

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, PROMPT, "the handshake's failure")
            return await asyncio.wait_for(cl, 10)

    exc = run(main())
    c, _ = heads[0]
    assert (c.end, c.errno, c.head) == (JobEnd.ERROR, EPROTO, None)
    assert isinstance(exc, ssl.SSLError) and "PROTOCOL_VERSION" in str(exc), exc


def _hello(version=None) -> bytes:
    ctx = ssl.create_default_context()
    if version is not None:
        ctx.maximum_version = version
    obj = ctx.wrap_bio(ssl.MemoryBIO(), out := ssl.MemoryBIO(), server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        obj.do_handshake()
    return out.read()


BAD_FIRST_FLIGHTS = {
    # (the bytes, whether the server answers with a plaintext alert record)
    "sslv2-hello": (bytes.fromhex("802e0100020015000000100700c0050080030080010080080080060040040080020080")
                    + bytes(16), True),
    "alert-first": (rec(0x15, b"\x02\x28"), True),
    "record-overflow": (b"\x16\x03\x01\x48\x01" + bytes(200), True),          # 18 433 bytes declared
    "16MiB-handshake-message": (rec(0x16, b"\x01\xff\xff\xff" + bytes(100), b"\x03\x01"), True),
    "appdata-first": (rec(0x17, bytes(40)), True),
    "ccs-before-hello": (rec(0x14, b"\x01") + _hello(), True),
    "unknown-record-type": (rec(0x99, b"hello"), True),
    "heartbeat": (rec(0x18, b"\x01\x40\x00" + b"x" * 16), True),
    "server-hello-from-a-client": (rec(0x16, b"\x02\x00\x00\x04\x03\x03\x00\x00", b"\x03\x01"), True),
    "bad-record-version": (b"\x16\x09\x09" + _hello()[3:], False),
    "plain-http": (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", False),  # OpenSSL: "http request", no alert
}


@pytest.mark.parametrize("case", list(BAD_FIRST_FLIGHTS))
def test_a_malformed_first_flight_fails_the_handshake_at_once(net, site, case):
    """Garbage where a ClientHello belongs: EPROTO within PROMPT (the first-byte timeout
    is 20 s), no head byte, and a fatal alert record back where OpenSSL sends one."""
    data, alerted = BAD_FIRST_FLIGHTS[case]
    w, src = net.tcp()
    heads = Timed()

    def client():
        blocking(w).sendall(data)
        return raw_reply(w, 1.0)

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, PROMPT, "the handshake's failure")
            return await asyncio.wait_for(cl, 10)

    reply = run(main())
    c, _ = heads[0]
    assert (c.end, c.errno, c.head) == (JobEnd.ERROR, EPROTO, None)
    if alerted:
        assert reply[:1] == b"\x15" and reply[5:6] == b"\x02", reply[:16]  # a fatal alert
    else:
        assert reply == b""


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["1.2", "1.3"])
def test_a_handshake_and_a_head_in_one_byte_records(net, pki, site, version):
    """The ClientHello cut into ~500 records of one byte each (legal: handshake messages may
    span records) and the request head in one record per byte: the handshake completes and
    the head arrives whole, then the response reaches the client."""
    w, src = net.tcp()
    heads, sent = Timed(), Timed()

    def client():
        raw = Raw(w, client_ctx(pki, version))
        raw.handshake(bend=one_byte_records)
        raw.sock.sendall(raw.seal(REQ, size=1))
        got = raw.recv_plain(len(RESP))
        w.close()
        return raw.obj.version(), got

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, 10, "the head")
            send_job(e, src, RESP, sent)
            return await asyncio.wait_for(cl, 10)

    got_version, got = run(main())
    assert [(c.end, c.head) for c, _ in heads] == [(JobEnd.DONE, REQ)]
    assert got_version == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
    assert got == RESP


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["1.2", "1.3"])
def test_a_server_flight_larger_than_the_socket_buffers(net, pki, version):
    """A 75 KB certificate chain through 8 KiB socket buffers, the client reading its answer
    only 0.3 s after sending its ClientHello: the engine's handshake waits for room
    (WANT_WRITE inside the head job's read) and is woken by the socket's EPOLLOUT."""
    big = TlsContext(str(pki / "big.crt"), str(pki / "site.key"))
    w, src = net.tcp(b_sndbuf=4096, a_rcvbuf=4096)
    heads = Timed()

    def client():
        raw = Raw(w, client_ctx(pki, version))
        raw.handshake(pause=0.3)
        raw.sock.sendall(raw.seal(REQ))
        w.close()

    try:
        async def main():
            async with served(big, client) as (e, cl):
                head_job(e, src, heads)
                await settle(lambda: heads, 10, "the head")
                await asyncio.wait_for(cl, 10)
        run(main())
    finally:
        big.close()
    assert [(c.end, c.head) for c, _ in heads] == [(JobEnd.DONE, REQ)]


# ---- renegotiation and key updates (openssl s_client) -----------------------------------

@contextlib.contextmanager
def s_client(pki, *args):
    """`openssl s_client` connected to a listener of ours: (its Popen, our socket), its
    output gathered by a thread into Popen.output (a bytearray)."""
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.bind(("127.0.0.1", 0))
    lst.listen(1)
    lst.settimeout(10)
    port = lst.getsockname()[1]
    p = subprocess.Popen(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
                          "-CAfile", str(pki / "site.crt"), *args],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    p.output = bytearray()

    def gather():
        for chunk in iter(lambda: p.stdout.read1(4096), b""):
            p.output += chunk
    reader = threading.Thread(target=gather, daemon=True)
    reader.start()
    src = None
    try:
        src, _ = lst.accept()
        lst.close()
        src.setblocking(False)
        yield p, src
    finally:
        lst.close()
        p.kill()
        p.wait(10)
        reader.join(10)
        p.stdin.close()
        p.stdout.close()
        if src is not None:
            src.close()


def typed(p, data: bytes) -> None:
    p.stdin.write(data)
    p.stdin.flush()


@pytest.mark.skipif(not HAS_OPENSSL_CLI, reason="no openssl command")
def test_a_tls12_renegotiation_is_refused_promptly(pki, site):
    """A TLS 1.2 client asks to renegotiate (s_client's R) after a first request went
    through: the server refuses (SSL_OP_NO_RENEGOTIATION: a no_renegotiation alert, which
    this client takes as fatal), and the next head job ends EPROTO at once, not at its
    20 s timeout."""
    heads = Timed()

    async def main(p, src):
        async with engine(maxjobs=8, bufsize=4096) as e:
            e.tls_context(0, site)
            head_job(e, src, heads)
            typed(p, REQ)
            await settle(lambda: heads, 10, "the first head")
            head_job(e, src, heads, tls=False)
            await asyncio.sleep(0.2)
            heads.t0 = time.monotonic()
            typed(p, b"R\n")
            await settle(lambda: len(heads) == 2, PROMPT, "the refusal")

    with s_client(pki, "-tls1_2") as (p, src):
        run(main(p, src))
        assert [(c.end, c.head) for c, _ in heads[:1]] == [(JobEnd.DONE, REQ)]
        c, took = heads[1]
        assert (c.end, c.errno, c.head) == (JobEnd.ERROR, EPROTO, None)
        assert took < PROMPT
        out = bytes(p.output)
    assert b"RENEGOTIATING" in out and b"no renegotiation" in out, out[-600:]


@pytest.mark.skipif(not HAS_OPENSSL_CLI, reason="no openssl command")
def test_a_tls13_key_update_is_answered_and_the_session_goes_on(pki, site):
    """A TLS 1.3 client sends a KeyUpdate asking for the server's (s_client's K) between two
    requests: the second head is read with the new keys and the response, sent under the
    server's updated keys, reaches the client."""
    heads, sent = Timed(), Timed()
    resp2 = RESP.replace(b"hello", b"world")

    async def main(p, src):
        async with engine(maxjobs=8, bufsize=4096) as e:
            e.tls_context(0, site)
            head_job(e, src, heads)
            typed(p, REQ)
            await settle(lambda: heads, 10, "the first head")
            send_job(e, src, RESP, sent)
            await settle(lambda: b"hello" in p.output, 10, "the first response at the client")
            head_job(e, src, heads, tls=False)
            typed(p, b"K\n")
            await asyncio.sleep(0.2)
            typed(p, REQ.replace(b"/a", b"/b"))
            await settle(lambda: len(heads) == 2, 10, "the second head")
            send_job(e, src, resp2, sent)
            await settle(lambda: b"world" in p.output, 10, "the second response at the client")

    with s_client(pki, "-tls1_3") as (p, src):
        run(main(p, src))
        out = bytes(p.output)
    assert [(c.end, c.head) for c, _ in heads] == [(JobEnd.DONE, REQ), (JobEnd.DONE, REQ.replace(b"/a", b"/b"))]
    assert [c.end for c, _ in sent] == [JobEnd.DONE] * 2
    assert b"KEYUPDATE" in out, out[-600:]


# ---- bad records after the handshake ------------------------------------------------------

def _flip(records_: bytes) -> bytes:
    """The records with one byte of the last one's ciphertext flipped (a bad MAC/tag)."""
    b = bytearray(records_)
    b[-3] ^= 0x40
    return bytes(b)


AFTER_HANDSHAKE = {
    "bad-mac": lambda raw, data: _flip(raw.seal(data)),
    "record-overflow": lambda raw, data: b"\x17\x03\x03\x48\x01" + os.urandom(300),
    "plaintext-handshake": lambda raw, data: rec(0x16, b"\x01\x00\x00\x00"),
    "plaintext-appdata": lambda raw, data: rec(0x17, data),
    "heartbeat": lambda raw, data: rec(0x18, b"\x01\x40\x00" + b"x" * 16),
    "unknown-type": lambda raw, data: rec(0x42, os.urandom(32)),
}


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["1.2", "1.3"])
@pytest.mark.parametrize("case", list(AFTER_HANDSHAKE))
def test_a_bad_record_mid_head_ends_the_job_eproto(net, pki, site, case, version):
    """After the handshake, a valid record with the head's first line, then a bad record
    in place of the rest: EPROTO at once (the head timeouts are 20 s), the head's bytes read
    so far with the completion, a fatal alert to the client."""
    w, src = net.tcp()
    heads = Timed()
    first, rest = REQ[:16], REQ[16:]

    def client():
        raw = Raw(w, client_ctx(pki, version))
        raw.handshake()
        raw.sock.sendall(raw.seal(first))
        time.sleep(0.1)  # the first line is read on its own
        raw.sock.sendall(AFTER_HANDSHAKE[case](raw, rest))
        raw.sock.settimeout(3)
        got = raw.outcome()
        w.close()
        return got

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, 10, "the job's end")
            return await asyncio.wait_for(cl, 10)

    outcome = run(main())
    c, took = heads[0]
    assert (c.end, c.errno, c.head) == (JobEnd.ERROR, EPROTO, first)
    assert took < 5
    assert isinstance(outcome, ssl.SSLError) and "ALERT" in str(outcome), outcome


@pytest.mark.parametrize("then", ["eof", "held-open"])
def test_a_record_cut_short(net, pki, site, then):
    """The head's second record cut after 10 of its bytes. Then an end of stream: the end of
    the session (SSL_OP_IGNORE_UNEXPECTED_EOF: PEER_CLOSED, the first line read); or the
    connection held open: the head's own timeout (0.5 s from its first byte), no hang."""
    w, src = net.tcp()
    heads = Timed()
    first, rest = REQ[:16], REQ[16:]
    done = threading.Event()

    def client():
        raw = Raw(w, client_ctx(pki))
        raw.handshake()
        raw.sock.sendall(raw.seal(first))
        time.sleep(0.1)
        raw.sock.sendall(raw.seal(rest)[:10])
        if then == "eof":
            raw.sock.shutdown(socket.SHUT_WR)
        done.wait(10)
        w.close()

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads, first=20, total=0.5)
            await settle(lambda: heads, 10, "the job's end")
            done.set()
            await asyncio.wait_for(cl, 10)

    run(main())
    c, took = heads[0]
    if then == "eof":
        assert (c.end, c.head) == (JobEnd.PEER_CLOSED, first)
        assert took < PROMPT
    else:
        assert (c.end, c.errno, c.head) == (JobEnd.TIMEOUT, ETIMEDOUT, first)
        assert 0.45 < took < 0.5 + PROMPT


def test_a_bad_record_mid_body_ends_the_copy_eproto(net, pki, site):
    """A request body copied TLS -> plain: 100 000 good bytes, then a record with a bad
    tag. The copy ends ERROR EPROTO on its src side having forwarded exactly the good
    bytes, which the server got intact."""
    w, src = net.tcp()
    origin, srv = net.tcp()
    good = os.urandom(100_000)
    n = len(good) + 50_000
    head = b"POST /u HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % n
    heads, jobs = Timed(), Timed()
    done = threading.Event()

    def client():
        raw = Raw(w, client_ctx(pki))
        raw.handshake()
        raw.sock.sendall(raw.seal(head))
        time.sleep(0.05)
        raw.sock.sendall(raw.seal(good))
        time.sleep(0.1)
        raw.sock.sendall(_flip(raw.seal(os.urandom(1000))))
        done.wait(10)
        w.close()

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, 10, "the head")
            e.submit(src.fileno(), srv.fileno(), n, JOB_COPY, src_idle_ms=20_000, src_gen=e.gen(src),
                     dst_gen=e.gen(srv), done=jobs)
            got = await asyncio.wait_for(recv_exact(origin, len(good)), 10)
            await settle(lambda: jobs, PROMPT, "the copy's end")
            done.set()
            await asyncio.wait_for(cl, 10)
            return got

    got = run(main())
    assert heads[0][0].head == head
    c, _ = jobs[0]
    assert (c.end, c.errno, c.side, c.bytes_fwd) == (JobEnd.ERROR, EPROTO, "src", len(good))
    assert got == good


# ---- resets ------------------------------------------------------------------------------

@pytest.mark.parametrize("when", ["partial-hello", "after-server-flight", "mid-head"])
def test_a_reset_ends_the_job_at_once(net, pki, site, when):
    """The client resets (SO_LINGER 0) with a ClientHello half sent, once it has the
    server's flight, or with half a head sent: the head job ends at once (ERROR ECONNRESET,
    or PEER_CLOSED), far from its 20 s timeouts; a good client next to it is served."""
    w, src = net.tcp()
    gw, gsrc = net.tcp()
    heads, good = Timed(), Timed()
    reset_at = []

    def client():
        raw = Raw(w, client_ctx(pki))
        if when == "partial-hello":
            raw.sock.sendall(raw.hello()[:60])
        elif when == "after-server-flight":
            raw.sock.sendall(raw.hello())
            assert raw.sock.recv(1 << 16)[:1] == b"\x16"  # the ServerHello's record
        else:
            raw.handshake()
            raw.sock.sendall(raw.seal(REQ[:20]))
        time.sleep(0.2)  # the engine has read it all
        reset_at.append(time.monotonic() - heads.t0)
        reset(w)

    def good_client():
        tw = tls_client(client_ctx(pki), gw)
        tw.sendall(REQ)
        got = read_n(tw, len(RESP))
        tw.close()
        return got

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            head_job(e, gsrc, good)
            g = asyncio.create_task(asyncio.to_thread(good_client))
            await asyncio.wait_for(cl, 10)
            await settle(lambda: heads, PROMPT, "the job's end")
            await settle(lambda: good, 10, "the good head")
            send_job(e, gsrc, RESP, lambda c: None)
            return await asyncio.wait_for(g, 10)

    assert run(main()) == RESP
    c, took = heads[0]
    assert c.end == JobEnd.PEER_CLOSED or (c.end, c.errno) == (JobEnd.ERROR, ECONNRESET), c
    assert reset_at[0] - 0.01 < took < reset_at[0] + PROMPT  # ended by the reset, at once
    assert c.head == (REQ[:20] if when == "mid-head" else None)
    assert good[0][0].head == REQ


def test_a_reset_during_a_copy_to_a_slow_tls_client(net, pki, site):
    """A 4 MiB response copied plain -> TLS to a client that reads 64 KiB and then resets:
    the copy ends ERROR on its dst side (ECONNRESET or EPIPE) at once, not at its 20 s idle
    timeout."""
    w, src = net.tcp(a_rcvbuf=16384)
    origin, srv = net.tcp()
    down = os.urandom(4 << 20)
    heads, jobs = Timed(), Timed()

    def client():
        tw = tls_client(client_ctx(pki), w)
        tw.sendall(REQ)
        read_n(tw, 65536)
        time.sleep(0.2)
        tw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        tw.close()

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, 10, "the head")
            writer = asyncio.create_task(send(origin, down))
            e.submit(srv.fileno(), src.fileno(), len(down), JOB_COPY, dst_idle_ms=20_000, src_idle_ms=20_000,
                     src_gen=e.gen(srv), dst_gen=e.gen(src), done=jobs)
            await asyncio.wait_for(cl, 10)
            jobs.t0 = time.monotonic()
            await settle(lambda: jobs, PROMPT, "the copy's end")
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await writer

    run(main())
    c, _ = jobs[0]
    assert (c.end, c.side) == (JobEnd.ERROR, "dst") and c.errno in (ECONNRESET, errno.EPIPE), c
    assert 65536 <= c.bytes_fwd < len(down)


# ---- crowds and slow handshakes ------------------------------------------------------------

def test_a_crowd_of_stalled_and_hostile_handshakes_does_not_delay_a_good_client(pki, site):
    """200 connections that send nothing (100) or a third of a ClientHello (100), 50 that
    send garbage and 50 that reset mid-handshake, then one good client: the good one is
    served at once (head-of-line freedom), the garbage ends EPROTO and the resets
    ECONNRESET/PEER_CLOSED at once, the stalled ones end TIMEOUT at their 3 s first-byte
    timeout, not before; every fd is freed."""
    net = Net()
    first = 3.0
    stalled = Timed()
    hostile = Timed()
    good = Timed()
    try:
        pairs = net.tcp(301)
        hello_third = _hello()[:170]

        def good_client(gw):
            tw = tls_client(client_ctx(pki), gw)
            tw.sendall(REQ)
            got = read_n(tw, len(RESP))
            tw.close()
            return got

        async def main():
            async with engine(maxjobs=512, bufsize=4096) as e:
                e.tls_context(0, site)
                t0 = time.monotonic()
                stalled.t0 = hostile.t0 = good.t0 = t0
                for k, (w, src) in enumerate(pairs[:200]):
                    if k % 2:
                        w.send(hello_third)
                    head_job(e, src, stalled, first=first)
                for w, src in pairs[200:250]:
                    w.send(b"\x16\x03\x01\x00\x05" + b"\xff" * 5)
                    head_job(e, src, hostile, first=first)
                for w, src in pairs[250:300]:
                    w.send(hello_third)
                    head_job(e, src, hostile, first=first)
                await asyncio.sleep(0.1)
                for w, _ in pairs[250:300]:
                    reset(w)
                gw, gsrc = pairs[300]
                head_job(e, gsrc, good, first=first)
                g = asyncio.create_task(asyncio.to_thread(good_client, gw))
                await settle(lambda: good, first - 0.5, "the good client's head")
                send_job(e, gsrc, RESP, lambda c: None)
                got = await asyncio.wait_for(g, first)
                served_at = time.monotonic() - t0
                await settle(lambda: len(hostile) == 100, PROMPT, "the hostile ones' ends")
                await settle(lambda: len(stalled) == 200, first + 5, "the stalled ones' timeouts")
                return got, served_at

        got, served_at = run(main())
    finally:
        net.close_all()
    assert got == RESP
    assert good[0][0].head == REQ
    assert served_at < first, served_at
    assert all(t < first for _, t in hostile)
    garbage = [c for c, _ in hostile if c.end == JobEnd.ERROR and c.errno == EPROTO]
    resets = [c for c, _ in hostile if c.end == JobEnd.PEER_CLOSED or (c.end, c.errno) == (JobEnd.ERROR, ECONNRESET)]
    assert (len(garbage), len(resets)) == (50, 50), [c for c, _ in hostile][:5]
    assert {(c.end, c.errno) for c, _ in stalled} == {(JobEnd.TIMEOUT, ETIMEDOUT)}
    assert min(t for _, t in stalled) >= first - 0.05
    assert max(t for _, t in stalled) < first + 5


def test_a_dribbled_client_hello_is_cut_at_the_first_byte_timeout(net, site):
    """A ClientHello sent a byte every 50 ms: handshake progress is no head byte, so the
    first-byte timeout (1 s) still ends the job, whatever trickles in."""
    w, src = net.tcp()
    heads = Timed()
    stop = threading.Event()
    hello = _hello()

    def client():
        for b in hello:
            if stop.wait(0.05):
                break
            with contextlib.suppress(OSError):
                w.send(bytes([b]))

    async def main():
        async with served(site, client) as (e, cl):
            heads.t0 = time.monotonic()
            head_job(e, src, heads, first=1.0, total=20)
            await settle(lambda: heads, 1.0 + PROMPT, "the timeout")
            stop.set()
            await asyncio.wait_for(cl, 10)

    run(main())
    c, took = heads[0]
    assert (c.end, c.errno, c.head) == (JobEnd.TIMEOUT, ETIMEDOUT, None)
    assert 0.95 < took < 1.0 + PROMPT


# ---- heads --------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [16384, 1], ids=["one-record", "one-byte-records"])
def test_a_head_larger_than_the_limit_is_too_large(net, pki, site, size):
    """5 000 bytes of head without its end, against a 4 000-byte limit, in one record or
    one record per byte: TOO_LARGE (EMSGSIZE) as soon as the limit is passed."""
    w, src = net.tcp()
    heads = Timed()
    big = b"GET /" + b"x" * 4995
    done = threading.Event()

    def client():
        raw = Raw(w, client_ctx(pki))
        raw.handshake()
        raw.sock.sendall(raw.seal(big, size=size))
        done.wait(10)
        w.close()

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads, limit=4000)
            await settle(lambda: heads, 10, "the job's end")
            done.set()
            await asyncio.wait_for(cl, 10)

    run(main())
    c, _ = heads[0]
    assert (c.end, c.errno) == (JobEnd.TOO_LARGE, EMSGSIZE)
    assert c.first_line  # not even the request line ended within the limit


def test_one_byte_records_of_two_pipelined_heads(net, pki, site):
    """Two requests, each byte its own record, in one burst: two head jobs read them
    exactly (the second from the records OpenSSL read ahead), nothing lost or merged."""
    w, src = net.tcp()
    heads = Timed()
    two = REQ + REQ.replace(b"/a", b"/b")

    done = threading.Event()

    def client():
        raw = Raw(w, client_ctx(pki))
        raw.handshake()
        raw.sock.sendall(raw.seal(two, size=1))
        done.wait(10)  # no end of stream to wake the engine meanwhile
        w.close()

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, 10, "the first head")
            await asyncio.sleep(0.2)  # every record is in (OpenSSL's read-ahead holds them)
            head_job(e, src, heads, tls=False)
            await settle(lambda: len(heads) == 2, PROMPT, "the second head, with no new event")
            done.set()
            await asyncio.wait_for(cl, 10)

    run(main())
    assert [(c.end, c.head) for c, _ in heads] == [(JobEnd.DONE, REQ), (JobEnd.DONE, REQ.replace(b"/a", b"/b"))]


# ---- big bodies, slow readers -------------------------------------------------------------

def test_ten_mib_each_way_byte_exact_with_slow_readers(net, pki, site):
    """10 MiB copied TLS -> plain to a server reading slowly, then 10 MiB plain -> TLS to a
    client reading 16 KiB every millisecond through a 16 KiB receive buffer: every byte,
    in order, both ways; each job DONE with bytes_fwd the body's length."""
    n = 10 << 20
    up, down = os.urandom(n), os.urandom(n)
    w, src = net.tcp(a_rcvbuf=16384)
    origin, srv = net.tcp(a_rcvbuf=32768)
    head = b"POST /u HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % n
    rhead = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n
    heads, jobs = Timed(), Timed()

    def client():
        tw = tls_client(client_ctx(pki), w)
        tw.sendall(head + up)
        got = bytearray()
        want = len(rhead) + n
        while len(got) < want:
            b = tw.recv(min(16384, want - len(got)))
            assert b, f"end of stream after {len(got)}"
            got += b
            time.sleep(0.001)
        tw.close()
        return hashlib.sha256(bytes(got)).digest()

    async def slow_read(sock, count):
        loop = asyncio.get_running_loop()
        h, total = hashlib.sha256(), 0
        while total < count:
            b = await loop.sock_recv(sock, min(32768, count - total))
            assert b
            h.update(b)
            total += len(b)
            await asyncio.sleep(0.001)
        return h.digest()

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, 10, "the head")
            e.submit(src.fileno(), srv.fileno(), n, JOB_COPY, src_idle_ms=20_000, dst_idle_ms=20_000,
                     src_gen=e.gen(src), dst_gen=e.gen(srv), done=jobs)
            got_up = await asyncio.wait_for(slow_read(origin, n), 60)
            await settle(lambda: jobs, 10, "the upload's job")
            writer = asyncio.create_task(send(origin, down))
            e.submit(srv.fileno(), src.fileno(), n, JOB_COPY, out=rhead, src_idle_ms=20_000, dst_idle_ms=20_000,
                     src_gen=e.gen(srv), dst_gen=e.gen(src), done=jobs)
            await settle(lambda: len(jobs) == 2, 60, "the download's job")
            await writer
            return got_up, await asyncio.wait_for(cl, 10)

    got_up, got_down = run(main(), timeout=100)
    assert heads[0][0].head == head
    assert [(c.end, c.bytes_fwd) for c, _ in jobs] == [(JobEnd.DONE, n), (JobEnd.DONE, n)]
    assert got_up == hashlib.sha256(up).digest()
    assert got_down == hashlib.sha256(rhead + down).digest()


# ---- the end of a session ---------------------------------------------------------------

def test_a_send_after_tls_close_writes_no_plaintext(net, pki, site):
    """After JOB_TLS_CLOSE (the client got close_notify) a send job on the same socket is
    refused (an error, nothing written), not sent in clear."""
    w, src = net.tcp()
    heads, jobs = Timed(), Timed()
    secret = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nSECRET"

    def client():
        raw = Raw(w, client_ctx(pki))
        raw.handshake()
        raw.sock.sendall(raw.seal(REQ))
        raw.sock.settimeout(5)
        end = raw.outcome()  # the server's close_notify
        return end, raw.inc.read() + raw_reply(w, 1.0)  # then what comes on the socket

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, 10, "the head")
            close_job(e, src, jobs)
            await settle(lambda: jobs, PROMPT, "the close")
            await asyncio.sleep(0.2)
            send_job(e, src, secret, jobs)
            await settle(lambda: len(jobs) == 2, PROMPT, "the send")
            return await asyncio.wait_for(cl, 10)

    end, after = run(main())
    assert end == "close_notify"
    assert jobs[0][0].end == JobEnd.DONE
    assert b"SECRET" not in after, f"plaintext after close_notify: {after!r}"
    assert jobs[1][0].end == JobEnd.ERROR


def test_tls_close_under_a_running_copy_leaks_no_plaintext(net, pki, site):
    """A 4 MiB response copied plain -> TLS to a client that is not reading yet, and a
    JOB_TLS_CLOSE for the socket meanwhile: the close is refused (EBUSY) or the copy ended,
    and no body byte goes in clear on the wire."""
    w, src = net.tcp(a_rcvbuf=16384)
    origin, srv = net.tcp()
    token = b"PLAINTEXT-BODY-"
    down = token * ((4 << 20) // len(token))
    heads, jobs = Timed(), Timed()
    go = threading.Event()

    def client():
        raw = Raw(w, client_ctx(pki))
        raw.handshake()
        raw.sock.sendall(raw.seal(REQ))
        go.wait(10)
        return raw_reply(w, 1.0)

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads)
            await settle(lambda: heads, 10, "the head")
            writer = asyncio.create_task(send(origin, down))
            e.submit(srv.fileno(), src.fileno(), len(down), JOB_COPY, dst_idle_ms=5000, src_idle_ms=5000,
                     src_gen=e.gen(srv), dst_gen=e.gen(src), done=jobs)
            await asyncio.sleep(0.2)  # the client's buffers are full: the copy waits for room
            close_job(e, src, jobs)
            await asyncio.sleep(0.1)
            go.set()
            await settle(lambda: len(jobs) == 2, 10, "both jobs' ends")
            got = await asyncio.wait_for(cl, 10)
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await writer
            return got

    wire = run(main())
    assert token not in wire, f"{wire.count(token)} body pieces in clear on the wire"


def test_tls_close_under_a_waiting_head_job_reads_no_records_as_a_head(net, pki, site):
    """A head job waits on a handshaken session; a JOB_TLS_CLOSE for the socket comes;
    then the client sends a request record: the close is refused (or the waiting job
    ended), and no record's bytes are taken for a head."""
    w, src = net.tcp()
    heads, jobs = Timed(), Timed()
    go = threading.Event()

    def client():
        raw = Raw(w, client_ctx(pki))
        raw.handshake()
        go.wait(10)
        raw.sock.sendall(raw.seal(REQ))
        raw.sock.settimeout(2)
        return raw.outcome()

    async def main():
        async with served(site, client) as (e, cl):
            head_job(e, src, heads, first=1.0, total=1.0)
            await asyncio.sleep(0.3)  # the handshake is through, the job waits for a head
            close_job(e, src, jobs)
            await settle(lambda: jobs, PROMPT, "the close")
            go.set()
            await settle(lambda: heads, 1.0 + PROMPT, "the head job's end")
            return await asyncio.wait_for(cl, 10)

    run(main())
    c, _ = heads[0]
    assert not (c.head or b"").startswith(b"\x17\x03\x03"), f"a TLS record read as a plain head: {c}"


def renumbered(net, sock: socket.socket, fd: int, old: socket.socket) -> socket.socket:
    """`sock` moved to fd number `fd`, which `old` holds until now (closed here)."""
    old.close()
    if sock.fileno() == fd:
        return sock
    os.dup2(sock.fileno(), fd)
    sock.close()
    moved = socket.socket(fileno=fd)
    moved.setblocking(False)
    net.made.append(moved)
    return moved


def test_a_stale_session_is_not_inherited_by_a_reused_fd_number(net, pki, site):
    """A TLS socket closed by its owner without JOB_TLS_CLOSE, and a new plain socket that
    gets its fd number: a plain head job on the new one reads plaintext (the old session
    is dropped with the old generation), and a TLS head job on a third socket with that
    number makes a fresh session that completes its handshake."""
    heads = Timed()
    w1, src1 = net.tcp()
    plain_req = REQ.replace(b"/a", b"/plain")

    def tls_then(w):
        tw = tls_client(client_ctx(pki), w)
        tw.sendall(REQ)
        time.sleep(0.1)
        tw.close()

    async def main():
        async with engine(maxjobs=16, bufsize=4096) as e:
            e.tls_context(0, site)
            cl = asyncio.create_task(asyncio.to_thread(tls_then, w1))
            head_job(e, src1, heads)
            await settle(lambda: heads, 10, "the TLS head")
            await asyncio.wait_for(cl, 10)
            fd = src1.fileno()
            w2, src2 = net.tcp()
            src2 = renumbered(net, src2, fd, src1)
            await send(w2, plain_req)
            head_job(e, src2, heads, tls=False)
            await settle(lambda: len(heads) == 2, PROMPT, "the plain head")
            w3, src3 = net.tcp()
            src3 = renumbered(net, src3, fd, src2)
            cl = asyncio.create_task(asyncio.to_thread(tls_then, w3))
            head_job(e, src3, heads)
            await settle(lambda: len(heads) == 3, 10, "the new TLS head")
            await asyncio.wait_for(cl, 10)

    run(main())
    assert [(c.end, c.head) for c, _ in heads] == [(JobEnd.DONE, REQ), (JobEnd.DONE, plain_req), (JobEnd.DONE, REQ)]


def test_closing_the_engine_with_sessions_in_every_state(pki, site):
    """40 sessions: before any byte, mid-handshake, handshaken and idle (a head job
    waiting), handshaken with a head read and no job, closed with JOB_TLS_CLOSE, and failed
    (EPROTO); the engine closed under them: pending jobs end CANCELLED, the process keeps
    running, and once the sockets close no fd is left (checked by no_fd_leak)."""
    net = Net()
    ends = Timed()
    try:
        pairs = net.tcp(40)
        hello = _hello()

        def handshake_and(w, data):
            tw = tls_client(client_ctx(pki), w)
            if data:
                tw.sendall(data)
            return tw

        async def main():
            tws = []
            async with engine(maxjobs=64, bufsize=4096) as e:
                e.tls_context(0, site)
                for k, (w, src) in enumerate(pairs):
                    kind = k % 5
                    if kind == 1:
                        w.send(hello[:100])
                    elif kind == 4:
                        w.send(b"\x16\x03\x01\x00\x05" + b"\xff" * 5)
                    head_job(e, src, ends)
                threads = [asyncio.to_thread(handshake_and, w, REQ if k % 5 in (3,) else b"")
                           for k, (w, _) in enumerate(pairs) if k % 5 in (2, 3)]
                tws = await asyncio.wait_for(asyncio.gather(*threads), 10)
                await settle(lambda: len(ends) >= 16, 10, "the heads and the failures")
                for k, (_, src) in enumerate(pairs):
                    if k % 5 == 3:
                        close_job(e, src, ends)
                await settle(lambda: len(ends) == 24, 10, "the closes")
            # the engine is closed here
            for tw in tws:
                tw.close()
            return tws

        run(main())
    finally:
        net.close_all()
    got = sorted((c.end.name, c.errno) for c, _ in ends)
    assert got.count(("ERROR", EPROTO)) == 8
    assert got.count(("DONE", 0)) == 16  # 8 heads, 8 closes
    assert got.count(("CANCELLED", errno.ECANCELED)) == 24  # the jobs pending at the close


SIGPIPE_SCRIPT = r"""
import asyncio, signal, socket, ssl, sys, time
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as a C embedding or a shell pipeline leaves it
from splicer.engine.binding import TlsContext
from splicer.engine.engine import Engine
inline, pem, crt = sys.argv[1] == "inline", sys.argv[2], sys.argv[3]

async def main():
    lst = socket.create_server(("127.0.0.1", 0))
    w = socket.create_connection(lst.getsockname())
    src, _ = lst.accept()
    src.setblocking(False)
    site = TlsContext(pem)
    e = Engine(asyncio.get_running_loop(), maxjobs=8, bufsize=4096, inline=inline)
    e.tls_context(0, site)
    done = []

    def client():
        w.settimeout(5)
        tw = ssl.create_default_context(cafile=crt).wrap_socket(w, server_hostname="localhost")
        tw.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.2)
        tw.close()  # gone, with the server's session tickets unread: a reset
    cl = asyncio.create_task(asyncio.to_thread(client))
    fd = src.fileno()
    e.submit(fd, -1, 0, 0, head_fd=fd, head_first_ms=5000, head_ms=5000, head_limit=4000, src_gen=e.gen(src),
             done=done.append, tls_ctx=1)
    await cl
    await asyncio.sleep(0.3)
    for k in range(3):  # the first send meets the reset, the next ones a gone peer (EPIPE)
        e.submit(-1, fd, 0, 0, out=b"x" * 4000, dst_gen=e.gen(src), done=done.append)
        t = time.monotonic() + 5
        while len(done) < k + 2 and time.monotonic() < t:
            await asyncio.sleep(0.01)
    print("alive", [(c.end.name, c.errno) for c in done[1:]], flush=True)
    e.close()

asyncio.run(main())
"""


def test_a_send_to_a_gone_tls_client_raises_no_sigpipe(pki, engine_mode, request, tmp_path):
    """Sends to a TLS client that went away, in a process whose SIGPIPE is not ignored:
    the sends end ERROR (ECONNRESET, EPIPE) and the process lives, as with the engine's
    plain send(2) (MSG_NOSIGNAL). On the engine thread every signal is blocked, so only the
    inline engine (the caller's thread) shows it."""
    script = tmp_path / "sigpipe.py"
    script.write_text(SIGPIPE_SCRIPT)
    root = pathlib.Path(__file__).resolve().parents[2]
    p = subprocess.run([sys.executable, str(script), engine_mode, str(pki / "site.pem"), str(pki / "site.crt")],
                       cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
                       timeout=60, check=False)
    assert p.returncode == 0, f"rc {p.returncode}: {p.stdout} {p.stderr[-800:]}"
    assert "alive" in p.stdout and "ERROR" in p.stdout, p.stdout
