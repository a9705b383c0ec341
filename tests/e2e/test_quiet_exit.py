"""`-q` (quiet): warnings and errors only, so a worker's exit prints no `splicer-stats {json}`
line (without -q it does: tests/e2e/test_workers.py); SIGHUP, an explicit request, still
prints it. Real processes, real sockets on 127.0.0.1."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import time

from tests.e2e.helpers import exchange, free_port, http_config, splicer_command, wait_port


def ask(path: str, line: str) -> str:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(20)
        s.connect(path)
        s.sendall(line.encode() + b"\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out.decode()


def test_quiet_workers_exit_without_the_stats_line(tmp_path, farm):
    port = free_port()
    cfg = tmp_path / "q.cfg"
    cfg.write_text(http_config(port, [(o.name, o.port) for o in farm], nbthread=2))
    sock, logp = str(tmp_path / "m.sock"), tmp_path / "q.log"
    with open(logp, "wb") as logf:
        proc = subprocess.Popen(splicer_command() + ["-c", str(cfg), "-S", sock, "-q"], stdout=logf,
                                stderr=subprocess.STDOUT)
        try:
            wait_port(port, proc)
            deadline = time.monotonic() + 30
            while True:  # both workers serve (each answered the master)
                try:
                    if json.loads(ask(sock, "show counters").splitlines()[0])["worker"] == [1, 2]:
                        break
                except (OSError, ValueError, IndexError):
                    pass
                assert time.monotonic() < deadline, logp.read_text()
                time.sleep(0.05)
            assert exchange(port, b"GET /files/1k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") \
                .startswith(b"HTTP/1.1 200 ")
            proc.send_signal(signal.SIGHUP)  # asked for: printed even when quiet
            while logp.read_text().count("splicer-stats ") < 2:
                assert time.monotonic() < deadline + 30, logp.read_text()
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
    text = logp.read_text()
    assert text.count("splicer-stats ") == 2  # the SIGHUP's two, none at exit
    assert " INFO " not in text
