"""The stream machine (http/machine.py), driven by events alone: no socket, no engine, no loop.

Each test walks one stream through the machine as the driver would (the events an engine
job or a loop task reports) and asserts the exact jobs it returns and the outcome it keeps
for the counters and the log (status, termination, bytes, retries)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from splicer.health.observe import Event as Observed
from splicer.http.h1 import parse_request
from splicer.http.logformat import StreamInfo
from splicer.http.machine import (BODY_GRACE, TRANSITIONS, RelayTerms, Abort, Acquire, Buffer, Discard, EndBody, Ev,
                                  Finish, Hold, Interim, Observe, ReadHead, Release, Reply, Respond, Send, Serve,
                                  ShutServer, State, STATE_NAMES, StreamMachine, StreamMachineError, Tunnel, Wait, Warn,
                                  whole_body)
from splicer.http.outcome import End, Result
from splicer.http.retry import RetryPolicy
from splicer.http.termination import NORMAL, Cause, Phase, Termination
from splicer.runtime.transfer import SplicePolicy

OK_5 = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
INFO = StreamInfo("192.0.2.1", 4000, "10.0.0.1", 80, "www", "farm")


def counters():
    """Counters that counted before (an increment must add, not set)."""
    return SimpleNamespace(wretr=10, wredis=10, reused=10, req_tot=10)


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


def machine(raw=b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", policy=RetryPolicy(), first=True, observing=True,
            cls=StreamMachine, **kw):
    req = parse_request(raw, 100)
    m = cls(req, raw, route(**kw), policy, counters(), "farm", first)
    m.observing = observing
    return m


def sending(raw=b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", via=None, **kw):
    """A machine whose request went out on `via` (a lease; a new one by default): in SEND,
    waiting for the response head."""
    m = machine(raw, **kw)
    m.start()
    m.leased(via or lease())
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
    assert m.bec.reused == 11 and L.server.counters.reused == 11 and L.server.counters.req_tot == 11


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
    m = sending()
    jobs = m.head(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n", None, None, 1.0)
    assert isinstance(jobs[-1], Interim) and m.state == State.INTERIM and m.answered
    assert jobs[-1].data.startswith(b"HTTP/1.1 103 Early Hints\r\n")
    assert m.interim_sent(len(jobs[-1].data), 103) == [ReadHead()]
    assert m.interim == [103] and m.state == State.SEND
    m.head(OK_5, None, None, 2.0)
    assert m.state == State.DATA


def test_no_interim_head_to_an_http10_client():
    m = sending(b"GET / HTTP/1.0\r\n\r\n")
    assert m.head(b"HTTP/1.1 100 Continue\r\n\r\n", None, None, 1.0) == [Observe(Observed.HTTP_OK), ReadHead()]
    assert m.state == State.SEND and not m.answered


def test_idle_connection_closed_under_a_replayable_request_is_retried_on_a_new_one():
    m = sending(via=lease(reused=True))
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
    m = sending()
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
    assert (m.retries, m.bec.wretr, a.counters.wretr) == (1, 11, 11)
    b = server(1, "web2")
    m.leased(lease(b))
    assert m.redispatched and m.bec.wredis == 11 and a.counters.wredis == 11
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
    m = sending(raw)
    m.head(b"HTTP/1.1 204 No Content\r\n\r\n", None, None, 1.0)
    assert m.sent(True, Result(End.DONE)) == []
    assert m.body_ended(Result(End.DONE, 100000, 100000, 0)) == [Finish(True, True)]


def test_a_request_body_that_times_out_shuts_the_server_side_and_answers_408():
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
    m = sending(raw)
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
    m = sending()
    m.head(OK_5, None, None, 1.0)
    assert m.sent(True, Result(End.SRC_EOF, 2)) == [Abort(False), Finish(False, False)]
    assert str(m.term) == "SD"


def test_killed_while_waiting_for_the_response_gives_the_connection_back_and_resets():
    m = sending()
    assert m.killed() == [Abort(True), Finish(False, False)]
    assert str(m.term) == "KH" and m.state == State.DONE
    assert m.killed() == []  # a second report changes nothing


def test_a_stopped_request_body_ends_before_the_connection_is_given_back():
    """EndBody comes first: the body's transfer may still use the server socket that the
    release closes (the driver runs what follows once it has stopped)."""
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    m = sending(raw)
    assert m.head(b"HTTP/1.1 502 Bad\r\nContent", None, None, 1.0) == [
        Observe(Observed.HTTP_HDRRSP), EndBody(), Release(False), Reply(None, 502)]
    assert m.body == 2


def test_no_observe_job_unless_the_health_observes_responses():
    m = sending(observing=False)
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


# -- what the machine starts from, and keeps for the log ----------------------------------------

def test_a_new_stream_starts_with_nothing_counted():
    raw = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
    m = machine(raw, policy=RetryPolicy(5), observing=False)
    assert (m.state, m.phase, m.term, m.status, m.retries, m.redispatched) == (State.QUEUE, Phase.QUEUE, NORMAL,
                                                                                0, 0, False)
    assert (m.server, m.tried, m.lease, m.answer, m.handed, m.resp, m.view, m.info, m.early) == (None,) * 9
    assert (m.head_in, m.head_out, m.up, m.down, m.interim, m.t_resp) == (len(raw), 0, Result(End.DONE),
                                                                          Result(End.DONE), (), 0.0)
    assert (m.left, m.whole, m.body, m.avoid, m.only, m.failed) == (5, 0, 0, frozenset(), None, None)
    assert (m.answered, m.keep, m.reusable, m.good, m.replayable, m.allow_reuse, m.persisting) == (False,) * 7
    assert (m.server_status, m.reply_status, m.interim_status, m.resp_raw, m.out_head) == (0, 0, 0, b"", b"")
    assert (m.first, m.be_name, m.stopping) == (True, "farm", False)


@pytest.mark.parametrize("raw, whole, replayable, send", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0, True, (0, False)),
    (b"DELETE /x HTTP/1.1\r\nHost: x\r\n\r\n", 0, True, (0, False)),
    (b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 0, True, (0, False)),
    (b"POST /x HTTP/1.1\r\nHost: x\r\n\r\n", 0, False, (0, False)),                      # not idempotent
    (b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", 3, False, (3, False)),  # a body: never twice
    (b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", 2, False, (0, True)),   # not all there
    (b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n", 3, False, (0, True)),
    (b"PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 100, False, (0, True)),
])
def test_what_a_request_allows_and_how_its_body_goes(raw, whole, replayable, send):
    m = machine(raw)
    assert m.start(whole) == [Acquire(frozenset(), None, True, 3)]
    assert (m.replayable, m.allow_reuse) == (replayable, True)
    assert m.leased(lease())[-1] == Send(raw, *send)
    assert m.body == (1 if send[1] else 0)


def test_a_body_larger_than_a_buffer_is_never_sent_with_its_head():
    raw = b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n"
    m = machine(raw, bufsize=10)
    m.start(100)
    assert m.leased(lease())[-1] == Send(raw, 0, True)


def test_failed_connects_and_a_redispatch_count_where_the_log_reads_them():
    m = sending(policy=RetryPolicy(3), via=lease(failures=2, redispatched=True))
    assert (m.retries, m.left, m.redispatched, m.phase) == (2, 1, True, Phase.HEADERS)


def test_a_retry_to_the_same_server_counts_no_redispatch():
    policy = RetryPolicy(2, frozenset({"conn-failure", 503}), False)
    m = machine(policy=policy, observing=False)
    m.start()
    a = server(4, "web5")
    m.leased(lease(a))
    jobs = m.head(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert jobs[-1] == Acquire(frozenset(), 4, True, 1)
    assert m.failed is a and m.lease is None and m.state == State.QUEUE
    m.leased(lease(a))
    assert (m.redispatched, m.bec.wredis, a.counters.wredis, m.failed) == (False, 10, 10, None)
    assert a.counters.req_tot == 12


def test_retries_used_up_answer_the_servers_status():
    policy = RetryPolicy(1, frozenset({503}), False)
    m = sending(policy=policy, observing=False)
    m.head(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    m.leased(lease())
    jobs = m.head(b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\n", None, None, 2.0)
    assert jobs == [Respond(b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\n", 4, False, False, False, True)]
    assert (m.retries, m.server_status) == (1, 503)


# -- response heads that are no response ---------------------------------------------------------

@pytest.mark.parametrize("raw, reused, observed, term, status", [
    (b"", False, Observed.HTTP_BROKEN_PIPE, "SH", 502),          # closed without a byte
    (None, False, Observed.HTTP_READ_ERROR, "SH", 502),          # a read error
    (b"HTTP/1.1 200 OK\r\nContent", False, Observed.HTTP_HDRRSP, "SH", 502),  # cut mid-head
    (b"HTTP/1.1 200 OK\r\nContent", True, Observed.HTTP_HDRRSP, "SH", 502),
    (b"", True, None, "SH", 502),                                 # keep-alive race: not the server's fault
])
def test_no_head_is_a_502_and_the_servers_health_hears_it_unless_a_reused_connection_closed(
        raw, reused, observed, term, status):
    m = sending(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", via=lease(reused=reused))
    jobs = m.head(raw, None, None, 1.0)
    assert jobs == ([Observe(observed)] if observed else []) + [Release(False), Reply(None, status)]
    assert (str(m.term), m.status, m.lease) == (term, status, None)


def test_a_killed_connection_is_not_the_servers_fault():
    m = machine()
    m.start()
    L = lease()
    m.leased(L)
    L.killed = Cause.DOWN
    assert m.head(b"", None, None, 1.0) == [Release(False), Reply(None, 502)]


def test_an_oversized_response_head_is_a_502_by_the_proxy():
    m = sending()
    assert m.head(b"", None, "too-large", 1.0) == [Observe(Observed.HTTP_HDRRSP), Release(False), Reply(None, 502)]
    assert str(m.term) == "PH"


def test_an_invalid_response_head_is_answered_with_its_status():
    m = sending()
    jobs = m.head(b"HTTP/1.1 2x0 OK\r\n\r\n", None, None, 1.0)
    assert jobs == [Observe(Observed.HTTP_HDRRSP), Release(False), Reply(None, 502)]
    assert str(m.term) == "PH" and m.t_resp == 0.0


def test_a_send_failure_on_a_new_connection_is_a_502():
    m = sending(via=lease(reused=False))
    assert m.send_failed() == [Release(False), Reply(None, 502)]
    assert str(m.term) == "SH"


def test_a_send_failure_on_a_reused_connection_is_sent_again_on_a_new_one():
    m = sending(via=lease(reused=True))
    assert m.send_failed() == [Release(False), Acquire(frozenset(), None, False, 3)]
    assert m.term == NORMAL and m.retries == 0


def test_a_client_gone_while_an_interim_head_went_out_ends_the_stream_without_a_page():
    m = sending()
    m.head(b"HTTP/1.1 100 Continue\r\n\r\n", None, None, 1.0)
    assert m.interim_status == 100
    assert m.interim_sent(0, 100) == [Release(False), Finish(False, False)]
    assert (str(m.term), m.interim, m.head_out) == ("CH", (), 0)


def test_after_an_interim_head_no_retry_replaces_the_response():
    m = sending(policy=RetryPolicy(3, frozenset({"empty-response"})))
    m.head(b"HTTP/1.1 103 Early Hints\r\n\r\n", None, None, 1.0)
    m.interim_sent(30, 103)
    assert m.head(b"", None, None, 2.0)[-1] == Reply(None, 502)
    assert m.head_out == 30


# -- the final response ---------------------------------------------------------------------------

@pytest.mark.parametrize("req_raw, resp_raw, respond, keep, reusable", [
    # chunked: spliced verbatim under splice-auto
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
     (None, True, True, False, True), True, True),
    # chunked to an HTTP/1.0 client: de-chunked, and the connection closes
    (b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
     (None, True, True, True, False), False, True),
    # close-delimited: until the server's end, nothing kept
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n", (None, False, True, False, False), False,
     False),
    # no body (304), kept
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 304 Not Modified\r\n\r\n", (0, False, False, False, True),
     True, True),
    # a large counted body: spliced
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",
     (100000, False, True, False, True), True, True),
    # the server closes after it: the client connection goes on, the server's does not
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n",
     (2, False, False, False, True), True, False),
    # the client asked for a close
    (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
     (2, False, False, False, False), False, True),
])
def test_the_final_response_is_framed_as_it_came(req_raw, resp_raw, respond, keep, reusable):
    m = sending(req_raw, observing=False)
    jobs = m.head(resp_raw, None, None, 3.0)
    assert len(jobs) == 1 and type(jobs[0]) is Respond
    assert jobs[0][1:] == respond
    assert (m.keep, m.reusable, m.phase, m.state, m.server_status) == (keep, reusable, Phase.DATA, State.DATA,
                                                                      int(resp_raw[9:12]))
    assert m.handed == (int(resp_raw[9:12]), len(jobs[0].head)) and m.resp_raw == resp_raw


def test_a_soft_stopping_worker_closes_after_the_response():
    class Stopping(StreamMachine):
        __slots__ = ()
        stopping = True
    m = sending(observing=False, cls=Stopping)
    jobs = m.head(OK_5, None, None, 1.0)
    assert jobs[-1].then_head is False and b"Connection: close" in jobs[-1].head and m.reusable


def test_splice_never_copies_every_body():
    m = sending(observing=False, splice_response=SplicePolicy.NEVER)
    assert m.head(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", None, None, 1.0)[-1].splice is False


@pytest.mark.parametrize("end, framing, abort, term", [
    (End.SRC_EOF, b"Content-Length: 5", Abort(False), "SD"),
    (End.SRC_TIMEOUT, b"Content-Length: 5", Abort(False), "sD"),
    (End.DST_ERROR, b"Content-Length: 5", Abort(False), "CD"),
    (End.DST_TIMEOUT, b"Content-Length: 5", Abort(False), "cD"),
    (End.SRC_ERROR, b"Connection: close", Abort(True), "SD"),      # close-delimited: only a reset shows it
    (End.DST_ERROR, b"Connection: close", Abort(False), "CD"),     # the client is gone anyway
])
def test_a_response_body_that_breaks_off_aborts_the_client(end, framing, abort, term):
    m = sending(observing=False)
    m.head(b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n\r\n", None, None, 1.0)
    assert m.sent(True, Result(end, 2)) == [abort, Finish(False, False)]
    assert (str(m.term), m.status, m.down) == (term, 200, Result(end, 2))


def test_a_chunked_body_whose_framing_breaks_tells_the_servers_health():
    m = sending()
    m.head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", None, None, 1.0)
    assert m.sent(True, Result(End.BAD_FRAMING, 9)) == [Observe(Observed.HTTP_RSP), Abort(False),
                                                       Finish(False, False)]
    assert str(m.term) == "PD"


def test_a_response_head_the_client_never_got_is_no_status():
    m = sending(observing=False)
    m.head(OK_5, None, None, 1.0)
    assert m.sent(False, None) == [Finish(False, False)]
    assert (str(m.term), m.status, m.head_out) == ("CD", 0, 0)


def test_a_body_that_failed_before_the_answer_keeps_neither_connection():
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    m = sending(raw, observing=False)
    m.body_ended(Result(End.SRC_EOF, 10))
    m.head(b"HTTP/1.1 400 Bad\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert m.sent(True, Result(End.DONE)) == [Finish(False, False)]
    assert str(m.term) == "CD"


def test_a_body_that_fails_after_an_early_2xx_keeps_neither_connection():
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    m = sending(raw, observing=False)
    m.head(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert m.sent(True, Result(End.DONE)) == []
    assert m.body_ended(Result(End.SRC_TIMEOUT, 10)) == [ShutServer(), Finish(False, False)]
    assert str(m.term) == "cD"


def test_the_grace_wait_ends_with_the_body_when_it_reports_in_time():
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    m = sending(raw, observing=False)
    m.head(b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert m.sent(True, Result(End.DONE)) == [Wait(BODY_GRACE)]
    assert m.body_ended(Result(End.DONE, 100)) == [Finish(False, True)]
    assert m.timer() == []  # (a timer after the end changes nothing)


# -- 101 and the tunnel ---------------------------------------------------------------------------

UPGRADE = b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
SWITCH = b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"


def test_the_101_head_is_relayed_as_the_server_sent_it():
    m = sending(UPGRADE, observing=False)
    (job,) = m.head(SWITCH, None, None, 1.0)
    assert job == Tunnel(SWITCH) and m.phase == Phase.DATA


@pytest.mark.parametrize("up, down, term", [
    (Result(End.SRC_TIMEOUT), Result(End.DONE), "cD"),
    (Result(End.DONE), Result(End.SRC_ERROR), "SD"),
    (Result(End.DST_ERROR), Result(End.DONE), "SD"),
    (Result(End.DONE), Result(End.DST_TIMEOUT), "cD"),
    (Result(End.SRC_EOF), Result(End.SRC_EOF), "--"),
])
def test_a_tunnel_ends_with_who_ended_it(up, down, term):
    m = sending(UPGRADE, observing=False)
    m.head(SWITCH, None, None, 1.0)
    assert m.tunnel_ended(len(SWITCH), up, down) == [Finish(False, False)]
    assert (str(m.term), m.up, m.down, m.head_out, m.status) == (term, up, down, len(SWITCH), 101)


def test_a_101_the_client_never_got_ends_the_stream():
    m = sending(UPGRADE, observing=False)
    m.head(SWITCH, None, None, 1.0)
    assert m.tunnel_ended(0, None, None) == [Finish(False, False)]
    assert (str(m.term), m.status) == ("CD", 0)


def test_a_101_to_a_request_with_a_body_is_no_valid_response():
    """A request with a body is no upgrade (http/h1.py): a 101 to it is a junk response, and
    the body still moving is stopped before the connection is given back."""
    raw = b"POST /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\nContent-Length: 99\r\n\r\n"
    m = sending(raw, observing=False)
    assert m.head(SWITCH, None, None, 1.0) == [EndBody(), Release(False), Reply(None, 502)]
    assert str(m.term) == "PH"


# -- http-response rules ----------------------------------------------------------------------------

def response_rules(*lines: str) -> dict:
    from splicer.http.rules import parse_rule
    sets = (tuple(parse_rule(line.split(" "), "response", "site.cfg", i + 1) for i, line in enumerate(lines)),)
    return dict(response_rules=sets[0], response_sets=sets)


def test_a_response_rule_deny_answers_instead_of_the_server():
    m = sending(observing=False, **response_rules("deny"))
    jobs = m.head(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert jobs[0] == Release(True)  # no body: the server connection stays usable
    assert type(jobs[1]) is Reply and jobs[1].data.startswith(b"HTTP/1.1 502 Bad Gateway\r\n")
    assert (jobs[1].status, m.state, str(m.term), m.answer is not None) == (502, State.ANSWER, "PH", True)
    assert m.replied(len(jobs[1].data)) == [Finish(True, False)]
    assert (m.status, m.head_out) == (502, len(jobs[1].data))


def test_a_response_rule_answer_drops_a_server_connection_that_had_a_body():
    m = sending(observing=False, **response_rules("return status 200 content-type text/plain string hi"))
    jobs = m.head(OK_5, None, None, 1.0)
    assert jobs[0] == Release(False) and jobs[1].status == 200 and str(m.term) == "LH"
    assert m.replied(0) == [Finish(False, False)] and m.status == 0  # the client was gone


def test_a_response_rule_answer_while_the_body_moves_stops_it_and_closes():
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    m = sending(raw, observing=False, **response_rules("deny"))
    jobs = m.head(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert jobs[:2] == [EndBody(), Release(False)] and b"\r\nconnection: close\r\n" in jobs[2].data.lower()
    assert m.replied(10) == [Finish(False, False)]


def test_a_response_rule_set_status_and_header_go_into_the_forwarded_head():
    m = machine(observing=False, **response_rules("set-status 203", "set-header X-A b"))
    m.info = INFO
    m.start()
    m.leased(lease())
    (job,) = m.head(OK_5, None, None, 1.0)
    assert job.head == b"HTTP/1.1 203 Non-Authoritative Information\r\nContent-Length: 5\r\nX-A: b\r\n\r\n"
    assert (job.count, m.resp.status, m.server_status, m.reusable) == (5, 203, 200, True)
    m.sent(True, Result(End.DONE, 5))
    assert m.status == 203


def test_a_status_set_to_304_drops_the_servers_body_and_connection():
    m = sending(observing=False, **response_rules("set-status 304"))
    (job,) = m.head(OK_5, None, None, 1.0)
    assert (job.count, m.reusable, m.keep) == (0, False, True)


# -- persistence --------------------------------------------------------------------------------

def test_persistence_fields_replace_the_servers_and_the_head_is_built_again():
    class Persisting(StreamMachine):
        __slots__ = ()

        def persist_fields(self, resp):
            return [(b"Content-Length", b"5"), (b"Set-Cookie", b"SRV=s1")]
    m = machine(observing=False, cls=Persisting)
    m.persisting = True
    m.start()
    m.leased(lease())
    (job,) = m.head(OK_5, None, None, 1.0)
    assert job.head == b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: SRV=s1\r\n\r\n"


def test_no_persistence_hook_runs_unless_the_backend_persists():
    class Failing(StreamMachine):
        __slots__ = ()

        def persist_fields(self, resp):
            raise AssertionError("not asked")
    m = sending(observing=False, cls=Failing)
    assert m.head(OK_5, None, None, 1.0)[-1].head == OK_5
    assert machine().persist_fields(None) is None  # the machine's own hook changes nothing



# -- what each failure retries, and what the log keeps of it ---------------------------------------

RETRY_ALL = RetryPolicy(3, frozenset({"junk-response", "response-timeout", "empty-response", "conn-failure"}))


@pytest.mark.parametrize("raw, failure, event", [
    (b"HTTP/1.1 200 OK\r\nCont", None, "junk-response"),
    (b"", "too-large", "junk-response"),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", None, "junk-response"),
    (b"", "timeout", "response-timeout"),
    (b"", None, "empty-response"),
])
def test_each_failure_is_its_own_retry_on_event(raw, failure, event):
    m = sending(policy=RETRY_ALL, observing=False, via=lease(server(2, "web3")))
    jobs = m.head(raw, None, failure, 1.0)
    assert jobs == [Release(False), Warn(f"backend farm server web3: {event}, retrying"),
                    Acquire(frozenset(), 2, True, 2)]
    assert (m.retries, m.term, m.state, m.lease) == (1, NORMAL, State.QUEUE, None)


@pytest.mark.parametrize("end, status, jobs_after", [
    (End.SRC_TIMEOUT, 408, [Reply(None, 408)]),
    (End.BAD_FRAMING, 400, [Reply(None, 400)]),
    (End.SRC_EOF, 0, [Finish(False, False)]),
])
def test_a_failed_request_body_is_answered_by_how_it_failed(end, status, jobs_after):
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    m = sending(raw, policy=RETRY_ALL, observing=False, via=lease(reused=True))
    m.body_ended(Result(end, 7))
    assert m.head(b"", None, None, 1.0) == [Release(False)] + jobs_after
    assert (str(m.term), m.status, m.up) == ("C" + "D" if end is not End.SRC_TIMEOUT else "cD", status, Result(end, 7))


def test_a_head_request_gets_no_body_whatever_the_length_says():
    m = sending(b"HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n", observing=False)
    assert m.head(OK_5, None, None, 1.0)[-1][1:] == (0, False, False, False, True)


def test_the_interim_head_is_relayed_exactly():
    m = sending(observing=False)
    assert m.head(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n", None, None, 1.0) == [
        Interim(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n")]


def test_no_retry_on_a_status_after_an_interim_head_reached_the_client():
    policy = RetryPolicy(3, frozenset({503}))
    m = sending(policy=policy, observing=False)
    m.head(b"HTTP/1.1 100 Continue\r\n\r\n", None, None, 1.0)
    m.interim_sent(25, 100)
    assert type(m.head(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", None, None, 2.0)[-1]) is Respond


def test_an_error_page_after_an_interim_head_adds_to_what_went_out():
    m = sending(observing=False)
    m.head(b"HTTP/1.1 100 Continue\r\n\r\n", None, None, 1.0)
    m.interim_sent(25, 100)
    m.head(b"", None, "timeout", 2.0)
    assert m.replied(100) == [Finish(False, False)]
    assert (m.head_out, m.status, m.interim) == (125, 504, [100])


def test_no_server_after_a_retry_adds_its_retries_and_names_the_server_tried():
    policy = RetryPolicy(3, frozenset({503}))
    m = sending(policy=policy, observing=False)
    m.head(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    s = server(1, "web2")
    assert m.no_server("SC", 2, s) == [Reply(None, 503)]
    assert (m.retries, m.tried, str(m.term)) == (3, s, "SC")


def test_a_retry_that_is_no_retry_on_event_warns_nothing():
    m = sending(observing=False, via=lease(reused=True))
    assert not any(type(j) is Warn for j in m.head(b"", None, None, 1.0))


@pytest.mark.parametrize("length, whole, sent_whole", [(1, 1, 1), (1, 0, 0), (16384, 16384, 16384),
                                                       (16385, 20000, 0)])
def test_a_body_goes_with_its_head_only_when_all_there_and_within_a_buffer(length, whole, sent_whole):
    raw = b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % length
    m = machine(raw, observing=False)
    m.start(whole)
    relay = RelayTerms(599, False, 32768) if sent_whole else None  # a streamed body: never relayed
    assert m.leased(lease())[-1] == Send(raw, sent_whole, not sent_whole, relay)


def test_a_get_with_a_one_byte_body_is_not_replayed():
    m = machine(b"GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n")
    m.start()
    assert m.replayable is False


def test_a_buffered_body_without_expect_gets_no_100_continue():
    m = machine(b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", http_buffer_request=True)
    assert m.start() == [Buffer(3, False)] and m.phase == Phase.REQUEST
    m.buffered(b"abc")
    assert (m.state, m.phase) == (State.QUEUE, Phase.QUEUE)


def test_a_buffered_body_is_cut_at_a_buffer():
    m = machine(b"POST /f HTTP/1.0\r\nContent-Length: 30\r\nExpect: 100-continue\r\n\r\n",
                http_buffer_request=True, bufsize=20)
    assert m.start() == [Buffer(20, False)]  # (no 100-continue to an HTTP/1.0 client)


def test_a_client_that_leaves_before_its_buffered_body_is_no_page():
    m = machine(b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", http_buffer_request=True)
    m.start()
    assert m.buffered(None, "closed") == [Finish(False, False)]
    assert (str(m.term), m.state) == ("CR", State.DONE)


def test_the_101_head_carries_the_response_rules():
    m = machine(UPGRADE, observing=False, **response_rules("set-header X-T 1"))
    m.info = INFO
    m.start()
    m.leased(lease())
    (job,) = m.head(SWITCH, None, None, 1.0)
    assert job == Tunnel(b"HTTP/1.1 101 Switching Protocols\r\nX-T: 1\r\nConnection: upgrade\r\n"
                         b"Upgrade: websocket\r\n\r\n")  # (the connection's own fields go last)


def test_an_http10_client_gets_the_chunked_body_dechunked_and_closed():
    m = sending(b"GET / HTTP/1.0\r\n\r\n", observing=False)
    m.head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", None, None, 1.0)
    assert m.sent(True, Result(End.SRC_ERROR, 3)) == [Abort(True), Finish(False, False)]


@pytest.mark.parametrize("status, keep", [(199 + 1, True), (299, True), (300, False), (404, False)])
def test_only_a_2xx_before_the_whole_body_lets_both_connections_go_on(status, keep):
    raw = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    m = sending(raw, observing=False)
    (job,) = m.head(b"HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n" % status, None, None, 1.0)
    assert job.then_head is False and m.keep is keep
    assert m.sent(True, Result(End.DONE)) == ([] if keep else [Wait(BODY_GRACE)])


def test_a_response_rule_answer_renders_from_the_request_and_the_servers_status():
    m = machine(b"GET /p?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", observing=False,
                **response_rules("return status 200 content-type text/plain lf-string "
                                 "%[status]:%[method]:%[url]:%[req.hdr(host)]:%[be_name] if { status 404 }"))
    m.info = INFO
    m.view = view_of(m.req)
    m.start()
    m.leased(lease())
    jobs = m.head(b"HTTP/1.1 404 Nope\r\nContent-Length: 0\r\n\r\n", None, None, 1.0)
    assert jobs[-1].data.endswith(b"\r\n\r\n404:GET:/p?q=1:x:farm") and m.reply_status == 200
    assert m.replied(len(jobs[-1].data)) == [Finish(True, False)] and m.status == 200


def test_a_response_rule_that_does_not_match_leaves_the_response():
    m = machine(observing=False, **response_rules("deny if { status 500 }"))
    m.view = view_of(m.req)
    m.start()
    m.leased(lease())
    (job,) = m.head(OK_5, None, None, 1.0)
    assert job.head == OK_5 and m.answer is None


def view_of(req):
    from splicer.http.sample import RequestView
    return RequestView(req.method, req.target, req.target.partition(b"?")[0], b"1.1", req.headers, "192.0.2.1",
                       4000, "10.0.0.1", 80, False, {})


@pytest.mark.parametrize("ev, args", [
    (Ev.HEAD, (OK_5, None, None, 1.0)), (Ev.SEND_FAILED, ()), (Ev.SENT, (True, Result(End.DONE))),
    (Ev.INTERIM_SENT, (0, 100)), (Ev.TUNNEL_END, (0, None, None)), (Ev.REPLIED, (10,)),
    (Ev.BUFFERED, (b"x", None)), (Ev.NO_SERVER, ("sQ", 0, None)), (Ev.BODY, (Result(End.DONE),)),
    (Ev.TIMER, ()), (Ev.KILLED, (Cause.KILLED,)),
])
def test_what_a_job_reports_after_the_stream_was_killed_changes_nothing(ev, args):
    m = sending()
    m.killed()
    assert m.feed(ev, *args) == []
    assert (m.state, str(m.term), m.status, m.head_out) == (State.DONE, "KH", 0, 0)


def test_a_connection_lent_after_the_end_goes_back_at_once():
    m = machine()
    m.start()
    m.killed()
    assert m.leased(lease()) == [Release(False)]
    assert str(m.term) == "KQ"


# -- the engine relays a plain response by itself (Send.relay, Ev.RELAYED) -------------------

def relaying(raw=b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", **kw):
    kw.setdefault("observing", False)
    m = machine(raw, **kw)
    m.start()
    return m, m.leased(lease())[-1]


def test_a_plain_request_lets_the_engine_relay_up_to_the_first_status_retry_on_names():
    _, send = relaying()
    assert send.relay == RelayTerms(599, False, 32768)
    _, send = relaying(policy=RetryPolicy(3, frozenset({"conn-failure", 503, 404})))
    assert send.relay == RelayTerms(403, False, 32768)
    _, send = relaying(b"HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n", splice_response=SplicePolicy.NEVER)
    assert send.relay == RelayTerms(599, True, 2**64 - 1)
    _, send = relaying(splice_response=SplicePolicy.ALWAYS)
    assert send.relay.splice_min == 4096


@pytest.mark.parametrize("raw, close, announce", [
    (b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", True, False),
    (b"GET /a HTTP/1.0\r\n\r\n", True, False),
    (b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", False, True),
])
def test_a_client_that_closes_or_speaks_1_0_is_told_so_by_the_engine(raw, close, announce):
    m, send = relaying(raw)
    assert send.relay == RelayTerms(599, False, 32768, close, announce)
    jobs = m.relayed(OK_5, None, 1.0, 60, True, Result(End.DONE, 5, 5, 0))
    assert jobs == [Finish(not close, True)]


@pytest.mark.parametrize("raw, kw", [
    (b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", dict(observing=True)),
    (b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", dict(response_rules=(object(),))),
    (b"GET /a HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", {}),
    (b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", dict(policy=RetryPolicy(3, frozenset({100})))),
])
def test_the_machine_sees_the_head_itself_where_it_may_send_other_bytes(raw, kw):
    """Observed responses, response rules, an upgrade, a retry-on status below 200: no relay."""
    _, send = relaying(raw, **kw)
    assert send.relay is None


def test_persistence_keeps_the_head_for_the_machine_and_a_soft_stop_relays_with_close():
    m = machine(observing=False)
    m.persisting = True
    m.start()
    assert m.leased(lease())[-1].relay is None
    class Stopping(StreamMachine):
        __slots__ = ()
        stopping = True
    m = machine(observing=False, cls=Stopping)
    m.start()
    assert m.leased(lease())[-1].relay == RelayTerms(599, False, 32768, True, False)


def test_a_relayed_response_is_recorded_as_the_machines_own_respond():
    m, _ = relaying()
    jobs = m.relayed(OK_5, None, 7.5, len(OK_5), True, Result(End.DONE, 5, 5, 0))
    assert jobs == [Finish(True, True)]
    assert (m.state, m.status, m.server_status, m.term, m.head_out, m.t_resp) == (
        State.DONE, 200, 200, NORMAL, len(OK_5), 7.5)
    assert m.down == Result(End.DONE, 5, 5, 0) and m.resp_raw == OK_5 and m.phase == Phase.DATA


def test_a_relayed_response_whose_server_closes_gives_its_connection_up():
    m, _ = relaying()
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
    assert m.relayed(head, None, 1.0, 38, True, Result(End.DONE, 5, 0, 5)) == [Finish(True, False)]


def test_a_relay_the_client_took_nothing_of_is_its_abort():
    m, _ = relaying()
    assert m.relayed(OK_5, None, 1.0, len(OK_5), False, None) == [Finish(False, False)]
    assert (str(m.term), m.head_out, m.status) == ("CD", 0, 0)


def test_a_relayed_body_the_server_cut_short_ends_the_client_with_a_fin():
    m, _ = relaying()
    jobs = m.relayed(OK_5, None, 1.0, len(OK_5), True, Result(End.SRC_EOF, 2, 0, 2))
    assert jobs == [Abort(False), Finish(False, False)]
    assert (str(m.term), m.status, m.head_out) == ("SD", 200, len(OK_5))


class StopsLater(StreamMachine):
    """A worker whose soft stop begins while the engine relays."""
    __slots__ = ()
    later = False

    @property
    def stopping(self):
        return StopsLater.later


def test_a_relay_that_ends_during_a_soft_stop_keeps_the_client_its_response_did_not_say_close():
    """The client may have sent its next request already: that one's response says close."""
    m, send = relaying(cls=StopsLater)
    assert send.relay is not None
    StopsLater.later = True
    try:
        assert m.relayed(OK_5, None, 1.0, len(OK_5), True, Result(End.DONE, 5, 5, 0)) == [Finish(True, True)]
    finally:
        StopsLater.later = False


def test_a_relay_after_the_stream_was_killed_changes_nothing():
    m, _ = relaying()
    m.killed()
    assert m.relayed(OK_5, None, 1.0, len(OK_5), True, Result(End.DONE, 5, 5, 0)) == []
    assert m.state == State.DONE and m.status == 0


def test_a_relay_a_hard_stop_cut_counts_its_head_and_bytes_killed_in_data():
    m, _ = relaying()
    jobs = m.relayed(OK_5, None, 1.0, len(OK_5), True, Result(End.SRC_ERROR, 3, 0, 3), True)
    assert jobs == [Abort(True), Finish(False, False)]
    assert (str(m.term), m.handed, m.down.moved, m.state) == ("KD", (200, len(OK_5)), 3, State.DONE)


def test_a_relay_that_all_went_reads_its_status_and_reuse_from_the_index():
    from splicer.engine.binding import h1_index
    head = b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
    m, _ = relaying()
    jobs = m.relayed(head, h1_index(head), 2.0, 50, True, Result(End.DONE, 5, 0, 5), False)
    assert jobs == [Finish(True, False)]
    assert (m.status, m.server_status, m.head_out, m.resp_raw, m.resp) == (404, 404, 50, head, None)
    m, _ = relaying()
    assert m.relayed(OK_5, h1_index(OK_5), 2.0, 38, True, Result(End.DONE, 5, 0, 5), False) == [
        Finish(True, True)]
    assert (m.status, m.handed) == (200, (200, 38))


def test_the_final_head_adds_to_the_interim_heads_that_went_before():
    m = sending()
    data = m.head(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n", None, None, 1.0)[-1].data
    m.interim_sent(len(data), 103)
    final = m.head(OK_5, None, None, 2.0)[-1].head
    m.sent(True, Result(End.DONE, 5, 0, 5))
    assert m.head_out == len(data) + len(final)


# -- answered here, before any server: request rules, services, no backend; refused heads -------

def request_rule(line: str):
    from splicer.http.rules import parse_rule
    return parse_rule(line.split(" "), "request", "site.cfg", 1)


def test_a_request_rule_deny_is_answered_here_and_the_connection_goes_on():
    m = machine(observing=False)
    jobs = m.answer_locally(request_rule("deny"), INFO, {}, 0.0)
    assert type(jobs[0]) is Reply and jobs[0].data.startswith(b"HTTP/1.1 403 Forbidden\r\n") and len(jobs) == 1
    assert (m.state, m.local, m.status, str(m.term), m.answer.counter) == (State.ANSWER, "answer", 403, "PR", "dreq")
    assert m.replied(len(jobs[0].data)) == [Finish(True, False)]
    assert (m.state, m.head_out, m.head_in) == (State.DONE, len(jobs[0].data), len(m.raw))


def test_a_local_answer_drops_the_small_body_of_its_request_before_the_next_one():
    raw = b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n"
    m = machine(raw, observing=False)
    jobs = m.answer_locally(request_rule("return status 200 content-type text/plain string ok"), INFO, {}, 0.0)
    assert (m.status, str(m.term), m.answer.counter) == (200, "LR", "intercepted")
    assert m.replied(len(jobs[0].data)) == [Discard(7)]
    assert m.state == State.DRAIN
    assert m.discarded(7) == [Finish(True, False)]
    assert m.head_in == len(raw) + 7


def test_a_local_answer_whose_body_does_not_all_come_closes():
    m = machine(b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n", observing=False)
    jobs = m.answer_locally(request_rule("deny"), INFO, {}, 0.0)
    m.replied(len(jobs[0].data))
    assert m.discarded(3) == [Finish(False, False)]


@pytest.mark.parametrize("raw", [
    b"POST /f HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n",
    b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\nExpect: 100-continue\r\n\r\n",
    b"GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
])
def test_a_local_answer_closes_when_the_body_is_not_read_or_the_client_closes(raw):
    m = machine(raw, observing=False)
    jobs = m.answer_locally(request_rule("deny"), INFO, {}, 0.0)
    assert b"\r\nconnection: close\r\n" in jobs[0].data.lower()
    assert m.replied(len(jobs[0].data)) == [Finish(False, False)]


def test_a_tarpit_holds_then_answers_and_the_connection_goes_on():
    """haproxy 2.6 answers a tarpitted request with its 500 page after the hold and keeps
    the connection (checked side by side with haproxy 2.6.12)."""
    m = machine(observing=False)
    assert m.answer_locally(request_rule("tarpit"), INFO, {}, 2.5) == [Hold(2.5)]
    assert (m.state, m.phase, str(m.term)) == (State.HOLD, Phase.TARPIT, "PT")
    jobs = m.held(True)
    assert type(jobs[0]) is Reply and jobs[0].status == 500 and m.state == State.ANSWER
    assert b"connection: close" not in jobs[0].data.lower()
    assert m.replied(len(jobs[0].data)) == [Finish(True, False)]
    assert (m.status, m.answer.counter) == (500, "dreq")


def test_a_tarpitted_request_with_a_body_closes_after_the_answer():
    """The hold reads and drops whatever the client sends (the body with it): where the body
    ended is not known, so the connection cannot go on."""
    m = machine(b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", observing=False)
    m.answer_locally(request_rule("tarpit"), INFO, {}, 1.0)
    (job,) = m.held(True)
    assert b"\r\nconnection: close\r\n" in job.data
    assert m.replied(len(job.data)) == [Finish(False, False)]


def test_a_tarpitted_client_that_leaves_gets_nothing():
    m = machine(observing=False)
    m.answer_locally(request_rule("tarpit"), INFO, {}, 2.5)
    assert m.held(False) == [Finish(False, False)]
    assert (m.status, m.head_out, str(m.term)) == (0, 0, "CT")


def test_no_backend_is_a_503_page_and_the_connection_goes_on():
    """haproxy 2.6: the built-in 503 page, no rule counter, "SC", and the connection kept
    (checked side by side with haproxy 2.6.12)."""
    m = machine(observing=False)
    (job,) = m.answer_locally(None, INFO, {}, 0.0)
    assert job.status == 503 and job.data.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"connection: close" not in job.data.lower()
    assert (m.status, str(m.term), m.answer, m.keep) == (503, "SC", None, True)
    assert m.replied(len(job.data)) == [Finish(True, False)]


def test_no_backend_with_an_errorfile_sends_it_as_it_is_and_closes():
    page = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
    m = machine(observing=False)
    (job,) = m.answer_locally(None, INFO, {503: page}, 0.0)
    assert job.data == page and m.keep is False
    assert m.replied(len(page)) == [Finish(False, False)]


def service_rule():
    from splicer.http.service import ServiceRule
    return ServiceRule("return", 200, None, service="stats")


def test_a_service_answers_and_says_what_came_of_it():
    rule = service_rule()
    m = machine(observing=False)
    assert m.answer_locally(rule, INFO, {}, 0.0) == [Serve(rule)]
    assert m.state == State.ANSWER and str(m.term) == "LR"
    assert m.served(200, 900, 120, True) == [Finish(True, False)]
    assert (m.status, m.head_out, m.head_in) == (200, 900, 120)


def test_a_service_whose_answer_did_not_go_closes():
    m = machine(observing=False)
    m.answer_locally(service_rule(), INFO, {}, 0.0)
    assert m.served(200, 0, 60, True) == [Finish(False, False)]
    m = machine(observing=False)
    m.answer_locally(service_rule(), INFO, {}, 0.0)
    assert m.served(200, 1, 60, True) == [Finish(True, False)]  # (one byte is an answer that went)


@pytest.mark.parametrize("cause, status, term", [
    (Cause.PROXY, 400, "PR"), (Cause.CLIENT_TIMEOUT, 408, "cR"), (Cause.PROXY, 431, "PR"),
    (Cause.CLIENT_ABORT, 400, "CR"),
])
def test_a_refused_head_is_its_error_page_and_a_close(cause, status, term):
    m = StreamMachine(None, b"", route(), RetryPolicy(), None, "", True)
    assert m.refuse(cause, status, 37) == [Reply(None, status)]
    assert (m.local, m.status, str(m.term), m.head_in, m.state) == ("refused", status, term, 37, State.ANSWER)
    assert m.replied(0) == [Finish(False, False)]  # the client was gone: nothing went out
    assert m.head_out == 0


def test_killed_during_a_tarpit_resets_the_client():
    m = machine(observing=False)
    m.answer_locally(request_rule("tarpit"), INFO, {}, 2.5)
    assert m.killed() == [Abort(True), Finish(False, False)]
    assert m.held(True) == []  # what the hold reports later changes nothing


def test_a_local_answer_renders_from_the_request_the_session_and_its_variables():
    from splicer.http.variables import Vars
    m = machine(b"GET /p?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", observing=False)
    m.view = view_of(m.req)
    m.view.vars = Vars({}, {})
    m.view.vars.set("txn", "who", b"me")
    jobs = m.answer_locally(request_rule("return status 200 content-type text/plain lf-string "
                                         "%[method]:%[url]:%[req.hdr(host)]:%[fe_name]:%[src]:%[var(txn.who)]"),
                            INFO, {}, 0.0)
    assert jobs[0].data.endswith(b"\r\n\r\nGET:/p?q=1:x:www:192.0.2.1:me")


def test_a_local_answer_to_head_has_no_body_even_after_a_leading_empty_line():
    head = b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n"
    m = StreamMachine(parse_request(head, 100), b"\r\n" + head, route(), RetryPolicy(), counters(), "farm", True)
    (job,) = m.answer_locally(request_rule("return status 200 content-type text/plain string hello"), INFO, {}, 0.0)
    assert job.data.endswith(b"\r\n\r\n") and b"content-length: 5\r\n" in job.data


def test_a_local_answer_tells_an_http10_keep_alive_client_it_stays_open():
    m = machine(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", observing=False)
    (job,) = m.answer_locally(request_rule("deny"), INFO, {}, 0.0)
    assert b"\r\nconnection: keep-alive\r\n" in job.data.lower()
    assert m.replied(len(job.data)) == [Finish(True, False)]


def test_a_body_of_exactly_a_buffer_is_read_and_dropped():
    m = machine(b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 16384\r\n\r\n", observing=False)
    (job,) = m.answer_locally(request_rule("deny"), INFO, {}, 0.0)
    assert m.replied(len(job.data)) == [Discard(16384)]


def test_a_get_with_an_expectation_but_no_body_keeps_the_connection():
    m = machine(b"GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n", observing=False)
    (job,) = m.answer_locally(request_rule("deny"), INFO, {}, 0.0)
    assert m.replied(len(job.data)) == [Finish(True, False)]


def test_a_refusal_without_a_page_just_closes():
    m = StreamMachine(None, b"", route(), RetryPolicy(), None, "", True)
    assert m.refuse(Cause.CLIENT_ABORT, 0, 0) == [Finish(False, False)]
    assert (m.status, str(m.term), m.state) == (0, "CR", State.DONE)


def test_the_tarpits_answer_is_not_kept_once_sent():
    m = machine(observing=False)
    m.answer_locally(request_rule("tarpit"), INFO, {}, 1.0)
    assert m.reply.startswith(b"HTTP/1.1 500 ")
    m.held(True)
    assert m.reply == b""
