#!/usr/bin/env python3
"""A/B: this checkout's splicer against another checkout's, side by side, CPU per request.

    git worktree add /tmp/base af506d6 && (cd /tmp/base && python setup.py build_ext --inplace)
    python benchmarks/ab.py --base /tmp/base                 # 3 rounds of 5 s per load
    python benchmarks/ab.py --base /tmp/base --rounds 5 --duration 8

Both splicers run the same configuration (templates/splicer.cfg) on CPU 1 in front of the same
nginx origin on CPU 0, as run.py's, and wrk (CPU 0) loads one at a time, the two alternated in
every round (order swapped each round) on four loads: `repeated` (wrk's one head, 1 KiB
GETs), `browser-unique` and `api-post-unique` (run.py's (f) and (g): every head unique), and
`new-conn` (1 KiB GETs, a new connection per request: run.py's (d)). The
figure is the worker's CPU time (utime + stime of the process tree, /proc) per request, the
median of the rounds, and cur / base. Running the other checkout needs only its built engine:
its `splicer` is imported through PYTHONPATH. Uses 127.0.0.1 ports 19301-19302 (origin) and
19381-19382; needs nginx, wrk and taskset.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (run.py's origin, splicer and process helpers)

LOADS = {"repeated": ("/1k.bin", None), "browser-unique": ("/1k.bin", "wrk/browser_unique.lua"),
         "api-post-unique": ("/upload", "wrk/api_post_unique.lua"), "new-conn": ("/1k.bin", "close")}
"""load -> (path, wrk script); "close": no script, a `Connection: close` header (a new
connection per request, as run.py's 1k-close-c50)."""
ORIGIN = (19301, 19302)
PORTS = {"base": 19381, "cur": 19382}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the other checkout (its engine built in place)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    args = ap.parse_args(argv)
    base = Path(args.base).resolve()
    wd = run.checkout_bench([base], (*ORIGIN, *PORTS.values()), ORIGIN, "splicer-ab-")
    try:
        svcs = {}
        for name, pythonpath in (("base", str(base)), ("cur", str(HERE.parent))):
            run.render("splicer.cfg", wd / f"{name}.cfg", PORT=PORTS[name], ORIGIN1_PORT=ORIGIN[0],
                       ORIGIN2_PORT=ORIGIN[1])
            os.environ["PYTHONPATH"] = pythonpath
            svcs[name] = run.start_splicer(name, wd / f"{name}.cfg", wd)
            svcs[name].wait_port(PORTS[name])
        os.environ.pop("PYTHONPATH", None)
        samples: dict[tuple[str, str], list[float]] = {}
        for r in range(args.rounds):
            for load, (path, script) in LOADS.items():
                for name in (("base", "cur") if r % 2 == 0 else ("cur", "base")):
                    svc = svcs[name]
                    t0 = svc.ticks()
                    cmd = ["taskset", "-c", str(run.CPU_CLIENT), "wrk", "-t1", "-c50", f"-d{args.duration}s"]
                    if script == "close":
                        cmd += ["-H", "Connection: close"]
                    elif script:
                        cmd += ["-s", str(HERE / script)]
                    out = subprocess.run(cmd + [f"http://127.0.0.1:{PORTS[name]}{path}"], capture_output=True,
                                         text=True, check=False).stdout
                    time.sleep(0.2)  # let the worker finish with the connections
                    ticks = svc.ticks() - t0
                    m = re.search(r"(\d+) requests in", out)
                    if not m or "Non-2xx" in out or "Socket errors" in out or not svc.alive():
                        run.die(f"{name} {load}: wrk failed or saw errors:\n{out}")
                    us = ticks * 1e6 / os.sysconf("SC_CLK_TCK") / int(m.group(1))
                    samples.setdefault((load, name), []).append(us)
                    run.log(f"round {r + 1} {load:16s} {name:4s} {us:7.1f} us/request")
        print(f"\n| load | base µs/request | cur µs/request | cur / base |  (median of {args.rounds} rounds)")
        print("|---|---|---|---|")
        for load in LOADS:
            b = sorted(samples[(load, "base")])[args.rounds // 2]
            c = sorted(samples[(load, "cur")])[args.rounds // 2]
            print(f"| {load} | {b:.1f} | {c:.1f} | {c / b:.2f} |")
        return 0
    finally:
        run.stop_all()
        shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
