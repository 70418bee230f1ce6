export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
for round in 1 2; do for side in a b; do
  while read -r m n k nm lay kern; do
    NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-$side timeout 60 .device/bin/nmtune-$side bench --m $m --n $n --k $k --nm $nm --a-layout $lay --kernels $kern --runs 10 < /dev/null 2>&1 | grep -E "nm_spmm|rror" | sed "s/^/$side$round /"
  done < .device/atrans.list
done; done > $OUT/atrans-ab.txt
for side in a b; do for nk in "4096 4096" "4096 11008"; do set -- $nk
  kern=$(awk -v n=$1 -v k=$2 '$2==n && $3==k && $4=="4:32" {print $6; exit}' .device/atrans.list)
  [ -z "$kern" ] && kern=$(awk -v n=$1 -v k=$2 '$2==n && $3==k {print $6; exit}' .device/atrans.list)
  [ -z "$kern" ] && continue
  echo "#### $side 4096 $1 $2 $kern"
  NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-$side timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --kernel-name regex:_transpose --launch-count 3 \
    .device/bin/nmtune-$side bench --m 4096 --n $1 --k $2 --nm 4:32 --a-layout row --kernels $kern --runs 3 < /dev/null 2>&1 | grep -E "gpu__time|dram__bytes"
done; done > $OUT/transpose-ncu.txt
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
cat $OUT/transpose-ncu.txt
