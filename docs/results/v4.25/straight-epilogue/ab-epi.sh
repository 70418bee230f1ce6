#!/usr/bin/env bash
# A/B of the straight-line epilogue (session 33): side a = .device/bin/nmtune (main),
# side b = .device/bin/nmtune-b (the patch), alternating per list line, then tests/gpu.rs
# of side b.
while read -r m n k nm layout kernel; do
  for side in a b; do
    bin=.device/bin/nmtune; [ $side = b ] && bin=.device/bin/nmtune-b
    echo "## $side" >> $OUT/ab-epi.txt
    timeout 120 $bin bench --m $m --n $n --k $k --nm $nm --a-layout $layout --kernels $kernel --runs 10 >> $OUT/ab-epi.txt 2>&1
  done
done < .device/ab-epi.list
