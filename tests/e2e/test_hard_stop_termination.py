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
