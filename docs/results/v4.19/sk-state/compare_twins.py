# Twins A/B of two builds: python3 compare_twins.py OLD_DIR NEW_DIR M (ab-db-*.csv of scripts/device/ab-db.sh with DB_B = the twin copy)
import csv,glob,collections,math,sys
def load(d,m):
    t=collections.defaultdict(lambda: collections.defaultdict(list)); kern={}; cub=collections.defaultdict(list)
    for f in glob.glob(f'{d}/ab-db-*-m{m}.csv'):
        side=f.split('ab-db-')[1][0]
        for r in csv.DictReader(open(f)):
            if r['median_us'] and not r['error']:
                t[r['problem']][side].append(float(r['median_us'])); kern[(r['problem'],side)]=r['kernel']; cub[r['problem']].append(float(r['cublas_us']))
    out={}
    for p,s in t.items():
        if 'A' in s and 'B' in s:
            out[p]=(sum(s['A'])/len(s['A']), sum(s['B'])/len(s['B']), kern[(p,'B')], sum(cub[p])/len(cub[p]))
    return out
gm=lambda v: math.exp(sum(map(math.log,v))/len(v))
old=load(sys.argv[1],sys.argv[3]); new=load(sys.argv[2],sys.argv[3])
by=collections.defaultdict(lambda:[[],[],[],[],[]])
for p in new:
    if p not in old: continue
    a0,b0,k0,c0=old[p]; a1,b1,k1,c1=new[p]
    if 'streamk' not in k1: continue
    key=('col' if p.endswith('acol') else 'row', p.split('_')[3])
    g=by[key]; g[0].append(b0/a0); g[1].append(b1/a1); g[2].append(c1/a1); g[3].append(c1/min(a1,b1)); g[4].append(c0/min(a0,b0))
allo=[];alln=[]
for k in sorted(by):
    g=by[k]; allo+=g[0]; alln+=g[1]
    print(k, f'n={len(g[0])} SK/DP old build {gm(g[0]):.3f} new build {gm(g[1]):.3f} | speed-up DP {gm(g[2]):.3f} best-of-both old {gm(g[4]):.3f} new {gm(g[3]):.3f}')
print('all', f'old {gm(allo):.3f} new {gm(alln):.3f}', 'wins new', sum(x<0.99 for x in alln), 'old', sum(x<0.99 for x in allo))
