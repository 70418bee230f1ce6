#!/usr/bin/env python3
"""Two `nmtune report` outputs of the same problems (e.g. a committed database's report before
and after a re-tune), compared per A layout, L and m: the geometric mean of new/old over the
problems both measured, for the speed-up over cuBLAS, the kernel's median and cuBLAS's median
(cuBLAS moving says how much of a change is the GPU's, not the kernels'), and how many kept
the same kernel.

Usage: python3 scripts/report_compare.py OLD_REPORT NEW_REPORT
"""
import math
import sys
from collections import defaultdict


def load(path):
    """(m, n, k, N:M, L, layout) -> (median_us, cublas_us, speedup, kernel) of measured rows."""
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) == 18 and f[15].startswith("measured"):  # "measured*": another template
            rows[tuple(f[1:7])] = (float(f[7]), float(f[9]), float(f[10]), f[17])
    return rows


def main():
    old, new = load(sys.argv[1]), load(sys.argv[2])
    cells = defaultdict(list)
    for key in old.keys() & new.keys():
        m, _, _, _, l, layout = key
        cells[(layout, int(l), int(m))].append((old[key], new[key]))
    print(f"{'A':4} {'L':>4} {'m':>5} {'problems':>8} {'speed-up':>9} {'kernel':>7} {'cuBLAS':>7} {'same kernel':>11}")
    for cell in sorted(cells):
        pairs = cells[cell]
        geo = lambda i: math.exp(sum(math.log(b[i] / a[i]) for a, b in pairs) / len(pairs))
        same = sum(a[3] == b[3] for a, b in pairs)
        layout, l, m = cell
        print(f"{layout:4} {l:>4} {m:>5} {len(pairs):>8} {geo(2):>9.3f} {geo(0):>7.3f} {geo(1):>7.3f} {same:>11}")


if __name__ == "__main__":
    main()
