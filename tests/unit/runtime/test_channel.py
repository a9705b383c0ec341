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


class _Worker:
    """What Proxy.cluster_stats/cluster_command read of a Proxy: its channel and stats()."""

    def __init__(self, channel, n):
        self.channel = channel
        self.n = n

    def stats(self):
        return {"pid": 1, "worker": self.n, "frontends": {"www": {"req_tot": self.n}}}


def test_proxy_cluster_stats_and_command_ask_the_master():
    from splicer.runtime.proxy import Proxy

    async def main():
        asked = []

        async def master(req):
            asked.append(req)
            if req["op"] == "cluster-stats":
                return {"stats": {"frontends": {"www": {"req_tot": 3}}, "worker": [1, 2]}}
            return {"text": "done\n"}

        async def worker(req):
            return {}
        m, w = await pair(master, worker)
        proxy = _Worker(w, 1)
        assert await Proxy.cluster_stats(proxy) == {"frontends": {"www": {"req_tot": 3}}, "worker": [1, 2]}
        assert await Proxy.cluster_command(proxy, "clear counters") == "done\n"
        assert [r["op"] for r in asked] == ["cluster-stats", "cluster-command"]
        assert asked[1]["line"] == "clear counters"
        m.close()
        w.close()
    run(main())


def test_a_lone_proxy_gives_its_own_stats():
    from splicer.runtime.proxy import Proxy

    async def main():
        got = await Proxy.cluster_stats(_Worker(None, 2))
        assert got["frontends"] == {"www": {"req_tot": 2}} and got["worker"] == [2]
    run(main())
