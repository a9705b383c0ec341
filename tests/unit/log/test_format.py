"""splicer.log.format: haproxy's httplog/tcplog lines, aliases, flags and JSON, field by field."""
import json
import time

import pytest

from splicer.http.logformat import RuleError
from splicer.log.format import HTTPLOG, TCPLOG, LogFormat
from splicer.log.record import LogRecord

T = time.mktime((2009, 2, 6, 12, 14, 14, 0, 0, -1)) + 0.655


def rec(**kw) -> LogRecord:
    base = dict(ci="10.0.1.2", cp=33317, fi="10.0.0.1", fp=80, accept=T, start=T, Th=0, Ti=0, TR=10, Tw=0,
                Tc=30, Tr=69, Ta=109, Tt=109, ft="http-in", b="static", s="srv1", ST=200, B=2750, U=120,
                ts="--", tsc="----", ac=1, fc=1, bc=1, sc=1, rc=0, redispatched=False, sq=0, bq=0,
                hr=(b"1wt.eu",), hs=(), request=b"GET /index.html HTTP/1.1", method=b"GET",
                uri=b"/index.html?a=1", version=b"HTTP/1.1", spliced=2048, copied=0, rt=7, mode="http")
    base.update(kw)
    return LogRecord(**base)


def test_httplog_is_haproxys_example_line():
    # configuration.txt 8.2.3's example, with one request header captured and none of the response
    line = LogFormat(HTTPLOG, (1, 1)).render(rec())
    assert line == ('10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 2750 - - '
                    '---- 1/1/1/1/0 0/0 {1wt.eu} {} "GET /index.html HTTP/1.1"')


def test_httplog_without_captures_has_no_braces():
    line = LogFormat(HTTPLOG).render(rec())
    assert line.endswith(' 1/1/1/1/0 0/0 "GET /index.html HTTP/1.1"')


def test_tcplog():
    assert LogFormat(TCPLOG).render(rec(Tt=250)) == (
        "10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 0/30/250 2750 -- 1/1/1/1/0 0/0")


def test_missing_request_is_badreq_and_timers_minus_one():
    line = LogFormat(HTTPLOG).render(rec(request=b"", TR=-1, Tw=-1, Tc=-1, Tr=-1, ST=-1, s="<NOSRV>"))
    assert " http-in static/<NOSRV> -1/-1/-1/-1/109 -1 " in line and line.endswith('"<BADREQ>"')


def test_redispatched_retries_have_a_plus():
    assert LogFormat("%rc").render(rec(rc=2, redispatched=True)) == "+2"
    assert LogFormat("%rc").render(rec(rc=2)) == "2"


def test_hostile_request_line_stays_one_quoted_line():
    line = LogFormat("%{+Q}r").render(rec(request=b'GET /"x"\r\n#\x00 HTTP/1.1'))
    assert line == '"GET /#22x#22#0D#0A#23#00 HTTP/1.1"'


def test_captures_escape_and_show_absent_as_empty():
    assert LogFormat("%hr", (3, 0)).render(rec(hr=(b"a|b", None, b"{x}"))) == "{a#7Cb||#7Bx#7D}"
    assert LogFormat("%hrl", (2, 0)).render(rec(hr=(b"a", None))) == '"a" "-"'


def test_aliases_and_fetches():
    f = LogFormat("%HM %HU %HP %HQ %HV %ST %U %fi:%fp %[bytes_spliced] %[bytes_copied] %[srv_name] %Ts %ms %rt")
    assert f.needs_dst
    assert f.render(rec()) == f"GET /index.html?a=1 /index.html ?a=1 HTTP/1.1 200 120 10.0.0.1:80 2048 0 srv1 {int(T)} 655 7"
    assert not LogFormat(HTTPLOG).needs_dst


def test_timers_derived():
    r = rec(Ti=5, TR=10, Tw=1, Tc=2, Tr=3, Ta=40, Tt=45)
    assert LogFormat("%Tq %Td %Tu").render(r) == "15 24 40"
    assert LogFormat("%Tq").render(rec(TR=-1)) == "-1"


def test_spaces_are_merged_and_percent_escaped():
    assert LogFormat("a   %ST  100%%").render(rec()) == "a 200 100%"


def test_json_of_named_items():
    f = LogFormat('%{+json}o %(client)ci %(port)cp %(req)r %(sp)[bytes_spliced] %ST text')
    assert json.loads(f.render(rec(request=b'GET /"q HTTP/1.1'))) == {
        "client": "10.0.1.2", "port": 33317, "req": "GET /#22q HTTP/1.1", "sp": 2048}


def test_q_and_e_flags():
    assert LogFormat("%{+Q}b %{+Q,+E}[url]").render(rec(uri=b"/a]b")) == '"static" "/a\\]b"'
    assert LogFormat("%{+Q}o %b %{-Q}s %ST").render(rec()) == '"static" srv1 200'


@pytest.mark.parametrize("text, msg", [
    ("%XYZ", "unknown log-format variable '%XYZ'"),
    ("%[nope]", "unknown sample fetch 'nope'"),
    ("%{+Z}r", "unknown log-format flag 'Z'"),
    ("%[src", "unclosed '%['"),
    ("50% off", "a '%' must start"),
])
def test_errors(text, msg):
    with pytest.raises(RuleError, match=msg.replace("[", r"\[").replace("(", r"\(")):
        LogFormat(text)
