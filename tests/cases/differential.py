"""Differential run: the raw-byte cases through haproxy, to see where it and splicer differ.

    python -m tests.cases.differential [--out docs/haproxy-differential.md]

Needs haproxy on PATH (Debian's package). Every table case of tests/cases/ runs against
haproxy with the same configuration text the suite gives splicer (haproxy reads it as it
is), and the same recording origin. Nothing is asserted: each case is reported as agreeing
(haproxy meets the case's expectations, which splicer passes) or disagreeing, with what
haproxy did. Cases that check splicer-only things (its counters, its log) are skipped.
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.cases import conftest as cases_conftest
from tests.cases.harness import RecordingOrigin, run_case
from tests.e2e.helpers import free_port, wait_port


class HaproxyProcess:
    """haproxy -db -f CFG, shaped like SplicerProcess for run_case (port, proc, log())."""

    def __init__(self, cfg_path: Path, log_path: Path, port: int) -> None:
        self.port = port
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(["haproxy", "-db", "-f", str(cfg_path)], stdout=self._log,
                                     stderr=subprocess.STDOUT)
        wait_port(port, self.proc)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()


class HaproxyEnv(cases_conftest.Env):
    """The suite's Env, with haproxy instead of splicer."""

    def splicer(self, name: str):
        hp = self.running.get(name)
        if hp is None:
            port = free_port()
            cfg = self.tmp / f"haproxy-{name}.cfg"
            text = cases_conftest.CONFIGS[name](port, self.origin.port)
            cfg.write_text(text.replace("option splice-auto", "option splice-response"))
            hp = HaproxyProcess(cfg, self.tmp / f"haproxy-{name}.log", port)
            self.running[name] = hp
        return hp


def all_cases():
    from tests.cases import test_reported_cases, test_rfc_requests, test_rfc_responses
    return test_reported_cases.CASES + test_rfc_requests.CASES + test_rfc_responses.CASES


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the markdown report there too")
    args = ap.parse_args(argv)
    if shutil.which("haproxy") is None:
        print("haproxy is not installed (apt-get install haproxy)", file=sys.stderr)
        return 2
    version = subprocess.run(["haproxy", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
    origin = RecordingOrigin()
    env = HaproxyEnv(origin, Path(tempfile.mkdtemp(prefix="splicer-diff-")))
    rows = []
    try:
        for case in all_cases():
            try:
                run_case(env, case)
                rows.append((case.name, "agrees", ""))
            except AssertionError as exc:
                first = str(exc).splitlines()
                detail = " ".join(line.strip() for line in first[:3])[:300]
                rows.append((case.name, "DIFFERS", detail.replace("|", "\\|")))
            except Exception as exc:  # a case haproxy could not even run through
                rows.append((case.name, "error", f"{type(exc).__name__}: {exc}"[:300]))
    finally:
        env.stop()
        origin.close()
    differ = [r for r in rows if r[1] != "agrees"]
    lines = [f"# splicer's raw-byte cases through {version}", "",
             f"{len(rows)} cases, {len(rows) - len(differ)} where haproxy behaves as splicer's "
             f"expectations require, {len(differ)} where it does not.", "",
             "| case | haproxy | what haproxy did (first lines of the failed expectation) |", "|---|---|---|"]
    lines += [f"| {n} | {v} | {d} |" for n, v, d in differ]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
