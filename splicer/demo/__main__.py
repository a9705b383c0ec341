"""`python -m splicer.demo [-c conf/site.cfg]`: the README's first command.

Starts one demo origin (splicer.demo.origin) for every server of the config's backends,
serving generated files (1 MiB and --size, 1 GiB by default), starts `splicer -c CONFIG` in
front of them, fetches the big file directly from an origin and through splicer (twice,
interleaved), checks a third fetch through splicer is byte-exact, and prints size, time,
Gbit/s and splicer's spliced-byte counter.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from splicer.config import load
from splicer.demo.origin import make_file


def wait_port(host: str, port: int, proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Wait until host:port accepts connections; exit the demo if `proc` dies or `timeout` (s) passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"demo: process {proc.args[0]} exited with {proc.returncode}")
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"demo: nothing listens on {host}:{port}")


def wait_serving(path: str, proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Wait until splicer's master CLI (`-S path`) answers `show counters` for a worker:
    its listeners are bound then (the master binds them before it starts a worker). No
    connection is made to the listener, where one that sends nothing would be counted and
    logged as an incomplete request (a 400), as haproxy counts it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"demo: splicer exited with {proc.returncode}")
        try:
            if '"worker"' in master_cli(path, "show counters", 2.0):
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("demo: splicer is not serving")


def master_cli(path: str, command: str, timeout: float = 10.0) -> str:
    """One command to splicer's master CLI (`-S path`) and its whole answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(command.encode() + b"\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out.decode()


def fetch(host: str, port: int, path: str, verify: bool = False) -> tuple[int, float, str]:
    """GET `path` with a raw socket; returns (body bytes, seconds, sha256 hex or "").

    The timed runs discard the body into one reused 4 MiB buffer, so the client costs
    little; with `verify` the body is hashed instead (slower, for the byte-exact check)."""
    s = socket.create_connection((host, port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n".encode())
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    head = b""
    t0 = time.perf_counter()
    while b"\r\n\r\n" not in head:
        n = s.recv_into(view)
        if not n:
            raise SystemExit("demo: connection closed before the response head")
        head += bytes(view[:n])
    head, _, first = head.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"demo: unexpected response {head.splitlines()[0]!r}")
    length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head).group(1))
    h = hashlib.sha256(first) if verify else None
    got = len(first)
    while got < length:
        n = s.recv_into(view)
        if not n:
            break
        if h is not None:
            h.update(view[:n])
        got += n
    elapsed = time.perf_counter() - t0
    s.close()
    return got, elapsed, h.hexdigest() if h is not None else ""


def main(argv=None) -> int:
    """Run the demo; returns 0 when the big file came through splicer byte-exact, else 1."""
    ap = argparse.ArgumentParser(description="start demo origins and splicer, move a big file through it")
    ap.add_argument("-c", "--config", default="conf/site.cfg")
    ap.add_argument("--size", default="1g", help="size of the big file: 1g (default), 256m, ...")
    ap.add_argument("--keep-running", action="store_true", help="leave everything running until Ctrl-C")
    args = ap.parse_args(argv)
    size = int(args.size[:-1]) << {"k": 10, "m": 20, "g": 30}[args.size[-1].lower()]

    config = load(args.config)
    fe = config.frontends[0]
    bind = fe.binds[0]
    fhost = "127.0.0.1" if bind.host in ("", "*", "0.0.0.0") else bind.host
    servers = [s for b in config.backends.values() for s in b.servers]
    root = tempfile.mkdtemp(prefix="splicer-demo-")
    print(f"demo: generating {args.size} of incompressible data in {root} ...", flush=True)
    make_file(os.path.join(root, "big"), size)
    make_file(os.path.join(root, "small"), 1 << 20)

    procs = []
    ok = False
    log_path = None
    try:
        for s in servers:
            p = subprocess.Popen([sys.executable, "-m", "splicer.demo.origin", "--host", s.host, "--port",
                                  str(s.port), "--root", root, "--name", s.name], stdout=subprocess.DEVNULL)
            procs.append(p)
            wait_port(s.host, s.port, p)
            print(f"demo: origin {s.name} on {s.host}:{s.port}")
        log_path = os.path.join(root, "splicer.log")
        log = open(log_path, "wb")
        master_socket = os.path.join(root, "master.sock")
        sp = subprocess.Popen([sys.executable, "-m", "splicer", "-c", args.config, "-S", master_socket],
                              stdout=log, stderr=subprocess.STDOUT)
        procs.append(sp)
        wait_serving(master_socket, sp)
        print(f"demo: splicer -c {args.config} listening on {fhost}:{bind.port}")

        for _ in range(2):  # direct and through splicer, twice, interleaved
            n, t, _ = fetch(servers[0].host, servers[0].port, "/files/big")
            print(f"direct  : {n} bytes in {t:.3f} s = {n * 8 / t / 1e9:.2f} Gbit/s")
            n2, t2, _ = fetch(fhost, bind.port, "/files/big")
            print(f"splicer : {n2} bytes in {t2:.3f} s = {n2 * 8 / t2 / 1e9:.2f} Gbit/s")
        n3, _, digest = fetch(fhost, bind.port, "/files/big", verify=True)
        with open(os.path.join(root, "big"), "rb") as f:
            want = hashlib.file_digest(f, "sha256").hexdigest()
        ok = n == n2 == n3 == size and digest == want
        print(f"byte-exact through splicer: {'yes' if ok else 'NO'} (a third fetch, hashed: sha256 {want[:16]}...)")

        stats = None
        workers = config.global_.nbthread or len(os.sched_getaffinity(0))
        try:
            stats = json.loads(master_cli(master_socket, "show counters").splitlines()[0])
        except (OSError, ValueError, IndexError) as exc:
            print(f"demo: no counters from the master CLI {master_socket}: {exc}")
        if stats:
            c = stats["frontends"][fe.name]
            print(f"splicer counters ({fe.name}): spliced {c['spliced']} bytes, copied {c['copied']} bytes, "
                  f"{c['req_tot']} requests, {workers} worker(s); engine: {stats['engine']}")
        if args.keep_running:
            print("demo: running; Ctrl-C to stop")
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
        return 0 if ok else 1
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        if ok:
            shutil.rmtree(root, ignore_errors=True)  # nothing left behind after a good run
        else:
            for name in ("big", "small"):
                try:
                    os.unlink(os.path.join(root, name))
                except OSError:
                    pass
            if log_path is not None:
                print(f"demo: splicer's log is kept in {log_path}")


if __name__ == "__main__":
    sys.exit(main())
