#!/usr/bin/env python3
"""Instructions per request: a measure of splicer's own CPU cost that the machine's noise
does not move (valgrind's callgrind counts instructions, not seconds).

    python benchmarks/instructions.py                          # this checkout, three loads
    python benchmarks/instructions.py --base /tmp/base         # and another checkout beside it
    python benchmarks/instructions.py --loads browser --requests 300,1500
    python benchmarks/instructions.py --httplog                # the frontend with `option httplog`

Wall-clock benchmarks on this shared machine swing by 15 % and more from one run to the next
(benchmarks/ab.py: an A/A comparison of one checkout with itself gave 0.97 to 1.07), so a
change worth 3 % per request cannot be seen there. This one runs splicer's worker under
`valgrind --tool=callgrind` (one worker, templates/splicer.cfg, an nginx origin), sends a
fixed number of requests from one client process, one at a time over 4 keep-alive
connections (or a new connection each), and reads the worker's instruction count (Ir) at its
exit. Two runs with different request counts (--requests A,B) are subtracted, so start-up
and shut-down cancel out: Ir per request = (Ir(B) - Ir(A)) / (B - A). Repeats agree within
about 1 %.

What it counts: user-space instructions of the worker process (the Python interpreter running
splicer, the C engine, libc), not the kernel's work in system calls (see strace -c for those)
and not waiting. The client is sequential, so the engine sees one request at a time, not the
batches of a 50-connection load: the figure is a cost per request to compare, not a rate.

Loads (every head unique, as real clients' are):
  browser  GET of a 1 KiB file, a browser-like head of its own per request (query, Referer,
           Cookie change), 4 keep-alive connections (run.py's browser-unique, sequential);
  post     POST of a 1 KiB JSON body with a bearer token and request id of its own, answered
           204 (run.py's api-post-unique, sequential);
  close    GET of the 1 KiB file on a new connection per request (run.py's 1k-close).

Needs valgrind, nginx and the checkout's built engine. Uses 127.0.0.1 ports 19401-19402
(origin) and 19480. Takes about a minute per load and checkout.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (run.py's origin, templates and helpers)

ORIGIN = (19401, 19402)
PORT = 19480
CONNS = 4

BROWSER = ("GET /1k.bin?item={n}&gclid=Cj0KCQjw{n:08x}{t} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Connection: {conn}\r\n"
           "User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Safari/537.36\r\nAccept: */*\r\nSec-Fetch-Site: same-origin\r\n"
           "Referer: http://127.0.0.1/list?page={n}\r\nAccept-Encoding: gzip, deflate, br\r\n"
           "Accept-Language: en-US,en;q=0.9\r\nCookie: sid=ab{n:08x}{t}; cart={n}; _gid={n}\r\n\r\n")
POST = ("POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n"
        "User-Agent: orders-sync/3.2.1 okhttp/4.12.0\r\nAccept: application/json\r\n"
        "Content-Type: application/json\r\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.{n:08x}{t}.{n:016x}\r\n"
        "X-Request-Id: {t}-{n:04x}-4abc-8def-{n:012x}\r\nContent-Length: {length}\r\n\r\n")


def post_body(n: int) -> bytes:
    text = '{"request_id":"%08x","order":{"id":%d,"items":[{"sku":"SKU-%06d","qty":2}],"note":"' % (n, n, n)
    return (text + "x" * (1024 - len(text) - 3) + '"}}').encode()


def read_response(s: socket.socket, head_only_status: bool) -> None:
    """Read one whole response (a 1 KiB body, or none for 204) or fail."""
    got = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError(f"connection closed after {len(got)} bytes: {got[:80]!r}")
        got += chunk
        end = got.find(b"\r\n\r\n")
        if end < 0:
            continue
        status = got[9:12]
        if head_only_status and status == b"204":
            return
        if status != b"200":
            raise RuntimeError(f"unexpected response {got[:80]!r}")
        if len(got) - end - 4 >= 1024:
            return


def send_load(load: str, n: int, tag: str) -> None:
    """`n` requests of `load`, one at a time."""
    if load == "close":
        for i in range(n):
            with socket.create_connection((run.HOST, PORT)) as s:
                s.sendall(BROWSER.format(n=i, t=tag, conn="close").encode())
                read_response(s, False)
        return
    conns = [socket.create_connection((run.HOST, PORT)) for _ in range(CONNS)]
    try:
        for i in range(n):
            s = conns[i % CONNS]
            if load == "browser":
                s.sendall(BROWSER.format(n=i, t=tag, conn="keep-alive").encode())
            else:
                body = post_body(i)
                s.sendall(POST.format(n=i, t=tag, length=len(body)).encode() + body)
            read_response(s, load == "post")
    finally:
        for s in conns:
            s.close()


def instructions(checkout: Path, cfg: Path, wd: Path, load: str, n: int) -> int:
    """The worker's instruction count over a life in which it served `n` requests of `load`."""
    out = wd / "cg"
    out.mkdir(exist_ok=True)
    for f in glob.glob(str(out / "callgrind.out.*")):
        os.unlink(f)
    env = dict(os.environ, PYTHONPATH=str(checkout))
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out.%p", sys.executable, "-c",
           "import sys; from splicer.cli import main; sys.exit(main())", "-q", "-c", str(cfg)]
    # (from the work directory: `python -c` puts its working directory first on sys.path,
    # where a run from a checkout's root would import that checkout, not `checkout`)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, cwd=str(out))
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                socket.create_connection((run.HOST, PORT), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    run.die(f"splicer under valgrind did not start ({checkout})")
                time.sleep(0.5)
        time.sleep(1.0)
        send_load(load, n, f"{os.getpid():x}{n:x}")
        time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    totals = []
    for f in glob.glob(str(out / "callgrind.out.*")):
        with open(f) as fh:
            for line in fh:
                if line.startswith(("summary:", "totals:")):
                    totals.append(int(line.split()[1]))
                    break
    if not totals:
        run.die("callgrind wrote no totals")
    return max(totals)  # the worker's (the master serves no request)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="another checkout (its engine built in place) measured beside this one")
    ap.add_argument("--loads", default="browser,post,close", help="comma-separated: browser, post, close")
    ap.add_argument("--requests", default="200,1000", help="the two request counts A,B (B > A)")
    ap.add_argument("--httplog", action="store_true",
                    help="the frontend logs: `option httplog` to a file (format raw)")
    args = ap.parse_args(argv)
    a, b = (int(x) for x in args.requests.split(","))
    if b <= a:
        run.die("--requests: B must be larger than A")
    loads = [x for x in args.loads.split(",") if x]
    if any(x not in ("browser", "post", "close") for x in loads):
        run.die(f"--loads: unknown load in {args.loads!r}")
    if shutil.which("valgrind") is None:
        run.die("valgrind is not installed (apt-get install valgrind)")
    checkouts = [("cur", HERE.parent)] + ([("base", Path(args.base).resolve())] if args.base else [])
    wd = run.checkout_bench([path for _, path in checkouts], (*ORIGIN, PORT), ORIGIN, "splicer-ir-")
    try:
        cfg = wd / "splicer.cfg"
        run.render("splicer.cfg", cfg, PORT=PORT, ORIGIN1_PORT=ORIGIN[0], ORIGIN2_PORT=ORIGIN[1])
        if args.httplog:
            text = cfg.read_text()
            cfg.write_text(text.replace("    default_backend farm\n", "    default_backend farm\n    option httplog\n"
                                        f"    log file@{wd}/access.log format raw daemon\n", 1))
        results: dict[tuple[str, str], float] = {}
        for load in loads:
            for name, path in checkouts:
                lo = instructions(path, cfg, wd, load, a)
                hi = instructions(path, cfg, wd, load, b)
                results[(load, name)] = (hi - lo) / (b - a)
                run.log(f"{load:8s} {name:4s} {results[(load, name)]:,.0f} instructions per request")
        print("\n| load | cur instructions/request |" + (" base | cur / base |" if args.base else ""))
        print("|---|---|" + ("---|---|" if args.base else ""))
        for load in loads:
            cur = results[(load, "cur")]
            row = f"| {load} | {cur:,.0f} |"
            if args.base:
                base = results[(load, "base")]
                row += f" {base:,.0f} | {cur / base:.3f} |"
            print(row)
        return 0
    finally:
        run.stop_all()
        subprocess.run(["rm", "-rf", str(wd)], check=False)


if __name__ == "__main__":
    sys.exit(main())
