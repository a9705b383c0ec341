"""spl_pump through Pipe.pump: exact counts, EAGAIN on either side, EOF, budget, errors.

Naming: bytes go writer `w` -> `r` (the pump's source) and `d` (the pump's destination)
-> `peer`. Every byte that reaches `peer` is checked, so "sent" means "arrived".
"""
import errno
import hashlib
import os
import select
import socket
import struct
import time

import pytest

from splicer.engine.binding import UNTIL_EOF, Move, PipePool, Stop

from .conftest import recv_all_available, wait_for


def test_src_again_when_source_is_empty(pool, sockets):
    unix, _ = sockets
    _w, r = unix()
    d, _peer = unix()
    pipe = pool.get()
    assert pipe.pump(r.fileno(), d.fileno()) == Move(0, 0, Stop.SRC_AGAIN, 0)
    s = pool.stats()
    assert (s.splice_calls, s.eagain_waits, s.spliced_bytes) == (1, 1, 0)


def test_exact_count_leaves_pipelined_bytes_in_source(pool, sockets):
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    w.send(b"A" * 100 + b"GET /next HTTP/1.1\r\n")
    pipe = pool.get()
    assert pipe.pump(r.fileno(), d.fileno(), max_in=100) == Move(100, 100, Stop.DONE, 0)
    assert pipe.data == 0
    assert recv_all_available(peer) == b"A" * 100
    assert r.recv(1000) == b"GET /next HTTP/1.1\r\n"
    assert pool.stats().spliced_bytes == 100


def test_exact_count_over_several_reads_and_pipe_sizes(pool, sockets):
    # 10000 > 4096-byte pipe: the count is honoured across refills
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    body = os.urandom(10000)
    w.send(body + b"NEXT")
    pipe = pool.get()
    assert pipe.pump(r.fileno(), d.fileno(), max_in=10000) == Move(10000, 10000, Stop.DONE, 0)
    assert recv_all_available(peer) == body
    assert r.recv(100) == b"NEXT"


def test_partial_count_waits_for_source_then_completes(pool, sockets):
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    pipe = pool.get()
    w.send(b"x" * 60)
    assert pipe.pump(r.fileno(), d.fileno(), max_in=100) == Move(60, 60, Stop.SRC_AGAIN, 0)
    w.send(b"y" * 40 + b"z")
    assert pipe.pump(r.fileno(), d.fileno(), max_in=40) == Move(40, 40, Stop.DONE, 0)
    assert recv_all_available(peer) == b"x" * 60 + b"y" * 40
    assert r.recv(10) == b"z"


def test_zero_count_is_done_without_reading(pool, sockets):
    unix, _ = sockets
    w, r = unix()
    d, _peer = unix()
    w.send(b"keep")
    pipe = pool.get()
    assert pipe.pump(r.fileno(), d.fileno(), max_in=0) == Move(0, 0, Stop.DONE, 0)
    assert pool.stats().splice_calls == 0
    assert r.recv(10) == b"keep"


def test_until_eof_reports_eof_after_all_bytes(pool, sockets):
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    body = os.urandom(3000)
    w.send(body)
    w.shutdown(socket.SHUT_WR)
    pipe = pool.get()
    assert pipe.pump(r.fileno(), d.fileno()) == Move(3000, 3000, Stop.EOF, 0)
    assert pipe.data == 0
    assert recv_all_available(peer) == body
    assert pipe.pump(r.fileno(), d.fileno()) == Move(0, 0, Stop.EOF, 0)


def test_exact_count_hitting_eof_early_reports_eof(pool, sockets):
    unix, _ = sockets
    w, r = unix()
    d, _peer = unix()
    w.send(b"short")
    w.shutdown(socket.SHUT_WR)
    pipe = pool.get()
    assert pipe.pump(r.fileno(), d.fileno(), max_in=100) == Move(5, 5, Stop.EOF, 0)


def test_budget_returns_budget_and_resumes(sockets):
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    body = os.urandom(20000)
    w.send(body)
    p = PipePool(pipesize=4096, maxpipes=1)
    try:
        pipe = p.get()
        moves = []
        while True:
            mv = pipe.pump(r.fileno(), d.fileno(), UNTIL_EOF, budget=1)
            moves.append(mv)
            if mv.how is not Stop.BUDGET:
                break
            assert 0 < mv.bytes_out == mv.bytes_in <= 4096   # one pipeful at most past the budget
            assert pipe.data == 0
        assert moves[-1] == Move(0, 0, Stop.SRC_AGAIN, 0)
        assert len(moves) - 1 >= 5                            # 20000 bytes / 4096 per call
        assert sum(m.bytes_out for m in moves) == 20000
        assert recv_all_available(peer) == body
    finally:
        p.close()


def test_budget_of_pipe_size_stops_after_each_pipeful(sockets):
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    w.send(b"b" * 20000)
    p = PipePool(pipesize=4096, maxpipes=1)
    try:
        pipe = p.get()
        mv = pipe.pump(r.fileno(), d.fileno(), UNTIL_EOF, budget=8192)
        assert mv.how is Stop.BUDGET
        assert 8192 <= mv.bytes_out < 8192 + 4096
        assert len(recv_all_available(peer)) == mv.bytes_out
    finally:
        p.close()


def test_budget_not_reached_returns_real_reason(pool, sockets):
    unix, _ = sockets
    w, r = unix()
    d, _peer = unix()
    w.send(b"abc")
    assert pool.get().pump(r.fileno(), d.fileno(), UNTIL_EOF, budget=1 << 20) == Move(3, 3, Stop.SRC_AGAIN, 0)


def test_write_to_closed_unix_peer_is_epipe(pool, sockets):
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    peer.close()
    w.send(b"12345")
    pipe = pool.get()
    assert pipe.pump(r.fileno(), d.fileno()) == Move(5, 0, Stop.DST_ERROR, errno.EPIPE)
    assert pipe.data == 5                       # not sent, still owed: put() will kill the pipe


def test_write_to_reset_tcp_peer_is_dst_error(pool, sockets):
    _, tcp = sockets
    w, r = tcp()
    d, peer = tcp()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.close()                                # RST
    wait_for(d, select.POLLERR | select.POLLHUP)
    w.send(b"hello")
    wait_for(r, select.POLLIN)
    mv = pool.get().pump(r.fileno(), d.fileno())
    assert (mv.how, mv.bytes_in, mv.bytes_out) == (Stop.DST_ERROR, 5, 0)
    assert mv.err in (errno.EPIPE, errno.ECONNRESET)


def test_write_to_closed_tcp_peer_is_dst_error(pool, sockets):
    # a peer that closed normally (FIN): the first write draws an RST, a later one fails
    _, tcp = sockets
    w, r = tcp()
    d, peer = tcp()
    peer.close()
    wait_for(d, select.POLLIN)                  # the FIN arrived
    pipe = pool.get()
    moves = []
    for _ in range(50):
        w.send(b"x" * 100)
        wait_for(r, select.POLLIN)
        mv = pipe.pump(r.fileno(), d.fileno())
        moves.append(mv)
        if mv.how is not Stop.SRC_AGAIN:
            break
        time.sleep(0.01)
    assert moves[-1].how is Stop.DST_ERROR
    assert moves[-1].err in (errno.EPIPE, errno.ECONNRESET)
    assert all(m.how is Stop.SRC_AGAIN for m in moves[:-1])


def test_reset_source_is_src_error(pool, sockets):
    _, tcp = sockets
    w, r = tcp()
    d, _peer = tcp()
    w.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    w.close()
    wait_for(r, select.POLLIN | select.POLLERR | select.POLLHUP)
    assert pool.get().pump(r.fileno(), d.fileno()) == Move(0, 0, Stop.SRC_ERROR, errno.ECONNRESET)


def _fill_until_dst_again(pipe, w, r, d, data):
    """Feed `data` into the source and pump, without the destination's peer reading, until
    the pump reports DST_AGAIN. Returns (bytes written into w, moves)."""
    sent = 0
    moves = []
    for _ in range(10000):
        if sent < len(data):
            try:
                sent += w.send(data[sent:sent + 65536])
            except BlockingIOError:
                pass
        mv = pipe.pump(r.fileno(), d.fileno())
        moves.append(mv)
        if mv.how is Stop.DST_AGAIN:
            return sent, moves
        assert mv.how is Stop.SRC_AGAIN, mv
        select.select([r], [], [], 0.05)
    pytest.fail("destination never filled up")


def test_dst_again_when_destination_is_full(sockets):
    _, tcp = sockets
    w, r = tcp()
    d, _peer = tcp(sndbuf=4096, rcvbuf=4096)
    p = PipePool(pipesize=65536, maxpipes=1)
    try:
        pipe = p.get()
        data = os.urandom(4 << 20)
        _sent, moves = _fill_until_dst_again(pipe, w, r, d, data)
        last = moves[-1]
        assert last.err == 0 and pipe.data > 0
        assert sum(m.bytes_in for m in moves) - sum(m.bytes_out for m in moves) == pipe.data
        waits = p.stats().eagain_waits
        # the peer still does not read: another pump moves nothing and says the same
        assert pipe.pump(r.fileno(), d.fileno()) == Move(0, 0, Stop.DST_AGAIN, 0)
        assert p.stats().eagain_waits == waits + 1
    finally:
        p.close()


def test_resume_after_dst_again_delivers_every_byte_once(sockets):
    _, tcp = sockets
    w, r = tcp()
    d, peer = tcp(sndbuf=4096, rcvbuf=4096)
    p = PipePool(pipesize=65536, maxpipes=1)
    try:
        pipe = p.get()
        data = os.urandom(4 << 20)
        sent, moves = _fill_until_dst_again(pipe, w, r, d, data)
        got = bytearray()
        shut = False
        hows = [m.how for m in moves]
        for _ in range(200000):
            if sent < len(data):
                try:
                    sent += w.send(data[sent:sent + 65536])
                except BlockingIOError:
                    pass
            elif not shut:
                w.shutdown(socket.SHUT_WR)
                shut = True
            mv = pipe.pump(r.fileno(), d.fileno())
            moves.append(mv)
            hows.append(mv.how)
            if mv.how is Stop.EOF:
                assert pipe.data == 0
                break
            assert mv.how in (Stop.SRC_AGAIN, Stop.DST_AGAIN), mv
            if mv.how is Stop.DST_AGAIN:
                assert pipe.data > 0
                wait_for(peer, select.POLLIN)
                got += recv_all_available(peer)
            else:
                select.select([r], [], [], 0.05)
        else:
            pytest.fail("pump never reached EOF")
        d.shutdown(socket.SHUT_WR)
        peer.setblocking(True)
        while chunk := peer.recv(1 << 20):
            got += chunk
        assert hows.count(Stop.DST_AGAIN) >= 2
        assert sum(m.bytes_in for m in moves) == sum(m.bytes_out for m in moves) == len(data)
        assert len(got) == len(data)
        assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest()
        assert p.stats().spliced_bytes == len(data)
    finally:
        p.close()


def test_eof_is_not_reported_while_the_pipe_holds_data(sockets):
    _, tcp = sockets
    w, r = tcp()
    d, peer = tcp(sndbuf=4096, rcvbuf=4096)
    p = PipePool(pipesize=65536, maxpipes=1)
    try:
        pipe = p.get()
        data = os.urandom(64 << 10)               # one pipeful: far more than d and peer buffer
        assert w.send(data) == len(data)
        w.shutdown(socket.SHUT_WR)
        wait_for(r, select.POLLIN)
        time.sleep(0.05)
        mv = pipe.pump(r.fileno(), d.fileno())
        assert mv.how is Stop.DST_AGAIN and pipe.data > 0
        # source is at EOF behind the pipe's bytes, destination still full: never EOF yet
        assert pipe.pump(r.fileno(), d.fileno()) == Move(0, 0, Stop.DST_AGAIN, 0)
        got = bytearray()
        total_out = mv.bytes_out
        for _ in range(100000):
            wait_for(peer, select.POLLIN)
            got += recv_all_available(peer)
            mv = pipe.pump(r.fileno(), d.fileno())
            total_out += mv.bytes_out
            if mv.how is Stop.EOF:
                break
            assert mv.how in (Stop.DST_AGAIN, Stop.SRC_AGAIN), mv
            if mv.how is Stop.SRC_AGAIN:
                wait_for(r, select.POLLIN)
        assert mv.how is Stop.EOF
        assert (pipe.data, total_out) == (0, len(data))
        d.shutdown(socket.SHUT_WR)
        peer.setblocking(True)
        while chunk := peer.recv(1 << 20):
            got += chunk
        assert bytes(got) == data
    finally:
        p.close()
