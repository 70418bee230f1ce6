"""Summarise ablation.sh: per m, the geometric mean of the `atransgrid` twin's time over the
stored winner's (B/A) and of the twin without copier blocks (C/A), overall and by sparsity.
usage: python3 ablation_summary.py DIR"""
import collections
import csv
import math
import sys


def load(path):
    return {r["problem"]: r for r in csv.DictReader(open(path))}


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


folder = sys.argv[1]
for m in (4096, 256):
    a, b, c = (load(f"{folder}/abl-{side}-m{m}.csv") for side in "ABC")
    rows = []
    for key, row in a.items():
        if "atransgrid" not in b[key]["kernel"] or not b[key]["median_us"] or not c[key]["median_us"]:
            continue
        base = float(row["median_us"])
        rows.append((key.split("_")[3], float(b[key]["median_us"]) / base, float(c[key]["median_us"]) / base))
    print(f"m = {m}: {len(rows)} twins, B/A {geo([r[1] for r in rows]):.3f}, C/A {geo([r[2] for r in rows]):.3f}")
    by = collections.defaultdict(list)
    for r in rows:
        by[r[0]].append(r)
    for nm, group in sorted(by.items()):
        print(f"  {nm:>5}: {len(group):2} twins, B/A {geo([r[1] for r in group]):.3f}, C/A {geo([r[2] for r in group]):.3f}")
