#!/usr/bin/env python3
"""Where splicing starts to pay for chunked bodies: splicer's proxy CPU, spliced vs copied, by chunk size.

    python benchmarks/chunk_crossover.py [--rounds 3] [--duration 3] [--out benchmarks/results]

A chunked response body is relayed by Mover.move_chunked: the size lines and the CRLF after
each chunk are read and forwarded in Python, and each chunk's data goes through Mover.move()
with the direction's SplicePolicy, so the splice-or-copy decision (and its fixed cost) is
taken once per chunk, not once per body. This measures that per chunk size.

Origin: benchmarks/chunkorigin.c (compiled here, like bulkget), pinned to CPU 0, answers
`GET /c/S` with the same 4 MiB body of random bytes (--body-mib) as `Transfer-Encoding:
chunked` in chunks of exactly S bytes (S = 4 KiB .. 1 MiB), keep-alive, from a memfd with
sendfile(2). Two splicer instances (nbthread 1, tune.pipesize 1048576, crossover.py's
configuration) run side by side on CPU 1:

    A  option splice-request + option splice-response: the whole body is one engine job
       (SPL_JOB_CHUNKED): the engine thread peeks each size line, checks it, and splices
       lines and chunk data (socket -> pipe -> socket) with no Python step per chunk;
    B  no splice option: every chunk is copied through user space.

For every chunk size bulkget (CPU 0) fetches /c/S on 8 keep-alive connections for --duration
seconds through A and then through B (B first in even rounds); the proxy's CPU (utime+stime
of its process tree from /proc) is divided by the requests served and by the GiB of body data
moved. The table shows medians over --rounds rounds; B - A is the CPU saved by splicing. The
crossover is the smallest chunk size from which splicing costs less than copying at every
larger size measured too. Checks: bulkget counts the chunks and framing bytes it received
(so the chunks reached the client as the origin cut them), and splicer's counters (the master CLI's show counters)
show that A spliced the whole body (framing and data: one engine job per body, which reads
the size lines itself) and that B copied everything.

Outputs (in --out): chunk_crossover.md (also printed) and chunk_crossover.json (every raw
sample). Exit status: 0 on success, 1 when a sample had errors or a check failed, 2 when it
could not run. Uses 127.0.0.1 ports 19221-19222 (origin) and 19225-19226 (splicer A and B).
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# benchmarks/ is sys.path[0] when this script runs
import crossover as xo  # benchmarks/crossover.py: one sample, medians, crossover
import run as bench  # benchmarks/run.py: processes, bulkget, counters, report parts
from crossover import CONNS, VARIANTS, size_label
from run import BUILD, CPU_CLIENT, CPU_PROXY, GIB, Service, fmt, log

HERE = bench.HERE
ORIGIN_SRC = HERE / "chunkorigin.c"
ORIGIN_BIN = BUILD / "chunkorigin"
ORIGIN_PORTS = (19221, 19222)
PORTS = {"A": 19225, "B": 19226}
CHUNKS = [n << 10 for n in (4, 8, 16, 32, 64, 128, 256)] + [1 << 20]
BODY = "body.bin"


def name_of(chunk: int) -> str:
    """A chunk size's path without the leading slash (the origin serves /c/<bytes>); it is also
    the sample's `file`, under which crossover.py's SIZES must know the chunk size."""
    return f"c/{chunk}"


def chunk_layout(total: int, chunk: int) -> tuple[int, int]:
    """(data chunks, framing bytes) of a chunked body of `total` bytes cut into `chunk`-byte
    chunks: a "<hex size>\\r\\n" line and a CRLF per chunk, then "0\\r\\n\\r\\n" (no trailers)."""
    full, rest = divmod(total, chunk)
    framing = full * (len(f"{chunk:x}") + 4) + (len(f"{rest:x}") + 4 if rest else 0) + 5
    return full + (1 if rest else 0), framing


def build_origin() -> None:
    BUILD.mkdir(exist_ok=True)
    cmd = ["gcc", "-O2", "-Wall", "-Wextra", "-o", str(ORIGIN_BIN), str(ORIGIN_SRC)]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if p.returncode != 0 or p.stderr.strip():
        bench.die(f"{' '.join(cmd)} failed or warned:\n{p.stderr}")


def sample(svc: Service, variant: str, port: int, chunk: int, total: int, duration: float, tail: float,
           last: dict | None) -> dict:
    """crossover.py's sample (bulkget on CONNS connections, proxy CPU and counter deltas) of
    /c/<chunk>, with the per-GiB and per-chunk figures and the chunk checks added."""
    s = xo.sample(svc, port, name_of(chunk), duration, tail, last)
    s["chunk"] = chunk
    raw, d = s["raw"], s.get("counters")
    nchunks, framing = chunk_layout(total, chunk)
    reqs = raw.get("requests") or 0
    if reqs and raw.get("body_bytes"):
        s["cpu_s_per_gib"] = s["proxy_cpu_s"] / (raw["body_bytes"] / GIB)
        s["cpu_us_per_chunk"] = s["proxy_cpu_s"] * 1e6 / (reqs * nchunks)
    checks: list[str] = []
    if reqs and "client_error" not in raw and not s.get("errors"):
        for key, want in (("chunked", reqs), ("chunks", reqs * nchunks), ("framing_bytes", reqs * framing),
                          ("body_bytes", reqs * total)):
            if raw.get(key) != want:
                checks.append(f"bulkget {key} {raw.get(key)}, expected {want} ({reqs} responses of {nchunks} "
                              f"chunks of {chunk} bytes)")
    if d:
        s["engine_jobs"] = int(d.get("engine.jobs_done", 0))
        s["loop_splice_calls"] = int(d.get("pipes.splice_calls", 0))
        if reqs:
            s["engine_jobs_per_chunk"] = s["engine_jobs"] / (reqs * nchunks)
        data, frame = raw.get("body_bytes", 0), reqs * framing
        # A: the whole body is one engine job (SPL_JOB_CHUNKED) that splices framing and data
        want = {"A": (data + frame, 0), "B": (0, data + frame)}[variant]
        if (s.get("spliced"), s.get("copied")) != want and not s.get("errors"):
            checks.append(f"splicer counted spliced {s.get('spliced')} / copied {s.get('copied')} bytes, expected "
                          f"{want[0]} / {want[1]} (chunk data {data} + framing {frame})")
    s["chunk_checks"] = checks
    return s


def summarize(samples: list[dict], chunks: list[int]) -> dict:
    """crossover.py's medians per chunk size, plus CPU per GiB and per chunk."""
    names = [name_of(c) for c in chunks]
    summary = xo.summarize(samples, names)
    for c, name in zip(chunks, names, strict=True):
        row = summary[name]
        row["chunk"] = c
        for v in VARIANTS:
            ss = [s for s in samples if s["file"] == name and s["variant"] == v]
            for m in ("cpu_s_per_gib", "cpu_us_per_chunk", "engine_jobs_per_chunk"):
                vals = [s[m] for s in ss if s.get(m) is not None]
                row[v][m] = statistics.median(vals) if vals else None
                row[v][m + "_all"] = vals
        a, b = row["A"], row["B"]
        row["saved_s_per_gib"] = (b["cpu_s_per_gib"] - a["cpu_s_per_gib"]
                                  if a["cpu_s_per_gib"] is not None and b["cpu_s_per_gib"] is not None else None)
        row["saved_us_per_chunk"] = (b["cpu_us_per_chunk"] - a["cpu_us_per_chunk"]
                                     if a["cpu_us_per_chunk"] is not None and b["cpu_us_per_chunk"] is not None
                                     else None)
    return summary


def markdown(res: dict) -> str:
    cfg, summ = res["config"], res["summary"]
    total = cfg["body_bytes"]
    out = ["# splice crossover for chunked bodies: splicer's CPU, spliced (A) vs copied (B), by chunk size", ""]
    out += bench.problems_md(res["problems"])
    out += [(f"Run {res['started']} to {res['finished']} (UTC): {cfg['rounds']} round(s), {cfg['duration_s']:g} s "
            f"per sample, bulkget on {CONNS} keep-alive connections, A and B interleaved (B first in even rounds); "
            f"figures are medians over the rounds. Every response: 200, `Transfer-Encoding: chunked`, a "
            f"{size_label(total)} body cut into chunks of exactly the chunk size (chunkorigin, sendfile from a "
            f"memfd). splicer (nbthread 1, tune.pipesize 1048576) on CPU {CPU_PROXY}, client and origin on CPU "
            f"{CPU_CLIENT}. A: `option splice-request` + `option splice-response` (every chunk of 4 KiB and more "
            f"spliced); B: no splice option (every chunk copied in user space)."), "",
            ("| chunk size | chunks / response | A req/s | B req/s | A CPU-s/GiB | B CPU-s/GiB | A CPU µs/req | "
            "B CPU µs/req | **B − A µs/req** (saved by splicing) | B − A µs/chunk | B / A | rounds A < B | "
            "A / B CPU % | spliced share A / B | engine jobs per chunk A | errors A / B |"),
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in summ.values():
        a, b = row["A"], row["B"]

        def share(r):
            t = r["spliced"] + r["copied"]
            return f"{100 * r['spliced'] / t:.1f}%" if t else "—"

        def errs(r):
            return f"**{r['errors']}{' DIED' if r['dead'] else ''}**" if r["errors"] or r["dead"] else "0"
        saved, rat, per_chunk = row["saved_us"], row["ratio_b_over_a"], row["saved_us_per_chunk"]
        out.append(
            f"| {size_label(row['chunk'])} | {fmt(chunk_layout(total, row['chunk'])[0])} | {fmt(a['req_s'])} | "
            f"{fmt(b['req_s'])} | {fmt(a['cpu_s_per_gib'])} | {fmt(b['cpu_s_per_gib'])} | {fmt(a['cpu_us_per_req'])} | "
            f"{fmt(b['cpu_us_per_req'])} | **{'—' if saved is None else f'{saved:+,.0f}'}** | "
            f"{'—' if per_chunk is None else f'{per_chunk:+.1f}'} | {'—' if rat is None else f'{rat:.2f}'} | "
            f"{row['splice_cheaper_rounds']}/{len(row['saved_us_per_round'])} | "
            f"{fmt(a['cpu_pct'])} / {fmt(b['cpu_pct'])} | {share(a)} / {share(b)} | "
            f"{fmt(a['engine_jobs_per_chunk'])} | {errs(a)} / {errs(b)} |")
    x, xr, cur = res["crossover"], res["crossover_robust"], res["splice_auto_min"]
    xb, xrb = res["crossover_bytes"], res["crossover_robust_bytes"]
    out += ["", f"**Crossover (medians): {size_label(xb) if x else 'none in the chunk sizes measured'}**: the "
            "smallest chunk size from which splicing the chunks (A) costs less proxy CPU than copying them (B), at "
            "that size and every larger one measured."
            + (f" Stricter (every A sample below every B sample, all rounds): "
               f"{size_label(xrb) if xr else 'none in the chunk sizes measured'}." if cfg["rounds"] > 1 else ""),
            "",
            f"splicer's current `CHUNK_SPLICE_AUTO_MIN` (splicer/runtime/transfer.py; `option splice-auto` splices a "
            f"chunk's data when the chunk is at least this big): "
            f"{'unknown' if cur is None else f'{cur} bytes ({size_label(cur)})'}."
            + (f" This measurement suggests chunks of {xb} bytes ({size_label(xb)}) and more." if x else
               " This measurement found no chunk size where splicing is cheaper."), "",
            ("Figures: proxy CPU is utime+stime of splicer's whole process tree (master, worker, engine thread) from "
            "/proc/PID/stat, read before and after each sample, divided by the requests bulkget completed (every "
            f"one a 200 with its whole chunked body), by the GiB of chunk data, or by the chunks ({size_label(total)} "
            "/ chunk size per response). B − A > 0 means splicing saved CPU; B / A > 1 the same as a ratio. "
            "\"rounds A < B\" counts the rounds (A and B measured back to back) where A cost less. CPU % is of "
            "the proxy's one core: at 100 % the proxy set the pace, below it CPU 0 (bulkget + origin) did. "
            "Spliced share is splicer's own `spliced` / (`spliced` + `copied`) byte counters over the samples: in "
            "A the engine relays the whole chunked body, framing included, through its pipe (100 %). Engine jobs "
            "per chunk: the engine thread's `jobs_done` over the chunks relayed (1 / chunks per response: one "
            "job per body, the engine reads every size line itself). CPU time is counted in clock ticks (10 ms) "
            "and the machine may be shared: small differences mean little."), ""]
    out += [*bench.machine_md(res["machine"]), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per sample (default 3)")
    ap.add_argument("--chunks", help="comma-separated chunk sizes, such as 96k,192k,512k (default: "
                    + ",".join(f"{c >> 10}k" if c < 1 << 20 else f"{c >> 20}m" for c in CHUNKS) + ")")
    ap.add_argument("--body-mib", type=int, default=4, help="body size of every response in MiB (default 4)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    ap.add_argument("--workdir", type=Path, help="parent of the temporary directory (default: system temp)")
    ap.add_argument("--keep-workdir", action="store_true", help="keep the files, configs and logs of the run")
    args = ap.parse_args(argv)
    total = args.body_mib << 20
    if args.rounds < 1 or args.duration <= 0 or total <= 0:
        bench.die("--rounds, --duration and --body-mib must be positive")
    chunks = CHUNKS
    if args.chunks:
        chunks = []
        for word in args.chunks.split(","):
            m = re.fullmatch(r"(\d+)([km])", word.strip().lower())
            if not m or int(m.group(1)) == 0:
                bench.die(f"bad chunk size {word!r} (expected a number of KiB or MiB, such as 192k or 1m)")
            chunks.append(int(m.group(1)) << (10 if m.group(2) == "k" else 20))
        chunks = sorted(set(chunks))
    if max(chunks) > total:
        bench.die(f"chunk size {size_label(max(chunks))} is larger than the body ({size_label(total)})")
    xo.SIZES.update({name_of(c): c for c in chunks})  # xo.sample/summarize look the size up there
    tail = 30.0

    machine = xo.check_machine(("taskset", "gcc"), "util-linux gcc", ORIGIN_PORTS + tuple(PORTS.values()))

    started = dt.datetime.now(dt.UTC)
    n = args.rounds * len(chunks) * len(VARIANTS)
    log(f"chunked splice crossover: {args.rounds} round(s) x {len(chunks)} chunk sizes x A/B = {n} samples of "
        f"{args.duration:g} s, about {(n * (args.duration + 1.2) + 15) / 60:.0f} min")
    bench.build_bulkget()
    build_origin()
    workdir = Path(tempfile.mkdtemp(prefix="splicer-chunk-crossover-", dir=args.workdir))
    os.chmod(workdir, 0o755)
    problems: list[str] = []
    samples: list[dict] = []
    configs: dict[str, str] = {}
    preflight: dict = {"bodies": {}, "affinity": {}}
    try:
        digest = bench.make_files(workdir / "www", {BODY: total})[BODY]
        origin = Service("chunkorigin", [str(ORIGIN_BIN), str(workdir / "www" / BODY),
                                         ",".join(map(str, ORIGIN_PORTS)), *map(str, chunks)], CPU_CLIENT, workdir)
        for p in ORIGIN_PORTS:
            origin.wait_port(p)
        svcs: dict[str, Service] = {}
        for v, (label, splice) in VARIANTS.items():
            cfg = workdir / f"splicer-{v}.cfg"
            configs[cfg.name] = bench.render("crossover-splicer.cfg", cfg, PORT=PORTS[v], SPLICE=splice,
                                             ORIGIN1_PORT=ORIGIN_PORTS[0], ORIGIN2_PORT=ORIGIN_PORTS[1])
            svcs[v] = bench.start_splicer(f"splicer-{v}-{label}", cfg, workdir)
        for v, svc in svcs.items():
            svc.wait_port(PORTS[v])
        log(f"started chunkorigin pid {origin.pid} (CPU {CPU_CLIENT}, ports {ORIGIN_PORTS}), "
            + ", ".join(f"splicer {v} ({VARIANTS[v][0]}) :{PORTS[v]} pid {s.pid}" for v, s in svcs.items())
            + f" (CPU {CPU_PROXY})")

        # preflight: whole, correct bodies from the origin and through both splicers; pinning
        names = {name_of(c): total for c in chunks}
        digests = dict.fromkeys(names, digest)
        for who, port in (("origin", ORIGIN_PORTS[0]), *((v, PORTS[v]) for v in svcs)):
            preflight["bodies"][who] = r = bench.check_bodies(port, digests, names)
            problems += [f"preflight: {who} returned a wrong body for /{k}: {res}" for k, res in r.items()
                         if not res["ok"]]
        for v, svc in svcs.items():
            preflight["affinity"][v] = aff = bench.tree_affinity(svc.pid)
            if set(aff.values()) != {str(CPU_PROXY)}:
                problems.append(f"splicer {v} is not pinned to CPU {CPU_PROXY} only: {aff}")
        preflight["affinity"]["origin"] = bench.tree_affinity(origin.pid)
        log("preflight: bodies " + ", ".join(
            f"{w} {'ok' if all(x['ok'] for x in r.values()) else 'WRONG'}" for w, r in preflight["bodies"].items()))
        for v in svcs:  # warm-up
            bench.run_bulkget(PORTS[v], "/" + name_of(chunks[-1]), CONNS, 0.5, 10)
        last = {v: bench.splicer_stats(svcs[v]) for v in svcs}

        i = 0
        for rnd in range(1, args.rounds + 1):
            order = list(VARIANTS) if rnd % 2 else list(VARIANTS)[::-1]
            for c in chunks:
                for v in order:
                    i += 1
                    s = sample(svcs[v], v, PORTS[v], c, total, args.duration, tail, last[v])
                    last[v] = s.pop("_stats", None) or last[v]
                    s.update(round=rnd, variant=v)
                    samples.append(s)
                    err = s["raw"].get("client_error") or s["raw"].get("died")
                    log(f"[{i:>2}/{n}] round {rnd} {size_label(c):>7} chunks {v} ({VARIANTS[v][0]}): "
                        f"{fmt(s.get('req_s'))} req/s, {fmt(s.get('cpu_us_per_req'))} CPU µs/req, "
                        f"{fmt(s.get('cpu_s_per_gib'))} CPU-s/GiB, CPU {fmt(s.get('cpu_pct'))} %, "
                        f"spliced {fmt(s.get('spliced'))} B, copied {fmt(s.get('copied'))} B, engine jobs "
                        f"{fmt(s.get('engine_jobs'))}" + (f"  ERRORS {s['errors']}" if s.get("errors") else "")
                        + (f"  ({err})" if err else "") + (f"  CHECK: {s['chunk_checks']}" if s["chunk_checks"]
                                                           else ""))

        for s in samples:
            where = f"{size_label(s['chunk'])} chunks {s['variant']} round {s['round']}"
            if s.get("errors"):
                problems.append(f"{where}: {s['errors']} error(s) " + str(
                    {k: s["raw"].get(k) for k in ("client_error", "died", "bad_status", "short_bodies", "bad_heads",
                                                  "conn_errors", "unfinished") if s["raw"].get(k)}))
            if s.get("counter_errors"):
                problems.append(f"{where}: splicer counted {s['counter_errors']} error(s)/4xx/5xx: {s['counters']}")
            if s.get("process_tree_changed"):
                problems.append(f"{where}: splicer's process tree changed: {s['process_tree_changed']}")
            if s.get("log_lines"):
                problems.append(f"{where}: splicer logged {len(s['log_lines'])} line(s), first: "
                                f"{s['log_lines'][0][:300]}")
            if "counters" in s and s["counters"] is None and not s.get("dead"):
                problems.append(f"{where}: no answer to show counters on the master CLI")
            problems += [f"{where}: {c}" for c in s["chunk_checks"]]
        for v, svc in svcs.items():
            if not svc.alive():
                problems.append(f"splicer {v} died (exit status {svc.popen.returncode}): {svc.log_tail(10)}")
        if not origin.alive():
            problems.append(f"chunkorigin died (exit status {origin.popen.returncode}): {origin.log_tail(10)}")
        machine["loadavg at end"] = Path("/proc/loadavg").read_text().strip()
    finally:
        bench.stop_all()
        if args.keep_workdir:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    summary = summarize(samples, chunks)
    x = xo.crossover(summary, lambda r: r["saved_us"] is not None and r["saved_us"] > 0)
    xr = xo.crossover(summary, lambda r: r["separated"])
    finished = dt.datetime.now(dt.UTC)
    res = {
        "started": started.strftime("%Y-%m-%d %H:%M:%S"), "finished": finished.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine,
        "config": {"rounds": args.rounds, "duration_s": args.duration, "conns": CONNS, "bulk_tail_s": tail,
                   "body_bytes": total, "chunks": chunks,
                   "layout": {name_of(c): dict(zip(("chunks", "framing_bytes"), chunk_layout(total, c), strict=True))
                              for c in chunks},
                   "variants": {k: v[0] for k, v in VARIANTS.items()},
                   "ports": {"origin": ORIGIN_PORTS, **PORTS}, "cpu_proxy": CPU_PROXY, "cpu_client_origin": CPU_CLIENT},
        "configs": configs, "preflight": preflight, "problems": problems,
        "crossover": x, "crossover_bytes": summary[x]["chunk"] if x else None,
        "crossover_robust": xr, "crossover_robust_bytes": summary[xr]["chunk"] if xr else None,
        "splice_auto_min": xo.splice_auto_min("CHUNK_SPLICE_AUTO_MIN"), "summary": summary, "samples": samples,
    }
    bench.write_results(args.out, "chunk_crossover", res, markdown(res))
    log(f"crossover: {size_label(res['crossover_bytes']) + ' chunks' if x else 'none in the chunk sizes measured'}; "
        f"splicer's CHUNK_SPLICE_AUTO_MIN is {res['splice_auto_min']}")
    log(f"wrote {args.out / 'chunk_crossover.md'}, {args.out / 'chunk_crossover.json'} in "
        f"{(finished - started).total_seconds() / 60:.1f} min")
    return bench.report_problems("chunk_crossover.py", problems)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit as exc:
        if isinstance(exc.code, str):  # bench.die(): could not run
            print(exc.code, file=sys.stderr)
            sys.exit(2)
        raise
    finally:
        bench.stop_all()
