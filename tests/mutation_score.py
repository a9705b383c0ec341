"""Mutation score per module and package, from the results `mutmut run` left in mutants/.

Usage (from the repository root, after `mutmut run --max-children 1`):

    python tests/mutation_score.py            # per package, and overall
    python tests/mutation_score.py --modules  # per module too

A random sample instead of every mutant (the whole core is about 18,000 mutants, 5 hours):

    mutmut run --max-children 1 'splicer.health.state.x_none*'  # generates them (then stops: no match)
    python tests/mutation_score.py --draw 800 20261207 > sample.txt
    mutmut run --max-children 1 $(cat sample.txt)
    python tests/mutation_score.py --sample sample.txt

Score = killed / mutants, where a mutant no test reached ("no tests") or that was never
run counts as not killed, and a timeout counts as killed (the mutant changed behaviour).
"""
from __future__ import annotations

import collections
import json
import pathlib
import random
import sys

KILLED = {1, 3, 36, 24, -24, 152, 255, 37, -9, -11}
ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    metas = sorted((ROOT / "mutants" / "splicer").rglob("*.py.meta"))
    if not metas:
        print("no mutmut results under mutants/: run `mutmut run --max-children 1` first")
        return 1
    if "--draw" in argv:  # N SEED: N mutant names drawn at random, one per line
        n, seed = (int(x) for x in argv[argv.index("--draw") + 1:argv.index("--draw") + 3])
        names = [k for meta in metas for k in sorted(json.loads(meta.read_text())["exit_code_by_key"])]
        print("\n".join(sorted(random.Random(seed).sample(names, n))))
        return 0
    sample = None
    if "--sample" in argv:
        sample = set(pathlib.Path(argv[argv.index("--sample") + 1]).read_text().split())
    by_module: dict[str, collections.Counter] = {}
    for meta in metas:
        results = json.loads(meta.read_text())["exit_code_by_key"]
        codes = [c for k, c in results.items() if sample is None or k in sample]
        if not codes:
            continue
        module = str(meta.relative_to(ROOT / "mutants").with_suffix(""))
        c = collections.Counter()
        for code in codes:
            c["killed" if code in KILLED else "survived" if code == 0 else
              "not checked" if code is None else "no tests" if code in (5, 33) else "other"] += 1
        by_module[module] = c

    def line(name: str, c: collections.Counter) -> str:
        total = sum(c.values())
        return (f"{name:32} {c['killed'] / total:7.1%}  {total:5} mutants  {c['survived']:4} survived"
                f"  {c['no tests']:4} no tests  {c['not checked'] + c['other']:4} other")

    packages: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for module, c in by_module.items():
        packages[module.split("/")[1]] += c
        if "--modules" in argv:
            print(line(module, c))
    for package, c in sorted(packages.items()):
        print(line(f"splicer/{package}", c))
    print(line("overall", sum(packages.values(), collections.Counter())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
