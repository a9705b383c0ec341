"""splicer.runtime.pool: reuse_floor() (haproxy `http-reuse`) and the IdlePool's record of
how many requests each idle connection served (pool-max-conn, aggressive reuse). The
connections are stand-ins with fileno()/close(): nothing here opens a socket."""
import pytest

from splicer.runtime import pool as pool_mod
from splicer.runtime.pool import IdlePool, reuse_floor


@pytest.fixture(autouse=True)
def fresh_totals(monkeypatch):
    """Each test starts with no idle connection counted in the process and a known limit."""
    monkeypatch.setattr(pool_mod, "_idle_total", 0)
    monkeypatch.setattr(pool_mod, "_idle_limit", 1000)


class Conn:
    def __init__(self, fd):
        self.fd, self.closed = fd, False

    def fileno(self):
        return -1 if self.closed else self.fd

    def close(self):
        self.closed = True


QUIET = lambda sock: True  # noqa: E731  every stand-in holds nothing to read


@pytest.mark.parametrize("strategy, first, later", [
    ("never", None, None),
    ("safe", None, 0),
    ("aggressive", 2, 0),
    ("always", 0, 0),
])
def test_reuse_floor(strategy, first, later):
    assert (reuse_floor(strategy, True), reuse_floor(strategy, False)) == (first, later)


def test_take_skips_connections_that_served_too_few_requests_and_keeps_them():
    pool = IdlePool()
    a, b = Conn(10), Conn(11)
    pool.put(a, 0.0, uses=3)
    pool.put(b, 0.1, uses=1)
    assert pool.take(0.2, QUIET, min_uses=2) == (a, 3)  # b is newer but unproven
    assert len(pool) == 1 and not b.closed
    assert pool.take(0.2, QUIET, min_uses=2) is None
    assert pool.take(0.2, QUIET) == (b, 1)


def test_get_returns_the_most_recent_connection():
    pool = IdlePool()
    a, b = Conn(10), Conn(11)
    pool.put(a, 0.0)
    pool.put(b, 0.1)
    assert pool.get(0.2, QUIET) is b


@pytest.mark.parametrize("max_conns, kept", [(0, 0), (1, 1), (-1, 3)])
def test_pool_max_conn(max_conns, kept):
    pool = IdlePool(max_conns=max_conns)
    conns = [Conn(10 + i) for i in range(3)]
    for i, c in enumerate(conns):
        pool.put(c, i * 0.1)
    assert len(pool) == kept
    assert [c.closed for c in conns] == [True] * (3 - kept) + [False] * kept  # the oldest go first


def test_all_pools_together_keep_at_most_their_share_of_fds(monkeypatch):
    monkeypatch.setattr(pool_mod, "_idle_limit", 2)  # tune.pool-high-fd-ratio of the fd limit
    p1, p2 = IdlePool(), IdlePool()
    a, b, c = Conn(10), Conn(11), Conn(12)
    p1.put(a, 0.0)
    p2.put(b, 0.0)
    p2.put(c, 0.0)  # a third idle connection: closed, not pooled
    assert (len(p1), len(p2), c.closed, pool_mod._idle_total) == (1, 1, True, 2)
    assert p1.take(0.1, QUIET) == (a, 1)
    assert pool_mod._idle_total == 1
    p2.put(c := Conn(13), 0.1)  # room again
    assert (len(p2), c.closed, pool_mod._idle_total) == (2, False, 2)
    p2.purge(10.0)
    assert (len(p2), pool_mod._idle_total) == (0, 0)


def test_default_limit_is_a_quarter_of_the_fd_limit(monkeypatch):
    import resource

    monkeypatch.setattr(pool_mod, "_idle_limit", None)
    assert pool_mod._limit() == int(resource.getrlimit(resource.RLIMIT_NOFILE)[0] * 0.25)


def test_one_idle_connection_is_kept_whatever_the_need():
    pool = IdlePool()
    a = Conn(10)
    pool.put(a, 0.0, used=0)
    assert len(pool) == 1 and not a.closed


def test_an_idle_connection_beyond_the_estimated_need_is_closed():
    """haproxy srv_add_to_idle_list(): in use plus idle stay within est_need_conns. One
    connection in use at a time (say `http-reuse safe` first requests, each on a new
    connection, one after another): the second released one is not kept."""
    pool = IdlePool()
    pool.note_used(1)
    a, b = Conn(10), Conn(11)
    pool.put(a, 0.0, used=0)
    pool.note_used(1)
    pool.put(b, 0.1, used=0)
    assert (len(pool), a.closed, b.closed, pool_mod._idle_total) == (1, False, True, 1)


def test_idle_connections_are_kept_up_to_the_peak_in_use():
    pool = IdlePool()
    conns = [Conn(10 + i) for i in range(4)]
    for n in range(1, 4):
        pool.note_used(n)  # three connections in use at once
    assert pool.need == 3
    for i, c in enumerate(conns[:3]):  # they come back one by one
        pool.put(c, 0.1 * i, used=2 - i)
    assert len(pool) == 3 and not any(c.closed for c in conns[:3])
    pool.put(conns[3], 0.5, used=0)  # a fourth: more than the traffic needed
    assert conns[3].closed and len(pool) == 3


def test_the_estimate_decays_by_half_toward_the_peak_each_purge_delay():
    pool = IdlePool(max_idle=5.0)
    for n in range(1, 9):
        pool.note_used(n)
    assert (pool.need, pool.max_used) == (8, 8)
    a = Conn(10)
    pool.put(a, 0.0, used=0)   # the first one: kept; the period starts
    pool.put(Conn(11), 1.0, used=0)  # 1 + 1 <= 8: kept
    pool.note_used(0)
    pool.put(b := Conn(12), 5.0, used=0)  # one period over: need (8 + 8) // 2 = 8, peak now 0
    assert not b.closed and (pool.need, pool.max_used) == (8, 0)
    pool.put(c := Conn(13), 10.0, used=0)  # another: (8 + 0) // 2 = 4, and 1 + 3 <= 4
    assert not c.closed and pool.need == 4
    pool.put(d := Conn(14), 15.0, used=0)  # need 2: four idle already
    assert d.closed and pool.need == 2


def test_an_estimate_left_alone_for_long_restarts_from_what_is_in_use():
    pool = IdlePool(max_idle=5.0)
    for n in range(1, 6):
        pool.note_used(n)
    pool.put(Conn(10), 0.0, used=0)
    pool.put(c := Conn(11), 1000.0, used=0)
    assert c.closed and (pool.need, pool.max_used) == (0, 0)
