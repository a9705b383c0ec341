#!/usr/bin/env python3
"""Memory held by many idle keep-alive client connections: splicer vs haproxy.

    python benchmarks/idle_rss.py [--conns 10000] [--targets splicer,haproxy] [--out benchmarks/results]

For each target in turn (splicer, then haproxy; only one runs at a time), in front of the same
nginx origin:

 1. start it with idle-splicer.cfg / idle-haproxy.cfg (maxconn 12000, tune.maxpipes 256,
    option splice-auto, timeout client and http-keep-alive 300s, no nbthread: splicer runs one
    worker process per CPU, haproxy one thread per CPU in one process), from a soft
    RLIMIT_NOFILE of --server-nofile (1024 by default, a common default), so the proxy has to
    raise its own limit from maxconn as it does in production;
 2. warm it up (--warmup short connections with one GET each, closed), wait a second, and read
    RSS and PSS of every process of its tree from /proc/PID/smaps_rollup ("before");
 3. open --conns client connections in batches of --batch; on each send one GET of a 1 KiB
    file, read the whole response (200, 1024 body bytes) and keep the connection open, idle;
 4. wait --settle seconds (2), check that every connection is still open, read RSS and PSS
    again ("after"), then close the connections and read them once more ("closed");
 5. report the totals over the tree before/after and the increment per held connection.

The benchmark process raises its own soft RLIMIT_NOFILE to its hard limit. Connection
failures (refused, reset, timed out, a wrong response, a connection the proxy closed during
the idle wait) are counted and reported, not retried.

Outputs (in --out): idle_rss.md (also printed) and idle_rss.json. Exit status: 0 on success,
1 when a target failed a connection or a check, 2 when the benchmark could not run. Uses
127.0.0.1 ports 19221-19222 (origin), 19230 (splicer) and 19231 (haproxy).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402  (benchmarks/run.py: processes, origin, counters)
from run import HOST, Service, fmt, log  # noqa: E402

HERE = bench.HERE
ORIGIN_PORTS = (19221, 19222)
PORTS = {"splicer": 19230, "haproxy": 19231}
TEMPLATES = {"splicer": "idle-splicer.cfg", "haproxy": "idle-haproxy.cfg"}
FILE, FILE_SIZE = "1k.bin", 1024
REQUEST = f"GET /{FILE} HTTP/1.1\r\nHost: {HOST}\r\nUser-Agent: idle_rss\r\n\r\n".encode()
SMAPS_KEYS = ("Rss", "Pss", "Pss_Anon", "Pss_File", "Shared_Clean", "Shared_Dirty", "Private_Clean",
              "Private_Dirty", "Anonymous", "Swap")
MAX_FAILURES = 100  # stop opening connections after this many failures
MIB = 1 << 20


# -- /proc ----------------------------------------------------------------------------------

def smaps_rollup(pid: int) -> dict[str, int]:
    """/proc/PID/smaps_rollup as {key: bytes}."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        m = re.match(r"(\w+):\s+(\d+) kB", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * 1024
    return out


def nofile_limit(pid: int) -> tuple[int | None, int | None]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return (None if soft == "unlimited" else int(soft)), (None if hard == "unlimited" else int(hard))
    return None, None


def process_memory(root: int, roles: dict[int, str]) -> dict:
    """RSS/PSS (smaps_rollup), open fds, threads and NOFILE limit of every process of the tree."""
    procs = []
    for pid in bench.proc_tree(root):
        try:
            sm = smaps_rollup(pid)
            fds = len(os.listdir(f"/proc/{pid}/fd"))
            threads = len(os.listdir(f"/proc/{pid}/task"))
            soft, hard = nofile_limit(pid)
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        procs.append({"pid": pid, "role": roles.get(pid, "master" if pid == root else "child"), "comm": comm,
                      "fds": fds, "threads": threads, "nofile_soft": soft, "nofile_hard": hard,
                      **{k: sm.get(k, 0) for k in SMAPS_KEYS}})
    return {"processes": procs, "rss": sum(p["Rss"] for p in procs), "pss": sum(p["Pss"] for p in procs),
            "time": time.time()}


def sockstat() -> dict[str, int]:
    """/proc/net/sockstat TCP line (system-wide; `mem` is in pages)."""
    for line in Path("/proc/net/sockstat").read_text().splitlines():
        if line.startswith("TCP:"):
            t = line.split()[1:]
            return {t[i]: int(t[i + 1]) for i in range(0, len(t) - 1, 2)}
    return {}


@contextlib.contextmanager
def soft_nofile(value: int):
    """Lower this process's soft RLIMIT_NOFILE to `value` while starting a server (it inherits
    it), then put it back."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(value, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -- client ---------------------------------------------------------------------------------

def read_response(s: socket.socket) -> tuple[int, int]:
    """Read one response with a Content-Length body; returns (status, body bytes)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("connection closed before a whole response head" + (f" (got {buf[:80]!r})"
                                                                                       if buf else ""))
        buf += chunk
        if len(buf) > 65536:
            raise ValueError("response head too large")
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = None
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    if length is None:
        raise ValueError(f"no Content-Length in {lines[0]!r}")
    got = len(body)
    while got < length:
        chunk = s.recv(min(65536, length - got))
        if not chunk:
            raise ConnectionError(f"connection closed after {got} of {length} body bytes")
        got += len(chunk)
    if got > length:
        raise ValueError(f"{got - length} bytes after the body")
    return status, got


def failure(kind: str, exc: BaseException | str, i: int) -> dict:
    if isinstance(exc, BaseException):
        err = getattr(exc, "errno", None)
        return {"conn": i, "stage": kind, "error": f"{type(exc).__name__}: {exc}", "errno": err}
    return {"conn": i, "stage": kind, "error": exc}


def open_idle(port: int, n: int, batch: int, timeout: float) -> tuple[list[socket.socket], list[dict], float]:
    """Open `n` connections (batches of `batch`), one GET each, whole response read; returns the
    connections that got a 200, the failures and the seconds it took."""
    held: list[socket.socket] = []
    failures: list[dict] = []
    t0 = time.monotonic()
    i = 0
    while i < n and len(failures) < MAX_FAILURES:
        group: list[tuple[int, socket.socket]] = []
        for _ in range(min(batch, n - i)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(timeout)
            try:
                s.connect((HOST, port))
            except OSError as exc:
                failures.append(failure("connect", exc, i))
                s.close()
            else:
                group.append((i, s))
            i += 1
        sent = []
        for j, s in group:
            try:
                s.sendall(REQUEST)
                sent.append((j, s))
            except OSError as exc:
                failures.append(failure("send", exc, j))
                s.close()
        deadline = time.monotonic() + timeout  # a whole batch waits at most `timeout` for its responses
        for j, s in sent:
            try:
                s.settimeout(max(0.001, deadline - time.monotonic()))
                status, nbytes = read_response(s)
            except (OSError, ValueError) as exc:
                failures.append(failure("response", exc, j))
                s.close()
                continue
            if status != 200 or nbytes != FILE_SIZE:
                failures.append(failure("response", f"status {status}, {nbytes} body bytes", j))
                s.close()
                continue
            held.append(s)
    return held, failures, time.monotonic() - t0


def still_open(conns: list[socket.socket]) -> tuple[int, list[str]]:
    """How many connections the proxy has not closed (no EOF, no error, nothing unexpected)."""
    alive, bad = 0, []
    for s in conns:
        s.setblocking(False)  # with a timeout set, Python would first wait for readability
        try:
            data = s.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            alive += 1
            continue
        except OSError as exc:
            bad.append(f"{type(exc).__name__}: {exc}")
            continue
        bad.append("closed by the proxy (EOF)" if not data else f"unexpected bytes {data!r}")
    return alive, bad


# -- one target -----------------------------------------------------------------------------

def splicer_fds_needed(cfg: Path) -> int | None:
    """splicer's own fds_needed() for the configuration (what it raises its soft limit to)."""
    try:
        from splicer.config import load
        from splicer.runtime.master import fds_needed
        return fds_needed(load(str(cfg)))
    except Exception:  # splicer may be mid-edit: the figure is informative only
        return None


def start_target(target: str, cfg: Path, workdir: Path, cpus: str, nofile: int) -> Service:
    with soft_nofile(nofile):
        if target == "splicer":
            svc = bench.start_splicer("splicer", cfg, workdir, cpu=cpus)
        else:
            p = subprocess.run(["haproxy", "-c", "-f", str(cfg)], check=False, capture_output=True, text=True)
            if p.returncode != 0:
                bench.die(f"haproxy -c rejected {cfg.name}:\n{p.stdout}{p.stderr}")
            svc = Service("haproxy", ["haproxy", "-db", "-f", str(cfg)], cpus, workdir)
    svc.wait_port(PORTS[target])
    return svc


def measure_target(target: str, cfg: Path, workdir: Path, args, cpus: str) -> dict:
    r: dict = {"target": target, "problems": []}
    svc = start_target(target, cfg, workdir, cpus, args.server_nofile)
    r["pid"] = svc.pid
    time.sleep(0.5)  # every worker up
    # warm-up: short connections (each a new one, so every worker / thread sees some)
    warm_conns, warm_fail, _ = open_idle(PORTS[target], args.warmup, args.warmup, args.timeout)
    for s in warm_conns:
        s.close()
    if warm_fail:
        r["problems"].append(f"{target}: {len(warm_fail)} failure(s) during the warm-up, first: {warm_fail[0]}")
    time.sleep(1.0)
    roles: dict[int, str] = {}
    stats0 = bench.splicer_stats(svc) if target == "splicer" else None
    if target == "splicer":
        for obj in (stats0 or {}).get("workers", []):
            if obj.get("pid") and obj.get("worker") is not None:
                roles[obj["pid"]] = f"worker {obj['worker']}"
    elif target == "haproxy":
        roles[svc.pid] = "haproxy (one process, its threads)"
    tree0 = sorted(bench.proc_tree(svc.pid))
    r["before"] = process_memory(svc.pid, roles)
    r["sockstat_before"] = sockstat()
    log(f"{target}: pid {svc.pid}, {len(tree0)} process(es), RSS {r['before']['rss'] / MIB:.1f} MiB, "
        f"PSS {r['before']['pss'] / MIB:.1f} MiB before; opening {args.conns} connections")

    held, failures, took = open_idle(PORTS[target], args.conns, args.batch, args.timeout)
    r["opened"] = len(held)
    r["failures"] = failures
    r["open_seconds"] = took
    log(f"{target}: {len(held)} connections open and idle after {took:.1f} s, {len(failures)} failure(s)"
        + (f", first: {failures[0]}" if failures else ""))
    time.sleep(args.settle)
    alive, bad = still_open(held)
    r["held"], r["closed_by_proxy"] = alive, bad
    r["after"] = process_memory(svc.pid, roles)
    r["sockstat_after"] = sockstat()
    if target == "splicer":
        st = bench.splicer_stats(svc)
        r["splicer_counters"] = st
        per_worker = [{"pid": obj.get("pid"), "worker": obj.get("worker"),
                       "scur": obj.get("frontends", {}).get("www", {}).get("scur")}
                      for obj in (st or {}).get("workers", [])]
        r["scur_per_worker"] = {w["pid"]: w for w in per_worker}
        r["counters_delta"] = bench.stats_delta(stats0, st)
    for s in held:
        s.close()
    time.sleep(1.0)
    r["closed"] = process_memory(svc.pid, roles)
    tree1 = sorted(bench.proc_tree(svc.pid)) if svc.alive() else []
    if tree1 != tree0:
        r["problems"].append(f"{target}: process tree changed during the run (before {tree0}, after {tree1})")
    r["alive"] = svc.alive()
    if not svc.alive():
        r["problems"].append(f"{target} died (exit status {svc.popen.returncode}): {svc.log_tail(10)}")
    svc.stop()
    r["log"] = [ln for ln in svc.log_path.read_text(errors="replace").splitlines()
                if not ln.startswith("splicer-stats ")]
    if failures:
        kinds: dict[str, int] = {}
        for f in failures:
            key = f['stage'] + ": " + re.sub(r" \(got .*", "", f["error"])
            kinds[key] = kinds.get(key, 0) + 1
        r["problems"].append(f"{target}: {len(failures)} of the first {min(args.conns, failures[-1]['conn'] + 1)} "
                             f"connection(s) failed"
                             + (f" (stopped opening after {MAX_FAILURES} failures)" if len(failures) >= MAX_FAILURES
                                else "") + ": " + "; ".join(f"{v}x {k}" for k, v in kinds.items()))
    if bad:
        r["problems"].append(f"{target}: {len(bad)} connection(s) were closed or broken during the {args.settle:g} s "
                             f"idle wait, first: {bad[0]}")
    # file descriptor limit: the worst case is every connection on one worker
    need = args.conns + 512
    for p in r["after"]["processes"]:
        if p["role"] != "master" and p["nofile_soft"] is not None and p["nofile_soft"] < need:
            r["problems"].append(f"{target}: {p['role']} (pid {p['pid']}) runs with a soft RLIMIT_NOFILE of "
                                 f"{p['nofile_soft']}, less than {need} ({args.conns} connections + 512) that one "
                                 f"process may need if it accepts them all")
    n = r["held"] or None
    r["rss_per_conn"] = (r["after"]["rss"] - r["before"]["rss"]) / n if n else None
    r["pss_per_conn"] = (r["after"]["pss"] - r["before"]["pss"]) / n if n else None
    return r


# -- report ---------------------------------------------------------------------------------

def mib(v) -> str:
    return "—" if v is None else f"{v / MIB:.1f}"


def markdown(res: dict) -> str:
    cfg = res["config"]
    out = [f"# Memory with {cfg['conns']:,} idle keep-alive client connections", ""]
    out += bench.problems_md(res["problems"])
    out += [f"Run {res['started']} to {res['finished']} (UTC). Each target alone in front of an nginx origin: "
            f"{cfg['conns']:,} connections opened in batches of {cfg['batch']}, one `GET /{FILE}` "
            f"({FILE_SIZE} B) on each, response read, connection kept open; {cfg['settle_s']:g} s idle wait, then "
            f"RSS and PSS (`/proc/PID/smaps_rollup`) summed over the target's processes. Both: maxconn 12000, "
            f"tune.maxpipes 256 (haproxy spells it `maxpipes`), option splice-auto, timeout client / http-keep-alive 300s; splicer one worker "
            f"process per CPU, haproxy one thread per CPU (both default). Started with a soft RLIMIT_NOFILE of "
            f"{cfg['server_nofile']}.", "",
            "| target | processes | connections held | RSS before (MiB) | RSS after (MiB) | PSS before (MiB) | "
            "PSS after (MiB) | **RSS per connection (bytes)** | **PSS per connection (bytes)** | RSS / PSS after "
            "closing them (MiB) | failures |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for t, r in res["targets"].items():
        if "error" in r:
            out.append(f"| {t} | — | — | — | — | — | — | — | — | — | **{r['error']}** |")
            continue
        fails = len(r["failures"]) + len(r["closed_by_proxy"])
        out.append(f"| {t} | {len(r['before']['processes'])} | {r['held']:,} | {mib(r['before']['rss'])} | "
                   f"{mib(r['after']['rss'])} | {mib(r['before']['pss'])} | {mib(r['after']['pss'])} | "
                   f"**{fmt(round(r['rss_per_conn'])) if r['rss_per_conn'] is not None else '—'}** | "
                   f"**{fmt(round(r['pss_per_conn'])) if r['pss_per_conn'] is not None else '—'}** | "
                   f"{mib(r['closed']['rss'])} / {mib(r['closed']['pss'])} | "
                   f"{'**' + str(fails) + '**' if fails else 0} |")
    rs = [r for r in res["targets"].values() if r.get("pss_per_conn")]
    if len(rs) == 2:
        a, b = rs
        out += ["", f"{a['target']} / {b['target']} per connection: RSS {a['rss_per_conn'] / b['rss_per_conn']:.2f}x, "
                f"PSS {a['pss_per_conn'] / b['pss_per_conn']:.2f}x."]
    out += ["", "## Per process", "",
            "| target | process | pid | RSS before → after (MiB) | PSS before → after (MiB) | Private_Dirty after "
            "(MiB) | open fds after | threads | RLIMIT_NOFILE soft / hard | client connections (scur) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for t, r in res["targets"].items():
        if "error" in r:
            continue
        before = {p["pid"]: p for p in r["before"]["processes"]}
        scur = r.get("scur_per_worker", {})
        for p in r["after"]["processes"]:
            b = before.get(p["pid"], {})
            sc = scur.get(p["pid"], {}).get("scur")
            out.append(f"| {t} | {p['role']} | {p['pid']} | {mib(b.get('Rss'))} → {mib(p['Rss'])} | "
                       f"{mib(b.get('Pss'))} → {mib(p['Pss'])} | {mib(p['Private_Dirty'])} | {p['fds']:,} | "
                       f"{p['threads']} | {p['nofile_soft']} / {p['nofile_hard']} | {'—' if sc is None else sc} |")
    out += ["", "## File descriptor limits", ""]
    for t, r in res["targets"].items():
        if "error" in r:
            continue
        lim = sorted({(p["nofile_soft"], p["nofile_hard"]) for p in r["after"]["processes"]})
        line = (f"- {t}: started with a soft limit of {cfg['server_nofile']} (hard {res['benchmark_nofile'][1]}); "
                f"its processes ran with soft / hard {', '.join(f'{s} / {h}' for s, h in lim)}.")
        if t == "splicer" and res.get("splicer_fds_needed"):
            line += (f" splicer's fds_needed() for this configuration is {res['splicer_fds_needed']:,} per worker "
                     f"(2 x maxconn + pipes + listeners + 64), so it raises its soft limit to min(that, hard limit).")
        out.append(line)
    out += ["", "## Logs of the targets (warnings and errors; splicer runs with -q)", ""]
    for t, r in res["targets"].items():
        lines = r.get("log", [])
        out.append(f"- {t}: " + ("nothing" if not lines else f"{len(lines)} line(s):"))
        out += [f"    - `{ln[:300]}`" for ln in lines[:12]]
        if len(lines) > 12:
            out.append(f"    - ... {len(lines) - 12} more in idle_rss.json")
    out += ["", "Reading the numbers: RSS counts every resident page of each process, so pages a forked splicer "
            "worker still shares with its master are counted twice in the total; PSS divides each shared page "
            "between the processes that map it and adds up to the real footprint. The per-connection figures are "
            "(after - before) / connections held: user-space memory only. Kernel socket buffers are not in RSS "
            "(the TCP `mem` line of /proc/net/sockstat, before/after, is in the JSON; it is system-wide and "
            "includes the client's sockets). `before` is measured after a warm-up of "
            f"{cfg['warmup']} short connections.", ""]
    out += bench.machine_md(res["machine"]) + [""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conns", type=int, default=10000, help="idle client connections (default 10000)")
    ap.add_argument("--batch", type=int, default=200, help="connections opened at once (default 200)")
    ap.add_argument("--settle", type=float, default=2.0, help="idle seconds before measuring (default 2)")
    ap.add_argument("--warmup", type=int, default=20, help="short connections before the first reading (default 20)")
    ap.add_argument("--timeout", type=float, default=10.0, help="client socket timeout, seconds (default 10)")
    ap.add_argument("--server-nofile", type=int, default=1024,
                    help="soft RLIMIT_NOFILE the targets start with (default 1024)")
    ap.add_argument("--targets", default="splicer,haproxy", help="comma-separated subset of: splicer,haproxy")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    ap.add_argument("--workdir", type=Path, help="parent of the temporary directory (default: system temp)")
    ap.add_argument("--keep-workdir", action="store_true", help="keep the configs and logs of the run")
    args = ap.parse_args(argv)
    targets = args.targets.split(",")
    if set(targets) - set(PORTS):
        bench.die(f"unknown target(s) {sorted(set(targets) - set(PORTS))}")
    if not 1 <= args.conns <= 12000 - 100:
        bench.die("--conns must be between 1 and 11900 (the targets' maxconn is 12000)")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new_soft = hard if hard != resource.RLIM_INFINITY else max(soft, args.conns + 1024)
    resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
    if new_soft < args.conns + 256:
        bench.die(f"this process may open {new_soft} files (hard limit {hard}): too few for {args.conns} connections")
    tools = ["taskset", "nginx"] + (["haproxy"] if "haproxy" in targets else [])
    for tool in tools:
        if not shutil.which(tool):
            bench.die(f"{tool} not found (apt-get install -y haproxy nginx util-linux)")
    busy = [p for p in ORIGIN_PORTS + tuple(PORTS[t] for t in targets) if not bench.port_free(p)]
    if busy:
        bench.die(f"ports already in use on {HOST}: {busy}")
    cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    machine = bench.machine_info()

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)

    started = dt.datetime.now(dt.UTC)
    log(f"idle RSS: {args.conns} idle keep-alive connections on {', '.join(targets)}, one after the other "
        f"(CPUs {cpus}; this process may open {new_soft} files)")
    workdir = Path(tempfile.mkdtemp(prefix="splicer-idle-", dir=args.workdir))
    os.chmod(workdir, 0o755)
    problems: list[str] = []
    results: dict[str, dict] = {}
    configs: dict[str, str] = {}
    fds_needed = None
    try:
        bench.make_files(workdir / "www", {FILE: FILE_SIZE})
        origin, configs["origin-nginx.conf"] = bench.start_origin(workdir, ORIGIN_PORTS, cpu=cpus)
        for t in targets:
            cfg = workdir / TEMPLATES[t]
            configs[cfg.name] = bench.render(TEMPLATES[t], cfg, PORT=PORTS[t], ORIGIN1_PORT=ORIGIN_PORTS[0],
                                             ORIGIN2_PORT=ORIGIN_PORTS[1])
            if t == "splicer":
                fds_needed = splicer_fds_needed(cfg)
            try:
                results[t] = r = measure_target(t, cfg, workdir, args, cpus)
            except SystemExit as exc:  # a target that does not start: report it, go on with the next
                if not isinstance(exc.code, str):  # a signal (on_term), not bench.die()
                    raise
                results[t] = r = {"target": t, "error": str(exc), "problems": [f"{t}: {exc}"]}
                for svc in list(Service.running):
                    if svc is not origin:
                        svc.stop()
            problems += r["problems"]
            if "error" not in r:
                log(f"{t}: {r['held']:,} held; RSS {mib(r['before']['rss'])} -> {mib(r['after']['rss'])} MiB, "
                    f"PSS {mib(r['before']['pss'])} -> {mib(r['after']['pss'])} MiB; per connection RSS "
                    f"{fmt(r['rss_per_conn'])} B, PSS {fmt(r['pss_per_conn'])} B")
            time.sleep(1.0)
        origin_log = [ln for ln in origin.log_path.read_text(errors="replace").splitlines()]
        if origin_log:
            problems.append(f"origin nginx logged {len(origin_log)} line(s), first: {origin_log[0][:300]}")
        machine["loadavg at end"] = Path("/proc/loadavg").read_text().strip()
    finally:
        bench.stop_all()
        if args.keep_workdir:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    finished = dt.datetime.now(dt.UTC)
    res = {
        "started": started.strftime("%Y-%m-%d %H:%M:%S"), "finished": finished.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine,
        "config": {"conns": args.conns, "batch": args.batch, "settle_s": args.settle, "warmup": args.warmup,
                   "timeout_s": args.timeout, "server_nofile": args.server_nofile, "targets": targets,
                   "cpus": cpus, "ports": {"origin": ORIGIN_PORTS, **{t: PORTS[t] for t in targets}},
                   "request": REQUEST.decode()},
        "benchmark_nofile": [new_soft, hard], "splicer_fds_needed": fds_needed,
        "configs": configs, "problems": problems, "targets": results,
    }
    bench.write_results(args.out, "idle_rss", res, markdown(res))
    log(f"wrote {args.out / 'idle_rss.md'}, {args.out / 'idle_rss.json'} in "
        f"{(finished - started).total_seconds() / 60:.1f} min")
    return bench.report_problems("idle_rss.py", problems)


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        bench.stop_all()
