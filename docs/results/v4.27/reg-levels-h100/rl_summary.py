import csv, sys, math, re
from collections import defaultdict
t = defaultdict(lambda: defaultdict(list))  # problem -> variant -> [us]
cub = defaultdict(list)
base_name = {}
for path in sys.argv[1:]:
    for r in csv.DictReader(open(path)):
        if not r["median_us"] or r["error"]:
            continue
        k = r["kernel"]
        m = re.search(r"_rl(\d+)", k)
        v = "rl" + m.group(1) if m else "base"
        t[r["problem"]][v].append(float(r["median_us"]))
        cub[r["problem"]].append(float(r["cublas_us"]))
        if v == "base": base_name[r["problem"]] = k
def gm(xs): return math.exp(sum(math.log(x) for x in xs)/len(xs)) if xs else float('nan')
groups = defaultdict(lambda: defaultdict(list))
cells = defaultdict(lambda: defaultdict(list))
for p, vs in t.items():
    if "base" not in vs: continue
    b = sum(vs["base"])/len(vs["base"])
    best = b
    for v in ("rl2","rl7"):
        if v in vs:
            x = sum(vs[v])/len(vs[v])
            groups["all"][v].append(x/b)
            best = min(best, x)
    groups["all"]["best"].append(best/b)
    mm = re.match(r"m(\d+)_n(\d+)_k(\d+)_(\d+:\d+)_l\d+(?:_a(\w+))?$", p)
    key = (mm.group(1), mm.group(5) or "row", mm.group(4))
    c = sum(cub[p])/len(cub[p])
    cells[key]["base"].append(c/b); cells[key]["best"].append(c/best)
    for v in ("rl2","rl7"):
        if v in vs: groups[key[:2]][v].append((sum(vs[v])/len(vs[v]))/b)
    groups[key[:2]]["best"].append(best/b)
for g, d in sorted(groups.items(), key=str):
    print(g, {v: f"{gm(x):.4f} (n={len(x)}, faster {sum(1 for y in x if y<1)})" for v, x in d.items()})
print()
for key in sorted(cells):
    print(key, f"base {gm(cells[key]['base']):.3f}  best-of-3 {gm(cells[key]['best']):.3f}")
