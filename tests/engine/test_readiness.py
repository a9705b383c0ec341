"""The engine's readiness cache (spl_fd_quiet, Engine.quiet): a socket found empty, with no
read event since, is waited on instead of read, and is reported quiet to Python.

What must never happen: a socket reported quiet (or a head job left waiting on it) while a
byte or an end of stream waits in it unseen. Real loopback TCP pairs; every wait is bounded
(conftest.run, settle).
"""
from __future__ import annotations

import asyncio
import os
import socket

from splicer.engine.binding import JOB_COPY, JOB_THEN_HEAD
from splicer.engine.engine import JobEnd, Phase, ms
from tests.engine.conftest import engine, run, settle

REQ = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"


async def received(sock, n):
    """Exactly n bytes from the non-blocking `sock` (bounded wait)."""
    got = bytearray()

    def more():
        try:
            got.extend(sock.recv(n - len(got)))
        except BlockingIOError:
            pass
        return len(got) == n
    await settle(more, what=f"{n} bytes")
    return bytes(got)


def head_job(e, sock, done, limit=4000):
    fd = sock.fileno()
    return e.submit(fd, -1, 0, 0, head_fd=fd, head_first_ms=ms(5.0), head_ms=5000, head_limit=limit,
                    src_gen=e.gen(sock), done=done)


def test_socket_no_job_used_is_never_quiet(net):
    w, src = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            assert not e.quiet(src)
            e.gen(src)  # a generation alone registers nothing
            assert not e.quiet(src)
    run(main())


def test_generations_follow_socket_objects_not_fd_numbers():
    """Engine.gen(): one generation per socket object, kept while it is used; a new socket
    under a reused fd number gets a new one (the engine then registers it anew); a closed
    socket names none (0: "this job only")."""
    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            a, b = socket.socketpair()
            g = e.gen(a)
            assert g != 0 and e.gen(a) == g and e.gen(b) not in (0, g)
            fd = a.fileno()
            a.close()
            assert e.gen(a) == 0
            c = socket.socket(fileno=os.dup2(b.fileno(), fd))  # the same fd number, another socket
            try:
                assert c.fileno() == fd and e.gen(c) not in (0, g) and e.gen(c) == e.gen(c)
                high = socket.socket(fileno=os.dup2(b.fileno(), 900))  # past the table's end: it grows
                assert e.gen(high) not in (0, e.gen(c)) and e.gen(c) != g
                high.close()
            finally:
                c.close()
                b.close()
    run(main())


def test_quiet_after_the_head_is_consumed_and_not_after_an_arrival(net):
    w, src = net.tcp()
    got = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(REQ)
            head_job(e, src, got.append)
            await settle(lambda: got, what="head")
            assert (got[0].end, got[0].head) == (JobEnd.DONE, REQ)
            # the peek saw exactly the head, the read took it: the socket is empty
            assert e.quiet(src)
            w.sendall(b"x")
            await settle(lambda: not e.quiet(src), what="the arrival clears quiet")
            assert src.recv(10) == b"x"
    run(main())


def test_end_of_stream_while_idle_clears_quiet(net):
    w, src = net.tcp()
    got = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(REQ)
            head_job(e, src, got.append)
            await settle(lambda: got, what="head")
            assert e.quiet(src)
            w.close()  # the peer closes an idle connection (a server's keep-alive timeout)
            await settle(lambda: not e.quiet(src), what="the FIN clears quiet")
            assert src.recv(10) == b""
    run(main())


def test_pipelined_heads_are_not_taken_for_an_empty_socket(net):
    """Two heads in one segment: after the first is read, the second is still there; the
    next head job must read it at once, not wait for an event that already came."""
    w, src = net.tcp()
    got = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(REQ + REQ.replace(b"/a", b"/b"))
            head_job(e, src, got.append)
            await settle(lambda: got, what="first head")
            assert got[0].head == REQ
            assert not e.quiet(src)
            head_job(e, src, got.append)
            await settle(lambda: len(got) == 2, what="second head, with no new event")
            assert (got[1].end, got[1].head) == (JobEnd.DONE, REQ.replace(b"/a", b"/b"))
            assert e.quiet(src)
    run(main())


def test_head_job_on_a_quiet_socket_waits_for_the_event(net):
    """The chained head job after a response starts on a quiet client socket: it makes no
    read and completes when the next request arrives."""
    origin, src = net.tcp()
    dst, client = net.tcp()
    got, nxt = [], []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            client.sendall(REQ)
            head_job(e, dst, got.append)
            await settle(lambda: got, what="request head")
            assert e.quiet(dst)
            origin.sendall(b"hello")
            e.submit(src.fileno(), dst.fileno(), 5, JOB_COPY | JOB_THEN_HEAD, 5000, 5000, RESP, -1,
                     5000, 5000, 4000, src_gen=e.gen(src), dst_gen=e.gen(dst), done=got.append)
            chained = e.chained
            await settle(lambda: len(got) == 2, what="response job")
            assert (got[1].end, got[1].bytes_fwd) == (JobEnd.DONE, 5)
            assert client.recv(100) == RESP + b"hello"
            e.then(chained, nxt.append)
            assert nxt == []
            client.sendall(REQ)
            await settle(lambda: nxt, what="the next head after the event")
            assert (nxt[0].end, nxt[0].phase, nxt[0].head) == (JobEnd.DONE, Phase.END, REQ)
            # the origin's socket: an exact read of 5 bytes proves nothing about what follows
            assert not e.quiet(src)
    run(main())


def test_server_connection_quiet_after_head_and_body_and_reusable(net):
    """A server connection's exchange as the fast path runs it: request sent and response
    head read (the peek sees head and body), then the body copied: the engine has seen the
    socket empty, so it is quiet (an idle pooled connection needing no peek); the next
    request's response head is read once it arrives, with no read before it."""
    origin, srv = net.tcp()
    dst, client = net.tcp()
    heads, bodies = [], []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            for n in range(3):
                fd = srv.fileno()
                e.submit(-1, fd, 0, 0, 0, ms(5.0), REQ, fd, ms(5.0), ms(5.0), 4000,
                         dst_gen=e.gen(srv), done=heads.append)
                assert await received(origin, len(REQ)) == REQ
                origin.sendall(RESP + b"hel%d\n" % n)
                await settle(lambda: len(heads) == n + 1, what="response head")
                assert (heads[n].end, heads[n].head) == (JobEnd.DONE, RESP)
                assert not e.quiet(srv)  # the body is still in it
                e.submit(fd, dst.fileno(), 5, JOB_COPY, 5000, 5000, RESP, src_gen=e.gen(srv),
                         dst_gen=e.gen(dst), done=bodies.append)
                await settle(lambda: len(bodies) == n + 1, what="body")
                assert (bodies[n].end, bodies[n].bytes_fwd) == (JobEnd.DONE, 5)
                assert await received(client, len(RESP) + 5) == RESP + b"hel%d\n" % n
                assert e.quiet(srv)
    run(main())


def test_body_bytes_left_behind_a_head_keep_the_socket_unquiet(net):
    """A peek that saw head and body: reading the head alone leaves the body, so the
    socket is not quiet until the body is read too."""
    w, src = net.tcp()
    got = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            w.sendall(RESP + b"hello")
            head_job(e, src, got.append)
            await settle(lambda: got, what="head")
            assert got[0].head == RESP
            assert not e.quiet(src)
            assert src.recv(5, socket.MSG_PEEK) == b"hello"
    run(main())


def test_a_peek_that_filled_its_buffer_proves_nothing(net):
    """The head's peek asks for limit + 1 bytes and gets them all: more may follow, so
    reading exactly what it saw does not make the socket quiet."""
    w, src = net.tcp()
    dst, client = net.tcp()
    got = []
    limit = len(RESP) + 10

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            head_job(e, src, got.append, limit=limit)
            await asyncio.sleep(0.05)  # registered and found empty first: then one arrival
            w.sendall(RESP + b"b" * 300)
            await settle(lambda: got, what="head")
            assert got[0].head == RESP
            seen = limit + 1 - len(RESP)  # body bytes the peek saw
            e.submit(src.fileno(), dst.fileno(), seen, JOB_COPY, 5000, 5000, src_gen=e.gen(src),
                     dst_gen=e.gen(dst), done=got.append)
            await settle(lambda: len(got) == 2, what="body part")
            assert (got[1].end, got[1].bytes_fwd) == (JobEnd.DONE, seen)
            assert not e.quiet(src)
            assert len(src.recv(1000)) == 300 - seen
    run(main())


def test_a_fin_behind_the_last_bytes_keeps_the_socket_unquiet(net):
    """A server answers and closes at once (RFC 9112 section 9.6): the response and the FIN
    arrive together, and the short peek that sees the response does not report the FIN
    behind it. Once read, the socket must not be reported quiet: the pool would reuse a
    closed connection."""
    origin, srv = net.tcp()
    dst, client = net.tcp()
    got = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            fd = srv.fileno()
            for n in range(2):
                if n == 1:  # the second response comes with the FIN, while no job is on it
                    assert e.quiet(srv)
                    origin.sendall(RESP + b"hel1\n")
                    origin.shutdown(socket.SHUT_WR)
                    await asyncio.sleep(0.05)  # the event is seen while no job uses the socket
                    head_job(e, srv, got.append)
                else:  # as the fast path does: the request sent, then the response head read
                    e.submit(-1, fd, 0, 0, 0, ms(5.0), REQ, fd, ms(5.0), ms(5.0), 4000,
                             dst_gen=e.gen(srv), done=got.append)
                    assert await received(origin, len(REQ)) == REQ
                    origin.sendall(RESP + b"hel0\n")
                await settle(lambda: len(got) == 2 * n + 1, what="response head")
                assert got[2 * n].head == RESP
                e.submit(fd, dst.fileno(), 5, JOB_COPY, 5000, 5000, src_gen=e.gen(srv),
                         dst_gen=e.gen(dst), done=got.append)
                await settle(lambda: len(got) == 2 * n + 2, what="body")
                assert (got[2 * n + 1].end, got[2 * n + 1].bytes_fwd) == (JobEnd.DONE, 5)
            assert not e.quiet(srv)
            assert srv.recv(10) == b""
    run(main())
