"""The sweep (sweep.sh): per pattern and side, the fastest five kernels, and the fastest
kernel the tensor copies serve on each side.  usage: sweep_summary.py sweep.csv"""
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[7]]
# side, nm, gpu, problem, kernel, registers, spill, median_us, min_us, runs, eff, fp32, cublas, speedup, rel, error
by = collections.defaultdict(list)
for r in rows:
    if r[15:] and r[15]:
        continue
    by[r[0], r[1]].append((float(r[7]), float(r[12]), r[4], r[5]))
def eligible(k):
    return "acol16" in k and "_pack_" not in k and "streamk" not in k
for (side, nm), xs in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    xs.sort()
    cub = sorted(x[1] for x in xs)[len(xs) // 2]
    print(f"{nm} side {side}: {len(xs)} kernels, cuBLAS median {cub:.1f} us")
    for t, c, k, reg in xs[:5]:
        print(f"   {t:9.1f} us {c / t:6.3f}x {reg:>4} regs {k}")
    el = [x for x in xs if eligible(x[2])]
    if el:
        print(f"   fastest served: {el[0][0]:.1f} us {el[0][1] / el[0][0]:.3f}x {el[0][2]}")
