"""runtime/channel.py: newline-delimited JSON requests and replies over a real socketpair."""
import asyncio

import pytest

from splicer.runtime.channel import Channel, ChannelClosed, socketpair


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


async def pair(master_handler, worker_handler):
    a, b = socketpair()
    m = Channel(a, master_handler, "master")
    w = Channel(b, worker_handler, "worker")
    await m.start()
    await w.start()
    return m, w


def test_request_and_reply_both_ways_with_matching_ids():
    async def main():
        async def mh(req):
            return {"from": "master", "op": req["op"], "n": req.get("n")}

        async def wh(req):
            return {"from": "worker", "op": req["op"], "n": req.get("n")}
        m, w = await pair(mh, wh)
        # many at once in both directions: each reply finds its own asker
        got = await asyncio.gather(*(m.ask({"op": "stats", "n": i}) for i in range(20)),
                                   *(w.ask({"op": "cluster-stats", "n": i}) for i in range(20)))
        assert got[:20] == [{"from": "worker", "op": "stats", "n": i} for i in range(20)]
        assert got[20:] == [{"from": "master", "op": "cluster-stats", "n": i} for i in range(20)]
        m.close()
        w.close()
    run(main())


def test_a_handler_may_ask_back_while_its_request_waits():
    """The worker's cluster-stats: the master answers it by asking the same worker."""
    async def main():
        box = {}

        async def mh(req):
            inner = await box["m"].ask({"op": "stats"})
            return {"stats": inner["stats"] + 1}

        async def wh(req):
            return {"stats": 41}
        m, w = await pair(mh, wh)
        box["m"] = m
        assert await w.ask({"op": "cluster-stats"}) == {"stats": 42}
        m.close()
        w.close()
    run(main())


def test_timeout_and_late_reply_dropped():
    async def main():
        release = asyncio.Event()

        async def slow(req):
            await release.wait()
            return {"late": True}

        async def fast(req):
            return {"ok": True}
        m, w = await pair(fast, slow)
        with pytest.raises(TimeoutError):
            await m.ask({"op": "stats"}, timeout=0.2)
        release.set()
        # the late reply is dropped; the channel still works
        release2 = asyncio.Event()
        release2.set()
        assert await w.ask({"op": "x"}) == {"ok": True}
        m.close()
        w.close()
    run(main())


def test_peer_closing_fails_pending_asks():
    async def main():
        never = asyncio.Event()

        async def hang(req):
            await never.wait()
            return {}

        async def fast(req):
            return {}
        m, w = await pair(fast, hang)
        task = asyncio.get_running_loop().create_task(m.ask({"op": "stats"}, timeout=10))
        await asyncio.sleep(0)
        w.close()
        with pytest.raises(ChannelClosed):
            await task
        with pytest.raises(ChannelClosed):
            await m.ask({"op": "stats"})
        m.close()
    run(main())


def test_a_failing_handler_answers_an_error():
    async def main():
        async def boom(req):
            raise RuntimeError("bug")

        async def fast(req):
            return {}
        m, w = await pair(fast, boom)
        reply = await m.ask({"op": "stats"})
        assert "RuntimeError" in reply["error"]
        m.close()
        w.close()
    run(main())
