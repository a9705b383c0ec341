"""runtime.backend queue bookkeeping (no socket: slots are taken and given back directly):
arrival order, a wake passed on by a waiter that cannot use it, maxqueue, timeout queue,
backups in the group the queue uses."""
import asyncio

import pytest

from splicer.config.model import Backend as BackendModel
from splicer.config.model import Server, Timeouts
from splicer.errors import NoServerAvailable
from splicer.runtime.backend import Backend


def backend(loop, servers, balance="roundrobin", queue=5.0, **kw):
    model = BackendModel("be", "http", balance=balance, servers=tuple(servers),
                         timeouts=Timeouts(queue=queue), **kw)
    return Backend(model, loop)


def server(name, **kw):
    return Server(name, "127.0.0.1", 1, **kw)


async def settle():
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_new_request_does_not_overtake_a_queued_one():
    async def main():
        be = backend(asyncio.get_running_loop(), [server("a", maxconn=1)])
        assert be.pick_now() == 0
        waiter = asyncio.ensure_future(be._pick(set()))
        await settle()
        assert be.queued == 1
        be.balancer.drop_conn(0)            # a free slot, but the waiter was not woken yet
        assert be.pick_now() is None        # the newcomer goes behind it
        late = asyncio.ensure_future(be._pick(set()))
        await settle()
        assert be.queued == 2
        be._wake_queue()
        assert await waiter == 0
        assert not late.done()
        be.balancer.drop_conn(0)
        be._wake_queue()
        assert await late == 0
        assert be.queued == 0
    asyncio.run(main())


def test_maxqueue_refuses_beyond_the_servers_sum():
    async def main():
        be = backend(asyncio.get_running_loop(), [server("a", maxconn=1, maxqueue=1),
                                                  server("b", maxconn=1, maxqueue=1)])
        assert (be.pick_now(), be.pick_now()) == (0, 1)
        waiters = [asyncio.ensure_future(be._pick(set())) for _ in range(2)]
        await settle()
        assert be.queued == 2
        with pytest.raises(NoServerAvailable) as info:
            await be._pick(set())
        assert (str(info.value), info.value.termination) == ("backend 'be': queue full (maxqueue)", "sQ")
        for w in waiters:
            w.cancel()
        await settle()
        assert be.queued == 0
    asyncio.run(main())


def test_a_woken_hash_waiter_whose_server_is_still_full_passes_the_wake_on():
    async def main():
        # source hashing: 127.0.0.0 -> slot 0 (a), 127.0.0.1 -> slot 1 (b)
        be = backend(asyncio.get_running_loop(), [server("a", maxconn=1), server("b", maxconn=1)],
                     balance="source")
        ka, kb = be.key_of(b"/", [], "127.0.0.0"), be.key_of(b"/", [], "127.0.0.1")
        assert (be.pick_now(ka), be.pick_now(kb)) == (0, 1)
        wants_a = asyncio.ensure_future(be._pick(set(), ka))
        wants_b = asyncio.ensure_future(be._pick(set(), kb))
        await settle()
        be.balancer.drop_conn(1)
        be._wake_queue()                    # wakes wants_a, whose server is still full
        assert await wants_b == 1
        assert not wants_a.done() and be.queued == 1
        wants_a.cancel()
    asyncio.run(main())


def test_queue_timeout_is_503_sq():
    async def main():
        be = backend(asyncio.get_running_loop(), [server("a", maxconn=1)], queue=0.01)
        be.pick_now()
        with pytest.raises(NoServerAvailable) as info:
            await be._pick(set())
        assert info.value.termination == "sQ" and be.queued == 0
    asyncio.run(main())


def test_backups_take_over_when_every_active_server_is_down():
    async def main():
        be = backend(asyncio.get_running_loop(), [server("a"), server("spare", backup=True)])
        assert [be.pick_now() for _ in range(3)] == [0, 0, 0]
        be.balancer.set_up(0, False)
        assert [be.pick_now() for _ in range(2)] == [1, 1]
        assert be.others_usable({1}) is False   # the active server is down: nothing else
    asyncio.run(main())


def test_random_newcomers_are_not_held_behind_a_waiter_whose_draw_was_full():
    async def main():
        be = backend(asyncio.get_running_loop(), [server("a", maxconn=1), server("b", maxconn=1)],
                     balance="random")
        be.balancer.rng.seed(1)                  # a fixed sequence of draws
        be.balancer.draws = 4                    # one of them lands on b (seeded: always)
        be.balancer.take_conn(0)                 # a is full, b is free
        be.balancer.set_up(1, False)             # the waiter's draw can only be a
        waiter = asyncio.ensure_future(be._pick(set()))
        await settle()
        assert be.queued == 1
        be.balancer.set_up(1, True)
        assert be.pick_now() == 1                # b has room: served at once
        waiter.cancel()
    asyncio.run(main())


def test_a_persistent_pick_waits_for_its_servers_slot_not_another():
    """Persistence (acquire(force=)) bypasses the balancer, not maxconn: with its server
    full, the request queues even though another server has room, and takes that server's
    slot when it frees."""
    async def main():
        be = backend(asyncio.get_running_loop(), [server("a", maxconn=1), server("b", maxconn=1)])
        assert be.pick_now() == 0                    # a is full
        waiter = asyncio.ensure_future(be._pick(set(), None, 0))
        await settle()
        assert (be.queued, waiter.done(), be.balancer.active) == (1, False, [1, 0])
        be.balancer.drop_conn(0)
        be._wake_queue()
        assert await waiter == 0
        assert (be.queued, be.balancer.active) == (0, [1, 0])
    asyncio.run(main())


def test_a_persistent_pick_takes_a_down_server():
    async def main():
        be = backend(asyncio.get_running_loop(), [server("a", maxconn=1), server("b")])
        be.balancer.set_up(0, False)
        assert await be._pick(set(), None, 0) == 0   # option persist: DOWN, but chosen
        assert be.balancer.active == [1, 0]
        assert be.pick_now() == 1                    # the balancer itself never picks it
    asyncio.run(main())
