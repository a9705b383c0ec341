"""End-to-end fixtures: real origin processes, the real `splicer` command, real sockets on 127.0.0.1.

- `www`: a directory of generated files (0 B, 1 KiB, 1 MiB, 256 MiB, 1 GiB) and their sha256.
- `farm`: two origin processes (splicer.demo.origin) named web1 and web2.
- `start_splicer(cfg_text)`: writes the config, starts `splicer -c FILE -S master.sock`, waits
  until every bind accepts, and returns a SplicerProcess (stats via the master CLI's
  `show counters`, stop via SIGTERM).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from splicer.demo.origin import make_file
from tests.e2e.helpers import free_port, sha256_file, splicer_command, wait_listening, wait_port

SIZES = {"0": 0, "1k": 1024, "1m": 1 << 20, "256m": 256 << 20, "1g": 1 << 30}


@pytest.fixture(scope="session")
def www(tmp_path_factory):
    """Directory of test files; returns (path, {name: sha256})."""
    root = tmp_path_factory.mktemp("www")
    sums = {}
    for name, size in SIZES.items():
        make_file(str(root / name), size)
        sums[name] = sha256_file(str(root / name))
    return str(root), sums


class Origin:
    def __init__(self, name: str, root: str) -> None:
        self.name = name
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "splicer.demo.origin", "--port", str(self.port), "--root", root, "--name", name],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture(scope="session")
def farm(www):
    """Two origins, web1 and web2, serving `www`."""
    origins = [Origin("web1", www[0]), Origin("web2", www[0])]
    yield origins
    for o in origins:
        o.stop()


class SplicerProcess:
    """A running `splicer -c FILE`.

    Attributes:
        port: the first bind's port (tests bind 127.0.0.1 only).
        log_path: file receiving its stderr.
        master_socket: path of its master CLI (`-S`).
    """

    def __init__(self, cfg_path: Path, log_path: Path, ports: list[int], workers: int = 1,
                 env: dict[str, str] | None = None, args: list[str] | None = None) -> None:
        self.cfg_path = cfg_path
        self.workers = workers
        self.log_path = log_path
        self.ports = ports
        self.port = ports[0] if ports else None
        self.master_socket = str(log_path.with_suffix(".sock"))
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(splicer_command() + ["-c", str(cfg_path), "-S", self.master_socket, *(args or [])],
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     env=None if env is None else {**os.environ, **env})
        try:
            for p in ports:  # (a connection would count as a request: see helpers.listening)
                wait_listening(p, self.proc)
            # the master listens before it forks the workers: started means forked, too
            deadline = time.monotonic() + 15
            while len(self.worker_pids()) < workers and self.proc.poll() is None:
                assert time.monotonic() < deadline, f"splicer started fewer than {workers} workers"
                time.sleep(0.01)
            # and serving: a forked worker builds its loop and engine first (most of a second
            # on a loaded machine), while connections wait in the backlog; timings start after it
            while self.log().count(" serving on CPUs ") < workers and self.proc.poll() is None:
                assert time.monotonic() < deadline, f"fewer than {workers} workers serving"
                time.sleep(0.01)
            if self.proc.poll() is not None and workers > 0:
                raise AssertionError(f"splicer exited with {self.proc.returncode} while starting: {self.log()[-2000:]}")
        except BaseException:
            self.stop()  # a start that failed leaves no splicer behind (the fixture never saw it)
            raise

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def cli(self, command: str, timeout: float = 10.0) -> str:
        """Send one command line to the master CLI and return its whole answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.master_socket)
            s.sendall(command.encode() + b"\n")
            out = b""
            while chunk := s.recv(65536):
                out += chunk
        return out.decode()

    def stats(self, timeout: float = 10.0) -> dict:
        """The counters of every worker, summed (splicer.stats.merge_stats), from the master
        CLI's `show counters`; each of the `workers` answers (else AssertionError)."""
        got = json.loads(self.cli("show counters", timeout).splitlines()[0])
        assert len(got["worker"]) >= self.workers, f"{len(got['worker'])} of {self.workers} workers answered"
        return got

    def worker_stats(self, timeout: float = 10.0) -> list[dict]:
        """Each worker's own counters (`show counters workers`), in worker order."""
        return [json.loads(x) for x in self.cli("show counters workers", timeout).splitlines() if x.strip()]

    def worker_pids(self) -> list[int]:
        """PIDs of the master's live children (the workers)."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return [int(x) for x in f.read().split()]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode


@pytest.fixture
def start_splicer(tmp_path):
    """Factory: start_splicer(cfg_text, ports=[...], workers=1, env=None, args=None) ->
    SplicerProcess, stopped at teardown. The config text is written as-is; ports lists the
    bind ports to wait for; workers is how many workers answer `show counters` (the
    config's nbthread); env adds environment variables; args adds command-line options.
    """
    started = []

    def start(cfg_text: str, ports: list[int], workers: int = 1, env: dict[str, str] | None = None,
              args: list[str] | None = None) -> SplicerProcess:
        cfg = tmp_path / f"splicer{len(started)}.cfg"
        cfg.write_text(cfg_text)
        sp = SplicerProcess(cfg, tmp_path / f"splicer{len(started)}.log", ports, workers, env, args)
        started.append(sp)
        return sp

    yield start
    for sp in started:
        sp.stop()


@pytest.fixture
def origins():
    """Two NamedOrigin servers, "s1" and "s2" (tests/e2e/test_runtime_api.py), released and
    closed after the test."""
    from tests.e2e.test_runtime_api import NamedOrigin
    made = [NamedOrigin("s1"), NamedOrigin("s2")]
    yield made
    for o in made:
        o.release.set()
        o.close()
