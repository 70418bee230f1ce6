#!/usr/bin/env python3
"""Issue 14's decode figures from `nmtune report --format csv` of a decode database.

    nmtune report --db tuning-db/h100-decode.sqlite --format csv | python3 scripts/decode_targets.py

Per (m, L): the geometric-mean speed-up over cuBLAS per sparsity over the layers whose dense
FP32 weight (n·k·4 bytes) is at least 32 MB, and how many entries whose weight bytes (B' and D,
here min_bytes less A and C) are at least 32 MB reach the share of copy_gbps the issue asks
(85 % at L = 32, 80 % at L = 1), with the lowest share.
"""
import csv
import math
import sys
from collections import defaultdict

MB = 1 << 20
BIG = 32 * MB
SHARE = {32: 0.85, 1: 0.80}


def gmean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    rows = list(csv.DictReader(sys.stdin))
    speedups = defaultdict(list)
    shares = defaultdict(list)
    for r in rows:
        m, n, k, l = (int(r[c]) for c in ("m", "n", "k", "l"))
        if r["speedup"] in ("", None):
            continue
        key = (m, l, r["nm"])
        if n * k * 4 >= BIG:
            speedups[key].append(float(r["speedup"]))
        weight = float(r["min_bytes"]) - 4 * m * (k + n)
        if weight >= BIG and r["achieved_gbps"] and r["copy_gbps"]:
            shares[(m, l)].append(float(r["achieved_gbps"]) / float(r["copy_gbps"]))
    patterns = ["16:32", "12:32", "8:32", "4:32"]
    for m, l in sorted({(m, l) for m, l, _ in speedups}):
        line = " / ".join(f"{gmean(speedups[(m, l, p)]):.2f}" for p in patterns)
        text = f"m = {m:2d}, L = {l:2d}: {line}x ({len(speedups[(m, l, '4:32')])} layers)"
        if (m, l) in shares and l in SHARE:
            s = shares[(m, l)]
            hit = sum(1 for x in s if x >= SHARE[l])
            text += f"; >= {SHARE[l]:.0%} of copy_gbps: {hit} of {len(s)} (lowest {min(s):.1%})"
        print(text)


if __name__ == "__main__":
    main()
