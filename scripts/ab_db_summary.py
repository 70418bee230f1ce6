#!/usr/bin/env python3
"""Summarise scripts/device/ab-db.sh: per problem, build B's median against build A's.

Usage: python3 scripts/ab_db_summary.py ab-db-A1-m256.csv ab-db-B1-m256.csv ... > summary.txt
Each file is `nmtune bench --csv` output; the side (A or B) is the letter after `ab-db-`.
A problem's time per side is the mean of its rounds' medians. Prints every problem whose
kernel splits K (suffix _sk2 or more), then geometric means of B/A by split factor and the
speed-ups over cuBLAS (cuBLAS timed in the same process) by sparsity and A layout.
"""
import csv
import math
import re
import sys
from collections import defaultdict


def side_of(path):
    found = re.search(r"ab-db-([AB])\d", path)
    if not found:
        sys.exit(f"cannot tell the build of {path}: expected ab-db-A<round> or ab-db-B<round>")
    return found.group(1)


def read(paths):
    times = defaultdict(lambda: defaultdict(list))  # problem -> side -> [(median, cublas)]
    kernels = {}
    for path in paths:
        side = side_of(path)
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if not row["median_us"] or row["error"]:
                    continue
                times[row["problem"]][side].append((float(row["median_us"]), float(row["cublas_us"])))
                kernels[row["problem"]] = row["kernel"]
    return times, kernels


def mean(values):
    return sum(values) / len(values)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def split_of(kernel):
    return int(re.search(r"_sk(\d+)(?:_rc\d+)?(?:_streamk)?$", kernel).group(1))


def main():
    times, kernels = read(sys.argv[1:])
    ratios = defaultdict(list)
    speedups = defaultdict(lambda: defaultdict(list))
    print(f"{'problem':46} {'split':>5} {'A us':>9} {'B us':>9} {'B/A':>6}")
    for problem in sorted(times):
        sides = times[problem]
        if "A" not in sides or "B" not in sides:
            print(f"{problem:46} missing a build: {sorted(sides)}")
            continue
        a = mean([t for t, _ in sides["A"]])
        b = mean([t for t, _ in sides["B"]])
        split = split_of(kernels[problem])
        ratios[split].append(b / a)
        pattern = re.search(r"_(\d+:\d+)_l", problem).group(1)
        layout = "col" if problem.endswith("_acol") else "row"
        for side, t in (("A", a), ("B", b)):
            cublas = mean([c for _, c in sides[side]])
            speedups[(pattern, layout)][side].append(cublas / t)
        if split > 1:
            print(f"{problem:46} {split:5} {a:9.1f} {b:9.1f} {b / a:6.3f}")
    print()
    print("geometric mean of B/A time by split-K factor (below 1: B faster)")
    for split in sorted(ratios):
        r = ratios[split]
        print(f"  split {split}: {geomean(r):.3f} over {len(r)} problems "
              f"(min {min(r):.3f}, max {max(r):.3f})")
    print()
    print("speed-up over cuBLAS, geometric mean per sparsity and A layout: A -> B")
    for key in sorted(speedups, key=lambda k: (k[1], -int(k[0].split(':')[0]))):
        s = speedups[key]
        print(f"  {key[1]} {key[0]:>5}: {geomean(s['A']):.3f} -> {geomean(s['B']):.3f} ({len(s['A'])} problems)")


if __name__ == "__main__":
    main()
