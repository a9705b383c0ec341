"""RoundRobin.unpick(): a pick taken back leaves the scores as if it had never been, so
the servers keep their shares (runtime/express.py gives back the pick of an unused credit)."""
from splicer.balance.base import WEIGHT_SCALE
from splicer.balance.roundrobin import RoundRobin


def scores_after(weights, served):
    """The smooth weighted round-robin scores after exactly the picks `served`."""
    w = [x * WEIGHT_SCALE for x in weights]
    cur = [0] * len(w)
    for i in served:
        cur = [c + x for c, x in zip(cur, w)]
        cur[i] -= sum(w)
    return cur


def test_a_pick_taken_back_later_leaves_the_scores_of_the_picks_served():
    rr = RoundRobin([3, 2, 1])
    served = [rr.pick() for _ in range(4)]
    extra = rr.pick()           # a credit's pick...
    served += [rr.pick() for _ in range(3)]
    rr.unpick(extra)            # ...given back unused, three picks later
    assert rr._current == scores_after([3, 2, 1], served)
    assert rr._current != scores_after([3, 2, 1], served + [extra])


def test_shares_hold_when_every_other_pick_is_taken_back():
    rr = RoundRobin([3, 1])
    served = []
    for k in range(400):
        i = rr.pick()
        if k % 2:
            rr.unpick(i)
        else:
            served.append(i)
    assert (served.count(0), served.count(1)) == (150, 50)


def test_a_server_down_since_is_not_taken_back():
    rr = RoundRobin([1, 1])
    i = rr.pick()
    rr.set_up(i, False)
    before = list(rr._current)
    rr.unpick(i)
    assert rr._current == before
