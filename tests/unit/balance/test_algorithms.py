"""splicer.balance algorithms beyond roundrobin/leastconn: static-rr, first, map-based and
consistent hashing (bounded loads), random(draws), backups, slowstart, dynamic weights."""
import heapq
import math
import random

import pytest

from splicer.balance import ConsistentHash, First, LeastConn, MapHash, Random, RoundRobin, StaticRR, make_balancer
from splicer.balance.chash import point
from splicer.balance.hashing import full_hash, gen_hash
from splicer.balance.lbmap import build_map
from splicer.config.model import Backend, Balance, HashType, Server


def picks(b, n, **kw):
    return [b.pick(**kw) for _ in range(n)]


KEYS = [gen_hash(f"/obj/{k}".encode(), "sdbm", True) for k in range(10000)]


# --- the server map (haproxy recalc_server_map) ----------------------------------------------

def test_build_map_follows_haproxy_order():
    assert build_map({0: 1, 1: 1, 2: 1}) == [0, 1, 2]
    assert build_map({0: 3, 1: 1}) == [0, 0, 0, 1]
    assert build_map({0: 2, 1: 4}) == [0, 1, 1]      # weights divided by their gcd
    assert build_map({5: 7}) == [5]
    assert build_map({}) == []


def test_static_rr_follows_the_map_and_skips_full_servers():
    b = StaticRR([1, 2], maxconns=[1, 0])
    assert picks(b, 6) == [0, 1, 1, 0, 1, 1]
    b.take_conn(0)
    assert picks(b, 3) == [1, 1, 1]


def test_static_rr_ignores_weight_changes_while_up():
    b = StaticRR([1, 1])
    b.set_weight(0, 3)
    assert picks(b, 4) == [0, 1, 0, 1]
    b.set_up(1, False)
    b.set_up(1, True)  # a rebuild reads the new weight
    assert picks(b, 4) == [0, 0, 0, 1]
    b.set_weight(1, 0)  # 0 takes effect at once
    assert picks(b, 3) == [0, 0, 0]


# --- first -------------------------------------------------------------------------------------

def test_first_fills_servers_in_order():
    b = First([1, 1, 1], maxconns=[2, 1, 0])
    got = []
    for _ in range(5):
        i = b.pick()
        b.take_conn(i)
        got.append(i)
    assert got == [0, 0, 1, 2, 2]
    b.drop_conn(0)
    assert b.pick() == 0


def test_first_ignores_weights_but_not_weight_zero():
    assert picks(First([1, 100]), 3) == [0, 0, 0]
    assert picks(First([0, 100]), 2) == [1, 1]


# --- map-based hashing -------------------------------------------------------------------------

def test_map_hash_picks_slot_hash_modulo_total_weight():
    b = MapHash([1, 1, 1])
    assert b.pick(key=0x33242976) == 0x33242976 % 3 == 0   # sdbm("/index.html")
    b = MapHash([3, 1])                                      # map [0, 0, 0, 1]
    assert [b.pick(key=k) for k in range(8)] == [0, 0, 0, 1, 0, 0, 0, 1]


def test_map_hash_without_key_goes_round_robin():
    assert picks(MapHash([1, 1, 1]), 4, key=None) == [0, 1, 2, 0]


def test_map_hash_full_server_means_wait_avoided_means_next_slot():
    b = MapHash([1, 1, 1], maxconns=[1, 0, 0])
    b.take_conn(0)
    assert b.pick(key=3) is None
    assert b.pick(avoid={0}, key=3) == 1


def test_map_hash_remaps_most_keys_when_a_server_goes_down():
    b = MapHash([1] * 5)
    before = [b.pick(key=k) for k in KEYS]
    b.set_up(4, False)
    after = [b.pick(key=k) for k in KEYS]
    moved = sum(x != y for x, y in zip(before, after)) / len(KEYS)
    print(f"map-based: removing 1 of 5 servers moved {moved:.1%} of the keys")
    assert moved > 0.5


# --- consistent hashing ------------------------------------------------------------------------

def test_ring_points_are_haproxy_node_keys():
    # server id 1 (index 0), node n: full_hash(1 * 4096 + n) (lb_chash.c, hash-key id)
    assert point(0, 0) == full_hash(4096) == 0x49C2008B
    b = ConsistentHash([1, 2])
    assert len(b._rings[0]) == 16 * 3
    assert (point(1, 31), 1) in b._rings[0]


def test_consistent_key_goes_to_the_closest_point():
    b = ConsistentHash([1, 1, 1])
    ring = b._rings[0]
    k, owner = ring[10]
    assert b.pick(key=k) == owner
    assert b.pick(key=(k + 1) & 0xFFFFFFFF) == owner


def test_consistent_removing_one_of_n_moves_only_its_keys():
    n = 5
    b = ConsistentHash([1] * n)
    before = [b.pick(key=k) for k in KEYS]
    b.set_up(2, False)
    after = [b.pick(key=k) for k in KEYS]
    moved = [x != y for x, y in zip(before, after)]
    fraction = sum(moved) / len(KEYS)
    print(f"consistent: removing 1 of {n} servers moved {fraction:.2%} of the keys (1/N = {1 / n:.0%})")
    assert all(x == 2 for x, m in zip(before, moved) if m)   # only the removed server's keys
    assert sum(moved) == before.count(2)
    assert fraction <= 1.25 / n
    b.set_up(2, True)
    assert [b.pick(key=k) for k in KEYS] == before           # and they come back


def test_consistent_weight_change_moves_only_that_servers_points():
    b = ConsistentHash([1, 1, 1, 1])
    before = [b.pick(key=k) for k in KEYS]
    b.set_weight(1, 2)
    after = [b.pick(key=k) for k in KEYS]
    assert all(y == 1 for x, y in zip(before, after) if x != y)  # keys only move to server 1
    assert after.count(1) > before.count(1)


def held(b, keys):
    for k in keys:
        i = b.pick(key=k)
        b.take_conn(i)
    return b.active


@pytest.mark.parametrize("n", [4, 8, 10])
def test_hash_balance_factor_125_bounds_every_load(n):
    mean = 2000 / n
    loads = held(ConsistentHash([1] * n, balance_factor=125), KEYS[:2000])
    print(f"hash-balance-factor 125, {n} servers: max/mean = {max(loads) / mean:.3f}")
    assert sum(loads) == 2000
    assert max(loads) <= math.ceil(1.25 * mean)


def test_without_balance_factor_the_same_keys_overload_a_server():
    mean = 2000 / 10
    loads = held(ConsistentHash([1] * 10), KEYS[:2000])
    assert max(loads) > 1.25 * mean


def test_consistent_without_key_walks_the_ring():
    b = ConsistentHash([1, 1])
    seq = picks(b, 64)
    assert seq.count(0) == seq.count(1) == 32


# --- random(draws) -----------------------------------------------------------------------------

def peak_load(draws, ticks=2000):
    """2 arrivals per tick over 4 servers; server 3 holds a request 4x longer. Returns the
    mean over ticks of the busiest server's active count."""
    b = Random([1] * 4, draws=draws, rng=random.Random(7))
    duration = [2, 2, 2, 8]
    ends, total = [], 0
    for t in range(ticks):
        while ends and ends[0][0] <= t:
            b.drop_conn(heapq.heappop(ends)[1])
        for _ in range(2):
            i = b.pick()
            b.take_conn(i)
            heapq.heappush(ends, (t + duration[i], i))
        total += max(b.active)
    return total / ticks


def test_random_two_draws_spread_better_than_one_under_uneven_load():
    one, two = peak_load(1), peak_load(2)
    print(f"random(1) busiest mean {one:.2f}, random(2) {two:.2f}")
    assert two < 0.7 * one


def test_random_is_deterministic_with_a_seeded_rng_and_respects_weights():
    a = Random([1, 3], draws=1, rng=random.Random(1))
    seq = picks(a, 4000)
    assert seq == picks(Random([1, 3], draws=1, rng=random.Random(1)), 4000)
    assert 0.65 < seq.count(1) / 4000 < 0.85


def test_random_full_winner_means_wait():
    b = Random([1], maxconns=[1], rng=random.Random(1))
    b.take_conn(0)
    assert b.pick() is None


# --- backup servers ----------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [RoundRobin, LeastConn, StaticRR, First, MapHash, ConsistentHash, Random])
def test_backups_only_when_every_active_server_is_down(cls):
    b = cls([1, 1, 1, 1], backups=[False, False, True, True])
    assert set(picks(b, 20, key=None)) == ({0} if cls is First else {0, 1})
    b.set_up(0, False)
    assert set(picks(b, 10, key=None)) == {1}
    b.set_up(1, False)
    assert set(picks(b, 10, key=None)) == {2}     # the first backup only
    assert set(picks(b, 10, key=12345)) == {2}
    b.set_up(2, False)
    assert set(picks(b, 10, key=None)) == {3}
    b.set_up(0, True)
    assert set(picks(b, 10, key=None)) == {0}


@pytest.mark.parametrize("cls", [RoundRobin, StaticRR, ConsistentHash])
def test_allbackups_shares_the_load_among_backups(cls):
    b = cls([1, 1, 1], backups=[False, True, True], allbackups=True)
    b.set_up(0, False)
    assert set(picks(b, 40, key=None)) == {1, 2}


def test_full_active_servers_do_not_send_traffic_to_backups():
    b = RoundRobin([1, 1], maxconns=[1, 0], backups=[False, True])
    b.take_conn(0)
    assert b.pick() is None


def test_make_balancer_reads_the_model():
    servers = (Server("a", "h", 1, backup=False), Server("b", "h", 2, backup=True))
    be = Backend("be", "http", balance="uri", balance_args=Balance("uri"),
                 hash_type=HashType("consistent", "sdbm", True), hash_balance_factor=150,
                 allbackups=True, servers=servers)
    b = make_balancer(be)
    assert isinstance(b, ConsistentHash) and b.balance_factor == 150
    assert (b.backups, b.allbackups) == ([False, True], True)
    assert isinstance(make_balancer(Backend("be", "http", balance="source", servers=servers)), MapHash)
    r = make_balancer(Backend("be", "http", balance="random", balance_args=Balance("random", draws=3),
                              servers=servers))
    assert isinstance(r, Random) and r.draws == 3


# --- slowstart ---------------------------------------------------------------------------------

def test_slowstart_ramps_the_weight_after_coming_back_up():
    b = RoundRobin([1, 1], slowstarts=[0.0, 10.0])
    assert b.eweight(1, 0.0) == 16                     # never at start-up
    b.set_up(1, False, now=100.0)
    b.set_up(1, True, now=100.0)
    assert [b.eweight(1, 100.0 + t) for t in (0, 2.5, 5, 9.9, 10)] == [1, 5, 9, 16, 16]
    assert b.warming(1, 110.0) is None


def test_slowstart_share_grows_with_time():
    b = RoundRobin([1, 1], slowstarts=[0.0, 10.0])
    b.set_up(1, False, now=0.0)
    b.set_up(1, True, now=0.0)
    early = picks(b, 170, now=0.0).count(1)
    late = picks(b, 170, now=10.0).count(1)
    assert (early, late) == (10, 85)


def test_slowstart_ramps_maxconn_from_one():
    b = LeastConn([1], maxconns=[100], slowstarts=[20.0])
    b.set_up(0, False, 0.0)
    b.set_up(0, True, 0.0)
    assert [b.maxconn(0, t) for t in (0.0, 5.0, 19.0, 20.0)] == [1, 25, 95, 100]


def test_slowstart_does_not_apply_to_static_algorithms():
    b = StaticRR([1, 1], slowstarts=[10.0, 10.0])
    b.set_up(0, False, 0.0)
    b.set_up(0, True, 0.0)
    assert b.eweight(0, 0.0) == 16


def test_consistent_slowstart_adds_points_as_the_ramp_goes():
    b = ConsistentHash([1, 1], slowstarts=[0.0, 8.0])
    b.set_up(1, False, 0.0)
    b.set_up(1, True, 0.0)
    b.pick(key=1, now=0.0)
    assert b._points == [16, 1]
    b.pick(key=1, now=4.0)
    assert b._points == [16, 9]
    b.pick(key=1, now=8.0)
    assert b._points == [16, 16]


def test_roundrobin_follows_a_weight_change_at_once():
    b = RoundRobin([1, 1])
    b.set_weight(0, 3)
    seq = picks(b, 8)
    assert seq.count(0) == 6


def test_bounded_loads_follow_the_weights():
    loads = held(ConsistentHash([1, 3], balance_factor=125), KEYS[:400])
    assert loads[0] + loads[1] == 400
    assert loads[0] <= math.ceil(1.25 * 100) and loads[1] <= math.ceil(1.25 * 300)


def test_group_is_recomputed_after_a_change():
    b = RoundRobin([1, 1], backups=[False, True])
    assert b.group() == [0]
    b.set_up(0, False)
    assert b.group() == [1]
    b.set_weight(0, 0)
    b.set_up(0, True)
    assert b.group() == [1]     # weight 0 is not alive
    b.set_weight(0, 2)
    assert b.group() == [0]


def test_ramping_counts_the_servers_in_a_slowstart_ramp():
    b = RoundRobin([1, 1, 1], slowstarts=[10.0, 10.0, 0.0])
    for i in range(3):
        b.set_up(i, False, 0.0)
        b.set_up(i, True, 0.0)
    assert b.ramping == 2                 # server 2 has no slowstart
    b.set_up(0, False, 1.0)
    assert b.ramping == 1
    b.pick(now=5.0)
    assert b.ramping == 1 and b.eweight(1, 5.0) == 9
    b.pick(now=10.0)                      # the ramp is over
    assert b.ramping == 0 and b.eweight(1, 10.0) == 16
