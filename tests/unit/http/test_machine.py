"""The stream machine (http/machine.py), driven by events alone: no socket, no engine, no loop.

Each test walks one stream through the machine as the driver would (the events an engine
job or a loop task reports) and asserts the exact jobs it returns and the outcome it keeps
for the counters and the log (status, termination, bytes, retries)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from splicer.health.observe import Event as Observed
from splicer.http.h1 import parse_request
from splicer.http.machine import (BODY_GRACE, TRANSITIONS, Abort, Acquire, Buffer, EndBody, Ev, Finish, Interim,
                                  Observe, ReadHead, Release, Reply, Respond, Send, ShutServer, State, STATE_NAMES,
                                  StreamMachine, StreamMachineError, Tunnel, Wait, Warn, whole_body)
from splicer.http.outcome import End, Result
from splicer.http.retry import RetryPolicy
from splicer.http.termination import NORMAL, Cause, Phase, Termination
from splicer.runtime.transfer import SplicePolicy

OK_5 = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"


def counters():
    return SimpleNamespace(wretr=0, wredis=0, reused=0, req_tot=0)


def server(index=0, name="web1"):
    return SimpleNamespace(index=index, model=SimpleNamespace(name=name), counters=counters())


def lease(srv=None, reused=False, failures=0, redispatched=False):
    return SimpleNamespace(server=srv or server(), reused=reused, failures=failures, redispatched=redispatched,
                           killed=None)


def route(**kw):
    base = dict(bufsize=16384, splice_request=SplicePolicy.AUTO, splice_response=SplicePolicy.AUTO,
                response_rules=(), response_sets=(), errorpages={}, http_buffer_request=False,
                abortonclose=False)
    base.update(kw)
    return SimpleNamespace(**base)


def machine(raw=b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", policy=RetryPolicy(), first=True, observing=True, **kw):
    req = parse_request(raw, 100)
    m = StreamMachine(req, raw, route(**kw), policy, counters(), "farm", first)
    m.observing = observing
    return m


def test_fast_walk_is_four_events_and_both_connections_go_on():
    m = machine()
    assert m.start() == [Acquire(frozenset(), None, True, 3)]
    assert m.state == State.QUEUE
    L = lease(reused=True)
    assert m.leased(L) == [Send(m.raw, 0, False)]
    assert (m.state, m.phase) == (State.SEND, Phase.HEADERS)
    jobs = m.head(OK_5, None, None, 7.5)
    assert jobs == [Observe(Observed.HTTP_OK), Respond(OK_5, 5, False, False, False, True)]
    assert (m.state, m.t_resp, m.handed) == (State.DATA, 7.5, (200, len(OK_5)))
    assert m.sent(True, Result(End.DONE, 5, 0, 5)) == [Finish(True, True)]
    assert (m.state, m.status, m.term, m.head_out, m.down.moved) == (State.DONE, 200, NORMAL, len(OK_5), 5)
    assert m.bec.reused == 1 and L.server.counters.reused == 1 and L.server.counters.req_tot == 1


def test_small_post_whole_with_its_head_goes_in_the_send_job():
    raw = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n"
    m = machine(raw)
    m.start(whole=4)
    assert m.leased(lease()) == [Send(raw, 4, False)]
    assert m.body_ended(whole_body(4)) == []
    assert m.head(OK_5, None, None, 1.0)[-1].then_head is True
    assert m.up == Result(End.DONE, 4, 0, 4)


def test_a_body_not_all_there_moves_separately_and_the_head_waits():
    raw = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n"
    m = machine(raw)
    m.start(whole=10)  # only 10 bytes behind the head: not whole
    assert m.leased(lease()) == [Send(raw, 0, True)]
    assert m.body_ended(Result(End.DONE, 40, 0, 40)) == []
    assert m.head(OK_5, None, None, 1.0)[-1] == Respond(OK_5, 5, False, False, False, True)


def test_interim_heads_are_relayed_then_the_final_one():
    m = machine()
    m.start()
    m.leased(lease())
    jobs = m.head(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n", None, None, 1.0)
    assert isinstance(jobs[-1], Interim) and m.state == State.INTERIM and m.answered
    assert jobs[-1].data.startswith(b"HTTP/1.1 103 Early Hints\r\n")
    assert m.interim_sent(len(jobs[-1].data), 103) == [ReadHead()]
    assert m.interim == [103] and m.state == State.SEND
    m.head(OK_5, None, None, 2.0)
    assert m.state == State.DATA


def test_no_interim_head_to_an_http10_client():
    m = machine(b"GET / HTTP/1.0\r\n\r\n")
    m.start()
    m.leased(lease())
    assert m.head(b"HTTP/1.1 100 Continue\r\n\r\n", None, None, 1.0) == [Observe(Observed.HTTP_OK), ReadHead()]
    assert m.state == State.SEND and not m.answered


def test_idle_connection_closed_under_a_replayable_request_is_retried_on_a_new_one():
    m = machine()
    m.start()
    m.leased(lease(reused=True))
    assert m.head(b"", None, None, 1.0) == [Release(False), Acquire(frozenset(), None, False, 3)]
    assert (m.retries, m.term, m.state) == (0, NORMAL, State.QUEUE)


def test_idle_connection_closed_under_a_post_is_answered_502_never_replayed():
    raw = b"POST /pay HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"
    m = machine(raw)
    m.start(whole=2)
    m.leased(lease(reused=True))
    assert m.send_failed() == [Release(False), Reply(None, 502)]
    assert (m.term, m.status) == (Termination(Cause.SERVER_ABORT, Phase.HEADERS), 502)
    assert m.replied(120) == [Finish(False)]
    assert m.head_out == 120


def test_response_timeout_is_a_504_and_tells_the_servers_health():
    m = machine()
    m.start()
    m.leased(lease())
    assert m.head(b"", None, "timeout", 1.0) == [Observe(Observed.HTTP_READ_TIMEOUT), Release(False), Reply(None, 504)]
    assert str(m.term) == "sH"


def test_retry_on_status_goes_elsewhere_with_redispatch_and_counts_it():
    policy = RetryPolicy(2, frozenset({"conn-failure", 503}), True)
    m = machine(policy=policy)
    m.start()
    a = server(0, "web1")
    m.leased(lease(a))
    jobs = m.head(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert jobs == [Observe(Observed.HTTP_STS), Release(False), Warn("backend farm server web1: status 503, retrying"),
                    Acquire(frozenset({0}), None, True, 1)]
    assert (m.retries, m.bec.wretr, a.counters.wretr) == (1, 1, 1)
    b = server(1, "web2")
    m.leased(lease(b))
    assert m.redispatched and m.bec.wredis == 1 and a.counters.wredis == 1
    m.head(OK_5, None, None, 2.0)
    assert m.server is b and m.state == State.DATA


def test_upgrade_is_tunnelled_after_the_101():
    raw = b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
    m = machine(raw)
    m.start()
    assert m.allow_reuse is False
    m.leased(lease())
    jobs = m.head(b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
                  None, None, 1.0)
    assert isinstance(jobs[-1], Tunnel) and m.state == State.TUNNEL
    assert m.tunnel_ended(80, Result(End.DONE, 10), Result(End.DONE, 20)) == [Finish(False, False)]
    assert (m.status, m.term, m.head_out) == (101, NORMAL, 80)


def test_an_early_error_ends_the_body_after_a_grace_and_closes():
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    m = machine(raw)
    m.start()
    assert m.leased(lease())[-1] == Send(raw, 0, True)
    jobs = m.head(b"HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert jobs[-1].then_head is False and m.keep is False
    assert b"Connection: close" in jobs[-1].head
    assert m.sent(True, Result(End.DONE)) == [Wait(BODY_GRACE)]
    assert m.state == State.BODY_WAIT
    assert m.timer() == [EndBody(), Finish(False, False)]


def test_an_early_2xx_waits_for_the_body_then_both_go_on():
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
    m = machine(raw)
    m.start()
    m.leased(lease())
    m.head(b"HTTP/1.1 204 No Content\r\n\r\n", None, None, 1.0)
    assert m.sent(True, Result(End.DONE)) == []
    assert m.body_ended(Result(End.DONE, 100000, 100000, 0)) == [Finish(True, True)]


def test_a_request_body_that_times_out_shuts_the_server_side_and_answers_408():
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
    m = machine(raw)
    m.start()
    m.leased(lease())
    assert m.body_ended(Result(End.SRC_TIMEOUT, 10)) == [ShutServer()]
    assert str(m.term) == "cD"
    assert m.head(b"", None, None, 1.0) == [Release(False), Reply(None, 408)]
    assert str(m.term) == "cD"


def test_no_server_is_a_503_with_the_backends_termination():
    m = machine()
    m.start()
    assert m.no_server("sQ", 0, None) == [Reply(None, 503)]
    assert (str(m.term), m.status) == ("sQ", 503)


def test_a_response_body_cut_short_aborts_the_client_with_a_fin():
    m = machine()
    m.start()
    m.leased(lease())
    m.head(OK_5, None, None, 1.0)
    assert m.sent(True, Result(End.SRC_EOF, 2)) == [Abort(False), Finish(False, False)]
    assert str(m.term) == "SD"


def test_killed_while_waiting_for_the_response_gives_the_connection_back_and_resets():
    m = machine()
    m.start()
    m.leased(lease())
    assert m.killed() == [Abort(True), Finish(False, False)]
    assert str(m.term) == "KH" and m.state == State.DONE
    assert m.killed() == []  # a second report changes nothing


def test_a_stopped_request_body_ends_before_the_connection_is_given_back():
    """EndBody comes first: the body's transfer may still use the server socket that the
    release closes (the driver runs what follows once it has stopped)."""
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    m = machine(raw)
    m.start()
    m.leased(lease())
    assert m.head(b"HTTP/1.1 502 Bad\r\nContent", None, None, 1.0) == [
        Observe(Observed.HTTP_HDRRSP), EndBody(), Release(False), Reply(None, 502)]
    assert m.body == 2


def test_no_observe_job_unless_the_health_observes_responses():
    m = machine(observing=False)
    m.start()
    m.leased(lease())
    assert m.head(b"", None, "timeout", 1.0) == [Release(False), Reply(None, 504)]


def test_abortonclose_with_the_client_gone_sends_nothing():
    m = machine(abortonclose=True)
    m.start()
    assert m.leased(lease(), True) == [Finish(False, True)]
    assert str(m.term) == "CC"


def test_buffered_request_body_goes_out_with_the_head():
    raw = b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"
    m = machine(raw, http_buffer_request=True)
    assert m.start() == [Buffer(3, True)]
    assert m.state == State.REQUEST
    assert m.buffered(b"abc") == [Acquire(frozenset(), None, True, 3)]
    assert m.out_head.endswith(b"abc") and m.head_in == len(raw) + 3
    assert all(n.lower() != b"expect" for n, _ in m.req.headers)


def test_buffered_request_body_that_does_not_come_is_a_408():
    m = machine(b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", http_buffer_request=True)
    m.start()
    assert m.buffered(None, "timeout") == [Reply(None, 408)]
    assert str(m.term) == "cR"


def test_an_event_the_state_does_not_take_is_a_driver_bug():
    m = machine()
    m.start()
    with pytest.raises(StreamMachineError, match="QUEUE got SENT"):
        m.sent(True, Result(End.DONE))


def test_the_table_names_real_handlers_and_reachable_states():
    for (state, ev), (name, targets) in TRANSITIONS.items():
        assert callable(getattr(StreamMachine, name)), name
        assert targets and all(t in STATE_NAMES for t in targets)
    for state in STATE_NAMES:
        assert (state, Ev.KILLED) in TRANSITIONS
