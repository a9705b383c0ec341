"""A stream cut by `hard-stop-after` is counted as killed, not as a normal end: its termination
state is "K" and the phase it was in ("KD": cut while moving the response body), as haproxy
logs a stream killed at a hard stop; its status and response head bytes count as for any
stream (the body bytes a job had moved when cancelled are not known, so not counted). Read from
the counters line each worker prints at exit. Real processes, real sockets on 127.0.0.1."""
from __future__ import annotations

import http.client
import json
import re
import signal

from tests.e2e.helpers import free_port, http_config
from tests.e2e.test_lifecycle import Download


def test_a_stream_cut_by_hard_stop_after_counts_as_killed_in_data_phase(start_splicer, farm):
    port = free_port()
    cfg = http_config(port, [(o.name, o.port) for o in farm]).replace(
        "    maxconn 1000\n", "    maxconn 1000\n    hard-stop-after 1s\n")
    sp = start_splicer(cfg, [port])
    dl = Download(port, "1g")
    dl.read(1 << 20)  # then stalls: the soft stop cannot finish it
    sp.proc.send_signal(signal.SIGUSR1)
    assert sp.proc.wait(60) == 0
    try:
        dl.finish()
    except (http.client.IncompleteRead, ConnectionError):
        pass
    assert dl.got < 1 << 30
    lines = re.findall(r"^splicer-stats (.*)$", sp.log(), re.M)
    assert len(lines) == 1, sp.log()[-2000:]
    stats = json.loads(lines[0])
    fe, be = stats["frontends"]["www"], stats["backends"]["farm"]
    assert fe["bout"] > 100  # at least the response head
    srv = be["servers"]["web1"] if be["servers"]["web1"]["req_tot"] else be["servers"]["web2"]
    for c in (fe, be, srv):
        assert c["terms"] == {"KD": 1}, c["terms"]
        assert c["hrsp_2xx"] == 1  # its response (head) went out


def test_a_stream_on_a_reused_server_connection_cut_by_hard_stop_after_is_counted_and_logged(
        start_splicer, farm, tmp_path):
    """The same on the fast path (a request on an idle server connection, moved by engine
    jobs with callbacks, no task): the stream is counted in the worker's last counters line
    and logged before the log closes, "KD--", not lost."""
    port = free_port()
    path = tmp_path / "access.log"
    cfg = http_config(port, [(farm[0].name, farm[0].port)], extra_defaults="    option httplog\n",
                      extra_frontend=f"    log file@{path} format raw daemon\n").replace(
        "    maxconn 1000\n", "    maxconn 1000\n    hard-stop-after 1s\n")
    sp = start_splicer(cfg, [port])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/files/1k")
    first = conn.getresponse()
    assert first.status == 200 and len(first.read()) == 1024  # its server connection is idle now
    conn.request("GET", "/files/1g")  # the same client and server connections: the fast path
    resp = conn.getresponse()
    assert resp.status == 200 and len(resp.read(1 << 20)) == 1 << 20  # then stalls
    sp.proc.send_signal(signal.SIGUSR1)
    assert sp.proc.wait(60) == 0
    conn.close()
    lines = re.findall(r"^splicer-stats (.*)$", sp.log(), re.M)
    assert len(lines) == 1, sp.log()[-2000:]
    fe = json.loads(lines[0])["frontends"]["www"]
    assert fe["terms"] == {"--": 1, "KD": 1}, fe["terms"]
    assert fe["hrsp_2xx"] == 2
    logged = path.read_text().splitlines()
    assert [ln.split()[-6] for ln in logged if "/files/" in ln] == ["----", "KD--"], logged
