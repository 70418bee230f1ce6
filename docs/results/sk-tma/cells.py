import sys, math, collections
cells=collections.defaultdict(list)
for line in open(sys.argv[1]):
    f=line.split()
    if len(f)==18 and f[0]=='h200' and f[5]=='32' and f[1] in ('256','4096'):
        cells[(f[6],int(f[1]),f[4])].append(float(f[10]))
for lay in ('col','row'):
    for m in (4096,256):
        vals=[math.exp(sum(map(math.log,cells[(lay,m,nm)]))/len(cells[(lay,m,nm)])) for nm in ('16:32','12:32','8:32','4:32')]
        print(f"{lay} {m}: "+" / ".join(f"{v:.3f}" for v in vals))
