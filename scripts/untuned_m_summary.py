#!/usr/bin/env python3
"""Summarise scripts/device/untuned-m.sh: each untuned m against its two tuned neighbours.

Usage: python3 scripts/untuned_m_summary.py untuned-m.log
For every (layer, sparsity) table that examples/llama_mlp printed, the speed-up over cuBLAS
at m = 7, 300, 700, 1500 and 3000 as a share of the better speed-up of its tuned neighbours
(timed in the same process), and whether it reaches 90 % (issue 14). A neighbour is the
nearest m below and above that the table shows answered by an exact entry (rule `exact`), so
the summary follows whatever grid of m the databases hold.
"""
import re
import sys

UNTUNED = (7, 300, 700, 1500, 3000)
SHARE = 0.90


def tables(text):
    """{(layer, pattern): {m: (speedup, rule)}} from the closing tables."""
    out = {}
    current = None
    for line in text.splitlines():
        head = re.match(r"^(\w+) (\d+)×(\d+) at (\d+:\d+): medians of this run", line)
        if head:
            current = out.setdefault((head.group(1), head.group(4)), {})
            continue
        row = re.match(r"^\s*(\d+)\s+(\S.*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+nm_spmm", line)
        if current is not None and row:
            current[int(row.group(1))] = (float(row.group(5)), row.group(2).strip())
    return out


def neighbours(rows, m):
    """The nearest tuned m below and above m in one table, or None where one side is missing."""
    tuned = [t for t, (_, rule) in rows.items() if rule == "exact"]
    below = [t for t in tuned if t < m]
    above = [t for t in tuned if t > m]
    if not below or not above:
        return None
    return max(below), min(above)


def main():
    found = tables(open(sys.argv[1]).read())
    if not found:
        sys.exit("no tables found: did examples/llama_mlp run?")
    failures = 0
    print(f"{'layer':6} {'N:M':>5} {'m':>5} {'speed-up':>8} {'neighbours':>16} {'share':>6}  rule")
    for (layer, pattern), rows in sorted(found.items()):
        for m in UNTUNED:
            pair = neighbours(rows, m)
            if m not in rows or pair is None:
                print(f"{layer:6} {pattern:>5} {m:5} missing")
                failures += 1
                continue
            low, high = pair
            best = max(rows[low][0], rows[high][0])
            share = rows[m][0] / best
            failures += share < SHARE
            mark = "" if share >= SHARE else "  < 90 %"
            print(f"{layer:6} {pattern:>5} {m:5} {rows[m][0]:8.2f} {rows[low][0]:7.2f} {rows[high][0]:7.2f}"
                  f" {share:6.1%}  {rows[m][1]}{mark}")
    print(f"\n{failures} of {len(found) * len(UNTUNED)} below {SHARE:.0%} of the better neighbour")


if __name__ == "__main__":
    main()
