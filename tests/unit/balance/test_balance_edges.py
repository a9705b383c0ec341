"""splicer.balance edges the other balance tests leave open (found by mutation testing):
default times, the slowstart ramp of maxconn seen by every algorithm, the bounded-loads
arithmetic, the keyless walk of the consistent ring, the static map's cursor after a
rebuild, the roundrobin scores, and the key functions' options."""
import random

import pytest

from splicer.balance import (
    ConsistentHash,
    First,
    LeastConn,
    MapHash,
    Random,
    RoundRobin,
    StaticRR,
    make_balancer,
)
from splicer.balance.base import Balancer
from splicer.balance.chash import point
from splicer.balance.hashing import djb2, full_hash, sdbm
from splicer.balance.hdr import domain_only, hdr_key, header_value
from splicer.balance.key import key_function
from splicer.balance.uri import uri_key, uri_part
from splicer.balance.url_param import url_param_key
from splicer.config.model import Backend, Balance, HashType, Server


def restarted(b, i, at=0.0):
    """Take server `i` down and up again at `at`: its slowstart ramp begins then."""
    b.set_up(i, False, at)
    b.set_up(i, True, at)
    return b


# --- base: times and the maxconn ramp ---------------------------------------------------------

def test_set_up_without_a_time_starts_the_ramp_at_zero():
    """`now` defaults to 0.0: a ramp begun by set_up() without a time is 1/16 done at 0.0
    and 9/16 at the middle of a 10 s slowstart."""
    b = Balancer([2], slowstarts=[10.0])
    b.set_up(0, False)
    b.set_up(0, True)
    assert [b.eweight(0, t) for t in (0.0, 5.0, 10.0)] == [2 * 1, 2 * 9, 2 * 16]


def test_usable_reads_the_ramped_maxconn_at_the_time_given():
    """usable(i, now) compares the active count with maxconn ramped at `now` (1 at first, 5 of
    10 half-way through the slowstart): full at its limit, usable under it."""
    b = restarted(Balancer([1], maxconns=[10], slowstarts=[10.0]), 0)
    for _ in range(3):
        b.take_conn(0)
    assert (b.usable(0, 1.0), b.usable(0, 5.0)) == (False, True)
    b.take_conn(0)
    b.take_conn(0)
    assert b.usable(0, 5.0) is False          # 5 active, maxconn 5 at 5.0
    assert b.usable(0, 6.0) is True           # maxconn 6 at 6.0


ALL = [RoundRobin, LeastConn, StaticRR, First, MapHash, ConsistentHash, Random]


@pytest.mark.parametrize("key", [None, 5])
@pytest.mark.parametrize("cls", ALL)
def test_every_algorithm_waits_while_the_ramped_maxconn_is_reached(cls, key):
    """maxconn 20 ramps from 1 over a 10 s slowstart (haproxy srv_dynamic_maxconn()): with one
    request served, a pick at the default time 0.0 finds the server full (None: the request
    waits), one at 1.0 (maxconn 2) takes it, one at 1.0 with two served waits again."""
    kw = {"rng": random.Random(3)} if cls is Random else {}
    b = restarted(cls([1], maxconns=[20], slowstarts=[10.0], **kw), 0)
    b.take_conn(0)
    assert b.pick(key=key) is None
    assert b.pick(key=key, now=1.0) == 0
    b.take_conn(0)
    assert b.pick(key=key, now=1.0) is None


# --- consistent hashing -----------------------------------------------------------------------

def ring_of(weights):
    """The active ring by the module docstring: 16 points per weight unit, point n of the
    server at index s at full_hash((s + 1) * 4096 + n)."""
    return sorted((point(s, n), s) for s, w in enumerate(weights) for n in range(16 * w))


def test_keyless_requests_walk_the_ring_from_its_lowest_point():
    """Without a key the consistent ring is walked point by point from the lowest position
    (haproxy chash_get_next_server() starts at eb32_first()), wrapping around."""
    ring = ring_of([1, 1, 1])
    b = ConsistentHash([1, 1, 1])
    assert [b.pick() for _ in range(len(ring) + 3)] == [s for _, s in ring] + [s for _, s in ring[:3]]


def test_a_key_halfway_between_two_points_goes_to_the_one_before():
    """A key picks the closest point, the one before it on a tie."""
    ring = ring_of([1, 1])
    j = next(j for j in range(len(ring) - 1)
             if ring[j][1] != ring[j + 1][1] and (ring[j + 1][0] - ring[j][0]) % 2 == 0)
    (lo, before), (hi, after) = ring[j], ring[j + 1]
    b = ConsistentHash([1, 1])
    assert b.pick(key=(lo + hi) // 2) == before
    assert b.pick(key=(lo + hi) // 2 + 1) == after
    assert b.pick(key=ring[0][0] - 1) == ring[0][1]          # before the lowest point
    last, first = 0xFFFFFFFF - ring[-1][0], ring[0][0] + 1    # distances across the wrap
    assert b.pick(key=0xFFFFFFFF) == (ring[-1][1] if last <= first else ring[0][1])


def test_consistent_key_whose_server_is_full_waits():
    """The key's server at its maxconn gives None (the request waits in the queue for it),
    not another server."""
    ring = ring_of([1, 1])
    k, owner = ring[5]
    b = ConsistentHash([1, 1], maxconns=[1, 1])
    b.take_conn(owner)
    assert b.pick(key=k) is None
    b.drop_conn(owner)
    assert b.pick(key=k) == owner


def test_consistent_pick_follows_the_ramp_at_the_time_given_or_zero():
    """Keyed and keyless picks resync the ring at their `now` (0.0 by default): 1 point at
    0.0, 9 at 4.0 of an 8 s slowstart, all 16 at its end; with a balance factor too."""
    for factor in (0, 150):
        b = restarted(ConsistentHash([1, 1], slowstarts=[0.0, 8.0], balance_factor=factor), 1)
        b.pick(key=1)
        assert b._points == [16, 1]
        assert b.pick(now=4.0) in (0, 1)
        assert b._points == [16, 9]
        assert b.pick(key=1, now=4.0) in (0, 1)
        b.pick(key=12345, now=8.0)
        assert b._points == [16, 16]


@pytest.mark.parametrize("factor, actives, eligible", [
    (0, [5, 0], [True, True]),        # no hash-balance-factor: no bound
    (150, [0, 0], [True, True]),      # allowed ceil(1 * 1.5) = 2: one slot each
    (150, [1, 0], [False, True]),     # allowed ceil(2 * 1.5) = 3: slots 1 and 2
    (200, [0, 0], [True, True]),      # allowed exactly 1 * 2 = 2: slots 1 and 1
    (200, [1, 0], [True, True]),      # allowed exactly 2 * 2 = 4: slots 2 and 2
    (125, [2, 1], [False, True]),     # allowed ceil(4 * 1.25) = 5: slots 2 and 3
    (101, [1, 1], [True, True]),      # allowed ceil(3 * 1.01) = 4: slots 2 and 2
])
def test_bounded_loads_slots_follow_haproxy_arithmetic(factor, actives, eligible):
    """eligible(): a server is under its share of ceil((served + 1) * factor / 100), the total
    split by weight, the remainder by cumulative weight (haproxy chash_server_is_eligible())."""
    b = ConsistentHash([1, 1], balance_factor=factor)
    for i, a in enumerate(actives):
        for _ in range(a):
            b.take_conn(i)
    assert [b.eligible(i, 0.0) for i in range(2)] == eligible


def test_bounded_loads_exact_slot_counts():
    """The slots themselves: 3 allowed over weights 1 and 3 (16 and 48 points) give server 0
    none, raised to 1 (never 0), and server 1 all 3; ceil() is exact on a whole product
    (200 % of 1 is 2, not 3)."""
    b = ConsistentHash([1, 3], balance_factor=150)
    b.take_conn(1)
    assert b._slots(0.0) == {0: 1, 1: 3}
    assert ConsistentHash([1], balance_factor=200)._slots(0.0) == {0: 2}
    assert ConsistentHash([1], balance_factor=101)._slots(0.0) == {0: 2}


def test_a_server_outside_the_group_in_use_is_not_eligible():
    """A backup while the active servers are up has no share of the allowed total."""
    b = ConsistentHash([1, 1], backups=[False, True], balance_factor=150)
    assert (b.eligible(0, 0.0), b.eligible(1, 0.0)) == (True, False)


def test_an_overloaded_keys_server_passes_the_request_along_the_ring():
    """With hash-balance-factor 150 and one request on server 0 (its single slot used), a key
    on server 0's point goes to the next point's server instead."""
    ring = ring_of([1, 1])
    j = next(j for j in range(len(ring) - 1) if ring[j][1] == 0 and ring[j + 1][1] == 1)
    b = ConsistentHash([1, 1], balance_factor=150)
    assert b.pick(key=ring[j][0]) == 0
    b.take_conn(0)
    assert b.pick(key=ring[j][0]) == 1


# --- the static map ---------------------------------------------------------------------------

def test_static_rr_cursor_restarts_at_the_first_slot_after_the_map_shrinks():
    """A cursor left beyond the end of a rebuilt, shorter map starts again at slot 0 (haproxy
    map_get_server_rr())."""
    b = StaticRR([1, 1, 1])
    assert [b.pick(), b.pick()] == [0, 1]       # the cursor is now on slot 2
    b.set_up(2, False)                          # map [0, 1]
    assert [b.pick(), b.pick(), b.pick()] == [0, 1, 0]


# --- roundrobin scores ------------------------------------------------------------------------

def test_roundrobin_scores_reset_only_for_a_server_that_changes_state():
    """A server that goes down (and so comes back) starts from a zero score; reporting a
    server up that already is leaves its score alone."""
    rr = RoundRobin([1, 1, 1])
    assert rr.pick() == 0
    assert rr.turn_state() == [-32, 16, 16]
    rr.set_up(1, True)
    assert rr.turn_state() == [-32, 16, 16]
    rr.set_up(0, False)
    assert rr.turn_state() == [0, 16, 16]
    rr.set_up(0, True)
    assert rr.turn_state() == [0, 16, 16]


def test_roundrobin_turn_state_puts_back_an_unused_pick():
    """turn_state() is a copy of the scores; set_turn_state() of it undoes the pick since."""
    rr = RoundRobin([3, 1])
    state = rr.turn_state()
    first = rr.pick()
    state_after = rr.turn_state()
    state_after.append(99)                     # a copy: the balancer's scores are not touched
    rr.set_turn_state(state)
    assert rr.turn_state() == [0, 0]
    assert rr.pick() == first


# --- keys ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, domain", [
    (b"haproxy.1wt.eu", b"1wt"),
    (b".1wt.eu", b"1wt"),          # a leading dot is not part of the label
    (b"a.b", b"a"),
    (b"localhost", b"localhost"),
])
def test_domain_only_is_the_label_before_the_last_dot(value, domain):
    """use_domain_only hashes the label between the last two dots (or the start)."""
    assert domain_only(value) == domain


def test_hdr_key_hashes_the_whole_value_unless_use_domain_only():
    """hdr_key's use_domain_only defaults to False: the whole first value is hashed."""
    headers = [(b"Host", b"www.1wt.eu")]
    assert hdr_key(headers, b"host") == sdbm(b"www.1wt.eu")
    assert hdr_key(headers, b"host", use_domain_only=True) == sdbm(b"1wt")


@pytest.mark.parametrize("raw, value", [
    (b" \talice\t ", b"alice"),
    (b"alice , bob", b"alice"),
    (b"\x0balice", b"\x0balice"),     # only SP and HTAB are blanks (RFC 9110 OWS)
])
def test_header_value_strips_only_spaces_and_tabs(raw, value):
    """The first comma-separated value, without the SP/HTAB around it."""
    assert header_value([(b"X-User", raw)], b"x-user") == value


def test_uri_key_options_default_to_off_and_reach_uri_part():
    """uri_key(): no option by default (the query is cut, an absolute target is hashed whole),
    `whole` keeps the query, `path_only` starts at the path."""
    assert uri_key(b"http://h/a?x=1") == sdbm(b"http://h/a")
    assert uri_key(b"/a?x=1", whole=True) == sdbm(b"/a?x=1")
    assert uri_key(b"http://h/a?x=1", path_only=True) == sdbm(b"/a")
    assert uri_key(b"http://h/a?x=1", whole=True, path_only=True) == sdbm(b"/a?x=1")


@pytest.mark.parametrize("target, part", [
    (b"http://h/a/b?x", b"/a/b"),      # the path starts at the first '/' after the authority
    (b"http://h", b""),                # no path at all
    (b"h/a/b", b"/a/b"),               # no scheme: the first '/'
    (b"/a/b", b"/a/b"),
])
def test_uri_part_path_only(target, part):
    """`path-only` skips an absolute-form target's scheme and authority."""
    assert uri_part(target, path_only=True) == part


def test_url_param_key_applies_avalanche():
    """url_param_key() hashes the value, then applies the avalanche modifier when asked."""
    assert url_param_key(b"/?u=1", b"u", avalanche=True) == full_hash(sdbm(b"1"))
    assert url_param_key(b"/?u=1", b"u") == sdbm(b"1")


HEADERS = [(b"Host", b"www.example.com")]


@pytest.mark.parametrize("balance, target, data", [
    (Balance("hdr", param="host"), b"/", b"www.example.com"),
    (Balance("hdr", param="host", use_domain_only=True), b"/", b"example"),
    (Balance("url_param", param="u"), b"/?u=1", b"1"),
    (Balance("uri"), b"/a/b?q", b"/a/b"),
    (Balance("uri", uri_len=3), b"/a/b?q", b"/a/"),
    (Balance("uri", uri_whole=True), b"/a/b?q", b"/a/b?q"),
    (Balance("uri", uri_path_only=True), b"http://h/a?q", b"/a"),
])
def test_key_functions_apply_the_hash_type_avalanche(balance, target, data):
    """Every key function hashes with the backend's hash-type function, then avalanche."""
    fn = key_function(balance, HashType("consistent", "djb2", True))
    assert fn(target, HEADERS, "") == full_hash(djb2(data))


def test_source_key_function_applies_avalanche_only():
    """`balance source` XORs the address words and applies only avalanche, not the function."""
    fn = key_function(Balance("source"), HashType("consistent", "djb2", True))
    assert fn(b"/", HEADERS, "10.0.0.1") == full_hash(0x0A000001)


# --- make_balancer ----------------------------------------------------------------------------

def test_make_balancer_hands_over_maxconn_slowstart_and_rng():
    """The balancer gets every server's maxconn and slowstart, and `random` the caller's rng."""
    servers = (Server("a", "h", 1, maxconn=10, slowstart=5.0), Server("b", "h", 2))
    for algo in ("roundrobin", "uri"):
        b = make_balancer(Backend("be", "http", balance=algo, servers=servers))
        assert (b.maxconns, b.slowstarts) == ([10, 0], [5.0, 0.0])
    rng = random.Random(11)
    r = make_balancer(Backend("be", "http", balance="random", balance_args=Balance("random"),
                              servers=servers), rng=rng)
    assert r.rng is rng and r.slowstarts == [5.0, 0.0]


def test_random_draws_at_least_once():
    """random(<draws>) below 1 draws once."""
    assert Random([1], draws=0, rng=random.Random(1)).draws == 1
