"""runtime.backend's runtime API changes (set_admin, set_weight, set_address, set_checking)
and runtime.command's executor and state-file application, on runtime objects in-process
(no socket: the balancer's picks are looked at directly)."""
import asyncio
from collections import Counter

from splicer.admin import servers_state as st
from splicer.admin.commands import Level, parse
from splicer.config.model import Backend as BackendModel
from splicer.config.model import Server, Timeouts
from splicer.runtime import command
from splicer.runtime.backend import Backend


class FakeProxy:
    """What runtime/command.py reads of a Proxy, around real runtime Backends."""

    def __init__(self, loop, backends):
        self.loop = loop
        self.backends = {b.name: b for b in backends}
        self.worker = 1
        self.frontends = []


def make(loop, *servers, name="be"):
    return Backend(BackendModel(name, "http", servers=tuple(servers), timeouts=Timeouts()), loop)


def picks(be, n=40):
    got = Counter()
    for _ in range(n):
        i = be.pick_now()
        if i is None:
            got[None] += 1
            continue
        got[be.servers[i].model.name] += 1
        be.balancer.drop_conn(i)
    return got


def run(fn):
    async def main():
        return fn(asyncio.get_running_loop())
    return asyncio.run(main())


def execute(proxy, line):
    cmd = parse(tuple(line.split()), Level.ADMIN, command.server_names(proxy))
    return command.execute(proxy, cmd)


def test_drain_takes_a_server_out_of_the_balancer_but_not_out_of_persistence():
    def t(loop):
        be = make(loop, Server("a", "127.0.0.1", 1), Server("b", "127.0.0.1", 2))
        be.set_admin(0, "drain")
        assert picks(be) == Counter({"b": 40})
        assert be.balancer.up[0]  # still up: persistence may send it requests (haproxy)
        assert be.servers[0].admin == {"DRAIN"} and be.servers[0].weight == 1
        be.set_weight(0, 5)  # remembered, not used while it drains
        assert picks(be) == Counter({"b": 40})
        be.set_admin(0, "ready")
        assert picks(be, 60) == Counter({"a": 50, "b": 10})
    run(t)


def test_maint_is_down_and_ready_brings_it_back():
    def t(loop):
        be = make(loop, Server("a", "127.0.0.1", 1), Server("b", "127.0.0.1", 2, disabled=True))
        assert be.servers[1].admin == {"MAINT"}  # `disabled` starts in maintenance
        assert picks(be) == Counter({"a": 40})
        be.set_admin(1, "ready")
        be.set_admin(0, "maint")
        assert not be.balancer.up[0]
        assert picks(be) == Counter({"b": 40})
        be.set_admin(0, "drain")  # leaves maintenance, drains
        assert be.servers[0].admin == {"DRAIN"} and be.balancer.up[0]
    run(t)


def test_weights_change_the_spread():
    def t(loop):
        be = make(loop, Server("a", "127.0.0.1", 1), Server("b", "127.0.0.1", 2))
        be.set_weight(1, 3)
        assert picks(be, 400) == Counter({"a": 100, "b": 300})
        be.set_weight(0, 0)
        assert picks(be) == Counter({"b": 40})
    run(t)


def test_executor_answers_and_changes_the_servers():
    def t(loop):
        proxy = FakeProxy(loop, [make(loop, Server("a", "127.0.0.1", 1, weight=4), Server("b", "127.0.0.1", 2))])
        be = proxy.backends["be"]
        assert execute(proxy, "set server be/a weight 50%") == {"text": ""}
        assert be.servers[0].weight == 2
        assert execute(proxy, "set server be/b addr 10.1.2.3 port 81") == {
            "text": "IP changed from '127.0.0.1' to '10.1.2.3', port changed from '2' to '81' "
                    "by 'stats socket command'\n"}
        assert be.servers[1].addr == ("10.1.2.3", 81)
        assert execute(proxy, "disable server be/a") == {"text": ""}
        assert execute(proxy, "enable health be/a") == {
            "text": "Health check was not configured on this server, cannot enable.\n"}
        text = execute(proxy, "show servers state")["text"]
        rows = {r.srv_name: r for r in st.parse(text)}
        assert (rows["a"].op_state, rows["a"].admin_state, rows["a"].uweight, rows["a"].iweight) == (0, 1, 2, 4)
        assert (rows["b"].srv_addr, rows["b"].port, rows["b"].op_state) == ("10.1.2.3", 81, 2)
        assert execute(proxy, "show backend") == {"text": "# name\nbe\n"}
    run(t)


def test_replayed_changes_and_state_files_apply_what_they_name():
    def t(loop):
        proxy = FakeProxy(loop, [make(loop, Server("a", "127.0.0.1", 1), Server("b", "127.0.0.1", 2))])
        be = proxy.backends["be"]
        command.apply_changes(proxy, [("set", "server", "be/a", "state", "drain"),
                                      ("set", "server", "be/gone", "weight", "3"),  # no longer exists
                                      ("show", "info"),                             # not a change
                                      ("set", "server", "be/b", "weight", "7")])
        assert be.servers[0].admin == {"DRAIN"} and be.servers[1].weight == 7
        saved = st.parse(command.st.render(command.states_of(proxy)))
        fresh = FakeProxy(loop, [make(loop, Server("a", "127.0.0.1", 1), Server("b", "127.0.0.1", 2))])
        assert command.apply_server_states(fresh, saved, {"be"}) == 2
        fb = fresh.backends["be"]
        assert fb.servers[0].admin == {"DRAIN"} and fb.servers[1].weight == 7
        assert command.apply_server_states(fresh, saved, set()) == 0  # no backend loads it
    run(t)


def test_a_no_op_addr_change_and_the_legacy_weight_commands():
    def t(loop):
        proxy = FakeProxy(loop, [make(loop, Server("a", "127.0.0.1", 1, weight=4), Server("b", "127.0.0.1", 2))])
        be = proxy.backends["be"]
        assert execute(proxy, "set server be/b addr 127.0.0.1 port 2") == {"text": "nothing changed\n"}
        assert execute(proxy, "set server be/b addr 127.0.0.1") == {"text": "nothing changed\n"}
        assert execute(proxy, "set server be/b addr 127.0.0.1 port 3") == {
            "text": "port changed from '2' to '3' by 'stats socket command'\n"}
        assert execute(proxy, "set server be/b addr 10.0.0.1 port 3") == {
            "text": "IP changed from '127.0.0.1' to '10.0.0.1' by 'stats socket command'\n"}
        assert be.servers[1].addr == ("10.0.0.1", 3)
        assert execute(proxy, "set weight be/a 50%") == {"text": ""}
        assert be.servers[0].weight == 2
        assert execute(proxy, "get weight be/a") == {"text": "2 (initial 4)\n"}
        assert execute(proxy, "set weight be/a 7") == {"text": ""}
        assert execute(proxy, "get weight be/a") == {"text": "7 (initial 4)\n"}
    run(t)
