"""PipePool: lending, recycling and killing kernel pipes; counters; no fd leaks."""
import errno
import os

import pytest

from splicer.engine.binding import UNTIL_EOF, PipePool, PoolStats, Stop
from splicer.errors import EngineBusy, EngineError

from .conftest import fd_count, recv_all_available

PAGE = os.sysconf("SC_PAGE_SIZE")


def test_new_pool_stats_are_zero():
    p = PipePool(pipesize=4096, maxpipes=3)
    try:
        assert p.stats() == PoolStats(spliced_bytes=0, splice_calls=0, eagain_waits=0, pipes_used=0, pipes_free=0,
                                      pipes_max=3, pipe_size=0, pipes_killed=0, pipe_failures=0)
    finally:
        p.close()


def test_get_creates_pipe_of_requested_size(pool):
    pipe = pool.get()
    assert (pipe.size, pipe.data) == (4096, 0)
    s = pool.stats()
    assert (s.pipes_used, s.pipes_free, s.pipe_size) == (1, 0, 4096)


def test_pipesize_is_rounded_up_to_a_power_of_two_pages():
    p = PipePool(pipesize=PAGE + 1, maxpipes=1)
    try:
        assert p.get().size == 2 * PAGE
    finally:
        p.close()


def test_default_pipesize_is_kernel_default():
    p = PipePool()
    try:
        pipe = p.get()
        assert pipe.size == 16 * PAGE           # Linux PIPE_DEF_BUFFERS pages
        assert p.stats().pipes_max == 1024
    finally:
        p.close()


def test_put_empty_pipe_is_recycled(pool):
    pipe = pool.get()
    first = (pipe._c.index, pipe._c.prod, pipe._c.cons)
    n = fd_count()
    pool.put(pipe)
    s = pool.stats()
    assert (s.pipes_used, s.pipes_free, s.pipes_killed) == (0, 1, 0)
    assert fd_count() == n                       # kept open for the next user
    again = pool.get()
    assert (again._c.index, again._c.prod, again._c.cons) == first
    assert fd_count() == n
    assert (pool.stats().pipes_used, pool.stats().pipes_free) == (1, 0)


def test_put_twice_is_harmless(pool):
    pipe = pool.get()
    pool.put(pipe)
    pool.put(pipe)
    assert (pool.stats().pipes_used, pool.stats().pipes_free) == (0, 1)


def test_pool_exhaustion_raises_engine_busy():
    p = PipePool(pipesize=4096, maxpipes=2)
    try:
        a, b = p.get(), p.get()
        with pytest.raises(EngineBusy) as exc:
            p.get()
        assert exc.value.errno == errno.EAGAIN
        s = p.stats()
        assert (s.pipes_used, s.pipes_free, s.pipe_failures) == (2, 0, 0)
        p.put(a)
        c = p.get()
        assert c._c.index == 0
        with pytest.raises(EngineBusy):
            p.get()
        p.put(b)
        p.put(c)
        assert (p.stats().pipes_used, p.stats().pipes_free) == (0, 2)
    finally:
        p.close()


def _pipe_holding_data(pool, sockets, n=10):
    """A pipe left with `n` bytes in it: its destination was closed under it."""
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    peer.close()
    w.send(b"s" * n)
    pipe = pool.get()
    mv = pipe.pump(r.fileno(), d.fileno(), UNTIL_EOF)
    assert (mv.how, mv.bytes_in, mv.bytes_out, mv.err) == (Stop.DST_ERROR, n, 0, errno.EPIPE)
    assert pipe.data == n
    return pipe


def test_pipe_put_back_holding_data_is_killed(pool, sockets):
    pipe = _pipe_holding_data(pool, sockets)
    n = fd_count()
    pool.put(pipe)
    s = pool.stats()
    assert (s.pipes_used, s.pipes_free, s.pipes_killed) == (0, 0, 1)
    assert fd_count() == n - 2                   # both ends closed


def test_killed_pipe_bytes_never_reach_another_stream(pool, sockets):
    unix, _ = sockets
    pool.put(_pipe_holding_data(pool, sockets, n=7))
    fresh = pool.get()
    assert (fresh.data, fresh.size) == (0, 4096)
    assert pool.stats().pipes_killed == 1
    w, r = unix()
    d, peer = unix()
    mv = fresh.pump(r.fileno(), d.fileno(), UNTIL_EOF)
    assert (mv.bytes_in, mv.bytes_out, mv.how) == (0, 0, Stop.SRC_AGAIN)
    assert recv_all_available(peer) == b""
    w.send(b"new")
    mv = fresh.pump(r.fileno(), d.fileno(), UNTIL_EOF)
    assert (mv.bytes_in, mv.bytes_out, mv.how) == (3, 3, Stop.SRC_AGAIN)
    assert recv_all_available(peer) == b"new"


def test_pump_on_returned_pipe_is_einval(pool, sockets):
    unix, _ = sockets
    w, r = unix()
    pipe = pool.get()
    pool.put(pipe)
    with pytest.raises(EngineError) as exc:
        pipe.pump(r.fileno(), w.fileno())
    assert exc.value.errno == errno.EINVAL


@pytest.mark.parametrize("src, dst", [(-1, 0), (0, -1)])
def test_pump_negative_fd_is_einval(pool, src, dst):
    with pytest.raises(EngineError) as exc:
        pool.get().pump(src, dst)
    assert exc.value.errno == errno.EINVAL


def test_close_frees_lent_pipes_and_is_idempotent():
    before = fd_count()
    p = PipePool(maxpipes=2)
    p.get()
    p.get()
    assert fd_count() == before + 4
    p.close()
    assert fd_count() == before
    p.close()
    assert p._c is None and fd_count() == before


def test_no_fd_leaked_by_pools():
    before = fd_count()
    pools = [PipePool(pipesize=4096, maxpipes=8) for _ in range(3)]
    assert fd_count() == before                  # pipes are created lazily
    lent = [p.get() for p in pools for _ in range(3)]
    assert fd_count() == before + 2 * len(lent)
    for p in pools:
        p.put(lent.pop())                        # one back on each free list
    assert fd_count() == before + 2 * 9
    for p in pools:
        p.close()                                # closes free and lent pipes alike
    assert fd_count() == before


def test_no_fd_leaked_when_pipes_are_killed(sockets):
    before = fd_count()
    p = PipePool(pipesize=4096, maxpipes=2)
    unix, _ = sockets
    w, r = unix()
    d, peer = unix()
    opened = fd_count()
    peer.close()
    for _ in range(5):
        pipe = p.get()
        w.send(b"x")
        assert pipe.pump(r.fileno(), d.fileno()).how is Stop.DST_ERROR
        p.put(pipe)
    assert p.stats().pipes_killed == 5
    assert fd_count() == opened - 1              # only `peer` closed: no pipe left open
    p.close()
    for s in (w, r, d):
        s.close()
    assert fd_count() == before
