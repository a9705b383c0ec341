"""TLS in the engine (native/src/tls.c): the server side of a client's session, its
handshake driven by the first head job, every read and write of the socket through it.

Real loopback TCP pairs; the client is Python's ssl module on a thread of its own (a
blocking socket with a timeout), trusting the test certificate; every wait is bounded.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import socket
import ssl
import subprocess
import threading

import pytest

from splicer.engine import binding
from splicer.engine.binding import JOB_COPY, JOB_DISCARD, JOB_TLS_CLOSE, JOB_TUNNEL, TlsContext
from splicer.engine.engine import JobEnd, ms
from splicer.errors import TlsError

from .conftest import engine, recv_exact, recv_to_eof, run, send, settle

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(not binding.TLS, reason="the engine was built without OpenSSL (libssl-dev)")]

REQ = b"GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n"
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """An ECDSA P-256 certificate for localhost (its key in the same PEM, as haproxy's
    `crt` reads it), a key of another certificate, and a client context trusting the first."""
    d = tmp_path_factory.mktemp("pki")

    def make(name):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.crt"), "-days", "2",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                       check=True, capture_output=True)
        (d / f"{name}.pem").write_bytes((d / f"{name}.crt").read_bytes() + (d / f"{name}.key").read_bytes())
    make("site")
    make("other")
    client = ssl.create_default_context(cafile=str(d / "site.crt"))
    return d, client


@pytest.fixture(scope="module")
def farm_certs(tmp_path_factory):
    """Three certificates for SNI, each a context: the default (CN localhost), a.example (a
    DNS subjectAltName) and *.w.example (a wildcard); and their folder (all.crt: the three)."""
    d = tmp_path_factory.mktemp("sni")
    for name, cn, san in (("dflt", "localhost", None), ("a", "a.example", "DNS:a.example"),
                          ("w", "w-wild", "DNS:*.w.example")):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.crt"), "-days", "2",
                        "-subj", f"/CN={cn}"] + (["-addext", f"subjectAltName={san}"] if san else []),
                       check=True, capture_output=True)
    (d / "all.crt").write_bytes(b"".join((d / f"{n}.crt").read_bytes() for n in ("dflt", "a", "w")))
    ctxs = {n: TlsContext(str(d / f"{n}.crt"), str(d / f"{n}.key")) for n in ("dflt", "a", "w")}
    yield ctxs, d
    for c in ctxs.values():
        c.close()


@pytest.fixture(scope="module")
def site(pki):
    ctx = TlsContext(str(pki[0] / "site.pem"))
    yield ctx
    ctx.close()


@contextlib.asynccontextmanager
async def serving(site, client, **kw):
    """An engine with `site` as TLS context 1, and `client` running on a thread: yields
    (engine, the client's task)."""
    async with engine(**kw) as e:
        e.tls_context(0, site)
        yield e, asyncio.create_task(asyncio.to_thread(client))


def head_job(e, sock, done, first=5.0, tls=True):
    fd = sock.fileno()
    return e.submit(fd, -1, 0, 0, head_fd=fd, head_first_ms=ms(first), head_ms=5000, head_limit=4000,
                    src_gen=e.gen(sock), done=done, tls_ctx=1 if tls else 0)


def send_job(e, sock, data, done):
    return e.submit(-1, sock.fileno(), 0, 0, out=data, dst_gen=e.gen(sock), done=done)


def close_job(e, sock, done):
    return e.submit(sock.fileno(), -1, 0, JOB_TLS_CLOSE, src_gen=e.gen(sock), done=done)


def tls_client(ctx: ssl.SSLContext, w: socket.socket, server_name: str | None = "localhost",
               session: ssl.SSLSession | None = None) -> ssl.SSLSocket:
    """The client side of a session over the TCP socket w (blocking, 10 s timeouts)."""
    w.setblocking(True)
    w.settimeout(10)
    return ctx.wrap_socket(w, server_hostname=server_name, session=session)


def read_n(tw: ssl.SSLSocket, n: int) -> bytes:
    got = b""
    while len(got) < n:
        b = tw.recv(n - len(got))
        assert b, f"end of stream after {len(got)} of {n}"
        got += b
    return got


# ---- contexts ---------------------------------------------------------------------------

def test_context_errors_name_the_file_and_the_reason(pki, tmp_path):
    d = pki[0]
    with pytest.raises(TlsError, match=r"nope\.pem: cannot load the certificate chain \(No such file"):
        TlsContext(str(tmp_path / "nope.pem"))
    with pytest.raises(TlsError, match=r"site\.crt: cannot load the private key"):
        TlsContext(str(d / "site.crt"))  # a certificate without its key
    with pytest.raises(TlsError, match=r"other\.key: the private key does not match the certificate"):
        TlsContext(str(d / "site.crt"), str(d / "other.key"))
    (tmp_path / "junk.pem").write_bytes(b"not a certificate\n")
    with pytest.raises(TlsError, match=r"junk\.pem: cannot load the certificate chain"):
        TlsContext(str(tmp_path / "junk.pem"))
    TlsContext(str(d / "site.crt"), str(d / "site.key")).close()  # chain and key apart


def test_bad_context_indexes_are_refused(site):
    async def main():
        async with engine(maxjobs=4, bufsize=4096) as e:
            e.tls_context(0, site)
            with pytest.raises(OSError):
                e.tls_context(0, site)  # taken
            with pytest.raises(OSError):
                e.tls_context(binding.TLS_CONTEXTS, site)
            a, b = socket.socketpair()
            try:
                with pytest.raises(OSError):  # a context no one set
                    e.submit(a.fileno(), -1, 0, 0, head_fd=a.fileno(), head_limit=100, src_gen=e.gen(a),
                             tls_ctx=binding.TLS_CONTEXTS + 1)
            finally:
                a.close()
                b.close()
    run(main())


# ---- a session: handshake, heads, responses, keep-alive, close_notify --------------------

def test_handshake_head_response_keep_alive_and_close_notify(net, pki, site):
    w, src = net.tcp()
    heads, sent, closed = [], [], []

    def client():
        tw = tls_client(pki[1], w)
        tw.sendall(REQ)
        first = read_n(tw, len(RESP))
        tw.sendall(REQ.replace(b"/a", b"/b"))
        second = read_n(tw, len(RESP))
        end = tw.recv(10)  # the server's close_notify: an orderly end
        version = tw.version()
        tw.close()  # (an SSLSocket left to the garbage collector closes its fd in a later test)
        return version, first, second, end

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the first head")
            send_job(e, src, RESP, sent.append)
            head_job(e, src, heads.append, tls=False)  # the session lives on with the socket
            await settle(lambda: len(heads) == 2, 10, "the second head")
            send_job(e, src, RESP, sent.append)
            await settle(lambda: len(sent) == 2, 10, "both responses")
            close_job(e, src, closed.append)
            await settle(lambda: closed, 10, "the close")
            return await asyncio.wait_for(cl, 10)

    version, first, second, end = run(main())
    assert [(c.end, c.head) for c in heads] == [(JobEnd.DONE, REQ), (JobEnd.DONE, REQ.replace(b"/a", b"/b"))]
    assert [c.end for c in sent + closed] == [JobEnd.DONE] * 3
    assert version in ("TLSv1.2", "TLSv1.3")
    assert first == second == RESP
    assert end == b""


def test_pipelined_heads_in_one_record_are_read_from_the_session(net, pki, site):
    """Two requests in one TLS record: OpenSSL holds the second once the first is read, so
    the socket brings no event for it; the next head job must read it at once."""
    w, src = net.tcp()
    heads = []
    two = REQ + REQ.replace(b"/a", b"/b")

    def client():
        tw = tls_client(pki[1], w)
        tw.sendall(two)  # one write: one record
        return tw

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the first head")
            head_job(e, src, heads.append, tls=False)
            await settle(lambda: len(heads) == 2, 10, "the second head, with no new event")
            (await asyncio.wait_for(cl, 10)).close()

    run(main())
    assert [c.head for c in heads] == [REQ, REQ.replace(b"/a", b"/b")]


# ---- bodies: copied through the session, never spliced ----------------------------------

def test_bodies_are_copied_both_ways_byte_exact(net, pki, site):
    w, src = net.tcp()
    origin, srv = net.tcp()
    up = os.urandom(300_000)
    down = os.urandom(700_000)
    heads, jobs = [], []
    head = b"POST /u HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % len(up)
    rhead = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(down)

    def client():
        tw = tls_client(pki[1], w)
        tw.sendall(head + up)
        got = read_n(tw, len(rhead) + len(down))
        tw.close()
        return got

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=16384) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the request head")
            # the request body: TLS client -> plain server socket, copied
            e.submit(src.fileno(), srv.fileno(), len(up), JOB_COPY, src_gen=e.gen(src), dst_gen=e.gen(srv),
                     done=jobs.append)
            got_up = await asyncio.wait_for(recv_exact(origin, len(up)), 10)
            await settle(lambda: jobs, 10, "the request body's job")
            # the response: plain server socket -> TLS client, its head first, copied
            writer = asyncio.create_task(send(origin, down))
            e.submit(srv.fileno(), src.fileno(), len(down), JOB_COPY, out=rhead, src_gen=e.gen(srv),
                     dst_gen=e.gen(src), done=jobs.append)
            await settle(lambda: len(jobs) == 2, 10, "the response body's job")
            await writer
            return got_up, await asyncio.wait_for(cl, 10)

    got_up, got_down = run(main())
    assert heads[0].head == head
    assert [(c.end, c.bytes_fwd) for c in jobs] == [(JobEnd.DONE, len(up)), (JobEnd.DONE, len(down))]
    assert hashlib.sha256(got_up).digest() == hashlib.sha256(up).digest()
    assert got_down == rhead + down


def test_a_spliced_body_on_a_session_is_refused(net, pki, site):
    w, src = net.tcp()
    origin, srv = net.tcp()
    heads, jobs = [], []

    def client():
        tw = tls_client(pki[1], w)
        tw.sendall(REQ + b"x" * 100)
        return tw

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the head")
            e.submit(src.fileno(), srv.fileno(), 100, 0, src_gen=e.gen(src), dst_gen=e.gen(srv), done=jobs.append)
            await settle(lambda: jobs, 10, "the refusal")
            (await asyncio.wait_for(cl, 10)).close()

    run(main())
    assert (jobs[0].end, jobs[0].errno, jobs[0].bytes_fwd) == (JobEnd.ERROR, 93, 0)  # EPROTONOSUPPORT


# ---- bad input ----------------------------------------------------------------------------

def test_garbage_instead_of_a_client_hello_fails_the_handshake(net, site):
    w, src = net.tcp()
    heads = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            e.tls_context(0, site)
            w.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # plain HTTP to a TLS listener
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the failure")

    run(main())
    assert (heads[0].end, heads[0].errno) == (JobEnd.ERROR, 71)  # EPROTO
    assert not heads[0].head  # no head byte: the handshake failed first


def test_a_client_stalling_mid_handshake_times_out_as_a_head_would(net, site):
    w, src = net.tcp()
    heads = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            e.tls_context(0, site)
            w.sendall(b"\x16\x03\x01\x00\xc8\x01")  # the first bytes of a ClientHello, then nothing
            head_job(e, src, heads.append, first=0.3)
            await settle(lambda: heads, 10, "the timeout")

    run(main())
    assert heads[0].end == JobEnd.TIMEOUT


@pytest.mark.parametrize("notify", [True, False])
def test_a_client_gone_before_its_head_ends_the_job_and_the_close_frees_the_session(net, pki, site, notify):
    """The client ends its session with close_notify (unwrap) or just closes its socket:
    either is the peer's end of stream, not an error."""
    w, src = net.tcp()
    heads, closed = [], []

    def client():
        tw = tls_client(pki[1], w)
        if notify:
            tw.unwrap()
        tw.close()

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)  # the handshake, then the client's close_notify
            await settle(lambda: heads, 10, "the end")
            close_job(e, src, closed.append)  # (unwrap() waits for the server's close_notify)
            await settle(lambda: closed, 10, "the close")
            await asyncio.wait_for(cl, 10)

    run(main())
    if notify:
        assert heads[0].end == JobEnd.PEER_CLOSED
    else:  # an end of stream; or a reset, when the client closed on unread session tickets
        assert heads[0].end == JobEnd.PEER_CLOSED or (heads[0].end, heads[0].errno) == (JobEnd.ERROR, 104)
    assert closed[0].end == JobEnd.DONE


# ---- SNI and ALPN -------------------------------------------------------------------------

def test_names_of_a_certificate(farm_certs):
    ctxs, _ = farm_certs
    assert ctxs["a"].names() == ["a.example"]
    assert ctxs["w"].names() == ["*.w.example"]  # alternative names, not the CN
    assert ctxs["dflt"].names() == ["localhost"]  # no alternative name: the CN


def served_cn(farm_certs, net, default, server_name, alpn=None):
    """Handshake through the engine with `default` as the bind's context, the client
    offering `alpn`: the CN of the certificate served for `server_name` (the client checks
    the chain against the three certificates, not the name) and the protocol selected."""
    client_ctx = ssl.create_default_context(cafile=str(farm_certs[1] / "all.crt"))
    client_ctx.check_hostname = False
    if alpn is not None:
        client_ctx.set_alpn_protocols(alpn)
    w, src = net.tcp()
    heads = []

    def client():
        tw = tls_client(client_ctx, w, server_name)
        cn = dict(x[0] for x in tw.getpeercert()["subject"])["commonName"]
        proto = tw.selected_alpn_protocol()
        tw.sendall(REQ)
        tw.close()
        return cn, proto

    async def main():
        async with serving(default, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the head")
            return await asyncio.wait_for(cl, 10)

    got = run(main())
    assert heads[0].head == REQ
    return got


@pytest.mark.parametrize("server_name,cn", [
    ("a.example", "a.example"), ("A.Example", "a.example"),   # exact, in any case
    ("x.w.example", "w-wild"), ("y.W.example", "w-wild"),     # one label under the wildcard
    ("w.example", "localhost"), ("x.y.w.example", "localhost"),  # not covered: the default
    ("unknown.example", "localhost"), (None, "localhost"),    # unknown, or no SNI at all
])
def test_sni_picks_the_certificate_as_haproxy_does(net, farm_certs, sni_default, server_name, cn):
    assert served_cn(farm_certs, net, sni_default, server_name)[0] == cn


@pytest.fixture(scope="module")
def sni_default(farm_certs):
    """A default context of its own (the dflt certificate) answering a.example and
    *.w.example with the other two, offering http/1.1 in ALPN."""
    ctxs, d = farm_certs
    c = TlsContext(str(d / "dflt.crt"), str(d / "dflt.key"))
    c.sni("a.example", ctxs["a"])
    c.sni("*.w.example", ctxs["w"])
    c.alpn(["http/1.1"])
    yield c
    c.close()


@pytest.mark.parametrize("server_name,cn", [("a.example", "a.example"), (None, "localhost")])
@pytest.mark.parametrize("offered,selected", [
    (["h2", "http/1.1"], "http/1.1"),  # only what splicer speaks
    (["h2"], None),                    # nothing in common: no ALPN, the handshake goes on
])
def test_alpn_selects_http_1_1_only(net, farm_certs, sni_default, offered, selected, server_name, cn):
    """The bind's protocols, whichever of its certificates SNI picked."""
    assert served_cn(farm_certs, net, sni_default, server_name, alpn=offered) == (cn, selected)


def test_bad_sni_names_and_alpn_lists_are_refused(farm_certs):
    ctxs, _ = farm_certs
    for name in ("", "*x.example", "a" * 300):
        with pytest.raises(OSError):
            ctxs["dflt"].sni(name, ctxs["a"])
    for protocols in ([""], ["x" * 256]):
        with pytest.raises(OSError):
            ctxs["dflt"].alpn(protocols)


# ---- versions, ciphers, session resumption -----------------------------------------------

def exchange(net, pki, server_ctx, client_ctx=None, session=None):
    """One request and response over a session through the engine: (version, cipher,
    session, reused) as the client saw them; raises the client's SSLError."""
    client_ctx = client_ctx or pki[1]
    w, src = net.tcp()
    heads, sent = [], []

    def client():
        tw = tls_client(client_ctx, w, session=session)
        try:
            tw.sendall(REQ)
            assert read_n(tw, len(RESP)) == RESP  # (a TLS 1.3 ticket comes before it)
            return tw.version(), tw.cipher()[0], tw.session, tw.session_reused
        finally:
            tw.close()

    async def main():
        async with serving(server_ctx, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads or cl.done(), 10, "the head or the client's end")
            if heads and heads[0].end == JobEnd.DONE:
                send_job(e, src, RESP, sent.append)
            return await asyncio.wait_for(cl, 10)

    return run(main())


@pytest.fixture
def tuned(pki):
    """Factory: the site's certificate in a context tuned with tune(**kw); closed after."""
    made = []

    def make(**kw) -> TlsContext:
        made.append(TlsContext(str(pki[0] / "site.pem")))
        made[-1].tune(**kw)
        return made[-1]
    yield make
    for c in made:
        c.close()


def test_version_floor_and_ceiling(net, pki, tuned):
    old_client = ssl.create_default_context(cafile=str(pki[0] / "site.crt"))
    old_client.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError):  # a TLS 1.2 client and a TLS 1.3 floor: no handshake
        exchange(net, pki, tuned(min_ver="TLSv1.3"), old_client)
    assert exchange(net, pki, tuned(max_ver="TLSv1.2"))[0] == "TLSv1.2"
    assert exchange(net, pki, tuned())[0] == "TLSv1.3"
    assert exchange(net, pki, tuned(), old_client)[0] == "TLSv1.2"  # the default floor: 1.2


def test_cipher_list_and_suites_are_what_is_negotiated(net, pki, tuned):
    assert exchange(net, pki, tuned(max_ver="TLSv1.2", ciphers="ECDHE-ECDSA-CHACHA20-POLY1305"))[1] == \
        "ECDHE-ECDSA-CHACHA20-POLY1305"
    assert exchange(net, pki, tuned(ciphersuites="TLS_CHACHA20_POLY1305_SHA256"))[1] == \
        "TLS_CHACHA20_POLY1305_SHA256"
    assert exchange(net, pki, tuned(ciphersuites="TLS_AES_128_GCM_SHA256", curves="P-256"))[1] == \
        "TLS_AES_128_GCM_SHA256"


def test_unknown_versions_ciphers_and_curves_are_refused_with_the_reason(pki):
    ctx = TlsContext(str(pki[0] / "site.pem"))
    with pytest.raises(TlsError, match=r"unknown TLS version 'TLSv1\.0'"):
        ctx.tune(min_ver="TLSv1.0")
    with pytest.raises(TlsError, match=r"NOPE-CIPHER: no cipher of the list is known"):
        ctx.tune(ciphers="NOPE-CIPHER")
    with pytest.raises(TlsError, match=r"TLS_NOPE: no TLS 1.3 cipher suite of the list is known"):
        ctx.tune(ciphersuites="TLS_NOPE")
    with pytest.raises(TlsError, match=r"P-999: unknown curve"):
        ctx.tune(curves="P-999")
    ctx.close()


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
def test_a_second_connection_resumes_the_first_session(net, pki, tuned, version):
    """Session resumption (a TLS 1.2 session cache entry, a TLS 1.3 ticket): a full
    handshake once, then a resumed one."""
    server = tuned(max_ver=version)
    first = exchange(net, pki, server)
    assert first[0] == version and not first[3]
    second = exchange(net, pki, server, session=first[2])
    assert second[3], "the second handshake was a full one"


# ---- client certificates and what a handshake settled (the ssl_fc_* / ssl_c_* fetches) ----

@pytest.fixture(scope="module")
def client_pki(tmp_path_factory):
    """A CA, a client certificate it signed (CN client-1), and one of another CA."""
    d = tmp_path_factory.mktemp("clients")

    def sh(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    for ca in ("ca", "rogue"):
        sh("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
           str(d / f"{ca}.key"), "-out", str(d / f"{ca}.crt"), "-days", "2", "-subj", f"/O=Test/CN={ca}-root")
        sh("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
           str(d / f"{ca}-client.key"), "-out", str(d / f"{ca}-client.csr"), "-subj", "/O=Test/CN=client-1")
        sh("x509", "-req", "-in", str(d / f"{ca}-client.csr"), "-CA", str(d / f"{ca}.crt"), "-CAkey",
           str(d / f"{ca}.key"), "-CAcreateserial", "-out", str(d / f"{ca}-client.crt"), "-days", "2")
    return d


def client_with_cert(pki, client_pki, which: str | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki[0] / "site.crt"))
    if which:
        ctx.load_cert_chain(str(client_pki / f"{which}-client.crt"), str(client_pki / f"{which}-client.key"))
    return ctx


def info_after(net, pki, server_ctx, client_ctx, alpn=None):
    """A request through the engine; (the client's (version, cipher), the engine's TlsInfo),
    or the client's SSLError (the handshake failed) with the engine's head completion."""
    if alpn:
        client_ctx.set_alpn_protocols(alpn)
    w, src = net.tcp()
    heads = []

    def client():
        tw = tls_client(client_ctx, w)
        try:
            tw.sendall(REQ)
            tw.recv(1)  # (TLS 1.3: the server's verdict on a client certificate comes after)
            return tw.version(), tw.cipher()[0]
        finally:
            tw.close()

    async def main():
        async with serving(server_ctx, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the head")
            info = e.tls_info(src)
            if heads[0].end == JobEnd.DONE:
                send_job(e, src, RESP, lambda c: None)
            try:
                return await asyncio.wait_for(cl, 10), info, heads[0]
            except ssl.SSLError as exc:
                return exc, info, heads[0]

    return run(main())


def test_what_the_handshake_settled(net, pki, tuned, client_pki):
    server = tuned()
    server.alpn(["http/1.1"])
    server.verify("optional", str(client_pki / "ca.crt"))
    (version, cipher), info, head = info_after(net, pki, server, client_with_cert(pki, client_pki, "ca"),
                                                alpn=["h2", "http/1.1"])
    assert head.end == JobEnd.DONE
    assert (info.version, info.cipher, info.sni, info.alpn) == (version, cipher, "localhost", "http/1.1")
    assert not info.reused
    assert info.cert_used and info.verify == 0
    assert "CN = client-1" in info.c_s_dn and "CN = ca-root" in info.c_i_dn
    der = ssl.PEM_cert_to_DER_cert((client_pki / "ca-client.crt").read_text())
    assert info.c_sha1 == hashlib.sha1(der).digest()


def test_optional_without_a_certificate_is_served(net, pki, tuned, client_pki):
    server = tuned()
    server.verify("optional", str(client_pki / "ca.crt"))
    _, info, head = info_after(net, pki, server, client_with_cert(pki, client_pki, None))
    assert head.end == JobEnd.DONE
    assert (info.cert_used, info.c_s_dn, info.c_sha1, info.alpn) == (False, "", b"", "")


@pytest.mark.parametrize("which", [None, "rogue"])
def test_required_refuses_no_certificate_and_an_unknown_ca(net, pki, tuned, client_pki, which):
    server = tuned()
    server.verify("required", str(client_pki / "ca.crt"))
    got, info, head = info_after(net, pki, server, client_with_cert(pki, client_pki, which))
    assert isinstance(got, (ssl.SSLError, ConnectionResetError)), got
    assert (head.end, head.errno) == (JobEnd.ERROR, 71) and not head.head  # EPROTO, no request
    assert info is None


def test_no_info_without_a_session_or_before_its_handshake(net, site):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            e.tls_context(0, site)
            assert e.tls_info(src) is None  # no session
            head_job(e, src, lambda c: None, first=30)
            await asyncio.sleep(0.05)
            return e.tls_info(src)  # a session, no handshake yet

    assert run(main()) is None


# ---- tunnels (an upgraded connection): copied through the session ------------------------

def test_a_tunnel_between_a_session_and_a_plain_socket(net, pki, site):
    """After an upgrade's head, the TLS client and a plain server talk both ways through a
    copied tunnel; each end passes on as the other's: the client's close_notify as a FIN, the
    server's FIN as close_notify. A spliced tunnel on the session is refused."""
    w, src = net.tcp()
    origin, srv = net.tcp()
    up, down = os.urandom(200_000), os.urandom(300_000)
    heads, refused = [], []

    def client():
        tw = tls_client(pki[1], w)
        tw.sendall(REQ)
        tw.sendall(up)
        got = read_n(tw, len(down))
        end = tw.recv(10)  # the server's FIN, passed on as close_notify
        tw.unwrap()  # our close_notify: the server sees its end of stream
        tw.close()
        return got, end

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=16384) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the head")
            e.submit(src.fileno(), srv.fileno(), 0, JOB_TUNNEL, src_gen=e.gen(src), dst_gen=e.gen(srv),
                     done=refused.append)
            await settle(lambda: refused, 10, "the spliced tunnel's refusal")
            _, fut = e.submit(src.fileno(), srv.fileno(), 0, JOB_TUNNEL | JOB_COPY, src_gen=e.gen(src),
                              dst_gen=e.gen(srv))
            got_up = await asyncio.wait_for(recv_exact(origin, len(up)), 10)
            await send(origin, down, shut=True)
            assert await asyncio.wait_for(recv_to_eof(origin), 10) == b""  # the client's close_notify
            tunnel = await asyncio.wait_for(fut, 10)
            return got_up, await asyncio.wait_for(cl, 10), tunnel

    got_up, (got_down, end), tunnel = run(main())
    assert (refused[0].end, refused[0].errno) == (JobEnd.ERROR, 93)  # EPROTONOSUPPORT
    assert got_up == up and got_down == down and end == b""
    assert (tunnel.end, tunnel.bytes_fwd, tunnel.bytes_rev) == (JobEnd.DONE, len(up), len(down))


def test_a_discard_drops_a_sessions_bytes_until_its_close_notify(net, pki, site):
    w, src = net.tcp()
    heads = []

    def client():
        tw = tls_client(pki[1], w)
        tw.sendall(REQ)
        tw.sendall(os.urandom(500_000))  # a body nobody reads
        tw.unwrap()
        tw.close()

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the head")
            _, fut = e.submit(src.fileno(), -1, binding.UNTIL_EOF, JOB_DISCARD, 5000, 0, src_gen=e.gen(src))
            c = await asyncio.wait_for(fut, 10)
            close_job(e, src, lambda c: None)  # (the client's unwrap waits for ours)
            await asyncio.wait_for(cl, 10)
            return c

    c = run(main())
    assert (c.end, c.bytes_fwd) == (JobEnd.DONE, 500_000)  # decrypted and dropped


# ---- a session's end: nothing plain after it, and not under a running job ----------------

def test_after_its_close_a_socket_is_neither_written_nor_read_plain(net, pki, site):
    """SPL_JOB_TLS_CLOSE ends the session for good: a send, a head, a copy or a splice on the
    socket afterwards (its generation unchanged) moves nothing (ESHUTDOWN), where a plain
    write would reach a peer that expects records."""
    w, src = net.tcp()
    origin, srv = net.tcp()
    heads, closed, after = [], [], []

    def client():
        tw = tls_client(pki[1], w)
        tw.sendall(REQ)
        assert tw.recv(10) == b""  # close_notify
        w_raw = tw.unwrap()  # (the TLS layer is done: what comes now would be plain)
        w_raw.settimeout(0.5)
        try:
            return w_raw.recv(100)
        except TimeoutError:
            return b""
        finally:
            w_raw.close()

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)
            await settle(lambda: heads, 10, "the head")
            close_job(e, src, closed.append)
            await settle(lambda: closed, 10, "the close")
            send_job(e, src, RESP, after.append)
            head_job(e, src, after.append, tls=False)
            e.submit(src.fileno(), srv.fileno(), 10, JOB_COPY, src_gen=e.gen(src), dst_gen=e.gen(srv),
                     done=after.append)
            e.submit(srv.fileno(), src.fileno(), 10, 0, src_gen=e.gen(srv), dst_gen=e.gen(src), done=after.append)
            await settle(lambda: len(after) == 4, 10, "the four refusals")
            return await asyncio.wait_for(cl, 10)

    plain = run(main())
    assert closed[0].end == JobEnd.DONE
    assert [(c.end, c.errno, c.bytes_fwd) for c in after] == [(JobEnd.ERROR, 108, 0)] * 4  # ESHUTDOWN
    assert plain == b""  # not a byte in the clear


def test_a_close_under_a_running_job_is_refused_and_the_session_lives_on(net, pki, site):
    w, src = net.tcp()
    heads, closed = [], []
    go = threading.Event()

    def client():
        tw = tls_client(pki[1], w)
        go.wait(10)
        tw.sendall(REQ)
        tw.close()

    async def main():
        async with serving(site, client, maxjobs=8, bufsize=4096) as (e, cl):
            head_job(e, src, heads.append)  # waits for the request, holding the session
            await asyncio.sleep(0.2)
            close_job(e, src, closed.append)
            await settle(lambda: closed, 10, "the refusal")
            go.set()
            await settle(lambda: heads, 10, "the head, through the session still")
            await asyncio.wait_for(cl, 10)

    run(main())
    assert (closed[0].end, closed[0].errno) == (JobEnd.ERROR, 16)  # EBUSY
    assert (heads[0].end, heads[0].head) == (JobEnd.DONE, REQ)
