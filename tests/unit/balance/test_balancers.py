"""splicer.balance: deterministic server choice (roundrobin, leastconn), up/down, maxconn."""
import pytest

from splicer.balance import ALGORITHMS, Balancer, LeastConn, RoundRobin
from splicer.balance.first import First
from splicer.balance.lbmap import StaticRR
from splicer.balance.rnd import Random


def picks(b, n, avoid=()):
    return [b.pick(avoid) for _ in range(n)]


def test_algorithm_registry():
    assert ALGORITHMS == {"roundrobin": RoundRobin, "leastconn": LeastConn, "static-rr": StaticRR,
                          "first": First, "random": Random}


def test_base_pick_is_abstract():
    with pytest.raises(NotImplementedError):
        Balancer([1]).pick()


def test_base_defaults():
    b = Balancer([1, 2, 0])
    assert (b.weights, b.maxconns, b.up, b.active) == ([1, 2, 0], [0, 0, 0], [True] * 3, [0, 0, 0])
    assert [b.usable(i) for i in range(3)] == [True, True, False]


def test_any_up_ignores_fullness_but_not_weight_or_down():
    b = RoundRobin([1, 0], maxconns=[1, 0])
    b.take_conn(0)
    assert b.usable(0) is False and b.any_up() is True
    b.set_up(0, False)
    assert b.any_up() is False


# --- roundrobin -----------------------------------------------------------------------------

def test_roundrobin_equal_weights_alternate():
    assert picks(RoundRobin([1, 1]), 6) == [0, 1, 0, 1, 0, 1]


def test_roundrobin_weights_3_1_smooth_sequence():
    assert picks(RoundRobin([3, 1]), 8) == [0, 0, 1, 0, 0, 0, 1, 0]


def test_roundrobin_weights_5_1_1_smooth_sequence():
    assert picks(RoundRobin([5, 1, 1]), 7) == [0, 0, 1, 0, 2, 0, 0]


def test_roundrobin_weight_zero_is_never_picked():
    assert picks(RoundRobin([0, 5]), 5) == [1, 1, 1, 1, 1]


def test_roundrobin_shares_follow_weights_over_a_window():
    b = RoundRobin([4, 2, 1])
    seq = picks(b, 7 * 10)
    assert [seq.count(i) for i in range(3)] == [40, 20, 10]


def test_roundrobin_avoid_skips_server():
    b = RoundRobin([1, 1, 1])
    assert picks(b, 4, avoid={0}) == [1, 2, 1, 2]


def test_roundrobin_avoid_all_returns_none():
    assert RoundRobin([1, 1]).pick(avoid=[0, 1]) is None


def test_roundrobin_down_server_is_skipped_then_rejoins():
    b = RoundRobin([1, 1, 1])
    b.set_up(1, False)
    assert picks(b, 4) == [0, 2, 0, 2]
    b.set_up(1, True)
    assert sorted(picks(b, 3)) == [0, 1, 2]


def test_roundrobin_all_down_returns_none():
    b = RoundRobin([1, 2])
    b.set_up(0, False)
    b.set_up(1, False)
    assert b.pick() is None


def test_roundrobin_no_servers_returns_none():
    assert RoundRobin([]).pick() is None


def test_roundrobin_maxconn_blocks_until_drop_conn():
    b = RoundRobin([1, 1], maxconns=[1, 0])
    assert b.pick() == 0
    b.take_conn(0)
    assert b.usable(0) is False
    assert picks(b, 3) == [1, 1, 1]
    b.drop_conn(0)
    assert b.usable(0) is True
    # server 0 keeps its smooth-rr score while it was full, so it rejoins on the next turn
    assert picks(b, 4) == [1, 0, 1, 0]


def test_roundrobin_all_full_returns_none():
    b = RoundRobin([1, 1], maxconns=[1, 1])
    b.take_conn(0)
    b.take_conn(1)
    assert b.pick() is None
    b.drop_conn(1)
    assert b.pick() == 1


def test_roundrobin_is_deterministic():
    assert picks(RoundRobin([2, 3, 1]), 12) == picks(RoundRobin([2, 3, 1]), 12)


# --- leastconn ------------------------------------------------------------------------------

def test_leastconn_idle_equal_servers_take_turns():
    assert picks(LeastConn([1, 1, 1]), 6) == [0, 1, 2, 0, 1, 2]


def test_leastconn_prefers_idle_server():
    b = LeastConn([1, 1, 1])
    b.take_conn(0)
    b.take_conn(2)
    assert picks(b, 3) == [1, 1, 1]


def test_leastconn_lowest_active_wins_with_take_and_drop():
    b = LeastConn([1, 1])
    seq = []
    for _ in range(4):            # every pick keeps its connection
        i = b.pick()
        seq.append(i)
        b.take_conn(i)
    assert seq == [0, 1, 0, 1] and b.active == [2, 2]
    b.drop_conn(1)
    b.drop_conn(1)
    assert b.pick() == 1
    b.take_conn(1)
    assert b.pick() == 1          # 2/1 vs 1/1 active: still the lighter one


def test_leastconn_relative_to_weight():
    b = LeastConn([3, 1])
    seq = []
    for _ in range(8):
        i = b.pick()
        seq.append(i)
        b.take_conn(i)
    assert b.active == [6, 2]
    assert seq == [0, 0, 1, 0, 0, 0, 1, 0]      # ties (2/3 vs 1/1 after +1) go in turn


def test_leastconn_weight_zero_is_never_picked():
    b = LeastConn([0, 2])
    assert picks(b, 3) == [1, 1, 1]


def test_leastconn_respects_avoid():
    b = LeastConn([1, 1, 1])
    b.take_conn(1)
    assert b.pick(avoid=[0]) == 2
    assert b.pick(avoid=(0, 2)) == 1
    assert b.pick(avoid=range(3)) is None


def test_leastconn_respects_maxconn():
    b = LeastConn([1, 1], maxconns=[0, 1])
    b.take_conn(0)
    b.take_conn(0)
    b.take_conn(1)           # server 1 is at maxconn though lighter
    assert picks(b, 2) == [0, 0]
    b.drop_conn(1)
    assert b.pick() == 1


def test_leastconn_respects_down():
    b = LeastConn([1, 1])
    b.take_conn(0)
    b.set_up(1, False)
    assert b.pick() == 0
    b.set_up(0, False)
    assert b.pick() is None


def test_leastconn_nothing_usable_leaves_turn_unchanged():
    b = LeastConn([1, 1, 1])
    assert b.pick() == 0
    assert b.pick(avoid=[0, 1, 2]) is None
    assert b.pick() == 1


# --- connection counting and tie order (mutation-testing gaps) ---------------------------------

def test_drop_conn_releases_exactly_one_connection():
    b = Balancer([1, 1])
    b.take_conn(1)
    b.take_conn(1)
    b.drop_conn(1)
    assert b.active == [0, 1]


def test_leastconn_tie_goes_to_the_next_server_after_the_turn_not_before():
    b = LeastConn([1, 1, 1])
    assert b.pick(avoid={0}) == 1  # scanning from server 0's turn onwards: 1 comes before 2
    assert b.pick(avoid={2}) == 0  # the turn is now 2 (avoided): 0 follows it
