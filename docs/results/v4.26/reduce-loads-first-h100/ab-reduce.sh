#!/usr/bin/env bash
# A/B of the split-K reduction that issues every slice's load first (session 34): side a =
# .device/bin/nmtune (main), side b = .device/bin/nmtune-b, alternating per line, two rounds.
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
cut -d' ' -f6 .device/reduce-ab.list | sort -u > /tmp/kernels.txt
for b in nmtune nmtune-b; do
  xargs -P 16 -I{} .device/bin/$b kernel --arch sm_90 {} < /tmp/kernels.txt > /dev/null 2>&1
done
echo "compiled: $SECONDS s"
for round in 1 2; do
while read -r m n k nm layout kernel; do
  for side in a b; do
    bin=.device/bin/nmtune; [ $side = b ] && bin=.device/bin/nmtune-b
    echo "## $side $round" >> $OUT/ab-reduce.txt
    timeout 60 $bin bench --m $m --n $n --k $k --nm $nm --a-layout $layout --kernels $kernel --runs 10 >> $OUT/ab-reduce.txt 2>&1
  done
done < .device/reduce-ab.list
done
