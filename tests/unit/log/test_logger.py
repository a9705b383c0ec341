"""splicer.log.logger.Logger: a batch of `option httplog` lines (queued as httplog_fields and
rendered with one % of the repeated template) is written exactly as the lines one by one
would be, in the order the streams ended, records of refused requests in between; and the
framers' join_block gives join()'s bytes for every syslog header."""
import asyncio

import pytest

from splicer.config.model import LogTarget
from splicer.log import logger as logger_mod
from splicer.log.collect import httplog_line, stream_record
from splicer.log.format import HTTPLOG, LogFormat
from splicer.log.logger import LogHub
from splicer.log.syslog import FORMATS, INFO, Framer

from .test_collect import Log, Server, stream

NOW = 1234567890.5


@pytest.fixture
def loop():
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


def file_logger(loop, path, fmt=HTTPLOG, **kw):
    hub = LogHub(loop)
    model = LogTarget(kind="file", address=f"file@{path}", path=str(path), format="raw", **kw)
    lg = hub.logger(LogFormat(fmt), (model,), False)
    assert lg is not None
    return hub, lg


def expected(streams, now):
    """The lines httplog_line makes of `streams`, one by one, with a fresh logger."""
    ref = Log()
    return [httplog_line(st, ref, now) for st in streams]


def streams(n):
    return [stream(server=Server(f"web{i % 3}", i % 2), retries=i % 4, redispatched=bool(i % 5 == 0),
                   status=(200, 404, 503)[i % 3]) for i in range(n)]


def test_a_batch_is_the_lines_one_by_one(loop, tmp_path):
    hub, lg = file_logger(loop, tmp_path / "a.log")
    hub.offset = Log().hub.offset
    loop.time = lambda: 100.0703
    sts = streams(50)
    for st in sts:
        lg.stream(st)
    hub.offset = Log().hub.offset  # (flush refreshes the offset; the lines were made before)
    lg.flush()
    hub.close()
    assert (tmp_path / "a.log").read_text().splitlines() == expected(sts, 100.0703)
    assert lg.count == 50


def test_records_between_fast_lines_keep_their_place(loop, tmp_path):
    """A LogRecord queued (a refused or locally answered request) after fast-path lines is
    written after them and before the lines that follow it."""
    hub, lg = file_logger(loop, tmp_path / "m.log")
    hub.offset = Log().hub.offset
    loop.time = lambda: 100.0703
    a, b = streams(2), streams(3)
    for st in a:
        lg.stream(st)
    record = stream_record(stream(server=Server("other", 0)), Log(), 100.0703)
    lg.add(record)
    for st in b:
        lg.stream(st)
    lg.flush()
    hub.close()
    got = (tmp_path / "m.log").read_text().splitlines()
    assert got == expected(a, 100.0703) + [LogFormat(HTTPLOG).render(record)] + expected(b, 100.0703)


def test_a_full_queue_drops_and_counts(loop, tmp_path, monkeypatch):
    monkeypatch.setattr(logger_mod, "_MAX_FIELDS", 3 * logger_mod.HTTPLOG_FIELDS)
    hub, lg = file_logger(loop, tmp_path / "d.log")
    loop.time = lambda: 100.0703
    for st in streams(5):
        lg.stream(st)
    lg.flush()
    hub.close()
    assert len((tmp_path / "d.log").read_text().splitlines()) == 3
    assert hub.stats()["queue_dropped"] == 2


def test_lines_cut_by_len_are_cut_as_one_by_one(loop, tmp_path):
    """With `len`, a batch takes the per-line path: each line cut to len - 1 bytes + "\\n"."""
    hub, lg = file_logger(loop, tmp_path / "c.log", maxlen=80, explicit_len=True)
    loop.time = lambda: 100.0703
    sts = streams(4)
    hub.offset = Log().hub.offset
    for st in sts:
        lg.stream(st)
    lg.flush()
    hub.close()
    assert (tmp_path / "c.log").read_text().splitlines() == [x[:79] for x in expected(sts, 100.0703)]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_join_block_is_join(fmt):
    f = Framer(fmt, 16, pid=42, host="box", maxlen=0)
    lines = ["first line", 'second "line"', "x"]
    assert f.join_block(INFO, "".join(m + "\n" for m in lines), NOW) == f.join(INFO, lines, NOW)


def udp_logger(loop, sink, fmt=HTTPLOG, maxlen=1024):
    hub = LogHub(loop)
    host, port = sink.getsockname()
    model = LogTarget(kind="udp", address=f"udp@{host}:{port}", host=host, port=port, maxlen=maxlen,
                      facility=16)
    lg = hub.logger(LogFormat(fmt), (model,), False)
    assert lg is not None
    return hub, lg


def datagrams(sock) -> list[bytes]:
    out = []
    sock.setblocking(False)
    while True:
        try:
            out.append(sock.recv(65536))
        except BlockingIOError:
            return out


@pytest.mark.parametrize("maxlen", [1024, 100])
def test_udp_batch_is_one_datagram_per_frame(loop, maxlen):
    """A batch to a UDP target (many datagrams per sendmmsg call) gives the datagrams the
    framer's frames() would, one per line, cut to `len`, in order; a record between fast
    lines keeps its place."""
    import socket
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    hub, lg = udp_logger(loop, sink, maxlen=maxlen)
    hub.offset = Log().hub.offset
    loop.time = lambda: 100.0703
    a, b = streams(70), streams(3)
    for st in a:
        lg.stream(st)
    lg.flush()
    hub.offset = Log().hub.offset  # (the flush set the real clock's)
    record = stream_record(stream(server=Server("other", 0)), Log(), 100.0703)
    for st in b[:1]:
        lg.stream(st)
    lg.add(record)
    for st in b[1:]:
        lg.stream(st)
    lg.flush()
    got = datagrams(sink)
    framer = lg.sinks[0][1]
    lines = expected(a, 100.0703) + expected(b[:1], 100.0703) + [LogFormat(HTTPLOG).render(record)] \
        + expected(b[1:], 100.0703)
    # the header's date is the flush's second: compare past it
    want = [f[f.index(b"]: ") + 3:] for f in framer.frames(INFO, lines, NOW)]
    assert [g[g.index(b"]: ") + 3:] for g in got] == want
    assert hub.stats()["sent"] == len(lines) and hub.stats()["dropped"] == 0
    hub.close()
    sink.close()


def test_a_line_that_fails_to_render_loses_only_itself(loop, tmp_path, caplog):
    hub, lg = file_logger(loop, tmp_path / "b.log")
    hub.offset = Log().hub.offset
    loop.time = lambda: 100.0703
    sts = streams(3)
    sts[1].status = "oops"  # (a bug's value: %d takes no str)
    for st in sts:
        lg.stream(st)
    lg.flush()
    hub.close()
    assert (tmp_path / "b.log").read_text().splitlines() == expected([sts[0], sts[2]], 100.0703)
    assert "failed to render" in caplog.text


def test_the_clock_offset_keeps_its_smallest_measure_and_follows_a_set_clock(loop, monkeypatch):
    """LogHub.clock: a measure a little later than the offset (the loop's lag) changes
    nothing, the dates remembered stay; an earlier one is kept (a measure is never early);
    the wall clock set forward by a second is followed, and the dates remembered at the old
    offset are forgotten, so a stream's date is the new clock's."""
    wall = [1000.0]
    monkeypatch.setattr(logger_mod.time, "time", lambda: wall[0])
    loop.time = lambda: 100.0
    hub = LogHub(loop)
    model = LogTarget(kind="file", address="file@/dev/null", path="/dev/null", format="raw")
    lg = hub.logger(LogFormat(HTTPLOG), (model,), False)
    assert hub.offset == 900.0
    first = lg.date_of(100.0)
    wall[0] = 1000.0 + logger_mod.OFFSET_SLACK / 2
    hub.clock()
    assert hub.offset == 900.0 and lg.dates == {100.0: first}
    wall[0] = 999.9995
    hub.clock()
    assert hub.offset == 999.9995 - 100.0 and lg.dates == {}
    wall[0] = 1001.0
    hub.clock()
    assert hub.offset == 901.0 and lg.dates == {}
    assert lg.date_of(100.0) != first and lg.date_of(100.0)[-12:] == logger_mod._date(1001.0)[-12:]
    assert lg.dates is hub.dates
    hub.close()
