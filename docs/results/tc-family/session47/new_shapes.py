#!/usr/bin/env python3
"""Session 47: what one-warpgroup blocks (`_ms64_`) and 16 kept rows a stage (`_ks16_`) add to
the tensor-core search, from the measurements of one tuning that timed them beside every
earlier configuration (same call, same process):
    python3 new_shapes.py exp-m256.measurements.jsonl.gz
Per cell (layout, L, N:M): the geometric mean over its problems of (fastest kernel of a
configuration set) / (fastest of the earlier set), and how many problems each set leaves
slower than cuBLAS at 8:32 and 4:32."""
import gzip, json, math, sys
from collections import defaultdict

SETS = {
    "earlier": lambda k: "_ms64_" not in k and "_ks16_" not in k,
    "+ks16": lambda k: "_ms64_" not in k,
    "+ms64": lambda k: "_ks16_" not in k,
    "+ms64+ks16": lambda k: True,
}


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


best = defaultdict(dict)
cublas = {}
for line in gzip.open(sys.argv[1], "rt"):
    r = json.loads(line)
    if r["status"] not in ("ok", "abandoned") or r["median_us"] is None or not r["verified"]:
        continue
    key = (r["a_layout"], r["l"], r["nm"], r["m"], r["n"], r["k"])
    for name, takes in SETS.items():
        if takes(r["kernel"]) and r["median_us"] < best[key].get(name, math.inf):
            best[key][name] = r["median_us"]
    if r["cublas_us"]:
        cublas.setdefault(key, []).append(r["cublas_us"])
cells = defaultdict(list)
for key in best:
    cells[key[:3]].append(key)
print("cell (layout, L, N:M): time of the fastest kernel / the earlier set's fastest, geometric mean")
print("  " + "  ".join(f"{s:>11}" for s in SETS))
for cell in sorted(cells):
    keys = cells[cell]
    row = [gm([best[k][s] / best[k]["earlier"] for k in keys]) for s in SETS]
    print(f"{cell}: " + "  ".join(f"{x:11.4f}" for x in row))
print("all: " + "  ".join(f"{gm([best[k][s] / best[k]['earlier'] for k in best]):.4f}" for s in SETS))
for s in SETS:
    slow = [k for k in best if k[2] in ("8:32", "4:32") and best[k][s] > sorted(cublas[k])[len(cublas[k]) // 2]]
    print(f"{s}: {len(slow)} problems at 8:32 and 4:32 slower than cuBLAS (median of its timings)")
