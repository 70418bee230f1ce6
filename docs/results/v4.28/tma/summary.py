"""B/A time of the tensor-copy A/B (ab.sh): per (m, layout), the geometric mean of each
problem's B median over its A median (faster round of each side), for kernels the path
serves (eligible: column-major A or its transposed copy, no packing, no stream-K) and for
the rest (the same kernel on both sides: the noise), and the cells (geometric-mean speed-up
over the cuBLAS time of the same process) by N:M.  usage: summary.py ab.csv"""
import csv, math, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
# side, round, m, gpu, problem, kernel, registers, spill, median_us, min_us, runs, eff, fp32,
# cublas_us, speedup, rel_error, error
best = {}
errs = []
for r in rows:
    if len(r) < 16:
        continue
    side, rnd, m, gpu, prob, kernel = r[:6]
    layout = "col" if prob.endswith("_acol") else "row"
    if r[16:] and r[16]:
        errs.append((side, prob, r[16]))
        continue
    med, cub, rel = float(r[8]), float(r[13]), float(r[15])
    if rel > 1e-4:
        errs.append((side, prob, f"rel error {rel}"))
    key = (m, layout, prob, side)
    if key not in best or med < best[key][0]:
        best[key] = (med, cub, kernel)
def eligible(k):
    return ("acol16" in k or "atrans" in k) and "_pack_" not in k and "streamk" not in k
groups = collections.defaultdict(list)
cells = collections.defaultdict(lambda: collections.defaultdict(list))
for (m, layout, prob, side), (med, cub, kernel) in best.items():
    if side != "A" or (m, layout, prob, "B") not in best:
        continue
    b = best[(m, layout, prob, "B")][0]
    groups[(m, layout, eligible(kernel))].append(b / med)
    nm = prob.split("_")[3]
    cells[(m, layout)]["A", nm].append(cub / med)
    cells[(m, layout)]["B", nm].append(best[(m, layout, prob, "B")][1] / b)
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for key in sorted(groups):
    xs = groups[key]
    print(f"m={key[0]} {key[1]} {'eligible' if key[2] else 'control '}: B/A {gm(xs):.4f} over {len(xs)}"
          f" (min {min(xs):.3f}, max {max(xs):.3f}, B faster on {sum(x < 1 for x in xs)})")
for key in sorted(cells):
    for side in "AB":
        line = " / ".join(f"{gm(cells[key][side, nm]):.3f}" for nm in ["16:32", "12:32", "8:32", "4:32"]
                          if cells[key][side, nm])
        print(f"cells m={key[0]} {key[1]} side {side}: {line}")
print(f"errors: {len(errs)}")
for e in errs[:20]:
    print("  ", e)
