"""The express lane (engine.h): after a relayed response armed with RELAY_EXPRESS (or in a
head-only job armed so), a qualifying request of the client makes its head job ask for a
credit (X_WANT); the server connection lent (an idle one, or a new one still connecting), or
a refusal, decides where it goes, and each credit ends in one completion (X_DONE, X_UNUSED,
X_DEAD, X_HANDOVER). A request that closes the connection ends its head job X_CLOSED.

Real loopback TCP pairs: `origin` <-> `srv` (the proxy's server connections) and `cli` <->
`client` (the proxy's client connection); every wait is bounded (conftest.run).
"""
from __future__ import annotations

import asyncio
import errno
import socket

from splicer.engine import binding
from splicer.engine.binding import (JOB_RELAY, JOB_SKIP_EMPTY, RELAY_EXPRESS, RELAY_XFF, RELAY_XLOG, UNTIL_EOF,
                                    X_CLOSED,
                                    X_DEAD, X_DONE, X_HANDOVER, X_UNUSED, X_WANT)
from splicer.engine.engine import JobEnd, Phase, ms
from splicer.http import h1
from tests.engine.conftest import engine, run
from tests.engine.test_heads import REQ, read_all

RESP = b"HTTP/1.1 200 OK\r\nServer: o\r\nContent-Length: 5\r\n\r\n"
ADDR = 0x7F0000FE  # 127.0.0.254: the client address X-Forwarded-For names
XB = 3             # the express backend the tests use


def armed_relay(e, srv, cli, status_max=599, xff=True, splice_min=UNTIL_EOF):
    """Submit the first request's RELAY job, arming the express lane; returns
    ((id, fut), (next id, next fut))."""
    relay = (status_max, cli.fileno(), e.gen(cli), 5000, ms(5.0), ms(5.0),
             RELAY_EXPRESS | (RELAY_XFF if xff else 0), splice_min, XB, ADDR, 101, 0)
    job = e.submit(-1, srv.fileno(), 0, JOB_RELAY, 0, 5000, REQ, srv.fileno(), 5000, 5000, 4000,
                   dst_gen=e.gen(srv), relay=relay)
    return job, e.chained


class Lender:
    """The client's head job's callback: answers each X_WANT with the next of `socks` (a
    socket, or (a new socket, seconds to connect)) or a refusal when none is left, keeps
    the bodies the X_WANTs announced in `bodies`, the credits' completions in `credits` and
    the head job's own ends in `ended`."""

    def __init__(self, e, nxt, cli, socks) -> None:
        self.e, self.cli, self.socks = e, cli, list(socks)
        self.head_id = nxt[0] if nxt is not None else 0
        self.wants = 0
        self.bodies: list = []
        self.credits: list = []
        self.ended: list = []
        if nxt is not None:
            e.then(nxt, self)

    def __call__(self, c) -> None:
        if c.xkind == X_WANT:
            self.wants += 1
            self.bodies.append(c.bytes_rev)
            if self.socks:
                sock, connect = self.socks.pop(0), None
                if type(sock) is tuple:
                    sock, connect = sock
                assert self.e.credit(self.head_id, self.cli, sock, self.credits.append, connect) is not None
            else:
                self.e.refuse(self.head_id, self.cli)
        else:
            self.ended.append(c)


def first_head(e, cli, socks=(), xff=True, status_max=599, flags=0) -> Lender:
    """Submit a head-only job on the client socket armed for the express lane from its own
    head on (a connection's first request), with relay `flags` besides; returns its Lender."""
    lender = Lender(e, None, cli, socks)
    relay = (status_max, cli.fileno(), e.gen(cli), 5000, ms(5.0), ms(5.0),
             RELAY_EXPRESS | (RELAY_XFF if xff else 0) | flags, UNTIL_EOF, XB, ADDR, 101, 0)
    lender.head_id = e.submit(cli.fileno(), -1, 0, JOB_SKIP_EMPTY, 0, 5000, None, cli.fileno(), 5000, 5000, 4000,
                              src_gen=e.gen(cli), done=lender, relay=relay)[0]
    return lender


def listening(net, backlog: int = 1) -> socket.socket:
    """A server socket listening on 127.0.0.1 (closed with `net`'s sockets)."""
    lst = socket.socket()
    net.made.append(lst)
    lst.bind(("127.0.0.1", 0))
    lst.listen(backlog)
    return lst


def connecting(port: int) -> socket.socket:
    """A new non-blocking TCP socket whose connect to 127.0.0.1:port was started."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
    assert s.connect_ex(("127.0.0.1", port)) in (0, errno.EINPROGRESS)
    return s


async def first_exchange(e, origin, srv, cli, client, socks=(), **kw) -> Lender:
    """The first request goes the usual way; returns the Lender of the client's head job."""
    job, nxt = armed_relay(e, srv, cli, **kw)
    assert await read_all(origin, len(REQ)) == REQ
    origin.sendall(RESP + b"hello")
    c = await e.wait(*job)
    assert (c.end, c.relayed, c.xkind) == (JobEnd.DONE, len(RESP), 0)
    assert await read_all(client, len(RESP) + 5) == RESP + b"hello"
    return Lender(e, nxt, cli, socks)


async def until(pred, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.005)


def forwarded(head: bytes) -> bytes:
    """What splicer's Python path forwards for `head` with X-Forwarded-For 127.0.0.254."""
    req = h1.parse_request(head, 100, binding.h1_index(head))
    return h1.forwarded_request(head, req, "127.0.0.254")


def test_a_qualifying_request_asks_its_credit_goes_on_it_and_the_next_head_is_read(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    head = b"GET /b?q=1 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nCookie: a=1\r\n\r\n"
    plain = b"OPTIONS /c HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2])
            client.sendall(head)
            want = forwarded(head)
            assert b"Connection" not in want and want.endswith(b"X-Forwarded-For: 127.0.0.254\r\n\r\n")
            assert await read_all(origin2, len(want)) == want  # the same bytes as Python's path
            origin2.sendall(RESP + b"world")
            assert await read_all(client, len(RESP) + 5) == RESP + b"world"
            await until(lambda: lender.credits)
            c = lender.credits[0]
            assert (c.xkind, c.end, c.xstatus, c.xreq, c.relayed, c.bytes_fwd, c.xother) == \
                (X_DONE, JobEnd.DONE, 200, len(head), len(RESP), 5, lender.head_id)
            assert c.head is None and not c.spliced and not c.xclose and lender.wants == 1
            client.sendall(plain)  # OPTIONS: not for the express lane, asks nothing
            await until(lambda: lender.ended)
            n = lender.ended[0]
            assert (n.end, n.head, n.xkind, lender.wants) == (JobEnd.DONE, plain, 0, 1)
            assert e.stats().jobs_active == 0
    run(main())


def test_a_refused_request_goes_to_the_caller(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    head = b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client)
            client.sendall(head)
            await until(lambda: lender.ended)
            n = lender.ended[0]
            assert (n.end, n.head, n.xkind, lender.wants) == (JobEnd.DONE, head, 0, 1)
            assert n.index == binding.h1_index(head)
    run(main())


def test_a_credit_the_server_closed_ends_dead_and_the_head_goes_to_the_caller(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    dead_o, dead = net.tcp()
    head = b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [dead], xff=False)
            dead_o.close()  # the server closed this idle connection
            await asyncio.sleep(0.05)
            client.sendall(head)
            await until(lambda: lender.ended)
            n = lender.ended[0]
            assert (n.end, n.head, n.xkind) == (JobEnd.DONE, head, 0)
            assert [c.xkind for c in lender.credits] == [X_DEAD]
    run(main())


def test_a_head_request_goes_without_x_forwarded_for_when_not_asked(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    live_o, live = net.tcp()
    head = b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [live], xff=False)
            client.sendall(head)
            assert await read_all(live_o, len(head)) == head  # no X-Forwarded-For without RELAY_XFF
            live_o.sendall(RESP)  # a response to HEAD has no body
            assert await read_all(client, len(RESP)) == RESP
            await until(lambda: lender.credits)
            assert (lender.credits[0].xkind, lender.credits[0].bytes_fwd, lender.credits[0].xstatus) == (X_DONE, 0, 200)
            ended: list = []
            e.cancel((lender.head_id, None), ended.append)
            await until(lambda: ended)
            assert ended[0].end is JobEnd.CANCELLED
    run(main())


def test_a_response_the_engine_does_not_relay_is_handed_over_with_the_request(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    head = b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
    resp = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2], status_max=499)
            client.sendall(head)
            assert await read_all(origin2, len(forwarded(head))) == forwarded(head)
            origin2.sendall(resp)  # 503 > relay_status_max: the caller's to decide (a retry...)
            await until(lambda: lender.ended)
            n = lender.ended[0]
            assert (n.end, n.xkind, n.head) == (JobEnd.DONE, X_HANDOVER, head)
            assert n.index == binding.h1_index(head)
            assert len(lender.credits) == 1
            c = lender.credits[0]
            assert (c.xkind, c.end, c.phase, c.head, c.relayed, c.xother) == \
                (X_HANDOVER, JobEnd.DONE, Phase.END, resp, 0, lender.head_id)
            assert c.index is not None  # the response head, indexed, as a RELAY job's
            client.setblocking(False)
            try:
                assert client.recv(100) == b""  # nothing went to the client
            except BlockingIOError:
                pass
            assert e.stats().jobs_active == 0
    run(main())


def test_a_server_that_closes_before_answering_hands_the_request_over(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    head = b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2])
            client.sendall(head)
            await read_all(origin2, len(forwarded(head)))
            origin2.close()
            await until(lambda: lender.ended)
            assert (lender.ended[0].xkind, lender.ended[0].head) == (X_HANDOVER, head)
            c = lender.credits[0]
            assert (c.xkind, c.end, c.phase, c.head) == (X_HANDOVER, JobEnd.PEER_CLOSED, Phase.HEAD, None)
    run(main())


def test_a_relay_that_fails_midway_is_handed_over_as_relayed(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    head = b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2])
            client.sendall(head)
            await read_all(origin2, len(forwarded(head)))
            origin2.sendall(resp + b"x" * 10)
            assert await read_all(client, len(resp) + 10) == resp + b"x" * 10
            origin2.close()  # 90 bytes short
            await until(lambda: lender.ended)
            assert (lender.ended[0].xkind, lender.ended[0].head) == (X_HANDOVER, head)
            c = lender.credits[0]
            assert (c.xkind, c.end, c.phase, c.relayed, c.bytes_fwd, c.head) == \
                (X_HANDOVER, JobEnd.PEER_CLOSED, Phase.BODY, len(resp), 10, resp)
    run(main())


def test_a_credit_for_a_head_job_that_is_over_comes_back_unused_and_a_refusal_does_nothing(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    a_o, a = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client)
            client.close()  # the head job ends
            await until(lambda: lender.ended)
            e.refuse(lender.head_id, cli)  # (nothing waits: no completion)
            back: list = []
            assert e.credit(lender.head_id, cli, a, back.append) is not None
            await until(lambda: back)
            assert [c.xkind for c in back] == [X_UNUSED]
            await asyncio.sleep(0.05)
            assert len(back) == 1 and len(lender.ended) == 1
            assert e.stats().jobs_active == 0
    run(main())


def test_a_cancel_during_an_express_request_hands_it_over_cancelled(net):
    """A cancel of the head job while its express request runs (the engine closing at a
    hard stop) ends the request there: the credit ends X_HANDOVER, CANCELLED, with what the
    relay had sent (its owner counts the request killed), the head job X_HANDOVER with the
    request head. (A soft stop does not cancel a session whose request is in flight: the
    lane keeps it out of the idle ones, runtime/express.py.)"""
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    head = b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"y" * 300_000

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2], splice_min=1)
            client.sendall(head)
            await read_all(origin2, len(forwarded(head)))
            resp = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
            origin2.sendall(resp + body[:1000])
            assert await read_all(client, len(resp) + 1000) == resp + body[:1000]
            cancelled: list = []
            e.cancel((lender.head_id, None), cancelled.append)
            await until(lambda: lender.credits and cancelled)
            c, n = lender.credits[0], cancelled[0]
            assert (c.xkind, c.end, c.relayed, c.bytes_fwd, c.phase) == \
                (X_HANDOVER, JobEnd.CANCELLED, len(resp), 1000, Phase.BODY)
            assert (n.xkind, n.head) == (X_HANDOVER, head)
            assert e.stats().jobs_active == 0
    run(main())


def test_heads_the_express_lane_leaves_to_the_caller(net):
    """Only whole heads of a GET or HEAD without a body, or a POST, PUT, PATCH or DELETE
    whose body came with it, without an Upgrade, an Expect or a hop-by-hop field other than
    Connection: keep-alive, with a plain target, ask for a credit."""
    heads = [
        b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 007\r\n\r\n",  # not as Python writes it
        b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",  # its body did not come with it
        b"GET /b HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",  # a GET with a length
        b"OPTIONS /b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /b HTTP/1.0\r\nHost: x\r\n\r\n",
        b"GET /b HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
        b"GET /b HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
        b"GET /b HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n",
        b"GET http://x/b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /b HTTP/1.1\r\n\r\n",
        b"GET /b HTTP/1.1\r\nHost: x\r\nX-A:  1\r\n\r\n",  # not a plain field line
        b"GET /a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n",  # not a plain target: Python decides
        b"GET /a/../b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a;p HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a\\b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /x HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n",
    ]
    for head in heads:
        origin, srv = net.tcp()
        cli, client = net.tcp()

        async def main():
            async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
                lender = await first_exchange(e, origin, srv, cli, client)
                client.sendall(head)
                await until(lambda: lender.ended)
                assert (lender.ended[0].head, lender.ended[0].xkind, lender.wants) == (head, 0, 0), head
        run(main())


def test_a_small_body_that_came_with_its_head_goes_with_it(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    body = b'{"id": 1, "token": "abc"}'
    head = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    resp = b"HTTP/1.1 204 No Content\r\nX-Id: 1\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2])
            client.sendall(head + body)
            want = forwarded(head) + body
            assert await read_all(origin2, len(want)) == want
            origin2.sendall(resp)
            assert await read_all(client, len(resp)) == resp
            await until(lambda: lender.credits)
            c = lender.credits[0]
            assert (c.xkind, c.end, c.xstatus, c.xreq, c.bytes_rev, c.bytes_fwd) == \
                (X_DONE, JobEnd.DONE, 204, len(head), len(body), 0)
    run(main())


def test_a_body_request_handed_over_says_its_body_went_with_it(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    body = b"x=1&y=2"
    head = b"PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2], status_max=499)
            client.sendall(head + body)
            want = forwarded(head) + body
            assert await read_all(origin2, len(want)) == want
            origin2.sendall(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n")
            await until(lambda: lender.ended)
            n = lender.ended[0]
            assert (n.xkind, n.head, n.more) == (X_HANDOVER, head, len(body))
            assert lender.credits[0].xkind == X_HANDOVER and lender.credits[0].phase is Phase.END
    run(main())


def test_the_forwarded_head_matches_pythons_for_browser_like_heads(net):
    """The engine's forwarded head is byte for byte what h1.forwarded_request() writes."""
    heads = [
        b"GET /p?q=%d HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: Mozilla/5.0 (X11)\r\n"
        b"Accept: text/html,*/*;q=0.8\r\nCookie: sid=%d; theme=dark\r\nReferer: http://example.com/%d\r\n"
        b"Connection: keep-alive\r\n\r\n" % (i, i * 7, i * 3) for i in range(3)
    ] + [b"GET / HTTP/1.1\r\nhost: a\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n",
         b"HEAD /x HTTP/1.1\r\nConnection: keep-alive\r\nHost: a:8080\r\n\r\n"]
    origin, srv = net.tcp()
    cli, client = net.tcp()
    servers = [net.tcp() for _ in heads]

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [p[1] for p in servers])
            for k, head in enumerate(heads):
                client.sendall(head)
                want = forwarded(head)
                assert await read_all(servers[k][0], len(want)) == want
                servers[k][0].sendall(RESP + (b"" if head.startswith(b"HEAD") else b"hello"))
                await until(lambda: len(lender.credits) == k + 1)
                assert lender.credits[k].xkind == X_DONE
            assert lender.wants == len(heads)
    run(main())


def test_no_buffer_beyond_one_a_job_means_no_express_lane(net):
    """Without head buffers beyond one a job (nbufs == maxjobs) the engine never takes the
    express lane: the jobs must never lack a buffer."""
    origin, srv = net.tcp()
    cli, client = net.tcp()
    head = b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=8) as e:
            lender = await first_exchange(e, origin, srv, cli, client)
            client.sendall(head)
            await until(lambda: lender.ended)
            assert (lender.ended[0].head, lender.ended[0].xkind, lender.wants) == (head, 0, 0)
    run(main())


def test_a_request_that_closes_goes_on_the_lane_then_its_head_job_ends_closed(net):
    """`Connection: close` (nothing behind it): the response gets `Connection: close`, the
    credit ends X_DONE, then the head job ends X_CLOSED without a head: the caller closes."""
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    head = b"GET /bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    closing = b"HTTP/1.1 200 OK\r\nServer: o\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2])
            client.sendall(head)
            want = forwarded(head)
            assert b"Connection" not in want  # the server connection stays alive
            assert await read_all(origin2, len(want)) == want
            origin2.sendall(RESP + b"world")
            assert await read_all(client, len(closing) + 5) == closing + b"world"
            await until(lambda: lender.ended)
            c, n = lender.credits[0], lender.ended[0]
            assert (c.xkind, c.end, c.xstatus, c.bytes_fwd) == (X_DONE, JobEnd.DONE, 200, 5)
            assert (n.end, n.xkind, n.head) == (JobEnd.DONE, X_CLOSED, None)
            assert e.stats().jobs_active == 0
    run(main())


def test_a_request_that_closes_with_bytes_behind_it_goes_to_the_caller(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    head = b"GET /bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client)
            client.sendall(head + b"GET /more HTTP/1.1\r\n")  # (the caller drains it before closing)
            await until(lambda: lender.ended)
            assert (lender.ended[0].head, lender.ended[0].xkind, lender.wants) == (head, 0, 0)
    run(main())


def test_a_head_only_job_armed_takes_the_lane_from_its_own_head(net):
    """A connection's first request: the head-only job asks its credit, the request goes
    on it, and the same job reads the next head (which takes the lane again)."""
    cli, client = net.tcp()
    (o1, s1), (o2, s2) = net.tcp(2)
    heads = [b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n", b"HEAD /2 HTTP/1.1\r\nHost: x\r\n\r\n"]

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = first_head(e, cli, [s1, s2])
            for k, (head, origin) in enumerate(zip(heads, (o1, o2))):
                client.sendall(head)
                want = forwarded(head)
                assert await read_all(origin, len(want)) == want
                origin.sendall(RESP + (b"hello" if k == 0 else b""))
                assert await read_all(client, len(RESP) + (5 if k == 0 else 0)) == RESP + (b"hello" if k == 0 else b"")
                await until(lambda: len(lender.credits) == k + 1)
                assert (lender.credits[k].xkind, lender.credits[k].xother) == (X_DONE, lender.head_id)
            assert lender.wants == 2 and not lender.ended
            client.close()
            await until(lambda: lender.ended)
            assert (lender.ended[0].end, lender.ended[0].head, lender.ended[0].xkind) in \
                ((JobEnd.DONE, None, 0), (JobEnd.PEER_CLOSED, None, 0))
            assert e.stats().jobs_active == 0
    run(main())


def test_a_new_connection_credit_carries_the_request_once_connected(net):
    """A credit of a socket whose connect() is under way (connect_ms): the engine sends the
    request once it is established and relays the response."""
    cli, client = net.tcp()
    lst = listening(net)
    head = b"GET /new HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            srv = connecting(lst.getsockname()[1])
            lender = first_head(e, cli, [(srv, 5.0)])
            client.sendall(head)
            origin, _ = await asyncio.get_running_loop().sock_accept(lst)
            origin.setblocking(False)
            want = forwarded(head)
            assert await read_all(origin, len(want)) == want
            origin.sendall(RESP + b"fresh")
            assert await read_all(client, len(RESP) + 5) == RESP + b"fresh"
            await until(lambda: lender.credits)
            assert (lender.credits[0].xkind, lender.credits[0].xstatus, lender.bodies) == (X_DONE, 200, [0])
            origin.close()
            srv.close()
    run(main())


def test_a_new_connection_that_fails_hands_the_request_over_in_phase_send(net):
    """The connect is refused: the credit ends X_HANDOVER in phase SEND with the errno, the
    head job X_HANDOVER with the request head (the caller's acquire retries it)."""
    cli, client = net.tcp()
    lst = listening(net)
    port = lst.getsockname()[1]
    lst.close()  # nobody listens there
    head = b"GET /dead HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            srv = connecting(port)
            lender = first_head(e, cli, [(srv, 5.0)])
            client.sendall(head)
            await until(lambda: lender.ended)
            c, n = lender.credits[0], lender.ended[0]
            assert (c.xkind, c.phase, c.end, c.errno) == (X_HANDOVER, Phase.SEND, JobEnd.ERROR, errno.ECONNREFUSED)
            assert (n.xkind, n.head, n.more) == (X_HANDOVER, head, 0)
            srv.close()
            assert e.stats().jobs_active == 0
    run(main())


def test_a_body_announced_in_the_want_and_never_sent_on_a_new_connection(net):
    """X_WANT says the request's body length; a new connection's credit does not carry a
    body (it could not be sent again if the connect failed): it comes back unused and the
    head goes to the caller with its body unread."""
    cli, client = net.tcp()
    lst = listening(net)
    body = b"a=1"
    head = b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            srv = connecting(lst.getsockname()[1])
            lender = first_head(e, cli, [(srv, 5.0)])
            client.sendall(head + body)
            await until(lambda: lender.ended and lender.credits)
            assert lender.bodies == [3]
            assert [c.xkind for c in lender.credits] == [X_UNUSED]
            assert (lender.ended[0].xkind, lender.ended[0].head, lender.ended[0].more) == (0, head, 3)
            assert cli.recv(10) == body  # still in the socket
            srv.close()
    run(main())


def test_a_response_that_says_close_tells_its_connection_is_not_to_be_reused(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    origin2, srv2 = net.tcp()
    head = b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = await first_exchange(e, origin, srv, cli, client, [srv2])
            client.sendall(head)
            await read_all(origin2, len(forwarded(head)))
            origin2.sendall(resp)
            assert await read_all(client, len(resp) - len(b"Connection: close\r\n")) == \
                resp.replace(b"Connection: close\r\n", b"")  # (the client keeps its connection)
            await until(lambda: lender.credits)
            assert (lender.credits[0].xkind, lender.credits[0].xclose) == (X_DONE, True)
    run(main())


def test_a_new_connection_that_does_not_connect_in_time_is_handed_over_timed_out(net):
    """connect_ms bounds the connect: a server whose accept queue is full drops the SYN (the
    connect hangs); the credit ends X_HANDOVER, TIMEOUT, in phase SEND, well before the
    server timeout (5 s here)."""
    cli, client = net.tcp()
    port = listening(net, 0).getsockname()[1]
    queued = socket.create_connection(("127.0.0.1", port))  # fills the accept queue
    net.made.append(queued)
    head = b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            srv = connecting(port)
            lender = first_head(e, cli, [(srv, 0.3)])
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            client.sendall(head)
            await until(lambda: lender.ended, timeout=4.0)
            c, n = lender.credits[0], lender.ended[0]
            assert (c.xkind, c.phase, c.end) == (X_HANDOVER, Phase.SEND, JobEnd.TIMEOUT)
            assert (n.xkind, n.head) == (X_HANDOVER, head)
            assert 0.25 < loop.time() - t0 < 3.0
            srv.close()
    run(main())


def test_under_xlog_each_done_carries_its_request_head_and_every_buffer_comes_back(net):
    """RELAY_XLOG (a lane whose frontend logs): each credit's X_DONE brings the request head
    as the client sent it (no index: the log wants its line only). Three times more
    requests than the engine has head buffers go on one connection: a buffer kept by a
    completion and never given back would stop the lane (its requests would go to the
    caller) long before the last."""
    cli, client = net.tcp()
    origin, srv = net.tcp()
    n = 48

    async def main():
        async with engine(maxjobs=8, bufsize=4096, nbufs=16) as e:
            lender = first_head(e, cli, [srv] * n, flags=RELAY_XLOG)
            for k in range(n):
                head = b"GET /%d?u=%s HTTP/1.1\r\nHost: x\r\nCookie: id=%d\r\n\r\n" % (k, b"v" * k, k * 7)
                client.sendall(head)
                want = forwarded(head)
                assert await read_all(origin, len(want)) == want
                origin.sendall(RESP + b"hello")
                assert await read_all(client, len(RESP) + 5) == RESP + b"hello"
                await until(lambda: len(lender.credits) == k + 1)
                c = lender.credits[k]
                assert (c.xkind, c.head, c.index, c.xreq, c.xstatus) == (X_DONE, head, None, len(head), 200)
            assert lender.wants == n and not lender.ended
            client.close()
            await until(lambda: lender.ended)
            assert e.stats().jobs_active == 0
    run(main())
