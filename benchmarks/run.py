#!/usr/bin/env python3
"""splicer's benchmark suite: one command, every target measured in the same run.

    python benchmarks/run.py [--quick] [--rounds N] [--out benchmarks/results]

Targets: `direct` (client to origin), `splicer`, `haproxy-splice`, `haproxy-default` and
`nginx-proxy`, each in front of the same origin (nginx, sendfile, two ports). The proxy under
test runs on CPU 1 and the client and origin on CPU 0, so the proxies differ only in what
they cost on their own CPU. That cost is read from /proc/PID/stat (utime+stime of the proxy's
whole process tree) before and after each measurement.

Every round runs every scenario on every target, one after another (A B C ... A B C ...),
with the target order rotated each round, so slow drift of a shared machine hits all targets
alike. The tables show the median over the rounds.

Before measuring, a preflight step fetches every file through every target and checks its
sha256, and runs `strace -c -f` on each proxy during a short transfer to record whether it
really calls splice().

Outputs (in --out): results.md (also printed), results.json (machine info, preflight, every
raw sample, medians), plot.png, and the generated configurations under configs/.
Exit status: 0 on success, 1 when any target returned errors or failed a check, 2 when the
benchmark could not run.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import http.client
import json
import math
import os
import re
import resource
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import typing
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TEMPLATES = HERE / "templates"
BUILD = HERE / "build"
BULKGET_SRC = HERE / "bulkget.c"
BULKGET = BUILD / "bulkget"

HOST = "127.0.0.1"
ORIGIN_PORTS = (19101, 19102)
PROXY_PORTS = {"splicer": 19180, "haproxy-splice": 19181, "haproxy-default": 19182, "nginx-proxy": 19183}
TCP_PORTS = {"splicer": 19190, "haproxy-splice": 19191, "haproxy-default": 19192}  # their `mode tcp` frontends
TARGETS = ("direct", "splicer", "haproxy-splice", "haproxy-default", "nginx-proxy")
PROXIES = TARGETS[1:]
SPLICING = ("splicer", "haproxy-splice")  # must be seen calling splice() in the preflight
CPU_CLIENT, CPU_PROXY = 0, 1
CLK_TCK = os.sysconf("SC_CLK_TCK")
GIB = 1 << 30

FILES = {"1k.bin": 1 << 10, "64k.bin": 64 << 10, "1m.bin": 1 << 20, "256m.bin": 256 << 20}


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    tool: str          # "bulkget", "wrk" or "bidir" (bulkget downloads and uploads at once)
    file: str          # the file fetched; for a POST (`path` /upload), the size of its body
    conns: int
    close: bool = False
    path: str | None = None    # the URL's path, when it is not "/" + file
    script: str | None = None  # wrk only: a Lua script under benchmarks/ that writes every request
    tcp: bool = False  # through the proxies' `mode tcp` frontend (TCP_PORTS; nginx-proxy has none)

    @property
    def metrics(self) -> tuple[str, ...]:
        if self.tool == "bidir":
            return ("gbps_down", "gbps_up", "cpu_s_per_gib", "cpu_pct", "cpu0_pct")
        if self.tool == "wrk":
            return ("req_s", "p50_ms", "p99_ms", "cpu_us_per_req", "cpu_pct", "cpu0_pct")
        if self.file == "256m.bin":
            return ("gbps", "cpu_s_per_gib", "cpu_pct", "cpu0_pct")
        return ("gbps", "req_s", "cpu_s_per_gib", "cpu_pct", "cpu0_pct")


SCENARIOS = (
    Scenario("256m-c1", "(a) 256 MiB, 1 keep-alive conn (bulkget)", "bulkget", "256m.bin", 1),
    Scenario("256m-c8", "(a) 256 MiB, 8 keep-alive conns (bulkget)", "bulkget", "256m.bin", 8),
    Scenario("1k-c50", "(b) 1 KiB, 50 keep-alive conns (wrk)", "wrk", "1k.bin", 50),
    Scenario("1k-c200", "(b) 1 KiB, 200 keep-alive conns (wrk)", "wrk", "1k.bin", 200),
    Scenario("64k-c8", "(c) 64 KiB, 8 keep-alive conns (bulkget)", "bulkget", "64k.bin", 8),
    Scenario("1m-c8", "(c) 1 MiB, 8 keep-alive conns (bulkget)", "bulkget", "1m.bin", 8),
    Scenario("1k-close-c50", "(d) 1 KiB, new conn per request, 50 conns (wrk, Connection: close)",
             "wrk", "1k.bin", 50, close=True),
    Scenario("bidir-4x4", "(e) both ways: 4 x 256 MiB downloads and 4 x 256 MiB uploads answered 204 "
             "before they are read (bulkget)", "bidir", "256m.bin", 4),
    # every request a head of its own: nothing a proxy remembers of a head helps
    Scenario("browser-unique", "(f) 1 KiB, 50 keep-alive conns, every request a browser-like head of its own "
             "(about 620 bytes: query, Cookie, Referer per request; wrk + wrk/browser_unique.lua)",
             "wrk", "1k.bin", 50, script="wrk/browser_unique.lua"),
    Scenario("api-post-unique", "(g) POSTs of a 1 KiB JSON body to /upload (answered 204), 50 keep-alive "
             "conns, a bearer token and X-Request-Id of its own per request (wrk + wrk/api_post_unique.lua)",
             "wrk", "1k.bin", 50, path="/upload", script="wrk/api_post_unique.lua"),
    Scenario("tcp-256m-c8", "(h) mode tcp: 256 MiB, 8 keep-alive conns through a `mode tcp` frontend "
             "(bulkget; nginx-proxy has no stream module here)", "bulkget", "256m.bin", 8, tcp=True),
)

METRICS = {
    "gbps": "Gbit/s (body bytes)",
    "gbps_down": "Gbit/s down (response bodies)",
    "gbps_up": "Gbit/s up (request bodies)",
    "req_s": "req/s",
    "p50_ms": "latency p50 (ms)",
    "p99_ms": "latency p99 (ms)",
    "cpu_s_per_gib": "proxy CPU-s per GiB",
    "cpu_us_per_req": "proxy CPU µs per request",
    "cpu_pct": "proxy CPU % of its core",
    "cpu0_pct": "client + origin CPU % (CPU 0)",
}
HIGHER_IS_BETTER = {"gbps", "gbps_down", "gbps_up", "req_s"}


def log(msg: str) -> None:
    print(msg, flush=True)


def write_results(out: Path, stem: str, res: dict, md: str) -> None:
    """Write `stem`.md and `stem`.json into `out` and print the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.md").write_text(md)
    (out / f"{stem}.json").write_text(json.dumps(res, indent=1, default=str))
    log("\n" + md)


def report_problems(script: str, problems: list) -> int:
    """Print the problems a run found, loudly, to stderr; the script's exit status (1 or 0)."""
    if not problems:
        return 0
    print("\n" + "!" * 78 + f"\n{script}: PROBLEMS FOUND:\n" + "\n".join(f"  - {p}" for p in problems)
          + "\n" + "!" * 78, file=sys.stderr)
    return 1


def die(msg: str) -> NoReturn:  # noqa: F821
    raise SystemExit(f"{Path(sys.argv[0]).name or 'run.py'}: {msg}")


# -- processes ------------------------------------------------------------------------------

def proc_stat(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name: [0] is state, [1] ppid, [11] utime,
    [12] stime (fields 3, 4, 14, 15 of proc(5))."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read().decode("ascii", "replace")
    return data[data.rfind(")") + 2:].split()


def proc_tree(root: int) -> list[int]:
    """`root` and all its live descendant processes (threads are included in each process's
    own stat line, so they are not listed separately)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            ppid = int(proc_stat(int(name))[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, i = [root], 0
    while i < len(out):
        out.extend(children.get(out[i], ()))
        i += 1
    return out


def tree_ticks(root: int) -> int:
    """utime+stime, in clock ticks, of the process tree under `root` (all threads)."""
    total = 0
    for pid in proc_tree(root):
        try:
            f = proc_stat(pid)
            total += int(f[11]) + int(f[12])
        except (OSError, IndexError, ValueError):
            pass
    return total


def tree_affinity(root: int) -> dict[str, str]:
    """Cpus_allowed_list of every thread of the tree, as {"pid/tid comm": "1"}."""
    out = {}
    for pid in proc_tree(root):
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                base = f"/proc/{pid}/task/{tid}"
                comm = Path(base, "comm").read_text().strip()
                for line in Path(base, "status").read_text().splitlines():
                    if line.startswith("Cpus_allowed_list:"):
                        out[f"{pid}/{tid} {comm}"] = line.split(":", 1)[1].strip()
        except OSError:
            pass
    return out


class Service:
    """A server process we started, pinned with taskset, in its own session (process group).

    Args:
        name: target name (also names the log file).
        argv: command; taskset execs it, so the Popen pid is the server's own pid.
        cpu: CPU (or taskset CPU list, e.g. "0,1") to pin it and everything it forks or spawns to.
        workdir: where its log goes.
    """

    running: typing.ClassVar[list[Service]] = []  # started and not yet stopped

    def __init__(self, name: str, argv: list[str], cpu: int | str, workdir: Path) -> None:
        self.name = name
        self.argv = argv
        self.log_path = workdir / f"{name}.log"
        self._log = open(self.log_path, "wb")
        self.popen = subprocess.Popen(["taskset", "-c", str(cpu), *argv], stdin=subprocess.DEVNULL,
                                      stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        Service.running.append(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, n: int = 20) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def wait_port(self, port: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                die(f"{self.name} exited with status {self.popen.returncode} while starting:\n{self.log_tail()}")
            try:
                socket.create_connection((HOST, port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        die(f"{self.name} did not listen on {HOST}:{port} within {timeout:.0f}s:\n{self.log_tail()}")

    def ticks(self) -> int:
        return tree_ticks(self.pid)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL to its own process group if it lingers."""
        if self.alive():
            try:
                self.popen.send_signal(signal.SIGTERM)
                self.popen.wait(timeout=8)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.popen.wait(timeout=5)
            except ProcessLookupError:
                pass
        self._log.close()
        if self in Service.running:
            Service.running.remove(self)


def stop_all() -> None:
    for svc in reversed(list(Service.running)):
        try:
            svc.stop()
        except Exception as exc:  # keep stopping the others
            print(f"run.py: could not stop {svc.name} (pid {svc.pid}): {exc}", file=sys.stderr)


def port_free(port: int) -> bool:
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((HOST, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def checkout_bench(checkouts: list[Path], ports: tuple[int, ...], origin_ports: tuple[int, int],
                   prefix: str) -> Path:
    """What benchmarks/ab.py and instructions.py do before comparing checkouts: each
    checkout has its engine built in place, every port is free; then a work directory
    (readable by nginx's workers, another user) with the 1 KiB file under www/, and the
    origin nginx on `origin_ports`. Returns the work directory (the caller removes it and
    stops the origin with stop_all()). Exits through die() when a check fails."""
    for path in checkouts:
        if not any((path / "splicer").glob("_engine*.so")):
            die(f"{path}/splicer has no built engine: run `python setup.py build_ext --inplace` there")
    for port in ports:
        if not port_free(port):
            die(f"port {port} is taken")
    wd = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        wd.chmod(0o755)
        make_files(wd / "www", {"1k.bin": 1024})
        start_origin(wd, origin_ports)
    except BaseException:
        stop_all()
        shutil.rmtree(wd, ignore_errors=True)
        raise
    return wd


def cmd_out(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=20)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"


# -- setup ----------------------------------------------------------------------------------

def build_bulkget() -> None:
    BUILD.mkdir(exist_ok=True)
    cmd = ["gcc", "-O2", "-Wall", "-Wextra", "-o", str(BULKGET), str(BULKGET_SRC)]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if p.returncode != 0 or p.stderr.strip():
        die(f"{' '.join(cmd)} failed or warned:\n{p.stderr}")


def make_files(docroot: Path, files: dict[str, int] | None = None) -> dict[str, str]:
    """Write the origin's files of incompressible bytes ({name: size}, default FILES);
    returns {name: sha256}."""
    docroot.mkdir(mode=0o755)
    digests = {}
    for name, size in (FILES if files is None else files).items():
        h = hashlib.sha256()
        with open(docroot / name, "wb") as f:
            left = size
            while left:
                chunk = os.urandom(min(left, 8 << 20))
                h.update(chunk)
                f.write(chunk)
                left -= len(chunk)
        os.chmod(docroot / name, 0o644)
        digests[name] = h.hexdigest()
    return digests


def render(template: str, dest: Path, append: str | None = None, **values) -> str:
    """Write template (with template `append` after it) to dest, each @@NAME@@ filled with
    values[NAME]; returns the text."""
    text = (TEMPLATES / template).read_text()
    if append is not None:
        text += "\n" + (TEMPLATES / append).read_text()
    for k, v in values.items():
        text = text.replace(f"@@{k}@@", str(v))
    left = re.findall(r"@@[A-Z0-9_]+@@", text)
    if left:
        die(f"template {template}: unfilled placeholders {sorted(set(left))}")
    dest.write_text(text)
    return text


def start_origin(workdir: Path, ports: tuple[int, int] | None = None,
                 cpu: int | str = CPU_CLIENT) -> tuple[Service, str]:
    """The origin nginx (templates/origin-nginx.conf, docroot workdir/www) on two ports
    (default ORIGIN_PORTS), pinned to `cpu`. Returns the Service and the configuration text."""
    o1, o2 = ports or ORIGIN_PORTS
    text = render("origin-nginx.conf", workdir / "origin-nginx.conf", WORKDIR=workdir,
                  DOCROOT=workdir / "www", ORIGIN1_PORT=o1, ORIGIN2_PORT=o2)
    origin = Service("origin-nginx", ["nginx", "-p", f"{workdir}/", "-e", str(workdir / "origin-nginx.stderr.log"),
                                      "-c", str(workdir / "origin-nginx.conf")], cpu, workdir)
    origin.wait_port(o1)
    origin.wait_port(o2)
    return origin, text


def splicer_command() -> list[str]:
    """The installed `splicer` script, else `python -m splicer`."""
    return [shutil.which("splicer") or sys.executable] + ([] if shutil.which("splicer") else ["-m", "splicer"])


def start_splicer(name: str, cfg: Path, workdir: Path, cpu: int | str = CPU_PROXY) -> Service:
    """`splicer -q -c cfg` pinned to `cpu`, after `splicer --check` accepted cfg (the caller
    waits for its port)."""
    check = subprocess.run(splicer_command() + ["-c", str(cfg), "--check"], check=False,
                           capture_output=True, text=True)
    if check.returncode != 0:
        die(f"splicer --check rejected the generated configuration {cfg.name}:\n{check.stdout}{check.stderr}")
    sock = workdir / f"{name}.sock"
    svc = Service(name, [*splicer_command(), "-q", "-c", str(cfg), "-S", str(sock)], cpu, workdir)
    svc.master_socket = sock
    return svc


def start_everything(workdir: Path) -> tuple[Service, dict[str, Service], dict[str, str]]:
    """Origin on CPU 0, every proxy on CPU 1. Returns origin, {target: Service}, {file: text}."""
    configs = {}
    o1, o2 = ORIGIN_PORTS
    origin, configs["origin-nginx.conf"] = start_origin(workdir)

    proxies = {}
    common = dict(ORIGIN1_PORT=o1, ORIGIN2_PORT=o2)
    configs["splicer.cfg"] = render("splicer.cfg", workdir / "splicer.cfg", "tcp-frontend.cfg",
                                    PORT=PROXY_PORTS["splicer"], TCP_PORT=TCP_PORTS["splicer"], **common)
    proxies["splicer"] = start_splicer("splicer", workdir / "splicer.cfg", workdir)

    for name, splice in (("haproxy-splice", "    option splice-request\n    option splice-response"),
                         ("haproxy-default", "    # no splice option")):
        cfg = workdir / f"{name}.cfg"
        configs[cfg.name] = render("haproxy.cfg", cfg, "tcp-frontend.cfg", PORT=PROXY_PORTS[name],
                                   TCP_PORT=TCP_PORTS[name], SPLICE=splice, **common)
        check = subprocess.run(["haproxy", "-c", "-f", str(cfg)], check=False, capture_output=True, text=True)
        if check.returncode != 0:
            die(f"haproxy -c rejected {cfg.name}:\n{check.stdout}{check.stderr}")
        proxies[name] = Service(name, ["haproxy", "-db", "-f", str(cfg)], CPU_PROXY, workdir)

    configs["proxy-nginx.conf"] = render("proxy-nginx.conf", workdir / "proxy-nginx.conf", WORKDIR=workdir,
                                         PORT=PROXY_PORTS["nginx-proxy"], **common)
    proxies["nginx-proxy"] = Service("nginx-proxy", ["nginx", "-p", f"{workdir}/", "-e",
                                                     str(workdir / "proxy-nginx.stderr.log"),
                                                     "-c", str(workdir / "proxy-nginx.conf")], CPU_PROXY, workdir)
    for name, svc in proxies.items():
        svc.wait_port(PROXY_PORTS[name])
        if name in TCP_PORTS:
            svc.wait_port(TCP_PORTS[name])
    return origin, proxies, configs


# -- clients --------------------------------------------------------------------------------

def target_port(target: str, tcp: bool = False) -> int:
    return ORIGIN_PORTS[0] if target == "direct" else TCP_PORTS[target] if tcp else PROXY_PORTS[target]


def bulkget_cmd(port: int, path: str, conns: int, duration: float, tail: float, last: str | None) -> list[str]:
    return (["taskset", "-c", str(CPU_CLIENT), str(BULKGET), HOST, str(port), path, str(conns),
             f"{duration:g}", f"{tail:g}"] + ([last] if last else []))


def bulkget_result(p: subprocess.CompletedProcess | subprocess.Popen, out: str, err: str) -> dict:
    if p.returncode not in (0, 1):
        return {"client_error": f"bulkget exit {p.returncode}: {err.strip()}", "errors": 1}
    raw = json.loads(out)
    raw["errors"] = sum(raw[k] for k in ("bad_status", "short_bodies", "bad_heads", "conn_errors", "unfinished"))
    return raw


def run_bulkget(port: int, path: str, conns: int, duration: float, tail: float, close: bool = False) -> dict:
    cmd = bulkget_cmd(port, path, conns, duration, tail, "close" if close else None)
    try:
        p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=duration + tail + 20)
    except subprocess.TimeoutExpired:
        return {"client_error": f"bulkget did not finish within {duration + tail + 20:.0f}s", "errors": 1}
    return bulkget_result(p, p.stdout, p.stderr)


def run_bidir(port: int, path: str, upload: Path, conns: int, duration: float, tail: float) -> dict:
    """`conns` connections downloading `path` and `conns` others uploading the file `upload`
    to /upload (answered 204 before it is read), at once: one result with both directions'
    bytes (body_bytes down, upload_bytes up) over the longer of the two elapsed times."""
    procs = [subprocess.Popen(bulkget_cmd(port, p, conns, duration, tail, last), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for p, last in ((path, None), ("/upload", f"put={upload}"))]
    outs = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=duration + tail + 20)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            return {"client_error": f"bulkget did not finish within {duration + tail + 20:.0f}s", "errors": 1}
        outs.append(bulkget_result(proc, out, err))
    if any("client_error" in r for r in outs):
        return {"client_error": "; ".join(r["client_error"] for r in outs if "client_error" in r), "errors": 1}
    down, up = outs
    return {"down": down, "up": up, "elapsed": max(down["elapsed"], up["elapsed"]),
            "body_bytes": down["body_bytes"], "upload_bytes": up["upload_bytes"],
            "requests": down["requests"] + up["requests"], "errors": down["errors"] + up["errors"]}


_TIME_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def parse_wrk(out: str) -> dict:
    """wrk --latency output -> requests, elapsed, req_s, p50/p75/p90/p99 in ms, error counts."""
    r: dict = {}
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m|h)", out)
    if not m:
        return {"client_error": "cannot parse wrk output", "output": out, "errors": 1}
    r["requests"] = int(m.group(1))
    r["elapsed"] = float(m.group(2)) * _TIME_UNITS[m.group(3)] / 1e3
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    r["wrk_req_s"] = float(m.group(1)) if m else None
    for pct, val, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.MULTILINE):
        r[f"p{pct}_ms"] = float(val) * _TIME_UNITS[unit]
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    r["socket_errors"] = dict(zip(("connect", "read", "write", "timeout"), map(int, m.groups()))) if m else {}
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    r["non_2xx_3xx"] = int(m.group(1)) if m else 0
    r["errors"] = sum(r["socket_errors"].values()) + r["non_2xx_3xx"]
    return r


def run_wrk(port: int, path: str, conns: int, duration: int, close: bool = False,
            script: str | None = None) -> dict:
    """One wrk run against HOST:port (`script`: a wrk Lua script file shaping the requests)."""
    cmd = ["taskset", "-c", str(CPU_CLIENT), "wrk", "-t1", f"-c{conns}", f"-d{duration}s", "--timeout", "5s",
           "--latency"] + (["-H", "Connection: close"] if close else []) + (["-s", script] if script else []) \
        + [f"http://{HOST}:{port}{path}"]
    try:
        p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=duration + 30)
    except subprocess.TimeoutExpired:
        return {"client_error": f"wrk did not finish within {duration + 30}s", "errors": 1}
    if p.returncode != 0:
        return {"client_error": f"wrk exit {p.returncode}: {p.stderr.strip()}", "errors": 1}
    r = parse_wrk(p.stdout)
    r["output"] = p.stdout
    return r


# -- splicer's own counters -----------------------------------------------------------------

def flatten(d: dict, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a nested dict as {"a.b.c": value} (pid/worker ids left out)."""
    out: dict[str, float] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and k not in ("pid", "worker"):
            out[prefix + k] = v
    return out


def master_cli(path: Path, command: str, timeout: float = 5.0) -> str:
    """One command to splicer's master CLI (`-S path`) and its whole answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(command.encode() + b"\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out.decode()


def splicer_stats(svc: Service, timeout: float = 5.0) -> dict | None:
    """Each worker's counters, from splicer's master CLI (`show counters workers`; the
    service was started with -S by start_splicer). Returns {"pids": [...], "counters":
    {flattened sums}, "workers": [each worker's counters object]}, or None if it is not
    running or did not answer."""
    if not svc.alive() or getattr(svc, "master_socket", None) is None:
        return None
    try:
        answer = master_cli(svc.master_socket, "show counters workers", timeout)
    except OSError:
        return None
    per_pid: dict = {}
    for ln in answer.splitlines():
        if not ln.strip():
            continue
        obj = json.loads(ln)
        if "error" in obj:
            continue
        per_pid[obj.get("pid")] = obj
    if not per_pid:
        return None
    counters: dict[str, float] = {}
    for obj in per_pid.values():
        for k, v in flatten(obj).items():
            counters[k] = counters.get(k, 0) + v
    return {"pids": list(per_pid), "counters": counters, "workers": list(per_pid.values())}


def stats_delta(a: dict | None, b: dict | None) -> dict | None:
    if not a or not b:
        return None
    ca, cb = a["counters"], b["counters"]
    return {k: v - ca.get(k, 0) for k, v in cb.items()}


EXPECTED_LOG = re.compile(r"an upstream response is buffered to a temporary file"
                          r"|a client request body is buffered to a temporary file")
"""Log lines that are normal for a target's configuration: nginx-proxy (proxy_buffering on, its
default) spills big responses to temporary files when the client reads slower than the origin,
and (proxy_request_buffering on, its default) the 256 MiB uploads of (e) before it sends them."""


def new_log_lines(svc: Service, start: int) -> tuple[list[str], int]:
    """Lines the service logged since line `start` (splicer's counters lines left out)."""
    try:
        lines = svc.log_path.read_text(errors="replace").splitlines()
    except OSError:
        return [], start
    return [ln for ln in lines[start:] if not ln.startswith("splicer-stats ")], len(lines)


# -- preflight ------------------------------------------------------------------------------

def check_bodies(port: int, digests: dict[str, str], files: dict[str, int] | None = None) -> dict:
    """GET every file ({name: size}, default FILES) and the smallest one again on one keep-alive
    connection; compare status, length and sha256 with the origin's files."""
    files = FILES if files is None else files
    results = {}
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        for name in list(files) + [min(files, key=files.get)]:
            key = name if name not in results else name + " (again)"
            try:
                conn.request("GET", "/" + name)
                resp = conn.getresponse()
                h, n = hashlib.sha256(), 0
                while chunk := resp.read(1 << 20):
                    h.update(chunk)
                    n += len(chunk)
                ok = resp.status == 200 and n == files[name] and h.hexdigest() == digests[name]
                results[key] = {"ok": ok, "status": resp.status, "bytes": n, "expected_bytes": files[name],
                                "sha256_match": h.hexdigest() == digests[name]}
            except (OSError, http.client.HTTPException) as exc:
                results[key] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                conn.close()
                conn = http.client.HTTPConnection(HOST, port, timeout=60)
    finally:
        conn.close()
    return results


def check_post_keepalive(port: int, path: str = "/upload", n: int = 3) -> dict:
    """POST a 1 KiB JSON body `n` times on one connection (as the api-post-unique scenario's
    requests, without their unique fields), then wait a moment: every answer must be a 2xx
    and the connection must still be open (the origin read the body and kept it, and so did
    the proxy), else wrk would count no error but open a connection per request."""
    body = b'{"order":{"id":1,"note":"' + b"x" * 996 + b'"}}'
    req = (f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: keep-alive\r\n"
           f"Content-Type: application/json\r\nAuthorization: Bearer preflight\r\n"
           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    statuses: list[int] = []
    try:
        with socket.create_connection((HOST, port), timeout=10) as s:
            for _ in range(n):
                s.sendall(req)
                resp = http.client.HTTPResponse(s)
                resp.begin()
                resp.read()
                statuses.append(resp.status)
                if resp.will_close:
                    return {"ok": False, "statuses": statuses, "error": "the answer closes the connection"}
            s.settimeout(0.5)
            try:
                closed = s.recv(1) == b""
            except TimeoutError:
                closed = False
    except (OSError, http.client.HTTPException) as exc:
        return {"ok": False, "statuses": statuses, "error": f"{type(exc).__name__}: {exc}"}
    ok = len(statuses) == n and all(200 <= st < 300 for st in statuses) and not closed
    return {"ok": ok, "statuses": statuses, "body_bytes": len(body), "open_after": not closed}


def parse_strace_c(text: str) -> dict[str, dict]:
    """strace -c summary -> {syscall: {"calls": n, "errors": n}} (plus "total")."""
    out = {}
    for line in text.splitlines():
        t = line.split()
        if len(t) in (5, 6) and re.fullmatch(r"[\d.]+", t[0]) and t[-1] != "syscall":
            try:
                out[t[-1]] = {"calls": int(t[3]), "errors": int(t[4]) if len(t) == 6 else 0}
            except ValueError:
                pass
    return out


def strace_check(name: str, svc: Service, workdir: Path, duration: float) -> dict:
    """strace -c -f on every process of the target's tree while bulkget fetches 1 MiB bodies."""
    out_path = workdir / f"strace-{name}.txt"
    pids = proc_tree(svc.pid)
    argv = ["strace", "-c", "-f", "-o", str(out_path)] + [a for p in pids for a in ("-p", str(p))]
    st = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, start_new_session=True)
    attach_msgs = []
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(attach_msgs) < len(pids):
            if st.poll() is not None:
                break
            ready, _, _ = select.select([st.stderr], [], [], 0.2)
            if ready:
                line = st.stderr.readline()
                if line:
                    attach_msgs.append(line.strip())
        time.sleep(0.3)
        if st.poll() is not None:
            return {"ok": False, "error": f"strace exited {st.returncode}: {' '.join(attach_msgs)} "
                                          f"{st.stderr.read().strip()}"}
        client = run_bulkget(PROXY_PORTS[name], "/1m.bin", 1, duration, 20)
    finally:
        if st.poll() is None:
            st.send_signal(signal.SIGINT)
        try:
            st.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(st.pid, signal.SIGKILL)
            st.wait()
    sc = parse_strace_c(out_path.read_text() if out_path.exists() else "")
    total = sc.get("total", {}).get("calls", 0)
    reqs = client.get("requests", 0)
    top = sorted(((k, v["calls"]) for k, v in sc.items() if k != "total"), key=lambda kv: -kv[1])[:6]
    return {
        "pids": pids, "attach": attach_msgs, "client": client,
        "splice_calls": sc.get("splice", {}).get("calls", 0), "splice_errors": sc.get("splice", {}).get("errors", 0),
        "total_calls": total, "requests": reqs, "bytes": client.get("body_bytes", 0),
        "syscalls_per_request": (total / reqs) if reqs else None, "top": top, "syscalls": sc,
        "ok": (sc.get("splice", {}).get("calls", 0) > 0) if name in SPLICING else True,
    }


# -- one measurement ------------------------------------------------------------------------

def derive(sc: Scenario, raw: dict, cpu_s: float | None) -> dict:
    """The figures of one sample from the client's raw output and the proxy's CPU seconds."""
    d: dict = {"errors": raw.get("errors", 0)}
    if "client_error" in raw:
        return d
    elapsed = raw["elapsed"] or float("nan")
    if sc.tool == "bidir":
        down, up = raw["down"], raw["up"]
        d["gbps_down"] = down["body_bytes"] * 8 / (down["elapsed"] or float("nan")) / 1e9
        d["gbps_up"] = up["upload_bytes"] * 8 / (up["elapsed"] or float("nan")) / 1e9
        nbytes = raw["body_bytes"] + raw["upload_bytes"]
        if cpu_s is not None and nbytes:
            d["cpu_s_per_gib"] = cpu_s / (nbytes / GIB)
    elif sc.tool == "bulkget":
        nbytes, reqs = raw["body_bytes"], raw["requests"]
        d["gbps"] = nbytes * 8 / elapsed / 1e9
        d["req_s"] = reqs / elapsed
        if cpu_s is not None and nbytes:
            d["cpu_s_per_gib"] = cpu_s / (nbytes / GIB)
    else:
        reqs = raw["requests"]
        d["req_s"] = reqs / elapsed
        d["gbps"] = reqs * FILES[sc.file] * 8 / elapsed / 1e9
        d["p50_ms"] = raw.get("p50_ms")
        d["p99_ms"] = raw.get("p99_ms")
        if cpu_s is not None and reqs:
            d["cpu_us_per_req"] = cpu_s * 1e6 / reqs
            d["cpu_s_per_gib"] = cpu_s / (reqs * FILES[sc.file] / GIB)
    if cpu_s is not None:
        d["cpu_pct"] = 100 * cpu_s / elapsed
    return d


def measure(ctx: Context, sc: Scenario, target: str, rnd: int) -> dict:
    svc = ctx.proxies.get(target)
    sample = {"round": rnd, "scenario": sc.key, "target": target, "time": time.time()}
    if svc is not None and not svc.alive():
        sample.update(raw={"client_error": f"{target} is not running (exit status {svc.popen.returncode})",
                           "errors": 1}, derived={"errors": 1}, dead=True)
        return sample
    path = sc.path or "/" + sc.file
    port = target_port(target, sc.tcp)
    tree0 = sorted(proc_tree(svc.pid)) if svc else None
    _, log0 = new_log_lines(svc, 0) if svc else ([], 0)
    t0 = svc.ticks() if svc else None
    o0 = ctx.origin.ticks()
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.monotonic()
    if sc.tool == "bidir":
        raw = run_bidir(port, path, ctx.workdir / "www" / sc.file, sc.conns, ctx.bulk_duration, ctx.tail)
    elif sc.tool == "bulkget":
        raw = run_bulkget(port, path, sc.conns, ctx.bulk_duration, ctx.tail, sc.close)
    else:
        raw = run_wrk(port, path, sc.conns, ctx.wrk_duration, sc.close,
                      script=str(HERE / sc.script) if sc.script else None)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the client has been waited for
    time.sleep(0.1)  # let the proxy finish closing the client's connections
    t1 = svc.ticks() if svc else None
    o1 = ctx.origin.ticks()
    sample["wall_s"] = time.monotonic() - w0
    sample["raw"] = raw
    sample["proxy_cpu_ticks"] = None if svc is None else t1 - t0
    sample["proxy_cpu_s"] = None if svc is None else (t1 - t0) / CLK_TCK
    sample["origin_cpu_s"] = (o1 - o0) / CLK_TCK
    sample["client_cpu_s"] = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    sample["derived"] = derive(sc, raw, sample["proxy_cpu_s"])
    if raw.get("elapsed"):
        sample["derived"]["cpu0_pct"] = 100 * (sample["origin_cpu_s"] + sample["client_cpu_s"]) / raw["elapsed"]
    if svc is not None:
        tree1 = sorted(proc_tree(svc.pid)) if svc.alive() else []
        if tree1 != tree0:
            sample["process_tree_changed"] = {"before": tree0, "after": tree1}
        sample["log_lines"], _ = new_log_lines(svc, log0)
    if svc is not None and not svc.alive():
        sample["dead"] = True
        sample["derived"]["errors"] = sample["derived"].get("errors", 0) + 1
        sample["raw"]["died"] = f"{target} exited with status {svc.popen.returncode}: {svc.log_tail(5)}"
    if target == "splicer" and svc.alive():
        now = splicer_stats(svc)
        sample["splicer_counters"] = stats_delta(ctx.splicer_last, now)
        ctx.splicer_last = now or ctx.splicer_last
    return sample


# -- report ---------------------------------------------------------------------------------

def fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, int):
        return f"{v:,}"
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def ratio(a, b) -> str:
    if a is None or b is None or not b:
        return "—"
    return f"{a / b:.2f}x"


def summarize(samples: list[dict]) -> dict:
    """{scenario: {target: {metric: median, "errors": total, "rounds": n, "dead": bool}}}"""
    out: dict = {}
    for sc in SCENARIOS:
        for t in TARGETS:
            ss = [s for s in samples if s["scenario"] == sc.key and s["target"] == t]
            if not ss:
                continue
            row = {"rounds": len(ss), "errors": sum(s["derived"].get("errors", 0) for s in ss),
                   "dead": any(s.get("dead") for s in ss),
                   "client_errors": sorted({s["raw"]["client_error"] for s in ss if "client_error" in s["raw"]})}
            for m in METRICS:
                vals = [s["derived"][m] for s in ss if s["derived"].get(m) is not None]
                row[m] = statistics.median(vals) if vals else None
            out.setdefault(sc.key, {})[t] = row
    return out


def results_table(summary: dict) -> str:
    head = ("| scenario | figure | " + " | ".join(TARGETS) +
            " | splicer / haproxy-splice | splicer / haproxy-default |")
    lines = [head, "|" + "---|" * (len(TARGETS) + 4)]
    for sc in SCENARIOS:
        if sc.key not in summary:
            continue
        row = summary[sc.key]
        for i, m in enumerate(sc.metrics + ("errors",)):
            title = f"**{sc.title}**" if i == 0 else ""
            if m == "errors":
                cells = []
                for t in TARGETS:
                    r = row.get(t)
                    if r is None:
                        cells.append("—")
                    elif r["errors"] or r["dead"]:
                        cells.append(f"**{r['errors']}{' DIED' if r['dead'] else ''}**")
                    else:
                        cells.append("0")
                lines.append(f"| {title} | errors (non-200, short bodies, socket errors; sum of rounds) | "
                             + " | ".join(cells) + " | | |")
                continue
            vals = {t: (row[t][m] if t in row else None) for t in TARGETS}
            proxy_only = m.startswith("cpu") and m != "cpu0_pct"
            cells = ["n/a" if t == "direct" and proxy_only else fmt(vals[t]) for t in TARGETS]
            ratios = ("", "") if m == "cpu0_pct" else (ratio(vals["splicer"], vals["haproxy-splice"]),
                                                       ratio(vals["splicer"], vals["haproxy-default"]))
            lines.append(f"| {title} | {METRICS[m]} | " + " | ".join(cells) + f" | {ratios[0]} | {ratios[1]} |")
    return "\n".join(lines)


def splicer_counters_table(samples: list[dict]) -> str:
    """splicer's counters (frontend and engine/pipe pool), summed over the rounds of each scenario."""
    def get(tot: dict, *keys: str) -> float:
        return sum(tot.get(k, 0) for k in keys)

    lines = ["| scenario | requests | body bytes spliced | body bytes copied | spliced share | splice() calls "
             "(engine + pipe pool) | EAGAIN waits | 4xx/5xx | client/server errors |",
             "|---|---|---|---|---|---|---|---|---|"]
    for sc in SCENARIOS:
        cs = [s["splicer_counters"] for s in samples if s["scenario"] == sc.key and s["target"] == "splicer"
              and s.get("splicer_counters")]
        if not cs:
            continue
        tot: dict[str, float] = {}
        for c in cs:
            for k, v in c.items():
                tot[k] = tot.get(k, 0) + v
        fe = "frontends.www."
        spliced, copied = get(tot, fe + "spliced"), get(tot, fe + "copied")
        share = f"{100 * spliced / (spliced + copied):.1f}%" if spliced + copied else "—"
        lines.append(
            f"| {sc.title} | {fmt(int(get(tot, fe + 'req_tot')))} | {fmt(int(spliced))} | {fmt(int(copied))} | "
            f"{share} | {fmt(int(get(tot, 'engine.splice_calls', 'pipes.splice_calls')))} | "
            f"{fmt(int(get(tot, 'engine.eagain_waits', 'pipes.eagain_waits')))} | "
            f"{int(get(tot, fe + 'hrsp_4xx', fe + 'hrsp_5xx'))} | "
            f"{int(get(tot, fe + 'ereq', fe + 'econ', fe + 'eresp'))} |")
    return "\n".join(lines)


def problems_md(problems: list) -> list[str]:
    """Markdown lines announcing a run's problems (none when there were none)."""
    return ["**PROBLEMS FOUND IN THIS RUN:**", ""] + [f"- {p}" for p in problems] + [""] if problems else []


def machine_md(machine: dict) -> list[str]:
    """Markdown lines of the `## Machine` table."""
    return ["## Machine", "", "| | |", "|---|---|"] + [
        f"| {k} | {str(v).replace(chr(10), ' / ').replace('|', '/')} |" for k, v in machine.items()]


def markdown(res: dict) -> str:
    m, cfg, pre = res["machine"], res["config"], res["preflight"]
    out = ["# splicer benchmark results", ""]
    out += problems_md(res["problems"])
    out += [f"Run {res['started']} to {res['finished']} (UTC), {cfg['rounds']} round(s), "
            f"{'quick' if cfg['quick'] else 'full'} mode: bulkget scenarios {cfg['bulk_duration_s']:g} s, "
            f"wrk scenarios {cfg['wrk_duration_s']} s per sample. Targets interleaved within each round "
            f"(order rotated every round); every figure is the median over the rounds. Proxy on CPU "
            f"{CPU_PROXY}, client and origin on CPU {CPU_CLIENT}. Ratios are splicer's figure divided by "
            f"the other proxy's: above 1 is better for Gbit/s and req/s, below 1 is better for latency and CPU.",
            "", "## Results", "", results_table(res["summary"]), ""]
    if res["notes"]:
        out += [f"- {n}" for n in res["notes"]] + [""]
    out += ["Figures: Gbit/s counts response body bytes received by the client over the client's elapsed time "
            "(bulkget finishes the requests in flight at the end of the duration, so every body is whole). "
            "Proxy CPU is utime+stime of the proxy's whole process tree (all processes and threads) from "
            "/proc/PID/stat, read before and after each sample; CPU % is of the proxy's one core. `direct` has "
            "no proxy. Client + origin CPU % is the load of CPU 0 (the client's rusage plus the origin nginx's "
            "ticks): near 100 % means CPU 0, not the proxy, set the pace, as it does for `direct`. The 1 KiB "
            "rows come from wrk (which does not check body lengths; the preflight did). In (f) and (g) a "
            "Lua script (benchmarks/wrk/) writes every request, so no two heads are the same; its cost is "
            "the client's, on CPU 0. (g)'s answers are 204s without a body.", ""]
    out += ["## Preflight", "", "### Body integrity", "",
            "Every file fetched through every target on one keep-alive connection, status, length and sha256 "
            "compared with the origin's file.", "", "| target | result |", "|---|---|"]
    for t, r in pre["bodies"].items():
        bad = [f"{k}: {v}" for k, v in r.items() if not v["ok"]]
        out.append(f"| {t} | {'ok (' + str(len(r)) + ' GETs)' if not bad else '**FAILED** ' + '; '.join(bad)} |")
    if pre.get("post_keepalive"):
        out += ["", "### POST keep-alive", "",
                "Three POSTs of a 1 KiB JSON body to /upload on one connection through every target: each "
                "answer a 2xx, the connection still open half a second after the last.", "",
                "| target | statuses | connection | result |", "|---|---|---|---|"]
        for t, r in pre["post_keepalive"].items():
            out.append(f"| {t} | {', '.join(map(str, r['statuses'])) or '—'} | "
                       f"{'kept' if r.get('open_after') else r.get('error', 'closed')} | "
                       f"{'ok' if r['ok'] else '**FAILED**'} |")
    out += ["", f"### splice() check (`strace -c -f -p` on each proxy's processes during {cfg['strace_s']:g} s of "
            "1 MiB GETs on one connection)", "",
            "| target | splice() calls | requests | bytes | syscalls per request (traced) | most frequent syscalls "
            "| verdict |",
            "|---|---|---|---|---|---|---|"]
    for t, r in pre["strace"].items():
        if "error" in r:
            out.append(f"| {t} | — | — | — | — | {r['error']} | **FAILED** |")
            continue
        top = ", ".join(f"{k} {v}" for k, v in r["top"])
        verdict = ("splices" if r["splice_calls"] else "**NO splice() CALLS**") if t in SPLICING else (
            "splices" if r["splice_calls"] else "no splice (as expected)")
        out.append(f"| {t} | {fmt(r['splice_calls'])} | {fmt(r['requests'])} | {fmt(r['bytes'])} | "
                   f"{fmt(r['syscalls_per_request'])} | {top} | {verdict} |")
    out += ["", "### Pinning", "", "| target | CPUs allowed (every thread of the process tree) |", "|---|---|"]
    for t, a in pre["affinity"].items():
        out.append(f"| {t} | {', '.join(sorted(set(a.values())))} ({len(a)} threads) |")
    if res["splicer_counters_md"]:
        out += ["", "## splicer's own counters (master CLI show counters before/after each sample, summed over rounds)", "",
                res["splicer_counters_md"]]
    out += [""] + machine_md(m)
    out += ["", "Configurations used: see `configs/` next to this file.", ""]
    return "\n".join(out)


def plot(summary: dict, path: Path) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): no plot"
    points = [("1k-c50", FILES["1k.bin"]), ("64k-c8", FILES["64k.bin"]), ("1m-c8", FILES["1m.bin"]),
              ("256m-c8", FILES["256m.bin"])]
    colors = dict(zip(TARGETS, ("black", "tab:red", "tab:blue", "tab:cyan", "tab:green")))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    for t in TARGETS:
        xs, gb, xc, cpu = [], [], [], []
        for key, size in points:
            r = summary.get(key, {}).get(t)
            if not r:
                continue
            if r.get("gbps") is not None:
                xs.append(size)
                gb.append(r["gbps"])
            if r.get("cpu_s_per_gib") is not None:
                xc.append(size)
                cpu.append(r["cpu_s_per_gib"])
        style = dict(marker="o", label=t, color=colors[t], linestyle="--" if t == "direct" else "-")
        if xs:
            ax1.plot(xs, gb, **style)
        if xc:
            ax2.plot(xc, cpu, **style)
    labels = ["1 KiB\n(wrk, 50 conns)", "64 KiB", "1 MiB", "256 MiB"]
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks([s for _, s in points], labels)
        ax.set_xlabel("object size (bulkget, 8 keep-alive conns unless noted)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    ax1.set_yscale("log")
    ax1.set_ylabel("Gbit/s (response bodies, log)")
    ax1.set_title("Throughput (median)")
    ax2.set_yscale("log")
    ax2.set_ylabel("proxy CPU-seconds per GiB (log)")
    ax2.set_title("Proxy CPU cost per GiB moved (median)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# -- main -----------------------------------------------------------------------------------

@dataclass
class Context:
    origin: Service
    proxies: dict
    bulk_duration: float
    wrk_duration: int
    tail: float
    workdir: Path = Path(".")
    splicer_last: dict | None = None


def machine_info() -> dict:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    rev = cmd_out(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    dirty = cmd_out(["git", "-C", str(REPO), "status", "--porcelain", "--", "splicer", "native"])
    return {
        "nproc": cmd_out(["nproc"]),
        "cpu": cpu_model,
        "kernel": cmd_out(["uname", "-r"]),
        "memory": cmd_out(["sh", "-c", "grep MemTotal /proc/meminfo"]),
        "loadavg at start": Path("/proc/loadavg").read_text().strip(),
        "haproxy -v": cmd_out(["haproxy", "-v"]).splitlines()[0],
        "nginx -v": cmd_out(["nginx", "-v"]),
        "splicer --version": cmd_out([shutil.which("splicer") or "splicer", "--version"]),
        "splicer commit": rev + (" + uncommitted changes in " + ", ".join(
            ln.split(None, 1)[-1] for ln in dirty.splitlines()) if dirty else ""),
        "wrk -v": cmd_out(["wrk", "-v"]).splitlines()[0],
        "gcc": cmd_out(["gcc", "--version"]).splitlines()[0],
        "python": sys.version.split()[0],
        "CLK_TCK": CLK_TCK,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 round, short durations (under 3 minutes)")
    ap.add_argument("--rounds", type=int, help="rounds (default 5, --quick 1)")
    ap.add_argument("--duration", type=float, help="seconds per sample (default 5, --quick 1.5 bulkget / 2 wrk)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    ap.add_argument("--workdir", type=Path, help="parent of the temporary directory (default: system temp)")
    ap.add_argument("--keep-workdir", action="store_true", help="keep the files, configs and logs of the run")
    ap.add_argument("--scenarios", help="comma-separated subset of: " + ",".join(s.key for s in SCENARIOS))
    ap.add_argument("--targets", help="comma-separated subset of: " + ",".join(TARGETS))
    args = ap.parse_args(argv)

    rounds = args.rounds or (1 if args.quick else 5)
    bulk_d = args.duration or (1.5 if args.quick else 5.0)
    wrk_d = max(1, round(args.duration)) if args.duration else (2 if args.quick else 5)
    tail = 30.0 if args.quick else 60.0
    strace_s = 1.0
    scenarios = SCENARIOS
    if args.scenarios:
        want = args.scenarios.split(",")
        unknown = set(want) - {s.key for s in SCENARIOS}
        if unknown:
            die(f"unknown scenario(s) {sorted(unknown)}")
        scenarios = tuple(s for s in SCENARIOS if s.key in want)
    missing = [s.script for s in scenarios if s.script and not (HERE / s.script).is_file()]
    if missing:
        die(f"wrk script(s) not found under {HERE}: {missing}")
    targets = TARGETS
    if args.targets:
        want = args.targets.split(",")
        if set(want) - set(TARGETS):
            die(f"unknown target(s) {sorted(set(want) - set(TARGETS))}")
        targets = tuple(t for t in TARGETS if t in want)

    if len(os.sched_getaffinity(0)) < 2 or not {CPU_CLIENT, CPU_PROXY} <= os.sched_getaffinity(0):
        die(f"needs CPUs {CPU_CLIENT} and {CPU_PROXY}; allowed here: {sorted(os.sched_getaffinity(0))}")
    for tool in ("taskset", "nginx", "haproxy", "wrk", "strace", "gcc"):
        if not shutil.which(tool):
            die(f"{tool} not found (apt-get install -y haproxy nginx wrk strace util-linux gcc)")
    busy = [p for p in ORIGIN_PORTS + tuple(PROXY_PORTS.values()) + tuple(TCP_PORTS.values()) if not port_free(p)]
    if busy:
        die(f"ports already in use on {HOST}: {busy}")
    machine = machine_info()
    os.sched_setaffinity(0, {CPU_CLIENT})  # this script (and the preflight's Python client) on CPU 0

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)

    started = dt.datetime.now(dt.UTC)
    n_samples = rounds * sum(sum(1 for t in targets if not s.tcp or t == "direct" or t in TCP_PORTS)
                             for s in scenarios)
    est = rounds * sum(len(targets) * ((bulk_d if s.tool == "bulkget" else wrk_d) + 0.6) for s in scenarios)
    log(f"splicer benchmarks: {rounds} round(s) x {len(scenarios)} scenarios x {len(targets)} targets = "
        f"{n_samples} samples, about {est / 60 + 0.7:.0f} min")
    build_bulkget()
    log(f"built {BULKGET.relative_to(REPO)}")

    workdir = Path(tempfile.mkdtemp(prefix="splicer-bench-", dir=args.workdir))
    os.chmod(workdir, 0o755)  # nginx workers (user nobody) read the docroot
    problems: list[str] = []
    notes: list[str] = []
    samples: list[dict] = []
    try:
        log(f"writing {len(FILES)} files of random bytes (1 KiB .. 256 MiB) in {workdir}")
        digests = make_files(workdir / "www")
        origin, proxies, configs = start_everything(workdir)
        started_list = ", ".join(f"{n}:{PROXY_PORTS[n]} pid {s.pid}" for n, s in proxies.items())
        log(f"started origin-nginx (CPU {CPU_CLIENT}, ports {ORIGIN_PORTS[0]}/{ORIGIN_PORTS[1]}) and "
            f"{started_list} (CPU {CPU_PROXY})")

        # preflight
        preflight: dict = {"bodies": {}, "strace": {}, "affinity": {}, "post_keepalive": {}}
        check_post = any(s.path == "/upload" for s in scenarios)  # api-post-unique's origin location
        for t in TARGETS:
            if t not in targets:
                continue
            log(f"preflight: body integrity via {t}")
            preflight["bodies"][t] = r = check_bodies(target_port(t), digests)
            for k, v in r.items():
                if not v["ok"]:
                    problems.append(f"preflight: {t} returned a wrong body for {k}: {v}")
            if check_post:
                preflight["post_keepalive"][t] = r = check_post_keepalive(target_port(t))
                if not r["ok"]:
                    problems.append(f"preflight: 1 KiB POSTs to /upload via {t} did not all get a 2xx on one "
                                    f"kept-alive connection: {r}")
        for t, svc in proxies.items():
            if t not in targets:
                continue
            preflight["affinity"][t] = aff = tree_affinity(svc.pid)
            if set(aff.values()) != {str(CPU_PROXY)}:
                problems.append(f"{t} is not pinned to CPU {CPU_PROXY} only: {aff}")
            log(f"preflight: strace -c -f on {t} during {strace_s:g} s of 1 MiB GETs")
            preflight["strace"][t] = r = strace_check(t, svc, workdir, strace_s)
            if "error" in r:
                problems.append(f"preflight: strace on {t} failed: {r['error']}")
            else:
                log(f"  {t}: {r['splice_calls']} splice() calls, {r['requests']} requests, "
                    f"top syscalls {r['top'][:4]}")
                if not r["ok"]:
                    problems.append(f"preflight: {t} made no splice() call during the strace check")
        # warm-up: one short pass on every target (connection pools, page cache, allocators)
        for t in targets:
            run_bulkget(target_port(t), "/1m.bin", 8, 0.5, 10)
        ctx = Context(origin, proxies, bulk_d, wrk_d, tail, workdir)
        if "splicer" in targets:
            ctx.splicer_last = splicer_stats(proxies["splicer"])

        # measurements
        i = 0
        for rnd in range(1, rounds + 1):
            k = (rnd - 1) % len(targets)
            order = targets[k:] + targets[:k]
            for sc in scenarios:
                for t in order:
                    if sc.tcp and t != "direct" and t not in TCP_PORTS:
                        continue
                    i += 1
                    s = measure(ctx, sc, t, rnd)
                    samples.append(s)
                    d = s["derived"]
                    bits = []
                    for m in sc.metrics:
                        if d.get(m) is not None:
                            bits.append(f"{METRICS[m].split(' (')[0]} {fmt(d[m])}")
                    err = s["raw"].get("client_error") or s["raw"].get("died")
                    log(f"[{i:>3}/{n_samples}] round {rnd}/{rounds} {sc.key:<15} {t:<16} " + ", ".join(bits)
                        + (f"  ERRORS {d['errors']}" if d.get("errors") else "") + (f"  ({err})" if err else ""))

        for t in PROXIES:
            ss = [s for s in samples if s["target"] == t]
            changed = [s for s in ss if s.get("process_tree_changed")]
            if changed:
                problems.append(f"{t}: its process tree changed during {len(changed)} sample(s) (a worker "
                                f"exited or was restarted?), first: {changed[0]['scenario']} round "
                                f"{changed[0]['round']}: {changed[0]['process_tree_changed']}")
            logged = [(s, ln) for s in ss for ln in s.get("log_lines", []) if not EXPECTED_LOG.search(ln)]
            spills = sum(1 for s in ss for ln in s.get("log_lines", []) if EXPECTED_LOG.search(ln))
            if spills:
                notes.append(f"{t} logged {spills} time(s) that it buffered an upstream response to a temporary "
                             f"file (proxy_buffering on, nginx's default; part of its cost)")
            if logged:
                problems.append(f"{t} logged {len(logged)} line(s) during the measurements (warnings or errors; "
                                f"all in results.json), first in {logged[0][0]['scenario']}: {logged[0][1][:300]}")
        for t, svc in proxies.items():
            if not svc.alive():
                problems.append(f"{t} died during the run (exit status {svc.popen.returncode}); log tail:\n"
                                f"{svc.log_tail(10)}")
        summary = summarize(samples)
        for key, row in summary.items():
            for t, r in row.items():
                if r["errors"]:
                    problems.append(f"{key}: {t} had {r['errors']} error(s)"
                                    + (f": {r['client_errors']}" if r["client_errors"] else ""))
        machine["loadavg at end"] = Path("/proc/loadavg").read_text().strip()
        # splicer's final counters (printed on SIGTERM) go to the JSON
        final_splicer = splicer_stats(proxies["splicer"]) if "splicer" in targets else None
    finally:
        stop_all()
        if not args.keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"kept {workdir}")

    finished = dt.datetime.now(dt.UTC)
    res = {
        "started": started.strftime("%Y-%m-%d %H:%M:%S"), "finished": finished.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine,
        "config": {"quick": args.quick, "rounds": rounds, "bulk_duration_s": bulk_d, "wrk_duration_s": wrk_d,
                   "bulk_tail_s": tail, "strace_s": strace_s, "targets": list(targets),
                   "scenarios": [asdict(s) for s in scenarios], "ports": {"origin": ORIGIN_PORTS, **PROXY_PORTS},
                   "cpu_proxy": CPU_PROXY, "cpu_client_origin": CPU_CLIENT, "files": FILES},
        "preflight": preflight, "problems": problems, "notes": notes, "summary": summary, "samples": samples,
        "splicer_final_counters": final_splicer,
        "splicer_counters_md": splicer_counters_table(samples),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "configs").mkdir(exist_ok=True)
    for name, text in configs.items():
        (args.out / "configs" / name).write_text(text)
    write_results(args.out, "results", res, markdown(res))
    plot_err = plot(summary, args.out / "plot.png")
    log(f"wrote {args.out / 'results.md'}, {args.out / 'results.json'}"
        + (f", {args.out / 'plot.png'}" if not plot_err else f" ({plot_err})")
        + f" in {(finished - started).total_seconds() / 60:.1f} min")
    return report_problems("run.py", problems)


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        stop_all()
