"""Per problem of new.list/old.list: the old build's winner (time-old) against the new build's cp1, cp2 and cp3 of the same shape (time-new), medians of 10 in one call.
Usage: python3 compare.py h200-time-old.txt h200-time-new.txt"""
import re
import sys


def parse(path):
    out = {}
    for line in open(path):
        m = re.match(r"(m\d+_n\d+_k\d+_\d+:\d+_l\d+)\S*\s+\d+\s+\d+\s+([\d.]+)\s.*?(nm_spmm\S+)", line)
        if m:
            out[(m.group(1), m.group(3))] = float(m.group(2))
    return out


old, new = parse(sys.argv[1]), parse(sys.argv[2])
print(f"{'problem':28s} old winner (its pipeline) µs   new build: cp1 / cp2 / cp3 µs (nan: spills, not timed)")
for (problem, kernel), t in old.items():
    times = [new.get((problem, re.sub(r"_cp\d_", f"_cp{c}_", kernel)), float("nan")) for c in "123"]
    print(f"{problem:28s} cp{kernel.split('_cp')[1][0]} {t:6.2f}   " + " / ".join(f"{x:6.2f}" for x in times))
