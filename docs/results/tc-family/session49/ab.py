"""Session 49's comparison of `nmtune bench --csv` rounds (ab-<tag><round>.csv in the current
folder): per problem the better of rounds 1 and 2, then geometric means of time against the
first tag per N:M and per configuration (warpgroups, stages, blocks an SM, split).
usage: python3 ab.py REF TAG...   (scripts/ab_db_summary.py is the project's general A/B
summary, for scripts/device/ab-db.sh's files)"""
import csv,sys,statistics as st,re,collections
def load(f):
    return {r['problem']:(float(r['median_us']),r['kernel'],r['registers'],r['error']) for r in csv.DictReader(open(f))}
base=sys.argv[1]; vs=sys.argv[2:]
def pair(tag):
    d1,d2=load(f'ab-{tag}1.csv'),load(f'ab-{tag}2.csv'); return d1,d2
a1,a2=pair(base)
for v in vs:
    b1,b2=pair(v)
    by=collections.defaultdict(list); cfg=collections.defaultdict(list)
    errs=[p for p in b1 if b1[p][3]]
    for p in a1:
        if p not in b1 or p not in b2: continue
        ta=min(a1[p][0],a2[p][0]); tb=min(b1[p][0],b2[p][0])
        sp=re.search(r'_(\d+:32)_',p).group(1); by[sp].append(tb/ta)
        k=a1[p][1]; c=re.sub(r'.*_(w\d+x\d+).*_(cp\d)_(mb\d)_(sk\d).*',r'\1 \2 \3 \4',k); cfg[c].append(tb/ta)
    gm=lambda x: st.geometric_mean(x)
    print(v, 'n',sum(len(x) for x in by.values()),'errs',len(errs), ' '.join(f'{s}:{gm(by[s]):.3f}' for s in ['16:32','12:32','8:32','4:32']))
    for c,x in sorted(cfg.items()): print('   ',c,len(x),f'{gm(x):.3f} min {min(x):.3f} max {max(x):.3f}')
