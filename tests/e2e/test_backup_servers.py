"""Backup servers and `balance first` through the real `splicer` command: backups take
traffic only when every active server is down (health checks see the origins die), the
first backup alone unless `option allbackups`; an active server coming back takes it back;
`first` fills servers in order up to their maxconn."""
from __future__ import annotations

import collections
import http.client
import socket
import subprocess
import sys
import time

from tests.e2e.conftest import Origin
from tests.e2e.helpers import free_port, http_config, wait_port

CHECK = "check inter 100ms rise 1 fall 1"


def spread(port, n):
    c = collections.Counter()
    for _ in range(n):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/files/0")
        resp = conn.getresponse()
        resp.read()
        conn.close()
        c[(resp.status, resp.getheader("X-Served-By"))] += 1
    return dict(c)


def wait_log(sp, text, timeout=10.0):
    deadline = time.monotonic() + timeout
    while text not in sp.log():
        assert time.monotonic() < deadline, f"no {text!r} in the log"
        time.sleep(0.02)


def backend_lines(origins, backups):
    return "\n".join(f"    server {o.name} 127.0.0.1:{o.port} {CHECK}" + (" backup" if o.name in backups else "")
                     for o in origins)


def config(port, origins, backups, extra_backend=""):
    return http_config(port, [], extra_backend=extra_backend) + backend_lines(origins, backups) + "\n"


def test_first_backup_only_when_all_primaries_are_down_then_primaries_again(start_splicer, www):
    p1, p2, b1, b2 = (Origin(n, www[0]) for n in ("p1", "p2", "b1", "b2"))
    try:
        port = free_port()
        sp = start_splicer(config(port, [p1, b1, p2, b2], {"b1", "b2"}), [port])
        assert spread(port, 10) == {(200, "p1"): 5, (200, "p2"): 5}
        p1.stop()
        wait_log(sp, "server p1 is DOWN")
        assert spread(port, 6) == {(200, "p2"): 6}          # one primary left: no backup yet
        p2_port = p2.port
        p2.stop()
        wait_log(sp, "server p2 is DOWN")
        assert spread(port, 6) == {(200, "b1"): 6}          # the first backup only
        b1.stop()
        wait_log(sp, "server b1 is DOWN")
        assert spread(port, 4) == {(200, "b2"): 4}          # then the next one
        # p2 comes back on its port: it takes the traffic back from the backup
        back = subprocess.Popen([sys.executable, "-m", "splicer.demo.origin", "--port", str(p2_port),
                                 "--root", www[0], "--name", "p2"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(p2_port, back)
            wait_log(sp, "server p2 is UP")
            assert spread(port, 4) == {(200, "p2"): 4}
        finally:
            back.kill()
            back.wait(5)
    finally:
        for o in (p1, p2, b1, b2):
            o.stop()


def test_allbackups_share_the_load(start_splicer, www):
    p1, b1, b2 = (Origin(n, www[0]) for n in ("p1", "b1", "b2"))
    try:
        port = free_port()
        sp = start_splicer(config(port, [p1, b1, b2], {"b1", "b2"}, extra_backend="    option allbackups"), [port])
        assert spread(port, 4) == {(200, "p1"): 4}
        p1.stop()
        wait_log(sp, "server p1 is DOWN")
        assert spread(port, 8) == {(200, "b1"): 4, (200, "b2"): 4}
    finally:
        for o in (p1, b1, b2):
            o.stop()


def test_backup_defaults_from_default_server(start_splicer, www):
    p1, b1 = Origin("p1", www[0]), Origin("b1", www[0])
    try:
        port = free_port()
        cfg = http_config(port, [], extra_backend=f"    server p1 127.0.0.1:{p1.port} {CHECK}\n"
                                                  f"    default-server backup\n"
                                                  f"    server b1 127.0.0.1:{b1.port} {CHECK}\n")
        sp = start_splicer(cfg, [port])
        assert spread(port, 4) == {(200, "p1"): 4}
        p1.stop()
        wait_log(sp, "server p1 is DOWN")
        assert spread(port, 4) == {(200, "b1"): 4}
    finally:
        p1.stop()
        b1.stop()


def hog(port):
    """A 1 GiB download left unread: it holds its server's connection slot."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /files/1g HTTP/1.1\r\nHost: x\r\n\r\n")
    head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200")
    by = [ln for ln in head.split(b"\r\n") if ln.startswith(b"X-Served-By")][0].split(b": ")[1].decode()
    return s, by


def test_first_fills_servers_in_order_by_maxconn(start_splicer, www):
    origins = [Origin(n, www[0]) for n in ("f1", "f2", "f3")]
    try:
        port = free_port()
        cfg = http_config(port, [], balance="first") + "".join(
            f"    server {o.name} 127.0.0.1:{o.port} maxconn {m}\n" for o, m in zip(origins, (1, 2, 1)))
        sp = start_splicer(cfg, [port])
        assert spread(port, 3) == {(200, "f1"): 3}     # each request is over before the next
        held = [hog(port) for _ in range(3)]
        assert [by for _, by in held] == ["f1", "f2", "f2"]
        assert spread(port, 2) == {(200, "f3"): 2}     # f1 and f2 are full
        held[0][0].close()
        # the stream ends (its server slot freed) before its session, which scur counts
        deadline = time.monotonic() + 5
        while sp.stats()["frontends"]["www"]["scur"] != 2:
            assert time.monotonic() < deadline, "the closed download's session did not end"
            time.sleep(0.02)
        assert spread(port, 2) == {(200, "f1"): 2}     # f1 has its slot back
        for s, _ in held[1:]:
            s.close()
    finally:
        for o in origins:
            o.stop()


def test_slowstart_ramps_a_returning_servers_share(start_splicer, www):
    w1, w2 = Origin("w1", www[0]), Origin("w2", www[0])
    back = None
    try:
        port = free_port()
        opts = f"{CHECK} slowstart 160s"
        cfg = http_config(port, [], extra_backend=f"    server w1 127.0.0.1:{w1.port} {opts}\n"
                                                  f"    server w2 127.0.0.1:{w2.port} {opts}\n")
        sp = start_splicer(cfg, [port])
        assert spread(port, 20) == {(200, "w1"): 10, (200, "w2"): 10}   # no ramp at start-up
        w2_port = w2.port
        w2.stop()
        wait_log(sp, "server w2 is DOWN")
        back = subprocess.Popen([sys.executable, "-m", "splicer.demo.origin", "--port", str(w2_port),
                                 "--root", www[0], "--name", "w2"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(w2_port, back)
        wait_log(sp, "server w2 is UP")
        # for the first 10 s of its 160 s ramp, w2 weighs 1/16 of w1: 1 pick in 17
        assert spread(port, 34) == {(200, "w1"): 32, (200, "w2"): 2}
    finally:
        if back is not None:
            back.kill()
            back.wait(5)
        w1.stop()
        w2.stop()
