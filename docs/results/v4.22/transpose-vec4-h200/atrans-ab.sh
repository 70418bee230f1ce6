# A/B of two nmtune builds (.device/bin/nmtune-a, -b) on the kernels of .device/atrans.list
# ("m n k N:M layout kernel" per line; atrans-pdl.list is the one prepared for step H of
# docs/perf-log.md "Session 30"), two alternated rounds, medians of 10; prints B/A per kernel
# (fastest round each) and the geometric mean. Run on the device: bash atrans-ab.sh
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
for round in 1 2; do for side in a b; do
  while read -r m n k nm lay kern; do
    NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-$side timeout 60 .device/bin/nmtune-$side bench --m $m --n $n --k $k --nm $nm --a-layout $lay --kernels $kern --runs 10 < /dev/null 2>&1 | grep -E "nm_spmm|rror" | sed "s/^/$side$round /"
  done < .device/atrans.list
done; done > $OUT/atrans-ab.txt
python3 - <<'PY'
import os,re,collections
t=collections.defaultdict(list)
for l in open(os.environ['OUT']+'/atrans-ab.txt'):
    f=l.split()
    if len(f)>5 and f[1].startswith('m'): t[(f[1],f[-1])].append((f[0][0],float(f[4])))
import math
lr=[]
for key,v in t.items():
    a=sorted(x for s,x in v if s=='a'); b=sorted(x for s,x in v if s=='b')
    if a and b: r=min(b)/min(a); lr.append(math.log(r)); print(key[0], '%.1f %.1f %.3f'%(min(a),min(b),r))
print('geomean B/A %.4f over %d'%(math.exp(sum(lr)/len(lr)), len(lr)))
PY
