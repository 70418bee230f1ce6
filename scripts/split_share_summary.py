#!/usr/bin/env python3
"""Summarise scripts/device/split-share.sh: per kernel, the median duration of its main kernel
and of its reduction (and transpose) launches, and the reduction's share of the sum.

Usage: python3 scripts/split_share_summary.py split-share.txt
"""
import re
import statistics
import sys
from collections import defaultdict


def main():
    current = None
    launches = defaultdict(lambda: defaultdict(list))
    name = None
    for line in open(sys.argv[1]):
        head = re.match(r"^#### (\S+) at (.*)$", line)
        if head:
            current = (head.group(1), head.group(2))
            continue
        launch = re.match(r"^  (nm_spmm\S+?)(_reduce|_transpose)? \(", line)
        if launch:
            name = launch.group(2) or "main"
            continue
        duration = re.search(r"gpu__time_duration\.sum\s+(\S+)\s+([\d.,]+)", line)
        if duration and current and name:
            unit, value = duration.group(1), float(duration.group(2).replace(",", ""))
            scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}[unit]
            launches[current][name].append(value * scale)
    print(f"{'kernel':75} {'main_us':>8} {'reduce_us':>9} {'transp_us':>9} {'reduce %':>8}")
    for (kernel, where), parts in launches.items():
        med = {k: statistics.median(v) for k, v in parts.items()}
        total = sum(med.values())
        print(f"{kernel[12:87]:75} {med.get('main', 0):8.1f} {med.get('_reduce', 0):9.1f} "
              f"{med.get('_transpose', 0):9.1f} {100 * med.get('_reduce', 0) / total:7.1f}%  {where}")


if __name__ == "__main__":
    main()
