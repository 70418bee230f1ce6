#!/usr/bin/env python3
"""Summarise scripts/device/ab-db.sh: per problem, every other build's median against build A's.

Usage: python3 scripts/ab_db_summary.py ab-db-A1-m256.csv ab-db-B1-m256.csv ... > summary.txt
Each file is `nmtune bench --csv` output; the side (A, B, C, ...) is the letter after `ab-db-`.
A problem's time per side is the mean of its rounds' medians. For each build after A: every
problem whose kernel splits K (suffix _sk2 or more), then geometric means of its time over
A's by split factor and by (A layout, m, L, N:M), and the speed-ups over cuBLAS (cuBLAS timed
in the same process) by sparsity and A layout.
"""
import csv
import math
import re
import sys
from collections import defaultdict


def side_of(path):
    found = re.search(r"ab-db-([A-Z])\d", path)
    if not found:
        sys.exit(f"cannot tell the build of {path}: expected ab-db-<A-Z><round>")
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


def group_of(problem):
    """(A layout, m, L, N:M) of a problem's name, e.g. m256_n2048_k2048_4:32_l32_acol_bf16."""
    m = re.match(r"m(\d+)_", problem).group(1)
    pattern, l = re.search(r"_(\d+:\d+)_l(\d+)", problem).groups()
    layout = "col" if "_acol" in problem else "row"
    return layout, int(m), int(l), pattern


def compare(times, kernels, side):
    """Build `side` against build A: split-K problems, then geometric means of the time ratio
    by split factor and by (layout, m, L, N:M), then the speed-ups over cuBLAS."""
    ratios = defaultdict(list)
    by_group = defaultdict(list)
    speedups = defaultdict(lambda: defaultdict(list))
    print(f"{'problem':46} {'split':>5} {'A us':>9} {side + ' us':>9} {side + '/A':>6}")
    for problem in sorted(times):
        sides = times[problem]
        if "A" not in sides or side not in sides:
            print(f"{problem:46} missing a build: {sorted(sides)}")
            continue
        a = mean([t for t, _ in sides["A"]])
        b = mean([t for t, _ in sides[side]])
        split = split_of(kernels[problem])
        ratios[split].append(b / a)
        group = group_of(problem)
        by_group[group].append(b / a)
        for name, t in (("A", a), (side, b)):
            cublas = mean([c for _, c in sides[name]])
            speedups[(group[3], group[0])][name].append(cublas / t)
        if split > 1:
            print(f"{problem:46} {split:5} {a:9.1f} {b:9.1f} {b / a:6.3f}")
    print()
    print(f"geometric mean of {side}/A time by split-K factor (below 1: {side} faster)")
    for split in sorted(ratios):
        r = ratios[split]
        print(f"  split {split}: {geomean(r):.3f} over {len(r)} problems "
              f"(min {min(r):.3f}, max {max(r):.3f})")
    print()
    print(f"geometric mean of {side}/A time by A layout, m, L and N:M")
    for group in sorted(by_group, key=lambda g: (g[0], g[1], g[2], -int(g[3].split(":")[0]))):
        r = by_group[group]
        print(f"  {group[0]} m={group[1]:<5} L={group[2]:<4} {group[3]:>5}: {geomean(r):.3f} "
              f"over {len(r)} (min {min(r):.3f}, max {max(r):.3f})")
    print()
    print(f"speed-up over cuBLAS, geometric mean per sparsity and A layout: A -> {side}")
    for key in sorted(speedups, key=lambda k: (k[1], -int(k[0].split(':')[0]))):
        s = speedups[key]
        print(f"  {key[1]} {key[0]:>5}: {geomean(s['A']):.3f} -> {geomean(s[side]):.3f} "
              f"({len(s['A'])} problems)")


def main():
    times, kernels = read(sys.argv[1:])
    others = sorted({side for sides in times.values() for side in sides} - {"A"})
    for number, side in enumerate(others):
        if number:
            print()
        print(f"## build {side} against build A")
        compare(times, kernels, side)


if __name__ == "__main__":
    main()
