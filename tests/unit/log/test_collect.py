"""splicer.log.collect.httplog_line: the `option httplog` fast path (the line's values read
in one pass, without a record, by httplog_fields, put in HTTPLOG_LINE) gives exactly the
line LogFormat(HTTPLOG) renders from the stream's LogRecord, for every kind of ending."""
from types import SimpleNamespace as NS

import pytest

from splicer.http.termination import NORMAL, Cause, Phase, Termination
from splicer.log import collect
from splicer.log.collect import httplog_line, stream_record
from splicer.log.format import HTTPLOG, LogFormat
from splicer.log.logger import Logger

OFFSET = 1.77e9  # wall clock - loop clock


class Log:
    """What collect reads of a Logger (its hub's clock offset, the %rt counter, the
    remembered server names), with Logger's own name_of."""

    name_of = Logger.name_of
    date_of = Logger.date_of

    def __init__(self):
        self.hub, self.count, self.needs_dst, self.names, self.dates = NS(offset=OFFSET), 0, False, {}, {}


class Server:
    """A runtime server as collect reads it (hashable, as the real one: logger.names' key)."""

    def __init__(self, name, index):
        self.model, self.index = NS(name=name), index


def logger():
    return Log()


def session(peer=("127.0.0.1", 40001), local_ip="127.0.0.1", local_port=80):
    ip, port = (peer[0], peer[1]) if type(peer) is tuple else ("unknown", 0)  # as HttpSession's
    return NS(t_accept=100.0, t_idle=100.5, peer=peer, client_ip=ip, client_port=port, local_ip=local_ip,
              local_port=local_port, log_peer=None)


def stream(**kw):
    srv = Server("web2", 1)
    be = NS(name="farm", balancer=NS(active=[3, 5]), queued=2, waiting=[[], []])
    fe = NS(name="fe", proxy=NS(active=9), active=7, captures=((), ()))
    base = dict(
        s=session(),
        fe=fe, be=be, server=srv, t_head=100.0125, first=True, t_lease=100.0301, last_lease=NS(connect=0.004),
        t_resp=100.0502, term=NORMAL, req=NS(headers=[], method=b"GET", target=b"/1k.bin", version=b"1.1"),
        raw=b"GET /1k.bin HTTP/1.1\r\nHost: x\r\n\r\n", up=NS(moved=0, spliced=0, copied=0),
        down=NS(moved=1024, spliced=1024, copied=0), head_out=266, head_in=35, status=200, retries=0,
        redispatched=False, resp_raw=b"", tried=None)
    base.update(kw)
    return NS(**base)


def both(st, now=100.0703):
    """(fast-path line, record line) of one stream."""
    fast = httplog_line(st, logger(), now)
    return fast, LogFormat(HTTPLOG).render(stream_record(st, logger(), now))


CASES = {
    "normal": {},
    "keep-alive follow-up": dict(first=False, t_head=101.25),
    "redispatched retry": dict(retries=2, redispatched=True),
    "server timeout": dict(term=Termination(Cause.SERVER_TIMEOUT, Phase.HEADERS), t_resp=0, status=504),
    "queue timeout, no server": dict(server=None, t_lease=0, term=Termination(Cause.SERVER_TIMEOUT, Phase.QUEUE),
                                     status=503),
    "connect refused": dict(server=None, t_lease=0, term=Termination(Cause.SERVER_ABORT, Phase.CONNECT),
                            status=503),
    "connect refused, the server tried named": dict(server=None, tried=Server("dead", 0), t_lease=0,
                                                    term=Termination(Cause.SERVER_ABORT, Phase.CONNECT), status=503),
    "no status, unknown peer": dict(status=0, s=session("unix", "", 0)),
    "hostile request line": dict(raw=b'\r\nGET /"a"\x7f\xff HTTP/1.1\r\n\r\n'),
    "head without CRLF": dict(raw=b"GET / HTTP/1.1"),
    "large counts and timers": dict(down=NS(moved=10 ** 12, spliced=10 ** 12, copied=0), retries=70000,
                                    t_resp=1e6 + 100.0, s=session(("::1", 65535), "", 0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fast_httplog_line_is_the_records_line(case):
    fast, slow = both(stream(**CASES[case]))
    assert fast == slow


def test_remembered_names_and_peer_give_the_same_lines():
    """A second stream of the same session and server (the client's "ip:port" and the
    "frontend backend/server" text now remembered) still gives the record's line; another
    server of the backend gets its own name."""
    lg = logger()
    st = stream()
    first = httplog_line(st, lg, 100.0703)
    assert st.s.log_peer == "127.0.0.1:40001" and list(lg.names.values()) == ["fe farm/web2"]
    again = stream(s=st.s, server=st.server, first=False, t_head=101.25, t_lease=101.26, t_resp=101.27)
    assert httplog_line(again, lg, 101.3) == LogFormat(HTTPLOG).render(stream_record(again, logger(), 101.3))
    other = stream(s=st.s, server=Server("web1", 0), first=False, t_head=101.25)
    line = httplog_line(other, lg, 101.3)
    assert " fe farm/web1 " in line and line == LogFormat(HTTPLOG).render(stream_record(other, logger(), 101.3))
    assert first != line


def test_names_memo_is_bounded(monkeypatch):
    import splicer.log.logger as lgmod
    monkeypatch.setattr(lgmod, "MAX_NAMES", 3)
    lg = logger()
    for i in range(10):
        httplog_line(stream(server=Server(f"s{i}", 0)), lg, 100.0703)
        assert len(lg.names) <= 3


def test_fast_path_only_for_httplog_without_captures():
    assert LogFormat(HTTPLOG).httplog
    assert not LogFormat(HTTPLOG, (1, 0)).httplog and not LogFormat(HTTPLOG, (0, 1)).httplog
    assert not LogFormat(HTTPLOG + " x").httplog


def test_entry_counts_requests_like_the_record():
    lg = logger()
    httplog_line(stream(), lg, 100.1)
    stream_record(stream(), lg, 100.1)
    assert lg.count == 2


def test_a_line_of_the_fast_path_shows_every_field():
    fast, _ = both(stream(retries=1, redispatched=True))
    assert fast.startswith("127.0.0.1:40001 [") and fast.endswith(
        '] fe farm/web2 13/14/4/20/70 200 1290 - - ---- 9/7/8/5/+1 0/2 "GET /1k.bin HTTP/1.1"')


def test_a_head_that_comes_again_gives_its_line_from_memory():
    """The request line is remembered by the head's bytes: an equal head (another bytes
    object, as the next request's is) gives the same escaped line; a head longer than
    HEAD_LINE_BYTES is not remembered, and its line is still right."""
    raw = b'GET /a"b\x01 HTTP/1.1\r\nHost: x\r\n\r\n'
    first, slow = both(stream(raw=raw))
    assert first == slow and first.endswith(' "GET /a#22b#01 HTTP/1.1"')
    assert collect._HEAD_LINES[raw] == 'GET /a#22b#01 HTTP/1.1'
    again, _ = both(stream(raw=bytes(bytearray(raw))))
    assert again == first
    big = b"GET /big HTTP/1.1\r\nX: " + b"y" * collect.HEAD_LINE_BYTES + b"\r\n\r\n"
    fast, slow = both(stream(raw=big))
    assert fast == slow and fast.endswith(' "GET /big HTTP/1.1"') and big not in collect._HEAD_LINES


def test_the_head_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(collect, "MEMO", 3)
    lg = logger()
    for i in range(10):
        line = httplog_line(stream(raw=b"GET /%d HTTP/1.1\r\n\r\n" % i), lg, 100.0703)
        assert line.endswith(f'"GET /{i} HTTP/1.1"') and len(collect._HEAD_LINES) <= 3


def test_the_date_is_remembered_by_the_start_on_the_loop_clock():
    """Streams that started in the same millisecond of the loop clock share one date;
    another start gets its own; the dates are those the record's line shows."""
    lg = logger()
    a = httplog_line(stream(), lg, 100.0703)
    assert list(lg.dates) == [100.0] and a == LogFormat(HTTPLOG).render(stream_record(stream(), logger(), 100.0703))
    later = stream(first=False, t_head=101.25, t_lease=101.26, t_resp=101.27)
    b = httplog_line(later, lg, 101.3)
    assert sorted(lg.dates) == [100.0, 101.25]
    assert b == LogFormat(HTTPLOG).render(stream_record(later, logger(), 101.3))
    assert a.split("[")[1][:24] != b.split("[")[1][:24]
