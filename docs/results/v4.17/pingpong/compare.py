"""A/B of nmtune bench CSVs (ab-db-<side><round>-m<M>.csv): geometric mean of B/A per L and the A winner's pipeline. Usage: python3 compare.py DIR"""
import csv,sys,math,glob,re
from collections import defaultdict
d=sys.argv[1]
t=defaultdict(lambda: defaultdict(list)); kern={}
for p in glob.glob(d+'/ab-db-*.csv'):
    side=re.search(r'ab-db-([A-Z])\d',p).group(1)
    for r in csv.DictReader(open(p)):
        if r['median_us'] and not r['error']:
            t[r['problem']][side].append(float(r['median_us'])); kern[r['problem']]=r['kernel']
sides=sorted({s for v in t.values() for s in v})
def gm(v): return math.exp(sum(map(math.log,v))/len(v)) if v else float('nan')
for other in sides[1:]:
  for L in ('l32','l1'):
    for cp in ('cp1','cp2',''):
        rat=[]; 
        for p,v in t.items():
            if not p.endswith('_'+L) or 'A' not in v or other not in v: continue
            if cp and cp not in kern[p]: continue
            rat.append(sum(v[other])/len(v[other])/(sum(v['A'])/len(v['A'])))
        print(other,'/A',L,cp or 'all',len(rat),round(gm(rat),3), 'min',round(min(rat),3) if rat else '', 'max', round(max(rat),3) if rat else '')
