"""SPL_JOB_RELAY: a request job that sends a plain response on to the client by itself.

The job sends the request head to the server, reads the response head and, when
spl_h1_relay() takes it, writes the forwarded head to the client, moves the body (copied or
spliced) and goes on reading the client's next request head, with one completion for it all.
Real loopback TCP pairs: `origin` <-> `srv` (the proxy's server connection) and `cli` <->
`client` (the proxy's client connection); every wait is bounded (conftest.run).
"""
from __future__ import annotations

import asyncio
import socket

from splicer.engine import binding
from splicer.engine.binding import JOB_RELAY, RELAY_CLOSE_CLIENT, RELAY_KEEP_ALIVE, RELAY_NO_BODY, UNTIL_EOF
from splicer.engine.engine import JobEnd, Phase, ms
from splicer.http import h1
from tests.engine.conftest import engine, fd_count, run
from tests.engine.test_heads import REQ, read_all

RESP = b"HTTP/1.1 200 OK\r\nServer: o\r\nContent-Length: 5\r\nConnection: keep-alive\r\nX-A: 1\r\n\r\n"
FWD = b"HTTP/1.1 200 OK\r\nServer: o\r\nContent-Length: 5\r\nX-A: 1\r\n\r\n"
NEXT = b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n"


def relay_job(e, srv, cli, status_max=599, no_body=False, splice_min=UNTIL_EOF, first=5.0, done=None, flags=0):
    """Submit the request job; returns ((id, fut), (next id, next fut))."""
    relay = (status_max, cli.fileno(), e.gen(cli), 5000, ms(first), ms(5.0),
             (RELAY_NO_BODY if no_body else 0) | flags, splice_min)
    job = e.submit(-1, srv.fileno(), 0, JOB_RELAY, 0, 5000, REQ, srv.fileno(), 5000, 5000, 4000,
                   dst_gen=e.gen(srv), relay=relay, done=done)
    return job, e.chained


async def request_in(origin: socket.socket) -> None:
    assert await read_all(origin, len(REQ)) == REQ


def test_a_plain_response_is_relayed_and_the_next_request_head_read(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli)
            await request_in(origin)
            origin.sendall(RESP + b"hello")
            c = await e.wait(*job)
            assert (c.end, c.phase, c.relayed, c.bytes_fwd, c.spliced) == (JobEnd.DONE, Phase.END, len(FWD), 5, False)
            assert c.head == RESP and c.index is not None  # the server's head, indexed, for Python
            assert not c.index[3] & h1.F_CONN_CLOSE
            assert await read_all(client, len(FWD) + 5) == FWD + b"hello"
            client.sendall(NEXT)
            n = await e.wait(*nxt)
            assert (n.end, n.head) == (JobEnd.DONE, NEXT)
            assert n.index == binding.h1_index(NEXT)  # the next head tokenized anew, not the response's index
            assert e.stats().jobs_active == 0
    run(main())


def test_a_relayed_head_that_says_close_is_reported(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCONNECTION: Close\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli)
            await request_in(origin)
            origin.sendall(head + b"ok")
            c = await e.wait(*job)
            assert (c.end, c.relayed, bool(c.index[3] & h1.F_CONN_CLOSE)) == (JobEnd.DONE, len(head) - 19, True)
            assert await read_all(client, len(head) - 19 + 2) == b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            await e.abandon(*nxt)
    run(main())


def test_a_client_that_closes_gets_connection_close_and_no_next_head_is_read(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    fwd = FWD[:-2] + b"Connection: close\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli, flags=RELAY_CLOSE_CLIENT)
            await request_in(origin)
            origin.sendall(RESP + b"hello")
            n = await e.wait(*nxt)
            assert n.end is JobEnd.CANCELLED  # at once: the client does not go on
            c = await e.wait(*job)
            assert (c.end, c.phase, c.relayed, c.bytes_fwd) == (JobEnd.DONE, Phase.END, len(fwd), 5)
            assert await read_all(client, len(fwd) + 5) == fwd + b"hello"
            assert e.stats().jobs_active == 0
    run(main())


def test_an_http_1_0_client_that_keeps_its_connection_is_told_so(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    fwd = FWD[:-2] + b"Connection: keep-alive\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli, flags=RELAY_KEEP_ALIVE)
            await request_in(origin)
            origin.sendall(RESP + b"hello")
            c = await e.wait(*job)
            assert (c.end, c.relayed) == (JobEnd.DONE, len(fwd))
            assert await read_all(client, len(fwd) + 5) == fwd + b"hello"
            client.sendall(NEXT)
            assert (await e.wait(*nxt)).head == NEXT
    run(main())


def test_a_big_body_is_spliced_whole(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    body = bytes(range(256)) * 1024  # 256 KiB
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)

    async def main():
        async with engine(maxjobs=8, bufsize=4096, maxpipes=4) as e:
            job, nxt = relay_job(e, srv, cli, splice_min=4096)
            await request_in(origin)
            origin.sendall(head)
            got = asyncio.ensure_future(read_all(client, len(head) + len(body)))
            await asyncio.get_running_loop().sock_sendall(origin, body)
            c = await e.wait(*job)
            assert (c.end, c.relayed, c.bytes_fwd, c.spliced) == (JobEnd.DONE, len(head), len(body), True)
            assert await got == head + body
            await e.abandon(*nxt)
    run(main())


def test_a_copied_body_that_came_with_its_head_goes_on_with_it(net):
    """The peek that finds the response head's end sees the body behind it: a body the relay
    copies is read with the head (one recv) and sent with it; the head goes to Python alone."""
    origin, srv = net.tcp()
    cli, client = net.tcp()
    body = bytes(range(200)) * 10
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)

    async def main():
        async with engine(maxjobs=8, bufsize=4096, maxpipes=4) as e:
            job, nxt = relay_job(e, srv, cli, splice_min=4096)
            await request_in(origin)
            origin.sendall(head + body[:1500])  # one segment: the head and a part of the body
            got = asyncio.ensure_future(read_all(client, len(head) + len(body)))
            await asyncio.sleep(0.05)
            origin.sendall(body[1500:])
            c = await e.wait(*job)
            assert (c.end, c.relayed, c.bytes_fwd, c.spliced, c.head) == (JobEnd.DONE, len(head), len(body),
                                                                          False, head)
            assert await got == head + body
            await e.abandon(*nxt)
    run(main())


def test_a_body_to_splice_stays_in_the_kernel_even_when_it_came_with_its_head(net):
    """Bytes of a body the relay splices are not read with the head: the pipe takes them."""
    origin, srv = net.tcp()
    cli, client = net.tcp()
    body = bytes(range(256)) * 32  # 8 KiB
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)

    async def main():
        async with engine(maxjobs=8, bufsize=4096, maxpipes=4) as e:
            job, nxt = relay_job(e, srv, cli, splice_min=1000)
            await request_in(origin)
            origin.sendall(head + body)
            got = asyncio.ensure_future(read_all(client, len(head) + len(body)))
            c = await e.wait(*job)
            assert (c.end, c.relayed, c.bytes_fwd, c.spliced, c.head) == (JobEnd.DONE, len(head), len(body),
                                                                          True, head)
            assert await got == head + body
            assert e.stats().spliced_bytes == len(body)  # every body byte went through the pipe
            await e.abandon(*nxt)
            assert e.stats().pipes_used == 0
    run(main())


def test_bytes_behind_the_body_stay_in_the_server_socket(net):
    """A server that sends more than its response's body (a second, unsolicited response):
    the relay reads the body's bytes only; what follows stays for Python to find."""
    origin, srv = net.tcp()
    cli, client = net.tcp()
    extra = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli)
            await request_in(origin)
            origin.sendall(RESP + b"hello" + extra)
            c = await e.wait(*job)
            assert (c.end, c.relayed, c.bytes_fwd, c.head) == (JobEnd.DONE, len(FWD), 5, RESP)
            assert await read_all(client, len(FWD) + 5) == FWD + b"hello"
            assert await read_all(srv, len(extra)) == extra
            await e.abandon(*nxt)
    run(main())


def test_a_copied_body_larger_than_the_room_behind_the_head_arrives_whole(net):
    """The body bytes read with the head are at most what the out buffer holds behind the
    client's head (here longer than the server's: it gets `Connection: close`, and the head
    limit is the whole buffer); the rest is copied as usual."""
    origin, srv = net.tcp()
    cli, client = net.tcp()
    body = bytes(range(251)) * 40  # 10,040 bytes: more than the 4 KiB buffers
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
    fwd = head[:-2] + b"Connection: close\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            relay = (599, cli.fileno(), e.gen(cli), 5000, ms(5.0), ms(5.0), RELAY_CLOSE_CLIENT, UNTIL_EOF)
            job = e.submit(-1, srv.fileno(), 0, JOB_RELAY, 0, 5000, REQ, srv.fileno(), 5000, 5000, 4096,
                           dst_gen=e.gen(srv), relay=relay)
            nxt = e.chained
            await request_in(origin)
            got = asyncio.ensure_future(read_all(client, len(fwd) + len(body)))
            await asyncio.get_running_loop().sock_sendall(origin, head + body)
            c = await e.wait(*job)
            assert (c.end, c.relayed, c.bytes_fwd, c.spliced, c.head) == (JobEnd.DONE, len(fwd), len(body),
                                                                          False, head)
            assert await got == fwd + body
            assert (await e.wait(*nxt)).end is JobEnd.CANCELLED
    run(main())


def test_a_head_relay_cannot_take_ends_the_job_with_it_and_cancels_the_next(net):
    """Chunked, a status above status_max, HTTP/1.0, a Connection naming a field: Python's."""
    heads = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
             b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
             b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
             b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: x-a\r\nX-A: 1\r\n\r\n",
             b"HTTP/1.1 100 Continue\r\n\r\n"]

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            for head in heads:
                origin, srv = net.tcp()
                cli, client = net.tcp()
                job, nxt = relay_job(e, srv, cli, status_max=502)
                await request_in(origin)
                origin.sendall(head + b"0\r\n\r\n")
                c = await e.wait(*job)
                assert (c.end, c.phase, c.relayed, c.head) == (JobEnd.DONE, Phase.END, 0, head), head
                assert (await e.wait(*nxt)).end is JobEnd.CANCELLED
                client.setblocking(False)
                try:
                    assert client.recv(100) == b"", head  # nothing went to the client
                except BlockingIOError:
                    pass
                assert srv.recv(100) == b"0\r\n\r\n"  # the body stays for Python to move
            assert e.stats().jobs_active == 0
    run(main())


def test_a_head_request_relays_no_body(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli, no_body=True)
            await request_in(origin)
            origin.sendall(head)
            c = await e.wait(*job)
            assert (c.end, c.relayed, c.bytes_fwd) == (JobEnd.DONE, len(head), 0)
            assert await read_all(client, len(head)) == head
            await e.abandon(*nxt)
    run(main())


def test_a_server_that_closes_mid_body_ends_the_relay_in_its_body(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli)
            await request_in(origin)
            origin.sendall(RESP + b"he")
            origin.close()
            c = await e.wait(*job)
            assert (c.end, c.phase, c.side, c.relayed, c.bytes_fwd) == (JobEnd.PEER_CLOSED, Phase.BODY, "src",
                                                                        len(FWD), 2)
            assert c.head == RESP
            assert (await e.wait(*nxt)).end is JobEnd.CANCELLED
            assert await read_all(client, len(FWD) + 2) == FWD + b"he"
    run(main())


def test_a_client_gone_fails_the_relay_on_its_side(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            client.close()  # a reset: the relay's send fails
            await asyncio.sleep(0.05)
            job, nxt = relay_job(e, srv, cli)
            await request_in(origin)
            origin.sendall(RESP + b"hello")
            c = await e.wait(*job)
            assert (c.end, c.side) == (JobEnd.ERROR, "dst") and c.relayed == len(FWD)
            assert c.phase in (Phase.SEND, Phase.BODY) and c.head == RESP
            assert (await e.wait(*nxt)).end is JobEnd.CANCELLED
    run(main())


def test_a_relay_under_way_is_visible_and_a_cancel_reports_where_it_was(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli)
            assert not e.relaying(job[0])  # the response head is not in yet
            await request_in(origin)
            origin.sendall(head + b"x" * 10)  # then the server stalls
            assert await read_all(client, len(head) + 10) == head + b"x" * 10
            assert e.relaying(job[0])
            await e.abandon(*job)
            c = job[1].result()
            assert (c.end, c.relayed, c.bytes_fwd, c.head) == (JobEnd.CANCELLED, len(head), 10, head)
            assert (await e.wait(*nxt)).end is JobEnd.CANCELLED
            assert not e.relaying(job[0])
    run(main())


def test_the_next_head_cancelled_before_the_relay_leaves_the_response_to_python(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            job, nxt = relay_job(e, srv, cli)
            await request_in(origin)
            await e.abandon(*nxt)
            assert nxt[1].result().end is JobEnd.CANCELLED
            origin.sendall(RESP + b"hello")
            c = await e.wait(*job)
            assert (c.end, c.relayed, c.head) == (JobEnd.DONE, 0, RESP)
    run(main())


def test_closing_the_engine_reports_a_relay_under_way_to_its_callback(net):
    origin, srv = net.tcp()
    cli, client = net.tcp()
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
    got = []

    async def main():
        async with engine(maxjobs=8, bufsize=4096) as e:
            relay_job(e, srv, cli, done=got.append)
            e.then(e.chained, got.append)
            await request_in(origin)
            origin.sendall(head + b"x" * 10)
            assert await read_all(client, len(head) + 10) == head + b"x" * 10
            e.close()
            assert [(c.end, c.relayed, c.bytes_fwd) for c in got] == [(JobEnd.CANCELLED, len(head), 10),
                                                                      (JobEnd.CANCELLED, 0, 0)]
    run(main())


def test_no_fd_leaked_by_relays():
    from tests.engine.conftest import Net
    before = fd_count()
    net = Net()
    try:
        async def main():
            async with engine(maxjobs=16, bufsize=4096, maxpipes=4) as e:
                for i in range(20):
                    origin, srv = net.tcp()
                    cli, client = net.tcp()
                    job, nxt = relay_job(e, srv, cli, splice_min=4 if i % 2 else UNTIL_EOF)
                    await request_in(origin)
                    origin.sendall(RESP + b"hello")
                    assert (await e.wait(*job)).relayed
                    await e.abandon(*nxt)
        run(main())
    finally:
        net.close_all()
    assert fd_count() == before
