"""How load spreads, through the real `splicer` command and real origins that hold their
requests: `hash-balance-factor 125` keeps every server at or under 1.25 times the mean of
the requests in flight even when every request hashes to one server (consistent hashing
with bounded loads, haproxy 4.2 "hash-balance-factor"), and `balance random(2)` sends
fewer requests than `random(1)` to a server that answers slowly (power of two choices,
haproxy 4.2 "balance random"). Each test prints its figures."""
from __future__ import annotations

import http.client
import math
import threading
import time

from tests.e2e.helpers import KeepAliveOrigin, free_port, http_config

HELD = 20
"""Requests held in flight at once by the bounded-loads test."""


class HoldingOrigin(KeepAliveOrigin):
    """An origin that holds each request until release() (or `delay` seconds when
    given), counting the requests it holds and the most it held at once."""

    def __init__(self, name: str, delay: float | None = None) -> None:
        self.name, self.delay = name, delay
        self.gate = threading.Event()
        self.held = self.peak = self.served = 0
        self.count_lock = threading.Lock()
        super().__init__(self._answer)

    def _answer(self, c, r, head):
        with self.count_lock:
            self.held += 1
            self.peak = max(self.peak, self.held)
        if self.delay is None:
            self.gate.wait(30)
        else:
            time.sleep(self.delay)
        with self.count_lock:
            self.held -= 1
            self.served += 1
        body = self.name.encode()
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body), False


def get(port: int, path: str, out: list, lock: threading.Lock) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        with lock:
            out.append((resp.status, body))
    finally:
        conn.close()


def hold_one_key(start_splicer, factor: str) -> list[int]:
    """HELD concurrent requests for one URI through `balance uri` + `hash-type consistent`
    (+ `hash-balance-factor`, when given) to four holding origins; the most each held."""
    origins = [HoldingOrigin(f"s{i}") for i in range(4)]
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in origins], balance="uri",
                                   extra_backend=f"    hash-type consistent\n{factor}"), [port])
    out: list = []
    lock = threading.Lock()
    threads = [threading.Thread(target=get, args=(port, "/same/key", out, lock)) for _ in range(HELD)]
    try:
        for t in threads:
            t.start()
            # one at a time: each request's server is picked with the ones before it in flight
            deadline = time.monotonic() + 10
            while sum(o.held for o in origins) < threads.index(t) + 1:
                assert time.monotonic() < deadline, "a request did not reach an origin"
                time.sleep(0.005)
        peaks = [o.peak for o in origins]
    finally:
        for o in origins:
            o.gate.set()
        for t in threads:
            t.join(30)
        for o in origins:
            o.close()
    assert len(out) == HELD and all(status == 200 for status, _ in out)
    sp.stop()
    return peaks


def test_hash_balance_factor_125_bounds_every_server_under_one_hot_key(start_splicer):
    bounded = hold_one_key(start_splicer, "    hash-balance-factor 125\n")
    unbounded = hold_one_key(start_splicer, "")
    bound = math.ceil(HELD / 4 * 1.25)
    print(f"{HELD} requests in flight for one key over 4 servers: with hash-balance-factor 125 "
          f"{bounded} (max {max(bounded)}, bound {bound}, mean {HELD / 4:g}); without {unbounded}")
    assert sorted(unbounded) == [0, 0, 0, HELD]  # one key, one server: what the bound is for
    assert max(bounded) <= bound
    assert sum(bounded) == HELD and min(bounded) > 0


def slow_share(start_splicer, balance: str, clients: int = 12, each: int = 20) -> float:
    """`clients` threads, each sending `each` requests one after the other on new
    connections, through `balance <balance>` to three fast origins and one that takes
    0.2 s per request; the share of the requests the slow one served."""
    slow = HoldingOrigin("slow", delay=0.2)
    fast = [HoldingOrigin(f"fast{i}", delay=0.0) for i in range(3)]
    origins = [slow, *fast]
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in origins], balance=balance), [port])
    out: list = []
    lock = threading.Lock()

    def client():
        for _ in range(each):
            get(port, "/", out, lock)
    threads = [threading.Thread(target=client) for _ in range(clients)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        for o in origins:
            o.close()
    sp.stop()
    assert len(out) == clients * each and all(status == 200 for status, _ in out)
    return slow.served / (clients * each)


def test_random_two_draws_send_less_to_a_slow_server_than_one_draw(start_splicer):
    one = slow_share(start_splicer, "random(1)")
    two = slow_share(start_splicer, "random(2)")
    print(f"share of 240 requests served by the slow server of four: random(1) {one:.1%}, "
          f"random(2) {two:.1%}")
    # one draw ignores load: about a quarter (60 of 240, sd 6.7); two draws mostly avoid
    # the loaded server (about a tenth): equal or reversed shares are 4.7 sd away
    assert two < one
