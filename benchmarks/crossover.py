#!/usr/bin/env python3
"""Where splicing starts to pay: splicer's proxy CPU per request, spliced vs copied, by body size.

    python benchmarks/crossover.py [--rounds 3] [--duration 3] [--out benchmarks/results]

Two splicer instances (nbthread 1, tune.pipesize 1048576, the rest as run.py's splicer
target) run side by side on CPU 1 in front of the same nginx origin (CPU 0):

    A  option splice-request + option splice-response: every body of at least 4 KiB
       (MIN_SPLICE_FORWARD) goes socket -> pipe -> socket in the kernel;
    B  no splice option: every body is copied through user space.

For every body size (4 KiB .. 1 MiB) bulkget fetches the file on 8 keep-alive connections for
--duration seconds through A and then through B (B first in even rounds); the proxy's CPU
(utime+stime of its process tree from /proc) is divided by the requests served. The tables
show the median over --rounds rounds. B - A is the CPU saved per request by splicing; the
crossover is the smallest size from which splicing costs less than copying at every larger
size measured too. splicer's own counters (the master CLI's show counters) confirm that A spliced and B copied every
body.

Outputs (in --out): crossover.md (also printed) and crossover.json (every raw sample). Exit
status: 0 on success, 1 when a sample had errors or a check failed, 2 when it could not run.
Uses 127.0.0.1 ports 19201-19202 (origin) and 19210-19211 (splicer A and B).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402  (benchmarks/run.py: processes, origin, bulkget, counters)
from run import CLK_TCK, CPU_CLIENT, CPU_PROXY, HOST, REPO, Service, fmt, log  # noqa: E402

HERE = bench.HERE
ORIGIN_PORTS = (19201, 19202)
PORTS = {"A": 19210, "B": 19211}
VARIANTS = {
    "A": ("splice", "    option splice-request\n    option splice-response"),
    "B": ("copy", "    no option splice-auto  # with no option named, splicer would splice-auto"),
}
SIZES = {f"{n}k.bin": n << 10 for n in (4, 8, 16, 32, 64, 128, 256)} | {"1m.bin": 1 << 20}
CONNS = 8
FE = "frontends.www."


def size_label(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n >> 10} KiB"


def splice_auto_min(name: str = "SPLICE_AUTO_MIN") -> int | None:
    """splicer's current SPLICE_AUTO_MIN, or another constant of transfer.py such as
    CHUNK_SPLICE_AUTO_MIN (read from the source, not imported: it may be edited)."""
    try:
        text = (REPO / "splicer" / "runtime" / "transfer.py").read_text()
    except OSError:
        return None
    m = re.search(rf"^{name}\s*=\s*([\d_]+)", text, re.MULTILINE)
    return int(m.group(1).replace("_", "")) if m else None


def check_machine(tools: tuple[str, ...], packages: str, ports: tuple[int, ...]) -> dict:
    """Checks before a side-by-side run: CPUs for client and proxy, the tools, free ports.
    Then pins this process (the client side) to CPU_CLIENT and makes SIGTERM an exit.

    Returns:
        run.py's machine_info() for the report. Dies (exit 2) when a check fails.
    """
    if not {CPU_CLIENT, CPU_PROXY} <= os.sched_getaffinity(0):
        bench.die(f"needs CPUs {CPU_CLIENT} and {CPU_PROXY}; allowed here: {sorted(os.sched_getaffinity(0))}")
    for tool in tools:
        if not shutil.which(tool):
            bench.die(f"{tool} not found (apt-get install -y {packages})")
    busy = [p for p in ports if not bench.port_free(p)]
    if busy:
        bench.die(f"ports already in use on {HOST}: {busy}")
    machine = bench.machine_info()
    os.sched_setaffinity(0, {CPU_CLIENT})

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    return machine


def sample(svc: Service, port: int, name: str, duration: float, tail: float, last: dict | None) -> dict:
    """One bulkget run of `name` on CONNS connections; proxy CPU and counter deltas around it."""
    s: dict = {"file": name, "size": SIZES[name], "time": time.time()}
    if not svc.alive():
        s.update(raw={"client_error": f"{svc.name} is not running (exit status {svc.popen.returncode})",
                      "errors": 1}, errors=1, dead=True)
        return s
    tree0 = sorted(bench.proc_tree(svc.pid))
    _, log0 = bench.new_log_lines(svc, 0)
    t0 = svc.ticks()
    raw = bench.run_bulkget(port, "/" + name, CONNS, duration, tail)
    time.sleep(0.1)  # let the proxy finish the last requests' bookkeeping
    t1 = svc.ticks()
    s["raw"] = raw
    s["errors"] = raw.get("errors", 0)
    s["proxy_cpu_ticks"] = t1 - t0
    s["proxy_cpu_s"] = (t1 - t0) / CLK_TCK
    if "client_error" not in raw and raw.get("requests"):
        el = raw["elapsed"]
        s["req_s"] = raw["requests"] / el
        s["gbps"] = raw["body_bytes"] * 8 / el / 1e9
        s["cpu_us_per_req"] = s["proxy_cpu_s"] * 1e6 / raw["requests"]
        s["cpu_pct"] = 100 * s["proxy_cpu_s"] / el
    tree1 = sorted(bench.proc_tree(svc.pid)) if svc.alive() else []
    if tree1 != tree0:
        s["process_tree_changed"] = {"before": tree0, "after": tree1}
    s["log_lines"], _ = bench.new_log_lines(svc, log0)
    if not svc.alive():
        s["dead"] = True
        s["errors"] += 1
        s["raw"]["died"] = f"{svc.name} exited with status {svc.popen.returncode}: {svc.log_tail(5)}"
        return s
    now = bench.splicer_stats(svc)
    s["counters"] = d = bench.stats_delta(last, now)
    s["_stats"] = now
    if d:
        s["spliced"], s["copied"] = int(d.get(FE + "spliced", 0)), int(d.get(FE + "copied", 0))
        s["counter_errors"] = int(sum(d.get(FE + k, 0) for k in ("ereq", "econ", "eresp", "hrsp_4xx", "hrsp_5xx")))
    return s


def summarize(samples: list[dict], sizes: list[str]) -> dict:
    out: dict = {}
    for name in sizes:
        row: dict = {"size": SIZES[name]}
        for v in VARIANTS:
            ss = [s for s in samples if s["file"] == name and s["variant"] == v]
            r: dict = {"rounds": len(ss), "errors": sum(s.get("errors", 0) for s in ss),
                       "dead": any(s.get("dead") for s in ss),
                       "spliced": sum(s.get("spliced", 0) for s in ss), "copied": sum(s.get("copied", 0) for s in ss)}
            for m in ("req_s", "gbps", "cpu_us_per_req", "cpu_pct"):
                vals = [s[m] for s in ss if s.get(m) is not None]
                r[m] = statistics.median(vals) if vals else None
                r[m + "_all"] = vals
            row[v] = r
        a, b = row["A"]["cpu_us_per_req"], row["B"]["cpu_us_per_req"]
        row["saved_us"] = b - a if a is not None and b is not None else None
        row["ratio_b_over_a"] = b / a if a and b is not None else None
        # per round: A and B of one round ran next to each other
        pairs = []
        for rnd in sorted({s["round"] for s in samples}):
            sa = [s for s in samples if s["file"] == name and s["round"] == rnd and s["variant"] == "A"]
            sb = [s for s in samples if s["file"] == name and s["round"] == rnd and s["variant"] == "B"]
            if sa and sb and sa[0].get("cpu_us_per_req") is not None and sb[0].get("cpu_us_per_req") is not None:
                pairs.append(sb[0]["cpu_us_per_req"] - sa[0]["cpu_us_per_req"])
        row["saved_us_per_round"] = pairs
        row["splice_cheaper_rounds"] = sum(1 for p in pairs if p > 0)
        aa, bb = row["A"]["cpu_us_per_req_all"], row["B"]["cpu_us_per_req_all"]
        row["separated"] = bool(aa and bb and max(aa) < min(bb))  # every A sample below every B sample
        out[name] = row
    return out


def crossover(summary: dict, key) -> str | None:
    """Smallest size from which key(row) holds for it and every larger size; None if never."""
    names = sorted(summary, key=lambda n: summary[n]["size"])
    found = None
    for n in reversed(names):
        if key(summary[n]):
            found = n
        else:
            break
    return found


def markdown(res: dict) -> str:
    cfg, summ = res["config"], res["summary"]
    out = ["# splice crossover: splicer's CPU per request, spliced (A) vs copied (B)", ""]
    out += bench.problems_md(res["problems"])
    out += [f"Run {res['started']} to {res['finished']} (UTC): {cfg['rounds']} round(s), {cfg['duration_s']:g} s "
            f"per sample, bulkget on {CONNS} keep-alive connections, A and B interleaved (B first in even rounds); "
            f"figures are medians over the rounds. splicer (nbthread 1, tune.pipesize 1048576) on CPU {CPU_PROXY}, "
            f"client and nginx origin on CPU {CPU_CLIENT}. A: `option splice-request` + `option splice-response` "
            f"(bodies of 4 KiB and more spliced); B: no splice option (bodies copied in user space).", "",
            "| body size | A req/s | B req/s | A CPU µs/req | B CPU µs/req | **B − A µs/req** (saved by splicing) | "
            "B / A | rounds A < B | A CPU % | B CPU % | spliced share A / B | errors A / B |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in summ.items():
        a, b = row["A"], row["B"]

        def share(r):
            t = r["spliced"] + r["copied"]
            return f"{100 * r['spliced'] / t:.0f}%" if t else "—"

        def errs(r):
            return f"**{r['errors']}{' DIED' if r['dead'] else ''}**" if r["errors"] or r["dead"] else "0"
        saved, rat = row["saved_us"], row["ratio_b_over_a"]
        out.append(f"| {size_label(row['size'])} | {fmt(a['req_s'])} | {fmt(b['req_s'])} | {fmt(a['cpu_us_per_req'])} | "
                   f"{fmt(b['cpu_us_per_req'])} | **{'—' if saved is None else f'{saved:+.1f}'}** | "
                   f"{'—' if rat is None else f'{rat:.2f}'} | "
                   f"{row['splice_cheaper_rounds']}/{len(row['saved_us_per_round'])} | {fmt(a['cpu_pct'])} | "
                   f"{fmt(b['cpu_pct'])} | {share(a)} / {share(b)} | {errs(a)} / {errs(b)} |")
    x, xr, cur = res["crossover"], res["crossover_robust"], res["splice_auto_min"]
    out += ["", f"**Crossover (medians): {size_label(SIZES[x]) if x else 'none in the sizes measured'}**: the smallest "
            "body size from which splicing (A) costs less proxy CPU per request than copying (B), at that size and "
            "every larger one measured."
            + (f" Stricter (every A sample below every B sample, all rounds): "
               f"{size_label(SIZES[xr]) if xr else 'none in the sizes measured'}." if cfg["rounds"] > 1 else ""),
            "",
            f"splicer's current `SPLICE_AUTO_MIN` (splicer/runtime/transfer.py, the `option splice-auto` threshold): "
            f"{'unknown' if cur is None else f'{cur} bytes ({size_label(cur)})'}."
            + (f" This measurement suggests {SIZES[x]} bytes ({size_label(SIZES[x])})." if x else
               " This measurement found no size where splicing is cheaper."), "",
            "Figures: proxy CPU is utime+stime of splicer's whole process tree (master, worker, engine thread) from "
            "/proc/PID/stat, read before and after each sample, divided by the requests bulkget completed (every "
            "one a 200 with its whole body). B − A > 0 means splicing saved CPU; B / A > 1 the same as a ratio. "
            "\"rounds A < B\" counts the rounds (A and B measured back to back) where A cost less. CPU % is of "
            "the proxy's one core: at 100 % the proxy set the pace, below it CPU 0 (bulkget + origin) did. "
            "Spliced share is splicer's own `spliced` / (`spliced` + `copied`) body-byte counters over the "
            "samples. CPU time is counted in clock ticks (10 ms) and the machine may be shared: small "
            "differences mean little.", ""]
    out += bench.machine_md(res["machine"]) + [""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per sample (default 3)")
    ap.add_argument("--sizes", help="comma-separated body sizes, such as 128k,192k,1m (default: "
                    + ",".join(n.removesuffix(".bin") for n in SIZES) + ")")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    ap.add_argument("--workdir", type=Path, help="parent of the temporary directory (default: system temp)")
    ap.add_argument("--keep-workdir", action="store_true", help="keep the files, configs and logs of the run")
    args = ap.parse_args(argv)
    sizes = list(SIZES)
    if args.sizes:
        sizes = []
        for word in args.sizes.split(","):
            m = re.fullmatch(r"(\d+)([km])(?:\.bin)?", word.strip().lower())
            if not m or int(m.group(1)) == 0:
                bench.die(f"bad size {word!r} (expected a number of KiB or MiB, such as 192k or 1m)")
            name = f"{int(m.group(1))}{m.group(2)}.bin"
            SIZES[name] = int(m.group(1)) << (10 if m.group(2) == "k" else 20)
            if name not in sizes:
                sizes.append(name)
        sizes.sort(key=SIZES.get)
    tail = 30.0

    machine = check_machine(("taskset", "nginx", "gcc"), "nginx util-linux gcc", ORIGIN_PORTS + tuple(PORTS.values()))

    started = dt.datetime.now(dt.UTC)
    n = args.rounds * len(sizes) * len(VARIANTS)
    log(f"splice crossover: {args.rounds} round(s) x {len(sizes)} sizes x A/B = {n} samples of "
        f"{args.duration:g} s, about {(n * (args.duration + 0.8) + 15) / 60:.0f} min")
    bench.build_bulkget()
    workdir = Path(tempfile.mkdtemp(prefix="splicer-crossover-", dir=args.workdir))
    os.chmod(workdir, 0o755)
    problems: list[str] = []
    samples: list[dict] = []
    configs: dict[str, str] = {}
    try:
        digests = bench.make_files(workdir / "www", {k: SIZES[k] for k in sizes})
        origin, configs["origin-nginx.conf"] = bench.start_origin(workdir, ORIGIN_PORTS)
        svcs: dict[str, Service] = {}
        for v, (label, splice) in VARIANTS.items():
            cfg = workdir / f"splicer-{v}.cfg"
            configs[cfg.name] = bench.render("crossover-splicer.cfg", cfg, PORT=PORTS[v], SPLICE=splice,
                                             ORIGIN1_PORT=ORIGIN_PORTS[0], ORIGIN2_PORT=ORIGIN_PORTS[1])
            svcs[v] = bench.start_splicer(f"splicer-{v}-{label}", cfg, workdir)
        for v, svc in svcs.items():
            svc.wait_port(PORTS[v])
        log(f"started origin-nginx (CPU {CPU_CLIENT}, ports {ORIGIN_PORTS}), "
            + ", ".join(f"splicer {v} ({VARIANTS[v][0]}) :{PORTS[v]} pid {s.pid}" for v, s in svcs.items())
            + f" (CPU {CPU_PROXY})")

        # preflight: whole, correct bodies through both; pinning
        preflight: dict = {"bodies": {}, "affinity": {}}
        for v, svc in svcs.items():
            preflight["bodies"][v] = r = bench.check_bodies(PORTS[v], digests, {k: SIZES[k] for k in sizes})
            for k, res in r.items():
                if not res["ok"]:
                    problems.append(f"preflight: splicer {v} returned a wrong body for {k}: {res}")
            preflight["affinity"][v] = aff = bench.tree_affinity(svc.pid)
            if set(aff.values()) != {str(CPU_PROXY)}:
                problems.append(f"splicer {v} is not pinned to CPU {CPU_PROXY} only: {aff}")
        log("preflight: bodies " + ", ".join(
            f"{v} {'ok' if all(x['ok'] for x in r.values()) else 'WRONG'}" for v, r in preflight["bodies"].items()))
        for v in svcs:  # warm-up
            bench.run_bulkget(PORTS[v], "/" + sizes[-1], CONNS, 0.5, 10)
        last = {v: bench.splicer_stats(svcs[v]) for v in svcs}

        i = 0
        for rnd in range(1, args.rounds + 1):
            order = list(VARIANTS) if rnd % 2 else list(VARIANTS)[::-1]
            for name in sizes:
                for v in order:
                    i += 1
                    s = sample(svcs[v], PORTS[v], name, args.duration, tail, last[v])
                    last[v] = s.pop("_stats", None) or last[v]
                    s.update(round=rnd, variant=v)
                    samples.append(s)
                    err = s["raw"].get("client_error") or s["raw"].get("died")
                    log(f"[{i:>2}/{n}] round {rnd} {size_label(SIZES[name]):>7} {v} ({VARIANTS[v][0]}): "
                        f"{fmt(s.get('req_s'))} req/s, {fmt(s.get('cpu_us_per_req'))} CPU µs/req, "
                        f"CPU {fmt(s.get('cpu_pct'))} %, spliced {fmt(s.get('spliced'))} B, copied "
                        f"{fmt(s.get('copied'))} B" + (f"  ERRORS {s['errors']}" if s.get("errors") else "")
                        + (f"  ({err})" if err else ""))

        for s in samples:
            where = f"{size_label(s['size'])} {s['variant']} round {s['round']}"
            if s.get("errors"):
                problems.append(f"{where}: {s['errors']} error(s) "
                                + json.dumps({k: s["raw"].get(k) for k in ("client_error", "died", "bad_status",
                                              "short_bodies", "bad_heads", "conn_errors", "unfinished")
                                              if s["raw"].get(k)}))
            if s.get("counter_errors"):
                problems.append(f"{where}: splicer counted {s['counter_errors']} error(s)/4xx/5xx: {s['counters']}")
            if s.get("process_tree_changed"):
                problems.append(f"{where}: splicer's process tree changed: {s['process_tree_changed']}")
            if s.get("log_lines"):
                problems.append(f"{where}: splicer logged {len(s['log_lines'])} line(s), first: "
                                f"{s['log_lines'][0][:300]}")
            if "counters" in s and s["counters"] is None and not s.get("dead"):
                problems.append(f"{where}: no answer to show counters on the master CLI")
            if s["variant"] == "A" and s.get("copied"):
                problems.append(f"{where}: splicer A copied {s['copied']} body bytes (expected all spliced)")
            if s["variant"] == "B" and s.get("spliced"):
                problems.append(f"{where}: splicer B spliced {s['spliced']} body bytes (expected all copied)")
        for v, svc in svcs.items():
            if not svc.alive():
                problems.append(f"splicer {v} died (exit status {svc.popen.returncode}): {svc.log_tail(10)}")
        machine["loadavg at end"] = Path("/proc/loadavg").read_text().strip()
    finally:
        bench.stop_all()
        if args.keep_workdir:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    summary = summarize(samples, sizes)
    x = crossover(summary, lambda r: r["saved_us"] is not None and r["saved_us"] > 0)
    xr = crossover(summary, lambda r: r["separated"])
    finished = dt.datetime.now(dt.UTC)
    res = {
        "started": started.strftime("%Y-%m-%d %H:%M:%S"), "finished": finished.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine,
        "config": {"rounds": args.rounds, "duration_s": args.duration, "conns": CONNS, "bulk_tail_s": tail,
                   "sizes": {k: SIZES[k] for k in sizes}, "variants": {k: v[0] for k, v in VARIANTS.items()},
                   "ports": {"origin": ORIGIN_PORTS, **PORTS}, "cpu_proxy": CPU_PROXY, "cpu_client_origin": CPU_CLIENT},
        "configs": configs, "preflight": preflight, "problems": problems,
        "crossover": x, "crossover_bytes": SIZES[x] if x else None,
        "crossover_robust": xr, "crossover_robust_bytes": SIZES[xr] if xr else None,
        "splice_auto_min": splice_auto_min(), "summary": summary, "samples": samples,
    }
    bench.write_results(args.out, "crossover", res, markdown(res))
    log(f"crossover: {size_label(SIZES[x]) + f' ({SIZES[x]} bytes)' if x else 'none in the sizes measured'}; "
        f"splicer's SPLICE_AUTO_MIN is {res['splice_auto_min']}")
    log(f"wrote {args.out / 'crossover.md'}, {args.out / 'crossover.json'} in "
        f"{(finished - started).total_seconds() / 60:.1f} min")
    return bench.report_problems("crossover.py", problems)


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        bench.stop_all()
