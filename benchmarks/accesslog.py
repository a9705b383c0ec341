#!/usr/bin/env python3
"""What the access log costs: splicer's CPU per 1 KiB request with `option httplog` logged
to a file, to syslog over UDP and to syslog over TCP, against the same configuration
without logging, in one run.

    python benchmarks/accesslog.py [--rounds N] [--duration S] [--conns N] [--together] [--out DIR]
    python benchmarks/accesslog.py --configs-only DIR    # write and --check the configs, measure nothing

Method (benchmarks/run.py's, as benchmarks/rules.py): an nginx origin
(templates/origin-nginx.conf) and the wrk client on CPU 0, each splicer on CPU 1; a
splicer's CPU is the utime+stime of its process tree from /proc/PID/stat before and after a
wrk run, divided by the requests wrk counted. The configurations run side by side (one
splicer process each, the others idle while one is measured), in an order rotated every
round, so drift on a shared machine hits all alike; the table shows the medians. With
``--together`` every configuration is measured at once in each round, each by its own wrk
(all on CPU 0, all proxies sharing CPU 1), and "vs nolog" is the median of each round's
own ratio: steady on a machine whose speed changes from second to second (the absolute
figures are those of a shared CPU).

The configurations (templates/splicer.cfg's settings, same origin):
  nolog   no `log` line.
  file    `option httplog` and `log file@<workdir>/access.log format raw daemon`.
  syslog  `option httplog` and `log udp@127.0.0.1:19299 local0` (haproxy's default `local`
          framing); a socat on CPU 0 receives the datagrams and drops them.
  syslog-tcp  `option httplog` and `log tcp@127.0.0.1:19298 local0` (RFC 6587 framing, one
          write per batch); a socat on CPU 0 reads the stream and drops it.
Every line is checked at the end: the file holds one line per request wrk counted (plus the
benchmark's port probes), and the log counters (Proxy.stats()["log"]) show no drop.

For comparison, when haproxy is installed, the same two cases through haproxy (templates/
haproxy.cfg, with splice, on CPU 1), measured in the same rotation:
  haproxy-nolog   no `log` line.
  haproxy-syslog  `option httplog` and `log udp@127.0.0.1:<port> local0`, to the same socat.
  haproxy-syslog-tcp  `option httplog` and `log tcp@127.0.0.1:<port> local0` (haproxy's
          implicit ring), to the same TCP socat.
What logging to syslog costs haproxy tells what the kernel's one datagram per line (RFC 5426
section 3.1: one message per datagram) costs any proxy on this machine.

Target (issue 10): logging costs at most 15 % more CPU per request than nolog.
Outputs in --out: logging.md (also printed), logging.json (every sample), the configs.
Exit status: 0 when measured (whatever the figure), 1 when a run had errors, 2 when the
benchmark could not run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402  (benchmarks/run.py: services, pinning, wrk, /proc accounting)

PORTS = {"nolog": 19290, "file": 19291, "syslog": 19292, "syslog-tcp": 19295}
HAPROXY_PORTS = {"haproxy-nolog": 19293, "haproxy-syslog": 19294, "haproxy-syslog-tcp": 19296}
SYSLOG_PORT = 19299
SYSLOG_TCP_PORT = 19298
FILE = "1k.bin"


def config(name: str, workdir: Path) -> Path:
    """Write the splicer config `name` (a PORTS key); returns its path."""
    o1, o2 = run.ORIGIN_PORTS
    text = (run.TEMPLATES / "splicer.cfg").read_text()
    text = text.replace("@@PORT@@", str(PORTS[name])).replace("@@ORIGIN1_PORT@@", str(o1))
    text = text.replace("@@ORIGIN2_PORT@@", str(o2))
    if name != "nolog":
        target = {"file": f"file@{workdir}/access.log format raw daemon",
                  "syslog": f"udp@127.0.0.1:{SYSLOG_PORT} local0",
                  "syslog-tcp": f"tcp@127.0.0.1:{SYSLOG_TCP_PORT} local0"}[name]
        text = text.replace("    default_backend farm\n",
                            f"    option httplog\n    log {target}\n    default_backend farm\n", 1)
    cfg = workdir / f"logging-{name}.cfg"
    cfg.write_text(text)
    return cfg


def haproxy_config(name: str, workdir: Path) -> Path:
    """Write the haproxy config `name` (a HAPROXY_PORTS key), checked with haproxy -c."""
    o1, o2 = run.ORIGIN_PORTS
    cfg = workdir / f"logging-{name}.cfg"
    run.render("haproxy.cfg", cfg, PORT=HAPROXY_PORTS[name], ORIGIN1_PORT=o1, ORIGIN2_PORT=o2,
               SPLICE="    option splice-request\n    option splice-response")
    if name != "haproxy-nolog":
        target = (f"udp@127.0.0.1:{SYSLOG_PORT}" if name == "haproxy-syslog"
                  else f"tcp@127.0.0.1:{SYSLOG_TCP_PORT}")
        text = cfg.read_text().replace("    default_backend farm\n", f"    option httplog\n    log {target} local0\n"
                                       "    default_backend farm\n", 1)
        cfg.write_text(text)
    p = subprocess.run(["haproxy", "-c", "-f", str(cfg)], check=False, capture_output=True, text=True)
    if p.returncode != 0:
        run.die(f"haproxy -c rejected {cfg.name}:\n{p.stdout}{p.stderr}")
    return cfg


def check(cfg: Path) -> None:
    p = subprocess.run(run.splicer_command() + ["-c", str(cfg), "--check"], check=False,
                       capture_output=True, text=True)
    if p.returncode != 0:
        run.die(f"splicer --check rejected {cfg.name}:\n{p.stdout}{p.stderr}")


def measure(svc: run.Service, port: int, conns: int, duration: int) -> dict:
    before = svc.ticks()
    r = run.run_wrk(port, "/" + FILE, conns, duration)
    ticks = svc.ticks() - before
    r.pop("output", None)
    r["cpu_s"] = ticks / run.CLK_TCK
    if r.get("requests"):
        r["cpu_us_per_req"] = r["cpu_s"] * 1e6 / r["requests"]
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="rounds, each measuring every config (default 5)")
    ap.add_argument("--duration", type=int, default=10, help="seconds of wrk per measurement (default 10)")
    ap.add_argument("--conns", type=int, default=50, help="keep-alive connections (default 50)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory")
    ap.add_argument("--together", action="store_true",
                    help="measure every configuration at once in each round (see the docstring)")
    ap.add_argument("--configs-only", type=Path, metavar="DIR",
                    help="write the configs into DIR, check them, and exit")
    args = ap.parse_args(argv)

    if args.configs_only is not None:
        args.configs_only.mkdir(parents=True, exist_ok=True)
        for name in PORTS:
            cfg = config(name, args.configs_only)
            check(cfg)
            print(f"{cfg}: splicer --check accepted it")
        return 0

    for tool in ("nginx", "wrk", "taskset", "socat"):
        if shutil.which(tool) is None:
            run.die(f"{tool} is not installed")
    ports = dict(PORTS, **(HAPROXY_PORTS if shutil.which("haproxy") else {}))
    for port in (*run.ORIGIN_PORTS, *ports.values()):
        if not run.port_free(port):
            run.die(f"port {port} is in use")
    workdir = Path(tempfile.mkdtemp(prefix="splicer-logging-"))
    os.chmod(workdir, 0o755)  # nginx workers (user nobody) read the docroot
    samples: dict[str, list[dict]] = {name: [] for name in ports}
    counters: dict[str, dict | None] = {}
    lines = 0
    try:
        run.make_files(workdir / "www", {FILE: 1 << 10})
        run.start_origin(workdir)
        run.Service("syslog-sink", ["socat", "-u", f"UDP4-RECV:{SYSLOG_PORT},bind=127.0.0.1,rcvbuf=8388608",
                                    "OPEN:/dev/null"], run.CPU_CLIENT, workdir)
        run.Service("syslog-tcp-sink", ["socat", "-u", f"TCP4-LISTEN:{SYSLOG_TCP_PORT},bind=127.0.0.1,reuseaddr,fork",
                                        "OPEN:/dev/null"], run.CPU_CLIENT, workdir)
        services = {}
        for name in PORTS:
            cfg = config(name, workdir)
            check(cfg)
            services[name] = run.start_splicer(f"splicer-{name}", cfg, workdir)
            services[name].wait_port(PORTS[name])
        for name in [n for n in HAPROXY_PORTS if n in ports]:
            cfg = haproxy_config(name, workdir)
            services[name] = run.Service(name, ["haproxy", "-db", "-f", str(cfg)], run.CPU_PROXY, workdir)
            services[name].wait_port(ports[name])
        order = list(ports)
        for rnd in range(args.rounds):
            if args.together:  # one wrk per configuration, all at once (threads wait on them)
                with ThreadPoolExecutor(len(order)) as pool:
                    futures = {name: pool.submit(measure, services[name], ports[name], args.conns, args.duration)
                               for name in order}
                got = {name: f.result() for name, f in futures.items()}
            else:
                got = {name: measure(services[name], ports[name], args.conns, args.duration) for name in order}
            for name in order:
                r = got[name]
                r["round"] = rnd
                samples[name].append(r)
                run.log(f"round {rnd + 1}/{args.rounds} {name}: {r.get('cpu_us_per_req', float('nan')):.2f} "
                        f"µs/req, {r.get('wrk_req_s') or 0:.0f} req/s, {r.get('errors', 1)} errors")
            order = order[1:] + order[:1]
        for name in PORTS:
            st = (run.splicer_stats(services[name]) or {}).get("counters", {})
            counters[name] = {"sent": int(st.get("log.sent", 0)), "dropped": int(st.get("log.dropped", 0))}
        with open(workdir / "access.log", "rb") as f:
            lines = sum(1 for _ in f)
        args.out.mkdir(parents=True, exist_ok=True)
        for name in ports:
            shutil.copy(workdir / f"logging-{name}.cfg", args.out / f"logging-{name}.cfg")
    finally:
        run.stop_all()

    med = {}
    for name, rs in samples.items():
        vals = [r["cpu_us_per_req"] for r in rs if "cpu_us_per_req" in r]
        rps = [r["wrk_req_s"] for r in rs if r.get("wrk_req_s")]
        med[name] = {"cpu_us_per_req": statistics.median(vals) if vals else None,
                     "req_s": statistics.median(rps) if rps else None}
    base = med["nolog"]["cpu_us_per_req"]

    def versus(name: str, ref: str) -> float | None:
        """name's cost against ref's, in %: of the medians, or (--together) the median of
        the rounds' own ratios."""
        if not args.together:
            a, b = med[ref]["cpu_us_per_req"], med[name]["cpu_us_per_req"]
            return (b / a - 1) * 100 if a and b else None
        ratios = [y["cpu_us_per_req"] / x["cpu_us_per_req"] for x, y in zip(samples[ref], samples[name])
                  if x.get("cpu_us_per_req") and y.get("cpu_us_per_req")]
        return (statistics.median(ratios) - 1) * 100 if ratios else None
    md = ["| config | proxy CPU µs per request | vs nolog | req/s | lines sent | dropped |", "|---|---|---|---|---|---|"]
    for name in PORTS:
        m, c = med[name], counters.get(name) or {}
        if not m["cpu_us_per_req"]:
            md.append(f"| {name} | - | - | - | - | - |")
            continue
        vs = "" if name == "nolog" or not base else f"{versus(name, 'nolog'):+.1f} %"
        md.append(f"| {name} | {m['cpu_us_per_req']:.2f} | {vs} | {m['req_s']:.0f} | "
                  f"{c.get('sent', '-') if name != 'nolog' else '-'} | {c.get('dropped', '-') if name != 'nolog' else '-'} |")
    hbase = (med.get("haproxy-nolog") or {}).get("cpu_us_per_req")
    for name in [n for n in HAPROXY_PORTS if n in ports] if hbase else ():
        m = med[name]
        if not m["cpu_us_per_req"]:
            md.append(f"| {name} | - | - | - | - | - |")
            continue
        vs = "" if name == "haproxy-nolog" else f"{versus(name, 'haproxy-nolog'):+.1f} % (vs haproxy-nolog)"
        md.append(f"| {name} | {m['cpu_us_per_req']:.2f} | {vs} | {m['req_s']:.0f} | - | - |")
    wrk_file = sum(r.get("requests") or 0 for r in samples["file"])
    errors = sum(r.get("errors") or 0 for rs in samples.values() for r in rs)
    if errors:
        md.append(f"\nINVALID: {errors} requests failed (non-2xx/3xx or socket errors); "
                  "the figures above are not a measurement")
    md.append(f"\nThe file holds {lines} lines for {wrk_file} requests wrk counted on `file` (the "
              f"difference: wrk's cut-off requests and the port probes). {args.rounds} rounds of "
              f"{args.duration} s, {args.conns} connections, median"
              + (" of the rounds' ratios, every configuration measured at once (--together)" if args.together
                 else "") + "; target: at most +15 %.")
    text = "\n".join(md) + "\n"
    (args.out / "logging.md").write_text(text)
    (args.out / "logging.json").write_text(json.dumps({"samples": samples, "medians": med, "log": counters,
                                                        "file_lines": lines}, indent=2))
    print(text)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
