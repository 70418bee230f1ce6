#!/usr/bin/env python3
"""What the stream-K schedule gives in a tuning database: for every problem where a stream-K
kernel was timed (current template checksum or not, one GPU), its fastest stream-K time against
its fastest other time, both medians from the same tuning run (same process, same
cuBLAS). Prints, per A layout, m, L and N:M, the problems, the geometric mean of
other/stream (above 1: stream-K faster), how many stream-K won, and the best and worst.

Usage: python3 scripts/stream_k_summary.py DB [--dtype bf16]
"""
import argparse
import math
import sqlite3
from collections import defaultdict


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--dtype", default=None, help="only problems of this element type")
    args = parser.parse_args()
    rows = sqlite3.connect(args.db).execute(
        "select p.m, p.n, p.k, p.nm_n, p.nm_m, p.l, p.a_layout, p.dtype, me.kernel_name,"
        " me.median_us, me.template_checksum from measurements me join problems p"
        " on p.id = me.problem_id where me.status = 'ok' and me.verified = 1"
        " and me.source = 'measured' and me.median_us is not null"
    )
    # Per problem and template checksum: fastest stream-K and fastest other time.
    best = defaultdict(lambda: [math.inf, math.inf])
    for m, n, k, nn, mm, l, layout, dtype, name, us, checksum in rows:
        if args.dtype and dtype != args.dtype:
            continue
        key = ((layout, m, l, f"{nn}:{mm}"), (n, k, dtype), checksum)
        side = 0 if name.endswith("_streamk") else 1
        best[key][side] = min(best[key][side], us)
    cells = defaultdict(list)
    for (cell, shape, _), (stream, other) in best.items():
        if math.isfinite(stream) and math.isfinite(other):
            cells[cell].append((other / stream, shape))
    print(f"{'A':4} {'m':>5} {'L':>4} {'N:M':>6} {'problems':>8} {'other/stream':>12} {'won':>4}  best; worst")
    for cell in sorted(cells, key=lambda c: (c[0], c[1], c[2], -int(c[3].split(":")[0]))):
        ratios = cells[cell]
        geo = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        won = sum(r > 1 for r, _ in ratios)
        hi, lo = max(ratios), min(ratios)
        layout, m, l, nm = cell
        print(
            f"{layout:4} {m:>5} {l:>4} {nm:>6} {len(ratios):>8} {geo:>12.3f} {won:>4}  "
            f"{hi[0]:.3f} (n={hi[1][0]} k={hi[1][1]}); {lo[0]:.3f} (n={lo[1][0]} k={lo[1][1]})"
        )


if __name__ == "__main__":
    main()
