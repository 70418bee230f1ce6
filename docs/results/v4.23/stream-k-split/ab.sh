# A/B(/C…) of nmtune builds .device/bin/nmtune-<side> on a list ("m n k N:M layout kernels"),
# kernels precompiled in parallel per side, then two alternated rounds, medians of 10.
# usage: bash .device/ab2.sh LIST "a s" NAME   -> $OUT/NAME.txt, $OUT/NAME-summary.txt
list=$1 sides=$2 name=$3
for side in $sides; do
  cut -d' ' -f6 "$list" | tr ',' '\n' | sort -u | xargs -P 12 -I{} timeout 120 .device/bin/nmtune-$side kernel {} --cache-dir /tmp/nmtune-cubins-$side > /dev/null 2>&1
done
echo "precompiled at $SECONDS s"
for round in 1 2; do for side in $sides; do
  while read -r m n k nm lay kern; do
    timeout 90 .device/bin/nmtune-$side bench --m $m --n $n --k $k --nm $nm --a-layout $lay --kernels $kern --runs 10 --cache-dir /tmp/nmtune-cubins-$side < /dev/null 2>&1 | grep -E "nm_spmm|rror" | sed "s/^/$side$round /"
  done < "$list"
done; done > $OUT/$name.txt
python3 - "$OUT/$name.txt" "$sides" > $OUT/$name-summary.txt <<'PY'
import sys,collections
t=collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)>5 and f[1].startswith('m'): t[(f[1],f[-1])][f[0][:-1]].append(float(f[4]))
sides=sys.argv[2].split()
print('problem kernel', ' '.join(sides), 'ratios-to-first')
for (p,k),v in t.items():
    best=[min(v[s]) if v[s] else float('nan') for s in sides]
    print(p, k.replace('nm_spmm_f32_',''), ' '.join('%.1f'%b for b in best), ' '.join('%.3f'%(b/best[0]) for b in best[1:]))
PY
cat $OUT/$name-summary.txt
